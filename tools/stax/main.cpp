// stax: the command-line driver. Each subcommand lives in its own cmd_<name>.cpp (command.h).
#include <iostream>

#include "core/ops/install.h"
#include "core/support/error.h"
#include "tools/stax/command.h"

namespace {

// One entry per subcommand, in the order `stax --help` lists them.
constexpr stax::cli::SubcommandFactory kSubcommands[] = {
    stax::cli::make_check_command,
    stax::cli::make_run_command,
    stax::cli::make_grad_command,
    stax::cli::make_compile_command,
    stax::cli::make_plugins_command,
    stax::cli::make_bench_command,
    stax::cli::make_conformance_command,
    stax::cli::make_ops_command,
    stax::cli::make_cache_command,
};

}  // namespace

int main(int argc, char** argv) {
  stax::install_ops();  // fills the engines' op tables (core/ops/install.h)
  CLI::App app{"Stax: a tensor compiler for operator-level graphs (.stax text, seed Listing 5.1)",
               "stax"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "stax 0.1.0");
  std::vector<stax::cli::Subcommand> subcommands;
  for (auto make : kSubcommands) subcommands.push_back(make(app));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);  // prints --help / --version to stdout, usage errors to stderr
    return code == 0 ? 0 : 2;
  }
  for (const auto& sub : subcommands) {
    if (!sub.app->parsed()) continue;
    try {
      return sub.run();
    } catch (const stax::Error& e) {
      std::cerr << e.what() << "\n";
      return 1;
    } catch (const std::exception& e) {
      std::cerr << "stax " << sub.app->get_name() << ": error: " << e.what() << "\n";
      return 1;
    }
  }
  return 2;
}
