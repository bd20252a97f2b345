#include "core/autodiff/joint_graph.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "core/graph/multi_output.h"
#include "core/graph/op_registry.h"
#include "core/graph/op_traits.h"
#include "core/support/error.h"

namespace stax {
namespace {

std::string where(const Node* n) { return "%" + n->name(); }

void check_wrt(const Graph& forward, const std::vector<std::string>& wrt) {
  std::set<std::string> seen;
  for (const auto& name : wrt) {
    Node* n = forward.find(name);
    if (!n || !n->is_placeholder())
      throw Error("autodiff", name,
                  "gradients can only be requested for placeholders; '" + name + "' is " +
                      (n ? "a call_function node" : "not a value of the graph"));
    if (!is_floating(n->dtype()) && !is_complex(n->dtype()))
      throw Error("autodiff", where(n),
                  "cannot differentiate with respect to a " + std::string(dtype_name(n->dtype())) +
                      " placeholder (only floating-point and complex inputs have gradients)");
    if (!seen.insert(name).second)
      throw Error("autodiff", where(n), "placeholder '" + name + "' is named twice in wrt");
  }
}

// Values that depend on a wrt placeholder through differentiable ops and are floating-point or
// complex (an FFT's spectrum between a real input and a real loss).
std::unordered_set<const Node*> requires_grad(const Graph& g, const std::vector<std::string>& wrt) {
  std::unordered_set<const Node*> out;
  for (const auto& name : wrt) out.insert(g.find(name));
  for (Node* n : g.nodes()) {
    if (!n->is_call() || !n->op()->differentiable ||
        !(is_floating(n->dtype()) || is_complex(n->dtype())))
      continue;
    for (Node* in : n->input_nodes())
      if (out.count(in)) {
        out.insert(n);
        break;
      }
  }
  return out;
}

// A gradient that places values into zeros along one dim: a `cat` of zero blocks and value blocks
// (a slice's VJP, core/ops/view/vjp.cpp's embed_slice; split, chunk and narrow slice). Its blocks
// are [begin, end) along `dim`, `value` null for a zero block.
struct CatBlock {
  int64_t begin = 0, end = 0;
  Node* value = nullptr;
};

bool plays(const Node* n, OpRole role) {
  return n->is_call() && n->op()->name() == default_op_traits().op(role);
}

bool zero_padded_cat(const Node* n, int64_t& dim, std::vector<CatBlock>& blocks) {
  if (!plays(n, OpRole::kCat)) return false;
  const int64_t rank = n->meta().dim();
  const Arg& list = n->arg("tensors");
  const Arg& d = n->arg("dim");
  if (rank == 0 || !list.is_list() || !d.is_int()) return false;
  dim = d.to_int() < 0 ? d.to_int() + rank : d.to_int();
  if (dim < 0 || dim >= rank) return false;
  blocks.clear();
  int64_t at = 0;
  for (const Arg& a : list.list()) {
    if (!a.is_node()) return false;
    Node* part = a.node();
    // Every part has the cat's rank and dtype (a 1-D empty part of a legacy cat is refused).
    if (part->meta().dim() != rank || part->dtype() != n->dtype()) return false;
    const int64_t size = part->shape()[static_cast<size_t>(dim)];
    blocks.push_back({at, at + size, plays(part, OpRole::kZeros) ? nullptr : part});
    at += size;
  }
  return true;
}

// The sum of two zero-padded cats whose value blocks do not overlap (the three slices of a fused
// qkv projection: cat(dq, 0, 0) + cat(0, dk, 0) + cat(0, 0, dv)) is one cat of the value blocks:
// without this, each element of the sum is gathered from three zero-padded operands and added
// twice to zeros. The bits are the sum's except that a -0 gradient element stays -0 (x + 0 is +0
// there), which is what torch's split backward (a cat) gives. nullptr when the rewrite does not
// apply.
Node* merge_zero_padded(const Emitter& e, Node* a, Node* b) {
  int64_t da = 0, db = 0;
  std::vector<CatBlock> ba, bb;
  if (a->shape() != b->shape() || a->dtype() != b->dtype() || !zero_padded_cat(a, da, ba) ||
      !zero_padded_cat(b, db, bb) || da != db)
    return nullptr;
  std::vector<CatBlock> values;
  for (const auto* blocks : {&ba, &bb})
    for (const CatBlock& c : *blocks)
      if (c.value && c.end > c.begin) values.push_back(c);
  std::sort(values.begin(), values.end(),
            [](const CatBlock& x, const CatBlock& y) { return x.begin < y.begin; });
  for (size_t i = 1; i < values.size(); ++i)
    if (values[i].begin < values[i - 1].end) return nullptr;  // overlapping values: a real sum
  const Shape& full = a->shape();
  const int64_t extent = full[static_cast<size_t>(da)];
  std::vector<Arg> parts;
  int64_t at = 0;
  auto zeros_to = [&](int64_t end) {
    if (end <= at) return;
    Shape s = full;
    s[static_cast<size_t>(da)] = end - at;
    parts.emplace_back(e.zeros(s, a->dtype(), a->meta().device));
    at = end;
  };
  for (const CatBlock& c : values) {
    zeros_to(c.begin);
    parts.emplace_back(c.value);
    at = c.end;
  }
  zeros_to(extent);
  if (parts.size() == 1) return parts[0].node();
  return e.call(default_op_traits().op(OpRole::kCat), {Arg(std::move(parts)), da});
}

// Removes backward call nodes nobody uses (a rule's intermediate that turned out unneeded).
void remove_dead_backward(Graph& g) {
  for (bool changed = true; changed;) {
    changed = false;
    std::vector<Node*> nodes = g.nodes();
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      Node* n = *it;
      if (n->is_call() && n->phase() == Phase::Backward && n->num_users() == 0) {
        g.erase(n);
        changed = true;
      }
    }
  }
}

}  // namespace

