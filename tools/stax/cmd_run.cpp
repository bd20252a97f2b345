// stax run GRAPH: runs a graph on the reference interpreter (core/runtime/interpreter.h).
// Placeholders get their data from --input NAME=FILE.npy, or else seeded random data:
//   floating dtypes: standard normal (Tensor::randn); integer dtypes: uniform in [0, 10)
//   (Tensor::randint); bool: uniform in {false, true}. Every random input is drawn with the run's
//   --seed, the k-th one at Philox offset = the element count of the random inputs before it, so
//   the data is reproducible and independent of the other inputs' sources.
// Prints one line per input and per output ("NAME: float32(64,) min=... max=... mean=... [...]")
// and the interpreter's wall time; --save DIR writes DIR/out0.npy, out1.npy ... in return order.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>

#include "core/runtime/interpreter.h"
#include "core/runtime/npy.h"
#include "core/support/error.h"
#include "tools/stax/command.h"

namespace stax::cli {

namespace {

struct RunOptions {
  std::string graph;
  std::vector<std::string> inputs;
  std::vector<std::string> shapes;
  uint64_t seed = 0;
  std::string save;
};

Tensor random_input(const TensorMeta& m, uint64_t seed, uint64_t offset) {
  if (is_floating(m.dtype)) return Tensor::randn(m.sizes, m.dtype, seed, offset);
  if (is_bool(m.dtype)) return Tensor::randint(m.sizes, 0, 2, m.dtype, seed, offset);
  return Tensor::randint(m.sizes, 0, 10, m.dtype, seed, offset);
}

int run(const RunOptions& o) {
  Graph g = load_graph(o.graph, o.shapes);
  std::map<std::string, std::string> files;
  for (const auto& spec : o.inputs) {
    auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      throw Error("cli", "--input " + spec, "expected NAME=FILE.npy");
    std::string name = spec.substr(0, eq);
    Node* n = g.find(name);
    if (!n || !n->is_placeholder()) {
      std::string names;
      for (const Node* p : g.placeholders()) names += (names.empty() ? "" : ", ") + p->name();
      throw Error(
          "cli", "--input " + spec,
          "the graph has no placeholder named '" + name + "' (placeholders: " + names + ")");
    }
    if (!files.emplace(name, spec.substr(eq + 1)).second)
      throw Error("cli", "--input " + spec, "'" + name + "' is given twice");
  }
  std::vector<Tensor> inputs;
  uint64_t offset = 0;
  for (const Node* p : g.placeholders()) {
    auto it = files.find(p->name());
    if (it != files.end()) {
      inputs.push_back(load_npy(it->second));
      std::cout << "input " << p->name() << " (" << it->second << "): " << inputs.back().summary()
                << "\n";
    } else {
      inputs.push_back(random_input(p->meta(), o.seed, offset));
      offset += static_cast<uint64_t>(p->meta().numel());
      std::cout << "input " << p->name() << " (random, seed " << o.seed
                << "): " << inputs.back().summary() << "\n";
    }
  }
  InterpreterOptions options;
  options.seed = o.seed;
  auto start = std::chrono::steady_clock::now();
  std::vector<Tensor> outputs = interpret(g, inputs, options);
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::vector<Node*> returned = g.outputs();
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::string name = i < returned.size() && returned[i] ? returned[i]->name() : "?";
    std::cout << "out" << i << " " << name << ": " << outputs[i].summary() << "\n";
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", ms);
  std::cout << "wall time: " << buf << " ms (reference interpreter)\n";
  if (!o.save.empty()) {
    std::filesystem::create_directories(o.save);
    for (size_t i = 0; i < outputs.size(); ++i) {
      std::string path =
          (std::filesystem::path(o.save) / ("out" + std::to_string(i) + ".npy")).string();
      save_npy(path, outputs[i]);
    }
    std::cout << "saved " << outputs.size() << " output(s) to " << o.save << "\n";
  }
  return 0;
}

}  // namespace

Subcommand make_run_command(CLI::App& parent) {
  auto opts = std::make_shared<RunOptions>();
  CLI::App* sub = parent.add_subcommand("run", "Run a graph (.stax) on the reference interpreter");
  sub->add_option("graph", opts->graph, "Graph text file (.stax)")
      ->required()
      ->check(CLI::ExistingFile);
  sub->add_option("--input,-i", opts->inputs,
                  "Data of a placeholder as NAME=FILE.npy (repeatable); placeholders without one "
                  "get seeded random data (normal for floats, [0, 10) for ints)")
      ->type_name("NAME=FILE");
  add_shape_option(*sub, opts->shapes);
  sub->add_option("--seed", opts->seed, "Seed of the random inputs and random ops")
      ->capture_default_str();
  sub->add_option("--save", opts->save, "Write the outputs to DIR/out0.npy, DIR/out1.npy, ...")
      ->type_name("DIR");
  return {sub, [opts] { return run(*opts); }};
}

}  // namespace stax::cli
