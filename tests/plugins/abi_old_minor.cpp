// A plugin whose ABI MINOR (0) is older than what the test host requires (the test asks for
// STAX_PLUGIN_API_MINOR + 1, since a MINOR below 0 cannot exist today). Function pointers are
// null: the loader must refuse the version before touching them.

#include "stax/plugin_api.h"

extern "C" STAX_PLUGIN_EXPORT const StaxPluginApi* stax_plugin_api(void) {
  static StaxPluginApi api = {};
  api.struct_size = sizeof(StaxPluginApi);
  api.abi_major = STAX_PLUGIN_API_MAJOR;
  api.abi_minor = 0;
  api.plugin_name = "abi_old_minor";
  return &api;
}
