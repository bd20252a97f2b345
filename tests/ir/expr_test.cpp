// Symbolic index expressions (core/ir/expr.h): canonical construction, printing, simplification
// of floor division and modulo, interval analysis (Def. 6.4), substitution and evaluation.
#include "core/ir/expr.h"

#include <gtest/gtest.h>

#include <random>

namespace stax {
namespace {

Expr i(int k, int64_t extent) { return Expr::iter(k, extent); }
Expr r(int k, int64_t extent) { return Expr::reduce(k, extent); }

TEST(Expr, ListingSpellings) {
  Expr i0 = i(0, 64), i1 = i(1, 2), r0 = r(0, 8192);
  EXPECT_EQ((i0 * 128 + r(0, 128)).str(), "128*i0 + r0_0");                     // Listing 6.2
  EXPECT_EQ((Expr(256) * i(1, 512) + i(0, 256)).str(), "i0 + 256*i1");          // Listing 6.3
  EXPECT_EQ((r0 + i1 * 8192 + i0 * 16384).str(), "16384*i0 + 8192*i1 + r0_0");  // Listing 6.4
  EXPECT_EQ((r(0, 2) + 2 * i0).str(), "2*i0 + r0_0");
}

TEST(Expr, CanonicalFormIsOrderIndependent) {
  Expr a = i(0, 10), b = i(1, 10), c = r(0, 10);
  EXPECT_EQ(a + b + c, c + (b + a));
  EXPECT_EQ((a + 3) * 2 - a, a + 6);
  EXPECT_EQ((a + b) - (b + a), Expr(0));
  EXPECT_TRUE(((a + b) - (b + a)).is_const(0));
  EXPECT_EQ((a - 2 * b - 3).str(), "i0 - 2*i1 - 3");
  EXPECT_EQ((-a + 5).str(), "-i0 + 5");
  EXPECT_EQ((Expr(2) + 3).str(), "5");
  EXPECT_EQ((a * 0 + 7).str(), "7");
  // Products of variables distribute and keep sorted factors.
  EXPECT_EQ(((a + 1) * b).str(), "i0*i1 + i1");
  EXPECT_EQ(b * a, a * b);
}

TEST(Expr, FloorDivAndModSimplify) {
  Expr i0 = i(0, 64), r0 = r(0, 128);
  Expr flat = 128 * i0 + r0;
  EXPECT_EQ(floordiv(flat, 128), i0);
  EXPECT_EQ(mod(flat, 128), r0);
  EXPECT_EQ(floordiv(i0, 1), i0);
  EXPECT_EQ(mod(i0, 1), Expr(0));
  EXPECT_EQ(mod(4 * i0, 2), Expr(0));
  EXPECT_EQ(floordiv(Expr(-7), 2), Expr(-4));
  EXPECT_EQ(mod(Expr(-7), 2), Expr(1));
  Expr x = i(0, 1000);
  EXPECT_EQ(floordiv(floordiv(x, 4), 8).str(), "i0//32");
  EXPECT_EQ(mod(x, 4).str(), "i0 % 4");
  EXPECT_EQ((4 * floordiv(x, 4)).str(), "4*(i0//4)");
  // s*(x//s) + x % s == x
  EXPECT_EQ(4 * floordiv(x, 4) + mod(x, 4), x);
  EXPECT_EQ(8 * floordiv(x + 1, 4) + 2 * mod(x + 1, 4), 2 * x + 2);
  // A value in range is its own remainder.
  EXPECT_EQ(mod(i(0, 100), 128), i(0, 100));
  EXPECT_EQ(floordiv(i(0, 100), 128), Expr(0));
  // Common factors cancel; small remainders vanish (reshape (2, 3, 4) -> (6, 4)).
  Expr a = i(0, 6), b = i(1, 4);
  Expr f = 4 * a + b;
  EXPECT_EQ(floordiv(f, 12), floordiv(a, 3));
  EXPECT_EQ(mod(floordiv(f, 4), 3), mod(a, 3));
  EXPECT_EQ(mod(f, 4), b);
  EXPECT_EQ(12 * floordiv(f, 12) + 4 * mod(floordiv(f, 4), 3) + mod(f, 4), f);
  EXPECT_EQ(mod(6 * a, 4).str(), "2*((3*i0) % 2)");
  // m*(x//(d*m)) + (x//d) % m == x//d, then with x % d: a flattened (2048, 64) index read back
  // as an (8, 16, 16, 64) buffer's is affine again (ConvNeXt's LayerNorm output as the
  // Linear's input: a view, not a copy).
  Expr n = i(0, 2048), c = i(1, 64);
  EXPECT_EQ(8 * floordiv(n, 32) + mod(floordiv(n, 4), 8), floordiv(n, 4));
  EXPECT_EQ(3 * 8 * floordiv(n, 32) + 3 * mod(floordiv(n, 4), 8), 3 * floordiv(n, 4));
  EXPECT_EQ(16384 * floordiv(n, 256) + 1024 * mod(floordiv(n, 16), 16) + 64 * mod(n, 16) + c,
            64 * n + c);
  // Coefficients that do not match stay as they are.
  EXPECT_EQ((7 * floordiv(n, 32) + mod(floordiv(n, 4), 8)).str(), "7*(i0//32) + (i0//4) % 8");
  EXPECT_EQ(mod(3 * i(0, 128), 128).str(), "(3*i0) % 128");
}

TEST(Expr, MinMax) {
  Expr a = i(0, 10);
  EXPECT_EQ(min(a, Expr(20)), a);
  EXPECT_EQ(max(a, Expr(20)), Expr(20));
  EXPECT_EQ(min(a, Expr(5)).str(), "min(i0, 5)");
  EXPECT_EQ(min(Expr(5), a), min(a, Expr(5)));
}

TEST(Expr, Intervals) {
  // Example 6.3: (3*i) mod 128 with i in [0, 128) lies in [0, 127].
  Expr idx = mod(3 * i(0, 128), 128);
  EXPECT_EQ(bound(idx), (Interval{0, 127}));
  EXPECT_EQ(bound(3 * i(0, 128)), (Interval{0, 381}));
  EXPECT_EQ(bound(i(0, 256) + 256 * i(1, 512)), (Interval{0, 131071}));
  EXPECT_EQ(bound(Expr(5)), Interval::point(5));
  EXPECT_EQ(bound(i(0, 10) - 20), (Interval{-20, -11}));
  EXPECT_EQ(bound(floordiv(i(0, 100), 7)), (Interval{0, 14}));
  // An index read from memory is unbounded; after indirect_indexing it has an extent.
  Expr ind = Expr::indirect(3, -1);
  EXPECT_EQ(bound(ind), Interval::unbounded());
  EXPECT_EQ(bound(mod(ind, 16)), (Interval{0, 15}));
  EXPECT_EQ(bound(Expr::indirect(3, 128)), (Interval{0, 127}));
  EXPECT_EQ(Interval::unbounded().str(), "[-inf, +inf]");
  EXPECT_EQ(bound(ind * 2 + 1).str(), "[-inf, +inf]");
  // Overrides take precedence.
  auto ov = [](const Expr& v) -> std::optional<Interval> {
    if (v.var_kind() == VarKind::Iter) return Interval{5, 6};
    return std::nullopt;
  };
  EXPECT_EQ(bound(2 * i(0, 100), ov), (Interval{10, 12}));
}

TEST(Expr, SubstituteEvaluateAndCoefficients) {
  Expr i0 = i(0, 64), i1 = i(1, 2), r0 = r(0, 8192);
  Expr e = 16384 * i0 + 8192 * i1 + r0;
  EXPECT_EQ(linear_coeff(e, i0), 16384);
  EXPECT_EQ(linear_coeff(e, i(2, 3)), 0);
  EXPECT_EQ(linear_coeff(mod(i0, 4) + i1, i0), std::nullopt);
  EXPECT_EQ(free_vars(e), (std::vector<Expr>{i0, i1, r0}));
  Expr m = i(0, 128);
  Expr merged = substitute(e, std::map<Expr, Expr>{{i0, Expr(0)}, {i1, m}});
  EXPECT_EQ(merged.str(), "8192*i0 + r0_0");
  Expr sub = substitute(e, [&](const Expr& v) -> std::optional<Expr> {
    if (v == r0) return 3 * i1;
    return std::nullopt;
  });
  EXPECT_EQ(sub.str(), "16384*i0 + 8195*i1");
  auto at = [](int64_t a, int64_t b, int64_t c) {
    return [=](const Expr& v) -> int64_t {
      if (v.var_kind() == VarKind::Reduce) return c;
      return v.var_index() == 0 ? a : b;
    };
  };
  EXPECT_EQ(evaluate(e, at(1, 1, 5)), 16384 + 8192 + 5);
  EXPECT_EQ(evaluate(floordiv(i0 - 9, 4), at(1, 0, 0)), -2);
  EXPECT_EQ(evaluate(mod(i0 - 9, 4), at(1, 0, 0)), 0);
}

// Simplification must never change a value: random affine numerators, all points evaluated.
TEST(Expr, SimplificationPreservesValues) {
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int> coeff(-6, 12), ext(1, 7), divisor(1, 16);
  for (int trial = 0; trial < 300; ++trial) {
    int64_t e0 = ext(rng), e1 = ext(rng);
    Expr a = i(0, e0), b = i(1, e1);
    int64_t ca = coeff(rng), cb = coeff(rng), c0 = coeff(rng), d = divisor(rng), d2 = divisor(rng);
    Expr num = ca * a + cb * b + Expr(c0);
    Expr q = floordiv(num, d), m = mod(num, d);
    Expr nested = mod(floordiv(num, d), d2) * d + mod(num, d);
    // folds to num // d (x//d % d2 + d2*(x//(d*d2))), for negative values of num too
    Expr rebuilt = ca * (mod(floordiv(num, d), d2) + d2 * floordiv(num, d * d2));
    for (int64_t x = 0; x < e0; ++x)
      for (int64_t y = 0; y < e1; ++y) {
        auto env = [&](const Expr& v) { return v.var_index() == 0 ? x : y; };
        int64_t n = ca * x + cb * y + c0;
        ASSERT_EQ(evaluate(q, env), floordiv_int(n, d)) << q.str();
        ASSERT_EQ(evaluate(m, env), mod_int(n, d)) << m.str();
        ASSERT_EQ(evaluate(nested, env), mod_int(floordiv_int(n, d), d2) * d + mod_int(n, d))
            << nested.str();
        ASSERT_EQ(evaluate(rebuilt, env), ca * floordiv_int(n, d)) << rebuilt.str();
        Interval iq = bound(q);
        ASSERT_TRUE(evaluate(q, env) >= iq.lo && evaluate(q, env) <= iq.hi) << q.str();
      }
  }
}

}  // namespace
}  // namespace stax
