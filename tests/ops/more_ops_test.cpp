// The ops of core/graph/ops/more_ops.cpp (issue 14): bad-input errors and dtypes; the special
// functions against reference values (closed forms and tabulated values: digamma(1) = -γ,
// ζ(2, 1) = π²/6, Ai(1), K0(1), J1(-2), ...); the Composite ops against torch's element formulas
// computed here in double, NaN / ±inf / 0-d / empty inputs included; every case also compiled on
// cpu_cpp and compared bit for bit with the interpreter (the base math ops as counted fallbacks).
// Gradients and tangents are checked against finite differences by autodiff_vjp_test /
// autodiff_functional_test (tests/more_op_cases.h); values against torch itself by the OpInfo
// harness (tests/aten/opinfo.py).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/graph/op_registry.h"
#include "core/graph/printer.h"
#include "core/interpreter/interpreter.h"
#include "tests/support/compiled_check.h"
#include "tests/support/interp_helpers.h"
#include "tests/support/op_check.h"

using namespace stax;
using namespace stax::test;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kPi = 3.14159265358979323846;

std::vector<double> map(const std::vector<double>& x, const std::function<double(double)>& f) {
  std::vector<double> out;
  for (double v : x) out.push_back(f(v));
  return out;
}

}  // namespace

TEST(MoreOps, BadInputsFailWithTheCause) {
  Graph g;
  Node* x = g.placeholder("x", {2, 3}, DType::Float32);
  Node* i = g.placeholder("i", {2, 3}, DType::Int64);
  Node* v = g.placeholder("v", {3}, DType::Float32);
  EXPECT_TRUE(has(error_of([&] { g.call("glu", {x, 1}); }), "must be even"));
  EXPECT_TRUE(has(error_of([&] { g.call("dot", {x, v}); }), "1D tensors expected"));
  EXPECT_TRUE(has(error_of([&] { g.call("diagonal", {x, 0, 1, -1}); }), "cannot be identical"));
  EXPECT_TRUE(has(error_of([&] { g.call("gcd", {x, x}); }), "integer tensors only"));
  EXPECT_TRUE(has(error_of([&] { g.call("polygamma", {-1, x}); }), "negative n"));
  EXPECT_TRUE(has(error_of([&] { g.call("huber_loss", {x, x, 1, -1.0}); }), "delta"));
  EXPECT_TRUE(has(error_of([&] { g.call("rot90", {x, 1, std::vector<int64_t>{0, 0}}); }),
                  "different"));
  Node* y = g.placeholder("y", {3, 2}, DType::Float32);
  EXPECT_TRUE(has(error_of([&] { g.call("linalg_cross", {y, y}); }), "must have length 3"));
  EXPECT_TRUE(has(error_of([&] { g.call("linalg_cross", {x, v}); }), "same number of dimensions"));
  // 0-d inputs (found by the meta-differential test: the rule read sizes[dim] of a 0-d tensor)
  Node* s = g.placeholder("s", {}, DType::Float64);
  Node* si = g.placeholder("si", {}, DType::Int64);
  EXPECT_TRUE(has(error_of([&] { g.call("linalg_cross", {si, s}); }), "0-d"));
  EXPECT_TRUE(has(error_of([&] { g.call("take", {x, x}); }), "long tensor"));
  EXPECT_TRUE(has(error_of([&] { g.call("narrow_copy", {x, 1, 2, 2}); }), "exceeds dimension"));
  EXPECT_TRUE(has(error_of([&] { g.call("unfold", {x, 1, 4, 1}); }), "maximum size"));
  EXPECT_TRUE(has(error_of([&] { g.call("softshrink", {x, -0.5}); }), "greater or equal to 0"));
  EXPECT_TRUE(has(error_of([&] { g.call("pixel_shuffle", {x, 2}); }), "at least 3"));
  // dtypes: integers promote to float for the math ops; gcd stays integral; signbit is bool
  EXPECT_EQ(g.call("asin", {i})->dtype(), DType::Float32);
  EXPECT_EQ(g.call("atan2", {i, i})->dtype(), DType::Float32);
  EXPECT_EQ(g.call("gcd", {i, i})->dtype(), DType::Int64);
  EXPECT_EQ(g.call("signbit", {x})->dtype(), DType::Bool);
  EXPECT_EQ(g.call("count_nonzero", {x})->dtype(), DType::Int64);
  EXPECT_EQ(g.call("nansum", {i})->dtype(), DType::Int64);
  EXPECT_EQ(g.call("trace", {i})->dtype(), DType::Int64);
  EXPECT_EQ(g.call("diagonal", {x, 1})->shape(), (Shape{2}));
  EXPECT_EQ(g.call("diag_embed", {x, -1})->shape(), (Shape{2, 4, 4}));
  EXPECT_EQ(g.call("unfold", {x, 1, 2, 1})->shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(g.call("bucketize.Tensor", {x, v}, {{"out_int32", true}})->dtype(), DType::Int32);
}

TEST(MoreOps, SpecialFunctionsMatchReferenceValues) {
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

TEST(MoreOps, LibmOpsMatchTheLibraryInFloat32) {
  std::vector<double> x = {-0.75, -0.1, 0.0, 0.2, 0.9, kNaN};
  Tensor t = vec(x, DType::Float32);
  struct F {
    const char* op;
    float (*f)(float);
  };
  const F fs[] = {{"asin", std::asin},   {"acos", std::acos},   {"atan", std::atan},
                  {"sinh", std::sinh},   {"cosh", std::cosh},   {"asinh", std::asinh},
                  {"atanh", std::atanh}, {"erfc", std::erfc},   {"lgamma", std::lgamma}};
  for (const F& f : fs) {
    OpRun o = run({t}, op(f.op));
    std::vector<double> want;
    for (double v : x) want.push_back(f.f(static_cast<float>(v)));
    expect_values(o.out, want, 0, f.op);
  }
  Tensor a = vec({1.0, -2.0, 0.0, -0.0, 3.0}, DType::Float32);
  Tensor b = vec({2.0, 0.5, -1.0, 1.0, -0.0}, DType::Float32);
  expect_values(run({a, b}, op("atan2", {}, {}, 2)).out,
                {std::atan2(1.0f, 2.0f), std::atan2(-2.0f, 0.5f), std::atan2(0.0f, -1.0f),
                 std::atan2(-0.0f, 1.0f), std::atan2(3.0f, -0.0f)},
                0, "atan2");
  expect_values(run({a, b}, op("copysign.Tensor", {}, {}, 2)).out, {1, 2, -0.0, 0.0, -3}, 0,
                "copysign");
  expect_values(run({a, b}, op("nextafter", {}, {}, 2)).out,
                {std::nextafter(1.0f, 2.0f), std::nextafter(-2.0f, 0.5f),
                 std::nextafter(0.0f, -1.0f), std::nextafter(-0.0f, 1.0f),
                 std::nextafter(3.0f, -0.0f)},
                0, "nextafter");
  Tensor s = run({vec({-0.0, 0.0, -2.0, kNaN, -kNaN})}, op("signbit")).out;
  expect_values(s, {1, 0, 1, 0, 1}, 0, "signbit");
  Tensor ia = Tensor::from_vector({4}, std::vector<double>{12, -18, 0, 7}, DType::Int64);
  Tensor ib = Tensor::from_vector({4}, std::vector<double>{8, 12, 0, -21}, DType::Int64);
  expect_values(run({ia, ib}, op("gcd", {}, {}, 2)).out, {4, 6, 0, 7}, 0, "gcd");
  expect_values(run({ia, ib}, op("lcm", {}, {}, 2)).out, {24, 36, 0, 21}, 0, "lcm");
}

TEST(MoreOps, CompositesMatchTorchFormulas) {
  std::vector<double> x = {-3.5, -1.0, -0.25, 0.0, 0.3, 1.0, 2.9, kNaN, kInf, -kInf};
  Tensor t = vec(x);
  auto check = [&](const char* name, Build b, const std::function<double(double)>& f) {
    OpRun o = run({t}, b);
    expect_values(o.out, map(x, f), 1e-15, name);
    EXPECT_EQ(o.fallbacks, 0u) << name;
  };
  check("sinc", op("sinc"), [](double v) {
    return v == 0 ? 1.0 : std::sin(kPi * v) / (kPi * v);
  });
  check("frac", op("frac"), [](double v) { return v - std::trunc(v); });
  check("deg2rad", op("deg2rad"), [](double v) { return v * (kPi / 180); });
  check("hardshrink", op("hardshrink", {0.5}),
        [](double v) { return (v >= -0.5 && v <= 0.5) ? 0 : v; });
  check("softshrink", op("softshrink", {0.5}),
        [](double v) { return v > 0.5 ? v - 0.5 : (v < -0.5 ? v + 0.5 : 0); });
  check("threshold", op("threshold", {0.3, -7.0}), [](double v) { return v <= 0.3 ? -7.0 : v; });
  check("special_entr", op("special_entr"), [](double v) {
    if (std::isnan(v)) return v;
    if (v > 0) return -v * std::log(v);
    return v == 0 ? 0.0 : -kInf;
  });
  check("logit", op("logit", {0.25}), [](double v) {
    double z = std::isnan(v) ? v : std::min(std::max(v, 0.25), 0.75);
    return std::log(z / (1 - z));
  });
  check("round_decimals", op("round.decimals", {}, {{"decimals", 1}}),
        [](double v) { return std::nearbyint(v * 10) / 10; });
  // binary: logaddexp with equal infinities, xlogy at x = 0 and y = NaN, fmax ignoring NaN
  Tensor a = vec({1.0, kInf, -kInf, 0.0, 2.0, kNaN});
  Tensor b = vec({2.0, kInf, -kInf, kNaN, -1.0, 3.0});
  expect_values(run({a, b}, op("logaddexp", {}, {}, 2)).out,
                {2 + std::log1p(std::exp(-1.0)), kInf, -kInf, kNaN, 2 + std::log1p(std::exp(-3.0)),
                 kNaN},
                1e-15, "logaddexp");
  expect_values(run({a, b}, op("xlogy.Tensor", {}, {}, 2)).out,
                {std::log(2.0), kInf, kNaN, kNaN, kNaN, kNaN}, 1e-15, "xlogy");
  expect_values(run({a, b}, op("fmax", {}, {}, 2)).out, {2, kInf, -kInf, 0, 2, 3}, 0, "fmax");
  expect_values(run({a, b}, op("fmin", {}, {}, 2)).out, {1, kInf, -kInf, 0, -1, 3}, 0, "fmin");
}

TEST(MoreOps, ShapeAndReductionCompositesMatchHandResults) {
  // diagonal / trace / diag / diag_embed on a 3 x 4 matrix 0..11
  std::vector<double> m(12);
  for (int i = 0; i < 12; ++i) m[i] = i;
  Tensor t = Tensor::from_vector({3, 4}, m, DType::Float64);
  expect_values(run({t}, op("diagonal", {1})).out, {1, 6, 11}, 0, "diagonal+1");
  expect_values(run({t}, op("diagonal", {-1})).out, {4, 9}, 0, "diagonal-1");
  expect_values(run({t}, op("diagonal", {5})).out, {}, 0, "diagonal empty");
  expect_values(run({t}, op("trace")).out, {0 + 5 + 10}, 0, "trace");
  expect_values(run({vec({1, 2})}, op("diag", {1})).out, {0, 1, 0, 0, 0, 2, 0, 0, 0}, 0, "diag");
  Tensor idx = Tensor::from_vector({3}, std::vector<double>{-1, 0, 5}, DType::Int64);
  expect_values(run({t, idx}, op("take", {}, {}, 2)).out, {11, 0, 5}, 0, "take");
  expect_values(run({t}, op("rot90")).out, {3, 7, 11, 2, 6, 10, 1, 5, 9, 0, 4, 8}, 0, "rot90");
  expect_values(run({t}, op("unfold", {1, 2, 2})).out, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 0,
                "unfold");
  expect_values(run({t}, op("narrow_copy", {1, 1, 2})).out, {1, 2, 5, 6, 9, 10}, 0, "narrow");
  Tensor fill = Tensor::from_vector({2}, std::vector<double>{0, -1}, DType::Int64);
  expect_values(run({t, fill}, [](Graph& g, const std::vector<Node*>& x) {
                  return g.call("index_fill.int_Scalar", {x[0], 1, x[1], -5.0});
                }).out,
                {-5, 1, 2, -5, -5, 5, 6, -5, -5, 9, 10, -5}, 0, "index_fill");
  // nansum / count_nonzero / logcumsumexp / median
  Tensor n = vec({1.0, kNaN, 2.0, 0.0});
  expect_values(run({n}, op("nansum")).out, {3}, 0, "nansum");
  expect_values(run({n}, op("count_nonzero")).out, {3}, 0, "count_nonzero");
  expect_values(run({n}, op("median")).out, {kNaN}, 0, "median with NaN");
  expect_values(run({n}, op("nanmedian")).out, {1}, 0, "nanmedian");
  expect_values(run({vec({3.0, -1.0, 2.0, 7.0})}, op("median")).out, {2}, 0, "median");
  Tensor l = vec({0.5, -1.0, 2.0});
  double c1 = std::log(std::exp(0.5) + std::exp(-1.0));
  expect_values(run({l}, op("logcumsumexp", {0})).out,
                {0.5, c1, std::log(std::exp(0.5) + std::exp(-1.0) + std::exp(2.0))}, 1e-15,
                "logcumsumexp");
  // bucketize / searchsorted: NaN values go last (torch's comparisons)
  Tensor bounds = vec({1.0, 3.0, 5.0});
  Tensor vals = vec({0.0, 1.0, 4.0, 5.0, 9.0, kNaN});
  expect_values(run({vals, bounds}, op("bucketize.Tensor", {}, {}, 2)).out, {0, 0, 2, 2, 3, 3}, 0,
                "bucketize");
  expect_values(run({vals, bounds}, op("bucketize.Tensor", {}, {{"right", true}}, 2)).out,
                {0, 1, 2, 3, 3, 3}, 0, "bucketize right");
  // linspace: torch's two halves, in float32
  OpRun ls = run({}, [](Graph& g, const std::vector<Node*>&) {
    return g.call("linspace", {-1.0, 2.0, 7});
  });
  expect_values(ls.out, {-1, -0.5, 0, 0.5, 1, 1.5, 2}, 0, "linspace");
}
