// stax compile GRAPH [--config C] [--dump STAGES|all] [--dump-dir DIR]: compiles a graph with the
// backend the config selects for its device and shows the pipeline's stages
// (DumpConfig::all_stages(); `stax compile` produces these):
//   graph    the graph as compiled (after decomposition of composite ops), Listing 5.1 text
//   loop_ir  every buffer after lowering, in the Listing 6.2 form
//   kernels  every kernel's generated source (the shared prelude left out on stdout)
// --dump takes a comma-separated list of stages or `all`; without it only the summary line is
// printed. --dump-dir only chooses where dumps go: the chosen stages (every stage when --dump is
// not given) become the config's `dump: {dir, stages}` and the Compiler writes them to
// DIR/<graph file stem>.<stage>.txt (complete kernel sources) instead of stdout. The last line is
// always the summary: kernels (with each kernel's compile time), extern kernels, fallbacks,
// backend, and the time of lowering and compilation.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>

#include "core/config/config.h"
#include "core/driver/compiler.h"
#include "core/graph/printer.h"
#include "core/scheduler/memory_plan.h"
#include "core/scheduler/schedule.h"
#include "core/support/error.h"
#include "tools/stax/command.h"
#include "tools/stax/compile_support.h"

namespace stax::cli {

namespace {

struct CompileCliOptions {
  std::string graph;
  std::vector<std::string> shapes;
  std::string config;
  std::string device;  // --device
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
      const std::vector<std::string>& all = DumpConfig::all_stages();
      if (s == "all") {
        stages.insert(all.begin(), all.end());
        continue;
      }
      if (std::find(all.begin(), all.end(), s) == all.end()) {
        std::string expected;
        for (const std::string& a : all) expected += a + ", ";
        throw Error("cli", "--dump " + item,
                    "unknown stage '" + s + "' (expected " + expected + "or all)");
      }
      stages.insert(s);
    }
  }
  return stages;
}

int run(const CompileCliOptions& o) {
  namespace fs = std::filesystem;
  std::set<std::string> stages = parse_stages(o.dump);
  const std::vector<std::string>& all = DumpConfig::all_stages();
  if (o.dump.empty() && !o.dump_dir.empty()) stages.insert(all.begin(), all.end());
  Graph g = load_graph(o.graph, o.shapes);
  Config config = load_cli_config(o.config);
  apply_device_option(config, o.device);
  CompileOptions options;
  options.name = fs::path(o.graph).stem().string();
  const bool to_dir = !o.dump_dir.empty();
  if (to_dir) {
    config.dump.dir = fs::path(o.dump_dir);
    config.dump.stages.clear();
    for (const std::string& s : all)  // pipeline order
      if (stages.count(s)) config.dump.stages.push_back(s);
  }
  Compiler compiler(std::move(config), options);
  CompiledGraph cg = compiler.compile(g);

  if (to_dir) {
    for (const std::string& s : all) {
      fs::path p = fs::path(o.dump_dir) / (options.name + "." + s + ".txt");
      if (stages.count(s) && fs::exists(p)) std::cout << "wrote " << p.string() << "\n";
      fs::path dot = fs::path(o.dump_dir) / (options.name + "." + s + ".dot");
      if (stages.count(s) && fs::exists(dot)) std::cout << "wrote " << dot.string() << "\n";
    }
  } else {
    if (stages.count("graph"))
      std::cout << "# graph (as compiled, after decomposition)\n" << print_graph(cg.graph())
                << "\n";
    if (stages.count("loop_ir"))
      std::cout << "# loop IR (after lowering)\n" << cg.loop_ir() << "\n";
    if (stages.count("schedule"))
      std::cout << "# schedule (kernels, memory plan)\n"
                << cg.schedule().str() << cg.memory_plan().str() << "\n";
    if (stages.count("kernels"))
      for (const CompiledKernelInfo& k : cg.kernels())
        std::cout << "# kernel " << k.name << " (computes " << k.buffer << ")\n"
                  << displayed_kernel_source(k.source) << "\n";
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
  add_device_option(*sub, opts->device);
  sub->add_option("--dump", opts->dump,
                  "Stages to show: graph, loop_ir, kernels (comma-separated, repeatable) or all")
      ->type_name("STAGES");
  sub->add_option("--dump-dir", opts->dump_dir,
                  "Write the dumped stages to files DIR/<graph>.<stage>.txt instead of stdout")
      ->type_name("DIR");
  return {sub, [opts] { return run(*opts); }};
}

}  // namespace stax::cli
