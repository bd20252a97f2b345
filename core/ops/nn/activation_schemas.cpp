// Schemas of the activation ops.
#include <algorithm>
#include <cmath>

#include "core/graph/op_registry.h"
#include "core/ops/common/infer_helpers.h"
#include "core/ops/nn/params.h"
#include "core/ops/registration.h"

namespace stax {
namespace {

using P = Promotion;
using C = OpCategory;

using infer::floating;
using infer::numeric;

std::string dt(DType t) { return std::string(dtype_name(t)); }

TensorMeta same_as_self(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  return TensorMeta::contiguous(in.sizes, in.dtype, in.device);
}

int64_t wrap(const CallArgs& c, int64_t d, int64_t rank) {
  return wrap_dim(d, std::max<int64_t>(rank, 1), c.where());
}

TensorMeta glu_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  if (in.dim() == 0) c.fail("glu does not support scalars because halving size must be even");
  if (!is_floating(in.dtype)) c.fail("glu: expected a floating-point input, got " + dt(in.dtype));
  int64_t d = wrap(c, c.get("dim").to_int(), in.dim());
  if (in.sizes[d] % 2 != 0)
    c.fail("Halving dimension must be even, but dimension " + std::to_string(d) + " is size " +
           std::to_string(in.sizes[d]));
  Shape s = in.sizes;
  s[d] /= 2;
  return TensorMeta::contiguous(s, in.dtype, in.device);
}

TensorMeta prelu_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  const TensorMeta& w = c.tensor("weight");
  if (!is_floating(in.dtype)) c.fail("prelu: expected a floating-point input, got " + dt(in.dtype));
  int64_t nw = shape_numel(w.sizes);
  if (w.dim() > 1) c.fail("prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = " +
                          std::to_string(w.dim()));
  if (nw != 1) {
    if (in.dim() == 0) c.fail("Not allow zero-dim input tensor.");
    int64_t channels = in.dim() >= 2 ? in.sizes[1] : 1;
    if (nw != channels)
      c.fail("Mismatch of parameter numbers and input channel size. Found parameter numbers = " +
             std::to_string(nw) + " and channel size = " + std::to_string(channels) + ".");
  }
  if (w.dtype != in.dtype) c.fail("prelu: weight (" + dt(w.dtype) + ") must have self's dtype (" +
                                  dt(in.dtype) + ")");
  return same_as_self(c);
}

// leaky_relu_backward / elu_backward: torch has no in-place backward for a negative slope (the
// forward's result cannot be inverted), so `is_result` with a negative `slope` is an error.
InferFn result_backward_rule(const char* is_result, const char* slope,
                             std::vector<std::string> params) {
  return [=](const CallArgs& c) {
    if (c.get(is_result).to_bool() && c.get(slope).to_double() < 0)
      c.fail(std::string(slope) + " = " + arg_str(c.get(slope)) + " with " + is_result +
             "=True: the in-place backward of a negative slope is not supported (as torch)");
    return floating(params)(c);
  };
}

TensorMeta hardtanh_rule(const CallArgs& c) {
  TensorMeta m = numeric({"self"})(c);
  // torch's hardtanh of an integer tensor: clamp with int(min_val), int(max_val).
  infer::check_clamp_bounds(c, "min_val", "max_val", m.dtype, /*truncate=*/true);
  return m;
}

TensorMeta celu_rule(const CallArgs& c) {
  if (c.get("alpha").to_double() == 0) c.fail("alpha cannot be 0 for CELU");
  return floating({"self"})(c);
}

// mish_backward: torch's kernel writes a result of self's dtype, so self must be floating.
TensorMeta mish_backward_rule(const CallArgs& c) {
  if (!is_floating(c.tensor("self").dtype))
    c.fail("self must have a floating dtype (the result has self's dtype), got " +
           dt(c.tensor("self").dtype));
  return floating({"grad_output", "self"})(c);
}

TensorMeta threshold_rule(const CallArgs& c) {
  if (c.tensor("self").dtype == DType::Bool) c.fail("threshold is not implemented for 'bool'");
  infer::check_scalar_fits(c, "threshold", c.tensor("self").dtype);
  infer::check_scalar_fits(c, "value", c.tensor("self").dtype);
  return same_as_self(c);
}

}  // namespace

void register_activation_ops(OpRegistry& r) {
  {
    // ---- activations (Composite: activation_decompositions.cpp) and their backward ops
    auto act = [&](const std::string& schema, InferFn f) {
      return r.add(schema, C::Composite, P::Default, std::move(f));
    };

    act("leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor", floating({"self"}));

    act("elu(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> Tensor",
        floating({"self"}));

    act("hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor", hardtanh_rule);

    act("relu6(Tensor self) -> Tensor", numeric({"self"}));

    act("hardswish(Tensor self) -> Tensor", floating({"self"}));

    act("hardsigmoid(Tensor self) -> Tensor", floating({"self"}));

    act("softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor", floating({"self"}));

    act("mish(Tensor self) -> Tensor", floating({"self"}));

    act("leaky_relu_backward(Tensor grad_output, Tensor self, Scalar negative_slope, "
        "bool self_is_result) -> Tensor",
        result_backward_rule("self_is_result", "negative_slope", {"grad_output", "self"}));

    act("elu_backward(Tensor grad_output, Scalar alpha, Scalar scale, Scalar input_scale, "
        "bool is_result, Tensor self_or_result) -> Tensor",
        result_backward_rule("is_result", "alpha", {"grad_output", "self_or_result"}));

    act("hardtanh_backward(Tensor grad_output, Tensor self, Scalar min_val, Scalar max_val) -> "
        "Tensor",
        floating({"grad_output", "self"}));

    act("hardswish_backward(Tensor grad_output, Tensor self) -> Tensor",
        floating({"grad_output", "self"}));

    act("hardsigmoid_backward(Tensor grad_output, Tensor self) -> Tensor",
        floating({"grad_output", "self"}));

    act("softplus_backward(Tensor grad_output, Tensor self, Scalar beta, Scalar threshold) -> "
        "Tensor",
        floating({"grad_output", "self"}));

    act("mish_backward(Tensor grad_output, Tensor self) -> Tensor", mish_backward_rule);
  }
  {
    // ---- pointwise formulas (Composite)
    auto comp = [&](const std::string& schema, Promotion p, InferFn f) -> OpDef& {
      return r.add(schema, C::Composite, p, std::move(f));
    };

    // ---- activations and losses
    comp("celu(Tensor self, Scalar alpha=1.) -> Tensor", P::Default, celu_rule);

    comp("hardshrink(Tensor self, Scalar lambd=0.5) -> Tensor", P::Default, floating({"self"}));

    comp("softshrink(Tensor self, Scalar lambd=0.5) -> Tensor", P::Default, [](const CallArgs& c) {
      if (c.get("lambd").to_double() < 0)
        c.fail("lambda must be greater or equal to 0, but found to be " +
               std::to_string(c.get("lambd").to_double()) + ".");
      return floating({"self"})(c);
    });

    comp("threshold(Tensor self, Scalar threshold, Scalar value) -> Tensor", P::None,
         threshold_rule);

    comp("glu(Tensor self, int dim=-1) -> Tensor", P::None, glu_rule);

    comp("prelu(Tensor self, Tensor weight) -> Tensor", P::None, prelu_rule);
  }
}

}  // namespace stax
