// Indexing ops: inference, must-fail errors, interpreter values by hand and against numpy.
#include <gtest/gtest.h>

#include "core/graph/graph.h"
#include "core/graph/op_registry.h"
#include "core/interpreter/interpreter.h"
#include "core/support/error.h"
#include "tests/support/interp_helpers.h"

using namespace stax;
using namespace stax::test;

namespace {

Tensor ints(const Shape& sizes, const std::vector<int64_t>& v) {
  return Tensor::from_vector<int64_t>(sizes, v);
}

}  // namespace

TEST(Cat, ValuesPromotionAndLegacyEmpty) {
  Graph g;
  Node* a = g.placeholder("a", {2, 2}, DType::Int64);
  Node* b = g.placeholder("b", {2, 1}, DType::Float32);
  Node* e = g.placeholder("e", {0}, DType::Float32);
  Node* c = g.call("cat", {std::vector<Node*>{a, e, b}, -1});
  EXPECT_EQ(c->shape(), (Shape{2, 3}));
  EXPECT_EQ(c->dtype(), DType::Float32);
  Node* c0 = g.call("cat", {std::vector<Node*>{a, a}});
  EXPECT_EQ(c0->shape(), (Shape{4, 2}));
  g.output({c, c0});
  auto r = interpret(g, {ints({2, 2}, {1, 2, 3, 4}),
                         Tensor::from_vector<float>({2, 1}, {0.5f, 1.5f}), Tensor::empty({0})});
  EXPECT_EQ(r[0].to_vector<double>(), (std::vector<double>{1, 2, 0.5, 3, 4, 1.5}));
  EXPECT_EQ(r[1].to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 3, 4, 1, 2, 3, 4}));
}

TEST(Cat, ShapeMismatchNamesShapesAndNode) {
  Graph g;
  Node* a = g.placeholder("a", {2, 3});
  Node* b = g.placeholder("b", {3, 4});
  std::string m = error_of([&] { g.call("cat", {std::vector<Node*>{a, b}, 1}, {}, "bad"); });
  EXPECT_TRUE(has(m, "%bad") && has(m, "(2, 3)") && has(m, "(3, 4)") && has(m, "dimension 1")) << m;
}

TEST(Gather, ValuesAndOutOfRange) {
  Graph g;
  Node* x = g.placeholder("x", {2, 2});
  Node* i = g.placeholder("i", {2, 2}, DType::Int64);
  g.output({g.call("gather", {x, 1, i}, {}, "gat")});
  auto r =
      interpret(g, {Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4}), ints({2, 2}, {0, 0, 1, 0})});
  EXPECT_EQ(r[0].to_vector<float>(), (std::vector<float>{1, 1, 4, 3}));
  std::string m = error_of([&] {
    interpret(g, {Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4}), ints({2, 2}, {0, 2, 1, 0})});
  });
  EXPECT_TRUE(has(m, "%gat") && has(m, "index 2 is out of bounds for dimension 1 with size 2"))
      << m;
  m = error_of([&] {  // gather does not wrap negative indices (as torch)
    interpret(g, {Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4}), ints({2, 2}, {0, -1, 1, 0})});
  });
  EXPECT_TRUE(has(m, "%gat") && has(m, "index -1")) << m;
}

TEST(Scatter, SrcValueAndAdd) {
  Graph g;
  Node* x = g.placeholder("x", {2, 3});
  Node* i = g.placeholder("i", {2, 2}, DType::Int64);
  Node* s = g.placeholder("s", {2, 2});
  g.output({g.call("scatter.src", {x, 1, i, s}), g.call("scatter_add", {x, 1, i, s})});
  auto r = interpret(g, {Tensor::full({2, 3}, 1.0), ints({2, 2}, {2, 0, 1, 1}),
                         Tensor::from_vector<float>({2, 2}, {10, 20, 30, 40})});
  EXPECT_EQ(r[0].to_vector<float>(), (std::vector<float>{20, 1, 10, 1, 40, 1}));  // last write wins
  EXPECT_EQ(r[1].to_vector<float>(), (std::vector<float>{21, 1, 11, 1, 71, 1}));
  // scatter.value along dim 0: out[index[0][j]][j] = 9.
  Graph g2;
  Node* x2 = g2.placeholder("x", {3, 2});
  Node* i2 = g2.placeholder("i", {1, 2}, DType::Int64);
  g2.output({g2.call("scatter.value", {x2, 0, i2, 9})});
  auto r2 = interpret(g2, {Tensor::zeros({3, 2}), ints({1, 2}, {2, 0})});
  EXPECT_EQ(r2[0].to_vector<float>(), (std::vector<float>{0, 9, 0, 0, 9, 0}));
}

