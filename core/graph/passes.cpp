#include "core/graph/passes.h"

#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "core/graph/op_registry.h"
#include "core/graph/op_traits.h"

namespace stax {

size_t dead_code_elimination(Graph& g) {
  // Mark everything the output (and every placeholder) needs, walking backwards.
  std::unordered_set<const Node*> live;
  const auto& nodes = g.nodes();
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    const Node* n = *it;
    if (n->is_output() || n->is_placeholder()) live.insert(n);
    if (!live.count(n)) continue;
    for (const Node* in : n->input_nodes()) live.insert(in);
  }
  std::vector<Node*> dead;
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it)
    if (!live.count(*it)) dead.push_back(*it);
  // Users before producers, so each erased node has no users left.
  for (Node* n : dead) g.erase(n);
  return dead.size();
}

namespace {

// An exact, type-tagged key for an argument: equal keys mean bitwise-identical arguments.
void append_key(const Arg& a, std::string& k) {
  struct V {
    std::string& k;
    void operator()(std::monostate) const { k += "N;"; }
    void operator()(Node* n) const {
      k += "n" + std::to_string(reinterpret_cast<uintptr_t>(n)) + ";";
    }
    void operator()(bool b) const { k += b ? "b1;" : "b0;"; }
    void operator()(int64_t i) const { k += "i" + std::to_string(i) + ";"; }
    void operator()(double d) const {
      uint64_t bits;
      std::memcpy(&bits, &d, sizeof bits);
      k += "d" + std::to_string(bits) + ";";
    }
    void operator()(const std::string& s) const {
      k += "s" + std::to_string(s.size()) + ":" + s + ";";
    }
    void operator()(DType t) const { k += "t" + std::to_string(static_cast<int>(t)) + ";"; }
    void operator()(Undefined) const { k += "u;"; }
    void operator()(const EnumLiteral& e) const { k += "e" + e.name + ";"; }
    void operator()(const Arg::List& l) const {
      k += "[";
      for (const auto& e : l) append_key(e, k);
      k += "];";
    }
  };
  std::visit(V{k}, a.v);
}

bool never_merge(const Node& n) {
  if (n.op()->draws(n)) return true;  // two draws stay two draws
  for (const auto& [name, value] : n.attrs)
    if (name.rfind("rng", 0) == 0) return true;
  return false;
}

}  // namespace

size_t common_subexpression_elimination(Graph& g) {
  std::unordered_map<std::string, Node*> seen;
  std::vector<Node*> order = g.nodes();  // a copy: the graph changes as we go
  size_t removed = 0;
  for (Node* n : order) {
    if (!n->is_call() || never_merge(*n)) continue;
    std::string key = n->op()->name() + "(";
    for (const auto& a : n->args()) append_key(a, key);
    key += "|";
    for (const auto& [name, value] : n->kwargs()) {
      key += name + "=";
      append_key(value, key);
    }
    auto [it, inserted] = seen.emplace(std::move(key), n);
    if (inserted) continue;
    g.replace_all_uses(n, it->second);
    g.erase(n);
    ++removed;
  }
  return removed;
}

