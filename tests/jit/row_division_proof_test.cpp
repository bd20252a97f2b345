// The exactness argument of cpu_cpp's row division (plugins/cpu_cpp/row_division.h), checked on
// the prelude's own code (kRowDivisionPrelude, compiled by the JIT as kernels compile it).
//
// For x of magnitude in [2^-64, 2^64) and |s| in [2^-32, 2^32) nothing underflows or overflows,
// so scaling by powers of two (exact) reduces the claim to mantissas: X, S in [1, 2) (and x' =
// x * sign(s) makes both positive; every step is symmetric). With r = RN(1/S) = (1/S)(1 + e),
// |e| <= 2^-24; q0 = RN(X r), |q0 - z| <= 1.5 ulp(z) for z = X / S; ne = RN(q0 S - X) =
// (q0 S - X)(1 + d), |d| <= 2^-24; the fma computes w = q0 - ne r exactly and rounds once, and
// w - z = -(q0 - z)(e + d + ed), so |w - z| <= 1.5 * 2^-46 ulp(z) (|z| < 2). q1 = RN(w) differs
// from RN(z) only if a midpoint m of two floats lies between them, i.e. |z - m| <= |w - z|. With
// X = Xi 2^-23, S = Si 2^-23 (integers in [2^23, 2^24)) and m = M 2^-c (M odd; c = 24 for
// z in [1, 2), 25 for z in (1/2, 1)): z - m = (Xi 2^c - M Si) / (Si 2^c), and D = Xi 2^c - M Si is
// a nonzero integer (no quotient is a midpoint), so that needs |D| <= Si 2^c 1.5 2^-46 < 12.
// For each Si and each D in [-32, 32] the Xi with Xi 2^c = D (mod Si) in [2^23, 2^24) are at most
// a few: every such (X, S) is computed here. The full run (STAX_ROW_DIVISION_ALL=1, ~40 s CPU)
// covers every Si: 372,140,564 candidates, no q1 != X / S. ctest runs every 97th Si, plus the
// negative control (q0 alone, no correction, fails on about a third of the candidates).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "plugins/cpu_cpp/clang_jit.h"
#include "plugins/cpu_cpp/row_division.h"

