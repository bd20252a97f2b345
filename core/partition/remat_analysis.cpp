#include "core/partition/remat_analysis.h"

#include <algorithm>
#include <limits>
#include <unordered_set>

#include "core/graph/op_registry.h"
#include "core/graph/op_traits.h"
#include "core/partition/maxflow.h"
#include "core/support/error.h"

namespace stax::partition {
namespace {

bool has(const OpDef& op, OpTrait trait) { return default_op_traits().has(op, trait); }

// Indexing ops whose kernel writes a whole buffer (index_put, scatter, scatter_add).
bool is_scatter_like(const OpDef& op) {
  return op.category == OpCategory::Indexing && has(op, kTraitOpaque);
}

// Composite ops whose decomposition is pointwise (cheap and fusible like any pointwise op). The
// other composites hold a reduction over their input or a matmul.
bool is_pointwise_composite(const OpDef& op) {
  return op.category == OpCategory::Composite && has(op, kTraitPointwiseComposite);
}

// Composite ops that hold a matrix product (linear): their inputs are materialized for it.
bool is_opaque_composite(const OpDef& op) {
  return op.category == OpCategory::Composite && has(op, kTraitOpaque);
}

bool lowered(const Node& n, const RematPolicy& policy) {
  return !policy.has_lowering || policy.has_lowering(n);
}

// Which output slots a joint-graph node is returned in, by node position.
struct Sets {
  const RematAnalysis* a = nullptr;
  std::vector<uint8_t> returned;  // bit 1: a forward output, bit 2: a gradient
  bool forward(const Node* n) const { return a->value_index(n) >= 0; }
  bool returned_in(const Node* n, Phase phase) const {
    return returned[static_cast<size_t>(n->index())] & (phase == Phase::Forward ? 1 : 2);
  }
};

// Whether some user of n in `phase` cannot fuse with it (views transparent), or n is returned in
// the output slots of that phase.
bool read_opaquely(const Node* n, Phase phase, const Sets& sets, const RematPolicy& policy,
                   int depth = 0) {
  for (const Node* u : n->users()) {
    if (u->is_output()) {
      if (sets.returned_in(n, phase)) return true;
      continue;
    }
    const bool u_forward = sets.forward(u);
    if (u_forward != (phase == Phase::Forward)) continue;
    if (is_opaque_consumer(*u, policy)) return true;
    // Views alias their input: a view chain ends in the same kind of reader. The depth bound only
    // guards against pathological chains (a long view chain is read opaquely or not at its end).
    if (u->op()->category == OpCategory::View && depth < 64 &&
        read_opaquely(u, phase, sets, policy, depth + 1))
      return true;
  }
  return false;
}

std::string where(const Node* n) { return "%" + n->name(); }

}  // namespace

std::string_view force_reason_name(ForceReason r) {
  switch (r) {
    case ForceReason::kNone: return "";
    case ForceReason::kNearFar: return "near-far";
    case ForceReason::kLongChain: return "long-chain";
    case ForceReason::kUser: return "user";
  }
  return "";
}

std::string u_rules_str(uint8_t rules) {
  std::string s;
  auto add = [&](uint8_t bit, const char* name) {
    if (rules & bit) s += (s.empty() ? "" : ",") + std::string(name);
  };
  add(kUNotCheap, "not-cheap");
  add(kUMaterializedInBackward, "bw-materialized");
  add(kUReduction, "reduction");
  return s.empty() ? "-" : s;
}

bool is_not_cheap(const Node& n, const RematPolicy& policy) {
  if (!n.is_call()) return false;
  switch (n.op()->category) {
    case OpCategory::Extern: return true;
    case OpCategory::Random:
      if (policy.recompute_random && n.attrs.count("rng_seed")) return false;
      return true;
    case OpCategory::Composite:
      if (!is_pointwise_composite(*n.op())) return true;
      break;
    case OpCategory::Indexing:
      if (is_scatter_like(*n.op())) return true;
      break;
    default: break;
  }
  return !lowered(n, policy);
}

bool is_opaque_consumer(const Node& n, const RematPolicy& policy) {
  if (!n.is_call()) return false;
  const OpDef& op = *n.op();
  if (op.category == OpCategory::Extern || op.category == OpCategory::Random ||
      is_scatter_like(op) || is_opaque_composite(op))
    return true;
  return !lowered(n, policy);
}

bool is_fusible_producer(const Node& n, const RematPolicy& policy) {
  if (!n.is_call()) return false;
  switch (n.op()->category) {
    case OpCategory::Pointwise:
    case OpCategory::View:
    case OpCategory::Creation: return lowered(n, policy);
    case OpCategory::Composite: return is_pointwise_composite(*n.op()) && lowered(n, policy);
    case OpCategory::Indexing: return !is_scatter_like(*n.op()) && lowered(n, policy);
    default: return false;
  }
}

const ValueInfo* RematAnalysis::find(const Node* n) const {
  const int i = value_index(n);
  return i < 0 ? nullptr : &values[static_cast<size_t>(i)];
}

const ValueInfo* RematAnalysis::find(std::string_view name) const {
  for (const ValueInfo& v : values)
    if (v.node->name() == name) return &v;
  return nullptr;
}

namespace {

constexpr int kFar = std::numeric_limits<int>::max() / 2;

// The forward values (primals, then [FW] calls in graph order), the backward nodes and the
// tangents; returns the forward calls in order.
std::vector<const Node*> collect_values(const JointGraph& joint, RematAnalysis& a) {
  const Graph& g = joint.graph;
  std::unordered_set<std::string> tangent_names(joint.tangents.begin(), joint.tangents.end());
  std::vector<const Node*> forward_calls;
  for (const Node* n : g.nodes()) {
    if (n->is_output()) continue;
    const bool backward = n->phase() == Phase::Backward;
    if (n->is_placeholder()) {
      if (backward || tangent_names.count(n->name())) {
        a.tangents.push_back(n);
      } else {
        a.value_of[static_cast<size_t>(n->index())] = static_cast<int>(a.values.size());
        ValueInfo v;
        v.node = n;
        v.is_primal = true;
        a.values.push_back(v);
      }
      continue;
    }
    if (backward) {
      a.backward_nodes.push_back(n);
      continue;
    }
    ValueInfo v;
    v.node = n;
    for (const Node* in : n->input_nodes()) {
      const int i = a.value_index(in);
      check(i >= 0, "partition", where(n),
            "forward node reads %" + in->name() +
                ", which is not a forward value (is the joint graph's [FW]/[BW] marking right?)");
      v.inputs.push_back(i);
    }
    a.value_of[static_cast<size_t>(n->index())] = static_cast<int>(a.values.size());
    a.values.push_back(v);
    forward_calls.push_back(n);
  }
  return forward_calls;
}

// Outputs: the forward's, then the gradients.
void collect_outputs(const JointGraph& joint, RematAnalysis& a, Sets& sets) {
  std::vector<Node*> outs = joint.graph.outputs();
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!outs[i]) continue;
    if (i < joint.num_forward_outputs) {
      a.forward_outputs.push_back(outs[i]);
      sets.returned[static_cast<size_t>(outs[i]->index())] |= 1;
    } else {
      a.gradients.push_back(outs[i]);
      sets.returned[static_cast<size_t>(outs[i]->index())] |= 2;
    }
  }
}

