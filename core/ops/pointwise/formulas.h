// Composite pointwise formulas, written once over an abstract "ops" value domain, so that the
// reference interpreter (core/ops/pointwise/kernels.cpp, with ScalarOps<T>) and the
// lowering to loop IR (with an OpsHandler) execute exactly the same sequence of primitive ops and
// therefore round identically (seed §6.9: compiled pointwise results must match bit for bit).
//
// Conventions every domain and every caller follows:
//   * A formula computes in ONE computation dtype `dt` = computation_dtype(result dtype): float32
//     for float32/float16/bfloat16, float64 for float64, int64 for the integer types, bool for
//     bool.
//     The caller converts every tensor operand to `dt` on load (half types upcast exactly, integers
//     widen, cross-category conversions follow stax_scalar::convert) and converts the formula's
//     result to the output dtype on store (half types round to nearest even, int64 narrows modulo
//     2^bits). Formulas never convert inside.
//   * Scalar arguments (alpha, threshold, clamp bounds) are passed as double and materialised with
//     o.constant(value, dt) at the point the formula uses them (exact for integers |v| <= 2^53).
//   * The ops domain `Ops` provides, with V its value type (comparison results are values too):
//       o.constant(double value, DType dt) -> V
//       o.NAME(a) / o.NAME(a, b) for every NAME of sdk/include/stax/sdk/ops.def
//       o.where(cond, a, b) -> V
//     and may be anything: ScalarOps<T> (scalars), a LoopBody recorder, a printer ...
//     Intermediate values are held in `auto`, so a domain may give comparisons another C++ type.
//   * Operand order is part of the formula: a*b and b*a round the same in IEEE arithmetic, but the
//     lowering must replay the listed order so that printed kernels read like the seed's listings.
//   * Every op is its own statement (no nested calls): C++ leaves the evaluation order of function
//     arguments unspecified (GCC goes right to left), and a recording domain must see the ops in
//     the order written here on every compiler.
#pragma once

#include <optional>

#include "core/types/dtype.h"

