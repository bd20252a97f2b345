// stax::cuda::CudaDriver: the CUDA driver API, loaded at run time with dlopen("libcuda.so.1") and
// never linked, so that the CUDA plugins build and load on machines without a driver (CI, this
// repository's build machines). Shared by cuda_nvrtc and cuda_triton.
//
//   CudaDriver& drv = CudaDriver::instance();     // throws "no CUDA driver (libcuda.so.1 not found)"
//   CudaDevice dev(drv, 0);                       // cuInit + primary context; "no device" if none
//   CudaDeviceInfo info = dev.info();             // SMs, warp, threads/SM, shared memory, cc, ...
//   CudaModule m = dev.load_module(cubin);        // cuModuleLoadData
//   CUfunction f = m.function("kernel0");
//   CUdeviceptr p = dev.alloc(bytes); dev.copy_to_device(p, host, bytes); ...
//   dev.launch(f, {grid, 1, 1}, {block, 1, 1}, params); dev.synchronize(); dev.free(p);
//
// Every failure is an sdk::PluginError: STAX_ERROR_UNAVAILABLE when the driver library or a
// device is missing, STAX_ERROR_RUNTIME for a failing call; the message names the call and the
// driver's error name and text ("cuda: cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY (out of
// memory)"). Only <cuda.h> types are used: the header is never linked against.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "stax/sdk/types.hpp"  // sdk::PluginError, what every failure throws

namespace stax::cuda {

// The driver entry points Stax uses, resolved by name from the loaded library.
struct DriverFunctions {
  CUresult (*cuInit)(unsigned int) = nullptr;
  CUresult (*cuGetErrorName)(CUresult, const char**) = nullptr;
  CUresult (*cuGetErrorString)(CUresult, const char**) = nullptr;
  CUresult (*cuDriverGetVersion)(int*) = nullptr;
  CUresult (*cuDeviceGetCount)(int*) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*cuDeviceGetName)(char*, int, CUdevice) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int*, CUdevice_attribute, CUdevice) = nullptr;
  CUresult (*cuDeviceTotalMem_v2)(size_t*, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRelease_v2)(CUdevice) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuCtxSynchronize)() = nullptr;
  CUresult (*cuModuleLoadData)(CUmodule*, const void*) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*cuFuncGetAttribute)(int*, CUfunction_attribute, CUfunction) = nullptr;
  CUresult (*cuFuncSetAttribute)(CUfunction, CUfunction_attribute, int) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, CUstream, void**, void**) = nullptr;
  CUresult (*cuMemAlloc_v2)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*cuMemFree_v2)(CUdeviceptr) = nullptr;
  CUresult (*cuMemcpyHtoD_v2)(CUdeviceptr, const void*, size_t) = nullptr;
  CUresult (*cuMemcpyDtoH_v2)(void*, CUdeviceptr, size_t) = nullptr;
  CUresult (*cuMemcpyDtoD_v2)(CUdeviceptr, CUdeviceptr, size_t) = nullptr;
  // streams (ABI 1.3)
  CUresult (*cuStreamCreate)(CUstream*, unsigned int) = nullptr;
  CUresult (*cuStreamDestroy_v2)(CUstream) = nullptr;
  CUresult (*cuStreamSynchronize)(CUstream) = nullptr;
  CUresult (*cuMemcpyHtoDAsync_v2)(CUdeviceptr, const void*, size_t, CUstream) = nullptr;
  CUresult (*cuMemcpyDtoHAsync_v2)(void*, CUdeviceptr, size_t, CUstream) = nullptr;
  CUresult (*cuMemcpyDtoDAsync_v2)(CUdeviceptr, CUdeviceptr, size_t, CUstream) = nullptr;
  // page-locked host memory mapped into the device (a kernel's fault record)
  CUresult (*cuMemHostAlloc)(void**, size_t, unsigned int) = nullptr;
  CUresult (*cuMemHostGetDevicePointer_v2)(CUdeviceptr*, void*, unsigned int) = nullptr;
  CUresult (*cuMemFreeHost)(void*) = nullptr;
};

class CudaDriver {
 public:
  // The process-wide driver loaded from "libcuda.so.1" (once; a failed load is retried on the
  // next call). Throws PluginError(STAX_ERROR_UNAVAILABLE, "no CUDA driver (libcuda.so.1 not
  // found)") when the library is missing.
  static CudaDriver& instance();

  // A driver loaded from `library` (tests use a missing name for the no-driver path); the
  // library stays loaded for the life of the process. Throws as instance() does, naming
  // `library`; a library that lacks an entry point is STAX_ERROR_UNAVAILABLE naming the symbol.
  explicit CudaDriver(const std::string& library);

  const DriverFunctions& fn() const { return fn_; }
  const std::string& library() const { return library_; }

  // Throws PluginError(STAX_ERROR_RUNTIME, "cuda: <call> failed: <NAME> (<text>)") unless ok.
  void check(CUresult result, const char* call) const;
  // "<NAME> (<text>)" for a driver result.
  std::string error_text(CUresult result) const;

 private:
  std::string library_;
  DriverFunctions fn_;
};

