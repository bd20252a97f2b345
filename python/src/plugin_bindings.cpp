#include "python/src/plugin_bindings.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <filesystem>
#include <memory>

#include "core/backend/plugin.h"
#include "core/backend/plugin_loader.h"
#include "core/backend/plugin_registry.h"
#include "core/cache/disk_cache.h"
#include "core/config/config.h"
#include "core/support/error.h"
#include "stax/sdk/types.hpp"

namespace stax::python {

namespace {

nb::dict thresholds_dict(const sdk::RealizationThresholds& t) {
  nb::dict d;
  d["op_limit"] = t.op_limit;
  d["users_limit"] = t.users_limit;
  d["users_near_op_limit"] = t.users_near_op_limit;
  d["max_reads"] = t.max_reads;
  d["max_accumulated_reads"] = t.max_accumulated_reads;
  nb::list ops;
  for (int32_t op : t.transcendental_ops) ops.append(sdk::opcode_name(op));
  d["transcendental"] = ops;
  return d;
}

// One plugin's description; a plugin that fails to load or configure has "error" set.
nb::dict describe(PluginRegistry& reg, const Config& config, const std::filesystem::path& path) {
  std::string file = path.filename().string();  // libstax_<name>.so
  std::string name = file.substr(8, file.size() - 8 - 3);
  nb::dict d;
  d["name"] = name;
  d["path"] = path.string();
  nb::list devices;
  const DeviceConfig* dc = nullptr;
  for (const auto& [kind, dev] : config.devices)
    if (dev.backend == name) {
      devices.append(kind);
      if (!dc) dc = &dev;
    }
  d["configured_for"] = devices;
  try {
    std::shared_ptr<PluginLibrary> lib = reg.library(name);
    d["abi"] = std::to_string(lib->abi_major()) + "." + std::to_string(lib->abi_minor());
    d["version"] = lib->plugin_version();
    std::unique_ptr<Plugin> p = reg.create(name, dc ? dc->options : OptionValue::map());
    const sdk::DeviceProperties& props = p->properties();
    d["device_kind"] = p->device_kind_name();
    d["device_name"] = std::string(props.device_name);
    sdk::RealizationThresholds t = p->thresholds();
    if (dc) t = apply_realization_overrides(t, config.realization);
    d["thresholds"] = thresholds_dict(t);
    d["extern_kernels"] = p->extern_kernels();
    d["error"] = nb::none();
  } catch (const Error& e) {
    d["error"] = std::string(e.what());
  }
  return d;
}

CacheSettings settings_of(const Config& config) {
  return CacheSettings::resolve(config.cache, config.cache_dir);
}

}  // namespace

void bind_plugins(nb::module_& m) {
  m.def(
      "_plugins",
      [](const Config& config) {
        nb::list out;
        PluginRegistry reg(config.plugin_path);  // reports missing backends instead of failing
        for (const std::filesystem::path& path : reg.discover())
          out.append(describe(reg, config, path));
        return out;
      },
      nb::arg("config"));
  m.def(
      "_cache_dir",
      [](const Config& config) -> nb::object {
        CacheSettings s = settings_of(config);
        if (!s.disk()) return nb::none();
        return nb::str(s.dir->string().c_str());
      },
      nb::arg("config"));
  m.def(
      "_cache_stats",
      [](const Config& config) {
        CacheSettings s = settings_of(config);
        nb::dict d;
        d["enabled"] = s.disk();
        d["dir"] = s.disk() ? nb::object(nb::str(s.dir->string().c_str())) : nb::none();
        d["max_bytes"] = s.max_bytes;
        CacheStats st = s.disk() ? DiskCache::scan(*s.dir) : CacheStats{};
        d["entries"] = st.entries;
        d["bytes"] = st.bytes;
        return d;
      },
      nb::arg("config"));
  m.def(
      "_cache_clear",
      [](const Config& config) -> uint64_t {
        CacheSettings s = settings_of(config);
        return s.disk() ? DiskCache::clear(*s.dir) : 0;
      },
      nb::arg("config"));
}

}  // namespace stax::python
