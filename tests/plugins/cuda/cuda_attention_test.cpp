// Fused attention on the GPU plugins (issue 27 item 3, docs/attention.md "The GPU plugins"),
// checked without a GPU: cuda_nvrtc's CUDA C kernels (plugins/cuda_nvrtc/flash_attention.cu) in
// the host grid emulation, and every one of them compiled by NVRTC to an sm_90 cubin.
//   * forward: sdpa compiled for the backend runs as one `flash_attention` extern, within the
//     bound of the reordered sums (tests/attention/attention_check.h) of the reference
//     interpreter's decomposed attention (matmul, softmax, matmul), float32 and float64, causal
//     and not, odd T, head dims 32 / 64, L != S, bool and additive masks;
//   * backward: CompiledFunction's forward and backward graphs run flash_attention and
//     flash_attention_backward; the gradients of q, k, v (and of an additive mask) against the
//     interpreter's decomposed gradients;
//   * dropout (flash_attention_dropout and its backward): forward and gradients against cpu_cpp's
//     fused dropout at the same run seed, the mask exactly the decomposed form's, causal and not,
//     odd T, p = 0.1 and 0.5.
// Each case checks that the fused kernels ran on the backend (schedule, no fallback, one extern
// call and no interpreter step per run), so a silent fallback to the decomposition fails it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/driver/compiled_function.h"
#include "plugins/cuda_nvrtc/attention_extern.h"
#include "plugins/cuda_nvrtc/nvrtc_compiler.h"
#include "tests/attention/attention_check.h"
#include "tests/support/cuda_e2e.h"

