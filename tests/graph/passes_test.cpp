// Bitwise-safe graph passes: dead code elimination and common subexpression elimination, and the
// exclusion of random ops from CSE (seed §6.9, Theorem 6.2).
#include "core/graph/passes.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/graph/op_registry.h"
#include "core/ops/install.h"
#include "core/graph/parser.h"
#include "core/graph/printer.h"
#include "core/graph/verifier.h"
#include "core/interpreter/interpreter.h"

using namespace stax;

namespace {

std::vector<std::string> names(const Graph& g) {
  std::vector<std::string> out;
  for (const Node* n : g.nodes()) out.push_back(n->name());
  return out;
}

// The op table of this build, plus a random op of our own when the table has none yet, so the
// random-op tests do not depend on the creation ops being registered.
const OpRegistry& registry_with_random() {
  static const OpRegistry r = [] {
    OpRegistry reg;
    register_all_ops(reg);
    if (!reg.find("rand_like"))
      reg.add("rand_like(Tensor self) -> Tensor", OpCategory::Random, Promotion::None,
              [](const CallArgs& c) { return TensorMeta::contiguous(c.tensor("self").sizes); });
    return reg;
  }();
  return r;
}

bool has_kernels(const std::vector<std::string>& ops) {
  for (const auto& op : ops)
    if (!default_interpreter_table().find(op)) return false;
  return true;
}

}  // namespace

TEST(DeadCodeElimination, RemovesUnusedChainsKeepsInputsAndOutput) {
  Graph g;
  Node* x = g.placeholder("x", {4});
  Node* unused_input = g.placeholder("unused", {4});
  Node* a = g.call("relu", {x}, {}, "a");
  Node* dead1 = g.call("neg", {a}, {}, "dead1");
  g.call("exp", {dead1}, {}, "dead2");
  Node* b = g.call("add.Tensor", {a, x}, {}, "b");
  g.output({b});
  EXPECT_EQ(dead_code_elimination(g), 2u);
  verify(g);
  EXPECT_EQ(names(g), (std::vector<std::string>{"x", "unused", "a", "b", "output"}));
  EXPECT_EQ(unused_input->num_users(), 0u);
  EXPECT_EQ(dead_code_elimination(g), 0u);
}

TEST(DeadCodeElimination, RemovesUnusedRandomOps) {
  Graph g(registry_with_random());
  Node* x = g.placeholder("x", {4});
  g.call("rand_like", {x}, {}, "r");
  Node* y = g.call("relu", {x});
  g.output({y});
  EXPECT_EQ(dead_code_elimination(g), 1u);
  EXPECT_EQ(g.find("r"), nullptr);
  verify(g);
}

TEST(CommonSubexpressionElimination, MergesIdenticalPureCallsTransitively) {
  const char* text =
      "%x shape=(4, 8) = placeholder[target=x]\n"
      "%a = call_function[target=relu](args = (%x,))\n"
      "%b = call_function[target=relu](args = (%x,))\n"
      "%c = call_function[target=mul.Scalar](args = (%a, 2))\n"
      "%d = call_function[target=mul.Scalar](args = (%b, 2))\n"
      "%e = call_function[target=add.Tensor](args = (%c, %d))\n"
      "return (e, d)\n";
  Graph g = parse_graph(text);
  EXPECT_EQ(common_subexpression_elimination(g), 2u);
  verify(g);
  EXPECT_EQ(names(g), (std::vector<std::string>{"x", "a", "c", "e", "output"}));
  Node* c = g.find("c");
  EXPECT_EQ(g.find("e")->input(0), c);
  EXPECT_EQ(g.find("e")->input(1), c);
  EXPECT_EQ(g.outputs(), (std::vector<Node*>{g.find("e"), c}));
}

TEST(CommonSubexpressionElimination, ComparesScalarsExactly) {
  Graph g;
  Node* x = g.placeholder("x", {4});
  // 0.0 and -0.0 are equal as doubles but give different bits (x * -0.0 flips zeros' signs).
  Node* p = g.call("mul.Scalar", {x, 0.0}, {}, "p");
  Node* n = g.call("mul.Scalar", {x, -0.0}, {}, "n");
  Node* i = g.call("mul.Scalar", {x, 2}, {}, "i");
  Node* f = g.call("mul.Scalar", {x, 2.0}, {}, "f");
  Node* t = g.call("mul.Scalar", {x, true}, {}, "t");
  Node* one = g.call("mul.Scalar", {x, 1}, {}, "one");
  Node* nan1 = g.call("add.Scalar", {x, std::nan("")}, {}, "nan1");
  Node* nan2 = g.call("add.Scalar", {x, std::nan("")}, {}, "nan2");
  g.output({p, n, i, f, t, one, nan1, nan2});
  EXPECT_EQ(common_subexpression_elimination(g), 1u);  // only the two identical NaNs
  verify(g);
  EXPECT_EQ(g.find("nan2"), nullptr);
  EXPECT_NE(g.find("n"), nullptr);
  EXPECT_NE(g.find("f"), nullptr);
  EXPECT_NE(g.find("t"), nullptr);
}

