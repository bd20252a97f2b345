// native_dropout with torch's semantics through the partitioner (issue 29 item 3): the mask the
// forward draws (Philox, from the node's rng_seed) is the mask the backward uses, whether the
// partitioner saves it or rematerialises it by drawing again (RematPolicy::recompute_random).
// The gradient is checked against torch's formula evaluated on the forward's own output:
// dL/dh = dL/do * mask * scale with mask = (o != 0), dL/dW = xᵀ dL/dh.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/autodiff/joint_graph.h"
#include "core/driver/compiled_function.h"
#include "core/graph/graph.h"
#include "core/graph/op_registry.h"
#include "core/interpreter/interpreter.h"
#include "core/partition/partitioner.h"
#include "core/support/error.h"
#include "tests/support/compiled_check.h"

using namespace stax;
using stax::test::cpu_compiler;

namespace {

constexpr double kP = 0.4;
constexpr int64_t kM = 8, kK = 16, kN = 32;

// loss = sum(native_dropout(x @ w, p)[0] ** 2 * 0.5); outputs (loss, the dropout's output, mask).
Graph dropout_graph() {
  Graph g;
  Node* x = g.placeholder("x", {kM, kK});
  Node* w = g.placeholder("w", {kK, kN});
  Node* h = g.call("mm", {x, w}, {}, "h");
  Node* nd = g.call("native_dropout", {h, kP, true}, {}, "nd");
  Node* o = g.call("getitem", {nd, int64_t{0}}, {}, "o");
  Node* mask = g.call("getitem", {nd, int64_t{1}}, {}, "mask");
  Node* sq = g.call("mul.Tensor", {o, o});
  Node* loss = g.call("mul.Scalar", {g.call("sum.default", {sq}), 0.5}, {}, "loss");
  g.output({loss, o, mask});
  return g;
}

std::vector<Tensor> inputs() {
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> u(0.1, 1.0);  // positive: h != 0, so mask = (o != 0)
  Tensor x = Tensor::zeros({kM, kK}), w = Tensor::zeros({kK, kN});
  for (int64_t i = 0; i < x.numel(); ++i) x.set_double(i, u(rng));
  for (int64_t i = 0; i < w.numel(); ++i) w.set_double(i, u(rng));
  return {x, w};
}

// torch's gradient of w from the forward's output o: dL/do = o, dL/dh = o * mask * scale.
std::vector<double> expected_grad_w(const Tensor& x, const Tensor& o) {
  double scale = 1.0 / (1.0 - kP);
  std::vector<double> gw(static_cast<size_t>(kK * kN), 0.0);
  for (int64_t k = 0; k < kK; ++k)
    for (int64_t n = 0; n < kN; ++n)
      for (int64_t m = 0; m < kM; ++m) {
        double ov = o.get_double(m * kN + n);
        double gh = ov != 0 ? ov * scale : 0.0;
        gw[static_cast<size_t>(k * kN + n)] += x.get_double(m * kK + k) * gh;
      }
  return gw;
}

void expect_torch_gradient(const Tensor& x, const Tensor& o, const Tensor& mask, const Tensor& gw) {
  int64_t kept = 0;
  for (int64_t i = 0; i < o.numel(); ++i) {
    bool m = mask.get_double(i) != 0;
    kept += m;
    EXPECT_EQ(m, o.get_double(i) != 0) << "mask and output disagree at " << i;
  }
  // About 1 - p of the elements are kept (a draw, not a constant mask).
  EXPECT_GT(kept, o.numel() / 4);
  EXPECT_LT(kept, o.numel() * 17 / 20);
  std::vector<double> want = expected_grad_w(x, o);
  for (int64_t i = 0; i < gw.numel(); ++i)
    EXPECT_NEAR(gw.get_double(i), want[static_cast<size_t>(i)], 1e-4 * (1 + std::fabs(want[i])))
        << "dW[" << i << "]";
}

bool has_op(const Graph& g, const std::string& base) {
  for (const Node* n : g.nodes())
    if (n->is_call() && n->op()->schema.base == base) return true;
  return false;
}

}  // namespace

TEST(NativeDropout, SchemaAndEvalMode) {
  Graph g;
  Node* x = g.placeholder("x", {3, 4});
  Node* nd = g.call("native_dropout", {x, 0.5, false});
  ASSERT_TRUE(nd->is_tuple());
  EXPECT_EQ(nd->tuple_metas()[1].dtype, DType::Bool);
  g.output({g.call("getitem", {nd, int64_t{0}}), g.call("getitem", {nd, int64_t{1}})});
  Tensor xs = Tensor::zeros({3, 4});
  for (int64_t i = 0; i < xs.numel(); ++i) xs.set_double(i, 0.25 * static_cast<double>(i) - 1);
  std::vector<Tensor> r = interpret(g, {xs});
  for (int64_t i = 0; i < xs.numel(); ++i) {
    EXPECT_EQ(r[0].get_double(i), xs.get_double(i));
    EXPECT_EQ(r[1].get_double(i), 1.0);
  }
  // an integer input in eval mode, as torch: the input and a mask of ones (training draws from
  // floating inputs only)
  Graph gi;
  Node* xi = gi.placeholder("xi", {2, 3}, DType::Int32);
  EXPECT_THROW(gi.call("native_dropout", {xi, 0.5, true}), Error);
  Graph gf;
  EXPECT_THROW(gf.call("native_dropout", {gf.placeholder("xf", {2}), 1.5, true}), Error);
  // eval mode reads neither the dtype nor p (torch takes p = inf there)
  Node* ndi = gi.call("native_dropout", {xi, HUGE_VAL, false});
  gi.output({gi.call("getitem", {ndi, int64_t{0}}), gi.call("getitem", {ndi, int64_t{1}})});
  Tensor xis = Tensor::zeros({2, 3}, DType::Int32);
  for (int64_t i = 0; i < xis.numel(); ++i) xis.set_double(i, static_cast<double>(7 * i - 20));
  std::vector<Tensor> ri = interpret(gi, {xis});
  EXPECT_EQ(ri[0].dtype(), DType::Int32);
  for (int64_t i = 0; i < xis.numel(); ++i) {
    EXPECT_EQ(ri[0].get_double(i), static_cast<double>(7 * i - 20));
    EXPECT_EQ(ri[1].get_double(i), 1.0);
  }
}

