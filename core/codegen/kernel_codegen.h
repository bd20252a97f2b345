// Code generation, host side (DESIGN.md §1, §3): every kernel of a Schedule (core/scheduler)
// becomes one kernel description (plugin_api.h StaxKernelDesc) — what crosses the plugin
// boundary. The plugin prints and compiles it (cpu_cpp: C++ through Clang).
//
// Per kernel: its bodies (one per fused buffer, already in the kernel's iteration space),
// normalized together (§6.8 Prop. 6.3: unit dims dropped, loops mergeable in every body merged;
// lexicographic order and so reduction order unchanged), their redundant indirect-index guards
// dropped (drop_redundant_index_checks, core/ir/index_bounds.h), then copied one to one into the C
// description by make_kernel_desc (core/codegen/kernel_desc.h): buffers in first-use order with
// roles, iteration / reduction ranges, the reduction type, ops and index expressions, and the
// index bit width (32 when every index of every body fits int32).
// Kernels are named kernel0, kernel1, ... in schedule order (unique per compiled graph).
#pragma once

#include <string>
#include <vector>

#include "core/codegen/kernel_desc.h"
#include "core/lowering/graph_lowering.h"
#include "core/scheduler/schedule.h"

namespace stax {

struct CodegenOptions {
  bool normalize_loops = true;  // §6.8: merge / drop loops before printing
};

struct KernelPlan {
  std::string name;                                // "kernel0": the C function the plugin defines
  std::vector<const ComputedBuffer*> buffers;      // the buffers it computes, in order
  std::vector<LoopBody> bodies;                    // the (normalized, guard-dropped) bodies
  KernelDesc desc;  // the C description; desc.buffer_names() = run order
};

// The plan of one scheduled kernel; `graph` resolves the buffers its bodies read and write.
KernelPlan plan_kernel(const ScheduledKernel& kernel, const LoweredGraph& graph,
                       const std::string& name, const CodegenOptions& options = {});

// One plan per kernel of `schedule`, named kernel0, kernel1, ...
std::vector<KernelPlan> plan_kernels(const Schedule& schedule, const LoweredGraph& graph,
                                     const CodegenOptions& options = {});

}  // namespace stax
