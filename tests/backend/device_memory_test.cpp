// ABI 1.2 device memory on host-memory backends (the SDK's defaults, cpu_cpp) and its absence in a
// plugin built against ABI 1.0 (a clean "unsupported" error; the plugin still loads and runs).
#include <gtest/gtest.h>

#include "core/backend/plugin_registry.h"
#include "tests/support/device_roundtrip.h"

namespace stax {
namespace {

TEST(DeviceMemory, CpuBackendUsesHostMemory) {
  PluginRegistry reg({STAX_PLUGIN_DIR});
  std::unique_ptr<Plugin> cpu = reg.create("cpu_cpp");
  test::check_example11_on_device(*cpu);
  void* p = cpu->device_alloc(100, 256);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 256, 0u);
  cpu->device_free(p);
  cpu->device_free(nullptr);
}

TEST(DeviceMemory, BadAlignmentIsRejected) {
  PluginRegistry reg({STAX_PLUGIN_DIR});
  std::unique_ptr<Plugin> cpu = reg.create("cpu_cpp");
  try {
    cpu->device_alloc(16, 48);
    FAIL() << "accepted alignment 48";
  } catch (const PluginCallError& e) {
    EXPECT_EQ(e.code(), STAX_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("alignment 48 is not a power of two"), std::string::npos)
        << e.what();
  }
}

TEST(DeviceMemory, AbiMinorZeroPluginHasNoDeviceMemory) {
  PluginRegistry reg({std::filesystem::path(STAX_BINARY_DIR) / "test_plugins"});
  std::unique_ptr<Plugin> old = reg.create("abi_minor0");
  EXPECT_FALSE(old->has_device_memory());
  try {
    old->device_alloc(16);
    FAIL() << "device_alloc on an ABI 1.0 plugin";
  } catch (const PluginCallError& e) {
    EXPECT_EQ(e.code(), STAX_ERROR_UNSUPPORTED);
    EXPECT_NE(std::string(e.what()).find("plugin 'abi_minor0': device_alloc: the plugin's ABI "
                                         "1.0 has no device memory functions (ABI 1.2)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace stax
