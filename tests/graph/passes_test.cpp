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

// Attention with dropout_p > 0 is a Composite op that draws (the dropout of its decomposition,
// keyed by the node): two such calls are two masks, so CSE must keep both (OpDef::draws_random).
// Without dropout the two calls are the same function and merge.
TEST(CommonSubexpressionElimination, NeverMergesAttentionThatDraws) {
  if (!default_registry().find("scaled_dot_product_attention"))
    GTEST_SKIP() << "attention not registered";
  auto build = [](Graph& g, double p) {
    Node* q = g.placeholder("q", {1, 2, 8, 4});
    Node* k = g.placeholder("k", {1, 2, 8, 4});
    Node* v = g.placeholder("v", {1, 2, 8, 4});
    Node* a = g.call("scaled_dot_product_attention", {q, k, v, Arg(), p, false}, {}, "a");
    Node* b = g.call("scaled_dot_product_attention", {q, k, v, Arg(), p, false}, {}, "b");
    g.output({g.call("sub.Tensor", {a, b}, {}, "d")});
    return a;
  };
  Graph drop;
  Node* a = build(drop, 0.5);
  EXPECT_TRUE(a->op()->draws(*a));
  EXPECT_EQ(common_subexpression_elimination(drop), 0u);
  EXPECT_EQ(drop.size(), 7u);
  Graph plain;
  Node* a0 = build(plain, 0.0);
  EXPECT_FALSE(a0->op()->draws(*a0));
  EXPECT_EQ(common_subexpression_elimination(plain), 1u);
  // What would go wrong: the two masks differ, so merging the calls would turn d into zeros.
  if (has_kernels({"sub.Tensor"})) {
    std::vector<Tensor> in{Tensor::randn({1, 2, 8, 4}, DType::Float32, 1),
                           Tensor::randn({1, 2, 8, 4}, DType::Float32, 2),
                           Tensor::randn({1, 2, 8, 4}, DType::Float32, 3)};
    auto out = interpret(drop, in);
    EXPECT_FALSE(out[0].equal(Tensor::zeros({1, 2, 8, 4}))) << "the two calls drew one mask";
  }
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

// ---- cat_before_reshape ---------------------------------------------------------------------

namespace {

// The backward of a qkv projection split into heads: three (b, h, t, d) gradients, each permuted
// to (b, t, h, d) and merged to (b, t, h*d), concatenated along the last dim. Returns the cat.
Node* head_cat(Graph& g, int64_t b, int64_t h, int64_t t, int64_t d) {
  std::vector<Node*> parts;
  for (const char* name : {"dq", "dk", "dv"}) {
    Node* x = g.placeholder(name, {b, h, t, d});
    Node* p = g.call("permute", {x, std::vector<int64_t>{0, 2, 1, 3}});
    parts.push_back(g.call("reshape", {p, std::vector<int64_t>{b, t, h * d}}));
  }
  return g.call("cat", {parts, -1}, {}, "joined");
}

size_t count_target(const Graph& g, const std::string& target) {
  size_t n = 0;
  for (const Node* x : g.nodes()) n += x->is_call() && x->target() == target;
  return n;
}

}  // namespace

TEST(CatBeforeReshape, ConcatenatesTheHeadsThenMergesOnceWithTheSameBits) {
  Graph before;
  before.output({before.call("relu", {head_cat(before, 2, 3, 5, 4)})});
  Graph after;
  after.output({after.call("relu", {head_cat(after, 2, 3, 5, 4)})});
  EXPECT_EQ(cat_before_reshape(after), 1u);
  verify(after);
  // The cat now joins the permuted heads along their head dim: (2, 5, 9, 4), then one reshape.
  const Node* cat = nullptr;
  for (const Node* n : after.nodes())
    if (n->is_call() && n->target() == "cat.default") cat = n;
  ASSERT_NE(cat, nullptr) << print_graph(after);
  EXPECT_EQ(cat->shape(), (Shape{2, 5, 9, 4}));
  for (const Node* in : cat->input_nodes()) EXPECT_EQ(in->target(), "permute.default");
  EXPECT_EQ(after.output_node()->input(0)->input(0)->shape(), (Shape{2, 5, 36}));
  EXPECT_EQ(count_target(after, "reshape.default"), 1u) << print_graph(after);  // the merges went
  std::vector<Tensor> in;
  for (int i = 0; i < 3; ++i) in.push_back(Tensor::randn({2, 3, 5, 4}, DType::Float32, 20 + i));
  auto want = interpret(before, in);
  auto got = interpret(after, in);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0].equal(want[0]));
}