// B: read by a backward node or returned as a gradient.
void mark_backward_reads(RematAnalysis& a) {
  for (const Node* b : a.backward_nodes)
    for (const Node* in : b->input_nodes())
      if (const int i = a.value_index(in); i >= 0) a.values[static_cast<size_t>(i)].in_b = true;
  for (const Node* gr : a.gradients)
    if (const int i = a.value_index(gr); i >= 0) a.values[static_cast<size_t>(i)].in_b = true;
}

// d(v): hops to the first backward reader through forward users (users follow in graph order,
// so one reverse sweep suffices).
void compute_distances(RematAnalysis& a, const Sets& sets) {
  std::vector<int> hops(a.values.size(), kFar);
  for (size_t i = a.values.size(); i-- > 0;) {
    const Node* n = a.values[i].node;
    int best = kFar;
    for (const Node* u : n->users()) {
      if (u->is_output()) {
        if (sets.returned_in(n, Phase::Backward)) best = std::min(best, 1);
      } else if (const int j = a.value_index(u); j >= 0) {
        const int h = hops[static_cast<size_t>(j)];
        if (h < kFar) best = std::min(best, h + 1);
      } else {
        best = std::min(best, 1);  // a backward reader
      }
    }
    hops[i] = best;
    a.values[i].distance = best >= kFar ? 100 : std::clamp(best, 1, 100);
  }
}

// Whether value i is a chain of view ops (permute, t, view, expand ...) of one primal. Its inputs
// come before it in a.values, so one pass in order suffices.
std::vector<bool> views_of_primals(const RematAnalysis& a, const RematPolicy& policy) {
  std::vector<bool> out(a.values.size(), false);
  for (size_t i = 0; i < a.values.size(); ++i) {
    const ValueInfo& v = a.values[i];
    if (v.is_primal || v.inputs.size() != 1 || v.node->input_nodes().size() != 1 ||
        v.node->op()->category != OpCategory::View || !lowered(*v.node, policy))
      continue;
    const size_t in = static_cast<size_t>(v.inputs[0]);
    out[i] = a.values[in].is_primal || out[in];
  }
  return out;
}

