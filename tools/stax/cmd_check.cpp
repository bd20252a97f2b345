// stax check GRAPH: parse and verify a graph, then print it in canonical form with the inferred
// metadata (optionally after DCE / CSE, or in the Listing 5.2 layout).
//
// stax check --batch FILE: many small graphs in one process, for differential tests of shape and
// dtype inference (tests/meta: thousands of cases against torch's meta tensors). FILE holds cases,
// each starting with a line "#@case NAME" (a comment to the graph parser) followed by its graph
// text. Each case is parsed and verified on its own; one JSON object per line on stdout, in order:
//   {"case": "NAME", "ok": true, "outputs": [["float32", [2, 3]], ...]}   the returned values
//   {"case": "NAME", "ok": false, "error": "MESSAGE"}                      a stax::Error
//   {"case": "NAME", "ok": false, "internal": true, "error": "WHAT"}      any other exception
// The exit status is 0 when every case was read (whatever its verdict).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "core/graph/parser.h"
#include "core/graph/passes.h"
#include "core/graph/printer.h"
#include "core/graph/verifier.h"
#include "core/support/error.h"
#include "tools/stax/command.h"

namespace stax::cli {

namespace {
struct CheckOptions {
  std::string graph;
  std::vector<std::string> shapes;
  std::string style = "canonical";
  bool dce = false, cse = false;
  bool batch = false;
};

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

// One case of --batch: its verdict as a JSON line.
std::string check_case(const std::string& name, const std::string& text, const std::string& file) {
  std::string head = "{\"case\": " + json_string(name) + ", ";
  try {
    Graph g = parse_graph(text, file + ":" + name);
    verify(g);
    std::string outs;
    for (const Node* n : g.outputs()) {
      std::string dims;
      for (int64_t d : n->shape()) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
      outs += std::string(outs.empty() ? "" : ", ") + "[" +
              json_string(std::string(dtype_name(n->dtype()))) + ", [" + dims + "]]";
    }
    return head + "\"ok\": true, \"outputs\": [" + outs + "]}";
  } catch (const Error& e) {
    return head + "\"ok\": false, \"error\": " + json_string(e.message()) + "}";
  } catch (const std::exception& e) {
    return head + "\"ok\": false, \"internal\": true, \"error\": " + json_string(e.what()) + "}";
  }
}

int run_batch(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cli", path, "cannot read the batch file");
  std::string line, name, text;
  bool open = false;
  auto flush = [&] {
    if (open) std::cout << check_case(name, text, path) << "\n" << std::flush;
  };
  while (std::getline(in, line)) {
    if (line.rfind("#@case ", 0) == 0) {
      flush();
      name = line.substr(7);
      text.clear();
      open = true;
    } else if (open) {
      text += line;
      text += '\n';
    }
  }
  flush();
  return 0;
}
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
  sub->add_flag("--batch", opts->batch,
                "GRAPH holds many cases, each after a line '#@case NAME': check each on its own "
                "and print one JSON line per case (its outputs' dtype and shape, or the error)");
  return {sub, [opts] {
            if (opts->batch) return run_batch(opts->graph);
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
