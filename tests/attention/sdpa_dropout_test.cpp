// Stax's own scaled_dot_product_attention with dropout_p > 0 (docs/attention.md "Dropout"): the
// decomposition drops the probabilities with an ordinary dropout node keyed by the sdpa node
// (keep when u > p, scale 1 / (1 - p), u Stax's Philox stream: rand_like's numbers of the
// [N, L, S] probabilities under node_seed(run seed, sdpa node)), so
//   * the interpreter (the reference) runs that decomposition, the same mask in every run seed;
//   * on cpu_cpp the op fuses to one flash_attention_dropout extern drawing that very mask: its
//     values agree with the interpreter within the bound of the reordered sums, its dropped
//     elements are the interpreter's;
//   * the VJP (through the decomposition, or the fused backward) redraws the same mask: gradients
//     against central differences in float64;
//   * dropout_p = 0 is the attention without dropout; dropout_p = 1 and p < 0 are clear errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/autodiff/jvp.h"
#include "core/driver/compiled_function.h"
#include "core/graph/decompositions.h"
#include "core/graph/op_registry.h"
#include "core/interpreter/interpreter.h"
#include "tests/attention/attention_check.h"
#include "tests/support/compiled_check.h"

namespace stax {
namespace {

using test::contains;
using namespace attention_test;

const Node* sdpa_node(const Graph& g) {
  for (const Node* n : g.nodes())
    if (n->is_call() && n->target() == "scaled_dot_product_attention.default") return n;
  return nullptr;
}

class SdpaDropout : public ::testing::TestWithParam<Case> {};

// Compiled on cpu_cpp (fused) and without fusion against the interpreter, same run seed: within
// the bound, and the same elements dropped (an output element is 0 exactly where its row's kept
// probabilities meet v's zero column: the test's v has no zeros, so zeros mark nothing; the mask
// is checked directly in MaskIsThePhiloxStream).
TEST_P(SdpaDropout, CompiledAgreesWithTheInterpreter) {
  const Case& c = GetParam();
  const double rate = 0.2;
  for (DType t : {DType::Float32, DType::Float64}) {
    SCOPED_TRACE(dtype_name(t));
    auto g = sdpa_graph(c, t, rate);
    std::vector<Tensor> in = inputs_for(c, t, 7);
    CompiledGraph fused = compiler(true).compile(*g);
    const std::string sched = fused.schedule().str();
    EXPECT_TRUE(contains(sched, "extern flash_attention_dropout ->")) << sched;
    EXPECT_TRUE(contains(sched, "fused (dropout_p > 0): one flash_attention_dropout extern")) << sched;
    EXPECT_FALSE(contains(sched, "extern matmul") || contains(sched, "extern bmm")) << sched;
    CompiledGraph plain = compiler(false).compile(*g);
    EXPECT_FALSE(contains(plain.schedule().str(), "flash_attention")) << plain.schedule().str();
    for (uint64_t seed : {0ull, 12345ull}) {
      SCOPED_TRACE(seed);
      GraphRunOptions ro;
      ro.seed = seed;
      InterpreterOptions io;
      io.seed = seed;
      Tensor want = interpret(*g, in, io).at(0);
      const std::vector<double> bound = dropout_bound(c, in, t, rate);
      EXPECT_TRUE(within(fused.run(in, ro).at(0), want, bound));
      EXPECT_TRUE(within(plain.run(in, ro).at(0), want, bound));
    }
    // Another run seed draws another mask.
    GraphRunOptions r1;
    r1.seed = 1;
    Tensor a = fused.run(in).at(0), b = fused.run(in, r1).at(0);
    double diff = 0;
    for (int64_t x = 0; x < a.numel(); ++x) diff = std::max(diff, std::fabs(a.get_double(x) - b.get_double(x)));
    EXPECT_GT(diff, 1e-3);
  }
}

const Case kCases[] = {
    {"causal", 2, 3, 67, 67, 32, 32, true, MaskKind::None, 0},
    {"cross_odd", 1, 2, 33, 70, 16, 24, false, MaskKind::None, 0.3},
    {"bool_mask", 2, 2, 40, 40, 16, 16, false, MaskKind::Bool, 0},
    {"additive_mask", 1, 2, 24, 24, 16, 16, false, MaskKind::Additive, 0},
};

INSTANTIATE_TEST_SUITE_P(Cases, SdpaDropout, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return info.param.name; });

// The mask: q = k = 0 makes every probability 1 / S, v = the identity makes the output the
// dropped probabilities themselves, so out[n, i, j] = keep · (1 / S) / (1 - p) with keep exactly
// u > p for u = rand_like's number of element (n, i, j) under the sdpa node's seed (Stax's
// Philox stream, core/tensor/random.h). The interpreter gives each kept value exactly
// fl(fl(1 / S) · fl(1 / (1 - p))); the fused kernel drops the same elements; the keep ratio is
// within 5 standard deviations of 1 - p (a fixed seed: a deterministic check a wrong threshold or
// comparison fails).
TEST(SdpaDropoutMask, MaskIsThePhiloxStream) {
  const int64_t b = 2, h = 4, l = 64, s = 64;
  const double rate = 0.3;
  for (DType t : {DType::Float64, DType::Float32}) {
    SCOPED_TRACE(dtype_name(t));
    const Case c{"mask", b, h, l, s, 8, s, false, MaskKind::None, 0};
    auto g = sdpa_graph(c, t, rate);
    std::vector<Tensor> in{Tensor::zeros({b, h, l, 8}, t), Tensor::zeros({b, h, s, 8}, t),
                           Tensor::zeros({b, h, s, s}, t)};
    for (int64_t n = 0; n < b * h; ++n)
      for (int64_t j = 0; j < s; ++j) in[2].set_double((n * s + j) * s + j, 1.0);
    for (uint64_t seed : {3ull, 77ull}) {
      SCOPED_TRACE(seed);
      InterpreterOptions io;
      io.seed = seed;
      Tensor got = interpret(*g, in, io).at(0);
      GraphRunOptions ro;
      ro.seed = seed;
      Tensor fused = compiler(true).compile(*g).run(in, ro).at(0);
      Tensor u = Tensor::rand({b * h, l, s}, t, node_seed(seed, *sdpa_node(*g)), 0);
      const double kept_value = t == DType::Float64
                                    ? (1.0 / static_cast<double>(s)) * (1.0 / (1.0 - rate))
                                    : static_cast<double>(static_cast<float>(1.0 / static_cast<double>(s)) *
                                                          static_cast<float>(1.0 / (1.0 - rate)));
      int64_t kept = 0;
      const double thr = t == DType::Float64 ? rate : static_cast<double>(static_cast<float>(rate));
      for (int64_t x = 0; x < got.numel(); ++x) {
        const bool keep = u.get_double(x) > thr;
        kept += keep;
        ASSERT_EQ(got.get_double(x), keep ? kept_value : 0.0) << "element " << x;
        ASSERT_EQ(fused.get_double(x) != 0.0, keep) << "element " << x;
        if (keep) {
          ASSERT_NEAR(fused.get_double(x), kept_value, 8 * unit_roundoff_of(t) * kept_value);
        }
      }
      const double n = static_cast<double>(got.numel());
      const double sd = std::sqrt(n * rate * (1 - rate));
      EXPECT_NEAR(static_cast<double>(kept), n * (1 - rate), 5 * sd);
    }
  }
}

// float64 gradients of q, k, v against central differences of the interpreter's forward at a
// fixed run seed (a fixed mask): the interpreter's own VJP (the decomposition, its dropout's
// backward redrawing the mask), the unfused compiled one and the fused one
// (flash_attention_dropout_backward).
TEST(SdpaDropoutGradients, MatchFiniteDifferences) {
  const Case c{"fd", 1, 2, 30, 30, 16, 8, true, MaskKind::None, 0};
  const DType t = DType::Float64;
  const double rate = 0.25;
  const uint64_t seed = 9;
  auto g = sdpa_graph(c, t, rate);
  const std::vector<std::string> wrt{"q", "k", "v"};
  std::vector<Tensor> in = inputs_for(c, t, 3);
  Tensor up = Tensor::randn({c.b, c.h, c.l, c.ev}, t, 4);
  InterpreterOptions io;
  io.seed = seed;
  auto loss = [&](const std::vector<Tensor>& x) {
    Tensor o = interpret(*g, x, io).at(0);
    double sum = 0;
    for (int64_t i = 0; i < o.numel(); ++i) sum += o.get_double(i) * up.get_double(i);
    return sum;
  };
  CompiledFunctionOptions interp;
  interp.interpret = true;
  CompiledFunction ref(*g, wrt, test::cpu_config(), interp);
  CompiledFunction fused(*g, wrt, compiler(true));
  CompiledFunction plain(*g, wrt, compiler(false));
  for (CompiledFunction* f : {&ref, &plain, &fused}) {
    ForwardResult r = f->forward(in, seed);
    std::vector<Tensor> grads = f->backward(*r.ctx, {up});
    if (f == &fused) {
      ASSERT_TRUE(fused.compiled_forward() && fused.compiled_backward());
      EXPECT_TRUE(contains(fused.compiled_forward()->schedule().str(), "extern flash_attention_dropout ->"));
      EXPECT_TRUE(contains(fused.compiled_backward()->schedule().str(),
                           "extern flash_attention_dropout_backward ->"));
    }
    expect_gradients_match_fd(loss, in, grads, wrt, sample_elements);
  }
}

// Forward mode (the interpreter's JVP through the decomposition, its dropout of the tangent keyed
// like the forward's): the tangent against a central difference along (dq, dk, dv), float64.
TEST(SdpaDropoutGradients, TangentMatchesFiniteDifferences) {
  const Case c{"jvp", 1, 2, 24, 24, 16, 8, true, MaskKind::None, 0};
  const DType t = DType::Float64;
  auto g = sdpa_graph(c, t, 0.3);
  const std::vector<std::string> wrt{"q", "k", "v"};
  std::vector<Tensor> in = inputs_for(c, t, 21);
  std::vector<Tensor> dir = inputs_for(c, t, 31);
  InterpreterOptions io;
  io.seed = 17;
  JvpGraph j = build_jvp_graph(*g, wrt);
  std::vector<Tensor> jin;
  for (const Node* n : j.graph.nodes()) {
    if (!n->is_placeholder()) continue;
    for (size_t a = 0; a < wrt.size(); ++a) {
      if (n->name() == wrt[a]) jin.push_back(in[a]);
      if (n->name() == j.tangents[a]) jin.push_back(dir[a]);
    }
  }
  ASSERT_EQ(jin.size(), 6u);
  Tensor tangent = interpret(j.graph, jin, io).at(j.num_outputs);
  const int64_t zeros = expect_tangent_matches_fd(
      [&](const std::vector<Tensor>& x) { return interpret(*g, x, io).at(0); }, in, dir, tangent);
  EXPECT_LT(zeros, tangent.numel() / 4);  // a real tangent, not a dropped-out one
}

// The flash form (torch's CPU trace form) with dropout: its output is sdpa's with dropout
// (compiled = interpreted within the bound, the mask drawn: another output than at p = 0), its
// logsumexp the undropped one (the p = 0 form's, torch's meaning).
TEST(SdpaDropoutForms, FlashFormTakesDropout) {
  const Case c{"flash_form", 2, 2, 30, 30, 16, 16, false, MaskKind::None, 0};
  const DType t = DType::Float64;
  auto form = [&](double p) {
    auto g = std::make_unique<Graph>();
    Node* q = g->placeholder("q", {c.b, c.h, c.l, c.e}, t);
    Node* k = g->placeholder("k", {c.b, c.h, c.s, c.e}, t);
    Node* v = g->placeholder("v", {c.b, c.h, c.s, c.ev}, t);
    Node* f = g->call("_scaled_dot_product_flash_attention_for_cpu", {q, k, v, p});
    g->output({g->call("getitem", {f, int64_t{0}}), g->call("getitem", {f, int64_t{1}})});
    return g;
  };
  auto g = form(0.25), g0 = form(0.0);
  std::vector<Tensor> in = inputs_for(c, t, 41);
  InterpreterOptions io;
  io.seed = 6;
  GraphRunOptions ro;
  ro.seed = 6;
  std::vector<Tensor> want = interpret(*g, in, io), undropped = interpret(*g0, in, io);
  CompiledGraph cg = compiler(true).compile(*g);
  EXPECT_TRUE(contains(cg.schedule().str(), "extern flash_attention_dropout ->")) << cg.schedule().str();
  std::vector<Tensor> got = cg.run(in, ro);
  EXPECT_TRUE(within(got[0].contiguous(), want[0].contiguous(), dropout_bound(c, in, t, 0.25)));
  EXPECT_TRUE(close(want[1], undropped[1], 1e-14));
  EXPECT_TRUE(close(got[1], undropped[1], 1e-12));
  EXPECT_FALSE(close(want[0], undropped[0], 1e-3));
}

// dropout_p = 0: no random node in the decomposition, the fused kernel without dropout, and the
// same bits as the op called without dropout_p.
TEST(SdpaDropoutEdges, ZeroIsTheAttentionWithoutDropout) {
  const Case c{"p0", 1, 2, 20, 20, 16, 16, true, MaskKind::None, 0};
  auto g = sdpa_graph(c, DType::Float32, 0.0);
  Graph d = g->clone();
  decompose(d);
  for (const Node* n : d.nodes())
    EXPECT_FALSE(n->is_call() && n->op()->category == OpCategory::Random) << n->target();
  const std::string sched = compiler(true).compile(*g).schedule().str();
  EXPECT_TRUE(contains(sched, "extern flash_attention ->")) << sched;
  EXPECT_FALSE(contains(sched, "flash_attention_dropout")) << sched;
  Graph plain;
  Node* q = plain.placeholder("q", {c.b, c.h, c.l, c.e}, DType::Float32);
  Node* k = plain.placeholder("k", {c.b, c.h, c.s, c.e}, DType::Float32);
  Node* v = plain.placeholder("v", {c.b, c.h, c.s, c.ev}, DType::Float32);
  plain.output({plain.call("scaled_dot_product_attention", {q, k, v}, {{"is_causal", Arg(true)}})});
  std::vector<Tensor> in = inputs_for(c, DType::Float32, 5);
  EXPECT_TRUE(test::bitwise_equal(interpret(*g, in).at(0), interpret(plain, in).at(0)));
  EXPECT_TRUE(test::bitwise_equal(compiler(true).compile(*g).run(in).at(0),
                                  compiler(true).compile(plain).run(in).at(0)));
}

TEST(SdpaDropoutEdges, OneAndNegativeAreClearErrors) {
  const Case c{"bad", 1, 1, 4, 4, 8, 8, false, MaskKind::None, 0};
  for (double p : {1.0, -0.1, 1.5, std::numeric_limits<double>::quiet_NaN()}) {
    SCOPED_TRACE(p);
    try {
      sdpa_graph(c, DType::Float32, p);
      FAIL() << "dropout_p accepted";
    } catch (const Error& e) {
      EXPECT_TRUE(contains(e.what(), "dropout_p must be in [0, 1)")) << e.what();
    }
  }
}

}  // namespace
}  // namespace stax
