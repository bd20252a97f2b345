// nonzero_static and segment_reduce (core/ops/indexing/static_shapes.cpp), and the scatter forms
// (core/ops/indexing/scatter_forms.cpp), against results worked out by hand with torch's rules;
// each also compiled on cpu_cpp and compared bit for bit with the interpreter (op_check.h).
// Gradients: tests/ops/functional_form_cases.h.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/support/error.h"
#include "tests/support/op_check.h"

using namespace stax;
using namespace stax::test;

namespace {

Tensor ints(const Shape& s, std::vector<double> v) {
  return Tensor::from_vector(s, v, DType::Int64);
}

Build segment(std::string reduce, Kwargs kw) {
  return [=](Graph& g, const std::vector<Node*>& x) {
    Kwargs k = kw;
    k.emplace_back("lengths", x[1]);
    return g.call("segment_reduce", {x[0], reduce}, k);
  };
}

}  // namespace

TEST(NonzeroStatic, PadsOrCutsTheRows) {
  // nonzero of [[0, 2, 0], [3, NaN, 0]]: (0, 1), (1, 0), (1, 1) (NaN counts)
  Tensor x = Tensor::from_vector({2, 3}, std::vector<double>{0, 2, 0, 3, kNaN, 0}, DType::Float32);
  auto ns = [](int64_t size, int64_t fill) {
    return [=](Graph& g, const std::vector<Node*>& in) {
      return g.call("nonzero_static", {in[0]}, {{"size", size}, {"fill_value", fill}});
    };
  };
  OpRun five = run({x}, ns(5, -1));
  EXPECT_EQ(five.out.dtype(), DType::Int64);
  expect_values(five.out, {0, 1, 1, 0, 1, 1, -1, -1, -1, -1}, 0, "size 5");
  expect_values(run({x}, ns(2, 7)).out, {0, 1, 1, 0}, 0, "size 2 cuts");
  EXPECT_EQ(run({x}, ns(0, 7)).out.sizes(), (Shape{0, 2}));
  Tensor b = Tensor::from_vector({4}, std::vector<double>{1, 0, 0, 1}, DType::Bool);
  expect_values(run({b}, ns(3, -2)).out, {0, 3, -2}, 0, "bool");
  Tensor zeros = Tensor::from_vector({0, 3}, std::vector<double>{}, DType::Int32);
  expect_values(run({zeros}, ns(2, -1)).out, {-1, -1, -1, -1}, 0, "empty");
  Tensor scalar = Tensor::from_vector({}, std::vector<double>{5}, DType::Int64);
  EXPECT_EQ(run({scalar}, ns(3, -1)).out.sizes(), (Shape{3, 0}));
  Graph g;
  Node* in = g.placeholder("x", x.meta());
  EXPECT_THROW(g.call("nonzero_static", {in}, {{"size", -1}}), Error);
}

TEST(SegmentReduce, TorchsSegmentsAndStartValues) {
  Tensor data = Tensor::from_vector({6}, std::vector<double>{1, -2, 3, 4, 5, 100}, DType::Float64);
  Tensor lengths = ints({4}, {2, 0, 3, 0});  // the 6th element lies past the last segment
  // the start value joins the reduction; an empty segment gets it
  expect_values(run({data, lengths}, segment("sum", {{"initial", 1.0}})).out, {0, 1, 13, 1}, 0, "sum");
  expect_values(run({data, lengths}, segment("max", {{"initial", 2.0}})).out, {2, 2, 5, 2}, 0, "max");
  expect_values(run({data, lengths}, segment("min", {})).out, {-2, kInf, 3, kInf}, 0, "min");
  // torch's get_reduction_enum takes amax / amin as max / min
  expect_values(run({data, lengths}, segment("amin", {})).out, {-2, kInf, 3, kInf}, 0, "amin");
  expect_values(run({data, lengths}, segment("amax", {{"initial", 2.0}})).out, {2, 2, 5, 2}, 0,
                "amax");
  expect_values(run({data, lengths}, segment("prod", {})).out, {-2, 1, 60, 1}, 0, "prod");
  expect_values(run({data, lengths}, segment("mean", {})).out, {-0.5, kNaN, 4, kNaN}, 0, "mean");
  expect_values(run({data, lengths}, segment("mean", {{"initial", 3.0}})).out, {1, 3, 5, 3}, 0,
                "mean with initial: (3 + sum) / length");
  // axis 1 with per-row offsets: rows [[0 1 | 2 3 4], [0 1 2 3 | 4]]
  Tensor d2 = Tensor::from_vector({2, 5}, std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9},
                                  DType::Float32);
  Tensor offsets = ints({2, 3}, {0, 2, 5, 0, 4, 5});
  OpRun r = run({d2, offsets}, [](Graph& g, const std::vector<Node*>& x) {
    return g.call("segment_reduce", {x[0], std::string("sum")}, {{"offsets", x[1]}, {"axis", 1}});
  });
  EXPECT_EQ(r.out.dtype(), DType::Float32);
  expect_values(r.out, {1, 9, 26, 9}, 0, "offsets, axis 1");
  // the inner dims reduce element by element
  Tensor d3 = Tensor::from_vector({3, 2}, std::vector<double>{1, 2, 3, 4, 5, 6}, DType::Float64);
  expect_values(run({d3, ints({2}, {1, 2})}, segment("max", {})).out, {1, 2, 5, 6}, 0, "inner");
}