// What a device reports (the fields of StaxDeviceProperties that a GPU fills).
struct CudaDeviceInfo {
  std::string name;
  int32_t multiprocessor_count = 0;
  int32_t warp_size = 0;
  int32_t max_threads_per_multiprocessor = 0;
  int32_t max_threads_per_block = 0;
  int32_t compute_capability = 0;  // 10 * major + minor
  int64_t memory_bytes = 0;
  int64_t l2_cache_bytes = 0;
  int64_t shared_memory_per_block = 0;
  // What a kernel may use after opting in (CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN):
  // 227 KB on sm_90.
  int64_t shared_memory_per_block_optin = 0;
};

// The CUDA launch rule for shared memory: a kernel gets at most `per_block` bytes (48 KB on every
// CUDA device) of static + dynamic shared memory unless it opts in with
// cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, dynamic), which allows
// static + dynamic up to `optin`. plan_shared_memory decides: opt_in is true when the
// kernel needs more than `per_block`; more than max(per_block, optin) is a PluginError
// (STAX_ERROR_UNSUPPORTED) naming the kernel, the amount and the device's limit. Pure: the unit
// tests give it the attributes of devices this machine does not have.
struct SharedMemoryPlan {
  bool opt_in = false;  // call cuFuncSetAttribute before the launch
  int64_t dynamic = 0;  // its value: the dynamic bytes the launch passes
};
SharedMemoryPlan plan_shared_memory(const std::string& kernel, int64_t static_bytes,
                                    int64_t dynamic_bytes, int64_t per_block, int64_t optin);
// The opt-in limit of an architecture without a device (compile-time checks, a cache entry
// loaded before the device is opened): the CUDA programming guide's table (sm_70 96 KB, sm_75
// 64 KB, sm_80 / sm_87 163 KB, sm_86 / sm_89 / sm_120 99 KB, sm_90 / sm_100 227 KB); 48 KB for an
// architecture it does not list.
int64_t shared_memory_optin_for_arch(int compute_capability);

// A loaded module (cuModuleLoadData); unloads when destroyed. Move-only.
class CudaModule {
 public:
  CudaModule() = default;
  CudaModule(const CudaDriver* driver, CUmodule module) : driver_(driver), module_(module) {}
  CudaModule(CudaModule&& o) noexcept;
  CudaModule& operator=(CudaModule&& o) noexcept;
  CudaModule(const CudaModule&) = delete;
  CudaModule& operator=(const CudaModule&) = delete;
  ~CudaModule();
  // cuModuleGetFunction; throws naming the call and `name`.
  CUfunction function(const std::string& name) const;

 private:
  const CudaDriver* driver_ = nullptr;
  CUmodule module_ = nullptr;
};

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

// One device with its primary context (retained while this object lives). Every method makes
// the context current on the calling thread first.
class CudaDevice {
 public:
  // cuInit, then device `index`. Throws PluginError(STAX_ERROR_UNAVAILABLE, "no device ...") when
  // the driver sees no device or fewer than index + 1.
  CudaDevice(const CudaDriver& driver, int index);
  ~CudaDevice();
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  const CudaDeviceInfo& info() const { return info_; }

  CudaModule load_module(const std::vector<char>& cubin) const;
  // cuLaunchKernel with `shared_bytes` of dynamic shared memory (Triton kernels report theirs);
  // `params` points at each kernel parameter.
  void launch(CUfunction f, Dim3 grid, Dim3 block, void** params, CUstream stream,
              unsigned shared_bytes = 0) const;
  void synchronize() const;
  // Makes `f` launchable with `dynamic_bytes` of dynamic shared memory: plan_shared_memory on its
  // static shared memory (cuFuncGetAttribute) and this device's limits, then the opt-in
  // (cuFuncSetAttribute) when it needs more than 48 KB. Call once per function, before its first
  // launch; throws plan_shared_memory's error naming `kernel`.
  void prepare_shared_memory(CUfunction f, const std::string& kernel,
                             unsigned dynamic_bytes) const;

  CUdeviceptr alloc(size_t bytes) const;  // a zero-byte request allocates one byte
  void free(CUdeviceptr p) const;
  // Page-locked host memory mapped into the device's address space (cuMemHostAlloc with
  // CU_MEMHOSTALLOC_DEVICEMAP), zeroed: kernels write it, the host reads it directly, also after
  // a launch that trapped (the context is then unusable, the host memory is not). *device gets
  // the kernel's pointer. free_host_mapped ignores errors (a context lost to a trap).
  void* alloc_host_mapped(size_t bytes, CUdeviceptr* device) const;
  void free_host_mapped(void* host) const;
  // Copies. With a stream: queued on it (cuMemcpy*Async; from pageable host memory the source
  // is staged before the call returns, to pageable host memory the copy completes first, per the
  // driver API's documentation); without one: synchronous cuMemcpy*.
  void copy_to_device(CUdeviceptr dst, const void* src, size_t bytes,
                      CUstream stream = nullptr) const;
  void copy_to_host(void* dst, CUdeviceptr src, size_t bytes, CUstream stream = nullptr) const;
  void copy_on_device(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                      CUstream stream = nullptr) const;

  // Streams: a non-blocking stream (CU_STREAM_NON_BLOCKING: it does not wait for the legacy
  // default stream); synchronize(stream) waits for it; destroy.
  CUstream stream_create() const;
  void stream_destroy(CUstream stream) const;
  void stream_synchronize(CUstream stream) const;

 private:
  void make_current() const;

  const CudaDriver& driver_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CudaDeviceInfo info_;
};

}  // namespace stax::cuda
