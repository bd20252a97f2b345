#include "core/ops/common/lowering_helpers.h"

#include "core/graph/op_registry.h"

namespace stax {

Shape broadcast_sizes(const std::vector<Shape>& shapes) {
  Shape out;
  for (const Shape& s : shapes) {
    if (s.size() > out.size()) out.insert(out.begin(), s.size() - out.size(), 1);
    size_t off = out.size() - s.size();
    for (size_t k = 0; k < s.size(); ++k)
      if (s[k] != 1) out[off + k] = s[k];
  }
  return out;
}

Loader broadcast_loader(const IRPtr& x, const Shape& target) {
  Shape in = x->size();
  Loader load = x->make_loader();
  if (in == target) return load;
  size_t off = target.size() - in.size();
  return [load, in, off, target](OpsBuilder& b, const Index& index) {
    Index idx;
    idx.reserve(in.size());
    for (size_t k = 0; k < in.size(); ++k)
      idx.push_back(in[k] == 1 && target[off + k] != 1 ? Expr(0) : index[off + k]);
    return load(b, idx);
  };
}

IRPtr pointwise(GraphLowering& g, const std::vector<Operand>& inputs, DType compute, DType out,
                const PointwiseBody& fn) {
  std::vector<Shape> shapes;
  std::vector<IRPtr> tensors;
  std::string device;
  shapes.reserve(inputs.size());
  tensors.reserve(inputs.size());
  for (const Operand& op : inputs) {
    if (!op.tensor) continue;
    if (tensors.empty()) device = op.tensor->device();
    shapes.push_back(op.tensor->size());
    tensors.push_back(op.tensor);
  }
  if (tensors.empty()) device = g.current().meta().device;
  Shape size = broadcast_sizes(shapes);
  struct Input {
    Loader load;
    std::optional<ScalarValue> scalar;
    DType as;
  };
  std::vector<Input> loaders;
  loaders.reserve(inputs.size());
  for (const Operand& op : inputs) {
    DType as = op.as.value_or(compute);
    if (op.tensor)
      loaders.push_back({broadcast_loader(op.tensor, size), std::nullopt, as});
    else
      loaders.push_back({nullptr, op.scalar, as});
  }
  Loader inner = [loaders, fn, out](OpsBuilder& b, const Index& index) {
    std::vector<Val> args;
    args.reserve(loaders.size());
    for (const Input& in : loaders)
      args.push_back(in.load ? b.to_dtype(in.load(b, index), in.as)
                             : b.constant(*in.scalar, in.as));
    return b.to_dtype(fn(b, args), out);
  };
  return g.box(std::make_shared<Pointwise>(device, out, size, std::move(inner)), tensors);
}

ScalarValue scalar_of(const Arg& a) {
  if (a.is_bool()) return ScalarValue::integer(a.to_bool() ? 1 : 0);
  if (a.is_int()) return ScalarValue::integer(a.to_int());
  return ScalarValue::floating(a.to_double());
}

DType promoted_dtype(const Node& n, const std::vector<std::string>& params) {
  CallArgs call(*n.op(), n.args(), n.kwargs(), n.name());
  return result_type(call, params, Promotion::Default);
}

}  // namespace stax
