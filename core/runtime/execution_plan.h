// ExecutionPlan: everything the runtime needs to run a compiled graph, as one value the driver
// builds (core/driver/compiler.cpp) and hands to CompiledGraph (core/runtime/compiled_graph.h):
// the decomposed graph, its loop-level IR, the schedule and memory plan, the kernel plans and
// the plugin's compiled kernels, and the run plan (buffer slots, steps, last uses). The runtime
// keeps its own run state (arenas, output pools, streams) beside it; the plan is immutable once
// handed over.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "core/backend/plugin.h"
#include "core/codegen/kernel_codegen.h"
#include "core/lowering/graph_lowering.h"
#include "core/runtime/backend_session.h"
#include "core/runtime/compiled_graph.h"
#include "core/scheduler/memory_plan.h"
#include "core/scheduler/schedule.h"

namespace stax {

struct ExecutionPlan {
  enum class StepKind { Kernel, Extern, Fallback };
  struct Step {
    StepKind kind = StepKind::Kernel;
    std::vector<size_t> outputs;    // the buffers it produces (a fused kernel: several)
    size_t kernel = 0;              // Kernel: index into plans / compiled
    std::vector<size_t> arg_slots;  // Kernel: one per description buffer; Extern / Fallback:
                                    // one per input
    std::vector<size_t> frees;      // slots whose last reader this step is
    // Kernel: (output, donor) per output written in place of a dying buffer (memory_plan.h, in
    // place). The kernel reads the donor through the output's pointer (apply_in_place), so the
    // donor appears in no arg_slots; it is read at this step all the same.
    std::vector<std::pair<size_t, size_t>> in_place;
    bool on_interpreter = false;    // Extern: the plugin does not offer the kernel, the
                                    // interpreter runs it (counted and listed as a fallback)
    // Extern: the epilogue kernel fused into the product (index into plans / compiled;
    // core/scheduler/extern_epilogue.h) and its buffers' slots, or SIZE_MAX.
    size_t epilogue = SIZE_MAX;
    std::vector<size_t> epilogue_slots;
  };

  std::shared_ptr<BackendSession> session;
  Plugin* plugin = nullptr;  // owned by session->registry
  std::unique_ptr<Graph> graph;
  LoweredGraph lowered;
  Schedule schedule;
  MemoryPlan memory;
  std::vector<KernelPlan> plans;
  std::vector<std::shared_ptr<CompiledKernel>> compiled;  // shared: the kernel cache
  // One per kernel, without sources: CompiledGraph::kernels() fills them in on first use (a
  // cache hit that nobody dumps copies no source).
  std::vector<CompiledKernelInfo> infos;
  std::vector<const Buffer*> slots;  // graph inputs first, then lowered.buffers
  std::vector<const BufferPlacement*> placements;  // per slot: into memory; null for inputs
  std::vector<Step> steps;
  size_t num_externs = 0, num_fallbacks = 0;  // fallbacks include externs on the interpreter
  CompileStats stats;
};

}  // namespace stax
