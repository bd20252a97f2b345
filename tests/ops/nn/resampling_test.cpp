// The upsampling ops of core/ops/nn/resampling.cpp against torch's index arithmetic worked out by
// hand (UpSample.h), interpreted and compiled on cpu_cpp (bit for bit, op_check.h). Gradients:
// tests/ops/functional_form_cases.h; torch's own results: the OpInfo entries interpolate.*.
#include <gtest/gtest.h>

#include <vector>

#include "core/graph/graph.h"
#include "core/support/error.h"
#include "tests/support/op_check.h"

using namespace stax;
using namespace stax::test;

namespace {

Tensor ramp(const Shape& s, std::vector<double> v, DType t = DType::Float64) {
  return Tensor::from_vector(s, v, t);
}

std::vector<double> gathered(const std::vector<double>& x, const std::vector<int>& idx) {
  std::vector<double> out;
  for (int i : idx) out.push_back(x[static_cast<size_t>(i)]);
  return out;
}

}  // namespace

TEST(Resampling, NearestIndices) {
  std::vector<double> v{5, 7, 9};
  Tensor x = ramp({1, 1, 3}, v, DType::Float32);
  // scale 3/7: floor(d * scale) = 0 0 0 1 1 2 2; exact: floor((d + 0.5) * scale) = 0 0 1 1 1 2 2
  expect_values(run({x}, op("upsample_nearest1d", {std::vector<int64_t>{7}})).out,
                gathered(v, {0, 0, 0, 1, 1, 2, 2}), 0, "nearest1d");
  expect_values(run({x}, op("_upsample_nearest_exact1d", {std::vector<int64_t>{7}})).out,
                gathered(v, {0, 0, 1, 1, 1, 2, 2}), 0, "nearest_exact1d");
  // a scale given: 1 / 2.5 = 0.4 -> floor(0.4 d) = 0 0 0 1 1
  expect_values(run({x}, op("upsample_nearest1d", {std::vector<int64_t>{5}, 2.5})).out,
                gathered(v, {0, 0, 0, 1, 1}), 0, "nearest1d with scales");
  Tensor u8 = ramp({1, 1, 1, 1, 2}, {3, 200}, DType::UInt8);
  OpRun r = run({u8}, op("upsample_nearest3d", {std::vector<int64_t>{2, 1, 4}}));
  EXPECT_EQ(r.out.dtype(), DType::UInt8);
  expect_values(r.out, {3, 3, 200, 200, 3, 3, 200, 200}, 0, "nearest3d uint8");
  expect_values(run({u8}, op("_upsample_nearest_exact3d", {std::vector<int64_t>{1, 1, 3}})).out,
                {3, 200, 200}, 0, "nearest_exact3d");  // floor((d + 0.5) * 2/3) = 0 1 1
}

TEST(Resampling, LinearWeights) {
  Tensor x = ramp({1, 1, 3}, {0, 10, 20});
  // scale 3/5: src = 0.6 (d + 0.5) - 0.5 = -0.2 (-> 0), 0.4, 1.0, 1.6, 2.2 (i1 clamped)
  expect_values(run({x}, op("upsample_linear1d", {std::vector<int64_t>{5}, false})).out,
                {0, 4, 10, 16, 20}, 1e-12, "linear1d");
  expect_values(run({x}, op("upsample_linear1d", {std::vector<int64_t>{5}, true})).out,
                {0, 5, 10, 15, 20}, 1e-12, "linear1d align_corners");
  // trilinear on a ramp along d, h and w with align_corners: exact on the ramp
  std::vector<double> v;
  for (int d = 0; d < 2; ++d)
    for (int h = 0; h < 2; ++h)
      for (int w = 0; w < 2; ++w) v.push_back(100 * d + 10 * h + w);
  OpRun t = run({ramp({1, 1, 2, 2, 2}, v)},
                op("upsample_trilinear3d", {std::vector<int64_t>{3, 2, 3}, true}));
  std::vector<double> want;
  for (int d = 0; d < 3; ++d)
    for (int h = 0; h < 2; ++h)
      for (int w = 0; w < 3; ++w) want.push_back(50 * d + 10 * h + 0.5 * w);
  expect_values(t.out, want, 1e-12, "trilinear3d");
}

TEST(Resampling, BicubicKeysKernel) {
  // the same size without align_corners: src = d, t = 0, weights (0, 1, 0, 0): the identity
  std::vector<double> v{1, -2, 4, 0.5, 3, 7, -1, 2, 6, 5, 0, 1};
  Tensor x = ramp({1, 1, 3, 4}, v);
  expect_values(run({x}, op("upsample_bicubic2d", {std::vector<int64_t>{3, 4}, false})).out, v,
                1e-12, "bicubic identity");
  // a constant stays constant (the four weights sum to 1)
  Tensor c = ramp({1, 1, 2, 2}, {2.5, 2.5, 2.5, 2.5}, DType::Float32);
  expect_values(run({c}, op("upsample_bicubic2d", {std::vector<int64_t>{3, 5}, true})).out,
                std::vector<double>(15, 2.5), 1e-6, "bicubic constant");
  // one row, align_corners, 2 -> 3: the middle point t = 0.5 of taps (a, a, b, b) clamped:
  // w = (-0.09375, 0.59375, 0.59375, -0.09375) -> (a + b) / 2
  expect_values(run({ramp({1, 1, 1, 2}, {2, 6})},
                    op("upsample_bicubic2d", {std::vector<int64_t>{1, 3}, true}))
                    .out,
                {2, 4, 6}, 1e-12, "bicubic midpoint");
}

TEST(Resampling, RejectsBadInput) {
  Graph g;
  Node* x3 = g.placeholder("x", {1, 2, 3});
  Node* i = g.placeholder("i", {1, 2, 3}, DType::Int64);
  EXPECT_THROW(g.call("upsample_linear1d", {i, std::vector<int64_t>{4}, false}), Error);
  EXPECT_THROW(g.call("upsample_bicubic2d", {x3, std::vector<int64_t>{4, 4}, false}), Error);
  EXPECT_THROW(g.call("upsample_nearest1d", {x3, std::vector<int64_t>{0}}), Error);
}
