#include <gtest/gtest.h>

#include "core/graph/graph.h"
#include "core/graph/op_registry.h"
#include "core/support/error.h"

using namespace stax;

TEST(Graph, BuildsListing51) {
  Graph g;
  Node* p1 = g.placeholder("primals_1", {64, 128});
  Node* p2 = g.placeholder("primals_2", {64, 128});
  Node* add = g.call("add.Tensor", {p1, p2});
  Node* relu = g.call("relu", {add});
  Node* mul = g.call("mul.Scalar", {relu, 2});
  Node* sum = g.call("sum.dim_IntList", {mul, std::vector<int64_t>{-1}});
  g.output({sum});
  EXPECT_EQ(add->name(), "add");
  EXPECT_EQ(sum->name(), "sum_0");
  EXPECT_EQ(sum->shape(), (Shape{64}));
  ASSERT_EQ(add->kwargs().size(), 1u);
  EXPECT_EQ(add->kwargs()[0].first, "alpha");
  EXPECT_EQ(arg_str(add->kwargs()[0].second), "1");
  ASSERT_EQ(sum->args().size(), 3u);
  EXPECT_EQ(arg_str(sum->args()[2]), "False");
  EXPECT_EQ(arg_str(sum->kwargs()[0].second), "tensorplay.undefined");
  EXPECT_EQ(p1->num_users(), 1u);
  EXPECT_EQ(sum->num_users(), 1u);  // the output node
}

TEST(Graph, NamesFollowListing52) {
  Graph g;
  Node* x = g.placeholder("", {32, 64});
  Node* w = g.placeholder("", {64, 64});
  EXPECT_EQ(x->name(), "primals_1");
  Node* m = g.call("matmul", {x, w});
  Node* m2 = g.call("matmul", {x, w});
  EXPECT_EQ(m->name(), "matmul");
  EXPECT_EQ(m2->name(), "matmul_0");
}

TEST(Graph, ShapeMismatchNamesBothShapesAndNode) {
  Graph g;
  Node* a = g.placeholder("a", {3, 4});
  Node* b = g.placeholder("b", {5, 4});
  try {
    g.call("add.Tensor", {a, b}, {}, "bad");
    FAIL();
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("%bad"), std::string::npos) << m;
    EXPECT_NE(m.find("(3, 4)"), std::string::npos) << m;
    EXPECT_NE(m.find("(5, 4)"), std::string::npos) << m;
  }
}

TEST(Graph, UnknownOpSuggests) {
  Graph g;
  Node* a = g.placeholder("a", {3});
  try {
    g.call("rleu", {a});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("relu.default"), std::string::npos) << e.what();
  }
}

TEST(Graph, DoubleRepr) {
  EXPECT_EQ(double_repr(2.0), "2.0");
  EXPECT_EQ(double_repr(0.5), "0.5");
  EXPECT_EQ(double_repr(1e-5), "1e-05");
  EXPECT_EQ(double_repr(0.7071067811865476), "0.7071067811865476");
  EXPECT_EQ(double_repr(1e16), "1e+16");
  EXPECT_EQ(double_repr(123456.0), "123456.0");
  EXPECT_EQ(double_repr(-0.001), "-0.001");
  EXPECT_EQ(double_repr(0.0001), "0.0001");
}

TEST(Graph, RoundingOpsRejectBoolAtBuildTime) {
  Graph g;
  Node* b = g.placeholder("b", {3}, DType::Bool);
  for (const char* op : {"floor", "ceil", "round", "trunc"}) {
    try {
      g.call(op, {b});
      FAIL() << op;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("not implemented for 'bool'"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_EQ(g.call("floor", {g.placeholder("f", {3})})->dtype(), DType::Float32);
  // sign of bool is the tensor itself (torch 2.x), bool-typed
  EXPECT_EQ(g.call("sign", {b})->dtype(), DType::Bool);
  EXPECT_EQ(g.call("sgn", {b})->dtype(), DType::Bool);
}
