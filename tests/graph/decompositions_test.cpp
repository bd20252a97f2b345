// The decomposition table and pass: structure (base ops emitted, order, uses, phases, options) and
// numerics (a decomposed graph interprets to the composite kernel's values within float error
// bounds; exactly where the decomposition performs the kernel's own roundings).
#include "core/graph/decompositions.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "core/graph/graph.h"
#include "core/graph/op_registry.h"
#include "core/graph/parser.h"
#include "core/graph/printer.h"
#include "core/interpreter/interpreter.h"
#include "core/support/error.h"
#include "tests/support/interp_helpers.h"

using namespace stax;

namespace {

using test::error_of;
using Ints = std::vector<int64_t>;

std::multiset<std::string> call_targets(const Graph& g) {
  std::multiset<std::string> out;
  for (const Node* n : g.nodes())
    if (n->is_call()) out.insert(n->target());
  return out;
}

std::set<std::string> base_names(const Graph& g) {
  std::set<std::string> out;
  for (const Node* n : g.nodes())
    if (n->is_call()) out.insert(n->op()->schema.base);
  return out;
}

// Interprets g and its decomposition on `inputs`; checks every output agrees (allclose(rtol,
// atol), or bit-equal when rtol < 0) and returns the decomposed graph's op names.
std::set<std::string> check_decomposition(const Graph& g, const std::vector<Tensor>& inputs,
                                          double rtol, double atol,
                                          const DecompositionOptions& opt = {}) {
  Graph d = g.clone();
  size_t n = decompose(d, opt);
  EXPECT_GT(n, 0u);
  InterpreterOptions io;
  io.seed = 5;
  std::vector<Tensor> want = interpret(g, inputs, io);
  std::vector<Tensor> got = interpret(d, inputs, io);
  EXPECT_EQ(want.size(), got.size());
  for (size_t i = 0; i < std::min(want.size(), got.size()); ++i) {
    EXPECT_EQ(got[i].dtype(), want[i].dtype());
    if (rtol < 0)
      EXPECT_TRUE(got[i].equal(want[i])) << got[i].summary() << "\nvs\n" << want[i].summary();
    else
      EXPECT_TRUE(got[i].allclose(want[i], rtol, atol)) << got[i].summary() << "\nvs\n"
                                                        << want[i].summary();
  }
  return base_names(d);
}

}  // namespace

TEST(Decompositions, SoftmaxEmitsBaseOpsAndMatches) {
  Graph g;
  Node* x = g.placeholder("x", {8, 33});
  g.output({g.call("softmax.int", {x, 1}), g.call("log_softmax.int", {x, 0})});
  Tensor in = Tensor::randn({8, 33}, DType::Float32, 1);
  auto ops = check_decomposition(g, {in}, 1e-5, 1e-6);
  EXPECT_EQ(ops, (std::set<std::string>{"amax", "sub", "exp", "sum", "div", "log"}));
}

TEST(Decompositions, SoftmaxOfLargeAndInfiniteValues) {
  Graph g;
  Node* x = g.placeholder("x", {2, 4});
  g.output({g.call("softmax.int", {x, -1}), g.call("log_softmax.int", {x, -1})});
  float inf = std::numeric_limits<float>::infinity();
  Tensor in = Tensor::from_vector<float>({2, 4}, {1000, 1001, -inf, 999, 1, 2, 3, 4});
  auto r = interpret(g, {in});
  EXPECT_EQ(r[0].get_double(2), 0.0);
  EXPECT_NEAR(r[0].get_double(1), 0.6652409557748219, 1e-7);
  check_decomposition(g, {in}, 1e-5, 1e-6);
}

TEST(Decompositions, HalfSoftmaxComputesInFloat) {
  Graph g;
  Node* x = g.placeholder("x", {4, 16}, DType::Float16);
  Node* a = g.call("softmax.int", {x, 1});
  Node* b = g.call("_softmax", {x, 1, true});
  Node* c = g.call("_log_softmax", {x, 1, true});
  EXPECT_EQ(a->dtype(), DType::Float16);
  EXPECT_EQ(b->dtype(), DType::Float32);
  g.output({a, b, c});
  auto ops = check_decomposition(g, {Tensor::randn({4, 16}, DType::Float16, 2)}, 1e-3, 1e-4);
  EXPECT_TRUE(ops.count("to"));
}

