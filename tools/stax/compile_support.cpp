#include "tools/stax/compile_support.h"

#include <algorithm>

namespace stax::cli {

std::string default_config_path() { return std::string(STAX_SOURCE_DIR) + "/configs/cpu.yaml"; }

void add_config_option(CLI::App& sub, std::string& path) {
  sub.add_option("--config,-c", path,
                 "YAML config: plugin path, backend per device and its options (default: " +
                     default_config_path() + ")")
      ->type_name("FILE");
}

Config load_cli_config(const std::string& path) {
  return Config::load(path.empty() ? default_config_path() : path);
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
