// Creation and random ops: dtype inference like torch, values, seeds and reproducibility.
#include <gtest/gtest.h>

#include <cmath>

#include "core/graph/graph.h"
#include "core/graph/op_registry.h"
#include "core/interpreter/interpreter.h"
#include "core/support/error.h"
#include "tests/support/interp_helpers.h"

using namespace stax;
using namespace stax::test;

namespace {

using Ints = std::vector<int64_t>;

// Interprets a graph without inputs whose outputs are `outs`.
std::vector<Tensor> run(Graph& g, std::vector<Node*> outs, uint64_t seed = 0) {
  g.output(std::move(outs));
  InterpreterOptions o;
  o.seed = seed;
  return interpret(g, {}, o);
}

}  // namespace

TEST(Creation, FullInfersDtypeFromFillValue) {
  Graph g;
  Node* f = g.call("full", {Ints{2, 3}, 1.5});
  Node* i = g.call("full", {Ints{2}, 7});
  Node* b = g.call("full", {Ints{2}, true});
  Node* d = g.call("full", {Ints{2}, 2.75}, {{"dtype", DType::Float64}});
  Node* h = g.call("full", {Ints{2}, 3.7}, {{"dtype", DType::Int32}});
  EXPECT_EQ(f->dtype(), DType::Float32);
  EXPECT_EQ(i->dtype(), DType::Int64);
  EXPECT_EQ(b->dtype(), DType::Bool);
  EXPECT_EQ(g.registry().get("full").category, OpCategory::Creation);
  auto r = run(g, {f, i, b, d, h});
  EXPECT_EQ(r[0].to_vector<float>(), std::vector<float>(6, 1.5f));
  EXPECT_EQ(r[1].to_vector<int64_t>(), (Ints{7, 7}));
  EXPECT_EQ(r[2].to_vector<int>(), (std::vector<int>{1, 1}));
  EXPECT_EQ(r[3].to_vector<double>(), (std::vector<double>{2.75, 2.75}));
  EXPECT_EQ(r[4].to_vector<int>(), (std::vector<int>{3, 3}));  // truncates toward zero
}

