// Fused attention on a real GPU (label gpu; skips, saying why, without one): cuda_nvrtc's CUDA C
// kernels (cubins from NVRTC) and cuda_triton's Triton kernels (cubins from Triton) run on the
// device, forward within the bound of the reordered sums and backward against the decomposed
// gradients of the reference interpreter (tests/attention/attention_check.h). The same checks
// run without a GPU in cuda_attention_test (emulation) and cuda_triton_attention_test
// (Triton's interpreter); this adds the device's math (expf / logf within 2 ulp), its memory and
// the launches themselves; and dropout against cpu_cpp's fused dropout (the same Philox mask).
// scripts/gpu_check.sh runs it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/driver/compiled_function.h"
#include "tests/attention/attention_check.h"
#include "tests/support/cuda_e2e.h"

namespace stax {
namespace {

using namespace attention_test;
using test::contains;

Config config_for(const std::string& backend) {
  OptionValue o = OptionValue::map();
  Config c = test::cuda_config(o);
  c.devices["cuda"].backend = backend;
  return c;
}

// Why kernels cannot run here ("" when they can): the message of a tiny run.
std::string no_device_reason(Compiler& compiler) {
  Graph g;
  Node* x = g.placeholder("x", {4});
  g.output({g.call("neg", {x})});
  try {
    compiler.compile(g).run({Tensor::randn({4}, DType::Float32, 1)});
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

class AttentionOnGpu : public ::testing::TestWithParam<std::string> {};

TEST_P(AttentionOnGpu, ForwardAndBackwardMatchTheInterpreter) {
  Compiler compiler(config_for(GetParam()));
  std::string reason = no_device_reason(compiler);
  if (!reason.empty()) GTEST_SKIP() << "no GPU to run on: " << reason;
  // Two cases (cuda_triton compiles a cubin per kernel, dtype and case).
  for (const Case& c : {Case{"causal_odd_t", 2, 3, 130, 130, 64, 64, true},
                        Case{"cross_bool_mask", 1, 2, 50, 70, 32, 32, false, MaskKind::Bool}}) {
    for (DType t : {DType::Float32, DType::Float64}) {
      SCOPED_TRACE(c.name + " " + std::string(dtype_name(t)));
      auto g = sdpa_graph(c, t);
      std::vector<Tensor> in = inputs_for(c, t, 7);
      CompiledGraph cg = compiler.compile(*g);
      ASSERT_TRUE(contains(cg.schedule().str(), "extern flash_attention ->")) << cg.schedule().str();
      EXPECT_TRUE(within(cg.run(in).at(0), interpret(*g, in).at(0), attention_bound(c, in, t)));
      std::vector<std::string> wrt{"q", "k", "v"};
      CompiledFunctionOptions interp;
      interp.interpret = true;
      CompiledFunction ref(*g, wrt, test::cpu_config(), interp);
      Tensor up = Tensor::randn({c.b, c.h, c.l, c.ev}, t, 99);
      ForwardResult rr = ref.forward(in);
      std::vector<Tensor> want = ref.backward(*rr.ctx, {up});
      CompiledFunction f(*g, wrt, compiler);
      ForwardResult r = f.forward(in);
      std::vector<Tensor> got = f.backward(*r.ctx, {up});
      ASSERT_TRUE(contains(f.compiled_backward()->schedule().str(), "extern flash_attention_backward"));
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_TRUE(close(got[i], want[i], t == DType::Float64 ? 1e-10 : 5e-5)) << wrt[i];
    }
  }
}

// Dropout on the device (flash_attention_dropout and its backward): the output against cpu_cpp's
// fused dropout at the same run seed (the same Philox mask) within the bound, the gradients of
// q, k, v against cpu_cpp's fused ones; causal odd T, p = 0.1 and 0.5, float32 and float64.
TEST_P(AttentionOnGpu, DropoutMatchesCpuCppFusedDropout) {
  Compiler compiler(config_for(GetParam()));
  std::string reason = no_device_reason(compiler);
  if (!reason.empty()) GTEST_SKIP() << "no GPU to run on: " << reason;
  const Case c{"causal_odd_t", 2, 3, 130, 130, 64, 64, true};
  const std::vector<std::string> wrt{"q", "k", "v"};
  for (double rate : {0.1, 0.5}) {
    for (DType t : {DType::Float32, DType::Float64}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " p=" + std::to_string(rate));
      auto g = sdpa_graph(c, t, rate);
      std::vector<Tensor> in = inputs_for(c, t, 7);
      CompiledGraph cg = compiler.compile(*g);
      ASSERT_TRUE(contains(cg.schedule().str(), "extern flash_attention_dropout ->")) << cg.schedule().str();
      GraphRunOptions o;
      o.seed = 31;
      EXPECT_TRUE(within(cg.run(in, o).at(0), attention_test::compiler(true).compile(*g).run(in, o).at(0),
                         dropout_bound(c, in, t, rate)));
      Tensor up = Tensor::randn({c.b, c.h, c.l, c.ev}, t, 99);
      CompiledFunction ref(*g, wrt, attention_test::compiler(true));
      ForwardResult rr = ref.forward(in, 5);
      std::vector<Tensor> want = ref.backward(*rr.ctx, {up});
      CompiledFunction f(*g, wrt, compiler);
      ForwardResult r = f.forward(in, 5);
      std::vector<Tensor> got = f.backward(*r.ctx, {up});
      ASSERT_TRUE(contains(f.compiled_backward()->schedule().str(), "extern flash_attention_dropout_backward"));
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_TRUE(close(got[i], want[i], t == DType::Float64 ? 1e-10 : 5e-5)) << wrt[i];
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Plugins, AttentionOnGpu, ::testing::Values("cuda_nvrtc", "cuda_triton"));

}  // namespace
}  // namespace stax
