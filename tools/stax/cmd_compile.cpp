// stax compile GRAPH [--config C] [--dump STAGES|all] [--dump-dir DIR]: compiles a graph with the
// backend the config selects for its device and shows the pipeline's stages:
//   graph    the graph as compiled (after decomposition of composite ops), Listing 5.1 text
//   loop_ir  every buffer after lowering, in the Listing 6.2 form
//   kernels  every kernel's generated source (the shared prelude left out on stdout)
// --dump takes a comma-separated list of these stages or `all`; without it only the summary
// line is printed. With --dump-dir the chosen stages are written to DIR/graph.stax,
// DIR/loop_ir.txt and DIR/<kernel>.cpp (complete sources) instead of stdout (every stage when
// --dump is not given). The last line is
// always the summary: kernels (with each kernel's compile time), extern kernels, fallbacks,
// backend, and the time of lowering and compilation.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>

#include "core/graph/printer.h"
#include "core/runtime/compiler.h"
#include "core/support/error.h"
#include "tools/stax/command.h"
#include "tools/stax/compile_support.h"

namespace stax::cli {

namespace {

const std::vector<std::string> kStages = {"graph", "loop_ir", "kernels"};

struct CompileCliOptions {
  std::string graph;
  std::vector<std::string> shapes;
  std::string config;
  std::vector<std::string> dump;
  std::string dump_dir;
};

std::set<std::string> parse_stages(const std::vector<std::string>& items) {
  std::set<std::string> stages;
  for (const std::string& item : items) {
    size_t start = 0;
    while (start <= item.size()) {
      size_t comma = item.find(',', start);
      std::string s =
          item.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      start = comma == std::string::npos ? item.size() + 1 : comma + 1;
      if (s.empty()) continue;
      if (s == "all") {
        stages.insert(kStages.begin(), kStages.end());
        continue;
      }
      if (std::find(kStages.begin(), kStages.end(), s) == kStages.end())
        throw Error("cli", "--dump " + item,
                    "unknown stage '" + s + "' (expected graph, loop_ir, kernels or all)");
      stages.insert(s);
    }
  }
  return stages;
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) throw Error("cli", path.string(), "cannot write the file");
  std::cout << "wrote " << path.string() << "\n";
}

int run(const CompileCliOptions& o) {
  std::set<std::string> stages = parse_stages(o.dump);
  if (o.dump.empty() && !o.dump_dir.empty()) stages.insert(kStages.begin(), kStages.end());
  Graph g = load_graph(o.graph, o.shapes);
  Compiler compiler(load_cli_config(o.config));
  CompiledGraph cg = compiler.compile(g);

  namespace fs = std::filesystem;
  const bool to_dir = !o.dump_dir.empty();
  if (to_dir) fs::create_directories(o.dump_dir);
  if (stages.count("graph")) {
    std::string text = print_graph(cg.graph());
    if (to_dir)
      write_file(fs::path(o.dump_dir) / "graph.stax", text);
    else
      std::cout << "# graph (as compiled, after decomposition)\n" << text << "\n";
  }
  if (stages.count("loop_ir")) {
    std::string text = cg.loop_ir();
    if (to_dir)
      write_file(fs::path(o.dump_dir) / "loop_ir.txt", text);
    else
      std::cout << "# loop IR (after lowering)\n" << text << "\n";
  }
  if (stages.count("kernels")) {
    for (const CompiledKernelInfo& k : cg.kernels()) {
      if (to_dir) {
        write_file(fs::path(o.dump_dir) / (k.name + ".cpp"), k.source);
      } else {
        std::cout << "# kernel " << k.name << " (computes " << k.buffer << ")\n"
                  << displayed_kernel_source(k.source) << "\n";
      }
    }
  }
  std::cout << cg.summary() << "\n";
  return 0;
}

}  // namespace

Subcommand make_compile_command(CLI::App& parent) {
  auto opts = std::make_shared<CompileCliOptions>();
  CLI::App* sub = parent.add_subcommand(
      "compile", "Compile a graph (.stax) with the configured backend and dump its stages");
  sub->add_option("graph", opts->graph, "Graph text file (.stax)")
      ->required()
      ->check(CLI::ExistingFile);
  add_shape_option(*sub, opts->shapes);
  add_config_option(*sub, opts->config);
  sub->add_option("--dump", opts->dump,
                  "Stages to show: graph, loop_ir, kernels (comma-separated, repeatable) or all")
      ->type_name("STAGES");
  sub->add_option("--dump-dir", opts->dump_dir,
                  "Write the dumped stages to files in DIR (graph.stax, loop_ir.txt, "
                  "<kernel>.cpp) instead of stdout")
      ->type_name("DIR");
  return {sub, [opts] { return run(*opts); }};
}

}  // namespace stax::cli
