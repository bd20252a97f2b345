#include "plugins/cuda_common/cuda_driver.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>

#include <memory>
#include <mutex>
#include <utility>

#include "stax/sdk/types.hpp"

namespace stax::cuda {

namespace {

using sdk::PluginError;

constexpr const char* kDefaultLibrary = "libcuda.so.1";

template <class Fn>
void resolve(void* handle, const std::string& library, const char* symbol, Fn*& out) {
  void* p = dlsym(handle, symbol);
  if (!p)
    throw PluginError(STAX_ERROR_UNAVAILABLE, "no usable CUDA driver (" + library + " lacks " +
                                                  symbol + ")");
  out = reinterpret_cast<Fn*>(p);
}

}  // namespace

CudaDriver& CudaDriver::instance() {
  static std::mutex mutex;
  static std::unique_ptr<CudaDriver> driver;
  std::lock_guard<std::mutex> lock(mutex);
  if (!driver) driver = std::make_unique<CudaDriver>(kDefaultLibrary);
  return *driver;
}

CudaDriver::CudaDriver(const std::string& library) : library_(library) {
  // Never closed: modules and contexts of the driver may outlive any owner we could give it.
  void* h = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h)
    throw PluginError(STAX_ERROR_UNAVAILABLE, "no CUDA driver (" + library + " not found)");
#define STAX_CUDA_RESOLVE(name) resolve(h, library, #name, fn_.name)
  STAX_CUDA_RESOLVE(cuInit);
  STAX_CUDA_RESOLVE(cuGetErrorName);
  STAX_CUDA_RESOLVE(cuGetErrorString);
  STAX_CUDA_RESOLVE(cuDriverGetVersion);
  STAX_CUDA_RESOLVE(cuDeviceGetCount);
  STAX_CUDA_RESOLVE(cuDeviceGet);
  STAX_CUDA_RESOLVE(cuDeviceGetName);
  STAX_CUDA_RESOLVE(cuDeviceGetAttribute);
  STAX_CUDA_RESOLVE(cuDeviceTotalMem_v2);
  STAX_CUDA_RESOLVE(cuDevicePrimaryCtxRetain);
  STAX_CUDA_RESOLVE(cuDevicePrimaryCtxRelease_v2);
  STAX_CUDA_RESOLVE(cuCtxSetCurrent);
  STAX_CUDA_RESOLVE(cuCtxSynchronize);
  STAX_CUDA_RESOLVE(cuModuleLoadData);
  STAX_CUDA_RESOLVE(cuModuleUnload);
  STAX_CUDA_RESOLVE(cuModuleGetFunction);
  STAX_CUDA_RESOLVE(cuFuncGetAttribute);
  STAX_CUDA_RESOLVE(cuFuncSetAttribute);
  STAX_CUDA_RESOLVE(cuLaunchKernel);
  STAX_CUDA_RESOLVE(cuMemAlloc_v2);
  STAX_CUDA_RESOLVE(cuMemFree_v2);
  STAX_CUDA_RESOLVE(cuMemcpyHtoD_v2);
  STAX_CUDA_RESOLVE(cuMemcpyDtoH_v2);
  STAX_CUDA_RESOLVE(cuMemcpyDtoD_v2);
  STAX_CUDA_RESOLVE(cuStreamCreate);
  STAX_CUDA_RESOLVE(cuStreamDestroy_v2);
  STAX_CUDA_RESOLVE(cuStreamSynchronize);
  STAX_CUDA_RESOLVE(cuMemcpyHtoDAsync_v2);
  STAX_CUDA_RESOLVE(cuMemcpyDtoHAsync_v2);
  STAX_CUDA_RESOLVE(cuMemcpyDtoDAsync_v2);
  STAX_CUDA_RESOLVE(cuMemHostAlloc);
  STAX_CUDA_RESOLVE(cuMemHostGetDevicePointer_v2);
  STAX_CUDA_RESOLVE(cuMemFreeHost);
#undef STAX_CUDA_RESOLVE
}

std::string CudaDriver::error_text(CUresult result) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (fn_.cuGetErrorName(result, &name) != CUDA_SUCCESS || !name) name = "CUDA_ERROR_UNKNOWN";
  if (fn_.cuGetErrorString(result, &text) != CUDA_SUCCESS || !text) text = "unknown error";
  return std::string(name) + " (" + text + ")";
}

void CudaDriver::check(CUresult result, const char* call) const {
  if (result == CUDA_SUCCESS) return;
  throw PluginError(STAX_ERROR_RUNTIME,
                    std::string("cuda: ") + call + " failed: " + error_text(result));
}

// ---- shared memory ----