// Bytes, U's three cases, beta and the capacity of every forward value.
void classify_values(RematAnalysis& a, const Sets& sets, const RematPolicy& policy) {
  const std::vector<bool> primal_view = views_of_primals(a, policy);
  for (size_t i = 0; i < a.values.size(); ++i) {
    ValueInfo& v = a.values[i];
    const Node* n = v.node;
    v.bytes = n->meta().nbytes();
    if (v.is_primal) {
      v.written_anyway = true;
    } else {
      if (is_not_cheap(*n, policy)) v.u_rules |= kUNotCheap;
      // A view of a primal is in memory already (the primal's bytes, which the backward holds):
      // an opaque backward reader reads it in place, so case 2 does not apply.
      if (v.in_b && !primal_view[i] && read_opaquely(n, Phase::Backward, sets, policy))
        v.u_rules |= kUMaterializedInBackward;
      if (policy.ban_recompute_reductions && n->op()->category == OpCategory::Reduction) {
        int64_t in_bytes = 0;
        for (int in : v.inputs) in_bytes += a.values[static_cast<size_t>(in)].node->meta().nbytes();
        if (policy.reduction_ratio * v.bytes < in_bytes) v.u_rules |= kUReduction;
      }
      v.written_anyway = sets.returned_in(n, Phase::Forward) || is_not_cheap(*n, policy) ||
                         n->op()->category == OpCategory::Reduction ||
                         read_opaquely(n, Phase::Forward, sets, policy);
    }
    v.capacity = remat_capacity(v.bytes, v.distance, v.written_anyway);
  }
}

// must_recompute and must_save, by node name.
void apply_user_policy(const Graph& g, RematAnalysis& a, const RematPolicy& policy) {
  auto lookup = [&](const std::string& name, const char* what) -> ValueInfo& {
    const Node* n = g.find(name);
    check(n != nullptr, "partition", name, std::string(what) + ": no value named '" + name + "'");
    const int i = a.value_index(n);
    check(i >= 0, "partition", where(n),
          std::string(what) + ": %" + name + " is not a forward value");
    return a.values[static_cast<size_t>(i)];
  };
  for (const std::string& name : policy.must_recompute) {
    ValueInfo& v = lookup(name, "must_recompute");
    v.must_recompute = true;
    v.capacity = kInfinite;
  }
  for (const std::string& name : policy.must_save) {
    ValueInfo& v = lookup(name, "must_save");
    if (!v.is_primal) v.forced = ForceReason::kUser;
  }
}

// Forced save: read near and far in the forward (positions among the forward calls).
void force_near_far(const Graph& g, RematAnalysis& a, const std::vector<const Node*>& forward_calls,
                    const RematPolicy& policy) {
  std::vector<int> fpos(g.size(), -1);
  for (size_t i = 0; i < forward_calls.size(); ++i)
    fpos[static_cast<size_t>(forward_calls[i]->index())] = static_cast<int>(i);
  for (ValueInfo& v : a.values) {
    if (v.is_primal || v.from_source()) continue;
    const int p = fpos[static_cast<size_t>(v.node->index())];
    int nearest = kFar, farthest = -1;
    for (const Node* u : v.node->users()) {
      if (u->is_output()) continue;
      const int q = fpos[static_cast<size_t>(u->index())];
      if (q < 0) continue;
      nearest = std::min(nearest, q - p);
      farthest = std::max(farthest, q - p);
    }
    if (nearest <= policy.near_distance && farthest >= policy.far_distance)
      v.forced = ForceReason::kNearFar;
  }
}

// Forced save: the end of a long fusible chain that the backward needs.
void force_long_chains(RematAnalysis& a, const RematPolicy& policy) {
  for (ValueInfo& v : a.values) {
    if (v.is_primal || v.from_source() || !is_fusible_producer(*v.node, policy)) continue;
    int longest = 0;
    for (int in : v.inputs) longest = std::max(longest, a.values[static_cast<size_t>(in)].chain);
    v.chain = longest + 1;
    if (policy.force_save_long_chains && policy.long_chain_length > 0 && v.in_b &&
        v.chain >= policy.long_chain_length) {
      v.forced = ForceReason::kLongChain;
      v.chain = 0;
    }
  }
}

}  // namespace

RematAnalysis analyze_remat(const JointGraph& joint, const RematPolicy& policy) {
  const Graph& g = joint.graph;
  check(g.output_node() != nullptr, "partition", "joint graph",
        "the joint graph has no output node");
  RematAnalysis a;
  a.value_of.assign(g.size(), -1);
  Sets sets{&a, std::vector<uint8_t>(g.size(), 0)};
  const std::vector<const Node*> forward_calls = collect_values(joint, a);
  collect_outputs(joint, a, sets);
  mark_backward_reads(a);
  compute_distances(a, sets);
  classify_values(a, sets, policy);
  apply_user_policy(g, a, policy);
  if (policy.force_save_near_far && policy.far_distance > 0)
    force_near_far(g, a, forward_calls, policy);
  force_long_chains(a, policy);
  return a;
}

}  // namespace stax::partition
