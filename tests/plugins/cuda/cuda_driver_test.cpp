// plugins/cuda_common without a driver: a missing library and a library that is not a CUDA
// driver are clean UNAVAILABLE errors naming the library (and the missing entry point); the
// launch rules as pure functions on the attributes of devices this machine lacks: the shared
// memory opt-in above 48 KB and its limit, the pointer-alignment check.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

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

// On a device (skipped without one; scripts/gpu_check.sh runs it): a kernel with 100 KB of dynamic
// shared memory (hand-written PTX, JIT-compiled by the driver, so no toolkit is needed) fails to
// launch without the opt-in and runs after prepare_shared_memory; more than the device's limit is
// refused naming the kernel.
TEST(CudaSharedMemory, OptInAbove48KbLaunchesOnTheDevice) {
  std::unique_ptr<CudaDevice> dev;
  try {
    dev = std::make_unique<CudaDevice>(CudaDriver::instance(), 0);
  } catch (const sdk::PluginError& e) {
    GTEST_SKIP() << "no GPU to run on: " << e.what();
  }
  static const char kPtx[] =
    ".version 7.0\n"
    ".target sm_75\n"
    ".address_size 64\n"
    ".extern .shared .align 16 .b8 stax_smem[];\n"
    ".visible .entry stax_reverse_through_shared(.param .u64 out, .param .u32 n)\n"
    "{\n"
    "  .reg .pred %p<3>;\n"
    "  .reg .b32 %r<8>;\n"
    "  .reg .b64 %rd<8>;\n"
    "  .reg .f32 %f<3>;\n"
    "  ld.param.u64 %rd1, [out];\n"
    "  ld.param.u32 %r1, [n];\n"
    "  cvta.to.global.u64 %rd2, %rd1;\n"
    "  mov.u32 %r2, %tid.x;\n"
    "  mov.u32 %r3, %ntid.x;\n"
    "  mov.u64 %rd4, stax_smem;\n"
    "  mov.u32 %r4, %r2;\n"
    "FILL:\n"
    "  setp.ge.u32 %p1, %r4, %r1;\n"
    "  @%p1 bra FILLED;\n"
    "  cvt.rn.f32.u32 %f1, %r4;\n"
    "  mul.wide.u32 %rd3, %r4, 4;\n"
    "  add.u64 %rd5, %rd4, %rd3;\n"
    "  st.shared.f32 [%rd5], %f1;\n"
    "  add.u32 %r4, %r4, %r3;\n"
    "  bra FILL;\n"
    "FILLED:\n"
    "  bar.sync 0;\n"
    "  sub.u32 %r5, %r1, 1;\n"
    "  mov.u32 %r4, %r2;\n"
    "COPY:\n"
    "  setp.ge.u32 %p2, %r4, %r1;\n"
    "  @%p2 bra DONE;\n"
    "  sub.u32 %r6, %r5, %r4;\n"
    "  mul.wide.u32 %rd3, %r6, 4;\n"
    "  add.u64 %rd5, %rd4, %rd3;\n"
    "  ld.shared.f32 %f2, [%rd5];\n"
    "  mul.wide.u32 %rd6, %r4, 4;\n"
    "  add.u64 %rd7, %rd2, %rd6;\n"
    "  st.global.f32 [%rd7], %f2;\n"
    "  add.u32 %r4, %r4, %r3;\n"
    "  bra COPY;\n"
    "DONE:\n"
    "  ret;\n"
    "}\n";
  const int64_t optin = dev->info().shared_memory_per_block_optin;
  if (optin < 100 * 1024) GTEST_SKIP() << "the device allows only " << optin << " bytes";
  CudaModule m = dev->load_module(std::vector<char>(kPtx, kPtx + sizeof kPtx));
  CUfunction f = m.function("stax_reverse_through_shared");
  const unsigned n = 25600, bytes = n * 4;  // 100 KB
  CUdeviceptr out = dev->alloc(bytes);
  uint64_t out_arg = out;
  unsigned n_arg = n;
  void* params[] = {&out_arg, &n_arg};
  EXPECT_THROW(dev->launch(f, {1, 1, 1}, {256, 1, 1}, params, nullptr, bytes), sdk::PluginError)
      << "100 KB of dynamic shared memory launched without the opt-in";
  dev->prepare_shared_memory(f, "stax_reverse_through_shared", bytes);
  dev->launch(f, {1, 1, 1}, {256, 1, 1}, params, nullptr, bytes);
  dev->synchronize();
  std::vector<float> host(n);
  dev->copy_to_host(host.data(), out, bytes);
  dev->free(out);
  for (unsigned i = 0; i < n; i += 997) EXPECT_EQ(host[i], static_cast<float>(n - 1 - i)) << i;
  EXPECT_EQ(host[n - 1], 0.0f);
  try {
    dev->prepare_shared_memory(f, "stax_reverse_through_shared",
                               static_cast<unsigned>(optin) + 1);
    FAIL() << "opted in above the device's limit";
  } catch (const sdk::PluginError& e) {
    EXPECT_NE(std::string(e.what()).find("kernel 'stax_reverse_through_shared' needs"),
              std::string::npos)
        << e.what();
  }
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