TEST(CommonSubexpressionElimination, DistinguishesKwargs) {
  Graph g;
  Node* x = g.placeholder("x", {4});
  Node* a = g.call("add.Tensor", {x, x}, {{"alpha", Arg(1)}}, "a");
  Node* b = g.call("add.Tensor", {x, x}, {{"alpha", Arg(2)}}, "b");
  Node* c = g.call("add.Tensor", {x, x}, {}, "c");  // alpha defaults to 1: same as %a
  g.output({a, b, c});
  EXPECT_EQ(common_subexpression_elimination(g), 1u);
  EXPECT_EQ(g.find("c"), nullptr);
  EXPECT_NE(g.find("b"), nullptr);
}

TEST(CommonSubexpressionElimination, NeverMergesRandomOps) {
  Graph g(registry_with_random());
  Node* x = g.placeholder("x", {64});
  Node* r1 = g.call("rand_like", {x}, {}, "r1");
  Node* r2 = g.call("rand_like", {x}, {}, "r2");
  Node* d = g.call("sub.Tensor", {r1, r2}, {}, "d");
  g.output({d});
  ASSERT_EQ(r1->op()->category, OpCategory::Random);
  EXPECT_EQ(common_subexpression_elimination(g), 0u);
  EXPECT_EQ(names(g), (std::vector<std::string>{"x", "r1", "r2", "d", "output"}));
  // What would go wrong: the two draws differ, so merging them would turn d into zeros.
  if (default_registry().find("rand_like") && has_kernels({"rand_like.default", "sub.Tensor"})) {
    Graph h;
    Node* hx = h.placeholder("x", {64});
    Node* h1 = h.call("rand_like", {hx}, {}, "r1");
    Node* h2 = h.call("rand_like", {hx}, {}, "r2");
    h.output({h.call("sub.Tensor", {h1, h2}, {}, "d")});
    EXPECT_EQ(common_subexpression_elimination(h), 0u);
    auto out = interpret(h, {Tensor::zeros({64})});
    EXPECT_FALSE(out[0].equal(Tensor::zeros({64}))) << "two rand_like calls drew the same numbers";
  }
}

TEST(CommonSubexpressionElimination, NeverMergesNodesWithRngAttributes) {
  Graph g;
  Node* x = g.placeholder("x", {4});
  Node* a = g.call("relu", {x}, {}, "a");
  Node* b = g.call("relu", {x}, {}, "b");
  Node* c = g.call("neg", {x}, {}, "c");
  Node* d = g.call("neg", {x}, {}, "d");
  a->attrs["rng_seed"] = Arg(7);
  b->attrs["rng_seed"] = Arg(7);
  d->attrs["rng_state"] = Arg(1);
  g.output({a, b, c, d});
  EXPECT_EQ(common_subexpression_elimination(g), 0u);
  EXPECT_EQ(g.size(), 6u);
}

TEST(Passes, ResultsAreBitwiseIdenticalOnTheInterpreter) {
  if (!has_kernels({"relu.default", "mul.Scalar", "add.Tensor", "exp.default"}))
    GTEST_SKIP() << "interpreter kernels not registered yet";
  const char* text =
      "%x shape=(16, 8) = placeholder[target=x]\n"
      "%a = call_function[target=relu](args = (%x,))\n"
      "%b = call_function[target=relu](args = (%x,))\n"
      "%c = call_function[target=mul.Scalar](args = (%a, 0.1))\n"
      "%d = call_function[target=mul.Scalar](args = (%b, 0.1))\n"
      "%dead = call_function[target=exp](args = (%d,))\n"
      "%e = call_function[target=add.Tensor](args = (%c, %d))\n"
      "return (e,)\n";
  Graph before = parse_graph(text);
  Graph after = parse_graph(text);
  common_subexpression_elimination(after);
  dead_code_elimination(after);
  verify(after);
  EXPECT_EQ(after.size(), 5u) << print_graph(after);
  Tensor x = Tensor::randn({16, 8}, DType::Float32, 3);
  auto want = interpret(before, {x});
  auto got = interpret(after, {x});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0].equal(want[0]));
}
