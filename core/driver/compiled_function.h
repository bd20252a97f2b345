// CompiledFunction: compiled training of one graph (seed §5.6, composition at run time).
//
//   CompiledFunction f(forward_graph, {"W"}, compiler);     // joint graph, partition, compile fw
//   ForwardResult r = f.forward({x, W});                     // outputs + a context of saved values
//   std::vector<Tensor> g = f.backward(*r.ctx, {ones});      // compiles the backward (first call)
//
// Construction runs the pipeline once, as a straight list:
//   1. build_joint_graph(forward, wrt)                 (core/autodiff/joint_graph.h, §5.3)
//   2. partition_min_cut(joint, options.partition)     (core/partition/partitioner.h, §5.4-5.5;
//                                                       memory_budget and algorithm pass through)
//   3. compile the partition's forward graph           (Compiler::compile, core/driver/compiler.h)
// The backward graph is compiled on the FIRST backward() call only, so an inference-only user
// (forward() without backward()) never pays for it (§5.6). stats() counts the compilations.
//
// Calling convention (the partitioner's, partitioner.h):
//   forward graph:  all primals (the forward's placeholders, in order)
//                   -> forward outputs..., saved values...
//   backward graph: saved primals..., saved values..., tangents... -> one gradient per `wrt` name
// forward() returns the forward outputs and a BackwardContext holding the saved values (the
// forward graph's extra outputs) and the saved primals (the caller's input tensors, shared, not
// copied, like autograd.Function's save_for_backward of inputs: do not modify them in place
// before the backward has run).
//
// backward(ctx, grad_outputs):
//   grad_outputs has one entry per forward output (the upstream gradient, "tangents_i"), or is
//   empty, meaning ones for every differentiable output (loss.backward() on a scalar loss). An
//   undefined entry counts as zeros; entries of non-differentiable outputs are ignored (they have
//   no tangent placeholder). The context's saved values are released after the call unless
//   BackwardOptions::retain_graph; a second backward on a released context is an error.
//   create_graph = true asks for gradients that are differentiable themselves. The compiled path
//   supports first-order reverse mode only, so it follows seed §5.7, Listing 5.5: the call still
//   returns the compiled backward's gradients (the same bits as without create_graph), and the
//   context records their backward, BackwardContext::gradients_backward(), which computes
//   nothing and rejects where a second derivative is requested (rejecting_backward(),
//   core/driver/double_backward.h): stax::Error "Compiled regions do not support
//   second-order gradients (double backward). Run the function without compilation to compute
//   higher-order derivatives."
//
// Numerics. reference() runs the joint graph in the reference interpreter: the oracle. On the
// interpreter path (CompiledFunctionOptions::interpret) forward and backward equal it bit for bit
// (the partition preserves numerics). On the compiled path, pointwise-only computations are
// bitwise equal (compiled kernels evaluate the interpreter's scalar semantics, no FMA
// contraction); reductions and matmuls may sum in another order: kGradientRtol / kGradientAtol
// below bound the difference for float32 graphs whose reductions sum at most a few thousand
// terms of magnitude ~1 (the tests and stax_train_mlp check with them).
//
// Thread safety: forward() and backward() may be called concurrently on distinct contexts; the
// lazy backward compilation happens once (guarded).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/autodiff/joint_graph.h"
#include "core/config/config.h"
#include "core/graph/graph.h"
#include "core/driver/double_backward.h"
#include "core/partition/partitioner.h"
#include "core/runtime/compiled_graph.h"
#include "core/driver/compiler.h"
#include "core/tensor/tensor.h"

namespace stax {

// Bounds of compiled vs interpreter results for reductions / matmuls (see above):
// |compiled - reference| <= kGradientAtol + kGradientRtol * |reference| elementwise.
inline constexpr double kGradientRtol = 1e-4;
inline constexpr double kGradientAtol = 1e-5;

struct CompiledFunctionOptions {
  // Passed to partition_min_cut: algorithm, memory_budget (bytes of saved values), policy.
  partition::PartitionOptions partition;
  // Run the forward and backward graphs on the reference interpreter instead of compiling them
  // (no Compiler is needed; `stax grad --interpret`).
  bool interpret = false;
  // Seed of random ops (GraphRunOptions::seed / InterpreterOptions::seed) when forward() is
  // given none; the backward of a forward uses that forward's seed.
  uint64_t seed = 0;
  // Polled by the constructor (before the joint graph, the partition and the forward compile)
  // and by the lazy backward compile (Compiler::compile's checkpoints): once cancelled, they
  // throw stax::Error with stage "cancelled"; a cancelled backward compile is retried by the
  // next backward(). Optional; shared so that it outlives the lazy compile.
  std::shared_ptr<const CancellationToken> cancel;
  // Compile the backward graph in the constructor too, with the forward, as one job
  // (Compiler::compile_pair): both graphs' kernels in one batch on the compile threads, which a
  // forward compile followed by compile_backward() leaves idle between the two. For a caller
  // that will run backward() anyway (a training step; the bench's cold compile).
  bool compile_backward_with_forward = false;
};

struct BackwardOptions {
  bool retain_graph = false;  // keep the saved values for another backward on the same context
  bool create_graph = false;  // differentiable gradients: their backward rejects (Listing 5.5)
};

struct CompiledFunctionStats {
  int forward_compiles = 0;   // 1 after construction (0 on the interpreter path)
  int backward_compiles = 0;  // 0 until the first backward() (or compile_backward()), then 1
  int forward_calls = 0;
  int backward_calls = 0;
  double joint_ms = 0;             // build_joint_graph
  double partition_ms = 0;         // partition_min_cut
  double forward_compile_ms = 0;   // Compiler::compile of the forward graph
  double backward_compile_ms = 0;  // Compiler::compile of the backward graph (first backward)
  // compile_backward_with_forward: both graphs compiled in the constructor as one job, whose
  // time is forward_compile_ms (backward_compile_ms stays 0).
  bool backward_with_forward = false;
  // Memory per training step (bytes of tensors kept from the forward to the backward):
  int64_t saved_bytes = 0;         // the partition's saved values (the forward's extra outputs)
  int64_t saved_primal_bytes = 0;  // primals the backward reads (held by the caller anyway)
  int64_t save_all_bytes = 0;      // every computed forward value the backward reads (the set B
                                   // without primals): what saving without recomputation keeps
  int64_t all_intermediates_bytes = 0;  // every computed forward value (no partition at all)
  size_t num_saved = 0;
  size_t num_save_all = 0;
  size_t num_recomputed = 0;
};

// What forward() keeps for backward() (autograd.Function's ctx).
class BackwardContext {
 public:
  const std::vector<Tensor>& saved_primals() const { return saved_primals_; }
  const std::vector<Tensor>& saved_values() const { return saved_values_; }
  // Bytes of the saved values held now (0 once released).
  int64_t saved_bytes() const;
  bool released() const { return released_; }
  // After a backward() with create_graph: the backward of the gradients it returned (Listing
  // 5.5's CompiledFunctionBackward.backward): differentiating them again calls it, and it
  // rejects with kDoubleBackwardMessage. Empty (no graph to differentiate) otherwise.
  const BackwardFn& gradients_backward() const { return gradients_backward_; }

