// PluginRegistry: the explicit owner of loaded plugins (no global registry). It knows the search
// path and, when built from a Config, which backend and options serve each device kind.
//
//   PluginRegistry reg(config);
//   Plugin& cpu = reg.backend("cpu");          // loads libstax_cpu_cpp.so, configures it once
//   auto t = reg.thresholds("cpu");             // backend's §6.6 values + config overrides
//   BackendPolicy p = reg.policy("cpu");        // what lowering and the scheduler ask of it
//
// Libraries are loaded once per name; backends are created once per (device kind, index).
// Not thread-safe: one registry per compilation session, or guard it.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/backend/plugin.h"
#include "core/config/config.h"
#include "core/policy/backend_policy.h"
#include "stax/sdk/backend.hpp"

namespace stax {

class PluginLibrary;

class PluginRegistry {
 public:
  // Only a search path: backends come from create().
  explicit PluginRegistry(std::vector<std::filesystem::path> search_path);
  // Search path, devices and realization overrides from the config. Throws stax::Error naming
  // the device, the backend and the search path when a configured device's plugin is not on the
  // search path (plugins are still loaded on first use).
  explicit PluginRegistry(Config config);
  ~PluginRegistry();
  PluginRegistry(const PluginRegistry&) = delete;
  PluginRegistry& operator=(const PluginRegistry&) = delete;

  const std::vector<std::filesystem::path>& search_path() const { return config_.plugin_path; }
  const Config& config() const { return config_; }

  // Finds and loads libstax_<name>.so (once). Throws stax::Error.
  std::shared_ptr<PluginLibrary> library(const std::string& name);

  // A new backend instance of plugin `name` (not kept by the registry).
  std::unique_ptr<Plugin> create(const std::string& name,
                                 const OptionValue& options = OptionValue::map(),
                                 int32_t device_index = 0);

  // The configured backend for a device kind ("cpu", "cuda"), created on first use with the
  // config's options; checks that the plugin drives that kind of device. Throws stax::Error
  // when the config has no such device.
  Plugin& backend(const std::string& device_kind, int32_t device_index = 0);
  bool has_device(const std::string& device_kind) const;

  // The backend's thresholds with the config's `realization:` overrides applied.
  sdk::RealizationThresholds thresholds(const std::string& device_kind);

  // The backend's policy for a device kind, built once from what the plugin reports: thresholds()
  // as core types, split_reduction calling the plugin (valid while this registry lives), its
  // device properties, default fusion limits.
  BackendPolicy policy(const std::string& device_kind);

  // Every libstax_*.so on the search path.
  std::vector<std::filesystem::path> discover() const;

 private:
  Config config_;
  std::map<std::string, std::shared_ptr<PluginLibrary>> libraries_;
  std::map<std::pair<std::string, int32_t>, std::unique_ptr<Plugin>> backends_;
};

// `t` with every field set in `overrides` replaced (op names become opcodes).
sdk::RealizationThresholds apply_realization_overrides(sdk::RealizationThresholds t,
                                                       const RealizationConfig& overrides);

}  // namespace stax
