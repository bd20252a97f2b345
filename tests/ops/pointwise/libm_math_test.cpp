// The base math ops computed by the C library (asin ... lgamma, atan2, copysign, nextafter,
// signbit, gcd, lcm) in float32: exactly the library's float result, NaN included; each also
// compiled on cpu_cpp and compared bit for bit with the interpreter.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "tests/support/op_check.h"

using namespace stax;
using namespace stax::test;

TEST(LibmMath, MatchesTheLibraryInFloat32) {
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