SharedMemoryPlan plan_shared_memory(const std::string& kernel, int64_t static_bytes,
                                    int64_t dynamic_bytes, int64_t per_block, int64_t optin) {
  if (static_bytes < 0 || dynamic_bytes < 0)
    throw PluginError(STAX_ERROR_INVALID_ARGUMENT,
                      "cuda: kernel '" + kernel + "' reports a negative shared memory size");
  const int64_t total = static_bytes + dynamic_bytes;
  const int64_t limit = std::max(per_block, optin);
  if (total > limit)
    throw PluginError(
        STAX_ERROR_UNSUPPORTED,
        "cuda: kernel '" + kernel + "' needs " + std::to_string(total) +
            " bytes of shared memory per block (" + std::to_string(static_bytes) + " static + " +
            std::to_string(dynamic_bytes) + " dynamic); the device allows at most " +
            std::to_string(limit) + " (" + std::to_string(per_block) + " without opting in)");
  SharedMemoryPlan plan;
  plan.dynamic = dynamic_bytes;
  plan.opt_in = total > per_block;
  return plan;
}

int64_t shared_memory_optin_for_arch(int cc) {
  switch (cc) {
    case 70: case 72: return 96 * 1024;
    case 75: return 64 * 1024;
    case 80: case 87: return 163 * 1024;
    case 86: case 89: case 120: case 121: return 99 * 1024;
    case 90: case 100: case 101: case 103: return 227 * 1024;
    default: return 48 * 1024;
  }
}

// ---- CudaModule ----

CudaModule::CudaModule(CudaModule&& o) noexcept
    : driver_(std::exchange(o.driver_, nullptr)), module_(std::exchange(o.module_, nullptr)) {}

CudaModule& CudaModule::operator=(CudaModule&& o) noexcept {
  if (this != &o) {
    this->~CudaModule();
    driver_ = std::exchange(o.driver_, nullptr);
    module_ = std::exchange(o.module_, nullptr);
  }
  return *this;
}

CudaModule::~CudaModule() {
  if (driver_ && module_) driver_->fn().cuModuleUnload(module_);  // nothing to report it to
}

CUfunction CudaModule::function(const std::string& name) const {
  if (!driver_ || !module_)
    throw PluginError(STAX_ERROR_INVALID_ARGUMENT, "cuda: function '" + name + "' of no module");
  CUfunction f = nullptr;
  CUresult r = driver_->fn().cuModuleGetFunction(&f, module_, name.c_str());
  if (r != CUDA_SUCCESS)
    throw PluginError(STAX_ERROR_RUNTIME, "cuda: cuModuleGetFunction('" + name +
                                              "') failed: " + driver_->error_text(r));
  return f;
}

// ---- CudaDevice ----