namespace {

bool plays(const Node* n, OpRole role) {
  return n->is_call() && n->op() && default_op_traits().plays(*n->op(), role);
}

bool is_reshape(const Node* n) {
  return plays(n, OpRole::kReshape) || plays(n, OpRole::kView) || plays(n, OpRole::kUnsafeView);
}

const std::string& op_of(OpRole role) { return default_op_traits().op(role); }

// The source of reshape `t` when it merged trailing dims into the cat dim `d` (the last of
// `lead` + 1 dims): source shape lead + [h] + trailing, trailing as *trailing (set by the first).
Node* unmerged_source(const Node* t, const Shape& lead, DType dtype, Shape* trailing, bool first) {
  if (!is_reshape(t) || t->dtype() != dtype) return nullptr;
  Node* x = t->args().at(0).is_node() ? t->args()[0].node() : nullptr;
  if (!x || x->dtype() != dtype) return nullptr;
  const Shape& xs = x->shape();
  const size_t r = lead.size();
  if (xs.size() < r + 2 || !std::equal(lead.begin(), lead.end(), xs.begin())) return nullptr;
  const Shape tail(xs.begin() + static_cast<std::ptrdiff_t>(r) + 1, xs.end());
  if (first) *trailing = tail;
  if (tail != *trailing) return nullptr;
  int64_t inner = 1;
  for (int64_t s : tail) inner *= s;
  if (inner <= 1 || xs[r] * inner != t->shape().back()) return nullptr;
  return x;
}

// A cat of flat (1-D) tensors, at least one of them the flattening of a tensor of rank >= 2 (the
// flash backward's packed upstream gradient: [reshape(dO (b, h, t, d)), zeros (b*h*t)]): the
// trailing dims T of that source, shortened from the left until every input's numel is a
// multiple of their product and every flattened source ends with them; each input as (n_j, T),
// joined along dim 0, flattened once. Returns the flattening, or null (nothing rewritten).
Node* rewrite_flat_cat(Graph& g, Node* n, const std::vector<Node*>& parts) {
  if (n->shape().size() != 1) return nullptr;
  Shape cand;
  for (Node* t : parts) {
    if (!t || t->shape().size() != 1 || t->dtype() != n->dtype()) return nullptr;
    if (cand.empty() && is_reshape(t) && t->args()[0].is_node() &&
        t->args()[0].node()->shape().size() >= 2) {
      const Shape& xs = t->args()[0].node()->shape();
      cand.assign(xs.begin() + 1, xs.end());
    }
  }
  auto source_of = [&](Node* t) -> Node* {
    if (!is_reshape(t) || !t->args()[0].is_node()) return nullptr;
    Node* x = t->args()[0].node();
    return x->dtype() == n->dtype() && x->shape().size() >= 2 ? x : nullptr;
  };
  auto fits = [&](const Shape& tail) {
    int64_t inner = 1;
    for (int64_t s : tail) inner *= s;
    if (tail.empty() || inner <= 1) return false;
    for (Node* t : parts) {
      if (t->shape()[0] % inner != 0) return false;
      if (Node* x = source_of(t)) {
        const Shape& xs = x->shape();
        if (xs.size() < tail.size() || !std::equal(tail.begin(), tail.end(), xs.end() - static_cast<std::ptrdiff_t>(tail.size())))
          return false;
      }
    }
    return true;
  };
  while (!cand.empty() && !fits(cand)) cand.erase(cand.begin());
  if (cand.empty()) return nullptr;
  int64_t inner = 1;
  for (int64_t s : cand) inner *= s;
  g.set_insert_point(n);
  std::vector<Node*> blocks;
  for (Node* t : parts) {
    Node* x = source_of(t);
    Shape shape{t->shape()[0] / inner};
    shape.insert(shape.end(), cand.begin(), cand.end());
    blocks.push_back(g.call(op_of(OpRole::kReshape), {x ? x : t, Arg(std::vector<int64_t>(shape))}));
  }
  Node* joined = g.call(op_of(OpRole::kCat), {Arg(blocks), Arg(int64_t{0})});
  Node* flat = g.call(op_of(OpRole::kReshape), {joined, Arg(std::vector<int64_t>(n->shape()))});
  g.set_insert_point(nullptr);
  joined->attrs = n->attrs;
  return flat;
}

}  // namespace

size_t cat_before_reshape(Graph& g) {
  std::vector<Node*> cats;
  for (Node* n : g.nodes())
    if (plays(n, OpRole::kCat)) cats.push_back(n);
  size_t rewritten = 0;
  for (Node* n : cats) {
    const Shape out = n->shape();
    const int64_t rank = static_cast<int64_t>(out.size());
    if (rank < 1 || n->args().size() < 2 || !n->args()[0].is_list()) continue;
    int64_t dim = n->args()[1].to_int();
    if (dim < 0) dim += rank;
    if (dim != rank - 1) continue;
    const std::vector<Node*> parts = n->args()[0].to_node_list();
    if (parts.size() < 2) continue;
    if (rank == 1) {
      Node* flat = rewrite_flat_cat(g, n, parts);
      if (!flat) continue;
      g.replace_all_uses(n, flat);
      g.erase(n);
      std::unordered_set<Node*> erased;
      for (Node* t : parts)
        if (erased.insert(t).second && t->num_users() == 0) g.erase(t);
      ++rewritten;
      continue;
    }
    const Shape lead(out.begin(), out.end() - 1);
    Shape trailing;
    std::vector<Node*> sources;
    for (Node* t : parts) {
      Node* x = t ? unmerged_source(t, lead, n->dtype(), &trailing, sources.empty()) : nullptr;
      if (!x) break;
      sources.push_back(x);
    }
    if (sources.size() != parts.size()) continue;
    g.set_insert_point(n);
    Node* joined = g.call(op_of(OpRole::kCat), {Arg(sources), Arg(rank - 1)});
    Node* merged = g.call(op_of(OpRole::kReshape), {joined, Arg(std::vector<int64_t>(out))});
    g.set_insert_point(nullptr);
    joined->attrs = n->attrs;
    merged->attrs = n->attrs;
    g.replace_all_uses(n, merged);
    g.erase(n);
    std::unordered_set<Node*> erased;
    for (Node* t : parts)
      if (erased.insert(t).second && t->num_users() == 0) g.erase(t);
    ++rewritten;
  }
  return rewritten;
}

}  // namespace stax
