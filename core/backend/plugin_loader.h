// Finding and loading plugin libraries (libstax_<name>.so) and checking their ABI version
// (plugin_api.h). Boost.DLL stays in plugin_loader.cpp. Every failure is a stax::Error with
// stage "plugin", the library path (or the plugin name) as location, and a message naming the
// plugin and, for version problems, both versions.
//
// Trust (docs/security.md, "Plugins"): dlopen runs a library's constructors, so before it the
// file must pass the checks of core/support/file_trust.h: the file (after resolving links) and
// the directory holding it, and the directory holding the link when the path was one, are owned
// by you or root and not writable by group or others (a directory with the sticky bit excepted).
// A library another user planted on the search path is refused, naming the path and the reason,
// and its code never runs.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "stax/plugin_api.h"

namespace stax {

// "libstax_<name>.so"
std::string plugin_file_name(const std::string& name);

// The first dirs[i]/libstax_<name>.so that exists. Throws Error("plugin not found") listing
// every directory searched (and which of them do not exist).
std::filesystem::path find_plugin(const std::string& name,
                                  const std::vector<std::filesystem::path>& dirs);

// Why `path` must not be loaded (the trust checks above), or "" when it may be.
std::string plugin_trust_problem(const std::filesystem::path& path);

// Every libstax_*.so in the directories (first occurrence of a name wins), sorted by name.
std::vector<std::filesystem::path> discover_plugins(
    const std::vector<std::filesystem::path>& dirs);

// The oldest plugin ABI MINOR this host loads: every function it calls is in the 1.0 table
// (ABI 1.1 only appended StaxKernelDesc.index_bits, which the host writes and 1.0 plugins ignore;
// the 1.2 device-memory functions are called only when the table holds them, Plugin::
// has_device_memory).
inline constexpr uint32_t kRequiredPluginMinor = 0;
// The first minor whose opcodes include ops.def's bitwise_and / or / xor (ABI 1.8): the host
// emits them only for plugins at least that new (BackendPolicy::bitwise_opcodes).
inline constexpr uint32_t kBitwiseOpcodesMinor = 8;

// One loaded plugin library with a checked function table. Unloaded when the last owner goes
// (backends and compiled kernels keep it alive through shared_ptr).
class PluginLibrary {
 public:
  ~PluginLibrary();
  PluginLibrary(const PluginLibrary&) = delete;
  PluginLibrary& operator=(const PluginLibrary&) = delete;

  const std::string& name() const { return name_; }
  const std::filesystem::path& path() const { return path_; }
  // The file the path resolves to (links followed): what was loaded.
  const std::filesystem::path& real_path() const { return real_path_; }
  // Every shared object this load brought into the process, in load order: the plugin itself
  // and the libraries it needs that were not loaded yet (full paths, from the dynamic loader).
  const std::vector<std::string>& loaded_objects() const { return loaded_objects_; }
  uint32_t abi_major() const { return api_->abi_major; }
  uint32_t abi_minor() const { return api_->abi_minor; }
  std::string plugin_version() const;
  const StaxPluginApi& api() const { return *api_; }
  // "plugin 'toy_cpu' (/path/libstax_toy_cpu.so)"
  std::string describe() const;

  // Loads `path` and checks it is a Stax plugin named `name` with a compatible ABI:
  //  * the file must be a loadable shared library (the dlopen error text is reported),
  //  * it must export the entry point `stax_plugin_api` (STAX_DEFINE_PLUGIN),
  //  * its abi_major must equal STAX_PLUGIN_API_MAJOR and its abi_minor must be at least
  //    `required_minor` (default: kRequiredPluginMinor); read before anything else,
  //  * its table must hold every function of that version and name itself `name`.
  static std::shared_ptr<PluginLibrary> load(const std::filesystem::path& path,
                                             const std::string& name,
                                             uint32_t required_minor = kRequiredPluginMinor);

 private:
  struct Impl;
  PluginLibrary() = default;

  std::unique_ptr<Impl> impl_;  // the Boost.DLL handle
  std::string name_;
  std::filesystem::path path_, real_path_;
  std::vector<std::string> loaded_objects_;
  const StaxPluginApi* api_ = nullptr;
};

}  // namespace stax
