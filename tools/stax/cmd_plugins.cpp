// stax plugins [--config C]: the backend plugins on the config's plugin path. First the search
// path, each directory with the entry (file:line) or rule that put it there (the build tree's
// plugin directory is always searched last: "built in"). For each libstax_<name>.so found: the
// full path of the file loaded (links resolved) and of every shared library its loading
// brought into the process, its ABI and plugin version, the device it drives (properties), its
// §6.6 realization thresholds (with the config's overrides when a device uses it), its §6.5 split
// policy on two sample reductions, its extern kernels and the devices the config assigns to it.
// A plugin that fails to load or configure is reported with its error; the exit status is then 1.
#include <cstdio>
#include <iostream>
#include <memory>

#include "core/backend/plugin.h"
#include "core/backend/plugin_loader.h"
#include "core/backend/plugin_registry.h"
#include "core/config/config.h"
#include "core/support/error.h"
#include "tools/stax/command.h"
#include "tools/stax/compile_support.h"

namespace stax::cli {

namespace {

struct PluginsOptions {
  std::string config;
};

std::string kib(int64_t bytes) {
  if (bytes <= 0) return "unknown";
  if (bytes >= (int64_t{1} << 30)) return std::to_string(bytes >> 30) + " GiB";
  if (bytes >= (int64_t{1} << 20)) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes >> 10) + " KiB";
}

std::string describe_thresholds(const sdk::RealizationThresholds& t) {
  std::string s = "op_limit " + std::to_string(t.op_limit) + ", users_limit " +
                  std::to_string(t.users_limit) +
                  " (at >= " + std::to_string(t.users_near_op_limit) + " ops), max_reads " +
                  std::to_string(t.max_reads) + ", max_accumulated_reads " +
                  std::to_string(t.max_accumulated_reads) + ", transcendental:";
  if (t.transcendental_ops.empty()) s += " none";
  for (int32_t op : t.transcendental_ops) s += " " + sdk::opcode_name(op);
  return s;
}

void describe_plugin(PluginRegistry& reg, const Config& config, const std::string& name,
                     std::ostream& out) {
  std::shared_ptr<PluginLibrary> lib = reg.library(name);
  out << "  " << name << "  " << lib->real_path().string() << "\n";
  if (lib->real_path() != lib->path()) out << "    found as " << lib->path().string() << "\n";
  std::vector<std::string> deps;
  for (const std::string& o : lib->loaded_objects()) {
    std::error_code ec;
    if (std::filesystem::equivalent(o, lib->real_path(), ec)) continue;
    deps.push_back(o);
  }
  out << "    loaded with:";
  if (deps.empty()) out << " nothing new (its libraries were loaded already)";
  for (const std::string& d : deps) out << "\n      " << d;
  out << "\n";
  out << "    ABI " << lib->abi_major() << "." << lib->abi_minor() << " (host "
      << STAX_PLUGIN_API_MAJOR << "." << STAX_PLUGIN_API_MINOR << "), version "
      << lib->plugin_version() << "\n";
  // The devices the config assigns to this plugin; its options come from the first of them.
  std::vector<std::string> devices;
  const DeviceConfig* dc = nullptr;
  for (const auto& [kind, d] : config.devices)
    if (d.backend == name) {
      devices.push_back(kind);
      if (!dc) dc = &d;
    }
  std::unique_ptr<Plugin> p = reg.create(name, dc ? dc->options : OptionValue::map());
  const sdk::DeviceProperties& d = p->properties();
  out << "    device: " << p->device_kind_name() << " '" << d.device_name << "'";
  if (d.kind != sdk::DeviceKind::CUDA)
    out << ", " << d.cores << " thread(s), " << d.vector_bytes << "-byte vectors, L2 "
        << kib(d.l2_cache_bytes);
  else
    out << ", " << d.multiprocessor_count << " SMs, warp " << d.warp_size << ", sm_"
        << d.compute_capability;
  out << ", memory " << kib(d.memory_bytes) << "\n";
  sdk::RealizationThresholds t = p->thresholds();
  if (!devices.empty()) t = apply_realization_overrides(t, config.realization);
  out << "    thresholds: " << describe_thresholds(t)
      << (devices.empty() ? "" : " (with the config's overrides)") << "\n";
  out << "    split_reduction: " << p->split_reduction(16384, 64, sdk::ReductionType::Sum)
      << " segment(s) for 64 x 16384, " << p->split_reduction(1 << 20, 1, sdk::ReductionType::Sum)
      << " for 1 x 1048576\n";
  std::vector<std::string> ext = p->extern_kernels();
  out << "    extern kernels:";
  if (ext.empty()) out << " none";
  for (const std::string& e : ext) out << " " << e;
  out << "\n    configured for: ";
  if (devices.empty()) out << "no device";
  for (size_t i = 0; i < devices.size(); ++i) out << (i ? ", " : "") << devices[i];
  out << "\n";
}

int run(const PluginsOptions& o) {
  // A registry on the config's search path only: this command reports missing backends instead
  // of failing on them (a Compiler's registry rejects them at load).
  const Config config = load_cli_config(o.config);
  PluginRegistry reg(config.plugin_path);
  std::cout << "config: " << config.source << "\nplugin path (searched in this order):\n";
  const std::vector<std::filesystem::path>& dirs = reg.search_path();
  for (size_t i = 0; i < dirs.size(); ++i) {
    std::error_code ec;
    std::cout << "  " << dirs[i].string()
              << (std::filesystem::is_directory(dirs[i], ec) ? "" : " (missing)") << "\n";
    if (config.plugin_path_origin.size() == dirs.size())
      std::cout << "      from " << config.plugin_path_origin[i] << "\n";
  }
  std::vector<std::filesystem::path> found = reg.discover();
  std::cout << "plugins (" << found.size() << "):\n";
  int status = 0;
  for (const auto& path : found) {
    std::string file = path.filename().string();  // libstax_<name>.so
    std::string name = file.substr(8, file.size() - 8 - 3);
    try {
      describe_plugin(reg, config, name, std::cout);
    } catch (const Error& e) {
      std::cout << "  " << name << "  " << path.string() << "\n    error: " << e.what() << "\n";
      status = 1;
    }
  }
  std::cout << "devices:\n";
  for (const auto& [kind, d] : config.devices) {
    bool present = false;
    for (const auto& path : found)
      present = present || path.filename() == plugin_file_name(d.backend);
    std::cout << "  " << kind << " -> " << d.backend << (present ? "" : " (not found)") << "\n";
  }
  return status;
}

}  // namespace

Subcommand make_plugins_command(CLI::App& parent) {
  auto opts = std::make_shared<PluginsOptions>();
  CLI::App* sub = parent.add_subcommand(
      "plugins", "List the backend plugins on the plugin path: ABI, device, thresholds, kernels");
  add_config_option(*sub, opts->config);
  return {sub, [opts] { return run(*opts); }};
}

}  // namespace stax::cli
