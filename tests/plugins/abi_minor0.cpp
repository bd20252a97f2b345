// A working plugin that reports ABI 1.0 (what a plugin built against the 1.0 SDK reports): the
// toy_cpu backend under another name, its table stamped minor 0 and cut to the 1.0 table's size
// (no 1.2 device-memory functions). The host must load and run it: 1.1 only appended
// StaxKernelDesc.index_bits, a field the host writes, and the host calls 1.2 functions only when
// the table holds them.
#include <cstddef>

#include "stax/sdk/plugin.hpp"

// toy_cpu.cpp ends with STAX_DEFINE_PLUGIN(ToyCpuBackend); here it only names the backend, and
// this file defines the entry point.
#undef STAX_DEFINE_PLUGIN
#define STAX_DEFINE_PLUGIN(BackendClass) using ToyBackend = BackendClass;
#include "toy_cpu.cpp"

extern "C" STAX_PLUGIN_EXPORT const StaxPluginApi* stax_plugin_api(void) {
  static const StaxPluginApi api = [] {
    StaxPluginApi t = *stax::sdk::detail::Adapter<ToyBackend>::table();
    t.abi_minor = 0;
    t.struct_size = offsetof(StaxPluginApi, device_alloc);
    t.plugin_name = "abi_minor0";
    return t;
  }();
  return &api;
}
