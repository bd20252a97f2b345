// Compiler: the C++ API of the compile path (DESIGN.md §1).
//
//   Compiler compiler(Config::load("configs/cpu.yaml"));
//   CompiledGraph cg = compiler.compile(graph);
//   std::vector<Tensor> out = cg.run({x, y});
//
// compile(graph), as a straight list of passes, each followed by a dump of its result (written to
// <dump.dir>/<CompileOptions::name>.<stage>.txt when the config's `dump:` sets a dir and lists the
// stage; core/driver/stage_dumper.h):
//   decompose   clone the graph (the CompiledGraph owns its copy) and decompose composite ops
//               (softmax, layer_norm, gelu, ...; core/graph/decompositions.h) unless
//               CompileOptions::decompose is off                                  dump "graph"
//   lower       with the BackendPolicy (PluginRegistry::policy) of the backend configured for the
//               graph's device kind (the device of its placeholders, "cpu" when it has none):
//               §6.6 thresholds (plus the config's `realization:` overrides), §6.5
//               split_reduction                                                   dump "loop_ir"
//   schedule    ComputedBuffers fused into kernels within the backend's FusionLimits, steps in
//               order, and the memory plan (core/scheduler)                      dump "schedule"
//   codegen     one kernel description per scheduled kernel (core/codegen), compiled by the
//               plugin, in parallel when it allows (CompileOptions::compile_threads)
//                                                                                 dump "kernels"
//   run plan    step order, buffer slots, last uses (core/runtime/compiled_graph.h).
// The Compiler owns the Config; nothing else reads it. A device the config names whose plugin is
// missing fails when the Compiler is created (PluginRegistry).
// Errors (stax::Error): config and plugin loading ("plugin not found" lists the search path),
// lowering, and kernel compilation (stage "plugin": the plugin's message carries the generated
// source and the compiler's diagnostics).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "core/backend/plugin_registry.h"
#include "core/codegen/kernel_codegen.h"
#include "core/config/config.h"
#include "core/driver/kernel_cache.h"
#include "core/graph/graph.h"
#include "core/runtime/compiled_graph.h"
#include "core/support/cancellation.h"

namespace stax {

struct BackendSession;

struct CompileOptions {
  bool decompose = true;        // composite ops into base ops before lowering
  bool fuse = true;             // false: one kernel per buffer (the backend's limits otherwise)
  // scaled_dot_product_attention as one flash-attention extern where the backend offers it
  // (core/ops/nn/attention_fusion.h, docs/attention.md); false: its decomposition.
  bool fuse_attention = true;
  CodegenOptions codegen;       // loop normalization
  std::string name = "graph";   // names the dump files
  // Kernels compiled at once when the backend allows concurrent compiles (ABI 1.6,
  // core/backend/parallel_compile.h); 0: STAX_COMPILE_THREADS, else the CPUs the process may
  // run on.
  size_t compile_threads = 0;
};

class Compiler {
 public:
  explicit Compiler(Config config, CompileOptions options = {});
  ~Compiler();
  Compiler(const Compiler&) = delete;
  Compiler& operator=(const Compiler&) = delete;

  // Thread-safe: concurrent calls on one Compiler take turns. `cancel` (optional; it must live
  // until the call returns) is polled before each pass and before each kernel the plugin
  // compiles: once cancelled, compile throws stax::Error with stage "cancelled"
  // (core/support/cancellation.h) at the next of those checkpoints.
  CompiledGraph compile(const Graph& graph, const CancellationToken* cancel = nullptr);

  // Two graphs compiled as one job: `first`, then the graph `second` makes from first's lowered
  // graph (CompiledFunction: the backward with its saved values in the layouts the forward
  // returns them in). Each graph goes through compile()'s passes; then, when both run on one
  // backend with the same options, their kernels compile in ONE batch on the compile threads
  // (the largest first, whichever graph they belong to), so that no thread idles between the
  // two graphs (the cold compile of a training step: docs/jit_compile.md). The graphs are what
  // compile(first) and compile(second(...)) return; each one's CompileStats::compile_ms is the
  // shared batch's time. A kernel both graphs hold (same name and description) compiles once.
  std::pair<CompiledGraph, CompiledGraph> compile_pair(
      const Graph& first, const std::function<Graph(const LoweredGraph&)>& second,
      const CancellationToken* cancel = nullptr);

  // Sets up, now, what the first compile for `device_kind` would otherwise set up on its way:
  // the backend (its plugin library loaded, configured) and the kernel cache's key material for
  // it, which asks the plugin's cache identity (cpu_cpp: CPUID and build-time constants, no JIT:
  // DECISIONS item 54). "" is the device a graph without placeholders on another device compiles
  // for (the config's default_device, else "cpu"). Optional: a process that compiles from a warm
  // cache calls it at start-up, so that its compiles are only compiles (the bench's "cached
  // compile", docs/kernel_cache.md). Errors are those the first compile would raise (no backend
  // configured, the plugin's options).
  void prepare(const std::string& device_kind = "");

  PluginRegistry& registry();
  const Config& config() const;
  // Whether compile() runs scaled_dot_product_attention fused for `graph`: options().fuse_attention
  // and the backend serving the graph offers the flash-attention externs. CompiledFunction then
  // fuses before the joint graph, so the backward gets the flash backward.
  bool fuses_attention(const Graph& graph);
  // And whether that backend also offers the dropout externs (fused_attention_dropout_externs):
  // then a softmax followed by dropout before P·V fuses too.
  bool fuses_attention_dropout(const Graph& graph);
  const CompileOptions& options() const { return options_; }
  // The kernel cache this Compiler compiles through.
  KernelCache& kernel_cache() { return *cache_; }

 private:
  size_t threads_for_kernels() const;  // CompileOptions::compile_threads, else compile_threads()

  std::shared_ptr<BackendSession> session_;  // shared with every CompiledGraph it builds
  CompileOptions options_;
  std::unique_ptr<KernelCache> cache_;  // config `cache_dir` / `cache:`, STAX_CACHE_DIR

};

// The device kind a graph runs on: device_type() of its placeholders' device ("cpu", "cuda"), or
// of its first call's result when it has no placeholder; "cpu" for an empty graph. Throws
// stax::Error when placeholders live on different device kinds.
std::string graph_device_kind(const Graph& graph);

}  // namespace stax
