// Comparisons of compiled results with the reference interpreter, shared by the conformance
// suite and Stax's own compiled-path tests (GoogleTest assertion results):
//   bitwise_equal   pointwise ops, views, indexing, min/max/arg reductions (seed: same bits)
//   within_bound    reductions and products, against the §6.5 bound the caller computes
//   reduction_bound / product bound helpers below derive it from Σ|a_i| (docs/backend_guide.md)
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/graph/graph.h"
#include "core/tensor/tensor.h"

namespace stax::conformance {

// Bit-for-bit equality (sizes, dtype, every element's bits), except that a NaN equals any NaN:
// IEEE 754 leaves the sign and payload of a NaN result open when several operands are NaN (x86
// propagates the first operand's, and compilers may commute operands), so only NaN-ness is part
// of the compared semantics.
inline bool is_nan_at(const Tensor& t, int64_t i) {
  return is_floating(t.dtype()) && std::isnan(t.get_double(i));
}

inline ::testing::AssertionResult bitwise_equal(const Tensor& got, const Tensor& want) {
  if (got.sizes() != want.sizes() || got.dtype() != want.dtype())
    return ::testing::AssertionFailure()
           << "got " << dtype_name(got.dtype()) << shape_str(got.sizes()) << ", want "
           << dtype_name(want.dtype()) << shape_str(want.sizes());
  if (got.equal(want)) return ::testing::AssertionSuccess();
  Tensor a = got.contiguous(), b = want.contiguous();
  size_t item = static_cast<size_t>(a.itemsize());
  for (int64_t i = 0; i < a.numel(); ++i)
    if (std::memcmp(a.data_ptr() + i * static_cast<int64_t>(item),
                    b.data_ptr() + i * static_cast<int64_t>(item), item) != 0 &&
        !(is_nan_at(a, i) && is_nan_at(b, i)))
      return ::testing::AssertionFailure()
             << "element " << i << " differs: got " << a.get_double(i) << ", want "
             << b.get_double(i) << "\n got:  " << got.summary() << "\n want: " << want.summary();
  return ::testing::AssertionSuccess();  // differences in NaN bits only
}

// |got_i - want_i| <= bound_i elementwise (bound as a tensor of the same shape, as double);
// infinities and NaNs must match exactly.
inline ::testing::AssertionResult within_bound(const Tensor& got, const Tensor& want,
                                               const std::vector<double>& bound) {
  if (got.sizes() != want.sizes() || got.dtype() != want.dtype())
    return ::testing::AssertionFailure() << "shape or dtype differs";
  for (int64_t i = 0; i < got.numel(); ++i) {
    double a = got.get_double(i), b = want.get_double(i);
    if (std::isnan(a) || std::isnan(b) || std::isinf(a) || std::isinf(b)) {
      if (!(std::isnan(a) && std::isnan(b)) && a != b)
        return ::testing::AssertionFailure() << "element " << i << ": " << a << " vs " << b;
      continue;
    }
    if (std::fabs(a - b) > bound[static_cast<size_t>(i)])
      return ::testing::AssertionFailure()
             << "element " << i << ": |" << a << " - " << b << "| = " << std::fabs(a - b)
             << " > bound " << bound[static_cast<size_t>(i)];
  }
  return ::testing::AssertionSuccess();
}

// Unit roundoff of a floating dtype's computation type (half types compute in float32).
inline double unit_roundoff(DType d) {
  return d == DType::Float64 ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
}

// Unit roundoff of a dtype's storage: the last rounding of a result stored in it.
inline double storage_roundoff(DType d) {
  switch (d) {
    case DType::Float16: return std::ldexp(1.0, -11);
    case DType::BFloat16: return std::ldexp(1.0, -8);
    default: return is_floating(d) ? unit_roundoff(d) : 0.0;
  }
}

// The §6.5 bound of an n-term floating sum in any order, for both the compiled result and the
// interpreter's: |got - want| <= 2 (n-1) u Σ|a_i| plus one storage rounding of each, 2 u_s |want|.
// `abs_sum` is Σ|a_i| per output element (the same graph run on |inputs|).
inline std::vector<double> reduction_bound(const Tensor& want, const Tensor& abs_sum, int64_t n) {
  double u = unit_roundoff(want.dtype()), us = storage_roundoff(want.dtype());
  std::vector<double> b;
  for (int64_t i = 0; i < want.numel(); ++i)
    b.push_back(2.0 * static_cast<double>(n - 1) * u * std::fabs(abs_sum.get_double(i)) * 1.01 +
                2.0 * us * std::fabs(want.get_double(i)));
  return b;
}

// Seeded inputs for g's placeholders: normal for floats, [lo, hi) for integers, {0,1} for bool.
inline std::vector<Tensor> random_inputs(const Graph& g, uint64_t seed = 1, int64_t lo = -5,
                                         int64_t hi = 6) {
  std::vector<Tensor> out;
  uint64_t offset = 0;
  for (const Node* p : g.placeholders()) {
    const TensorMeta& m = p->meta();
    Tensor t;
    if (is_floating(m.dtype))
      t = Tensor::randn(m.sizes, m.dtype, seed, offset);
    else if (m.dtype == DType::Bool)
      t = Tensor::randint(m.sizes, 0, 2, m.dtype, seed, offset);
    else
      t = Tensor::randint(m.sizes, lo, hi, m.dtype, seed, offset);
    offset += static_cast<uint64_t>(m.numel()) + 7;
    out.push_back(t);
  }
  return out;
}

// |t| elementwise (a copy).
inline Tensor abs_of(const Tensor& t) {
  Tensor a = t.clone();
  for (int64_t i = 0; i < a.numel(); ++i) a.set_double(i, std::fabs(a.get_double(i)));
  return a;
}

}  // namespace stax::conformance
