// Composite ops: each has an entry in the decomposition table (core/graph/decompositions.cpp) that
// rewrites it into base ops; the interpreter also has a direct kernel for each, used as the oracle.
// (silu is registered with the pointwise ops; mean / var with the reductions.)
#include <algorithm>

#include "core/ops/common/infer_helpers.h"
#include "core/ops/registration.h"

namespace stax {

namespace {

std::string dt(DType t) { return std::string(dtype_name(t)); }

void need_floating(const CallArgs& c, const TensorMeta& m, const char* what) {
  if (!is_floating(m.dtype))
    c.fail(std::string(what) + " must have a floating dtype, got " + dt(m.dtype));
}

TensorMeta softmax_rule(const CallArgs& c) {
  const TensorMeta& self = c.tensor("self");
  // softmax.int with a dtype casts the input to it first: an integer input is fine then.
  bool cast_first = c.op().schema.index_of("dtype") >= 0 && c.get("dtype").is_dtype();
  if (!cast_first) need_floating(c, self, "self");
  wrap_dim(c.get("dim").to_int(), self.dim(), c.where());
  DType out = self.dtype;
  if (c.op().schema.index_of("dtype") >= 0) {  // softmax.int: the input is first cast to dtype
    if (c.get("dtype").is_dtype()) out = c.get("dtype").dtype();
    if (!is_floating(out)) c.fail("dtype must be a floating dtype, got " + dt(out));
  } else if (c.get("half_to_float").to_bool()) {
    if (self.dtype != DType::Float16)  // torch: not bfloat16 either
      c.fail("half_to_float=True expects a float16 input, got " + dt(self.dtype));
    out = DType::Float32;
  }
  return TensorMeta::contiguous(self.sizes, out, self.device);
}

TensorMeta softmax_backward_rule(const CallArgs& c) {
  const TensorMeta& g = c.tensor("grad_output");
  const TensorMeta& y = c.tensor("output");
  need_floating(c, g, "grad_output");
  need_floating(c, y, "output");
  if (g.dtype != y.dtype)
    c.fail("grad_output (" + dt(g.dtype) + ") and output (" + dt(y.dtype) +
           ") must have the same dtype");
  if (g.sizes != y.sizes)
    c.fail("grad_output " + shape_str(g.sizes) + " and output " + shape_str(y.sizes) +
           " must have the same shape");
  wrap_dim(c.get("dim").to_int(), y.dim(), c.where());
  DType t = c.get("input_dtype").dtype();
  if (!is_floating(t)) c.fail("input_dtype must be a floating dtype, got " + dt(t));
  return TensorMeta::contiguous(y.sizes, t, y.device);
}

TensorMeta layer_norm_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("input");
  need_floating(c, in, "input");
  auto ns = c.get("normalized_shape").to_int_list();
  Shape norm(ns.begin(), ns.end());
  if (norm.empty()) c.fail("normalized_shape must have at least one dimension");
  bool ok = norm.size() <= in.sizes.size() &&
            std::equal(norm.begin(), norm.end(), in.sizes.end() - norm.size());
  if (!ok)
    c.fail("normalized_shape " + shape_list_str(norm) + " does not match the trailing dims of " +
           "the input of shape " + shape_str(in.sizes));
  for (const char* p : {"weight", "bias"}) {
    if (!c.has(p)) continue;
    const TensorMeta& m = c.tensor(p);
    if (m.sizes != norm)
      c.fail(std::string(p) + " of shape " + shape_str(m.sizes) + " must have the shape " +
             shape_str(norm) + " of normalized_shape");
    need_floating(c, m, p);
  }
  infer::check_norm_param_dtypes(c, in.dtype, {"weight", "bias"});
  return TensorMeta::contiguous(in.sizes, in.dtype, in.device);
}

TensorMeta linear_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("input");
  const TensorMeta& w = c.tensor("weight");
  if (w.dim() != 2)
    c.fail("weight must be 2-D (out_features, in_features), got " + shape_str(w.sizes));
  if (in.dim() == 0) c.fail("input must be at least 1-D");
  if (in.dtype != w.dtype)
    c.fail("input (" + dt(in.dtype) + ") and weight (" + dt(w.dtype) + ") dtypes differ");
  if (in.sizes.back() != w.sizes[1])
    c.fail("input of shape " + shape_str(in.sizes) + " and weight of shape " + shape_str(w.sizes) +
           " cannot be multiplied (in_features " + std::to_string(in.sizes.back()) + " vs " +
           std::to_string(w.sizes[1]) + ")");
  Shape out = in.sizes;
  out.back() = w.sizes[0];
  if (c.has("bias")) {
    const TensorMeta& b = c.tensor("bias");
    if (b.dtype != in.dtype)
      c.fail("bias (" + dt(b.dtype) + ") and input (" + dt(in.dtype) + ") dtypes differ");
    if (broadcast_shapes(b.sizes, out, c.where()) != out)
      c.fail("bias of shape " + shape_str(b.sizes) + " does not broadcast to the output shape " +
             shape_str(out));
    // torch adds the bias to the product flattened to (rows, out_features) (addmm).
    if (out.size() >= 2) {
      Shape flat{shape_numel(out) / std::max<int64_t>(out.back(), 1), out.back()};
      if (out.back() == 0) flat[0] = shape_numel(Shape(out.begin(), out.end() - 1));
      bool ok = b.sizes.size() <= 2;
      for (size_t i = 0; ok && i < b.sizes.size(); ++i) {
        int64_t bv = b.sizes[b.sizes.size() - 1 - i], fv = flat[1 - i];
        ok = bv == 1 || bv == fv;
      }
      if (!ok)
        c.fail("bias of shape " + shape_str(b.sizes) + " does not expand to the flattened "
               "product's shape " + shape_str(flat));
    }
  }
  return TensorMeta::contiguous(out, in.dtype, in.device);
}

}  // namespace

void register_composite_ops(OpRegistry& r) {
  using P = Promotion;
  const auto K = OpCategory::Composite;
  // aten's softmax.int / log_softmax.int: the input is cast to `dtype` when one is given.
  r.add("softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", K, P::None,
        softmax_rule);
  r.add("log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", K, P::None,
        softmax_rule);
  // aten's _softmax / _log_softmax (what make_fx records): half_to_float turns a float16
  // input into a float32 result (torch: not bfloat16).
  r.add("_softmax(Tensor self, int dim, bool half_to_float) -> Tensor", K, P::None, softmax_rule);
  r.add("_log_softmax(Tensor self, int dim, bool half_to_float) -> Tensor", K, P::None,
        softmax_rule);
  // aten's _softmax_backward_data / _log_softmax_backward_data: the result has input_dtype.
  r.add(
      "_softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype)"
      " -> Tensor",
      K, P::None, softmax_backward_rule);
  r.add(
      "_log_softmax_backward_data(Tensor grad_output, Tensor output, int dim, "
      "ScalarType input_dtype) -> Tensor",
      K, P::None, softmax_backward_rule);
  // Single-output native_layer_norm: normalizes over the trailing normalized_shape dims with the
  // biased variance, then applies weight and bias.
  r.add(
      "layer_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, Tensor? bias=None, "
      "float eps=1e-05, bool cudnn_enable=True) -> Tensor",
      K, P::None, layer_norm_rule);
  // input @ weight.T + bias
  r.add("linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor", K, P::None,
        linear_rule);
}

}  // namespace stax
