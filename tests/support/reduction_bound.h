// The seed's §6.5 error bound of a reordered float reduction, shared by the tests that compare the
// segmented order (cpu_cpp's default, the interpreter's ReductionOrder::Segmented) with the
// sequential one. Any summation order of n terms a_i in a dtype of unit roundoff u gives
// |ŝ - s| <= (n - 1)·u·Σ|a_i| (to first order) against the exact sum s, so two orders differ by
// at most 2·(n - 1)·u·Σ|a_i|; a result stored as float16 / bfloat16 adds one rounding of each.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/tensor/tensor.h"
#include "tests/support/compiled_check.h"

namespace stax::test {

// Unit roundoff of the storage dtype (0 when it is the computation dtype).
inline double storage_roundoff(DType d) {
  if (d == DType::Float16) return std::ldexp(1.0, -11);
  if (d == DType::BFloat16) return std::ldexp(1.0, -8);
  return 0;
}

// The largest |a - b| of two sums of n terms in two orders, Σ|a_i| = sum_abs, result `value`.
inline double reorder_bound(int64_t n, double sum_abs, double value, DType dtype) {
  double terms = static_cast<double>(std::max<int64_t>(n - 1, 0));
  return 2 * terms * unit_roundoff(dtype) * sum_abs * 1.01 +
         2 * storage_roundoff(dtype) * std::fabs(value);
}

// got and want: two sums (same shape) of n terms each in two orders; sum_abs: Σ|a_i| per output.
inline ::testing::AssertionResult within_reorder_bound(const Tensor& got, const Tensor& want,
                                                       const Tensor& sum_abs, int64_t n) {
  std::vector<double> bound(static_cast<size_t>(want.numel()));
  for (int64_t i = 0; i < want.numel(); ++i)
    bound[static_cast<size_t>(i)] =
        reorder_bound(n, sum_abs.get_double(i), want.get_double(i), want.dtype());
  return within_bound(got, want, bound);
}

}  // namespace stax::test