TEST(Decompositions, SoftmaxBackwardData) {
  Graph g;
  Node* gy = g.placeholder("g", {5, 7});
  Node* y = g.placeholder("y", {5, 7});
  Node* ly = g.placeholder("ly", {5, 7});
  g.output({g.call("_softmax_backward_data", {gy, y, 1, DType::Float32}),
            g.call("_log_softmax_backward_data", {gy, ly, -1, DType::Float32}),
            g.call("_softmax_backward_data", {gy, y, 0, DType::Float16})});
  // Realistic inputs: y = softmax(z), ly = log_softmax(z).
  Graph fw;
  Node* z = fw.placeholder("z", {5, 7});
  fw.output({fw.call("softmax.int", {z, 1}), fw.call("log_softmax.int", {z, 1})});
  auto ys = interpret(fw, {Tensor::randn({5, 7}, DType::Float32, 3)});
  Tensor grad = Tensor::randn({5, 7}, DType::Float32, 4);
  auto ops = check_decomposition(g, {grad, ys[0], ys[1]}, 1e-3, 1e-5);
  EXPECT_EQ(ops, (std::set<std::string>{"mul", "sum", "sub", "exp", "to"}));
  // Hand check: softmax backward of a uniform row with grad e_0.
  Graph h;
  Node* hg = h.placeholder("g", {2});
  Node* hy = h.placeholder("y", {2});
  h.output({h.call("_softmax_backward_data", {hg, hy, 0, DType::Float32})});
  auto r = interpret(
      h, {Tensor::from_vector<float>({2}, {1, 0}), Tensor::from_vector<float>({2}, {0.5f, 0.5f})});
  EXPECT_EQ(r[0].to_vector<float>(), (std::vector<float>{0.25f, -0.25f}));
}

TEST(Decompositions, LayerNorm) {
  Graph g;
  Node* x = g.placeholder("x", {3, 4, 10});
  Node* w = g.placeholder("w", {4, 10});
  Node* b = g.placeholder("b", {4, 10});
  Node* w1 = g.placeholder("w1", {10});
  g.output({g.call("layer_norm", {x, Ints{4, 10}, w, b}),
            g.call("layer_norm", {x, Ints{10}, w1}, {}, "ln_w"),
            g.call("layer_norm", {x, Ints{10}, Arg(), Arg(), 0.1})});
  std::vector<Tensor> in = {
      Tensor::randn({3, 4, 10}, DType::Float32, 5), Tensor::randn({4, 10}, DType::Float32, 6),
      Tensor::randn({4, 10}, DType::Float32, 7), Tensor::randn({10}, DType::Float32, 8)};
  auto ops = check_decomposition(g, in, 1e-4, 1e-5);
  EXPECT_EQ(ops, (std::set<std::string>{"mean", "sub", "mul", "add", "rsqrt"}));
  // Hand check: [1, 2, 3] normalizes to [-a, 0, a] with a = 1 / sqrt(2/3 + eps).
  Graph h;
  Node* hx = h.placeholder("x", {3});
  h.output({h.call("layer_norm", {hx, Ints{3}})});
  auto r = interpret(h, {Tensor::from_vector<float>({3}, {1, 2, 3})});
  float a = static_cast<float>(1.0 / std::sqrt(2.0 / 3.0 + 1e-5));
  EXPECT_EQ(r[0].to_vector<float>(), (std::vector<float>{-a, 0, a}));
  // Decomposing recursively with mean not base gives sum and div instead.
  DecompositionOptions all;
  all.keep = std::set<std::string>{};
  auto ops2 = check_decomposition(g, in, 1e-4, 1e-5, all);
  EXPECT_FALSE(ops2.count("mean"));
  EXPECT_TRUE(ops2.count("sum") && ops2.count("div"));
}