JointGraph build_joint_graph(const Graph& forward, const std::vector<std::string>& wrt,
                             const VjpTable& rules) {
  if (!forward.output_node())
    throw Error("autodiff", "graph", "the forward graph has no output node");
  check_wrt(forward, wrt);

  JointGraph j{forward.clone(), {}, {}, {}, 0, wrt};
  expand_multi_output(j.graph);  // a VJP sees one node per element of a multi-output op
  Graph& g = j.graph;
  std::vector<Node*> forward_nodes = g.nodes();
  for (Node* n : forward_nodes) {
    n->set_phase(Phase::Forward);
    if (n->is_placeholder()) j.primals.push_back(n->name());
    if (n->is_call() && n->op()->category == OpCategory::Random && !n->attrs.count("rng_seed"))
      n->attrs["rng_seed"] = Arg(n->name());
  }
  std::unordered_set<const Node*> needs = requires_grad(g, wrt);
  auto needs_fn = [&needs](const Node* n) { return needs.count(n) > 0; };
  Emitter e(g, Phase::Backward);

  // Adjoints, and their accumulation over users.
  std::unordered_map<const Node*, Node*> adjoint;
  auto accumulate = [&](Node* x, Node* contribution, const Node* from) {
    if (contribution->shape() != x->shape())
      throw Error("autodiff", where(from),
                  "the VJP rule of " + (from->op() ? from->op()->name() : from->name()) +
                      " gave a gradient of shape " + shape_str(contribution->shape()) +
                      " for input " + where(x) + " of shape " + shape_str(x->shape()));
    contribution = e.cast(contribution, x->dtype());
    auto [it, fresh] = adjoint.emplace(x, contribution);
    if (fresh) return;
    Node* merged = merge_zero_padded(e, it->second, contribution);
    it->second = merged ? merged : e.add(it->second, contribution);
  };

  // One tangents_i per differentiable output, after the primals (Listing 5.2's order).
  std::vector<Node*> outputs = g.outputs();
  j.num_forward_outputs = outputs.size();
  Node* last_placeholder = nullptr;
  for (Node* n : forward_nodes)
    if (n->is_placeholder()) last_placeholder = n;
  auto pos = last_placeholder
                 ? std::find(forward_nodes.begin(), forward_nodes.end(), last_placeholder) + 1
                 : forward_nodes.begin();
  g.set_insert_point(*pos);
  std::vector<std::pair<Node*, Node*>> seeds;
  // An input's new value (an in-place op's write, core/graph/functionalize.h) has no tangent:
  // torch updates buffers outside autograd.
  const std::vector<std::string> updates = forward.output_updates();
  for (size_t k = 0; k < outputs.size(); ++k) {
    Node* out = outputs[k];
    if (!out || !needs.count(out) || !updates[k].empty()) {
      j.output_tangent.push_back(-1);
      continue;
    }
    std::string name = "tangents_" + std::to_string(j.tangents.size() + 1);
    if (g.find(name)) name = g.unique_name(name);  // a forward value took the name already
    Node* t =
        g.placeholder(name, TensorMeta::contiguous(out->shape(), out->dtype(), out->meta().device));
    t->set_phase(Phase::Backward);
    j.output_tangent.push_back(static_cast<int>(j.tangents.size()));
    j.tangents.push_back(name);
    seeds.emplace_back(out, t);
  }
  g.set_insert_point(nullptr);
  for (auto [out, t] : seeds) accumulate(out, t, out);

  // The backward pass: forward calls in reverse topological order.
  for (auto it = forward_nodes.rbegin(); it != forward_nodes.rend(); ++it) {
    Node* n = *it;
    if (!n->is_call()) continue;
    auto adj = adjoint.find(n);
    if (adj == adjoint.end() || !needs.count(n)) continue;
    const VjpFn* rule = rules.find(n->op()->name());
    if (!rule)
      throw Error("autodiff", where(n),
                  "no derivative (VJP) rule for op " + n->op()->name() +
                      "; it lies on the path from a differentiated input to an output");
    VjpContext ctx(g, n, adj->second, needs_fn);
    (*rule)(ctx);
    for (auto [x, contribution] : ctx.contributions()) accumulate(x, contribution, n);
  }

  // Outputs: the forward's, then the requested gradients.
  std::vector<Node*> values = outputs;
  for (const auto& name : wrt) {
    Node* p = g.find(name);
    auto it = adjoint.find(p);
    values.push_back(it != adjoint.end() ? it->second : e.zeros_like(p));
  }
  g.output(values)->set_phase(Phase::Forward);
  remove_dead_backward(g);
  return j;
}

}  // namespace stax
