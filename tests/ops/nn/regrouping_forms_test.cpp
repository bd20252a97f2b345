// channel_shuffle, _chunk_cat, _safe_softmax and empty_permuted (core/ops/nn/regrouping_forms.cpp)
// against results worked out by hand; interpreted and compiled on cpu_cpp (bit for bit).
// Gradients: tests/ops/functional_form_cases.h.
#include <gtest/gtest.h>

#include <vector>

#include "core/graph/graph.h"
#include "core/support/error.h"
#include "tests/support/op_check.h"

using namespace stax;
using namespace stax::test;

TEST(RegroupingForms, ChannelShuffle) {
  Tensor x = Tensor::from_vector({1, 6, 1}, std::vector<double>{0, 1, 2, 3, 4, 5}, DType::Int32);
  // groups 2: (2, 3) channels transposed to (3, 2)
  expect_values(run({x}, op("channel_shuffle", {2})).out, {0, 3, 1, 4, 2, 5}, 0, "groups 2");
  expect_values(run({x}, op("channel_shuffle", {3})).out, {0, 2, 4, 1, 3, 5}, 0, "groups 3");
  Graph g;
  Node* in = g.placeholder("x", x.meta());
  EXPECT_THROW(g.call("channel_shuffle", {in, 4}), Error);  // 6 channels, 4 groups
}

TEST(RegroupingForms, ChunkCatPadsEachTensor) {
  Tensor a = Tensor::from_vector({2, 3}, std::vector<double>{0, 1, 2, 3, 4, 5}, DType::Float32);
  Tensor b = Tensor::from_vector({2, 1}, std::vector<double>{10, 11}, DType::Float32);
  OpRun r = run({a, b}, [](Graph& g, const std::vector<Node*>& x) {
    return g.call("_chunk_cat", {Arg(std::vector<Node*>{x[0], x[1]}), 1, 2});
  });
  EXPECT_EQ(r.out.sizes(), (Shape{2, 2, 3}));
  expect_values(r.out, {0, 1, 10, 2, 0, 0, 3, 4, 11, 5, 0, 0}, 0, "_chunk_cat");
}

TEST(RegroupingForms, SafeSoftmaxZeroesFullyMaskedRows) {
  Tensor x = Tensor::from_vector({2, 2}, std::vector<double>{-kInf, -kInf, 0, 0}, DType::Float32);
  expect_values(run({x}, op("_safe_softmax", {1})).out, {0, 0, 0.5, 0.5}, 0, "_safe_softmax");
  OpRun d = run({x}, op("_safe_softmax", {1, DType::Float64}));
  EXPECT_EQ(d.out.dtype(), DType::Float64);
}

TEST(RegroupingForms, EmptyPermutedIsRowMajorZeros) {
  OpRun r = run({}, [](Graph& g, const std::vector<Node*>&) {
    return g.call("empty_permuted", {std::vector<int64_t>{2, 3}, std::vector<int64_t>{1, 0}},
                  {{"dtype", DType::Int64}});
  });
  EXPECT_EQ(r.out.dtype(), DType::Int64);
  expect_values(r.out, std::vector<double>(6, 0), 0, "empty_permuted");
  Graph g;
  EXPECT_THROW(g.call("empty_permuted", {std::vector<int64_t>{2, 3}, std::vector<int64_t>{0, 0}}),
               Error);
}
