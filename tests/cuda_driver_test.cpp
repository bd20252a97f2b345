// plugins/cuda_common without a driver: a missing library and a library that is not a CUDA
// driver are clean UNAVAILABLE errors naming the library (and the missing entry point).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

#include "plugins/cuda_common/cuda_driver.h"

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

}  // namespace
}  // namespace stax::cuda
