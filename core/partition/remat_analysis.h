// What the min-cut partitioner (seed §5.4) knows of each forward value of a joint graph: its bytes,
// whether the backward reads it (the set B), whether it may be recomputed (the set U), its
// distance to the backward, its beta and its capacity c(v). partitioner.h turns this into the
// rematerialization network of Definition 5.2 and cuts it.
//
// Decisions (each with the seed's reasoning; the thresholds live in RematPolicy):
//
// Forward values. Every [FW] placeholder (a primal) and every [FW] call node. Tangents and [BW]
//   nodes are not forward values. A primal gets a split edge like any value (beta = 1: it is in
//   memory already) but is never put in U: it cannot be recomputed, and it need not be, because
//   the caller holds the forward's inputs until the backward has run (§5.6's autograd.Function
//   keeps them), so the backward graph receives the primals it reads as inputs ("saved primals",
//   AOTAutograd's saved tensors that are inputs). With no edge from s, a primal's split edge is
//   never on an s-t path: Table 5.1 has exactly one s-t path although %primals_1 is in B.
//
// B. Forward values read by a [BW] node (any argument, lists included) or returned as a gradient
//   (a joint output after the forward outputs).
//
// U (§5.4's three cases; only call nodes, never primals). The ops named below are found by their
// category and the traits their families register (core/graph/op_traits.h: kTraitPointwiseComposite
// for silu, kTraitOpaque for linear and the scatter writes), never by name:
//   1 NotCheap: the op is not cheap to recompute or is no loop-level kernel: Extern (mm, bmm,
//     matmul, addmm), Random (the joint graph gives them an rng_seed so a recomputation would draw
//     the same numbers, but by default Stax never spends an RNG replay on a backward: drawing is
//     not bandwidth-bound pointwise work, and saving the draw is what AOTAutograd does without
//     functionalized RNG; RematPolicy::recompute_random allows it), Composite ops other than the pointwise silu (linear holds a matmul;
//     softmax, log_softmax, layer_norm and the *_backward_data ops decompose into reductions
//     over their input: recomputing them re-reads it all; an unknown composite counts as not
//     cheap), the
//     scatter-like Indexing ops (index_put, scatter, scatter_add write a buffer), and any op
//     RematPolicy::has_lowering rejects (a fallback kernel).
//   2 MaterializedInBackward: a [BW] user cannot fuse with the value, so the backward writes it
//     to memory anyway and recomputing it saves no traffic. A user cannot fuse when it is an
//     "opaque" consumer (Extern, Random, linear, scatter-like Indexing, no lowering) or the graph's
//     return (a gradient that is the value itself); views are transparent: the users of a [BW]
//     view of the value count as its users (Listing 5.2's t(x) feeding matmul_0). Not for a value
//     that is a chain of views of a primal (a Linear's permuted weight): its elements are the
//     primal's, already in memory and held for the backward, which re-views the primal and reads
//     it in place (DECISIONS 63; saved, it was a forward output counted in the saved bytes).
//   3 Reduction: a Reduction whose 4 x output bytes < the sum of its tensor inputs' bytes.
//
// d(v): the number of forward steps from v to its first backward reader, i.e. the fewest hops
//   along user edges from v to a [BW] node (or to the gradient slots of the return), only through
//   forward nodes; clamped to [1, 100]; 100 when no backward node is reachable. Table 5.1: matmul
//   is read by gelu_backward directly, d = 1; gelu reaches only sum_0 and the return, d = 100.
//   (This is AOTAutograd's dist_from_bw.)
//
// beta(v) = 1 when v is written to memory in the forward anyway, else 2: a primal; a forward
//   output; a U-case-1 op or a Reduction (their kernels write their result); or v has a [FW]
//   user that cannot fuse with it (an extern kernel's input; views transparent as above).
//   Table 5.1: matmul (extern output) 1, gelu (fused into sum_0) 2.
//
// c(v) = remat_capacity(bytes, d, beta == 1) = trunc(beta * b * 1.1^d) (maxflow.h); values named
//   in RematPolicy::must_recompute get kInfinite (they can be neither saved nor, when in U,
//   recomputed: that is how no finite cut arises, and the partitioner then saves all of B).
//
// Forced saves (§5.4 "two additional rules"): a forced value gets s -> v_in like a U value, so no
// backward recomputation may pass through it: if the backward needs it, the cut saves it (or
// values below it). The two heuristic rules mark only call nodes not already in U; must_save marks
// any call node (primals are always available anyway).
//   NearFar ("a value read both nearby and far away"): v has a [FW] user at most
//     near_distance forward steps after it and one at least far_distance steps after it
//     (steps = positions among the forward call nodes, the forward's execution order). Such a
//     value is materialized and held across a long stretch of the forward anyway (its far reader
//     is another kernel: AOTAutograd's "used far apart" ban, the residual-connection pattern), so
//     keeping it to the backward costs little, while recomputing it would keep its inputs alive
//     instead. Only forward readers count: every value the backward reads is read "far" by
//     construction, so counting backward readers would force-save most of B and disable
//     recomputation; the distance factor 1.1^d already charges backward lifetimes.
//   LongChain ("a value at the end of a long fusible chain"): chain(v) = 1 + max chain(u) over
//     inputs u that are forward calls of a fusible op (Pointwise, View, gather-like Indexing,
//     Creation, silu) neither in U nor forced; chain = 0 at primals, U and forced values. A value
//     in B with chain >= long_chain_length is forced, and its chain restarts at 0. So recomputing
//     any value of B drags at most long_chain_length - 1 fusible ops into the backward.
//   User: names in RematPolicy::must_save.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/autodiff/joint_graph.h"

