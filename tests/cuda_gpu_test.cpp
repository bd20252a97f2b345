// cuda_nvrtc on a real GPU (ctest label `gpu`): the representative e2e set run on the device
// against the reference interpreter. Integers and bools bit for bit; floating outputs within a
// per-dtype tolerance (CUDA's math functions are 1-2 ulp, sums combine in a tree: §6.5). Skips,
// saying why, on a machine without a driver or a device.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include "core/backend/plugin_registry.h"
#include "tests/support/cuda_e2e.h"
#include "stax/sdk/kernel_builder.hpp"
#include "tests/support/device_roundtrip.h"

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

// ABI 1.2 device memory on the GPU: cuMemAlloc'd buffers, copies, a launch on them.
TEST(CudaGpu, DeviceMemoryRoundTrip) {
  Compiler compiler(test::cuda_config());
  std::string reason = no_device_reason(compiler);
  if (!reason.empty()) GTEST_SKIP() << "no GPU to run on: " << reason;
  PluginRegistry reg({STAX_PLUGIN_DIR});
  test::check_example11_on_device(*reg.create("cuda_nvrtc"));
}

// The GPU bench of scripts/gpu_check.sh, on ABI 1.2 device buffers (no host copies in the
// timing): a streaming kernel y = 2x + 1 over 64 Mi floats against a device-to-device copy of the
// same bytes (both read 256 MiB and write 256 MiB; best of 10 each), and the launch overhead of
// a one-element kernel (launch + synchronize, mean of 200).
TEST(CudaGpu, StreamingBench) {
  Compiler compiler(test::cuda_config());
  std::string reason = no_device_reason(compiler);
  if (!reason.empty()) GTEST_SKIP() << "no GPU to run on: " << reason;
  PluginRegistry reg({STAX_PLUGIN_DIR});
  std::unique_ptr<Plugin> gpu = reg.create("cuda_nvrtc");
  auto streaming = [](int64_t n) {
    auto kb = std::make_unique<sdk::KernelBuilder>("stream");
    int x = kb->add_buffer("x", sdk::DType::Float32, {n}, sdk::BufferRole::Input);
    int y = kb->add_buffer("y", sdk::DType::Float32, {n}, sdk::BufferRole::Output);
    kb->set_ranges({n});
    kb->set_index_bits(n < (int64_t{1} << 31) ? 32 : 64);
    sdk::BodyBuilder& b = kb->add_body("y");
    int v = b.load(x, b.i(0));
    int t = b.binary(STAX_OP_mul, v, b.constant(2, sdk::DType::Float32));
    b.store(y, b.i(0), b.binary(STAX_OP_add, t, b.constant(1, sdk::DType::Float32)));
    return kb;
  };
  const int64_t n = int64_t{64} << 20;
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  auto big = streaming(n);
  auto tiny = streaming(1);
  std::unique_ptr<CompiledKernel> k = gpu->compile(*big->desc());
  std::unique_ptr<CompiledKernel> k1 = gpu->compile(*tiny->desc());
  void* x = gpu->device_alloc(bytes);
  void* y = gpu->device_alloc(bytes);
  std::vector<float> host(static_cast<size_t>(n), 1.5f);
  gpu->device_copy(STAX_COPY_HOST_TO_DEVICE, x, host.data(), bytes);
  void* buffers[] = {x, y};
  using Clock = std::chrono::steady_clock;
  auto ms_since = [](Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
  };
  double kernel_ms = 1e30, copy_ms = 1e30;
  for (int rep = 0; rep < 10; ++rep) {
    auto t = Clock::now();
    k->run_on_device(buffers, 2);
    gpu->device_synchronize();
    kernel_ms = std::min(kernel_ms, ms_since(t));
    t = Clock::now();
    gpu->device_copy(STAX_COPY_DEVICE_TO_DEVICE, y, x, bytes);
    gpu->device_synchronize();
    copy_ms = std::min(copy_ms, ms_since(t));
  }
  gpu->device_copy(STAX_COPY_DEVICE_TO_HOST, host.data(), y, 4 * sizeof(float));
  k->run_on_device(buffers, 2);
  gpu->device_synchronize();
  gpu->device_copy(STAX_COPY_DEVICE_TO_HOST, host.data(), y, 4 * sizeof(float));
  EXPECT_EQ(host[0], 4.0f);
  auto t = Clock::now();
  for (int rep = 0; rep < 200; ++rep) {
    k1->run_on_device(buffers, 2);
    gpu->device_synchronize();
  }
  double launch_us = ms_since(t) * 1000.0 / 200;
  gpu->device_free(x);
  gpu->device_free(y);
  double gbs = 2.0 * static_cast<double>(bytes) / (kernel_ms * 1e6);
  double copy_gbs = 2.0 * static_cast<double>(bytes) / (copy_ms * 1e6);
  std::printf("[ cuda bench ] y = 2x + 1, 64 Mi floats: %.3f ms, %.0f GB/s; device copy %.3f ms, "
              "%.0f GB/s; kernel at %.0f%% of the copy; launch + sync %.1f us\n",
              kernel_ms, gbs, copy_ms, copy_gbs, 100.0 * copy_ms / kernel_ms, launch_us);
}

}  // namespace
}  // namespace stax