TEST(IndexSelect, Values) {
  Graph g;
  Node* x = g.placeholder("x", {3, 2});
  Node* i = g.placeholder("i", {4}, DType::Int32);
  Node* s = g.call("index_select", {x, 0, i});
  EXPECT_EQ(s->shape(), (Shape{4, 2}));
  g.output({s});
  auto r = interpret(g, {iota({3, 2}), Tensor::from_vector<int32_t>({4}, {2, 0, 2, 1})});
  EXPECT_EQ(r[0].to_vector<int>(), (std::vector<int>{4, 5, 0, 1, 4, 5, 2, 3}));
}

TEST(Index, ShapesAdjacentAndSeparated) {
  Graph g;
  Node* x = g.placeholder("x", {4, 5, 6});
  Node* i = g.placeholder("i", {2, 1}, DType::Int64);
  Node* j = g.placeholder("j", {3}, DType::Int64);
  auto idx = [](std::vector<Node*> v) { return Arg(v); };
  EXPECT_EQ(g.call("index.Tensor", {x, idx({nullptr, i, j})})->shape(), (Shape{4, 2, 3}));
  EXPECT_EQ(g.call("index.Tensor", {x, idx({i, nullptr, j})})->shape(), (Shape{2, 3, 5}));
  EXPECT_EQ(g.call("index.Tensor", {x, idx({nullptr, j})})->shape(), (Shape{4, 3, 6}));
  EXPECT_EQ(g.call("index.Tensor", {x, idx({j})})->shape(), (Shape{3, 5, 6}));
}

TEST(Index, HandValuesNegativeWrapAndOutOfBounds) {
  Graph g;
  Node* x = g.placeholder("x", {3, 4});
  Node* i = g.placeholder("i", {2}, DType::Int64);
  g.output({g.call("index.Tensor", {x, Arg(std::vector<Node*>{nullptr, i})}, {}, "ix")});
  auto r = interpret(g, {iota({3, 4}), ints({2}, {-1, 1})});
  EXPECT_EQ(r[0].to_vector<int>(), (std::vector<int>{3, 1, 7, 5, 11, 9}));
  std::string m = error_of([&] { interpret(g, {iota({3, 4}), ints({2}, {0, 4})}); });
  EXPECT_TRUE(has(m, "%ix") && has(m, "index 4 is out of bounds for dimension 1 with size 4")) << m;
  m = error_of([&] { interpret(g, {iota({3, 4}), ints({2}, {-5, 0})}); });
  EXPECT_TRUE(has(m, "%ix") && has(m, "index -5")) << m;
}

TEST(Index, MustFailAtBuildTime) {
  Graph g;
  Node* x = g.placeholder("x", {3, 4});
  Node* mask = g.placeholder("mask", {3}, DType::Bool);
  Node* f = g.placeholder("f", {3}, DType::Float32);
  Node* i = g.placeholder("i", {2}, DType::Int64);
  Node* k = g.placeholder("k", {3}, DType::Int64);
  std::string m = error_of([&] {
    g.call("index.Tensor", {x, Arg(std::vector<Node*>{mask})}, {}, "m");
  });
  EXPECT_TRUE(has(m, "%m") && has(m, "mask")) << m;
  m = error_of([&] { g.call("index.Tensor", {x, Arg(std::vector<Node*>{f})}, {}, "fl"); });
  EXPECT_TRUE(has(m, "%fl") && has(m, "int64 or int32")) << m;
  m = error_of([&] { g.call("index.Tensor", {x, Arg(std::vector<Node*>{i, k})}, {}, "bc"); });
  EXPECT_TRUE(has(m, "%bc") && has(m, "(2,)") && has(m, "(3,)")) << m;
  m = error_of([&] { g.call("index.Tensor", {x, Arg(std::vector<Node*>{i, i, i})}, {}, "many"); });
  EXPECT_TRUE(has(m, "%many") && has(m, "too many indices")) << m;
  m = error_of([&] {
    g.call("index_put", {x, Arg(std::vector<Node*>{i}), g.placeholder("v", {3, 3})}, {}, "ip");
  });
  EXPECT_TRUE(has(m, "%ip") && has(m, "(3, 3)") && has(m, "(2, 4)")) << m;
  m = error_of([&] {
    g.call("index_put", {x, Arg(std::vector<Node*>{i}), g.placeholder("vi", {4}, DType::Int64)}, {},
           "ipd");
  });
  EXPECT_TRUE(has(m, "%ipd") && has(m, "int64") && has(m, "float32")) << m;
}

