#include "core/partition/partition_split.h"

#include <cassert>
#include <utility>

#include "core/support/error.h"

namespace stax::partition {
namespace {

// Joint-graph node (by Node::index()) -> its copy in the graph being built, or null.
struct NodeMap {
  std::vector<Node*> copy;
  explicit NodeMap(size_t n) : copy(n, nullptr) {}
  Node* at(const Node* n) const {
    Node* c = copy[static_cast<size_t>(n->index())];
    assert(c && "an input is copied before its users");
    return c;
  }
  bool has(const Node* n) const { return copy[static_cast<size_t>(n->index())] != nullptr; }
  void set(const Node* n, Node* c) { copy[static_cast<size_t>(n->index())] = c; }
};

Arg remap(const Arg& a, const NodeMap& m) {
  if (a.is_node()) return Arg(m.at(a.node()));
  if (a.is_list()) {
    Arg::List l;
    l.reserve(a.list().size());
    for (const Arg& e : a.list()) l.push_back(remap(e, m));
    return Arg(std::move(l));
  }
  return a;
}

// Appends a copy of call node n (its inputs already mapped) to g.
Node* copy_call(Graph& g, const Node* n, NodeMap& m) {
  std::vector<Arg> args;
  args.reserve(n->args().size());
  for (const Arg& a : n->args()) args.push_back(remap(a, m));
  Kwargs kwargs;
  for (const auto& [k, v] : n->kwargs()) kwargs.emplace_back(k, remap(v, m));
  Node* c = g.add_node(NodeKind::CallFunction, n->name(), n->op(), std::move(args),
                       std::move(kwargs), n->meta());
  c->attrs = n->attrs;
  m.set(n, c);
  return c;
}

Node* copy_placeholder(Graph& g, const Node* n, NodeMap& m) {
  Node* c = g.add_node(NodeKind::Placeholder, n->name(), nullptr, {}, {}, n->meta());
  c->attrs = n->attrs;
  m.set(n, c);
  return c;
}

enum class Need : uint8_t { kNone, kPrimal, kSaved, kRecompute };

// What the backward needs of each forward value: passed (primal), saved, or recomputed from its
// inputs. Iterative DFS (recompute chains can be long).
std::vector<Need> backward_needs(const RematAnalysis& a, const std::vector<bool>& save,
                                 bool heuristic_forced) {
  std::vector<Need> need(a.values.size(), Need::kNone);
  auto require = [&](const Node* root) {
    const int root_index = a.value_index(root);
    if (root_index < 0) return;  // a tangent or a backward node
    std::vector<size_t> stack{static_cast<size_t>(root_index)};
    while (!stack.empty()) {
      const size_t i = stack.back();
      stack.pop_back();
      if (need[i] != Need::kNone) continue;
      const ValueInfo& v = a.values[i];
      if (v.is_primal) {
        need[i] = Need::kPrimal;
      } else if (save[i]) {
        need[i] = Need::kSaved;
      } else {
        const bool relaxed =
            !heuristic_forced && !v.in_u() &&
            (v.forced == ForceReason::kNearFar || v.forced == ForceReason::kLongChain);
        check(!v.from_source() || relaxed, "partition", "%" + v.node->name(),
              "the save set is not feasible: the backward would recompute %" + v.node->name() +
                  ", which must not be recomputed (" +
                  (v.in_u() ? "in U: " + u_rules_str(v.u_rules)
                            : "forced save: " + std::string(force_reason_name(v.forced))) +
                  ")");
        need[i] = Need::kRecompute;
        for (int in : v.inputs) stack.push_back(static_cast<size_t>(in));
      }
    }
  };
  for (const Node* b : a.backward_nodes)
    for (const Node* in : b->input_nodes()) require(in);
  for (const Node* gr : a.gradients) require(gr);
  return need;
}

// The forward graph: the primals, every value a forward output or a saved value depends on;
// returns the forward outputs, then the saved values.
Graph forward_graph(const Graph& jg, const RematAnalysis& a, const std::vector<Need>& need) {
  const size_t nv = a.values.size();
  std::vector<bool> live(nv, false);
  std::vector<size_t> stack;
  for (const Node* o : a.forward_outputs) stack.push_back(static_cast<size_t>(a.value_index(o)));
  for (size_t i = 0; i < nv; ++i)
    if (need[i] == Need::kSaved) stack.push_back(i);
  while (!stack.empty()) {
    const size_t i = stack.back();
    stack.pop_back();
    if (live[i]) continue;
    live[i] = true;
    for (int in : a.values[i].inputs) stack.push_back(static_cast<size_t>(in));
  }
  Graph fg(jg.registry());
  NodeMap m(jg.size());
  for (size_t i = 0; i < nv; ++i) {
    const ValueInfo& v = a.values[i];
    if (v.is_primal)
      copy_placeholder(fg, v.node, m);
    else if (live[i])
      copy_call(fg, v.node, m);
  }
  std::vector<Node*> results;
  for (const Node* o : a.forward_outputs) results.push_back(m.at(o));
  for (size_t i = 0; i < nv; ++i)
    if (need[i] == Need::kSaved) results.push_back(m.at(a.values[i].node));
  fg.output(std::move(results));
  return fg;
}

// The backward graph: saved primals, saved values and tangents in, each backward node after the
// recomputation of the forward values it reads; the gradients out. Appends the recomputed
// values' names to `recomputed`.
Graph backward_graph(const Graph& jg, const RematAnalysis& a, const std::vector<Need>& need,
                     std::vector<std::string>& recomputed) {
  const size_t nv = a.values.size();
  Graph bg(jg.registry());
  NodeMap m(jg.size());
  for (size_t i = 0; i < nv; ++i)
    if (need[i] == Need::kPrimal) copy_placeholder(bg, a.values[i].node, m);
  for (size_t i = 0; i < nv; ++i)
    if (need[i] == Need::kSaved) copy_placeholder(bg, a.values[i].node, m);
  for (const Node* t : a.tangents) copy_placeholder(bg, t, m);

  // Emits the recomputation of forward value root (inputs first), unless already there.
  auto materialize = [&](const Node* root) {
    if (m.has(root) || a.value_index(root) < 0) return;
    std::vector<std::pair<const ValueInfo*, bool>> stack{{a.find(root), false}};
    while (!stack.empty()) {
      auto [v, expanded] = stack.back();
      stack.pop_back();
      if (m.has(v->node)) continue;
      if (expanded) {
        copy_call(bg, v->node, m);
        recomputed.push_back(v->node->name());
        continue;
      }
      stack.emplace_back(v, true);
      for (auto it = v->inputs.rbegin(); it != v->inputs.rend(); ++it) {
        const ValueInfo* in = &a.values[static_cast<size_t>(*it)];
        if (!m.has(in->node)) stack.emplace_back(in, false);
      }
    }
  };
  for (const Node* b : a.backward_nodes) {
    for (const Node* in : b->input_nodes()) materialize(in);
    copy_call(bg, b, m);
  }
  std::vector<Node*> grads;
  for (const Node* gr : a.gradients) {
    materialize(gr);
    grads.push_back(m.at(gr));
  }
  bg.output(std::move(grads));
  return bg;
}

}  // namespace

SplitGraphs split_joint_graph(const JointGraph& joint, const RematAnalysis& a,
                              const std::vector<bool>& save, bool heuristic_forced) {
  const std::vector<Need> need = backward_needs(a, save, heuristic_forced);
  SplitGraphs out;
  for (size_t i = 0; i < a.values.size(); ++i) {
    if (need[i] == Need::kPrimal) out.saved_primals.push_back(a.values[i].node->name());
    if (need[i] == Need::kSaved) out.saved.push_back(a.values[i].node->name());
  }
  out.forward = forward_graph(joint.graph, a, need);
  out.backward = backward_graph(joint.graph, a, need, out.recomputed);
  return out;
}

}  // namespace stax::partition
