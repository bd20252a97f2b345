// A plugin built against a different ABI MAJOR: only the three fixed fields are meaningful;
// the loader must refuse it before touching anything else (every function pointer is null).
#include <boost/dll/alias.hpp>

#include "stax/plugin_api.h"

extern "C" const StaxPluginApi* abi_major_api() {
  static StaxPluginApi api = {};
  api.struct_size = sizeof(StaxPluginApi);
  api.abi_major = STAX_PLUGIN_API_MAJOR + 1;
  api.abi_minor = 0;
  api.plugin_name = "abi_major";
  return &api;
}
BOOST_DLL_ALIAS(abi_major_api, stax_plugin_api)
