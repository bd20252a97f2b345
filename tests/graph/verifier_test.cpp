// verify(): every structural invariant of a Graph, each violation reported naming the node.
#include "core/graph/verifier.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "core/graph/op_registry.h"
#include "core/ops/install.h"
#include "core/graph/parser.h"
#include "core/support/error.h"

using namespace stax;

namespace {

std::string verify_error(const Graph& g) {
  try {
    verify(g);
  } catch (const Error& e) {
    EXPECT_EQ(e.stage(), "verify");
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& piece) {
  return s.find(piece) != std::string::npos;
}

}  // namespace

TEST(Verifier, AcceptsBuiltAndParsedGraphs) {
  Graph g;
  Node* x = g.placeholder("x", {4, 8});
  Node* w = g.placeholder("w", {8, 2});
  Node* mm = g.call("matmul", {x, w});
  Node* r = g.call("relu", {mm});
  g.output({r, mm});
  EXPECT_EQ(verify_error(g), "");
  for (const char* f : {"example_1_1.stax", "example_5_1_forward.stax", "example_5_1_joint.stax",
                        "mlp_layer.stax"}) {
    Graph p = parse_graph_file(std::string(STAX_SOURCE_DIR) + "/examples/" + f);
    EXPECT_EQ(verify_error(p), "") << f;
  }
}

TEST(Verifier, MissingOrMisplacedOutput) {
  Graph g;
  g.placeholder("x", {2});
  EXPECT_EQ(verify_error(g), "graph: error: the graph has no output node at its end");
  Node* x = g.find("x");
  g.output({x});
  g.add_node(NodeKind::Output, "output_2", nullptr, {Arg(x)}, {}, TensorMeta{});
  EXPECT_EQ(verify_error(g),
            "%output: error: an output node before the end of the graph (there must be exactly "
            "one, last)");
}

TEST(Verifier, DanglingReference) {
  Graph other;
  Node* foreign = other.placeholder("foreign", {2});
  Graph g;
  Node* x = g.placeholder("x", {2});
  const OpDef* add = g.registry().find("add.Tensor");
  g.add_node(NodeKind::CallFunction, "bad", add, {Arg(x), Arg(foreign)}, {{"alpha", Arg(1)}},
             TensorMeta::contiguous({2}));
  g.output({g.find("bad")});
  EXPECT_EQ(verify_error(g), "%bad: error: refers to %foreign, which is not a node of this graph");
}

TEST(Verifier, CycleNamesTheNodes) {
  Graph g;
  Node* x = g.placeholder("x", {2});
  Node* a = g.call("relu", {x}, {}, "a");
  Node* b = g.call("relu", {a}, {}, "b");
  g.output({b});
  g.replace_all_uses(x, b);  // a now reads b, which reads a
  std::string err = verify_error(g);
  EXPECT_TRUE(contains(err, "error: the graph has a cycle: ")) << err;
  EXPECT_TRUE(contains(err, "%a -> %b -> %a") || contains(err, "%b -> %a -> %b")) << err;
}

TEST(Verifier, UseBeforeDefinition) {
  Graph g;
  Node* x = g.placeholder("x", {2});
  Node* a = g.call("relu", {x}, {}, "a");
  g.output({a});
  g.set_insert_point(a);  // the next node goes before %a, although it reads %a
  g.call("neg", {a}, {}, "early");
  g.set_insert_point(nullptr);
  EXPECT_EQ(verify_error(g),
            "%early: error: uses %a before its definition (the order is not topological)");
}

TEST(Verifier, UnknownOp) {
  OpRegistry custom;
  register_all_ops(custom);
  custom.add("frobnicate(Tensor self) -> Tensor", OpCategory::Pointwise, Promotion::Default,
             [](const CallArgs& c) { return c.tensor("self"); });
  Graph g;
  Node* x = g.placeholder("x", {2});
  g.add_node(NodeKind::CallFunction, "f", custom.find("frobnicate"), {Arg(x)}, {},
             TensorMeta::contiguous({2}));
  g.output({g.find("f")});
  std::string err = verify_error(g);
  EXPECT_TRUE(contains(err, "%f: error: op 'frobnicate.default' is not in the graph's op registry"))
      << err;
  // The same op object from another table is not accepted either, even under a known name.
  Graph h;
  Node* y = h.placeholder("y", {2});
  h.add_node(NodeKind::CallFunction, "r", custom.find("relu"), {Arg(y)}, {},
             TensorMeta::contiguous({2}));
  h.output({h.find("r")});
  EXPECT_EQ(verify_error(h), "%r: error: op 'relu.default' is not in the graph's op registry");
}

TEST(Verifier, ArityAndTypes) {
  Graph g;
  Node* x = g.placeholder("x", {2});
  const OpDef* relu = g.registry().find("relu");
  g.add_node(NodeKind::CallFunction, "r", relu, {Arg(x), Arg(x)}, {}, TensorMeta::contiguous({2}));
  g.output({g.find("r")});
  EXPECT_TRUE(
      contains(verify_error(g),
               "%r: error: relu.default takes at most 1 positional arguments but 2 were given"))
      << verify_error(g);

  Graph h;
  Node* y = h.placeholder("y", {2});
  h.add_node(NodeKind::CallFunction, "a", h.registry().find("add.Tensor"), {Arg(y), Arg(2)},
             {{"alpha", Arg(1)}}, TensorMeta::contiguous({2}));
  h.output({h.find("a")});
  EXPECT_TRUE(contains(verify_error(h), "%a: error: add.Tensor expected")) << verify_error(h);
  EXPECT_TRUE(contains(verify_error(h), "argument 'other' got 2")) << verify_error(h);
}

TEST(Verifier, ArgumentsMustBeNormalized) {
  Graph g;
  Node* x = g.placeholder("x", {2});
  // add.Tensor without its alpha kwarg: binds, but is not the normalized form.
  g.add_node(NodeKind::CallFunction, "a", g.registry().find("add.Tensor"), {Arg(x), Arg(x)}, {},
             TensorMeta::contiguous({2}));
  g.output({g.find("a")});
  EXPECT_TRUE(
      contains(verify_error(g), "%a: error: arguments of add.Tensor are not in normalized form"))
      << verify_error(g);
}

TEST(Verifier, MetaMustMatchInference) {
  Graph g;
  Node* x = g.placeholder("x", {2, 3});
  g.add_node(NodeKind::CallFunction, "r", g.registry().find("relu"), {Arg(x)}, {},
             TensorMeta::contiguous({3, 2}, DType::Float64));
  g.output({g.find("r")});
  EXPECT_EQ(verify_error(g),
            "%r: error: metadata shape=(3, 2) strides=(2, 1) dtype=float64 device=cpu differs "
            "from the inferred shape=(2, 3) strides=(3, 1) dtype=float32 device=cpu");
}

TEST(Verifier, PlaceholderMetadataMustBeWellFormed) {
  Graph g;
  TensorMeta m;
  m.sizes = {2, 3};
  m.strides = {1};
  g.placeholder("x", m);
  g.output({g.find("x")});
  EXPECT_EQ(verify_error(g), "%x: error: placeholder metadata is malformed: 2 sizes but 1 strides");
  Graph h;
  TensorMeta d = TensorMeta::contiguous({2});
  d.device = "";
  h.placeholder("y", d);
  h.output({h.find("y")});
  EXPECT_EQ(verify_error(h), "%y: error: placeholder metadata has no device");
}

TEST(Verifier, NanArgumentsAreNormalized) {
  Graph g;
  Node* x = g.placeholder("x", {2});
  g.call("add.Scalar", {x, std::nan("")});
  g.output({g.find("add")});
  EXPECT_EQ(verify_error(g), "");
}
