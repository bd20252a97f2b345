// fractional_max_pool2d / 3d (core/ops/nn/fractional_pool.cpp): torch's window starts
// int((i + u) * alpha) - int(u * alpha) (the last at in - pool) worked out by hand; which sample
// drives which dim; the maxima and their plane indices; interpreted and compiled (bit for bit).
#include <gtest/gtest.h>

#include <vector>

#include "core/graph/graph.h"
#include "core/support/error.h"
#include "tests/support/op_check.h"

using namespace stax;
using namespace stax::test;

namespace {

// x[h][w] = 7h + w over (1, 1, 3, 7): a window's maximum is its bottom-right element, whose value
// is also its plane index.
Tensor plane() {
  std::vector<double> v(21);
  for (int i = 0; i < 21; ++i) v[i] = i;
  return Tensor::from_vector({1, 1, 3, 7}, v, DType::Float32);
}

Build pool(int element) {
  return [element](Graph& g, const std::vector<Node*>& x) {
    Node* t = g.call("fractional_max_pool2d", {x[0], std::vector<int64_t>{2, 2},
                                               std::vector<int64_t>{2, 3}, x[1]});
    return g.call("getitem", {t, element});
  };
}

}  // namespace

TEST(FractionalMaxPool, WindowStartsFollowTheSamples) {
  // W: in 7, pool 2, out 3: alpha 2.5; u 0.3 -> starts 0, 3, 5; u 0.9 -> 0, 2, 5.
  // H: in 3, pool 2, out 2: alpha 1 -> starts 0, 1 for any u. Sample 0 drives W, 1 drives H.
  Tensor u03 = Tensor::from_vector({1, 1, 2}, std::vector<double>{0.3, 0.5}, DType::Float32);
  Tensor u09 = Tensor::from_vector({1, 1, 2}, std::vector<double>{0.9, 0.5}, DType::Float32);
  expect_values(run({plane(), u03}, pool(0)).out, {8, 11, 13, 15, 18, 20}, 0, "values u 0.3");
  OpRun idx = run({plane(), u03}, pool(1));
  EXPECT_EQ(idx.out.dtype(), DType::Int64);
  expect_values(idx.out, {8, 11, 13, 15, 18, 20}, 0, "indices u 0.3");
  expect_values(run({plane(), u09}, pool(0)).out, {8, 10, 13, 15, 17, 20}, 0, "values u 0.9");
}

TEST(FractionalMaxPool, ThreeDimsAndErrors) {
  // (1, 1, 2, 2, 2) with a 2x2x2 window: one output, the maximum and its index
  Tensor x = Tensor::from_vector({1, 1, 2, 2, 2}, std::vector<double>{3, 9, -1, 4, 0, 2, 8, 1},
                                 DType::Float64);
  Tensor u = Tensor::from_vector({1, 1, 3}, std::vector<double>{0.2, 0.4, 0.6}, DType::Float64);
  auto f = [](int e) {
    return [e](Graph& g, const std::vector<Node*>& in) {
      Node* t = g.call("fractional_max_pool3d", {in[0], std::vector<int64_t>{2, 2, 2},
                                                 std::vector<int64_t>{1, 1, 1}, in[1]});
      return g.call("getitem", {t, e});
    };
  };
  expect_values(run({x, u}, f(0)).out, {9}, 0, "3d value");
  expect_values(run({x, u}, f(1)).out, {1}, 0, "3d index");
  Graph g;
  Node* in = g.placeholder("x", {1, 1, 3, 7});
  Node* s = g.placeholder("u", {1, 1, 2});
  EXPECT_THROW(g.call("fractional_max_pool2d", {in, std::vector<int64_t>{2, 2},
                                                std::vector<int64_t>{3, 3}, s}),
               Error);  // 3 + 2 - 1 > 3 rows
}
