// A plugin built against a different ABI MAJOR: only the three fixed fields are meaningful;
// the loader must refuse it before touching anything else (every function pointer is null).

#include "stax/plugin_api.h"

extern "C" STAX_PLUGIN_EXPORT const StaxPluginApi* stax_plugin_api(void) {
  static StaxPluginApi api = {};
  api.struct_size = sizeof(StaxPluginApi);
  api.abi_major = STAX_PLUGIN_API_MAJOR + 1;
  api.abi_minor = 0;
  api.plugin_name = "abi_major";
  return &api;
}
