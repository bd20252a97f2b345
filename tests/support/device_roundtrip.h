// ABI 1.2 device memory through the host's Plugin wrapper: Example 1.1's kernel (Listing 6.2) on
// buffers from device_alloc, inputs copied in, launched with run_on_device, the result copied
// out and checked against a sequential sum. Shared by device_memory_test (host-memory backends),
// cuda_emulated_test and cuda_gpu_test.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/backend/plugin.h"
#include "tests/support/example11_kernel.h"

namespace stax::test {

inline void check_example11_on_device(const Plugin& plugin) {
  ASSERT_TRUE(plugin.has_device_memory()) << plugin.name();
  sdk::test::Example11 ex;
  std::unique_ptr<CompiledKernel> k = plugin.compile(*ex.desc);
  std::vector<float> p1(64 * 128), p2(64 * 128), out(64, -1.0f);
  for (size_t i = 0; i < p1.size(); ++i) {
    p1[i] = static_cast<float>((i * 37) % 101) / 50.0f - 1.0f;
    p2[i] = static_cast<float>((i * 53) % 89) / 40.0f - 1.0f;
  }
  const size_t in_bytes = p1.size() * sizeof(float), out_bytes = out.size() * sizeof(float);
  void* d1 = plugin.device_alloc(in_bytes, 64);
  void* d2 = plugin.device_alloc(in_bytes);
  void* d3 = plugin.device_alloc(2 * out_bytes);
  plugin.device_copy(STAX_COPY_HOST_TO_DEVICE, d1, p1.data(), in_bytes);
  plugin.device_copy(STAX_COPY_HOST_TO_DEVICE, d2, p2.data(), in_bytes);
  void* buffers[] = {d1, d2, d3};
  k->run_on_device(buffers, 3);
  plugin.device_synchronize();
  // the result, moved once on the device (d3 -> the second half of d3), then copied out
  void* d3_back = static_cast<char*>(d3) + out_bytes;
  plugin.device_copy(STAX_COPY_DEVICE_TO_DEVICE, d3_back, d3, out_bytes);
  plugin.device_copy(STAX_COPY_DEVICE_TO_HOST, out.data(), d3_back, out_bytes);
  plugin.device_synchronize();
  for (void* d : {d1, d2, d3}) plugin.device_free(d);
  for (int i = 0; i < 64; ++i) {
    float s = 0.0f;
    for (int r = 0; r < 128; ++r) {
      float v = p1[i * 128 + r] + p2[i * 128 + r];
      s += (v < 0.0f ? 0.0f : v) * 2.0f;
    }
    EXPECT_NEAR(out[i], s, 1e-4f * (1.0f + std::fabs(s))) << plugin.name() << " row " << i;
  }
}

}  // namespace stax::test