TEST(CatBeforeReshape, LeavesOtherConcatenationsAlone) {
  Graph g;
  Node* a = g.placeholder("a", {2, 5, 3, 4});
  Node* b = g.placeholder("b", {2, 5, 2, 6});  // 12 per row too, other trailing dims
  Node* c = g.placeholder("c", {2, 5, 12});    // not a reshape
  Node* d = g.placeholder("d", {5, 2, 12});
  Node* e = g.placeholder("e", {2, 5, 12}, DType::Float64);
  Node* ra = g.call("reshape", {a, std::vector<int64_t>{2, 5, 12}});
  Node* rb = g.call("reshape", {b, std::vector<int64_t>{2, 5, 12}});
  Node* rd = g.call("reshape", {d, std::vector<int64_t>{2, 5, 12}});  // leading dims differ
  Node* ra0 = g.call("reshape", {a, std::vector<int64_t>{2, 5, 12}});
  std::vector<Node*> outs = {
      g.call("cat", {std::vector<Node*>{ra, rb}, -1}),   // trailing dims differ
      g.call("cat", {std::vector<Node*>{ra, c}, -1}),    // an input that is no reshape
      g.call("cat", {std::vector<Node*>{ra, rd}, -1}),   // a source with other leading dims
      g.call("cat", {std::vector<Node*>{ra, ra0}, 0}),   // not the last dim
      g.call("cat", {std::vector<Node*>{ra, e}, -1}),    // promotes to float64
  };
  g.output(outs);
  const size_t size = g.size();
  EXPECT_EQ(cat_before_reshape(g), 0u);
  EXPECT_EQ(g.size(), size);
  verify(g);
}

TEST(CatBeforeReshape, KeepsAReshapeThatHasOtherUsers) {
  Graph g;
  Node* a = g.placeholder("a", {2, 3, 4});
  Node* b = g.placeholder("b", {2, 3, 4});
  Node* ra = g.call("reshape", {a, std::vector<int64_t>{2, 12}});
  Node* rb = g.call("reshape", {b, std::vector<int64_t>{2, 12}});
  Node* cat = g.call("cat", {std::vector<Node*>{ra, rb, ra}, 1});
  g.output({cat, g.call("neg", {ra})});
  Graph ref = g.clone();
  EXPECT_EQ(cat_before_reshape(g), 1u);
  verify(g);
  EXPECT_EQ(count_target(g, "reshape.default"), 2u) << print_graph(g);  // ra (neg reads it), the merge
  std::vector<Tensor> in = {Tensor::randn({2, 3, 4}, DType::Float32, 31),
                            Tensor::randn({2, 3, 4}, DType::Float32, 32)};
  auto want = interpret(ref, in);
  auto got = interpret(g, in);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].sizes(), (Shape{2, 36}));
  EXPECT_TRUE(got[0].equal(want[0]));
  EXPECT_TRUE(got[1].equal(want[1]));
}

TEST(CatBeforeReshape, FlatCatOfAFlattenedTensorAndAVectorJoinsBlocksOfItsTrailingDims) {
  // The flash backward's packed upstream gradient: the flattened (permuted) output gradient, then
  // the log-sum-exp's (here a plain vector of b*h*t elements). b=2, t=4, h=2, d=8: the trailing
  // dims (2, 4, 8) and (4, 8) do not divide the vector's 16 elements, (8) does.
  auto build = [](Graph& g, int64_t extra) {
    Node* x = g.placeholder("x", {2, 4, 2, 8});  // (b, t, h, d)
    Node* z = g.placeholder("z", {extra});
    Node* p = g.call("permute", {x, std::vector<int64_t>{0, 2, 1, 3}});  // (b, h, t, d)
    Node* flat = g.call("reshape", {p, std::vector<int64_t>{128}});
    g.output({g.call("cat", {std::vector<Node*>{flat, z}, 0})});
  };
  Graph before, after;
  build(before, 16);
  build(after, 16);
  EXPECT_EQ(cat_before_reshape(after), 1u);
  verify(after);
  const Node* cat = nullptr;
  for (const Node* n : after.nodes())
    if (n->is_call() && n->target() == "cat.default") cat = n;
  ASSERT_NE(cat, nullptr);
  EXPECT_EQ(cat->shape(), (Shape{18, 8})) << print_graph(after);
  const Node* block = cat->args()[0].to_node_list().at(0);
  EXPECT_EQ(block->shape(), (Shape{16, 8}));
  EXPECT_EQ(block->input(0)->target(), "permute.default");  // the source, unflattened
  EXPECT_EQ(after.output_node()->input(0)->shape(), (Shape{144}));
  std::vector<Tensor> in = {Tensor::randn({2, 4, 2, 8}, DType::Float32, 41),
                            Tensor::randn({16}, DType::Float32, 42)};
  auto want = interpret(before, in);
  auto got = interpret(after, in);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0].equal(want[0]));

  Graph odd;  // 30 elements: no trailing dims divide it
  build(odd, 30);
  EXPECT_EQ(cat_before_reshape(odd), 0u);
}
