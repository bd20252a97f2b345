#include "core/graph/decompositions.h"

#include <cmath>
#include <numbers>
#include <unordered_set>

#include "core/graph/op_registry.h"
#include "core/support/error.h"

namespace stax {

// ---- the table
// -----------------------------------------------------------------------------------

void DecompositionTable::add(const std::string& op, DecompositionFn fn) {
  auto [it, inserted] = fns_.emplace(op, std::move(fn));
  if (!inserted) throw Error("decompose", "", "decomposition of " + op + " registered twice");
}

const DecompositionFn* DecompositionTable::find(std::string_view op) const {
  auto it = fns_.find(op);
  return it == fns_.end() ? nullptr : &it->second;
}

void DecompositionTable::extend(const std::string& op,
                                const std::function<DecompositionFn(DecompositionFn)>& wrap,
                                DecompositionFn absent) {
  auto it = fns_.find(op);
  if (it == fns_.end())
    fns_.emplace(op, wrap(std::move(absent)));
  else
    it->second = wrap(std::move(it->second));
}

std::vector<std::string> DecompositionTable::names() const {
  std::vector<std::string> out;
  for (const auto& [name, fn] : fns_) out.push_back(name);
  return out;
}

// Wrapped dims a reduction over `dims` (absent or empty: all dims) covers, and their element count.
std::vector<int64_t> reduced_dims(const Node& x, const Arg& dims) {
  int64_t rank = x.meta().dim();
  std::vector<int64_t> out;
  if (dims.is_absent() || dims.to_int_list().empty()) {
    for (int64_t d = 0; d < rank; ++d) out.push_back(d);
    return out;
  }
  for (int64_t d : dims.to_int_list())
    if (rank > 0) out.push_back(wrap_dim(d, rank, "%" + x.name()));
  return out;
}

int64_t reduced_count(const Node& x, const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= x.shape()[d];
  return n;
}

namespace {
DecompositionTable& decompositions_storage() {
  static DecompositionTable table;
  return table;
}
}  // namespace

const DecompositionTable& default_decompositions() {
  const DecompositionTable& t = decompositions_storage();
  if (t.empty()) throw_ops_not_installed("decomposition table");
  return t;
}

DecompositionTable& decompositions_to_fill() { return decompositions_storage(); }

// ---- the pass
// ------------------------------------------------------------------------------------

Node* decompose_node(Graph& g, Node* n, const DecompositionTable& table) {
  const std::string where = "%" + n->name();
  const DecompositionFn* fn = table.find(n->target());
  if (!fn) throw Error("decompose", where, "no decomposition for " + n->target());
  size_t first_new = static_cast<size_t>(n->index());
  g.set_insert_point(n);
  Node* r = nullptr;
  try {
    r = (*fn)(g, *n);
  } catch (const Error& e) {
    g.set_insert_point(nullptr);
    throw Error("decompose", where, "decomposing " + n->target() + ": " + e.what());
  }
  g.set_insert_point(nullptr);
  if (!r || r->shape() != n->shape() || r->dtype() != n->dtype())
    throw Error("decompose", where,
                "the decomposition of " + n->target() + " yields " +
                    (r ? std::string(dtype_name(r->dtype())) + shape_str(r->shape()) : "nothing") +
                    " but the node is " + std::string(dtype_name(n->dtype())) +
                    shape_str(n->shape()));
  // The nodes the entry emitted sit between n's old position and n.
  const auto& order = g.nodes();
  for (size_t i = first_new; i < static_cast<size_t>(n->index()); ++i) {
    Node* e = order[i];
    e->set_phase(n->phase());
    for (const auto& [k, v] : n->attrs) e->attrs.emplace(k, v);
    if (e->op()->category == OpCategory::Random && !e->attrs.count("rng_seed"))
      e->attrs.emplace("rng_seed", Arg(n->name()));
  }
  g.replace_all_uses(n, r);
  g.erase(n);
  return r;
}

size_t decompose(Graph& g, const DecompositionOptions& options) {
  const DecompositionTable& table = options.table ? *options.table : default_decompositions();
  auto is_base = [&](const Node* n) {
    if (!options.keep) return n->op()->category != OpCategory::Composite;
    return options.keep->count(n->target()) > 0 || options.keep->count(n->op()->schema.base) > 0;
  };
  size_t count = 0;
  constexpr int kMaxRounds = 64;
  for (int round = 0;; ++round) {
    if (round == kMaxRounds)
      throw Error("decompose", "",
                  "decompositions did not reach base ops after " + std::to_string(kMaxRounds) +
                      " rounds (an entry re-emits its own op?)");
    bool changed = false;
    std::vector<Node*> snapshot = g.nodes();
    for (Node* n : snapshot) {
      if (!n->is_call() || is_base(n) || !table.find(n->target())) continue;
      decompose_node(g, n, table);
      ++count;
      changed = true;
    }
    if (!changed || !options.recursive) break;
  }
  return count;
}

}  // namespace stax
