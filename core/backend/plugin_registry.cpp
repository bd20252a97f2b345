#include "core/backend/plugin_registry.h"

#include "core/backend/plugin_loader.h"
#include "core/backend/policy_from_plugin.h"
#include "core/support/error.h"
#include "stax/sdk/types.hpp"

namespace fs = std::filesystem;

namespace stax {

PluginRegistry::PluginRegistry(std::vector<fs::path> search_path) {
  config_.source = "<search path>";
  config_.plugin_path = std::move(search_path);
}

PluginRegistry::PluginRegistry(Config config) : config_(std::move(config)) {
  // A configured device whose plugin is missing is an error now, never a fall-back later.
  for (const auto& [kind, dc] : config_.devices) {
    try {
      find_plugin(dc.backend, config_.plugin_path);
    } catch (const Error& e) {
      throw Error("plugin", dc.location,
                  "device '" + kind + "' is configured with backend '" + dc.backend +
                      "', whose plugin is missing: " + e.message());
    }
  }
}

// Backends go before the libraries that made them (they also hold a reference).
PluginRegistry::~PluginRegistry() { backends_.clear(); }

std::shared_ptr<PluginLibrary> PluginRegistry::library(const std::string& name) {
  auto it = libraries_.find(name);
  if (it != libraries_.end()) return it->second;
  fs::path p = find_plugin(name, config_.plugin_path);
  std::shared_ptr<PluginLibrary> lib = PluginLibrary::load(p, name);
  libraries_[name] = lib;
  return lib;
}

std::unique_ptr<Plugin> PluginRegistry::create(const std::string& name,
                                               const OptionValue& options,
                                               int32_t device_index) {
  return Plugin::create(library(name), options, device_index);
}

bool PluginRegistry::has_device(const std::string& device_kind) const {
  return config_.device(device_kind) != nullptr;
}

Plugin& PluginRegistry::backend(const std::string& device_kind, int32_t device_index) {
  auto key = std::make_pair(device_kind, device_index);
  auto it = backends_.find(key);
  if (it != backends_.end()) return *it->second;
  const DeviceConfig* dc = config_.device(device_kind);
  if (!dc)
    throw Error("plugin", config_.source,
                "no backend configured for device '" + device_kind + "' (add 'devices: {" +
                    device_kind + ": {backend: ...}}' to the config)");
  std::unique_ptr<Plugin> p = create(dc->backend, dc->options, device_index);
  if (p->device_kind_name() != device_kind)
    throw Error("plugin", dc->location,
                "backend '" + dc->backend + "' drives a " + p->device_kind_name() +
                    " device but is configured for '" + device_kind + "'");
  Plugin& ref = *p;
  backends_[key] = std::move(p);
  return ref;
}

sdk::RealizationThresholds PluginRegistry::thresholds(const std::string& device_kind) {
  return apply_realization_overrides(backend(device_kind).thresholds(), config_.realization);
}

BackendPolicy PluginRegistry::policy(const std::string& device_kind) {
  Plugin& plugin = backend(device_kind);
  BackendPolicy p;
  p.thresholds = realization_thresholds_from_sdk(thresholds(device_kind));
  p.split_reduction = [&plugin](int64_t reduction_numel, int64_t output_numel,
                                ReductionType type) {
    return plugin.split_reduction(reduction_numel, output_numel,
                                  static_cast<sdk::ReductionType>(type));
  };
  p.device = device_info_from_sdk(plugin.properties(), plugin.device_kind_name());
  p.fusion.extern_epilogues = plugin.properties().extern_epilogues;
  p.bitwise_opcodes = plugin.library().abi_minor() >= kBitwiseOpcodesMinor;
  return p;
}

std::vector<fs::path> PluginRegistry::discover() const {
  return discover_plugins(config_.plugin_path);
}

sdk::RealizationThresholds apply_realization_overrides(sdk::RealizationThresholds t,
                                                       const RealizationConfig& o) {
  if (o.op_limit) t.op_limit = *o.op_limit;
  if (o.users_limit) t.users_limit = *o.users_limit;
  if (o.users_near_op_limit) t.users_near_op_limit = *o.users_near_op_limit;
  if (o.max_reads) t.max_reads = *o.max_reads;
  if (o.max_accumulated_reads) t.max_accumulated_reads = *o.max_accumulated_reads;
  if (o.transcendental) {
    t.transcendental_ops.clear();
    for (const std::string& n : *o.transcendental) {
      StaxOpcode op = sdk::opcode_from_name(n);
      if (op == STAX_OP_INVALID) throw Error("config", "realization.transcendental",
                                             "unknown op '" + n + "'");
      t.transcendental_ops.push_back(op);
    }
  }
  return t;
}

}  // namespace stax
