// Fused attention on cuda_triton (issue 27 item 3, docs/attention.md "The GPU plugins"), checked
// without a GPU: the Triton kernels of plugins/cuda_triton/flash_attention.py under Triton's
// interpreter (`interpret: true`, TRITON_INTERPRET=1 in the plugin's workers) against the
// reference interpreter's decomposed attention, forward (within the bound of the reordered sums,
// tests/attention/attention_check.h) and backward (the decomposed gradients), float32 and
// float64, causal and not, odd T, head dims 32 / 64, L != S, masks; and the same kernels compiled
// by Triton to sm_90 cubins in a worker. Dropout (flash_attention_dropout and its backward):
// forward and gradients against cpu_cpp's fused dropout at the same run seed, the mask exactly
// the decomposed form's, causal and not, odd T, p = 0.1 and 0.5; its kernels compiled too. Each case checks that the fused externs ran on the
// backend, so a silent fallback to the decomposition fails it.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "core/driver/compiled_function.h"
#include "plugins/cuda_triton/triton_attention.h"
#include "tests/attention/attention_check.h"
#include "tests/support/cuda_e2e.h"

namespace stax {
namespace {

using namespace attention_test;
using test::contains;

std::string python() {
  const char* py = std::getenv("STAX_PYTHON");
  return py && *py ? py : "python3";
}

bool triton_available() {
  static const bool ok = std::system((python() + " -c 'import triton' > /dev/null 2>&1").c_str()) == 0;
  return ok;
}

#define REQUIRE_TRITON() \
  if (!triton_available()) GTEST_SKIP() << "the triton Python package is not installed (scripts/setup.sh)"

Compiler& interpreted() {
  static Compiler c([] {
    OptionValue o = OptionValue::map();
    o.set("arch", OptionValue::make_scalar("sm_90"));
    o.set("interpret", OptionValue::make_scalar("true"));
    Config config = test::cuda_config(o);
    config.devices["cuda"].backend = "cuda_triton";
    return config;
  }());
  return c;
}

class TritonForward : public ::testing::TestWithParam<Case> {};

TEST_P(TritonForward, MatchesTheDecomposedInterpreterWithinTheBound) {
  REQUIRE_TRITON();
  const Case& c = GetParam();
  for (DType t : {DType::Float32, DType::Float64}) {
    SCOPED_TRACE(dtype_name(t));
    auto g = sdpa_graph(c, t);
    std::vector<Tensor> in = inputs_for(c, t, 7);
    CompiledGraph cg = interpreted().compile(*g);
    const std::string sched = cg.schedule().str();
    EXPECT_TRUE(contains(sched, "extern flash_attention ->")) << sched;
    EXPECT_FALSE(contains(sched, "extern matmul")) << sched;
    EXPECT_EQ(cg.num_fallbacks(), 0u) << cg.summary();
    RunStats stats;
    GraphRunOptions o;
    o.stats = &stats;
    Tensor got = cg.run(in, o).at(0);
    EXPECT_EQ(stats.extern_calls, 1u);
    EXPECT_EQ(stats.interpreter_steps, 0u);
    Tensor want = interpret(*g, in).at(0);
    EXPECT_TRUE(within(got, want, attention_bound(c, in, t)));
  }
}

const Case kForward[] = {
    {"causal_odd_t", 1, 2, 67, 67, 32, 32, true},
    {"plain_head64", 1, 2, 37, 37, 64, 64, false},
    {"cross_l_ne_s", 2, 1, 20, 70, 32, 48, false},
    {"causal_l_lt_s", 1, 1, 30, 75, 32, 32, true},
    {"bool_mask", 1, 2, 25, 40, 32, 32, false, MaskKind::Bool},
    {"additive_mask_scale", 1, 2, 33, 33, 32, 32, false, MaskKind::Additive, 0.3},
};
INSTANTIATE_TEST_SUITE_P(Cases, TritonForward, ::testing::ValuesIn(kForward),
                         [](const auto& info) { return info.param.name; });

class TritonBackward : public ::testing::TestWithParam<Case> {};

// float64 to 1e-10 of the largest gradient, float32 to 5e-5 (as tests/attention's cpu_cpp test).
TEST_P(TritonBackward, MatchesTheDecomposedGradients) {
  REQUIRE_TRITON();
  const Case& c = GetParam();
  const GradientReference ref = decomposed_gradients(c);
  for (DType t : {DType::Float64, DType::Float32}) {
    SCOPED_TRACE(dtype_name(t));
    auto g = sdpa_graph(c, t);
    CompiledFunction f(*g, ref.wrt, interpreted());
    ForwardResult r = f.forward(ref.inputs(t));
    std::vector<Tensor> got = f.backward(*r.ctx, {ref.up64.to(t)});
    const CompiledGraph* fw = f.compiled_forward();
    const CompiledGraph* bw = f.compiled_backward();
    ASSERT_TRUE(fw && bw);
    EXPECT_TRUE(contains(fw->schedule().str(), "extern flash_attention ->")) << fw->schedule().str();
    EXPECT_TRUE(contains(bw->schedule().str(), "extern flash_attention_backward ->"))
        << bw->schedule().str();
    // As on cuda_nvrtc: only an additive mask's gradient has (matmul) fallbacks.
    EXPECT_EQ(fw->num_fallbacks(), 0u) << fw->summary();
    EXPECT_EQ(bw->num_fallbacks(), c.mask == MaskKind::Additive ? 2u : 0u) << bw->summary();
    expect_gradients_close(got, ref, t);
  }
}

const Case kBackward[] = {
    {"causal_odd_t", 1, 2, 67, 67, 32, 32, true},
    {"plain_head64", 1, 1, 33, 33, 64, 64, false},
    {"cross", 2, 1, 20, 75, 32, 16, false},
    {"bool_mask", 1, 2, 30, 40, 32, 32, false, MaskKind::Bool},
    {"additive_mask_grad", 1, 2, 24, 30, 32, 32, false, MaskKind::Additive},
};
INSTANTIATE_TEST_SUITE_P(Cases, TritonBackward, ::testing::ValuesIn(kBackward),
                         [](const auto& info) { return info.param.name; });

// Dropout (flash_attention_dropout and its backward, DROP set): the Triton kernels draw cpu_cpp's
// Philox stream (element (n, i, j): Philox index (n·l + i)·s + j under the node's seed).
struct DropoutCase {
  Case c;
  double p;
};
std::ostream& operator<<(std::ostream& os, const DropoutCase& d) { return os << d.c.name; }

class TritonDropout : public ::testing::TestWithParam<DropoutCase> {};

// Forward: the interpreted Triton kernel against cpu_cpp's fused kernel (same run seed, same
// mask) within the bound of the reordered sums with dropout, and against the reference
// interpreter's decomposition; one extern call per run. Backward: the gradients of q, k, v
// (flash_attention_dropout_backward) against cpu_cpp's fused ones, float64 to 1e-10 and float32
// to 5e-5 of the largest.
TEST_P(TritonDropout, MatchesCpuCppFusedDropout) {
  REQUIRE_TRITON();
  const Case& c = GetParam().c;
  const double rate = GetParam().p;
  for (DType t : {DType::Float32, DType::Float64}) {
    SCOPED_TRACE(dtype_name(t));
    auto g = sdpa_graph(c, t, rate);
    std::vector<Tensor> in = inputs_for(c, t, 7);
    CompiledGraph gpu = interpreted().compile(*g);
    const std::string sched = gpu.schedule().str();
    EXPECT_TRUE(contains(sched, "extern flash_attention_dropout ->")) << sched;
    EXPECT_TRUE(contains(sched, "fused (dropout_p > 0): one flash_attention_dropout extern")) << sched;
    EXPECT_FALSE(contains(sched, "extern matmul")) << sched;
    EXPECT_FALSE(contains(gpu.summary(), "flash_attention_dropout (extern")) << gpu.summary();
    CompiledGraph cpu = compiler(true).compile(*g);
    ASSERT_TRUE(contains(cpu.schedule().str(), "extern flash_attention_dropout ->"));
    const std::vector<double> bound = dropout_bound(c, in, t, rate);
    RunStats stats;
    GraphRunOptions o;
    o.seed = 1234567;
    o.stats = &stats;
    InterpreterOptions io;
    io.seed = 1234567;
    Tensor got = gpu.run(in, o).at(0);
    EXPECT_EQ(stats.extern_calls, 1u);
    o.stats = nullptr;
    EXPECT_TRUE(within(got, cpu.run(in, o).at(0), bound));
    EXPECT_TRUE(within(got, interpret(*g, in, io).at(0), bound));

    expect_dropout_gradients_match_cpu_cpp(*g, c, t, in, interpreted());
  }
}

const DropoutCase kDropout[] = {
    {{"causal_odd_t_p01", 1, 2, 67, 67, 32, 32, true}, 0.1},
    {{"causal_odd_t_p05", 1, 1, 67, 67, 16, 16, true}, 0.5},
    {{"cross_l_ne_s_p05", 2, 1, 20, 70, 32, 48, false}, 0.5},
    {{"bool_mask_p01", 1, 2, 25, 40, 16, 16, false, MaskKind::Bool}, 0.1},
};
INSTANTIATE_TEST_SUITE_P(Cases, TritonDropout, ::testing::ValuesIn(kDropout),
                         [](const auto& info) { return info.param.c.name; });

// The mask itself (attention_check.h expect_dropout_mask_is_the_interpreters): the interpreted
// Triton kernel keeps exactly the interpreter's elements, one seed (the interpreter is slow).
TEST(TritonAttentionDropout, MaskIsTheDecomposedFormsMask) {
  REQUIRE_TRITON();
  expect_dropout_mask_is_the_interpreters(interpreted(), 16, {77});
}

// The kernels as the device path compiles them: a worker without the interpreter compiles the
// forward (float32, causal, additive mask) and the dK / dV kernel (float64: the most shared
// memory) to sm_90 cubins, with a parameter per argument.
TEST(TritonAttention, KernelsCompileToCubins) {
  REQUIRE_TRITON();
  std::string dir = (std::filesystem::temp_directory_path() / "stax_attn_test_XXXXXX").string();
  ASSERT_TRUE(::mkdtemp(dir.data()));
  {
    triton::Worker w(triton::WorkerOptions{python(), false, dir});
    std::lock_guard<std::mutex> lock(w.lock());
    for (auto [name, dt] : {std::pair{"flash_attention", sdk::DType::Float32},
                            std::pair{"flash_attention_backward", sdk::DType::Float64},
                            std::pair{"flash_attention_dropout", sdk::DType::Float32},
                            std::pair{"flash_attention_dropout_backward", sdk::DType::Float64}}) {
      SCOPED_TRACE(name);
      const bool fwd = std::string(name).find("backward") == std::string::npos;
      const bool dropout = std::string(name).find("dropout") != std::string::npos;
      const size_t es = dt == sdk::DType::Float32 ? 4 : 8;
      const int64_t b = 2, l = 40, s = 40, e = 32;
      std::vector<char> qkv(static_cast<size_t>(b * l * e) * es), mask(static_cast<size_t>(l * s) * es),
          out(static_cast<size_t>(b * l * (e + 1) + 2 * b * s * e) * es);
      sdk::TensorView x{qkv.data(), dt, {b, l, e}, {l * e, e, 1}, 0};
      sdk::TensorView m{mask.data(), dt, {b, l, s}, {0, s, 1}, 0};
      sdk::TensorView packed{out.data(), dt, {b * l * (e + 1)}, {1}, 0};
      std::vector<sdk::TensorView> t = fwd ? std::vector<sdk::TensorView>{x, x, x, m, packed}
                                           : std::vector<sdk::TensorView>{packed, x, x, x, packed};
      int64_t seed_value = 5;  // the seed: the last input (before the forward's output)
      if (dropout) t.insert(fwd ? t.end() - 1 : t.end(), {&seed_value, sdk::DType::Int64, {}, {}, 0});
      if (!fwd) t.push_back({out.data(), dt, {b * l * e + 2 * b * s * e}, {1}, 0});
      const std::vector<double> scalars = dropout ? std::vector<double>{1, 0.125, 0.9, fwd ? 0.0 : 1.0, 1 / 0.9}
                                                  : std::vector<double>{1, 0.125};
      triton::AttentionPlan plan = triton::plan_attention(name, t, t.size() - 1, scalars);
      // The dropout forms: every kernel (the backward's both); the others the first.
      const size_t kernels = dropout ? plan.launches.size() : 1;
      for (size_t i = 0; i < kernels; ++i) {
        const triton::AttentionLaunch& launch = plan.launches[i];
        SCOPED_TRACE(launch.constexpr_text());
        EXPECT_TRUE(contains(launch.constexpr_text(), dropout ? (fwd ? "DROP:2" : "DROP:1") : "DROP:0"));
        const std::string key = "attn_test" + launch.kernel + (dropout ? "_d" : "");
        w.ensure_started("test");
        triton::load_attention_kernel(w, key, launch.kernel);
        triton::AttentionCubin c = triton::compile_attention_kernel(w, key, launch, 90);
        EXPECT_GT(c.cubin.size(), 1000u);
        EXPECT_TRUE(contains(c.function, launch.kernel)) << c.function;
        EXPECT_GE(c.num_params, launch.args.size());
      }
    }
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace stax