TEST(IndexPut, OverwriteAndAccumulate) {
  Graph g;
  Node* x = g.placeholder("x", {4});
  Node* i = g.placeholder("i", {3}, DType::Int64);
  Node* v = g.placeholder("v", {3});
  g.output({g.call("index_put", {x, Arg(std::vector<Node*>{i}), v}),
            g.call("index_put", {x, Arg(std::vector<Node*>{i}), v, true})});
  auto r = interpret(g, {Tensor::full({4}, 1.0), ints({3}, {0, -1, 0}),
                         Tensor::from_vector<float>({3}, {10, 20, 30})});
  EXPECT_EQ(r[0].to_vector<float>(), (std::vector<float>{30, 1, 1, 20}));
  EXPECT_EQ(r[1].to_vector<float>(), (std::vector<float>{41, 1, 1, 21}));
}

TEST(Index, MatchesNumpy) {
  Graph g;
  Node* x = g.placeholder("x", {4, 5, 6}, DType::Float64);
  Node* i = g.placeholder("i", {2, 1}, DType::Int64);
  Node* j = g.placeholder("j", {3}, DType::Int64);
  Node* v = g.placeholder("v", {5}, DType::Float64);
  Node* sep = g.call("index.Tensor", {x, Arg(std::vector<Node*>{i, nullptr, j})});
  Node* adj = g.call("index.Tensor", {x, Arg(std::vector<Node*>{nullptr, i, j})});
  Node* put = g.call("index_put", {x, Arg(std::vector<Node*>{i, nullptr, j}), v, true});
  g.output({sep, adj, put});
  Tensor xt = Tensor::randn({4, 5, 6}, DType::Float64, 3);
  Tensor it = ints({2, 1}, {3, -4});
  Tensor jt = ints({3}, {5, 0, 5});
  Tensor vt = Tensor::randn({5}, DType::Float64, 4);
  auto r = interpret(g, {xt, it, jt, vt});
  auto want_sep = numpy_eval({xt, it, jt}, "x, i, j = ins\nout = x[i, :, j]");
  auto want_adj = numpy_eval({xt, it, jt}, "x, i, j = ins\nout = x[:, i, j]");
  auto want_put = numpy_eval({xt, it, jt, vt},
                             "x, i, j, v = ins\nout = x.copy()\n"
                             "I, J = np.broadcast_arrays(i, j)\n"
                             "for a, b in zip(I.ravel(), J.ravel()):\n    out[a, :, b] += v\n");
  if (!want_sep || !want_adj || !want_put) GTEST_SKIP() << "python3 with numpy is not available";
  EXPECT_TRUE(r[0].equal(*want_sep)) << r[0].summary() << " vs " << want_sep->summary();
  EXPECT_TRUE(r[1].equal(*want_adj)) << r[1].summary() << " vs " << want_adj->summary();
  EXPECT_TRUE(r[2].allclose(*want_put, 1e-12, 1e-12)) << r[2].summary();
}

TEST(Gather, MatchesNumpyTakeAlongAxis) {
  Graph g;
  Node* x = g.placeholder("x", {3, 4, 5}, DType::Float64);
  Node* i = g.placeholder("i", {3, 7, 5}, DType::Int64);
  Node* src = g.placeholder("s", {3, 7, 5}, DType::Float64);
  g.output({g.call("gather", {x, 1, i}), g.call("scatter_add", {x, 1, i, src})});
  Tensor xt = Tensor::randn({3, 4, 5}, DType::Float64, 11);
  Tensor it = Tensor::randint({3, 7, 5}, 0, 4, DType::Int64, 12);
  Tensor st = Tensor::randn({3, 7, 5}, DType::Float64, 13);
  auto r = interpret(g, {xt, it, st});
  auto want_g = numpy_eval({xt, it}, "x, i = ins\nout = np.take_along_axis(x, i, axis=1)");
  auto want_s = numpy_eval({xt, it, st},
                           "x, i, s = ins\nout = x.copy()\n"
                           "a, b, c = np.indices(i.shape)\nnp.add.at(out, (a, i, c), s)\n");
  if (!want_g || !want_s) GTEST_SKIP() << "python3 with numpy is not available";
  EXPECT_TRUE(r[0].equal(*want_g));
  EXPECT_TRUE(r[1].allclose(*want_s, 1e-12, 1e-12));
}
