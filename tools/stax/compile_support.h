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

// Adds "--device KIND" (issue 8): run the graph on the config's device KIND ("cuda"), as the
// config's `default_device` would.
void add_device_option(CLI::App& sub, std::string& device);

// Applies --device to a loaded config: `default_device` becomes `device` (nothing when empty).
// Throws stax::Error (stage "cli") naming the config and its devices when it has no such device.
void apply_device_option(Config& config, const std::string& device);

// What `stax compile --dump kernels` shows of a kernel source: the part after the plugin's
// "// ---- stax kernel ----" line when there is one (the prelude is the same for every kernel),
// preceded by a comment saying how many prelude lines were left out; else the whole source.
std::string displayed_kernel_source(const std::string& source);

}  // namespace stax::cli
