// plugins/cuda_common without a driver: a missing library and a library that is not a CUDA
// driver are clean UNAVAILABLE errors naming the library (and the missing entry point); the
// launch rules as pure functions on the attributes of devices this machine lacks: the shared
// memory opt-in above 48 KB and its limit, the pointer-alignment check.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

#include "plugins/cuda_common/cuda_driver.h"
#include "plugins/cuda_common/gpu_backend_support.h"

namespace stax::cuda {
namespace {

TEST(CudaDriver, MissingLibraryIsNoDriver) {
  try {
    CudaDriver d("libstax_no_such_cuda_driver.so.1");
    FAIL() << "loaded a missing library";
  } catch (const sdk::PluginError& e) {
    EXPECT_EQ(e.code(), STAX_ERROR_UNAVAILABLE);
    EXPECT_EQ(std::string(e.what()), "no CUDA driver (libstax_no_such_cuda_driver.so.1 not found)");
  }
}

TEST(CudaDriver, LibraryWithoutTheEntryPointsIsRejected) {
  try {
    CudaDriver d("libm.so.6");
    FAIL() << "took libm for a CUDA driver";
  } catch (const sdk::PluginError& e) {
    EXPECT_EQ(e.code(), STAX_ERROR_UNAVAILABLE);
    EXPECT_EQ(std::string(e.what()), "no usable CUDA driver (libm.so.6 lacks cuInit)");
  }
}

TEST(CudaDriver, InstanceOnThisMachine) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h) {
    dlclose(h);
    GTEST_SKIP() << "a CUDA driver is present: the no-driver path is not reachable here";
  }
  try {
    CudaDriver::instance();
    FAIL() << "a driver instance without libcuda.so.1";
  } catch (const sdk::PluginError& e) {
    EXPECT_EQ(e.code(), STAX_ERROR_UNAVAILABLE);
    EXPECT_EQ(std::string(e.what()), "no CUDA driver (libcuda.so.1 not found)");
  }
}

// ---- shared memory above 48 KB and pointer alignment: the pure launch rules ----------------------

namespace shared_rules {

constexpr int64_t kPerBlock = 48 * 1024;    // every CUDA device without the opt-in
constexpr int64_t kH200OptIn = 227 * 1024;  // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN

TEST(CudaSharedMemory, UpTo48KbNeedsNoOptIn) {
  for (int64_t d : {int64_t(0), int64_t(1024), kPerBlock}) {
    SharedMemoryPlan p = plan_shared_memory("k", 0, d, kPerBlock, kH200OptIn);
    EXPECT_FALSE(p.opt_in) << d;
    EXPECT_EQ(p.dynamic, d);
  }
  // static + dynamic counts: 40 KB static leaves 8 KB dynamic without the opt-in
  EXPECT_FALSE(plan_shared_memory("k", 40 * 1024, 8 * 1024, kPerBlock, kH200OptIn).opt_in);
  EXPECT_TRUE(plan_shared_memory("k", 40 * 1024, 8 * 1024 + 1, kPerBlock, kH200OptIn).opt_in);
}

TEST(CudaSharedMemory, Above48KbOptsInUpToTheDeviceLimit) {
  SharedMemoryPlan p = plan_shared_memory("k", 0, 100 * 1024, kPerBlock, kH200OptIn);
  EXPECT_TRUE(p.opt_in);
  EXPECT_EQ(p.dynamic, 100 * 1024);  // the value cuFuncSetAttribute gets
  p = plan_shared_memory("k", 0, kH200OptIn, kPerBlock, kH200OptIn);
  EXPECT_TRUE(p.opt_in);
  EXPECT_EQ(p.dynamic, kH200OptIn);
}

TEST(CudaSharedMemory, MoreThanTheDeviceAllowsNamesKernelAmountAndLimit) {
  try {
    plan_shared_memory("triton_red_kernel3", 1024, kH200OptIn, kPerBlock, kH200OptIn);
    FAIL() << "planned more shared memory than an H200 has";
  } catch (const sdk::PluginError& e) {
    EXPECT_EQ(e.code(), STAX_ERROR_UNSUPPORTED);
    EXPECT_EQ(std::string(e.what()),
              "cuda: kernel 'triton_red_kernel3' needs 233472 bytes of shared memory per block "
              "(1024 static + 232448 dynamic); the device allows at most 232448 (49152 without "
              "opting in)");
  }
  // A device that reports no opt-in (0): 48 KB is the limit.
  EXPECT_THROW(plan_shared_memory("k", 0, kPerBlock + 1, kPerBlock, 0), sdk::PluginError);
  EXPECT_THROW(plan_shared_memory("k", -1, 0, kPerBlock, kH200OptIn), sdk::PluginError);
}

TEST(CudaSharedMemory, OptInLimitsOfArchitecturesWithoutADevice) {
  EXPECT_EQ(shared_memory_optin_for_arch(90), 232448);
  EXPECT_EQ(shared_memory_optin_for_arch(80), 166912);
  EXPECT_EQ(shared_memory_optin_for_arch(86), 101376);
  EXPECT_EQ(shared_memory_optin_for_arch(75), 65536);
  EXPECT_EQ(shared_memory_optin_for_arch(70), 98304);
  EXPECT_EQ(shared_memory_optin_for_arch(42), 49152);  // unknown: no opt-in assumed
}

TEST(CudaPointerAlignment, MisalignedArgumentIsNamed) {
  alignas(64) static char storage[256];
  void* ok[] = {storage, storage + 16, storage + 64, nullptr};
  EXPECT_NO_THROW(check_pointer_alignment("p", "k", ok, 4, {"a", "b", "c", "d"}));
  void* bad[] = {storage, storage + 68};
  try {
    check_pointer_alignment("cuda_triton", "kernel7", bad, 2, {"in_ptr0", "out_ptr0"});
    FAIL() << "a pointer 4 bytes past a 16-byte boundary was accepted";
  } catch (const sdk::PluginError& e) {
    EXPECT_EQ(e.code(), STAX_ERROR_INVALID_ARGUMENT);
    std::string m = e.what();
    EXPECT_EQ(m.rfind("cuda_triton: kernel 'kernel7': argument 1 (out_ptr0) is at 0x", 0), 0u) << m;
    EXPECT_NE(m.find(", not 16-byte aligned"), std::string::npos) << m;
  }
  // 8-byte alignment asked: storage + 8 passes
  void* eight[] = {storage + 8};
  EXPECT_NO_THROW(check_pointer_alignment("p", "k", eight, 1, {}, 8));
  EXPECT_THROW(check_pointer_alignment("p", "k", eight, 1, {}), sdk::PluginError);
}

}  // namespace shared_rules

}  // namespace
}  // namespace stax::cuda