TEST(SegmentReduce, RejectsWhatTorchRejects) {
  Graph g;
  Node* d = g.placeholder("d", {4}, DType::Float32);
  Node* l = g.placeholder("l", {2}, DType::Int64);
  Node* i = g.placeholder("i", {4}, DType::Int32);
  EXPECT_THROW(g.call("segment_reduce", {d, std::string("median")}, {{"lengths", l}}), Error);
  EXPECT_THROW(g.call("segment_reduce", {d, std::string("sum")}), Error);  // no lengths / offsets
  EXPECT_THROW(g.call("segment_reduce", {i, std::string("sum")}, {{"lengths", l}}), Error);
  EXPECT_THROW(g.call("segment_reduce", {d, std::string("sum")}, {{"lengths", l}, {"axis", 1}}), Error);
}

TEST(ScatterForms, PlaceSourceWhereTheViewReads) {
  Tensor self = Tensor::from_vector({3, 3}, std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7, 8},
                                    DType::Int64);
  Tensor src = Tensor::from_vector({2}, std::vector<double>{-1, -2}, DType::Int64);
  expect_values(run({self, src}, op("diagonal_scatter", {1}, {}, 2)).out,
                {0, -1, 2, 3, 4, -2, 6, 7, 8}, 0, "diagonal_scatter offset 1");
  Tensor src4 = Tensor::from_vector({2, 2}, std::vector<double>{-1, -2, -3, -4}, DType::Int64);
  expect_values(run({self, src4}, op("as_strided_scatter",
                                     {std::vector<int64_t>{2, 2}, std::vector<int64_t>{3, 2}, 1},
                                     {}, 2))
                    .out,
                {0, -1, 2, -2, -3, 5, -4, 7, 8}, 0, "as_strided_scatter");
  Graph g;
  Node* a = g.placeholder("a", {3, 3});
  Node* b = g.placeholder("b", {3});
  EXPECT_THROW(g.call("diagonal_scatter", {a, b, 1}), Error);  // the diagonal has 2 elements
}

TEST(ScatterForms, MaskedIndexClampsAndFills) {
  Tensor x = Tensor::from_vector({4}, std::vector<double>{10, 11, 12, 13}, DType::Float64);
  Tensor idx = ints({3}, {-5, 2, 9});
  Tensor mask = Tensor::from_vector({3}, std::vector<double>{1, 0, 1}, DType::Bool);
  expect_values(run({x, mask, idx}, [](Graph& g, const std::vector<Node*>& in) {
                  return g.call("_unsafe_masked_index", {in[0], in[1], Arg(Arg::List{Arg(in[2])}), -1.0});
                }).out,
                {10, -1, 13}, 0, "_unsafe_masked_index");
  Tensor vals = Tensor::from_vector({3}, std::vector<double>{1, 2, 4}, DType::Float64);
  expect_values(run({x, mask, idx, vals}, [](Graph& g, const std::vector<Node*>& in) {
                  return g.call("_unsafe_masked_index_put_accumulate",
                                {in[0], in[1], Arg(Arg::List{Arg(in[2])}), in[3]});
                }).out,
                {11, 11, 12, 17}, 0, "_unsafe_masked_index_put_accumulate");
}
