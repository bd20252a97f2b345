// Helpers of the float32 function tests (erf_f32_test, exp_f32_test): bits, the error in ULPs of
// a double reference, and inputs that cross every region of a formula.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace stax::test {

inline float from_bits(uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}
inline uint32_t bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}
// |got - ref| in float32 ULPs of the reference (the subnormal ULP below 2^-126).
inline double ulp_error(float got, double ref) {
  double a = std::fabs(ref);
  double ulp = 0x1p-149;
  if (a >= 0x1p-126) {
    int e;
    std::frexp(a, &e);
    ulp = std::ldexp(1.0, e - 24);
  }
  return std::fabs(static_cast<double>(got) - ref) / ulp;
}
// `edges`, then n - edges.size() values alternating between random bit patterns (NaNs, infinities
// and subnormals included) and values uniform in [-span / 2, span / 2) (a fixed LCG).
inline std::vector<float> region_inputs(std::vector<float> edges, size_t n, float span) {
  std::vector<float> v = std::move(edges);
  uint32_t u = 12345;
  while (v.size() < n) {
    u = u * 1664525u + 1013904223u;
    float x = (v.size() % 2) ? from_bits(u) : (static_cast<float>(u >> 8) / 16777216.0f - 0.5f) * span;
    v.push_back(x);
  }
  return v;
}

}  // namespace stax::test
