#include "core/graph/multi_output.h"

#include <unordered_set>

#include "core/graph/op_traits.h"
#include "core/support/error.h"

namespace stax {

const Arg& ExpandCall::get(std::string_view param) const {
  int idx = op_.schema.index_of(std::string(param));
  if (idx < 0) throw Error("expand", where_, op_.name() + " has no parameter '" + std::string(param) + "'");
  if (!op_.schema.params[idx].kwarg_only) return args_.at(idx);
  for (const auto& [k, v] : kwargs_)
    if (k == param) return v;
  throw Error("expand", where_, "parameter '" + std::string(param) + "' is not bound");
}

void ExpandCall::fail(const std::string& message) const { throw Error("shape", where_, message); }

void ExpansionTable::add(const std::string& op, ExpandFn fn) {
  if (!fns_.emplace(op, std::move(fn)).second)
    throw Error("registry", "", "expansion of " + op + " registered twice");
}

const ExpandFn* ExpansionTable::find(std::string_view op) const {
  auto it = fns_.find(op);
  return it == fns_.end() ? nullptr : &it->second;
}

std::vector<std::string> ExpansionTable::names() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : fns_) out.push_back(k);
  return out;
}

namespace {
ExpansionTable& expansions_storage() {
  static ExpansionTable table;
  return table;
}
}  // namespace

const ExpansionTable& default_expansions() {
  const ExpansionTable& t = expansions_storage();
  if (t.empty()) throw_ops_not_installed("multi-output expansion table");
  return t;
}

ExpansionTable& expansions_to_fill() { return expansions_storage(); }

static const ExpandFn& expansion_of(const ExpansionTable& table, const OpDef& op,
                                    const std::string& where) {
  const ExpandFn* fn = table.find(op.name());
  if (!fn)
    throw Error("expand", where,
                op.name() + " returns several tensors and has no expansion into single-output ops");
  return *fn;
}

ExpandCall scratch_call(Graph& g, const CallArgs& c) {
  std::unordered_map<Node*, Node*> ph;
  auto map = [&](Node* n) -> Node* {
    auto it = ph.find(n);
    if (it != ph.end()) return it->second;
    Node* p = g.placeholder("in" + std::to_string(ph.size()), n->meta());
    ph[n] = p;
    return p;
  };
  std::vector<Arg> args;
  for (const auto& a : c.args()) args.push_back(map_nodes(a, map));
  Kwargs kwargs;
  for (const auto& [k, v] : c.kwargs()) kwargs.emplace_back(k, map_nodes(v, map));
  return ExpandCall(c.op(), std::move(args), std::move(kwargs), c.where());
}

InferMultiFn infer_by_expansion(std::string name) {
  return [name](const CallArgs& c) -> std::vector<TensorMeta> {
    // A scratch graph: one placeholder per tensor argument (same metadata), then the expansion.
    Graph g(default_registry());
    ExpandCall call = scratch_call(g, c);
    std::vector<Node*> elems;
    try {
      elems = expansion_of(default_expansions(), c.op(), c.where())(g, call);
    } catch (const Error& e) {
      if (e.location() == c.where()) throw;
      c.fail(e.message());  // an error of an emitted op: reported at the tuple node
    }
    std::vector<TensorMeta> out;
    for (Node* e : elems) out.push_back(e->meta());
    return out;
  };
}

bool has_tuple_nodes(const Graph& g) {
  for (const Node* n : g.nodes())
    if (n->is_tuple()) return true;
  return false;
}

size_t expand_multi_output(Graph& g, const ExpansionTable& table) {
  std::vector<Node*> tuples;
  for (Node* n : g.nodes())
    if (n->is_tuple()) tuples.push_back(n);
  for (Node* t : tuples) {
    const std::string where = "%" + t->name();
    const ExpandFn& fn = expansion_of(table, *t->op(), where);
    std::unordered_set<const Node*> before(g.nodes().begin(), g.nodes().end());
    Node* saved = g.insert_point();
    g.set_insert_point(t);
    std::vector<Node*> elems;
    try {
      elems = fn(g, ExpandCall(*t->op(), t->args(), t->kwargs(), where));
    } catch (const Error& e) {
      g.set_insert_point(saved);
      throw Error("expand", where, t->op()->name() + ": " + e.message());
    }
    g.set_insert_point(saved);
    std::vector<Node*> created;
    // An expansion may also set the graph's outputs anew (a check that raises takes the place of
    // an output, core/ops/linalg/error_checks.cpp): the new output node is not an element.
    for (Node* n : g.nodes())
      if (!before.count(n) && !n->is_output()) created.push_back(n);
    for (Node* n : created) {
      n->set_phase(t->phase());
      for (const auto& [k, v] : t->attrs) n->attrs.emplace(k, v);
    }
    const auto& metas = t->tuple_metas();
    if (elems.size() != metas.size())
      throw Error("expand", where,
                  t->op()->name() + "'s expansion yields " + std::to_string(elems.size()) +
                      " tensors, the node has " + std::to_string(metas.size()));
    for (size_t i = 0; i < elems.size(); ++i)
      if (elems[i]->shape() != metas[i].sizes || elems[i]->dtype() != metas[i].dtype)
        throw Error("expand", where,
                    t->op()->name() + "'s expansion: element " + std::to_string(i) + " is " +
                        shape_str(elems[i]->shape()) + " " + std::string(dtype_name(elems[i]->dtype())) +
                        ", the node's is " + shape_str(metas[i].sizes) + " " +
                        std::string(dtype_name(metas[i].dtype)));
    std::vector<Node*> users = t->users();
    for (Node* u : users) {
      if (!u->is_call() || !default_op_traits().plays(*u->op(), OpRole::kTupleElement))
        throw Error("expand", "%" + u->name(), "reads the tuple " + where + " (only getitem may)");
      int64_t k = u->args().at(1).to_int();
      if (k < 0) k += static_cast<int64_t>(elems.size());
      g.replace_all_uses(u, elems.at(static_cast<size_t>(k)));
      g.erase(u);
    }
    g.erase(t);
    // Elements nobody reads (and what only they read) go.
    for (auto it = created.rbegin(); it != created.rend(); ++it)
      if ((*it)->num_users() == 0) g.erase(*it);
  }
  return tuples.size();
}

const Graph& without_tuples(const Graph& g, std::unique_ptr<Graph>& storage) {
  if (!has_tuple_nodes(g)) return g;
  storage = std::make_unique<Graph>(g.clone());
  expand_multi_output(*storage);
  return *storage;
}

}  // namespace stax
