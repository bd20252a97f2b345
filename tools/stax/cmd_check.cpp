// stax check GRAPH: parse and verify a graph, then print it in canonical form with the inferred
// metadata (optionally after DCE / CSE, or in the Listing 5.2 layout).
#include <iostream>
#include <memory>

#include "core/graph/passes.h"
#include "core/graph/printer.h"
#include "core/graph/verifier.h"
#include "tools/stax/command.h"

namespace stax::cli {

namespace {
struct CheckOptions {
  std::string graph;
  std::vector<std::string> shapes;
  std::string style = "canonical";
  bool dce = false, cse = false;
};
}  // namespace

Subcommand make_check_command(CLI::App& parent) {
  auto opts = std::make_shared<CheckOptions>();
  CLI::App* sub = parent.add_subcommand(
      "check", "Parse and verify a graph (.stax), then print it with the inferred shapes");
  sub->add_option("graph", opts->graph, "Graph text file (.stax)")
      ->required()
      ->check(CLI::ExistingFile);
  add_shape_option(*sub, opts->shapes);
  sub->add_option("--style", opts->style,
                  "Output layout: canonical (Listing 5.1, round-trips) or listing52 ([FW]/[BW] "
                  "lines, tp. targets, no kwargs)")
      ->check(CLI::IsMember({"canonical", "listing52"}))
      ->capture_default_str();
  sub->add_flag("--dce", opts->dce, "Run dead code elimination before printing");
  sub->add_flag("--cse", opts->cse,
                "Run common subexpression elimination before printing (never merges random ops)");
  return {sub, [opts] {
            Graph g = load_graph(opts->graph, opts->shapes);
            if (opts->cse) common_subexpression_elimination(g);
            if (opts->dce) dead_code_elimination(g);
            if (opts->cse || opts->dce) verify(g);
            PrintOptions print;
            if (opts->style == "listing52") {
              print = PrintOptions::listing52();
              print.show_placeholder_shapes = true;  // keep the output parseable on its own
            }
            std::cout << print_graph(g, print);
            return 0;
          }};
}

}  // namespace stax::cli