namespace stax::cpu {
namespace {

using DivFn = float(float, float);

float as_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// a^-1 mod m (gcd 1).
int64_t inverse_mod(int64_t a, int64_t m) {
  int64_t t0 = m, t1 = a % m, s0 = 0, s1 = 1;
  while (t1) {
    const int64_t q = t0 / t1;
    int64_t t = t0 - q * t1;
    t0 = t1;
    t1 = t;
    t = s0 - q * s1;
    s0 = s1;
    s1 = t;
  }
  return ((s0 % m) + m) % m;
}

struct Counts {
  uint64_t tested = 0, failed = 0;
  std::string first_failure;
};

// Every near-midpoint (X, S) for the mantissas Si = first, first + step, ... < 2^24.
Counts check(DivFn* divide, int64_t first, int64_t step) {
  Counts c;
  for (int64_t si = first; si < (1 << 24); si += step) {
    const float s = static_cast<float>(si) * 0x1p-23f;
    const int t = __builtin_ctzll(static_cast<unsigned long long>(si));
    const int64_t sp = si >> t;  // odd part
    for (int shift = 24; shift <= 25; ++shift) {
      const int64_t inv = sp == 1 ? 0 : inverse_mod((int64_t{1} << (shift - t)) % sp, sp);
      for (int64_t d = -32; d <= 32; ++d) {
        if (d == 0 || d % (int64_t{1} << t)) continue;
        const int64_t x0 = sp == 1 ? 0 : (((d >> t) % sp + sp) % sp) * inv % sp;
        int64_t xi = x0;
        if (xi < (int64_t{1} << 23)) xi += ((int64_t{1} << 23) - xi + sp - 1) / sp * sp;
        for (; xi < (int64_t{1} << 24); xi += sp) {
          const __int128 num = static_cast<__int128>(xi) * (static_cast<__int128>(1) << shift) - d;
          if (num % si != 0 || ((num / si) & 1) == 0) continue;  // M must be odd
          const float x = static_cast<float>(xi) * 0x1p-23f;
          ++c.tested;
          const float got = divide(x, s), want = x / s;
          if (bits(got) != bits(want) && ++c.failed == 1)
            c.first_failure = "x " + std::to_string(x) + " s " + std::to_string(s);
          if (sp == 1) break;
        }
      }
    }
  }
  return c;
}

// The prelude's helpers, JIT-compiled as kernels are, with `corrected` false the control that
// stops after q0.
CompiledModule compile_division(ClangJit& jit, bool corrected) {
  const std::string fn = std::string("extern \"C\" float divide(float x, float s) {\n") +
                         "  const stax_row_div d = stax_row_div_prepare(s);\n" +
                         (corrected ? "  return stax_row_div_apply(x, d);\n"
                                    : "  return (x * d.r);  // q0 only (s > 0 here)\n") +
                         "}\n";
  return jit.compile(std::string(kRowDivisionPrelude) + fn, {"divide"}, "divide");
}

TEST(RowDivisionProof, NearMidpointQuotientsAreCorrectlyRounded) {
  ClangJit jit;
  CompiledModule m = compile_division(jit, true);
  const bool all = std::getenv("STAX_ROW_DIVISION_ALL") != nullptr;
  Counts c = check(m.function<DivFn>("divide"), 1 << 23, all ? 1 : 97);
  EXPECT_GT(c.tested, all ? 372000000u : 3000000u);
  EXPECT_EQ(c.failed, 0u) << c.first_failure;
  std::printf("row division: %llu near-midpoint quotients checked (%s), %llu wrong\n",
              static_cast<unsigned long long>(c.tested), all ? "every divisor mantissa"
                                                              : "every 97th divisor mantissa",
              static_cast<unsigned long long>(c.failed));
}

// The candidates are the hard cases: without the correction many of them round wrong.
TEST(RowDivisionProof, WithoutTheCorrectionTheCandidatesFail) {
  ClangJit jit;
  CompiledModule m = compile_division(jit, false);
  Counts c = check(m.function<DivFn>("divide"), 1 << 23, 997);
  EXPECT_GT(c.failed, c.tested / 10) << c.tested;
}

// Special operands the range pass sends to the division, and zeros that stay on the fast form.
TEST(RowDivisionProof, RangeBoundsAndZeros) {
  ClangJit jit;
  const std::string fn = R"(
extern "C" int exact(float x, float s) {
  unsigned lo = 0xffffffffu, hi = 0u;
  stax_row_div_range(x, lo, hi);
  return stax_row_div_exact(stax_row_div_prepare(s), lo, hi) ? 1 : 0;
}
extern "C" float divide(float x, float s) { return stax_row_div_apply(x, stax_row_div_prepare(s)); }
)";
  CompiledModule m =
      jit.compile(std::string(kRowDivisionPrelude) + fn, {"exact", "divide"}, "range");
  auto exact = m.function<int(float, float)>("exact");
  auto divide = m.function<float(float, float)>("divide");
  EXPECT_EQ(exact(0x1p-64f, 3.0f), 1);
  EXPECT_EQ(exact(-0x1.fffffep63f, 3.0f), 1);
  EXPECT_EQ(exact(0x1.fffffep-65f, 3.0f), 0);  // below 2^-64
  EXPECT_EQ(exact(0x1p64f, 3.0f), 0);
  EXPECT_EQ(exact(1e-40f, 3.0f), 0);  // subnormal
  EXPECT_EQ(exact(as_float(0x7f800000u), 3.0f), 0);  // inf
  EXPECT_EQ(exact(as_float(0x7fc00000u), 3.0f), 0);  // NaN
  EXPECT_EQ(exact(1.0f, 0x1p-32f), 1);
  EXPECT_EQ(exact(1.0f, -0x1.fffffep31f), 1);
  EXPECT_EQ(exact(1.0f, 0x1p32f), 0);
  EXPECT_EQ(exact(1.0f, 0x1.fffffep-33f), 0);
  EXPECT_EQ(exact(1.0f, 0.0f), 0);
  EXPECT_EQ(exact(0.0f, 3.0f), 1);
  EXPECT_EQ(exact(-0.0f, 3.0f), 1);
  for (float s : {3.0f, -3.0f})
    for (float x : {0.0f, -0.0f}) {
      const float want = x / s;
      EXPECT_EQ(bits(divide(x, s)), bits(want)) << x << " / " << s;
    }
}

}  // namespace
}  // namespace stax::cpu
