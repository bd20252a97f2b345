#include "core/ops/common/infer_helpers.h"

#include <algorithm>

namespace stax::infer {

TensorMeta elementwise(const CallArgs& c, const std::vector<std::string>& params, Promotion mode) {
  Shape shape;
  std::string device = "cpu";
  bool first = true;
  for (const auto& p : params) {
    const Arg& a = c.get(p);
    if (!a.is_node()) continue;
    const TensorMeta& m = a.node()->meta();
    shape = first ? m.sizes : broadcast_shapes(shape, m.sizes, c.where());
    if (first) device = m.device;
    first = false;
  }
  return TensorMeta::contiguous(shape, result_type(c, params, mode), device);
}

InferFn elementwise_rule(std::vector<std::string> params) {
  return [params = std::move(params)](const CallArgs& c) {
    return elementwise(c, params, c.op().promotion);
  };
}

Shape reduce_shape(const Shape& in, const std::vector<int64_t>& dims_in, bool keepdim, const CallArgs& c) {
  int64_t rank = static_cast<int64_t>(in.size());
  std::vector<bool> reduced(in.size(), dims_in.empty());
  for (int64_t d : dims_in) {
    int64_t w = wrap_dim(d, rank, c.where());
    if (rank == 0) continue;
    if (reduced[w] && !dims_in.empty() && std::count(dims_in.begin(), dims_in.end(), d) > 1)
      c.fail("dim " + std::to_string(d) + " appears multiple times in the list of dims");
    reduced[w] = true;
  }
  Shape out;
  for (int64_t i = 0; i < rank; ++i) {
    if (!reduced[i]) out.push_back(in[i]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

InferFn floating(std::vector<std::string> params, Promotion mode) {
  return [params = std::move(params), mode](const CallArgs& c) {
    TensorMeta m = elementwise(c, params, mode);
    if (!is_floating(m.dtype)) {
      std::string t(dtype_name(m.dtype));
      c.fail("expected a floating-point input, got " + t + " (not implemented for '" + t +
             "', as in torch)");
    }
    return m;
  };
}

InferFn numeric(std::vector<std::string> params, Promotion mode) {
  return [params = std::move(params), mode](const CallArgs& c) {
    TensorMeta m = elementwise(c, params, mode);
    if (m.dtype == DType::Bool) c.fail("not implemented for 'bool' tensors");
    return m;
  };
}

OpDef& add_unary_math(OpRegistry& r, const std::string& name, const char* param,
                      bool differentiable) {
  OpDef& d = r.add(name + "(Tensor " + param + ") -> Tensor", OpCategory::Pointwise,
                   Promotion::IntToFloat, floating({param}, Promotion::IntToFloat));
  d.differentiable = differentiable;
  return d;
}

}  // namespace stax::infer