CudaDevice::CudaDevice(const CudaDriver& driver, int index) : driver_(driver) {
  const DriverFunctions& f = driver_.fn();
  CUresult init = f.cuInit(0);
  if (init == CUDA_ERROR_NO_DEVICE)
    throw PluginError(STAX_ERROR_UNAVAILABLE, "no device (the CUDA driver reports none)");
  driver_.check(init, "cuInit");
  int count = 0;
  driver_.check(f.cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (count <= index)
    throw PluginError(STAX_ERROR_UNAVAILABLE,
                      "no device cuda:" + std::to_string(index) + " (the CUDA driver reports " +
                          std::to_string(count) + (count == 1 ? " device)" : " devices)"));
  driver_.check(f.cuDeviceGet(&device_, index), "cuDeviceGet");
  char name[256] = {0};
  driver_.check(f.cuDeviceGetName(name, sizeof name - 1, device_), "cuDeviceGetName");
  info_.name = name;
  auto attr = [&](CUdevice_attribute a) {
    int v = 0;
    driver_.check(f.cuDeviceGetAttribute(&v, a, device_), "cuDeviceGetAttribute");
    return v;
  };
  info_.multiprocessor_count = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  info_.warp_size = attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  info_.max_threads_per_multiprocessor = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  info_.max_threads_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  info_.compute_capability = 10 * attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) +
                             attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  info_.l2_cache_bytes = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  info_.shared_memory_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  info_.shared_memory_per_block_optin = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  size_t mem = 0;
  driver_.check(f.cuDeviceTotalMem_v2(&mem, device_), "cuDeviceTotalMem_v2");
  info_.memory_bytes = static_cast<int64_t>(mem);
  driver_.check(f.cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain");
}

CudaDevice::~CudaDevice() {
  if (context_) driver_.fn().cuDevicePrimaryCtxRelease_v2(device_);
}

void CudaDevice::make_current() const {
  driver_.check(driver_.fn().cuCtxSetCurrent(context_), "cuCtxSetCurrent");
}

CudaModule CudaDevice::load_module(const std::vector<char>& cubin) const {
  make_current();
  CUmodule m = nullptr;
  driver_.check(driver_.fn().cuModuleLoadData(&m, cubin.data()), "cuModuleLoadData");
  return CudaModule(&driver_, m);
}

void CudaDevice::launch(CUfunction f, Dim3 grid, Dim3 block, void** params, CUstream stream,
                        unsigned shared_bytes) const {
  make_current();
  driver_.check(driver_.fn().cuLaunchKernel(f, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                            shared_bytes, stream, params, nullptr),
                "cuLaunchKernel");
}

void CudaDevice::prepare_shared_memory(CUfunction f, const std::string& kernel,
                                       unsigned dynamic_bytes) const {
  make_current();
  int static_bytes = 0;
  driver_.check(driver_.fn().cuFuncGetAttribute(&static_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                                                f),
                "cuFuncGetAttribute(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)");
  SharedMemoryPlan plan =
      plan_shared_memory(kernel, static_bytes, dynamic_bytes, info_.shared_memory_per_block,
                         info_.shared_memory_per_block_optin);
  if (plan.opt_in)
    driver_.check(driver_.fn().cuFuncSetAttribute(
                      f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                      static_cast<int>(plan.dynamic)),
                  "cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)");
}

void CudaDevice::synchronize() const {
  make_current();
  driver_.check(driver_.fn().cuCtxSynchronize(), "cuCtxSynchronize");
}

CUdeviceptr CudaDevice::alloc(size_t bytes) const {
  make_current();
  CUdeviceptr p = 0;
  driver_.check(driver_.fn().cuMemAlloc_v2(&p, bytes == 0 ? 1 : bytes), "cuMemAlloc_v2");
  return p;
}

void* CudaDevice::alloc_host_mapped(size_t bytes, CUdeviceptr* device) const {
  make_current();
  constexpr unsigned kDeviceMap = 0x02;  // CU_MEMHOSTALLOC_DEVICEMAP
  void* host = nullptr;
  driver_.check(driver_.fn().cuMemHostAlloc(&host, bytes == 0 ? 1 : bytes, kDeviceMap),
                "cuMemHostAlloc");
  CUresult r = driver_.fn().cuMemHostGetDevicePointer_v2(device, host, 0);
  if (r != 0) {
    driver_.fn().cuMemFreeHost(host);
    driver_.check(r, "cuMemHostGetDevicePointer_v2");
  }
  std::memset(host, 0, bytes);
  return host;
}

void CudaDevice::free_host_mapped(void* host) const {
  if (!host) return;
  driver_.fn().cuCtxSetCurrent(context_);
  driver_.fn().cuMemFreeHost(host);
}

void CudaDevice::free(CUdeviceptr p) const {
  if (!p) return;
  make_current();
  driver_.check(driver_.fn().cuMemFree_v2(p), "cuMemFree_v2");
}

void CudaDevice::copy_to_device(CUdeviceptr dst, const void* src, size_t bytes,
                                CUstream stream) const {
  if (bytes == 0) return;
  make_current();
  if (stream)
    driver_.check(driver_.fn().cuMemcpyHtoDAsync_v2(dst, src, bytes, stream),
                  "cuMemcpyHtoDAsync_v2");
  else
    driver_.check(driver_.fn().cuMemcpyHtoD_v2(dst, src, bytes), "cuMemcpyHtoD_v2");
}

void CudaDevice::copy_to_host(void* dst, CUdeviceptr src, size_t bytes, CUstream stream) const {
  if (bytes == 0) return;
  make_current();
  if (stream)
    driver_.check(driver_.fn().cuMemcpyDtoHAsync_v2(dst, src, bytes, stream),
                  "cuMemcpyDtoHAsync_v2");
  else
    driver_.check(driver_.fn().cuMemcpyDtoH_v2(dst, src, bytes), "cuMemcpyDtoH_v2");
}

void CudaDevice::copy_on_device(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                                CUstream stream) const {
  if (bytes == 0) return;
  make_current();
  if (stream)
    driver_.check(driver_.fn().cuMemcpyDtoDAsync_v2(dst, src, bytes, stream),
                  "cuMemcpyDtoDAsync_v2");
  else
    driver_.check(driver_.fn().cuMemcpyDtoD_v2(dst, src, bytes), "cuMemcpyDtoD_v2");
}

CUstream CudaDevice::stream_create() const {
  make_current();
  CUstream s = nullptr;
  driver_.check(driver_.fn().cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  return s;
}

void CudaDevice::stream_destroy(CUstream stream) const {
  if (!stream) return;
  make_current();
  driver_.check(driver_.fn().cuStreamDestroy_v2(stream), "cuStreamDestroy_v2");
}

void CudaDevice::stream_synchronize(CUstream stream) const {
  if (!stream) return synchronize();
  make_current();
  driver_.check(driver_.fn().cuStreamSynchronize(stream), "cuStreamSynchronize");
}

}  // namespace stax::cuda
