// The inside of a CompiledGraph, shared by core/driver/compiler.cpp (which builds it) and
// compiled_graph.cpp (which runs it). Not part of the API.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/backend/plugin.h"
#include "core/codegen/kernel_codegen.h"
#include "core/runtime/backend_session.h"
#include "core/runtime/compiled_graph.h"
#include "core/scheduler/memory_plan.h"
#include "core/scheduler/schedule.h"

namespace stax {

struct CompiledGraph::Impl {
  enum class StepKind { Kernel, Extern, Fallback };
  struct Step {
    StepKind kind = StepKind::Kernel;
    std::vector<size_t> outputs;    // the buffers it produces (a fused kernel: several)
    size_t kernel = 0;              // Kernel: index into plans / compiled
    std::vector<size_t> arg_slots;  // Kernel: one per description buffer; Extern / Fallback:
                                    // one per input
    std::vector<size_t> frees;      // slots whose last reader this step is
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
  // One per kernel; each source is filled in by the first kernel_infos() (a hit that nobody
  // dumps copies no source).
  mutable std::vector<CompiledKernelInfo> infos;
  mutable std::once_flag infos_sources_once;
  const std::vector<CompiledKernelInfo>& kernel_infos() const {
    std::call_once(infos_sources_once, [&] {
      for (size_t i = 0; i < infos.size() && i < compiled.size(); ++i)
        infos[i].source = compiled[i]->source();
    });
    return infos;
  }
  std::vector<const Buffer*> slots;  // graph inputs first, then lowered.buffers
  std::vector<const BufferPlacement*> placements;  // per slot: into memory; null for inputs
  std::vector<Step> steps;
  size_t num_externs = 0, num_fallbacks = 0;  // fallbacks include externs on the interpreter
  CompileStats stats;
  // What one run needs besides its inputs: the intermediates' arena (memory.arena_bytes bytes)
  // and the storage of its outputs kept for the next run (1-D tensors; an entry no one else
  // references any more, an output the caller dropped or a copied input, is reused instead of
  // allocating and page-faulting fresh memory).
  // Device memory of the backend (plugin->device_alloc), freed when destroyed.
  struct DeviceBlock {
    DeviceBlock(const Plugin& plugin, size_t bytes);
    ~DeviceBlock();
    DeviceBlock(const DeviceBlock&) = delete;
    DeviceBlock& operator=(const DeviceBlock&) = delete;
    const Plugin& plugin;
    void* data = nullptr;
    size_t bytes = 0;
  };
  struct RunContext {
    Tensor arena;
    std::vector<Tensor> pool;
    // Device-resident runs (compiled_graph.cpp): the arena in device memory, device storage per
    // slot that is not in the arena (reused by the next run of this context: outputs are copied
    // out), and the context's stream (ABI 1.3; nullptr = the default stream).
    std::unique_ptr<DeviceBlock> device_arena;
    std::vector<std::unique_ptr<DeviceBlock>> device_slots;
    const Plugin* stream_owner = nullptr;
    void* stream = nullptr;
    ~RunContext();
  };
  // Contexts not in use. A run takes one (or makes one when all are busy: runs in parallel) and
  // puts it back, so sequential runs reuse one context and allocate nothing.
  mutable std::mutex contexts_mutex;
  mutable std::vector<std::unique_ptr<RunContext>> free_contexts;
};

}  // namespace stax
