// Helpers of the subcommands that use backends (compile, run --config / --check, plugins).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "core/config/config.h"

namespace stax::cli {

// STAX_SOURCE_DIR/configs/cpu.yaml: the config used when --config is not given.
std::string default_config_path();

// Adds "--config FILE" (default: default_config_path()).
void add_config_option(CLI::App& sub, std::string& path);

// Loads the YAML config `path` (default_config_path() when empty). Throws stax::Error.
Config load_cli_config(const std::string& path);

// What `stax compile --dump kernels` shows of a kernel source: the part after the plugin's
// "// ---- stax kernel ----" line when there is one (the prelude is the same for every kernel),
// preceded by a comment saying how many prelude lines were left out; else the whole source.
std::string displayed_kernel_source(const std::string& source);

}  // namespace stax::cli
