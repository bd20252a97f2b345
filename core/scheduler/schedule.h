// The scheduler (seed §6.2 leaves it to "the scheduler"; PyTorch Inductor's is the reference):
// groups the ComputedBuffers of a LoweredGraph into fused kernels and orders the steps a
// CompiledGraph runs.
//
// A kernel runs its buffers' bodies, in order, at every point of one iteration space (ranges G,
// reduction ranges R; plugin_api.h: "for every iteration point i: for every body in order").
// A buffer joins a kernel when
//   * its iteration space fits the kernel's (iteration_space.h): a reduction over G x R; a
//     pointwise body over G (runs once per point, e.g. a reduction's epilogue) or over G x R (runs
//     in the reduction loop, e.g. a prologue or the normalisation of softmax); spaces that are
//     merged forms of each other (Prop. 6.3) are refined to a common one;
//   * every buffer it reads that the kernel writes is read at exactly the address where it was
//     written in the same iteration point (a value of this point, or a row finished before this
//     body's loop starts); any other read would race or read ahead;
//   * every buffer it reads from outside the kernel is produced by an earlier step, so moving the
//     buffer up to the kernel's place creates no cycle;
//   * it shares a buffer with the kernel (reads what the kernel writes or reads): fusion saves
//     memory traffic; unrelated buffers stay apart, as in Inductor;
//   * the kernel is below the backend's size limit (FusionLimits).
// Each buffer goes to the eligible kernel with the most shared bytes, else it starts a kernel.
// Extern and fallback kernels are steps of their own. Fusion never changes a body's
// computation: results are bit-identical with fusion on or off (Theorem 6.1).
// Then, for a backend that runs them (FusionLimits::extern_epilogues), a pointwise kernel that
// follows a matrix product and reads its output where it writes becomes the product's epilogue
// (extern_epilogue.h): one step, the kernel run on each block of the product's rows while it is
// in cache.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "core/ir/ir.h"
#include "core/lowering/graph_lowering.h"
#include "core/policy/backend_policy.h"
#include "core/scheduler/iteration_space.h"

namespace stax {

// One kernel: its buffers in execution order, each body re-indexed onto the kernel's iteration
// space (ranges, reduction_ranges: no unit extents; reduction_ranges empty for a pointwise
// kernel). A kernel of one buffer keeps that buffer's body as lowered.
struct ScheduledKernel {
  std::vector<const ComputedBuffer*> buffers;
  std::vector<LoopBody> bodies;  // bodies[k] computes buffers[k]
  Extents ranges, reduction_ranges;
};

struct ScheduleStep {
  enum class Kind { Kernel, Extern, Fallback };
  static constexpr size_t kNoEpilogue = SIZE_MAX;
  Kind kind = Kind::Kernel;
  size_t kernel = 0;              // Kernel: index into Schedule::kernels
  const Buffer* buffer = nullptr;  // Extern / Fallback: the buffer it produces
  // Extern: a kernel (index into Schedule::kernels) run as the product's epilogue in this step
  // (extern_epilogue.h), or kNoEpilogue.
  size_t epilogue = kNoEpilogue;
  bool has_epilogue() const { return epilogue != kNoEpilogue; }
};

struct Schedule {
  std::vector<ScheduledKernel> kernels;
  std::vector<ScheduleStep> steps;  // in execution order (producers first)
  // Buffers of the lowered graph that start a new kernel although the buffer listed before them
  // is a ComputedBuffer in another kernel, with the reason ("different iteration space ...").
  struct Split {
    std::string before, after, reason;
  };
  std::vector<Split> splits;
  // Per matrix product that a kernel reads: whether that kernel became its epilogue, and why
  // (or why not). Empty when the backend runs no epilogues.
  struct EpilogueNote {
    std::string product;  // the extern's buffer
    bool fused = false;
    std::string reason;
  };
  std::vector<EpilogueNote> epilogues;
  // What graph passes before lowering decided, one line each, for the dump (the driver fills it:
  // fused attention, core/ops/nn/attention_fusion.h).
  std::vector<std::string> attention;

  // The buffers a step writes, in order (an extern's epilogue kernel's after the product's).
  std::vector<const Buffer*> writes(const ScheduleStep& step) const;
  // The distinct buffers a step reads (graph inputs included).
  std::set<std::string> reads(const ScheduleStep& step) const;
  // The `schedule` dump: kernels in step order with the buffers each computes and its iteration
  // space, extern / fallback steps, and the reason for every split.
  std::string str() const;
  // The kernel graph in Graphviz DOT: a node per step, an edge per buffer passed between steps.
  std::string dot(const LoweredGraph& graph) const;
};

// `limits` come from the backend (BackendPolicy::fusion): enable_fusion off gives one kernel per
// ComputedBuffer; max_fused_nodes bounds the buffers of one kernel.
Schedule schedule(const LoweredGraph& graph, const FusionLimits& limits = {});

}  // namespace stax