namespace stax {

// The dtype pointwise ops and reductions compute in for values of dtype t (seed §6.2).
constexpr DType computation_dtype(DType t) {
  switch (t) {
    case DType::Float32:
    case DType::Float16:
    case DType::BFloat16: return DType::Float32;
    case DType::Float64: return DType::Float64;
    case DType::Bool: return DType::Bool;
    default: return DType::Int64;
  }
}

namespace formulas {

inline constexpr double kSqrt1_2 = 0.7071067811865476;       // 1 / sqrt(2)
inline constexpr double kInvSqrt2Pi = 0.3989422804014327;    // 1 / sqrt(2 pi)
inline constexpr double kSqrt2OverPi = 0.7978845608028654;   // sqrt(2 / pi)
inline constexpr double kGeluTanhKappa = 0.044715;
inline constexpr double kGeluTanhKappa3 = 3 * kGeluTanhKappa;  // folded in double: 0.134145

// add.Tensor / add.Scalar: self + alpha * other (PyTorch); the multiply is skipped when alpha == 1
// (exact either way: 1 * b == b bit for bit).
template <class Ops, class V>
V add(Ops& o, V self, V other, double alpha, DType dt) {
  if (alpha != 1.0) {
    auto a = o.constant(alpha, dt);
    other = o.mul(a, other);
  }
  return o.add(self, other);
}

// sub.Tensor / sub.Scalar: self - alpha * other.
template <class Ops, class V>
V sub(Ops& o, V self, V other, double alpha, DType dt) {
  if (alpha != 1.0) {
    auto a = o.constant(alpha, dt);
    other = o.mul(a, other);
  }
  return o.sub(self, other);
}

// clamp(x, min, max) = minimum(maximum(x, min), max): NaN-propagating (a NaN x, min or max gives
// NaN), and min > max gives max, like torch.clamp.
template <class Ops, class V>
V clamp(Ops& o, V x, std::optional<double> lo, std::optional<double> hi, DType dt) {
  if (lo) {
    auto c = o.constant(*lo, dt);
    x = o.maximum(x, c);
  }
  if (hi) {
    auto c = o.constant(*hi, dt);
    x = o.minimum(x, c);
  }
  return x;
}

// Before a floating -> int32 / int16 / int8 / uint8 conversion: torch on x86 converts through the
// 32-bit cvttss2si, which gives INT32_MIN for NaN, +-inf and values outside (-2^31 - 1, 2^31), and
// then keeps the low bits. Such values are replaced by -2^31 (exact in float), so that the int64
// conversion and narrowing on store give torch's bits.
template <class Ops, class V>
V x86_int32_range(Ops& o, V x, DType dt) {
  auto lo = o.constant(-2147483649.0, dt);
  auto hi = o.constant(2147483648.0, dt);
  auto above = o.gt(x, lo);
  auto below = o.lt(x, hi);
  auto inside = o.logical_and(above, below);
  auto min32 = o.constant(-2147483648.0, dt);
  return o.where(inside, x, min32);
}

// Φ(h) = 0.5 * (1 + erf(h * 0.7071067811865476)), the standard normal CDF (seed Listing 5.3).
template <class Ops, class V>
V normal_cdf(Ops& o, V h, DType dt) {
  auto c = o.constant(kSqrt1_2, dt);
  auto scaled = o.mul(h, c);
  auto e = o.erf(scaled);
  auto one = o.constant(1.0, dt);
  auto sum = o.add(one, e);
  auto half = o.constant(0.5, dt);
  return o.mul(half, sum);
}

// φ(h) = 0.3989422804014327 * exp(-0.5 * (h * h)), the standard normal density (Listing 5.4).
template <class Ops, class V>
V normal_pdf(Ops& o, V h, DType dt) {
  auto sq = o.mul(h, h);
  auto minus_half = o.constant(-0.5, dt);
  auto arg = o.mul(minus_half, sq);
  auto e = o.exp(arg);
  auto c = o.constant(kInvSqrt2Pi, dt);
  return o.mul(c, e);
}

// gelu(h, approximate='none') = h * Φ(h).
template <class Ops, class V>
V gelu(Ops& o, V h, DType dt) {
  auto cdf = normal_cdf(o, h, dt);
  return o.mul(h, cdf);
}

// gelu_backward(grad, h, approximate='none') = grad * (Φ(h) + h * φ(h)) (Listings 5.3 / 5.4).
template <class Ops, class V>
V gelu_backward(Ops& o, V grad, V h, DType dt) {
  auto cdf = normal_cdf(o, h, dt);
  auto pdf = normal_pdf(o, h, dt);
  auto h_pdf = o.mul(h, pdf);
  auto derivative = o.add(cdf, h_pdf);
  return o.mul(grad, derivative);
}

// The inner argument of the tanh approximation: sqrt(2/pi) * (x + 0.044715 * (x * x * x)).
// Returns tanh(inner); x_sq receives x * x for the backward.
template <class Ops, class V>
V gelu_tanh_inner(Ops& o, V x, V& x_sq, DType dt) {
  x_sq = o.mul(x, x);
  auto x_cube = o.mul(x_sq, x);
  auto kappa = o.constant(kGeluTanhKappa, dt);
  auto k_cube = o.mul(kappa, x_cube);
  auto sum = o.add(x, k_cube);
  auto c = o.constant(kSqrt2OverPi, dt);
  auto inner = o.mul(c, sum);
  return o.tanh(inner);
}

// gelu(x, approximate='tanh') = (0.5 * x) * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))).
template <class Ops, class V>
V gelu_tanh(Ops& o, V x, DType dt) {
  V x_sq = x;
  auto t = gelu_tanh_inner(o, x, x_sq, dt);
  auto half = o.constant(0.5, dt);
  auto left = o.mul(half, x);
  auto one = o.constant(1.0, dt);
  auto right = o.add(one, t);
  return o.mul(left, right);
}

// gelu_backward(grad, x, approximate='tanh'), as torch's decomposition:
//   left = 0.5 * x, right = 1 + t, t = tanh(inner)
//   grad * (0.5 * right + (left * (1 - t * t)) * (sqrt(2/pi) * (1 + 0.134145 * (x * x))))
template <class Ops, class V>
V gelu_tanh_backward(Ops& o, V grad, V x, DType dt) {
  V x_sq = x;
  auto t = gelu_tanh_inner(o, x, x_sq, dt);
  auto half = o.constant(0.5, dt);
  auto one = o.constant(1.0, dt);
  auto left = o.mul(half, x);
  auto right = o.add(one, t);
  auto left_derivative = o.mul(half, right);
  auto t_sq = o.mul(t, t);
  auto tanh_derivative = o.sub(one, t_sq);
  auto kappa3 = o.constant(kGeluTanhKappa3, dt);
  auto k_sq = o.mul(kappa3, x_sq);
  auto k_sum = o.add(one, k_sq);
  auto c = o.constant(kSqrt2OverPi, dt);
  auto inner_derivative = o.mul(c, k_sum);
  auto lt = o.mul(left, tanh_derivative);
  auto right_derivative = o.mul(lt, inner_derivative);
  auto derivative = o.add(left_derivative, right_derivative);
  return o.mul(grad, derivative);
}

// silu(x) = x * sigmoid(x).
template <class Ops, class V>
V silu(Ops& o, V x, DType) {
  auto s = o.sigmoid(x);
  return o.mul(x, s);
}

// silu_backward(grad, x) = (grad * s) * (1 + x * (1 - s)), s = sigmoid(x).
template <class Ops, class V>
V silu_backward(Ops& o, V grad, V x, DType dt) {
  auto s = o.sigmoid(x);
  auto one = o.constant(1.0, dt);
  auto gs = o.mul(grad, s);
  auto one_minus_s = o.sub(one, s);
  auto x_oms = o.mul(x, one_minus_s);
  auto factor = o.add(one, x_oms);
  return o.mul(gs, factor);
}

// sigmoid_backward(grad, y) = grad * (y * (1 - y)), y = sigmoid(x) saved by the forward.
template <class Ops, class V>
V sigmoid_backward(Ops& o, V grad, V y, DType dt) {
  auto one = o.constant(1.0, dt);
  auto one_minus_y = o.sub(one, y);
  auto derivative = o.mul(y, one_minus_y);
  return o.mul(grad, derivative);
}

// tanh_backward(grad, y) = grad * (1 - y * y), y = tanh(x) saved by the forward.
template <class Ops, class V>
V tanh_backward(Ops& o, V grad, V y, DType dt) {
  auto one = o.constant(1.0, dt);
  auto y_sq = o.mul(y, y);
  auto derivative = o.sub(one, y_sq);
  return o.mul(grad, derivative);
}

// threshold_backward(grad, x, threshold) = where(x <= threshold, 0, grad) (relu's backward with
// threshold 0; a NaN x passes the gradient through, as in PyTorch).
template <class Ops, class V>
V threshold_backward(Ops& o, V grad, V x, double threshold, DType dt) {
  auto t = o.constant(threshold, dt);
  auto below = o.le(x, t);
  auto zero = o.constant(0.0, dt);
  return o.where(below, zero, grad);
}

}  // namespace formulas
}  // namespace stax
