// The special functions (core/ops/special) against reference values: closed forms and tabulated
// values (digamma(1) = -γ, ζ(2, 1) = π²/6, Ai(1), K0(1), J1(-2), ...), polygamma, zeta, the
// incomplete gamma functions and the orthogonal polynomials; each also compiled on cpu_cpp and
// compared bit for bit with the interpreter (a counted fallback). Gradients: autodiff_vjp_test
// (tests/ops/special/special_function_cases.h); values against torch: the OpInfo harness.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "tests/support/op_check.h"

using namespace stax;
using namespace stax::test;

TEST(SpecialFunctions, MatchReferenceValues) {
  const double euler = 0.57721566490153286061;
  struct Ref {
    const char* op;
    std::vector<double> x, want;
  };
  const std::vector<Ref> refs = {
      {"digamma", {1.0, 0.5, 0.0, -1.0, -0.5, 10.0},
       {-euler, -euler - 2 * std::log(2.0), -kInf, kNaN, 0.03648997397857652,
        2.251752589066721}},
      {"erfinv", {0.0, 0.5, -0.9, 1.0, -1.0, 1.5}, {0.0, 0.4769362762044699, -1.1630871536766743,
                                                    kInf, -kInf, kNaN}},
      {"lgamma", {1.0, 0.5, 10.0}, {0.0, 0.5723649429247001, 12.801827480081469}},
      {"i0", {0.0, 1.0, -2.0}, {1.0, 1.2660658777520082, 2.2795853023360673}},
      {"special_i0e", {1.0}, {0.46575960759364043}},
      {"special_i1", {1.0, -1.0}, {0.5651591039924851, -0.5651591039924851}},
      {"special_ndtri", {0.975, 0.5, 1e-10, 0.0}, {1.959963984540054, 0.0, -6.361340902404056,
                                                   -kInf}},
      {"special_log_ndtr", {0.0, -40.0}, {-std::log(2.0), -804.6084420137538}},
      {"special_erfcx", {0.0, 30.0}, {1.0, 0.018795888861416751}},
      {"special_bessel_j0", {0.0, 2.0}, {1.0, 0.22389077914123567}},
      {"special_bessel_j1", {-2.0, 3.0}, {-0.5767248077568734, 0.33905895852593643}},
      {"special_bessel_y0", {1.0, 0.0, -1.0}, {0.08825696421567697, -kInf, kNaN}},
      {"special_modified_bessel_k0", {1.0}, {0.42102443824070834}},
      {"special_scaled_modified_bessel_k1", {2.0}, {0.1398658818165224 * std::exp(2.0)}},
      {"special_airy_ai", {1.0, -2.0, 0.0}, {0.1352924163128814, 0.22740742820168558,
                                             0.3550280538878172}},
      {"special_spherical_bessel_j0", {0.0, 2.0}, {1.0, std::sin(2.0) / 2}},
      {"asinh", {-3.0}, {std::asinh(-3.0)}},
  };
  for (const Ref& r : refs) {
    OpRun o = run({vec(r.x)}, op(r.op));
    expect_values(o.out, r.want, 1e-10, r.op);
    EXPECT_EQ(o.fallbacks, 1u) << r.op;
  }
  // polygamma(n, 1) = (-1)^(n+1) n! ζ(n + 1); ζ(2, 1) = π²/6; ζ(3, 2) = ζ(3) - 1
  const double zeta3 = 1.2020569031595942;
  auto pg = [](int64_t n) {
    return Build([n](Graph& g, const std::vector<Node*>& x) {
      return g.call("polygamma", {n, x[0]});
    });
  };
  expect_values(run({vec({1.0, -0.5})}, pg(1)).out, {kPi * kPi / 6, 8.934802200544704}, 1e-12,
                "trigamma");
  expect_values(run({vec({1.0})}, pg(2)).out, {-2 * zeta3}, 1e-12, "polygamma(2)");
  expect_values(run({vec({2.0, 3.0}), vec({1.0, 2.0})}, op("special_zeta", {}, {}, 2)).out,
                {kPi * kPi / 6, zeta3 - 1}, 1e-12, "zeta");
  // P(1, x) = 1 - e^-x; Q(2, 3) = e^-3 (1 + 3)
  expect_values(run({vec({1.0, 2.0}), vec({0.7, 3.0})}, op("igamma", {}, {}, 2)).out,
                {1 - std::exp(-0.7), 1 - 4 * std::exp(-3.0)}, 1e-12, "igamma");
  expect_values(run({vec({2.0}), vec({3.0})}, op("igammac", {}, {}, 2)).out, {4 * std::exp(-3.0)},
                1e-12, "igammac");
  // orthogonal polynomials: T3, U2, H3, He3, L2, P2 and the shifted T2 in closed form
  std::vector<double> xs = {-0.8, 0.3, 1.0, 2.0};
  auto poly = [&](const char* name, double n, const std::function<double(double)>& f) {
    OpRun o = run({vec(xs), vec(std::vector<double>(xs.size(), n))}, op(name, {}, {}, 2));
    expect_values(o.out, map(xs, f), 1e-12, name);
  };
  poly("special_chebyshev_polynomial_t", 3, [](double x) { return 4 * x * x * x - 3 * x; });
  poly("special_chebyshev_polynomial_u", 2, [](double x) { return 4 * x * x - 1; });
  poly("special_hermite_polynomial_h", 3, [](double x) { return 8 * x * x * x - 12 * x; });
  poly("special_hermite_polynomial_he", 3, [](double x) { return x * x * x - 3 * x; });
  poly("special_laguerre_polynomial_l", 2, [](double x) { return (x * x - 4 * x + 2) / 2; });
  poly("special_legendre_polynomial_p", 2, [](double x) { return (3 * x * x - 1) / 2; });
  poly("special_shifted_chebyshev_polynomial_t", 2,
       [](double x) { return 2 * (2 * x - 1) * (2 * x - 1) - 1; });
  poly("special_chebyshev_polynomial_t", -1, [](double) { return 0.0; });
}
