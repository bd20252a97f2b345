// Conversions from what a plugin reports (the C structs of sdk/include/stax/plugin_api.h and the
// SDK's C++ mirrors) to core's BackendPolicy parts (core/policy/backend_policy.h). Used by
// PluginRegistry::policy, which builds the policy once per device kind.
#pragma once

#include <string>

#include "core/policy/backend_policy.h"
#include "stax/plugin_api.h"
#include "stax/sdk/backend.hpp"

namespace stax {

// The plugin's C struct (fields beyond its struct_size keep the CPU defaults; opcodes that are
// not ops of this build are ignored).
RealizationThresholds realization_thresholds_from_c(const StaxRealizationThresholds& c);
// The SDK's C++ mirror (stax/sdk/backend.hpp, same field names).
RealizationThresholds realization_thresholds_from_sdk(const sdk::RealizationThresholds& t);
// The device properties a backend reported, with its kind's name ("cpu", "cuda").
DeviceInfo device_info_from_sdk(const sdk::DeviceProperties& p, const std::string& kind);

}  // namespace stax