TEST(Creation, ZerosOnesAndLikes) {
  Graph g;
  Node* x = g.placeholder("x", {2, 2}, DType::Int32);
  Node* z = g.call("zeros", {Ints{3}});
  Node* o = g.call("ones", {Ints{2, 1}}, {{"dtype", DType::Float16}});
  Node* zl = g.call("zeros_like", {x});
  Node* ol = g.call("ones_like", {x}, {{"dtype", DType::Float64}});
  Node* fl = g.call("full_like", {x, -4});
  Node* st = g.call("scalar_tensor", {2.5});
  EXPECT_EQ(z->dtype(), DType::Float32);
  EXPECT_EQ(zl->dtype(), DType::Int32);
  EXPECT_EQ(ol->dtype(), DType::Float64);
  EXPECT_EQ(st->shape(), Shape{});
  g.output({z, o, zl, ol, fl, st});
  auto r = interpret(g, {Tensor::full({2, 2}, 9, DType::Int32)});
  EXPECT_EQ(r[0].to_vector<float>(), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(r[1].dtype(), DType::Float16);
  EXPECT_EQ(r[1].to_vector<float>(), (std::vector<float>{1, 1}));
  EXPECT_EQ(r[2].to_vector<int>(), (std::vector<int>{0, 0, 0, 0}));
  EXPECT_EQ(r[3].to_vector<double>(), (std::vector<double>{1, 1, 1, 1}));
  EXPECT_EQ(r[4].to_vector<int>(), (std::vector<int>{-4, -4, -4, -4}));
  EXPECT_EQ(r[5].item(), 2.5);
}

TEST(Creation, ArangeVariants) {
  Graph g;
  Node* a = g.call("arange", {5});
  Node* b = g.call("arange.start", {2, 6});
  Node* c = g.call("arange.start_step", {10, 0, -3});
  Node* d = g.call("arange.start_step", {1, 2.5, 0.5});
  Node* e = g.call("arange.start_step", {0, 1, 0.1});
  Node* f = g.call("arange", {4}, {{"dtype", DType::Float64}});
  Node* h = g.call("arange.start_step", {0.3, 2.9, 0.37});
  Node* i = g.call("arange.start", {3, 3});
  EXPECT_EQ(a->dtype(), DType::Int64);
  EXPECT_EQ(d->dtype(), DType::Float32);
  EXPECT_EQ(e->shape(), (Shape{10}));
  EXPECT_EQ(h->shape(), (Shape{8}));  // ceil(2.6 / 0.37) = ceil(7.03)
  EXPECT_EQ(i->shape(), (Shape{0}));
  auto r = run(g, {a, b, c, d, e, f, h, i});
  EXPECT_EQ(r[0].to_vector<int64_t>(), (Ints{0, 1, 2, 3, 4}));
  EXPECT_EQ(r[1].to_vector<int64_t>(), (Ints{2, 3, 4, 5}));
  EXPECT_EQ(r[2].to_vector<int64_t>(), (Ints{10, 7, 4, 1}));
  EXPECT_EQ(r[3].to_vector<float>(), (std::vector<float>{1, 1.5f, 2}));
  EXPECT_EQ(r[5].to_vector<double>(), (std::vector<double>{0, 1, 2, 3}));
  // Values are start + i * step computed in double, rounded once to float32.
  std::vector<float> want;
  for (int k = 0; k < 8; ++k) want.push_back(static_cast<float>(0.3 + k * 0.37));
  EXPECT_EQ(r[6].to_vector<float>(), want);
  EXPECT_EQ(r[4].to_vector<float>()[3], static_cast<float>(3 * 0.1));
}

TEST(Creation, MustFail) {
  Graph g;
  std::string m = error_of([&] { g.call("arange.start_step", {0, 5, 0}, {}, "a0"); });
  EXPECT_TRUE(has(m, "%a0") && has(m, "step must be nonzero")) << m;
  m = error_of([&] { g.call("arange.start_step", {0, 5, -1}, {}, "a1"); });
  EXPECT_TRUE(has(m, "%a1") && has(m, "inconsistent with step sign")) << m;
  m = error_of([&] { g.call("zeros", {Ints{2, -1}}, {}, "z"); });
  EXPECT_TRUE(has(m, "%z") && has(m, "[2, -1]")) << m;
  m = error_of([&] { g.call("rand", {Ints{2}}, {{"dtype", DType::Int64}}, "r"); });
  EXPECT_TRUE(has(m, "%r") && has(m, "floating")) << m;
  m = error_of([&] { g.call("randint.low", {5, 5, Ints{2}}, {}, "ri"); });
  EXPECT_TRUE(has(m, "%ri") && has(m, "low=5") && has(m, "high=5")) << m;
  m = error_of([&] { g.call("dropout", {g.placeholder("x", {2}), 1.5, true}, {}, "dr"); });
  EXPECT_TRUE(has(m, "%dr") && has(m, "[0, 1]")) << m;
}

TEST(Random, ReproducibleFromRunSeedAndNode) {
  auto draw = [](const std::string& name, std::optional<Arg> rng_seed, uint64_t run_seed) {
    Graph g;
    Node* n = g.call("rand", {Ints{64}}, {}, name);
    if (rng_seed) n->attrs["rng_seed"] = *rng_seed;
    return run(g, {n}, run_seed)[0];
  };
  Tensor a = draw("r", std::nullopt, 1);
  EXPECT_TRUE(a.equal(draw("r", std::nullopt, 1)));
  EXPECT_FALSE(a.equal(draw("r", std::nullopt, 2)));      // another run seed
  EXPECT_FALSE(a.equal(draw("other", std::nullopt, 1)));  // another node
  EXPECT_TRUE(draw("x", Arg(int64_t{42}), 1).equal(draw("y", Arg(int64_t{42}), 1)));
  EXPECT_TRUE(draw("x", Arg("r"), 1).equal(a));  // rng_seed naming the node reproduces it
  for (float v : a.to_vector<float>()) {
    EXPECT_GE(v, 0.0f);
    EXPECT_LT(v, 1.0f);
  }
  Graph g;
  EXPECT_EQ(g.registry().get("rand").category, OpCategory::Random);
}

TEST(Random, DistributionsAndLikes) {
  Graph g;
  Node* x = g.placeholder("x", {100, 100}, DType::Float64);
  Node* n = g.call("randn", {Ints{100, 100}});
  Node* rl = g.call("rand_like", {x});
  Node* nl = g.call("randn_like", {x}, {{"dtype", DType::Float32}});
  Node* ri = g.call("randint.low", {-3, 4, Ints{1000}});
  Node* r0 = g.call("randint", {2, Ints{1000}}, {{"dtype", DType::Int32}});
  EXPECT_EQ(ri->dtype(), DType::Int64);
  EXPECT_EQ(rl->dtype(), DType::Float64);
  g.output({n, rl, nl, ri, r0});
  auto r = interpret(g, {Tensor::zeros({100, 100}, DType::Float64)});
  auto moments = [](const Tensor& t) {
    double s = 0, s2 = 0;
    for (double v : t.to_vector<double>()) {
      s += v;
      s2 += v * v;
    }
    double m = s / static_cast<double>(t.numel());
    return std::pair<double, double>{m, s2 / static_cast<double>(t.numel()) - m * m};
  };
  auto [m, v] = moments(r[0]);
  EXPECT_NEAR(m, 0, 0.05);
  EXPECT_NEAR(v, 1, 0.05);
  auto [mu, vu] = moments(r[1]);
  EXPECT_NEAR(mu, 0.5, 0.02);
  EXPECT_NEAR(vu, 1.0 / 12, 0.01);
  EXPECT_EQ(r[2].dtype(), DType::Float32);
  bool seen_low = false, seen_high = false;
  for (int64_t k : r[3].to_vector<int64_t>()) {
    EXPECT_GE(k, -3);
    EXPECT_LT(k, 4);
    seen_low |= k == -3;
    seen_high |= k == 3;
  }
  EXPECT_TRUE(seen_low && seen_high);
  for (int k : r[4].to_vector<int>()) EXPECT_TRUE(k == 0 || k == 1);
}

TEST(Random, BernoulliAndDropout) {
  Graph g;
  Node* x = g.placeholder("x", {4000});
  Node* b0 = g.call("bernoulli.p", {x, 0.0});
  Node* b1 = g.call("bernoulli.p", {x, 1.0});
  Node* b3 = g.call("bernoulli.p", {x, 0.3});
  Node* d = g.call("dropout", {x, 0.25, true});
  Node* de = g.call("dropout", {x, 0.25, false});
  Node* d1 = g.call("dropout", {x, 1.0, true});
  g.output({b0, b1, b3, d, de, d1});
  Tensor in = Tensor::full({4000}, 3.0);
  auto r = interpret(g, {in});
  EXPECT_EQ(r[0].to_vector<float>(), std::vector<float>(4000, 0));
  EXPECT_EQ(r[1].to_vector<float>(), std::vector<float>(4000, 1));
  double ones = 0;
  for (float v : r[2].to_vector<float>()) {
    EXPECT_TRUE(v == 0 || v == 1);
    ones += v;
  }
  EXPECT_NEAR(ones / 4000, 0.3, 0.03);
  double kept = 0;
  for (float v : r[3].to_vector<float>()) {
    EXPECT_TRUE(v == 0 || v == 4.0f) << v;  // 3 / (1 - 0.25)
    kept += v != 0;
  }
  EXPECT_NEAR(kept / 4000, 0.75, 0.03);
  EXPECT_TRUE(r[4].equal(in));
  EXPECT_EQ(r[5].to_vector<float>(), std::vector<float>(4000, 0));
}