 private:
  friend class CompiledFunction;
  BackwardFn gradients_backward_;
  std::vector<Tensor> saved_primals_;
  std::vector<Tensor> saved_values_;
  std::vector<TensorMeta> output_meta_;  // of the forward outputs, for grad_outputs checks
  bool released_ = false;
  uint64_t seed_ = 0;            // of the forward's random ops: the backward draws the same numbers
  const void* owner_ = nullptr;  // the CompiledFunction that made it
};

struct ForwardResult {
  std::vector<Tensor> outputs;           // the forward graph's outputs, in return order
  std::shared_ptr<BackwardContext> ctx;  // for backward()
};

class CompiledFunction {
 public:
  // `compiler` must outlive this object. Throws stax::Error from the joint graph (unknown or
  // non-floating `wrt`, an op without a VJP rule), the partitioner (infeasible budget) or the
  // compiler.
  CompiledFunction(const Graph& forward, std::vector<std::string> wrt, Compiler& compiler,
                   CompiledFunctionOptions options = {});
  // Owns a Compiler made from `config` (unused on the interpreter path).
  CompiledFunction(const Graph& forward, std::vector<std::string> wrt, Config config,
                   CompiledFunctionOptions options = {});
  ~CompiledFunction();
  CompiledFunction(const CompiledFunction&) = delete;
  CompiledFunction& operator=(const CompiledFunction&) = delete;

  // One tensor per forward placeholder, in graph order. `seed` seeds the random ops of this
  // forward and of its backward (default: CompiledFunctionOptions::seed): a caller that wants a
  // new dropout mask per step passes a new seed per call.
  ForwardResult forward(const std::vector<Tensor>& inputs,
                        std::optional<uint64_t> seed = std::nullopt);
  // One gradient per `wrt` name, in that order (see the header comment for grad_outputs).
  std::vector<Tensor> backward(BackwardContext& ctx, const std::vector<Tensor>& grad_outputs = {},
                               const BackwardOptions& options = {});

  // The oracle: the joint graph in the reference interpreter on the same inputs and upstream
  // gradients (same conventions as backward()). Returns the forward outputs, then the gradients.
  std::vector<Tensor> reference(const std::vector<Tensor>& inputs,
                                const std::vector<Tensor>& grad_outputs = {}) const;

  const std::vector<std::string>& wrt() const { return joint_.wrt; }
  const JointGraph& joint() const { return joint_; }
  const partition::PartitionResult& partition() const { return partition_; }
  size_t num_outputs() const { return joint_.num_forward_outputs; }
  bool interpreted() const { return options_.interpret; }
  // The compiled graphs: null on the interpreter path; the backward is null until compiled.
  const CompiledGraph* compiled_forward() const;
  const CompiledGraph* compiled_backward() const;
  bool backward_compiled() const;
  // Compiles the backward graph now, which the first backward() does otherwise (e.g. to pay
  // every compile up front, or to time it); a no-op once compiled and on the interpreter path.
  void compile_backward();
  CompiledFunctionStats stats() const;
  // "saved 8192 B/step (1 value) vs save-all 8192 B (1 value); fw compile 12.1 ms, bw compile
  // (not compiled)"
  std::string stats_str() const;

 private:
  void init(const Graph& forward, std::vector<std::string> wrt);
  // The tangent tensors of the backward graph (one per JointGraph::tangents) from grad_outputs.
  std::vector<Tensor> tangents_of(const std::vector<Tensor>& grad_outputs,
                                  const std::vector<TensorMeta>& output_meta) const;
  const CompiledGraph& ensure_backward();

  std::unique_ptr<Compiler> owned_compiler_;
  Compiler* compiler_ = nullptr;
  CompiledFunctionOptions options_;
  JointGraph joint_;
  partition::PartitionResult partition_;
  std::vector<TensorMeta> output_meta_;
  std::optional<CompiledGraph> forward_compiled_;
  std::optional<CompiledGraph> backward_compiled_;
  mutable std::mutex mutex_;  // guards backward_compiled_ and stats_
  CompiledFunctionStats stats_;
};

}  // namespace stax