namespace stax::partition {

// Heuristic thresholds and user policy. The defaults are what Stax uses.
struct RematPolicy {
  // U case 3: a reduction is in U when reduction_ratio * output bytes < input bytes.
  bool ban_recompute_reductions = true;
  int64_t reduction_ratio = 4;
  // Forced save "read near and far" (forward positions, see above). 0 disables.
  bool force_save_near_far = true;
  int near_distance = 1;
  int far_distance = 16;
  // Forced save "end of a long fusible chain". 0 disables.
  bool force_save_long_chains = true;
  int long_chain_length = 8;
  // Values the user wants saved (forced) or never saved (capacity kInfinite), by node name.
  // Unknown names and names of non-forward values are errors.
  std::vector<std::string> must_save;
  std::vector<std::string> must_recompute;
  // Let the backward recompute random ops that carry an rng_seed (AOTAutograd's
  // functionalize_rng_ops): the interpreter seeds a node from its rng_seed, so the recomputation
  // draws the forward's numbers (dropout's mask rematerialised instead of saved). Off: random ops
  // are in U (NotCheap) and their results are saved.
  bool recompute_random = false;
  // Whether an op has a loop-level lowering; ops without one run as fallback kernels (U case 1,
  // opaque consumers). Null: every registered op counts as lowered. `stax grad` can pass a check
  // against core/lowering's LoweringTable.
  std::function<bool(const Node&)> has_lowering;
};

// Why a value is in U (a bit set).
enum URule : uint8_t {
  kUNone = 0,
  kUNotCheap = 1,
  kUMaterializedInBackward = 2,
  kUReduction = 4,
};

enum class ForceReason { kNone, kNearFar, kLongChain, kUser };

std::string_view force_reason_name(ForceReason r);  // "", "near-far", "long-chain", "user"
std::string u_rules_str(uint8_t rules);             // "not-cheap,bw-materialized" or "-"

struct ValueInfo {
  const Node* node = nullptr;
  bool is_primal = false;
  int64_t bytes = 0;
  int distance = 100;           // d(v), clamped to [1, 100]
  bool written_anyway = false;  // beta == 1
  int64_t capacity = 0;         // c(v), or kInfinite for must_recompute
  bool in_b = false;            // read by the backward
  uint8_t u_rules = kUNone;     // why it is in U
  ForceReason forced = ForceReason::kNone;
  bool must_recompute = false;
  int chain = 0;            // fusible chain length ending here (LongChain rule)
  std::vector<int> inputs;  // the forward values it reads (indices into values), distinct

  int beta() const { return written_anyway ? 1 : 2; }
  bool in_u() const { return u_rules != kUNone; }
  // Connected to s in the network: in U or forced.
  bool from_source() const { return in_u() || forced != ForceReason::kNone; }
};

struct RematAnalysis {
  // The forward values in graph order (primals first as they come, then forward calls).
  std::vector<ValueInfo> values;
  // Joint-graph node position (Node::index()) -> index into values, or -1.
  std::vector<int> value_of;
  // The forward's outputs and the gradients (joint outputs after the forward outputs).
  std::vector<const Node*> forward_outputs;
  std::vector<const Node*> gradients;
  // [BW] nodes in graph order (tangents excluded) and the tangent placeholders in order.
  std::vector<const Node*> backward_nodes;
  std::vector<const Node*> tangents;

  // The index into values of a joint-graph node, or -1 (a tangent, a [BW] node, the output).
  int value_index(const Node* n) const {
    const int64_t i = n ? n->index() : -1;
    return i >= 0 && static_cast<size_t>(i) < value_of.size() ? value_of[static_cast<size_t>(i)]
                                                              : -1;
  }
  const ValueInfo* find(const Node* n) const;
  const ValueInfo* find(std::string_view name) const;
};

// Classifies the forward values of `joint`. Throws stax::Error("partition", ...) when a [FW] node
// reads a [BW] value, when the joint graph has no output node, or for an unknown name in
// must_save / must_recompute.
RematAnalysis analyze_remat(const JointGraph& joint, const RematPolicy& policy = {});

// The op classification the rules above use (exposed for tests and reports).
bool is_opaque_consumer(const Node& n, const RematPolicy& policy);   // cannot fuse with inputs
bool is_fusible_producer(const Node& n, const RematPolicy& policy);  // cheap, fusible op
bool is_not_cheap(const Node& n, const RematPolicy& policy);         // U case 1

}  // namespace stax::partition
