// What both CUDA plugins (cuda_nvrtc, cuda_triton) share above the driver API: the device opened
// on first use (compiling needs no driver), the device properties the GPU policy plans with
// (the device's, else an H200's for the configured architecture, so that a compile without a
// device plans like one with it), and buffer extents. The policy itself is the SDK's GPU policy:
// sdk::RealizationThresholds::gpu() (seed §6.6) and Backend::split_reduction's
// sdk::split_reduction_gpu (Algorithm 6.1) on these properties.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "plugins/cuda_common/cuda_driver.h"
#include "stax/sdk/backend.hpp"
#include "stax/sdk/loop_body.hpp"

namespace stax::cuda {

inline int64_t dtype_bytes(sdk::DType d) {
  switch (d) {
    case sdk::DType::Float64:
    case sdk::DType::Int64:
    case sdk::DType::UInt64: return 8;
    case sdk::DType::Float32:
    case sdk::DType::Int32:
    case sdk::DType::UInt32: return 4;
    case sdk::DType::Float16:
    case sdk::DType::BFloat16:
    case sdk::DType::Int16:
    case sdk::DType::UInt16: return 2;
    default: return 1;  // int8, uint8, bool
  }
}

// Bytes from a buffer's data pointer to one past its last element.
inline size_t buffer_bytes(const sdk::Buffer& b) {
  int64_t last = b.offset();
  for (size_t d = 0; d < b.sizes().size(); ++d) {
    if (b.sizes()[d] == 0) return 0;
    last += (b.sizes()[d] - 1) * b.strides()[d];
  }
  return static_cast<size_t>((last + 1) * dtype_bytes(b.dtype()));
}

// The alignment a kernel compiled with pointer-divisibility hints (cuda_triton:
// tt.divisibility = 16 on every pointer argument, Inductor's divisibility_16) assumes of every
// pointer it is launched with: its loads and stores may be vectorized on that assumption.
inline constexpr uintptr_t kPointerAlignment = 16;

// Throws PluginError(STAX_ERROR_INVALID_ARGUMENT) naming `plugin`, the kernel, the argument
// (index and `names[i]`) and its address when buffers[i] is not a multiple of `alignment`: a
// misaligned pointer is refused before the launch, never a wrong or faulting vector access.
inline void check_pointer_alignment(const std::string& plugin, const std::string& kernel,
                                    void* const* buffers, size_t n,
                                    const std::vector<std::string>& names,
                                    uintptr_t alignment = kPointerAlignment) {
  for (size_t i = 0; i < n; ++i) {
    uintptr_t p = reinterpret_cast<uintptr_t>(buffers[i]);
    if (p % alignment == 0) continue;
    char addr[32];
    std::snprintf(addr, sizeof addr, "0x%llx", static_cast<unsigned long long>(p));
    throw sdk::PluginError(
        STAX_ERROR_INVALID_ARGUMENT,
        plugin + ": kernel '" + kernel + "': argument " + std::to_string(i) +
            (i < names.size() ? " (" + names[i] + ")" : std::string()) + " is at " + addr +
            ", not " + std::to_string(alignment) +
            "-byte aligned; the kernel was compiled assuming every pointer is (tt.divisibility)");
  }
}

// The device a backend instance drives, opened on first use. Holds the reason when there is none.
class LazyDevice {
 public:
  LazyDevice(int index, std::string plugin) : index_(index), plugin_(std::move(plugin)) {}
  // The device, or nullptr (reason() says why).
  const CudaDevice* get() const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!tried_) {
      tried_ = true;
      try {
        device_ = std::make_unique<CudaDevice>(CudaDriver::instance(), index_);
      } catch (const sdk::PluginError& e) {
        reason_ = e.what();
      }
    }
    return device_.get();
  }
  // The device, or the PluginError saying why there is none.
  const CudaDevice& require() const {
    if (const CudaDevice* d = get()) return *d;
    throw sdk::PluginError(STAX_ERROR_UNAVAILABLE, plugin_ + ": " + reason_);
  }
  // Why there is no device ("" until get() has tried). A copy taken under the lock: another
  // thread may be in get() (properties() and run() of one backend run concurrently).
  std::string reason() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return reason_;
  }

 private:
  int index_;
  std::string plugin_;
  mutable std::mutex mutex_;
  mutable bool tried_ = false;
  mutable std::unique_ptr<CudaDevice> device_;
  mutable std::string reason_;
};

// The properties of `dev`, or (nullptr) those of an H200 (the tuning target, TOOLCHAIN.md) with
// compute capability `cc` and the name `name_without_device`.
inline sdk::DeviceProperties gpu_properties(const CudaDevice* dev, int cc,
                                            const std::string& name_without_device) {
  sdk::DeviceProperties p;
  p.kind = sdk::DeviceKind::CUDA;
  if (dev) {
    const CudaDeviceInfo& i = dev->info();
    p.device_name = i.name;
    p.multiprocessor_count = i.multiprocessor_count;
    p.warp_size = i.warp_size;
    p.max_threads_per_multiprocessor = i.max_threads_per_multiprocessor;
    p.max_threads_per_block = i.max_threads_per_block;
    p.compute_capability = i.compute_capability;
    p.memory_bytes = i.memory_bytes;
    p.l2_cache_bytes = i.l2_cache_bytes;
    p.shared_memory_per_block = i.shared_memory_per_block;
    return p;
  }
  p.device_name = name_without_device;
  p.multiprocessor_count = 132;
  p.warp_size = 32;
  p.max_threads_per_multiprocessor = 2048;
  p.max_threads_per_block = 1024;
  p.compute_capability = cc;
  p.l2_cache_bytes = 60LL << 20;
  p.shared_memory_per_block = 48LL << 10;
  return p;
}

}  // namespace stax::cuda
