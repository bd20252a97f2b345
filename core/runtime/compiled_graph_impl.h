// The inside of a CompiledGraph (compiled_graph.cpp): the ExecutionPlan the driver built, moved
// in, and the run state. Not part of the API.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/runtime/compiled_graph.h"
#include "core/runtime/execution_plan.h"
#include "core/runtime/output_pool.h"

namespace stax {

struct CompiledGraph::Impl : ExecutionPlan {
  explicit Impl(ExecutionPlan plan) : ExecutionPlan(std::move(plan)) {}

  // The kernels with their sources, filled in by the first call (a hit that nobody dumps copies
  // no source).
  mutable std::once_flag infos_sources_once;
  mutable std::vector<CompiledKernelInfo> infos_with_sources;
  const std::vector<CompiledKernelInfo>& kernel_infos() const {
    std::call_once(infos_sources_once, [&] {
      infos_with_sources = infos;
      for (size_t i = 0; i < infos_with_sources.size() && i < compiled.size(); ++i)
        infos_with_sources[i].source = compiled[i]->source();
    });
    return infos_with_sources;
  }

  // What one run needs besides its inputs: the intermediates' arena (memory.arena_bytes bytes)
  // and the storage of its outputs kept for the next runs (output_pool.h: an entry no one else
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
    OutputPool pool;
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
