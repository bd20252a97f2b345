// Code generation, host side (DESIGN.md §1, §3): every ComputedBuffer of a LoweredGraph becomes one
// kernel description (plugin_api.h StaxKernelDesc) — what crosses the plugin boundary. The plugin
// prints and compiles it (cpu_cpp: C++ through Clang).
//
// Per buffer: its recorded LoopBody, normalized (§6.8 Prop. 6.3: unit dims dropped, mergeable
// loops merged; lexicographic order and so reduction order unchanged), its redundant indirect-index
// guards dropped (drop_redundant_index_checks, core/ir/index_bounds.h), then copied one to one into
// the C description by make_kernel_desc (core/ir/kernel_desc.h): buffers in first-use order with
// roles, iteration / reduction ranges, the reduction type, ops and index expressions, and the
// index bit width (32 when every index fits int32).
// Kernels are named kernel0, kernel1, ... in execution order (unique per compiled graph).
#pragma once

#include <string>
#include <vector>

#include "core/ir/kernel_desc.h"
#include "core/lowering/graph_lowering.h"

namespace stax {

struct CodegenOptions {
  bool normalize_loops = true;  // §6.8: merge / drop loops before printing
};

struct KernelPlan {
  std::string name;                        // "kernel0": the C function the plugin defines
  const ComputedBuffer* buffer = nullptr;  // the buffer it computes
  LoopBody body;                           // the (normalized, guard-dropped) body it runs
  KernelDesc desc;                         // the C description; desc.buffer_names() = run order
};

// The plan of one ComputedBuffer; `graph` resolves the buffers its body reads and writes.
KernelPlan plan_kernel(const ComputedBuffer& buffer, const LoweredGraph& graph,
                       const std::string& name, const CodegenOptions& options = {});

// One plan per ComputedBuffer of `graph`, in graph.buffers order, named kernel0, kernel1, ...
std::vector<KernelPlan> plan_kernels(const LoweredGraph& graph, const CodegenOptions& options = {});

}  // namespace stax
