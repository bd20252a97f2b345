// CompiledGraph: a graph compiled by a Compiler (core/driver/compiler.h), ready to run on tensors.
//
// run(inputs) executes the lowered graph's steps in order (producers before consumers):
//   * a ComputedBuffer: its kernel, compiled by the backend plugin, on contiguous buffers;
//   * an ExternKernel (matmul family): the plugin's extern kernel, or the reference interpreter's
//     kernel when the plugin does not offer that name;
//   * a FallbackKernel (an op without a lowering rule): the reference interpreter's kernel for the
//     op, on views of the buffers it reads; random ops get the interpreter's per-node seed, so they
//     draw the numbers `interpret` draws for the same run seed.
// Storage follows the compile-time memory plan (core/scheduler/memory_plan.h): intermediates
// live at fixed offsets of one arena the CompiledGraph allocates on its first run and reuses;
// returned buffers come from a pool the CompiledGraph keeps between runs (a caching allocator,
// core/runtime/output_pool.h): an entry nobody else references (an output the caller has
// dropped, even runs later) is reused, so a steady stream of runs neither allocates nor
// page-faults; returned outputs the caller keeps are never handed out again. Fresh storage is
// zero-filled; reused storage is not cleared (every producer writes all elements of its buffer).
// Graph inputs whose strides differ
// from the placeholder's are copied into the placeholder's layout first. Outputs are returned in
// return order as views of their buffers (a returned view of an input is a view of that input,
// without a copy).
//
// run() may be called from several threads; calls are serialised per Compiler (the plugin ABI
// serialises calls on one backend instance) unless the backend reports concurrent_runs. Each
// run context (arena, output pool; on a device backend its device arena and stream) serves one
// run at a time: concurrent runs each get their own, with a stream of their own when the backend
// creates streams (ABI 1.3). Device work is queued on the context's stream; the run synchronises
// it before the host reads anything the device wrote (interpreter steps, the outputs).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/tensor/tensor.h"

namespace stax {

// What a compiled graph is made of (core/runtime/execution_plan.h and the lowering and scheduler
// headers define them; a caller of lowered() / schedule() / memory_plan() includes those).
struct ExecutionPlan;
struct LoweredGraph;
struct MemoryPlan;
struct Schedule;

// One compiled kernel.
struct CompiledKernelInfo {
  std::string name;       // "kernel0"
  std::string buffer;     // the ComputedBuffers it computes, "buf2" or "buf0, buf1, buf2"
  std::string source;     // the source the plugin generated
  double compile_ms = 0;  // the plugin's compile call (print + compile), wall time
};

struct CompileStats {
  double decompose_ms = 0;
  double lower_ms = 0;    // lower_graph
  double schedule_ms = 0;  // fusion and the memory plan
  double codegen_ms = 0;  // kernel descriptions (plan_kernels)
  double compile_ms = 0;  // every plugin compile call (or kernel cache hit)
  double total_ms = 0;
  // Where the kernels came from (the kernel cache, core/driver/kernel_cache.h).
  int kernels_compiled = 0;     // by the plugin
  int kernels_from_memory = 0;  // the in-process cache
  int kernels_from_disk = 0;    // deserialized from the disk cache
};

// What one run moved and launched. On a backend whose device is not the CPU (and that has the
// ABI 1.2 device memory), every buffer lives in the backend's device memory for the whole run:
// each graph input read on the device is copied in once, each returned buffer copied out once,
// kernels and the backend's extern kernels run on device buffers, and only interpreter steps
// (fallbacks, externs the backend lacks) copy what they read to the host and their result back.
struct RunStats {
  bool on_device = false;            // buffers lived in the backend's device memory
  size_t host_to_device = 0;         // device_copy calls, host to device
  size_t device_to_host = 0;         // device_copy calls, device to host
  int64_t host_to_device_bytes = 0;
  int64_t device_to_host_bytes = 0;
  size_t launches = 0;               // compiled kernel runs
  size_t extern_calls = 0;           // the backend's extern kernels
  size_t fused_epilogues = 0;        // epilogue kernels the backend ran inside its extern call
                                     // (ABI 1.5; each also counts as a launch)
  size_t interpreter_steps = 0;      // fallbacks and externs on the interpreter
  size_t synchronizes = 0;           // device_synchronize calls
};

struct GraphRunOptions {
  uint64_t seed = 0;  // random fallback ops (as InterpreterOptions::seed)
  RunStats* stats = nullptr;  // filled when given
};

class CompiledGraph {
 public:
  struct Impl;
  // The runtime takes the plan the driver built (core/driver/compiler.cpp) and keeps it, with its
  // run state, for the compiled graph's lifetime.
  explicit CompiledGraph(ExecutionPlan plan);

  // One tensor per placeholder, in graph order (shapes and dtypes must match). Throws stax::Error.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs,
                          const GraphRunOptions& options = {}) const;

  // The graph as compiled (after decomposition).
  const Graph& graph() const;
  const LoweredGraph& lowered() const;
  // The kernels, steps and memory plan it runs (schedule.h, memory_plan.h).
  const Schedule& schedule() const;
  const MemoryPlan& memory_plan() const;
  // The Listing 6.2 form of every buffer (LoweredGraph::str()).
  std::string loop_ir() const;
  const std::vector<CompiledKernelInfo>& kernels() const;
  size_t num_kernels() const;
  size_t num_externs() const;
  size_t num_fallbacks() const;
  const CompileStats& stats() const;
  const std::string& backend_name() const;
  // "kernels: 1 (kernel0 12.3 ms) | extern kernels: 0 | fallbacks: 0 | backend cpu_cpp |
  //  lowering 0.4 ms, compile 12.3 ms, total 13.1 ms"
  std::string summary() const;

 private:
  std::shared_ptr<const Impl> impl_;
};

}  // namespace stax
