// The stax CLI's subcommands. Each lives in its own file (cmd_<name>.cpp) and exposes one factory
// that adds its CLI11 subcommand (options, --help text) to the parent app and returns what to run
// when the user picks it. main.cpp lists the factories in one table: adding a subcommand is a new
// cmd_<name>.cpp, one declaration below and one entry in that table.
//
// Conventions: results go to stdout, diagnostics to stderr. A run function returns the exit code
// (0 success, 1 failure); a stax::Error it throws is printed as "LOCATION: error: MESSAGE" on
// stderr by main.cpp and exits with 1. Usage errors (bad options) exit with 2.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "core/graph/graph.h"

namespace stax::cli {

struct Subcommand {
  CLI::App* app = nullptr;   // the subcommand, owned by the parent app
  std::function<int()> run;  // runs it with the options parsed into its captured state
};
using SubcommandFactory = Subcommand (*)(CLI::App& parent);

Subcommand make_check_command(CLI::App& parent);  // cmd_check.cpp
Subcommand make_run_command(CLI::App& parent);    // cmd_run.cpp
Subcommand make_grad_command(CLI::App& parent);   // cmd_grad.cpp
Subcommand make_compile_command(CLI::App& parent);  // cmd_compile.cpp
Subcommand make_plugins_command(CLI::App& parent);  // cmd_plugins.cpp
Subcommand make_bench_command(CLI::App& parent);    // cmd_bench.cpp
Subcommand make_conformance_command(CLI::App& parent);  // cmd_conformance.cpp
Subcommand make_ops_command(CLI::App& parent);          // cmd_ops.cpp
Subcommand make_cache_command(CLI::App& parent);        // cmd_cache.cpp

// ---- helpers shared by subcommands (common.cpp) ----

// Adds "--shape NAME=D0,D1[:DTYPE]" (repeatable): the metadata of placeholders whose text omits
// shape= (the Listing 5.2 style). "NAME=" gives a 0-d tensor; DTYPE defaults to float32.
void add_shape_option(CLI::App& sub, std::vector<std::string>& specs);
// Adds "--seed S": a whole number from 0 to 2^64 - 1; anything else (-1, 1e23, 2^64) is a usage
// error naming the value, never clamped.
CLI::Option* add_seed_option(CLI::App& sub, uint64_t& seed, const std::string& help);
// Parses a graph file with the --shape specs applied, then verifies it (verifier.h). Placeholders
// with neither shape= nor a --shape spec take their shape and dtype from their --input NAME=F.npy
// (`input_specs`), as an FX printout needs.
Graph load_graph(const std::string& path, const std::vector<std::string>& shape_specs,
                 const std::vector<std::string>& input_specs = {});

}  // namespace stax::cli