TEST(Decompositions, LinearAndAddmm) {
  Graph g;
  Node* x = g.placeholder("x", {2, 3, 5});
  Node* w = g.placeholder("w", {4, 5});
  Node* b = g.placeholder("b", {4});
  Node* m1 = g.placeholder("m1", {3, 5});
  g.output({g.call("linear", {x, w, b}), g.call("linear", {x, w}),
            g.call("addmm", {b, m1, g.call("t", {w})}, {{"beta", 0.5}, {"alpha", 2}}),
            g.call("addmm", {b, m1, g.call("t", {w})})});
  std::vector<Tensor> in = {
      Tensor::randn({2, 3, 5}, DType::Float32, 1), Tensor::randn({4, 5}, DType::Float32, 2),
      Tensor::randn({4}, DType::Float32, 3), Tensor::randn({3, 5}, DType::Float32, 4)};
  DecompositionOptions opt;
  opt.keep = std::set<std::string>{"mm", "matmul", "t", "mul", "add"};
  // The decompositions perform exactly the kernels' roundings: bit-equal.
  auto ops = check_decomposition(g, in, -1, 0, opt);
  EXPECT_EQ(ops, (std::set<std::string>{"t", "matmul", "add", "mm", "mul"}));
}

TEST(Decompositions, PointwiseAndReductions) {
  Graph g;
  Node* x = g.placeholder("x", {6, 9});
  g.output({g.call("silu", {x}), g.call("gelu", {x}),
            g.call("gelu", {x}, {{"approximate", "tanh"}}), g.call("mean.dim", {x, Ints{1}, true}),
            g.call("mean.dim", {x, Arg()}), g.call("mean", {x}),
            g.call("var.correction", {x, Ints{0}}),
            g.call("var.correction", {x, Arg()}, {{"correction", 0}, {"keepdim", true}})});
  DecompositionOptions opt;
  opt.keep = std::set<std::string>{"sum", "mul", "sub", "div", "add", "sigmoid", "erf", "tanh"};
  auto ops = check_decomposition(g, {Tensor::randn({6, 9}, DType::Float32, 9)}, 1e-5, 1e-6, opt);
  EXPECT_EQ(ops,
            (std::set<std::string>{"sum", "mul", "sub", "div", "add", "sigmoid", "erf", "tanh"}));
}

TEST(Decompositions, RandomOpsReproduceTheirNumbers) {
  Graph g;
  Node* x = g.placeholder("x", {500});
  Node* d = g.call("dropout", {x, 0.4, true});
  Node* de = g.call("dropout", {x, 0.4, false});
  Node* b = g.call("bernoulli.p", {x, 0.3});
  Node* bi = g.call("bernoulli.p", {g.placeholder("xi", {50}, DType::Int32), 0.5});
  Node* seeded = g.call("dropout", {x, 0.5, true}, {}, "seeded");
  seeded->attrs["rng_seed"] = Arg(int64_t{77});
  g.output({d, de, b, bi, seeded});
  DecompositionOptions opt;
  opt.keep = std::set<std::string>{};
  auto ops = check_decomposition(
      g, {Tensor::randn({500}, DType::Float32, 1), Tensor::zeros({50}, DType::Int32)}, -1, 0, opt);
  EXPECT_TRUE(ops.count("rand_like") && ops.count("gt") && ops.count("lt"));
  Graph c = g.clone();
  decompose(c, opt);
  int with_77 = 0;
  for (const Node* n : c.nodes())
    if (n->is_call() && n->target() == "rand_like.default" && n->attrs.count("rng_seed") &&
        n->attrs.at("rng_seed") == Arg(int64_t{77}))
      ++with_77;
  EXPECT_EQ(with_77, 1);
}

TEST(DecomposePass, PreservesOrderUsesAndPhase) {
  Graph g;
  Node* x = g.placeholder("x", {4, 8});
  Node* before = g.call("relu", {x});
  Node* sm = g.call("softmax.int", {before, 1});
  sm->set_phase(Phase::Forward);
  Node* after = g.call("mul.Tensor", {sm, sm});
  g.output({after, sm});
  size_t n = decompose(g);
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(g.find("softmax"), nullptr);
  // relu first, then the softmax decomposition, then mul, then the output.
  std::vector<std::string> order;
  for (const Node* node : g.nodes())
    order.push_back(node->is_call() ? node->target() : node->name());
  std::vector<std::string> want = {"x",          "relu.default", "amax.default",
                                   "sub.Tensor", "exp.default",  "sum.dim_IntList",
                                   "div.Tensor", "mul.Tensor",   "output"};
  EXPECT_EQ(order, want);
  Node* div = g.nodes()[6];
  EXPECT_EQ(g.outputs()[1], div);
  EXPECT_EQ(g.find("mul")->input(0), div);
  EXPECT_EQ(g.find("mul")->input(1), div);
  for (size_t i = 2; i <= 6; ++i) EXPECT_EQ(g.nodes()[i]->phase(), Phase::Forward);
  EXPECT_EQ(g.find("relu")->phase(), Phase::None);
  // New nodes after the pass go before the output again.
  Node* late = g.call("neg", {x});
  EXPECT_EQ(g.nodes()[g.size() - 2], late);
}

