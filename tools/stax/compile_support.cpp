#include "tools/stax/compile_support.h"

#include <algorithm>

#include "core/support/error.h"

namespace stax::cli {

std::string default_config_path() { return std::string(STAX_SOURCE_DIR) + "/configs/cpu.yaml"; }

void add_config_option(CLI::App& sub, std::string& path) {
  sub.add_option("--config,-c", path,
                 "YAML config: plugin path, backend per device and its options (default: " +
                     default_config_path() +
                     "). plugin_path entries: ~ is $HOME (else the passwd home); a relative "
                     "entry P is tried as CONFIG_DIR/P, SOURCE_DIR/P, BUILD_DIR/P; this build's "
                     "plugins/ is searched last; `stax plugins` prints each directory and why. A "
                     "plugin must be yours or root's, in a directory no one else can write "
                     "(docs/security.md)")
      ->type_name("FILE");
}

Config load_cli_config(const std::string& path) {
  return Config::load(path.empty() ? default_config_path() : path);
}

void add_device_option(CLI::App& sub, std::string& device) {
  sub.add_option("--device", device,
                 "run the graph on this device of the config (cpu, cuda, ...), as the config's "
                 "default_device would")
      ->type_name("KIND");
}

void apply_device_option(Config& config, const std::string& device) {
  if (device.empty()) return;
  if (!config.devices.count(device)) {
    std::string have;
    for (const auto& [kind, dc] : config.devices) have += (have.empty() ? "" : ", ") + kind;
    throw Error("cli", "--device " + device,
                "the config " + config.source + " has no device '" + device +
                    "' (its devices: " + (have.empty() ? "none" : have) +
                    "); add a `devices: " + device + ":` entry or pick another config");
  }
  config.default_device = device;
}

std::string displayed_kernel_source(const std::string& source) {
  const std::string marker = "// ---- stax kernel ----\n";
  size_t at = source.find(marker);
  if (at == std::string::npos) return source;
  size_t prelude_lines = static_cast<size_t>(std::count(source.begin(), source.begin() + at, '\n'));
  return "// (" + std::to_string(prelude_lines) +
         " prelude lines omitted: scalar_ops.hpp and the float16 helpers)\n" +
         source.substr(at + marker.size());
}

}  // namespace stax::cli
