// Fused attention with dropout (issue 27 item 3, docs/attention.md "Dropout"): softmax -> dropout
// -> P·V, in the forms the graphs hold it (dropout.default, native_dropout's expansion
// rand_like < 1 - p, torch's decomposition rand_like > p), compiles on cpu_cpp to one
// flash_attention_dropout extern whose dropout mask is the unfused form's: the values agree with
// the interpreter running the graph as written (same run seed) within the bound of the reordered
// sums, a wrong kept / dropped element being far outside it; the backward is
// flash_attention_dropout_backward, which draws the mask again per block (no L × S tensor saved),
// and its gradients agree with the interpreter's gradients of the unfused graph and with central
// finite differences. A backend without the dropout externs keeps the decomposition.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/driver/compiled_function.h"
#include "core/graph/printer.h"
#include "core/interpreter/interpreter.h"
#include "core/ops/nn/attention_fusion.h"
#include "core/tensor/random.h"
#include "stax/sdk/flash_attention.hpp"
#include "tests/attention/attention_check.h"
#include "tests/support/compiled_check.h"

namespace stax {
namespace {

using test::contains;
using namespace attention_test;
using Ints = std::vector<int64_t>;

constexpr double kInf = std::numeric_limits<double>::infinity();

// The dropout forms, applied to the probabilities p.
enum class Drop { Dropout, NativeExpansion, TorchDecomposition };

Node* drop(Graph& g, Node* p, Drop form, double rate) {
  switch (form) {
    case Drop::Dropout:
      return g.call("dropout", {p, rate, true});
    case Drop::NativeExpansion: {  // native_dropout: rand_like < 1 - p, p * mask * 1 / (1 - p)
      Node* mask = g.call("lt.Scalar", {g.call("rand_like", {p}), 1.0 - rate});
      return g.call("mul.Scalar", {g.call("mul.Tensor", {p, mask}), 1.0 / (1.0 - rate)});
    }
    case Drop::TorchDecomposition: {  // torch._decomp: (rand_like > p) * x * scale
      Node* mask = g.call("gt.Scalar", {g.call("rand_like", {p}), rate});
      return g.call("mul.Tensor", {g.call("mul.Tensor", {mask, p}), 1.0 / (1.0 - rate)});
    }
  }
  return nullptr;
}

Node* causal_after(Graph& g, int64_t l, int64_t s) {  // key j > query i, [l, s] bool
  Node* j = g.call("unsqueeze", {g.call("arange.start_step", {int64_t{0}, s}), int64_t{-2}});
  Node* i = g.call("unsqueeze", {g.call("arange.start_step", {int64_t{0}, l}), int64_t{-1}});
  return g.call("gt.Scalar", {g.call("sub.Tensor", {j, i}), int64_t{0}});
}

// softmax(scale · q kᵀ, causal by masked_fill) -> dropout -> matmul with v; q [b,h,l,e] etc.
// `written`: the softmax as amax / sub / exp / sum / div (hand-written attention).
std::unique_ptr<Graph> build(const Case& c, DType t, Drop form, double rate, bool written = false) {
  auto g = std::make_unique<Graph>();
  Node* q = g->placeholder("q", {c.b, c.h, c.l, c.e}, t);
  Node* k = g->placeholder("k", {c.b, c.h, c.s, c.e}, t);
  Node* v = g->placeholder("v", {c.b, c.h, c.s, c.ev}, t);
  Node* s = g->call("matmul", {q, g->call("transpose.int", {k, int64_t{-2}, int64_t{-1}})});
  Node* x = g->call("mul.Scalar", {s, c.scale});
  if (c.causal) x = g->call("masked_fill.Scalar", {x, causal_after(*g, c.l, c.s), -kInf});
  Node* p = nullptr;
  if (written) {
    Node* e = g->call("exp", {g->call("sub.Tensor", {x, g->call("amax", {x, Arg(Ints{-1}), true})})});
    p = g->call("div.Tensor", {e, g->call("sum.dim_IntList", {e, Arg(Ints{-1}), true})});
  } else {
    p = g->call("_softmax", {x, int64_t{-1}, false});
  }
  g->output({g->call("matmul", {drop(*g, p, form, rate), v})});
  return g;
}

struct DropCase {
  Case c;
  Drop form;
  double rate;
  bool written = false;
};

std::ostream& operator<<(std::ostream& os, const DropCase& d) { return os << d.c.name; }

class DropoutForward : public ::testing::TestWithParam<DropCase> {};

TEST_P(DropoutForward, FusedWithTheUnfusedMask) {
  const DropCase& d = GetParam();
  for (DType t : {DType::Float32, DType::Float64}) {
    SCOPED_TRACE(dtype_name(t));
    auto g = build(d.c, t, d.form, d.rate, d.written);
    std::vector<Tensor> in = inputs_for(d.c, t, 7);
    CompiledGraph cg = compiler(true).compile(*g);
    const std::string sched = cg.schedule().str();
    EXPECT_TRUE(contains(sched, "extern flash_attention_dropout ->")) << sched;
    EXPECT_FALSE(contains(sched, "extern matmul") || contains(sched, "extern bmm")) << sched;
    EXPECT_TRUE(contains(sched, ", dropout): one flash_attention_dropout extern")) << sched;
    // The one step on the interpreter is the seed (_stax_rng_seed, a random op like rand_like).
    EXPECT_EQ(cg.num_fallbacks(), 1u) << cg.summary();
    for (uint64_t seed : {0ull, 12345ull}) {
      SCOPED_TRACE(seed);
      GraphRunOptions ro;
      ro.seed = seed;
      InterpreterOptions io;
      io.seed = seed;
      Tensor got = cg.run(in, ro).at(0);
      Tensor want = interpret(*g, in, io).at(0);  // the graph as written: its own dropout
      EXPECT_TRUE(within(got, want, dropout_bound(d.c, in, t, d.rate)));
    }
    // Another run seed draws another mask.
    GraphRunOptions r1;
    r1.seed = 1;
    Tensor a = cg.run(in).at(0), b = cg.run(in, r1).at(0);
    double diff = 0;
    for (int64_t x = 0; x < a.numel(); ++x) diff = std::max(diff, std::fabs(a.get_double(x) - b.get_double(x)));
    EXPECT_GT(diff, 1e-3);
  }
}

const DropCase kDropCases[] = {
    {{"dropout_causal", 2, 3, 67, 67, 32, 32, true, MaskKind::None, 0.125}, Drop::Dropout, 0.1},
    {{"native_causal_odd", 1, 2, 130, 130, 16, 24, true, MaskKind::None, 0.2}, Drop::NativeExpansion,
     0.25},
    {{"torch_decomposition_cross", 2, 2, 33, 70, 48, 16, false, MaskKind::None, 0.3},
     Drop::TorchDecomposition, 0.5},
    {{"native_t1", 1, 2, 1, 1, 16, 16, true, MaskKind::None, 0.25}, Drop::NativeExpansion, 0.3},
    {{"written_softmax_native", 2, 2, 70, 70, 32, 32, true, MaskKind::None, 0.18},
     Drop::NativeExpansion, 0.2, true},
};

INSTANTIATE_TEST_SUITE_P(Forms, DropoutForward, ::testing::ValuesIn(kDropCases),
                         [](const auto& info) { return info.param.c.name; });

// The kernel's keep flags (its restated Philox, portable build) are those of rand_like's numbers
// (core/tensor/random.h) compared with the threshold, both ways, float32 and float64; keys from
// nk on are 0.
template <class T>
void expect_keep_is_core(bool above) {
  namespace attn = sdk::attention;
  attn::Problem<T> p;
  p.batch = 3, p.l = 5, p.s = 100;
  p.dropout = true;
  p.drop_keep_above = above;
  p.drop_threshold = T(0.3);
  const DType t = sizeof(T) == 4 ? DType::Float32 : DType::Float64;
  for (uint64_t seed : {0ull, 0x123456789abcdefull, ~0ull}) {
    p.drop_seed = seed;
    Tensor u = Tensor::rand({p.batch, p.l, p.s}, t, seed, 0);
    for (int64_t n = 0; n < p.batch; ++n)
      for (int64_t i = 0; i < p.l; ++i)
        for (int64_t j0 : {int64_t{0}, int64_t{64}}) {
          const int64_t nk = std::min<int64_t>(64, p.s - j0);
          T keep[64];
          attn::portable::dropout_keep(p, n, i, j0, nk, keep);
          for (int64_t j = 0; j < 64; ++j) {
            bool want = false;
            if (j < nk) {
              const T x = static_cast<T>(u.get_double((n * p.l + i) * p.s + j0 + j));
              want = above ? x > p.drop_threshold : x < p.drop_threshold;
            }
            ASSERT_EQ(keep[j], want ? T(1) : T(0)) << n << " " << i << " " << j0 + j;
          }
        }
  }
}

TEST(AttentionDropout, KernelKeepsWhatRandLikeKeeps) {
  expect_keep_is_core<float>(true);
  expect_keep_is_core<float>(false);
  expect_keep_is_core<double>(true);
  expect_keep_is_core<double>(false);
}

// Trained: the forward saves the packed (out, lse) and the seed, not a mask or the probabilities;
// the backward is flash_attention_dropout_backward; gradients agree with the interpreter's
// gradients of the unfused graph (same dtype, same run seed: the same mask).
// Two shapes: B·H = 4 (the backward's two-pass schedule: per block of keys, then of queries) and
// B·H = 9 (its one-pass schedule: one task per batch entry).
TEST(AttentionDropout, TrainedGradientsMatchTheUnfusedForm) {
  const Case few{"trained_dropout", 2, 2, 150, 150, 16, 16, true, MaskKind::None, 0.125};
  const Case many{"trained_dropout_one_pass", 3, 3, 70, 70, 16, 16, true, MaskKind::None, 0.25};
  for (auto [c, form] : {std::pair{few, Drop::NativeExpansion}, std::pair{few, Drop::Dropout},
                         std::pair{many, Drop::TorchDecomposition}}) {
    SCOPED_TRACE(c.name);
    for (DType t : {DType::Float64, DType::Float32}) {
      SCOPED_TRACE(dtype_name(t));
      auto g = build(c, t, form, 0.2);
      const std::vector<std::string> wrt{"q", "k", "v"};
      std::vector<Tensor> in = inputs_for(c, t, 11);
      Tensor up = Tensor::randn({c.b, c.h, c.l, c.ev}, t, 99);
      CompiledFunctionOptions interp;
      interp.interpret = true;
      CompiledFunction ref(*g, wrt, test::cpu_config(), interp);
      ForwardResult rr = ref.forward(in, 5);
      std::vector<Tensor> want = ref.backward(*rr.ctx, {up});
      CompiledFunction f(*g, wrt, compiler(true));
      ForwardResult r = f.forward(in, 5);
      std::vector<Tensor> got = f.backward(*r.ctx, {up});
      ASSERT_TRUE(f.compiled_forward() && f.compiled_backward());
      EXPECT_TRUE(contains(f.compiled_forward()->schedule().str(), "extern flash_attention_dropout ->"));
      EXPECT_TRUE(contains(f.compiled_backward()->schedule().str(),
                           "extern flash_attention_dropout_backward ->"))
          << f.compiled_backward()->schedule().str();
      for (const std::string& s : f.partition().saved) {
        EXPECT_FALSE(contains(s, "softmax") || contains(s, "rand") || contains(s, "lt") ||
                     contains(s, "dropout.") || contains(s, "mul"))
            << s << "\n" << f.stats_str();
      }
      EXPECT_LT(f.stats().saved_bytes, c.b * c.h * c.l * c.s * static_cast<int64_t>(dtype_size(t)))
          << f.stats_str();
      // Exactly the packed (out, lse) and the 8-byte seed beyond the primals (k enters the fused
      // op as itself, not as a transpose of its transpose).
      EXPECT_EQ(f.stats().saved_bytes,
                c.b * c.h * c.l * (c.ev + 1) * static_cast<int64_t>(dtype_size(t)) + 8)
          << f.stats_str();
      EXPECT_TRUE(within(r.outputs.at(0), rr.outputs.at(0), dropout_bound(c, in, t, 0.2)));
      const double rel = t == DType::Float64 ? 1e-10 : 5e-5;
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        SCOPED_TRACE(wrt[i]);
        EXPECT_TRUE(close(got[i], want[i], rel));
      }
    }
  }
}

// The mask and the sums do not depend on the thread count: the same bits on 1 and 3 threads,
// forward and backward (B·H = 9: the one-pass backward's tasks per entry).
TEST(AttentionDropout, SameBitsOnAnyThreadCount) {
  const Case c{"threads", 3, 3, 150, 150, 32, 32, true, MaskKind::None, 0.2};
  auto g = build(c, DType::Float32, Drop::NativeExpansion, 0.2);
  std::vector<Tensor> in = inputs_for(c, DType::Float32, 3);
  Tensor up = Tensor::randn({c.b, c.h, c.l, c.ev}, DType::Float32, 4);
  std::vector<std::vector<Tensor>> runs;
  for (int threads : {1, 3}) {
    OptionValue o = OptionValue::map();
    o.set("threads", OptionValue::make_scalar(std::to_string(threads)));
    Compiler comp(test::cpu_config(o));
    CompiledFunction f(*g, {"q", "k", "v"}, comp);
    ForwardResult r = f.forward(in, 3);
    ASSERT_TRUE(contains(f.compiled_forward()->schedule().str(), "extern flash_attention_dropout ->"));
    std::vector<Tensor> got = f.backward(*r.ctx, {up});
    got.insert(got.begin(), r.outputs.at(0));
    runs.push_back(got);
  }
  for (size_t i = 0; i < runs[0].size(); ++i) EXPECT_TRUE(test::bitwise_equal(runs[0][i], runs[1][i])) << i;
}

// float64: the fused gradients against central differences of the fused forward (fixed run
// seed: a fixed mask), at a few elements of q, k and v.
TEST(AttentionDropout, GradientsMatchFiniteDifferences) {
  const Case c{"fd_dropout", 1, 2, 70, 70, 16, 8, true, MaskKind::None, 0.25};
  const DType t = DType::Float64;
  auto g = build(c, t, Drop::NativeExpansion, 0.3);
  const std::vector<std::string> wrt{"q", "k", "v"};
  std::vector<Tensor> in = inputs_for(c, t, 3);
  Tensor up = Tensor::randn({c.b, c.h, c.l, c.ev}, t, 4);
  CompiledFunction f(*g, wrt, compiler(true));
  ForwardResult r = f.forward(in, 9);
  std::vector<Tensor> grads = f.backward(*r.ctx, {up});
  ASSERT_TRUE(contains(f.compiled_forward()->schedule().str(), "extern flash_attention_dropout ->"));
  CompiledGraph cg = compiler(true).compile(*g);
  GraphRunOptions ro;
  ro.seed = 9;
  auto loss = [&](const std::vector<Tensor>& x) {
    Tensor o = cg.run(x, ro).at(0);
    double s = 0;
    for (int64_t i = 0; i < o.numel(); ++i) s += o.get_double(i) * up.get_double(i);
    return s;
  };
  expect_gradients_match_fd(loss, in, grads, wrt, sample_elements);
}

// The plugin decides: without the dropout externs (a third-party plugin) the match is refused
// with a note and the graph keeps its decomposition; with them it fuses.
TEST(AttentionDropout, RefusedWithoutTheDropoutExterns) {
  const Case c{"refused", 1, 2, 20, 20, 16, 16, true, MaskKind::None, 0.25};
  auto g = build(c, DType::Float64, Drop::NativeExpansion, 0.2);
  Graph without = g->clone();
  AttentionFusion a = fuse_attention(without, false);
  EXPECT_EQ(a.fused, 0);
  EXPECT_TRUE(contains(a.str(), "not fused: dropout of the probabilities, and the backend offers no "
                                "flash_attention_dropout extern"))
      << a.str();
  for (const Node* n : without.nodes()) EXPECT_FALSE(contains(n->target(), "_stax_flash_attention"));
  Graph with = g->clone();
  AttentionFusion b = fuse_attention(with, true);
  EXPECT_EQ(b.fused, 1) << b.str();
}

// Not implemented under fused dropout, clear errors: the gradient of an additive mask input.
TEST(AttentionDropout, AdditiveMaskGradientIsAClearError) {
  const DType t = DType::Float64;
  Graph g;
  Node* q = g.placeholder("q", {1, 2, 8, 16}, t);
  Node* k = g.placeholder("k", {1, 2, 8, 16}, t);
  Node* v = g.placeholder("v", {1, 2, 8, 16}, t);
  Node* m = g.placeholder("m", {2, 8, 8}, t);
  Node* s = g.call("mul.Scalar", {g.call("matmul", {q, g.call("transpose.int", {k, int64_t{-2}, int64_t{-1}})}), 0.25});
  Node* p = g.call("_softmax", {g.call("add.Tensor", {s, m}), int64_t{-1}, false});
  g.output({g.call("matmul", {drop(g, p, Drop::NativeExpansion, 0.2), v})});
  try {
    CompiledFunction f(g, {"q", "m"}, compiler(true));
    FAIL() << "the mask's gradient under fused dropout was accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "the gradient of an additive attention mask under fused dropout is "
                                   "not implemented"))
        << e.what();
  }
  CompiledFunction f(g, {"q", "k", "v"}, compiler(true));  // without the mask's gradient: fused
  EXPECT_TRUE(contains(f.compiled_forward()->schedule().str(), "extern flash_attention_dropout ->"));
}

// A dropout of every probability (p = 1) is not fused (it is not a dropout the kernel draws).
TEST(AttentionDropout, DropoutOfEverythingIsRefused) {
  const Case c{"p1", 1, 1, 8, 8, 16, 16, false, MaskKind::None, 0.25};
  auto g = build(c, DType::Float64, Drop::Dropout, 1.0);
  Graph copy = g->clone();
  AttentionFusion a = fuse_attention(copy, true);
  EXPECT_EQ(a.fused, 0);
  EXPECT_TRUE(contains(a.str(), "not fused: dropout with p = 1")) << a.str();
}

}  // namespace
}  // namespace stax
