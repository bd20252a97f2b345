// cuda_nvrtc on a real GPU (ctest label `gpu`): the representative e2e set run on the device
// against the reference interpreter. Integers and bools bit for bit; floating outputs within a
// per-dtype tolerance (CUDA's math functions are 1-2 ulp, sums combine in a tree: §6.5). Skips,
// saying why, on a machine without a driver or a device.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "tests/support/cuda_e2e.h"

namespace stax {
namespace {

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

void tolerance(DType dt, double* rtol, double* atol) {
  switch (dt) {
    case DType::Float64: *rtol = 1e-10; *atol = 1e-9; break;
    case DType::Float32: *rtol = 1e-4; *atol = 1e-3; break;
    default: *rtol = 2e-2; *atol = 2e-2; break;  // float16 / bfloat16: one rounding of the type
  }
}

TEST(CudaGpu, E2eSetMatchesTheInterpreter) {
  Compiler compiler(test::cuda_config());
  std::string reason = no_device_reason(compiler);
  if (!reason.empty()) GTEST_SKIP() << "no GPU to run on: " << reason;
  for (const test::E2eCase& c : test::cuda_e2e_cases()) {
    SCOPED_TRACE(c.name);
    CompiledGraph cg = compiler.compile(c.graph);
    std::vector<Tensor> got = cg.run(c.inputs);
    std::vector<Tensor> want = interpret(c.graph, c.inputs);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      if (!is_floating(want[i].dtype())) {
        EXPECT_TRUE(test::bitwise_equal(got[i], want[i])) << "out " << i;
        continue;
      }
      double rtol = 0, atol = 0;
      tolerance(want[i].dtype(), &rtol, &atol);
      EXPECT_TRUE(got[i].allclose(want[i], rtol, atol, true)) << "out " << i;
    }
  }
}

// A small bench for scripts/gpu_check.sh: a streaming kernel (y = x * 2 + 1 on 64 Mi floats),
// end to end through CompiledGraph::run (which copies in and out per launch until the executor
// keeps buffers on the device), best of 5.
TEST(CudaGpu, StreamingBench) {
  Compiler compiler(test::cuda_config());
  std::string reason = no_device_reason(compiler);
  if (!reason.empty()) GTEST_SKIP() << "no GPU to run on: " << reason;
  Graph g;
  Node* x = g.placeholder("x", {64 << 20});
  g.output({g.call("add.Scalar", {g.call("mul.Scalar", {x, 2}), 1})});
  CompiledGraph cg = compiler.compile(g);
  std::vector<Tensor> in = {Tensor::randn({64 << 20}, DType::Float32, 3)};
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    cg.run(in);
    best = std::min(best, std::chrono::duration<double, std::milli>(
                              std::chrono::steady_clock::now() - t0).count());
  }
  std::printf("[ cuda bench ] y = 2x + 1 on 256 MiB: %.2f ms end to end (incl. H2D + D2H)\n", best);
}

}  // namespace
}  // namespace stax
