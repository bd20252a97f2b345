// cuda_triton on a real GPU (ctest label `gpu`; scripts/gpu_check.sh): the representative e2e set
// on the device against the reference interpreter (integers and bools bit for bit, floating
// outputs within a per-dtype tolerance: libdevice's functions are 1-2 ulp, sums combine in a
// tree), ABI 1.2 device memory, and the side-by-side bench: a streaming kernel and a row sum
// compiled by cuda_triton and by cuda_nvrtc against a device-to-device copy of the same bytes,
// and Triton's compile time per kernel cold (an empty TRITON_CACHE_DIR) and from its cache.
// Skips, saying why, without a driver, a device or the triton Python package.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "core/backend/plugin_registry.h"
#include "stax/sdk/kernel_builder.hpp"
#include "tests/support/cuda_e2e.h"
#include "tests/support/device_roundtrip.h"

namespace stax {
namespace {

Config triton_config() {
  Config c = test::cuda_config();
  c.devices["cuda"].backend = "cuda_triton";
  return c;
}

// Why kernels cannot run here ("" when they can).
std::string no_device_reason(Compiler& compiler) {
  if (void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    dlclose(h);
  } else {
    return "no CUDA driver (libcuda.so.1 not found)";
  }
  if (std::system("python3 -c 'import triton' > /dev/null 2>&1") != 0)
    return "the triton Python package is not installed";
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

#define REQUIRE_GPU(compiler)                                     \
  do {                                                            \
    std::string reason = no_device_reason(compiler);              \
    if (!reason.empty()) GTEST_SKIP() << "no GPU to run on: " << reason; \
  } while (0)

void tolerance(DType dt, double* rtol, double* atol) {
  switch (dt) {
    case DType::Float64: *rtol = 1e-10; *atol = 1e-9; break;
    case DType::Float32: *rtol = 1e-4; *atol = 1e-3; break;
    default: *rtol = 2e-2; *atol = 2e-2; break;
  }
}

TEST(CudaTritonGpu, E2eSetMatchesTheInterpreter) {
  Compiler compiler(triton_config());
  REQUIRE_GPU(compiler);
  for (const test::E2eCase& c : test::cuda_e2e_cases()) {
    SCOPED_TRACE(c.name);
    std::vector<Tensor> got = compiler.compile(c.graph).run(c.inputs);
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

TEST(CudaTritonGpu, DeviceMemoryRoundTrip) {
  Compiler compiler(triton_config());
  REQUIRE_GPU(compiler);
  PluginRegistry reg({STAX_PLUGIN_DIR});
  test::check_example11_on_device(*reg.create("cuda_triton"));
}

std::unique_ptr<sdk::KernelBuilder> streaming(int64_t n) {
  auto kb = std::make_unique<sdk::KernelBuilder>("stream");
  int x = kb->add_buffer("x", sdk::DType::Float32, {n}, sdk::BufferRole::Input);
  int y = kb->add_buffer("y", sdk::DType::Float32, {n}, sdk::BufferRole::Output);
  kb->set_ranges({n});
  kb->set_index_bits(32);
  sdk::BodyBuilder& b = kb->add_body("y");
  int v = b.load(x, b.i(0));
  int t = b.binary(STAX_OP_mul, v, b.constant(2, sdk::DType::Float32));
  b.store(y, b.i(0), b.binary(STAX_OP_add, t, b.constant(1, sdk::DType::Float32)));
  return kb;
}

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// Best of 10 runs of `k` on device buffers.
double best_ms(const Plugin& gpu, CompiledKernel& k, void** buffers, size_t n) {
  double best = 1e30;
  for (int rep = 0; rep < 10; ++rep) {
    auto t = Clock::now();
    k.run_on_device(buffers, n);
    gpu.device_synchronize();
    best = std::min(best, ms_since(t));
  }
  return best;
}

TEST(CudaTritonGpu, SideBySideBenchAndCompileTime) {
  Compiler compiler(triton_config());
  REQUIRE_GPU(compiler);
  // Triton's compile cache: empty for the cold figure.
  std::string cache = (std::filesystem::temp_directory_path() / "stax_triton_cacheXXXXXX").string();
  ASSERT_NE(::mkdtemp(cache.data()), nullptr);
  ::setenv("TRITON_CACHE_DIR", cache.c_str(), 1);
  PluginRegistry reg({STAX_PLUGIN_DIR});
  std::unique_ptr<Plugin> triton = reg.create("cuda_triton");
  std::unique_ptr<Plugin> nvrtc = reg.create("cuda_nvrtc");
  const int64_t n = int64_t{64} << 20;
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  auto big = streaming(n);
  // Warm the workers (Python start-up and `import triton` are not compile time).
  auto tiny = streaming(1);
  std::unique_ptr<CompiledKernel> warm = triton->compile(*tiny->desc());
  void* x = triton->device_alloc(bytes);
  void* y = triton->device_alloc(bytes);
  void* buffers[] = {x, y};
  warm->run_on_device(buffers, 2);
  triton->device_synchronize();
  auto t = Clock::now();
  std::unique_ptr<CompiledKernel> kt = triton->compile(*big->desc());
  kt->run_on_device(buffers, 2);  // waits for the cubin
  triton->device_synchronize();
  double cold_ms = ms_since(t);
  std::unique_ptr<Plugin> triton2 = reg.create("cuda_triton");  // new workers, same cache
  std::unique_ptr<CompiledKernel> warm2 = triton2->compile(*tiny->desc());
  warm2->run_on_device(buffers, 2);
  t = Clock::now();
  std::unique_ptr<CompiledKernel> kt2 = triton2->compile(*big->desc());
  kt2->run_on_device(buffers, 2);
  triton2->device_synchronize();
  double cached_ms = ms_since(t);
  std::unique_ptr<CompiledKernel> kn = nvrtc->compile(*big->desc());
  std::vector<float> host(static_cast<size_t>(n), 1.5f);
  triton->device_copy(STAX_COPY_HOST_TO_DEVICE, x, host.data(), bytes);
  double triton_ms = best_ms(*triton, *kt, buffers, 2);
  double nvrtc_ms = best_ms(*nvrtc, *kn, buffers, 2);
  double copy_ms = 1e30;
  for (int rep = 0; rep < 10; ++rep) {
    t = Clock::now();
    triton->device_copy(STAX_COPY_DEVICE_TO_DEVICE, y, x, bytes);
    triton->device_synchronize();
    copy_ms = std::min(copy_ms, ms_since(t));
  }
  kt->run_on_device(buffers, 2);
  triton->device_synchronize();
  triton->device_copy(STAX_COPY_DEVICE_TO_HOST, host.data(), y, 4 * sizeof(float));
  EXPECT_EQ(host[0], 4.0f);
  triton->device_free(x);
  triton->device_free(y);
  auto gbs = [&](double ms) { return 2.0 * static_cast<double>(bytes) / (ms * 1e6); };
  std::printf("[ cuda_triton bench ] y = 2x + 1, 64 Mi floats: triton %.3f ms %.0f GB/s (%.0f%% "
              "of copy), nvrtc %.3f ms %.0f GB/s (%.0f%%), device copy %.3f ms %.0f GB/s\n",
              triton_ms, gbs(triton_ms), 100 * copy_ms / triton_ms, nvrtc_ms, gbs(nvrtc_ms),
              100 * copy_ms / nvrtc_ms, copy_ms, gbs(copy_ms));
  std::printf("[ cuda_triton compile ] streaming kernel: %.0f ms cold (empty cache, incl. module "
              "load and first launch), %.0f ms from Triton's cache\n",
              cold_ms, cached_ms);
  std::filesystem::remove_all(cache);
  ::unsetenv("TRITON_CACHE_DIR");
}

// The same row sums on both plugins (softmax-sized rows and long rows: the persistent and the
// looped Triton forms) through the whole executor, timed end to end (host copies included).
TEST(CudaTritonGpu, RowReductionsSideBySide) {
  Compiler triton(triton_config());
  REQUIRE_GPU(triton);
  Compiler nvrtc(test::cuda_config());
  for (int64_t cols : {int64_t{1024}, int64_t{16384}}) {
    Graph g;
    Node* x = g.placeholder("x", {4096, cols});
    g.output({g.call("sum.dim_IntList", {g.call("mul.Tensor", {x, x}), std::vector<int64_t>{-1}})});
    std::vector<Tensor> in = {Tensor::randn({4096, cols}, DType::Float32, 3)};
    CompiledGraph ct = triton.compile(g), cn = nvrtc.compile(g);
    Tensor a = ct.run(in)[0], b = cn.run(in)[0];
    EXPECT_TRUE(a.allclose(b, 1e-4, 1e-3));
    auto time = [&](CompiledGraph& cg) {
      double best = 1e30;
      for (int rep = 0; rep < 5; ++rep) {
        auto t = Clock::now();
        cg.run(in);
        best = std::min(best, ms_since(t));
      }
      return best;
    };
    std::printf("[ cuda_triton bench ] (x*x).sum(-1), 4096 x %lld, end to end incl. host copies: "
                "triton %.2f ms, nvrtc %.2f ms\n",
                static_cast<long long>(cols), time(ct), time(cn));
  }
}

}  // namespace
}  // namespace stax
