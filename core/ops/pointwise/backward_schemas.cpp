// The pointwise backward ops autodiff emits (seed Listing 5.2), as PyTorch's autograd names them.
// Each is a formula of core/ops/pointwise/formulas.h over the gradient and saved values;
// _softmax_backward_data / _log_softmax_backward_data are composites (composite_ops.cpp).
#include "core/ops/common/infer_helpers.h"
#include "core/ops/registration.h"

namespace stax {
namespace {

// Broadcast of the tensor params, promoted dtype; floating results only (as torch's kernels).
InferFn floating_rule(std::vector<std::string> params) {
  return [params = std::move(params)](const CallArgs& c) {
    TensorMeta m = infer::elementwise(c, params, c.op().promotion);
    if (!is_floating(m.dtype))
      c.fail("expected floating-point inputs, got " + std::string(dtype_name(m.dtype)));
    return m;
  };
}

// threshold_backward: the threshold converts to the computation's dtype without overflow (as
// torch's kernel). The result has the promoted dtype, as torch's CPU kernel gives it (its meta,
// a Python decomposition, gives the gradient's dtype).
TensorMeta threshold_backward_rule(const CallArgs& c) {
  TensorMeta m = infer::elementwise(c, {"grad_output", "self"}, Promotion::Default);
  infer::check_scalar_fits(c, "threshold", m.dtype);
  return m;
}

// gelu_backward: torch's CPU kernel computes approximate='none' of a float32 self with oneDNN,
// which reads the gradient only as float32, float16, bfloat16 or an 8-bit integer
// ("itensor_view_from_dense expects float/bfloat16/half/int8/fp8 tensor input").
TensorMeta gelu_backward_rule(const CallArgs& c) {
  TensorMeta m = floating_rule({"grad_output", "self"})(c);
  const std::string& approximate = c.get("approximate").str();
  if (approximate != "none" && approximate != "tanh")
    c.fail("approximate argument must be either none or tanh, got '" + approximate + "'");
  DType s = c.tensor("self").dtype, g = c.tensor("grad_output").dtype;
  // A float16 / bfloat16 self takes the oneDNN path only on CPUs with those instructions (not
  // checked: the answer would depend on the machine), a self of one element never.
  bool onednn = approximate == "none" && s == DType::Float32 && c.tensor("self").numel() > 1;
  bool readable = g == DType::Float32 || g == DType::Float16 || g == DType::BFloat16 ||
                  g == DType::Int8 || g == DType::UInt8;
  if (onednn && !readable)
    c.fail("grad_output (" + std::string(dtype_name(g)) + ") of a " +
           std::string(dtype_name(s)) +
           " self must be float32, float16, bfloat16 or 8-bit (torch's CPU kernel, oneDNN)");
  return m;
}

}  // namespace

void register_backward_ops(OpRegistry& r) {
  using P = Promotion;
  // grad * (Φ(h) + h φ(h)) (approximate='none') or the tanh approximation's derivative.
  r.add("gelu_backward(Tensor grad_output, Tensor self, *, str approximate='none') -> Tensor",
        OpCategory::Pointwise, P::Default, gelu_backward_rule)
      .allow_positional("approximate");  // Listing 5.2: (%expand, %matmul, 'none')
  // where(self <= threshold, 0, grad): relu's backward is threshold_backward(grad, result, 0).
  r.add("threshold_backward(Tensor grad_output, Tensor self, Scalar threshold) -> Tensor",
        OpCategory::Pointwise, P::Default, threshold_backward_rule);
  // grad * (y * (1 - y)) with y = sigmoid(x), the forward's output.
  r.add("sigmoid_backward(Tensor grad_output, Tensor output) -> Tensor", OpCategory::Pointwise,
        P::Default, floating_rule({"grad_output", "output"}));
  // grad * (1 - y * y) with y = tanh(x), the forward's output.
  r.add("tanh_backward(Tensor grad_output, Tensor output) -> Tensor", OpCategory::Pointwise,
        P::Default, floating_rule({"grad_output", "output"}));
  // (grad * s) * (1 + x * (1 - s)) with s = sigmoid(x).
  r.add("silu_backward(Tensor grad_output, Tensor self) -> Tensor", OpCategory::Pointwise,
        P::Default, floating_rule({"grad_output", "self"}));
}

}  // namespace stax
