#include "core/graph/passes.h"

#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "core/graph/op_registry.h"

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
  if (n.op()->category == OpCategory::Random) return true;
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

}  // namespace stax
