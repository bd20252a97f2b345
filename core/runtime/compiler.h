// Compiler: the C++ API of the compile path (DESIGN.md §1).
//
//   Compiler compiler(Config::load("configs/cpu.yaml"));
//   CompiledGraph cg = compiler.compile(graph);
//   std::vector<Tensor> out = cg.run({x, y});
//
// compile(graph), as a straight list of passes:
//   1. clone the graph (the CompiledGraph owns its copy) and decompose composite ops (softmax,
//      layer_norm, gelu, ...; core/graph/decompositions.h) unless CompileOptions::decompose is off;
//   2. pick the backend configured for the graph's device kind (the device of its placeholders,
//      "cpu" when it has none) from the PluginRegistry (loads libstax_<backend>.so on first use);
//   3. lower (core/lowering) with the backend's §6.6 thresholds (plus the config's `realization:`
//      overrides) and its §6.5 split_reduction policy;
//   4. schedule (core/scheduler): ComputedBuffers fused into kernels, steps in order, and the
//      memory plan (intermediates at fixed offsets of one arena);
//   5. one kernel description per scheduled kernel (core/codegen), compiled by the plugin;
//   6. the run plan: step order, buffer slots, last uses (compiled_graph.h).
// Errors (stax::Error): config and plugin loading ("plugin not found" lists the search path),
// lowering, and kernel compilation (stage "plugin": the plugin's message carries the generated
// source and the compiler's diagnostics).
#pragma once

#include <memory>
#include <string>

#include "core/backend/plugin_registry.h"
#include "core/codegen/kernel_codegen.h"
#include "core/config/config.h"
#include "core/graph/graph.h"
#include "core/runtime/compiled_graph.h"
#include "core/scheduler/schedule.h"

namespace stax {

struct CompileOptions {
  bool decompose = true;      // composite ops into base ops before lowering
  SchedulerOptions schedule;  // fusion on / off and its limit
  CodegenOptions codegen;     // loop normalization
};

class Compiler {
 public:
  explicit Compiler(Config config, CompileOptions options = {});
  ~Compiler();
  Compiler(const Compiler&) = delete;
  Compiler& operator=(const Compiler&) = delete;

  CompiledGraph compile(const Graph& graph);

  PluginRegistry& registry();
  const Config& config() const;
  const CompileOptions& options() const { return options_; }

  struct Shared;  // the registry and the lock runs take; shared with every CompiledGraph

 private:
  std::shared_ptr<Shared> shared_;
  CompileOptions options_;
};

// The device kind a graph runs on: device_type() of its placeholders' device ("cpu", "cuda"), or
// of its first call's result when it has no placeholder; "cpu" for an empty graph. Throws
// stax::Error when placeholders live on different device kinds.
std::string graph_device_kind(const Graph& graph);

}  // namespace stax