TEST(DecomposePass, OptionsSelectTheBaseOps) {
  Graph g;
  Node* x = g.placeholder("x", {4, 8});
  g.output({g.call("layer_norm", {x, Ints{8}}), g.call("softmax.int", {x, 0}),
            g.call("mean.dim", {x, Ints{0}})});
  {
    Graph c = g.clone();
    DecompositionOptions keep_softmax;
    keep_softmax.keep = std::set<std::string>{"softmax"};  // a bare name keeps every overload
    decompose(c, keep_softmax);
    auto t = call_targets(c);
    EXPECT_EQ(t.count("softmax.int"), 1u);
    EXPECT_EQ(t.count("layer_norm.default"), 0u);
    EXPECT_EQ(t.count("mean.dim"), 0u);  // not kept: decomposed too, recursively
  }
  {
    Graph c = g.clone();
    DecompositionOptions once;
    once.keep = std::set<std::string>{"softmax.int"};
    once.recursive = false;
    EXPECT_EQ(decompose(c, once), 2u);                 // layer_norm and the original mean
    EXPECT_EQ(call_targets(c).count("mean.dim"), 2u);  // emitted by layer_norm, left alone
  }
  {
    Graph c = g.clone();
    EXPECT_EQ(decompose(c), 2u);  // default: exactly the Composite ops
    EXPECT_EQ(call_targets(c).count("mean.dim"), 3u);
  }
}

TEST(DecomposePass, BadEntryIsAnErrorNamingTheNode) {
  DecompositionTable t;
  t.add("softmax.int", [](Graph& g, const Node& n) { return g.call("sum.default", {n.input(0)}); });
  EXPECT_THROW(t.add("softmax.int", nullptr), Error);
  Graph g;
  Node* x = g.placeholder("x", {4, 8});
  g.output({g.call("softmax.int", {x, 1}, {}, "sm")});
  DecompositionOptions opt;
  opt.table = &t;
  std::string m = error_of([&] { decompose(g, opt); });
  EXPECT_NE(m.find("%sm"), std::string::npos) << m;
  EXPECT_NE(m.find("(4, 8)"), std::string::npos) << m;
  EXPECT_NE(m.find("float32()"), std::string::npos) << m;
  for (const std::string& name : default_decompositions().names())
    EXPECT_NE(g.registry().find(name), nullptr) << name << " has an entry but is not registered";
}

TEST(DecomposePass, GraphsOfTheseOpsRoundTripThroughText) {
  Graph g;
  Node* x = g.placeholder("x", {4, 8});
  Node* i = g.placeholder("i", {3}, DType::Int64);
  Node* s = g.call("slice.Tensor", {x, 1, Arg(), -2});
  Node* ix = g.call("index.Tensor", {x, Arg(std::vector<Node*>{nullptr, i})});
  Node* f = g.call("full", {Ints{4, 3}, 0.5}, {{"dtype", DType::Float32}});
  Node* c = g.call("cat", {std::vector<Node*>{ix, f}, -1});
  Node* a = g.call("arange.start_step", {0, 2.0, 0.25});
  Node* ln = g.call("layer_norm", {c, Ints{6}, Arg(), Arg(), 1e-6});
  Node* sm = g.call("softmax.int", {s, -1});
  g.output({ln, sm, a});
  decompose(g);
  std::string text = print_graph(g);
  Graph back = parse_graph(text);
  EXPECT_EQ(print_graph(back), text);
  ASSERT_EQ(back.size(), g.size());
  for (size_t k = 0; k < g.size(); ++k)
    EXPECT_EQ(back.nodes()[k]->meta(), g.nodes()[k]->meta()) << g.nodes()[k]->name();
}