namespace stax {
namespace {

using namespace attention_test;
using test::contains;

Compiler& emulated() {
  static Compiler c([] {
    OptionValue o = OptionValue::map();
    o.set("emulate", OptionValue::make_scalar("true"));
    return test::cuda_config(o);
  }());
  return c;
}

// The fused path ran on the backend: the extern is in the schedule, nothing falls back, and a
// run calls the extern once with no interpreter step.
void expect_fused(const CompiledGraph& cg, const std::string& ext, const std::vector<Tensor>& in) {
  const std::string sched = cg.schedule().str();
  EXPECT_TRUE(contains(sched, "extern " + ext + " ->")) << sched;
  EXPECT_FALSE(contains(sched, "extern matmul")) << sched;
  EXPECT_EQ(cg.num_fallbacks(), 0u) << cg.summary();
  RunStats stats;
  GraphRunOptions o;
  o.stats = &stats;
  cg.run(in, o);
  EXPECT_TRUE(stats.on_device);
  EXPECT_EQ(stats.extern_calls, 1u);
  EXPECT_EQ(stats.interpreter_steps, 0u);
}

class EmulatedForward : public ::testing::TestWithParam<Case> {};

TEST_P(EmulatedForward, MatchesTheDecomposedInterpreterWithinTheBound) {
  const Case& c = GetParam();
  for (DType t : {DType::Float32, DType::Float64}) {
    SCOPED_TRACE(dtype_name(t));
    auto g = sdpa_graph(c, t);
    std::vector<Tensor> in = inputs_for(c, t, 7);
    CompiledGraph cg = emulated().compile(*g);
    EXPECT_TRUE(contains(cg.schedule().str(), "attention:\n  %scaled_dot_product_attention: fused"))
        << cg.schedule().str();
    expect_fused(cg, "flash_attention", in);
    Tensor got = cg.run(in).at(0);
    Tensor want = interpret(*g, in).at(0);
    EXPECT_TRUE(within(got, want, attention_bound(c, in, t)));
  }
}

const Case kForward[] = {
    {"causal_odd_t", 1, 2, 67, 67, 32, 32, true},
    {"plain_head64", 1, 2, 37, 37, 64, 64, false},
    {"t1", 1, 2, 1, 1, 32, 32, true},
    {"cross_l_ne_s", 1, 2, 20, 70, 32, 48, false},
    {"causal_l_lt_s", 1, 1, 30, 75, 32, 32, true},
    {"bool_mask", 1, 2, 25, 40, 32, 32, false, MaskKind::Bool},
    {"additive_mask_scale", 1, 2, 33, 33, 32, 32, false, MaskKind::Additive, 0.3},
};
INSTANTIATE_TEST_SUITE_P(Cases, EmulatedForward, ::testing::ValuesIn(kForward),
                         [](const auto& info) { return info.param.name; });

class EmulatedBackward : public ::testing::TestWithParam<Case> {};

// float64 to 1e-10 of the largest gradient, float32 to 5e-5 (as tests/attention's cpu_cpp test).
TEST_P(EmulatedBackward, MatchesTheDecomposedGradients) {
  const Case& c = GetParam();
  const GradientReference ref = decomposed_gradients(c);
  for (DType t : {DType::Float64, DType::Float32}) {
    SCOPED_TRACE(dtype_name(t));
    auto g = sdpa_graph(c, t);
    CompiledFunction f(*g, ref.wrt, emulated());
    ForwardResult r = f.forward(ref.inputs(t));
    std::vector<Tensor> got = f.backward(*r.ctx, {ref.up64.to(t)});
    const CompiledGraph* fw = f.compiled_forward();
    const CompiledGraph* bw = f.compiled_backward();
    ASSERT_TRUE(fw && bw);
    EXPECT_TRUE(contains(fw->schedule().str(), "extern flash_attention ->")) << fw->schedule().str();
    EXPECT_TRUE(contains(bw->schedule().str(), "extern flash_attention_backward ->"))
        << bw->schedule().str();
    // The fused ops never fall back. An additive mask's gradient (dO·Vᵀ, an L x S product in
    // plain graph ops) has two matmuls, which these plugins run on the interpreter as every matmul
    // (they offer no GEMM extern); otherwise nothing falls back.
    EXPECT_EQ(fw->num_fallbacks(), 0u) << fw->summary();
    EXPECT_FALSE(contains(bw->summary(), "flash_attention_backward (extern")) << bw->summary();
    EXPECT_EQ(bw->num_fallbacks(), c.mask == MaskKind::Additive ? 2u : 0u) << bw->summary();
    expect_gradients_close(got, ref, t);
  }
}

const Case kBackward[] = {
    {"causal_odd_t", 1, 2, 67, 67, 32, 32, true},
    {"plain_head64", 1, 2, 33, 33, 64, 64, false},
    {"cross", 1, 2, 20, 75, 32, 16, false},
    {"causal_l_lt_s", 1, 1, 30, 70, 32, 32, true},
    {"bool_mask", 1, 2, 30, 40, 32, 32, false, MaskKind::Bool},
    {"additive_mask_grad", 1, 2, 24, 30, 32, 32, false, MaskKind::Additive},
};
INSTANTIATE_TEST_SUITE_P(Cases, EmulatedBackward, ::testing::ValuesIn(kBackward),
                         [](const auto& info) { return info.param.name; });

// Dropout of the probabilities (docs/attention.md "Dropout"): the plugin offers
// flash_attention_dropout and its backward, so sdpa with dropout_p > 0 fuses, drawing cpu_cpp's
// Philox stream (element (n, i, j): Philox index (n·l + i)·s + j under the node's seed).
struct DropoutCase {
  Case c;
  double p;
};
std::ostream& operator<<(std::ostream& os, const DropoutCase& d) { return os << d.c.name; }

// The fused dropout ran on the backend: the extern in the schedule, one extern call per run, and
// nothing else falls back but the seed node (`_stax_rng_seed`, a random op: one interpreter step).
void expect_fused_dropout(const CompiledGraph& cg, const std::vector<Tensor>& in) {
  const std::string sched = cg.schedule().str();
  EXPECT_TRUE(contains(sched, "extern flash_attention_dropout ->")) << sched;
  EXPECT_FALSE(contains(sched, "extern matmul") || contains(sched, "extern bmm")) << sched;
  EXPECT_FALSE(contains(cg.summary(), "flash_attention_dropout (extern")) << cg.summary();
  RunStats stats;
  GraphRunOptions o;
  o.stats = &stats;
  cg.run(in, o);
  EXPECT_TRUE(stats.on_device);
  EXPECT_EQ(stats.extern_calls, 1u);
  EXPECT_EQ(cg.num_fallbacks(), 1u) << cg.summary();
  EXPECT_TRUE(contains(cg.summary(), "_stax_rng_seed")) << cg.summary();
  EXPECT_EQ(stats.interpreter_steps, 1u);
}

class EmulatedDropout : public ::testing::TestWithParam<DropoutCase> {};

// Forward: the emulated kernel against cpu_cpp's fused kernel (same run seed, so the same mask)
// within the bound of the reordered sums with dropout, and against the interpreter's
// decomposition; another seed gives another output. Backward: CompiledFunction's gradients of
// q, k, v (flash_attention_dropout_backward, redrawing the mask) against cpu_cpp's fused ones,
// float64 to 1e-10 and float32 to 5e-5 of the largest (as without dropout).
TEST_P(EmulatedDropout, MatchesCpuCppFusedDropout) {
  const Case& c = GetParam().c;
  const double rate = GetParam().p;
  for (DType t : {DType::Float32, DType::Float64}) {
    SCOPED_TRACE(dtype_name(t));
    auto g = sdpa_graph(c, t, rate);
    std::vector<Tensor> in = inputs_for(c, t, 7);
    CompiledGraph gpu = emulated().compile(*g);
    EXPECT_TRUE(contains(gpu.schedule().str(), "fused (dropout_p > 0): one flash_attention_dropout extern"))
        << gpu.schedule().str();
    expect_fused_dropout(gpu, in);
    CompiledGraph cpu = compiler(true).compile(*g);
    ASSERT_TRUE(contains(cpu.schedule().str(), "extern flash_attention_dropout ->"));
    const std::vector<double> bound = dropout_bound(c, in, t, rate);
    for (uint64_t seed : {4ull, 1234567ull}) {
      SCOPED_TRACE(seed);
      GraphRunOptions o;
      o.seed = seed;
      InterpreterOptions io;
      io.seed = seed;
      Tensor got = gpu.run(in, o).at(0);
      EXPECT_TRUE(within(got, cpu.run(in, o).at(0), bound));
      EXPECT_TRUE(within(got, interpret(*g, in, io).at(0), bound));
    }
    GraphRunOptions o1;
    o1.seed = 1;
    EXPECT_FALSE(close(gpu.run(in).at(0), gpu.run(in, o1).at(0), 1e-3));  // another mask

    expect_dropout_gradients_match_cpu_cpp(*g, c, t, in, emulated());
  }
}

const DropoutCase kDropout[] = {
    {{"causal_odd_t_p01", 1, 2, 67, 67, 32, 32, true}, 0.1},
    {{"causal_odd_t_p05", 1, 2, 67, 67, 32, 32, true}, 0.5},
    {{"plain_odd_p05", 2, 1, 37, 37, 16, 24, false}, 0.5},
    {{"cross_l_ne_s_p01", 1, 2, 20, 70, 32, 48, false}, 0.1},
    {{"bool_mask_p05", 1, 2, 25, 40, 16, 16, false, MaskKind::Bool}, 0.5},
};
INSTANTIATE_TEST_SUITE_P(Cases, EmulatedDropout, ::testing::ValuesIn(kDropout),
                         [](const auto& info) { return info.param.c.name; });

// The mask itself (attention_check.h expect_dropout_mask_is_the_interpreters): the emulated
// kernel keeps exactly the interpreter's elements, two seeds.
TEST(CudaAttentionDropout, MaskIsTheDecomposedFormsMask) {
  expect_dropout_mask_is_the_interpreters(emulated(), 8, {3, 77});
}

// nanoGPT's written-out form (softmax -> native_dropout's rand_like < 1 - p -> P·V, the
// torch.compile path) fuses too, with native_dropout's comparison (keep u < 1 - p): the values
// are the interpreter's running it as written (same run seed, same mask).
TEST(CudaAttentionDropout, WrittenOutNativeDropoutFuses) {
  const DType t = DType::Float64;
  const int64_t b = 1, h = 2, l = 20, e = 16;
  Graph g;
  Node* q = g.placeholder("q", {b, h, l, e}, t);
  Node* k = g.placeholder("k", {b, h, l, e}, t);
  Node* v = g.placeholder("v", {b, h, l, e}, t);
  Node* s = g.call("mul.Scalar", {g.call("matmul", {q, g.call("transpose.int", {k, int64_t{-2}, int64_t{-1}})}), 0.25});
  Node* p = g.call("_softmax", {s, int64_t{-1}, false});
  Node* mask = g.call("lt.Scalar", {g.call("rand_like", {p}), 0.8});
  Node* d = g.call("mul.Scalar", {g.call("mul.Tensor", {p, mask}), 1.25});
  g.output({g.call("matmul", {d, v})});
  std::vector<Tensor> in{Tensor::randn({b, h, l, e}, t, 1), Tensor::randn({b, h, l, e}, t, 2),
                         Tensor::randn({b, h, l, e}, t, 3)};
  CompiledGraph cg = emulated().compile(g);
  const std::string sched = cg.schedule().str();
  EXPECT_TRUE(contains(sched, "extern flash_attention_dropout ->")) << sched;
  EXPECT_TRUE(contains(sched, ", dropout): one flash_attention_dropout extern")) << sched;
  for (uint64_t seed : {4ull, 5ull}) {
    GraphRunOptions o;
    o.seed = seed;
    InterpreterOptions io;
    io.seed = seed;
    EXPECT_TRUE(close(cg.run(in, o).at(0), interpret(g, in, io).at(0), 1e-12));
  }
}

// The same kernels for the GPU: NVRTC compiles them to an sm_90 cubin (no device needed), every
// entry point named in it.
TEST(CudaAttention, KernelsCompileToACubin) {
  cuda::NvrtcOutput out =
      cuda::nvrtc_compile(cuda::attention_source(cuda::Target::Nvrtc), "flash_attention.cu", "sm_90");
  ASSERT_GT(out.cubin.size(), 1000u);
  const std::string cubin(out.cubin.begin(), out.cubin.end());
  for (const std::string& k : cuda::attention_kernel_names()) EXPECT_TRUE(contains(cubin, k)) << k;
  // NVRTC's warnings (the prelude's unused constants) name none of the attention kernels' code.
  EXPECT_FALSE(contains(out.log, "stax_attn") || contains(out.log, "stax_flash")) << out.log;
}

// The dropout externs are offered, and a bad seed operand is a clear error.
TEST(CudaAttentionDropout, BadSeedIsAClearError) {
  const std::vector<std::string>& ext = cuda::attention_externs();
  for (const char* name : {"flash_attention_dropout", "flash_attention_dropout_backward"})
    EXPECT_NE(std::find(ext.begin(), ext.end(), name), ext.end()) << name;
  std::vector<unsigned char> params;
  float data[64] = {};
  sdk::TensorView q{data, sdk::DType::Float32, {1, 2, 4}, {8, 4, 1}, 0};
  sdk::TensorView seed{data, sdk::DType::Float32, {}, {}, 0};
  sdk::TensorView out{data, sdk::DType::Float32, {4}, {1}, 0};
  try {
    cuda::attention_launches("flash_attention_dropout", {q, q, q, seed, out}, 4, {0, 1, 0.1, 1, 1.1},
                             params);
    FAIL() << "a float32 seed accepted";
  } catch (const sdk::PluginError& e) {
    EXPECT_TRUE(contains(e.what(), "extern kernel 'flash_attention_dropout': the dropout seed must be "
                                   "a 0-d int64 tensor"))
        << e.what();
  }
}

// A bad call names the extern and the cause.
TEST(CudaAttention, BadOperandsAreClearErrors) {
  std::vector<unsigned char> params;
  float data[64] = {};
  sdk::TensorView q{data, sdk::DType::Float16, {2, 4, 8}, {32, 8, 1}, 0};
  try {
    cuda::attention_launches("flash_attention", {q, q, q, q}, 3, {0, 1}, params);
    FAIL() << "float16 accepted";
  } catch (const sdk::PluginError& e) {
    EXPECT_TRUE(contains(e.what(), "extern kernel 'flash_attention': takes float32 or float64"))
        << e.what();
  }
}

}  // namespace
}  // namespace stax
