// cuda_nvrtc on a real GPU (ctest label `gpu`): the representative e2e set run on the device
// against the reference interpreter. Integers and bools bit for bit; floating outputs within a
// per-dtype tolerance (CUDA's math functions are 1-2 ulp, sums combine in a tree: §6.5). Skips,
// saying why, on a machine without a driver or a device.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

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

// Row sums on device buffers (issue 8's reduction forms): 256 MiB of float32 as 2 Mi rows of 32
// and 512 Ki rows of 128 (the warp form: 16 lanes per row, segmented order) and 8 Ki rows of
// 8192 (the block form), each against the device-to-device copy of the same input bytes (best of
// 10). A row sum reads its input once and writes 1/C of it.
TEST(CudaGpu, ReductionBench) {
  Compiler compiler(test::cuda_config());
  std::string reason = no_device_reason(compiler);
  if (!reason.empty()) GTEST_SKIP() << "no GPU to run on: " << reason;
  PluginRegistry reg({STAX_PLUGIN_DIR});
  std::unique_ptr<Plugin> gpu = reg.create("cuda_nvrtc");
  using Clock = std::chrono::steady_clock;
  auto ms_since = [](Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
  };
  const int64_t total = int64_t{64} << 20;  // floats
  const size_t bytes = static_cast<size_t>(total) * sizeof(float);
  void* x = gpu->device_alloc(bytes);
  void* y = gpu->device_alloc(bytes);
  std::vector<float> host(static_cast<size_t>(total), 0.5f);
  gpu->device_copy(STAX_COPY_HOST_TO_DEVICE, x, host.data(), bytes);
  double copy_ms = 1e30;
  for (int rep = 0; rep < 10; ++rep) {
    auto t = Clock::now();
    gpu->device_copy(STAX_COPY_DEVICE_TO_DEVICE, y, x, bytes);
    gpu->device_synchronize();
    copy_ms = std::min(copy_ms, ms_since(t));
  }
  for (int64_t cols : {int64_t{32}, int64_t{128}, int64_t{8192}}) {
    const int64_t rows = total / cols;
    sdk::KernelBuilder kb("rowsum");
    int in = kb.add_buffer("x", sdk::DType::Float32, {rows, cols}, sdk::BufferRole::Input);
    int out = kb.add_buffer("y", sdk::DType::Float32, {rows}, sdk::BufferRole::Output);
    kb.set_ranges({rows}, {cols});
    kb.set_index_bits(32);
    sdk::BodyBuilder& b = kb.add_body("y", true);
    int v = b.load(in, b.linear({{cols, b.i(0)}, {1, b.r(0)}}));
    b.store_reduction(out, b.i(0), b.reduction(sdk::ReductionType::Sum, sdk::DType::Float32, v));
    std::unique_ptr<CompiledKernel> k = gpu->compile(*kb.desc());
    void* buffers[] = {x, y};
    double ms = 1e30;
    for (int rep = 0; rep < 10; ++rep) {
      auto t = Clock::now();
      k->run_on_device(buffers, 2);
      gpu->device_synchronize();
      ms = std::min(ms, ms_since(t));
    }
    gpu->device_copy(STAX_COPY_DEVICE_TO_HOST, host.data(), y, 4 * sizeof(float));
    EXPECT_EQ(host[0], 0.5f * static_cast<float>(cols));
    double read_gbs = static_cast<double>(bytes) / (ms * 1e6);
    double copy_read_gbs = static_cast<double>(bytes) / (copy_ms * 1e6);
    std::printf("[ cuda bench ] row sum %lld x %lld (%s form): %.3f ms, reads %.0f GB/s = %.0f%% "
                "of the device copy's reads (%.0f GB/s)\n",
                static_cast<long long>(rows), static_cast<long long>(cols),
                cols <= 1024 ? "warp" : "block", ms, read_gbs, 100.0 * read_gbs / copy_read_gbs,
                copy_read_gbs);
  }
  gpu->device_free(x);
  gpu->device_free(y);
}

// A device-resident graph run on the GPU (issue 8): one copy in per input, one out per output,
// results within tolerance of the interpreter; then four threads, each run on its own stream.
TEST(CudaGpu, ResidentGraphCopiesOncePerInputAndOutput) {
  Compiler compiler(test::cuda_config());
  std::string reason = no_device_reason(compiler);
  if (!reason.empty()) GTEST_SKIP() << "no GPU to run on: " << reason;
  Graph g;
  Node* x = g.placeholder("x", {4096, 256});
  Node* y = g.placeholder("y", {4096, 256});
  Node* a = g.call("relu", {g.call("add.Tensor", {x, y})});
  g.output({g.call("sum.dim_IntList", {a, std::vector<int64_t>{-1}}),
            g.call("sum.dim_IntList", {g.call("mul.Tensor", {x, y}), std::vector<int64_t>{0}})});
  CompiledGraph cg = compiler.compile(g);
  std::vector<Tensor> in = test::random_inputs(g, 4);
  RunStats st;
  GraphRunOptions ro;
  ro.stats = &st;
  std::vector<Tensor> got = cg.run(in, ro), want = test::reference(g, in);
  EXPECT_EQ(st.host_to_device, 2u);
  EXPECT_EQ(st.device_to_host, 2u);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i].allclose(want[i], 1e-4, 1e-3)) << i;
  std::vector<int> bad(4, 0);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 5; ++rep) {
        std::vector<Tensor> r = cg.run(in);
        for (size_t i = 0; i < r.size(); ++i) bad[t] += !r[i].allclose(want[i], 1e-4, 1e-3);
      }
    });
  for (std::thread& th : threads) th.join();
  for (size_t t = 0; t < 4; ++t) EXPECT_EQ(bad[t], 0) << "thread " << t;
  // Steady-state run time of the resident graph (copies included), median of 20.
  std::vector<double> times;
  for (int rep = 0; rep < 20; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    cg.run(in);
    times.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  std::printf("[ cuda bench ] resident 2-kernel graph on 2 x 4096 x 256 floats: %.3f ms per run "
              "(median of 20; 8 MiB in, 17 KiB out)\n", times[10]);
}

}  // namespace
}  // namespace stax