TEST(NativeDropout, JointGraphBackwardSeesTheForwardMask) {
  Graph g = dropout_graph();
  JointGraph j = build_joint_graph(g, {"w"});
  std::vector<Tensor> in = inputs();
  ASSERT_EQ(j.tangents.size(), 2u);  // loss and o (the mask is not differentiable)
  std::vector<Tensor> r = interpret(j.graph, {in[0], in[1], Tensor::ones({}), Tensor::zeros({kM, kN})});
  ASSERT_EQ(r.size(), 4u);  // loss, o, mask, dW
  expect_torch_gradient(in[0], r[1], r[2], r[3]);
}

// Saved (the default: random ops are never recomputed) and rematerialised (the backward draws
// the mask again from the forward node's rng_seed): the same gradient, bit for bit, both torch's.
TEST(NativeDropout, PartitionerSavesOrRematerialisesTheMask) {
  Graph g = dropout_graph();
  std::vector<Tensor> in = inputs();
  std::vector<Tensor> grads;
  for (bool recompute : {false, true}) {
    SCOPED_TRACE(recompute ? "mask rematerialised" : "mask saved");
    CompiledFunctionOptions o;
    o.partition.policy.recompute_random = recompute;
    o.seed = 7;
    CompiledFunction f(g, {"w"}, cpu_compiler(), o);
    EXPECT_EQ(has_op(f.partition().backward, "rand_like"), recompute)
        << "the backward graph should " << (recompute ? "" : "not ") << "draw again";
    ForwardResult fr = f.forward(in);
    std::vector<Tensor> gw = f.backward(*fr.ctx, {Tensor::ones({}), Tensor(), Tensor()});
    ASSERT_EQ(gw.size(), 1u);
    expect_torch_gradient(in[0], fr.outputs[1], fr.outputs[2], gw[0]);
    grads.push_back(gw[0]);
    // The oracle: the joint graph on the interpreter with the same seed.
    std::vector<Tensor> ref = f.reference(in, {Tensor::ones({}), Tensor(), Tensor()});
    for (int64_t i = 0; i < gw[0].numel(); ++i)
      EXPECT_NEAR(gw[0].get_double(i), ref[3].get_double(i), 1e-4) << i;
  }
  for (int64_t i = 0; i < grads[0].numel(); ++i)
    EXPECT_EQ(grads[0].get_double(i), grads[1].get_double(i)) << i;
}

TEST(NativeDropout, BackwardOpMatchesTorchFormula) {
  Graph g;
  Node* gr = g.placeholder("g", {2, 3});
  Node* m = g.placeholder("m", TensorMeta::contiguous({2, 3}, DType::Bool));
  g.output({g.call("native_dropout_backward", {gr, m, 2.5})});
  Tensor gs = Tensor::zeros({2, 3}), ms = Tensor::zeros({2, 3}, DType::Bool);
  for (int64_t i = 0; i < 6; ++i) {
    gs.set_double(i, 0.5 * static_cast<double>(i) - 1);
    ms.set_double(i, i % 2);
  }
  Tensor r = interpret(g, {gs, ms})[0];
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(r.get_double(i), gs.get_double(i) * (i % 2) * 2.5);
}

// A seed per forward (what the torch backend passes: one drawn from torch's generator per call):
// each forward draws its own mask, and the backward of a forward uses that forward's seed even
// when another forward ran in between and the backward draws the mask again.
TEST(NativeDropout, EachForwardSeedDrawsItsOwnMaskAndItsBackwardReusesIt) {
  Graph g = dropout_graph();
  std::vector<Tensor> in = inputs();
  CompiledFunctionOptions o;
  o.partition.policy.recompute_random = true;
  CompiledFunction f(g, {"w"}, cpu_compiler(), o);
  ForwardResult a = f.forward(in, 11);
  ForwardResult b = f.forward(in, 12);
  ForwardResult a2 = f.forward(in, 11);
  int64_t differ = 0;
  for (int64_t i = 0; i < a.outputs[2].numel(); ++i) {
    differ += a.outputs[2].get_double(i) != b.outputs[2].get_double(i);
    EXPECT_EQ(a.outputs[1].get_double(i), a2.outputs[1].get_double(i)) << "same seed, same draw";
  }
  EXPECT_GT(differ, 0) << "two seeds drew the same mask";
  for (ForwardResult* r : {&a, &b}) {
    std::vector<Tensor> gw = f.backward(*r->ctx, {Tensor::ones({}), Tensor(), Tensor()});
    ASSERT_EQ(gw.size(), 1u);
    expect_torch_gradient(in[0], r->outputs[1], r->outputs[2], gw[0]);
  }
}
