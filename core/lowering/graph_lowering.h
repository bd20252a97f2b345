// GraphLowering (seed §6.1): interprets the operator-level graph node by node in topological
// order, producing IR nodes instead of tensors.
//   placeholder    -> InputBuffer with the example input's FixedLayout
//   call_function  -> the op's lowering rule (lowering_rules.h), or a FallbackKernel
//   output         -> every returned value realized (FixedLayout, row-major unless it is a view of
//                     fixed storage, which is returned as that view without a copy)
// After each node: a value that a graph output is, or that an extern/fallback user needs in
// memory, is realized at once; a pointwise value with several users is realized when the
// backend's RealizationThresholds say so (§6.6); single-user values are always inlined, except a
// pointwise value whose reshape / permute an extern reads: the value itself is realized then (once;
// the extern reads a view of it), not a copy of the view per reader.
// When lowering ends, flexible layouts are frozen (§6.4) and every ComputedBuffer's LoopBody is
// recorded; buffers are listed in an order where producers come before consumers.
//
// The result, LoweredGraph, is what the scheduler / code generation consumes: ComputedBuffers
// (one kernel each for now, with their LoopBody; make_kernel_desc() in core/codegen/kernel_desc.h turns
// one into the plugin's C description), ExternKernels and FallbackKernels in execution order, plus
// the graph's inputs and outputs. It refers to the graph's nodes (origins, extern and fallback
// kernels, and the closures of inner_fn): the Graph must outlive it.
#pragma once

#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/graph/graph.h"
#include "core/ir/ir.h"
#include "core/lowering/lowering_rules.h"
#include "core/lowering/realization.h"
#include "core/policy/backend_policy.h"
#include "core/support/name_map.h"

namespace stax {

// The lowering's part of the backend's BackendPolicy (core/policy/backend_policy.h).
struct LoweringOptions {
  RealizationThresholds thresholds = RealizationThresholds::cpu();  // the backend's §6.6 rules
  SplitReductionFn split_reduction;  // the backend's §6.5 policy; null: never split
  // The backend takes ops.def's bitwise_and / or / xor (plugin ABI 1.8); false: integer and / or /
  // xor decline to the counted fallback (BackendPolicy::bitwise_opcodes).
  bool bitwise_opcodes = true;
};

// One returned value: the buffer holding it and the layout to read it with (the buffer's own
// layout, or a view of its storage, possibly of a graph input).
struct GraphOutput {
  BufferPtr buffer;
  Layout layout;
};

struct LoweredGraph {
  std::vector<std::shared_ptr<InputBuffer>> inputs;  // one per placeholder, in graph order
  std::vector<BufferPtr>
      buffers;  // ComputedBuffer / ExternKernel / FallbackKernel, producers first
  std::vector<GraphOutput> outputs;  // in return order
  NameMap<const Buffer*> by_name;  // see find()

  // An input or a buffer by name, or null: through the name index when it is complete (built by
  // lower_graph; index() rebuilds it after editing the lists), else by a linear search.
  const Buffer* find(std::string_view name) const;
  // Sets the name index and the dense ids: buffers[k] has id k, inputs[j] id buffers.size() + j
  // (Buffer::graph_id).
  void index();
  size_t num_ids() const { return buffers.size() + inputs.size(); }
  const Buffer* by_id(int64_t id) const;  // null when out of range
  // Whether every buffer and input still has its id (no list edited since index()).
  bool is_indexed() const {
    for (size_t k = 0; k < num_ids(); ++k)
      if (by_id(static_cast<int64_t>(k))->graph_id() != static_cast<int64_t>(k)) return false;
    return true;
  }
  // The id of `b` when it is this graph's buffer or input (by its graph_id, checked), else -1.
  int64_t id_of(const Buffer* b) const;
  int64_t id_of(std::string_view name) const;  // -1 when no buffer or input has that name
  // The id of the buffer a load / store op names: its buffer_id when that still names
  // op.buffer, else by name; -1 for none.
  int64_t id_of_op(const LoopOp& op) const;
  // The Listing 6.2 dump: every InputBuffer, then every buffer, one per paragraph.
  std::string str(FormatStyle style = FormatStyle::Full) const;
};

// Lowers `g` (every call must have a registered op; metas inferred).
LoweredGraph lower_graph(const Graph& g, const LoweringOptions& options = {},
                         const LoweringTable& table = default_lowering_table());

// The interpreter state lowering rules work with.
class GraphLowering {
 public:
  GraphLowering(const Graph& g, const LoweringOptions& options, const LoweringTable& table);
  LoweredGraph run();

  // ---- for lowering rules ----
  const Graph& graph() const { return graph_; }
  const LoweringOptions& options() const { return options_; }
  const Node& current() const { return *current_; }          // the node being lowered
  IRPtr value(const Node* n) const;                          // a lowered node's value
  IRPtr input(const Node& n, std::string_view param) const;  // the value of a Tensor parameter

  // The origins of a node built from `inputs` while lowering current(): current() plus what the
  // inputs were lowered from (realized computed buffers contribute nothing).
  OriginSet origins_for(const std::vector<IRPtr>& inputs) const;
  // Wraps new Loops built from `inputs` into a StorageBox (origins set).
  IRPtr box(const std::shared_ptr<Loops>& loops, const std::vector<IRPtr>& inputs);
  // make_view() of `base` with origins set.
  IRPtr view(const IRPtr& base, Shape size, Reindex reindex);

  // Realizes a StorageBox's Loops into a ComputedBuffer with a FlexibleLayout (a no-op when it is
  // realized already) and returns the buffer. Other values are first copied into a new box.
  BufferPtr realize(const IRPtr& value);
  // A realized buffer + fixed layout for an extern / fallback kernel argument: fixed storage and
  // its views as they are; other views of realized buffers over the frozen buffer when affine;
  // anything else realized (copied) into a row-major buffer.
  KernelInput realize_input(const IRPtr& value);
  // Names and registers a new buffer ("buf<N>", N counting graph inputs and buffers so far).
  std::string new_buffer_name();
  void register_buffer(const BufferPtr& buffer);

 private:
  void lower_placeholder(const Node& n);
  void lower_call(const Node& n);
  IRPtr fallback(const Node& n);
  GraphOutput realize_output(const Node& n);
  bool user_needs_memory(const Node& n) const;
  void finalize(LoweredGraph& out);

  const Graph& graph_;
  LoweringOptions options_;
  const LoweringTable& table_;
  const Node* current_ = nullptr;
  // The lowered value of each node, at the node's position in the graph (Node::index()).
  std::vector<IRPtr> env_;
  IRPtr* slot(const Node* n);
  std::map<const Node*, GraphOutput> outputs_done_;
  // Copies realize_input made of views (a permute of a buffer an extern needs contiguous), by
  // base and index: a second extern reading the same view of the same base reads the same copy.
  std::map<std::pair<const IRNode*, std::string>, BufferPtr> realized_views_;
  std::vector<std::shared_ptr<InputBuffer>> inputs_;
  std::vector<BufferPtr> buffers_;
  int name_counter_ = 0;
};

// Records `value`'s loader over its size on fresh iteration variables (no store): what the
// realization rules count (§6.6).
LoopBody record_loader(const IRPtr& value);

}  // namespace stax
