// The pointwise Composite ops (sinc, frac, deg2rad, the shrinks, threshold, entr, logit,
// round.decimals, logaddexp, xlogy, fmax / fmin) against torch's element formulas computed here in
// double, NaN / ±inf included; each also compiled on cpu_cpp (no fallback) and compared bit for
// bit with the interpreter.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "tests/support/op_check.h"

using namespace stax;
using namespace stax::test;

TEST(CompositeFormulas, MatchTorchFormulas) {
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

// angle of real tensors (0 or pi, NaN kept; integers give float32) and ldexp (self * 2^other).
TEST(CompositeFormulas, AngleAndLdexp) {
  Tensor x = vec({-1.0, 0.0, 2.0, kNaN, -0.0, -kInf});
  expect_values(run({x}, op("angle")).out, {kPi, 0, 0, kNaN, 0, kPi}, 0, "angle");
  Tensor i = Tensor::from_vector({2}, std::vector<double>{-3, 4}, DType::Int64);
  OpRun ai = run({i}, op("angle"));
  EXPECT_EQ(ai.out.dtype(), DType::Float32);
  expect_values(ai.out, {static_cast<float>(kPi), 0}, 0, "angle int64");
  Tensor m = vec({1.5, -2.0, 3.0});
  Tensor e = Tensor::from_vector({3}, std::vector<double>{2, -1, 0}, DType::Int32);
  OpRun l = run({m, e}, op("ldexp.Tensor", {}, {}, 2));
  EXPECT_EQ(l.out.dtype(), DType::Float64);
  expect_values(l.out, {6, -1, 3}, 0, "ldexp");
}
