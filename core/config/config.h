// Config: the YAML configuration, read once into typed fields (DESIGN.md §4). yaml-cpp stays in
// config.cpp. Every problem in the file is a stax::Error whose location is "FILE:LINE:COL":
//   x.yaml:4:5: error: unknown key 'foo' in 'devices.cpu' (expected one of: backend, options)
//
//   plugin_path: [build/plugins]          # list (or one string) of directories
//   devices:
//     cpu:  { backend: cpu_cpp,    options: { opt_level: 3 } }   # options: the plugin's subtree
//     cuda: { backend: cuda_nvrtc, options: { arch: sm_90 } }
//     npu:  { backend: my_npu }         # any kind a plugin names ([a-z][a-z0-9_]*)
//   realization: { op_limit: 50 }         # overrides of the backend's §6.6 thresholds
//   cache_dir: default                  # the kernel cache (core/cache); `cache: off` disables it
//   dump: { dir: null, stages: [graph, loop_ir, kernels] }   # DumpConfig::all_stages()
//
// plugin_path resolution: `~/` is the home directory ($HOME, else the passwd database's entry:
// core/support/user_dirs.h); a relative entry P becomes, in this
// order, CONFIG_DIR/P, SOURCE_DIR/P (the Stax source tree, so `build/plugins` names the repo's
// build directory) and BUILD_DIR/P (the build tree this stax_core belongs to, so `plugins`
// names its plugin directory). The build tree's own plugin directory (STAX_DEFAULT_PLUGIN_DIR)
// is always appended last. An entry none of whose candidates is a directory is an error; of an
// entry's candidates, those that do not exist are kept (the loader skips them and lists them
// when a plugin is not found). plugin_path_origin says, per directory, which entry (file:line)
// or rule put it there; `stax plugins` prints both. A plugin is loaded only after the checks of
// core/backend/plugin_loader.h (owner, permissions: docs/security.md).
//
// cache_dir: `default` is the user's cache directory: $XDG_CACHE_HOME/stax, else
// <home>/.cache/stax (core/support/user_dirs.h); anything else is a path (`~` expanded,
// relative to the config's directory). The cache creates it 0700 and uses it only when it is
// the user's and writable by nobody else (core/cache/cache_dir.h).
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/config/options.h"

namespace stax {

struct DeviceConfig {
  std::string backend;   // the plugin name: libstax_<backend>.so
  OptionValue options;   // a Map (empty when the file has none)
  std::string location;  // of the device's entry, for messages
};

// Overrides of the backend's realization thresholds (plugin_api.h StaxRealizationThresholds);
// unset fields keep the backend's value.
struct RealizationConfig {
  std::optional<int> op_limit;
  std::optional<int> users_limit;
  std::optional<int> users_near_op_limit;
  std::optional<int> max_reads;
  std::optional<int> max_accumulated_reads;
  std::optional<std::vector<std::string>> transcendental;  // op names of ops.def
};

// Which stages the pipeline dumps, and where (files <dir>/<graph name>.<stage>.txt).
struct DumpConfig {
  std::optional<std::filesystem::path> dir;  // null: dumps go to the tool's output
  std::vector<std::string> stages;           // subset of all_stages(), in the file's order
  bool wants(const std::string& stage) const;

  // The one list of stage names, in pipeline order:
  // graph joint partition loop_ir schedule kernels
  static const std::vector<std::string>& all_stages();
};

struct Config {
  Config() = default;  // not an aggregate: {paths} must not convert to a Config

  std::string source = "<default>";  // the file it was read from
  std::vector<std::filesystem::path> plugin_path;
  // Why each plugin_path directory is searched, e.g. "plugin_path[0] 'build/plugins' (x.yaml:3:15),
  // relative to the config's directory" or "built in: ..." (same length as plugin_path when
  // read from a file; may be shorter for a Config built in code).
  std::vector<std::string> plugin_path_origin;
  std::map<std::string, DeviceConfig> devices;  // keys: device kinds ("cpu", "cuda", "npu")
  RealizationConfig realization;
  std::optional<std::filesystem::path> cache_dir;
  // `cache: off` disables the on-disk kernel cache (core/cache; in-process caching stays).
  // STAX_CACHE_DIR overrides cache_dir (STAX_CACHE_DIR=off disables it too).
  bool cache = true;
  DumpConfig dump;
  // `default_device: cuda`: the device kind that runs graphs whose placeholders are on the
  // default device ("cpu"); empty = the placeholders' device. Must name a key of `devices`.
  std::string default_device;

  // Reads and checks a YAML file. Throws stax::Error (stage "config").
  static Config load(const std::filesystem::path& file);
  // The same from text; `source_name` is used in locations, `base_dir` resolves relative paths.
  static Config parse(const std::string& yaml_text, const std::string& source_name,
                      const std::filesystem::path& base_dir);
  // No file: the cpu device on backend cpu_cpp with default options, plugins from the build
  // tree's plugin directory.
  static Config default_cpu();

  // The device's entry, or nullptr.
  const DeviceConfig* device(const std::string& kind) const;
};

// Whether `name` can name a device kind: [a-z][a-z0-9_]* (cpu, cuda, npu, ...).
bool is_device_kind_name(const std::string& name);

// The plugin directory of the build tree stax_core was built in (STAX_DEFAULT_PLUGIN_DIR).
std::filesystem::path default_plugin_dir();

}  // namespace stax
