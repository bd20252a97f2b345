#include "core/graph/functionalize.h"

#include "core/graph/op_registry.h"
#include "core/graph/op_traits.h"
#include "core/support/error.h"

namespace stax {

// ---- the tables --------------------------------------------------------------------------------

void FunctionalizationTable::add_mutation(const std::string& op, MutationFn fn) {
  if (!mutations_.emplace(op, std::move(fn)).second)
    throw Error("registry", op, "a mutation rule for " + op + " is registered twice");
}

void FunctionalizationTable::add_view(const std::string& op, ViewScatterFn scatter) {
  if (!views_.emplace(op, std::move(scatter)).second)
    throw Error("registry", op, "a view rule for " + op + " is registered twice");
}

void FunctionalizationTable::add_inplace_view(const std::string& op, MutationFn fn) {
  add_mutation(op, std::move(fn));
  inplace_views_.insert(op);
}

const MutationFn* FunctionalizationTable::mutation(std::string_view op) const {
  auto it = mutations_.find(op);
  return it == mutations_.end() ? nullptr : &it->second;
}

std::pair<bool, const ViewScatterFn*> FunctionalizationTable::view(std::string_view op) const {
  auto it = views_.find(op);
  if (it == views_.end()) return {false, nullptr};
  return {true, it->second ? &it->second : nullptr};
}

static FunctionalizationTable& table_instance() {
  static FunctionalizationTable t;
  return t;
}
const FunctionalizationTable& default_functionalization_table() { return table_instance(); }
FunctionalizationTable& functionalization_table_to_fill() { return table_instance(); }

// ---- versions ----------------------------------------------------------------------------------

namespace {

const FunctionalizationTable& table() { return default_functionalization_table(); }
const OpTraitTable& traits() { return default_op_traits(); }

// Whether call node `n` reads an element of a tuple (split's elements are views of its input).
bool reads_tuple(const Node& n) { return traits().plays(*n.op(), OpRole::kTupleElement); }

// torch's canCast: no floating -> integral or bool, no integral -> bool.
bool can_cast(DType from, DType to) {
  if (is_floating(from) && !is_floating(to)) return false;
  if (!is_bool(from) && is_bool(to)) return false;
  return true;
}

}  // namespace

Node* FunctionalState::view_base(const Node* v) const {
  if (!v || !v->is_call()) return nullptr;
  if (reads_tuple(*v)) {
    const Node* t = v->input(0);
    return t->is_call() && table().view(t->target()).first ? t->input(0) : nullptr;
  }
  return table().view(v->target()).first ? v->input(0) : nullptr;
}

Node* FunctionalState::storage_of(Node* n) const {
  for (Node* b = view_base(n); b; b = view_base(n)) n = b;
  auto it = storage_.find(n);
  return it == storage_.end() ? n : it->second;
}

static int lookup(const std::unordered_map<const Node*, int>& m, const Node* n) {
  auto it = m.find(n);
  return it == m.end() ? 0 : it->second;
}

Node* FunctionalState::read(Graph& g, Node* n) {
  if (!n || n->is_tuple() || n->is_output()) return n;
  Node* s = storage_of(n);
  int writes = lookup(version_, s);
  if (writes == 0 || (n != s && lookup(version_, n) >= writes)) return n;
  Node* base = view_base(n);
  if (!base) return latest_.at(s);  // the storage, or an older version of it
  auto r = replayed_.find(n);
  if (r != replayed_.end() && r->second.first == writes) return r->second.second;
  Node* fresh = replay(g, n, read(g, base));
  replayed_[n] = {writes, fresh};
  return fresh;
}

Node* FunctionalState::replay(Graph& g, Node* view, Node* base) {
  if (reads_tuple(*view)) {
    const Node* t = view->input(0);
    std::vector<Arg> args = t->args();
    args[0] = Arg(base);
    Node* tuple = g.call(t->target(), std::move(args), t->kwargs());
    return g.call(view->target(), {tuple, view->args()[1]});
  }
  std::vector<Arg> args = view->args();
  args[0] = Arg(base);
  return g.call(view->target(), std::move(args), view->kwargs());
}

void FunctionalState::note(Node* made) {
  made_at_[made] = ++made_;
  if (!view_base(made)) return;
  int writes = lookup(version_, storage_of(made));
  if (writes) version_[made] = writes;
}

void FunctionalState::write(Graph& g, Node* target, Node* value, int64_t since,
                            const std::string& where) {
  target = read(g, target);
  if (value->shape() != target->shape())
    throw Error("functionalize", where,
                "writes a value of shape " + shape_str(value->shape()) + " into %" +
                    target->name() + " of shape " + shape_str(target->shape()) +
                    " (an in-place or out= op keeps its argument's shape)");
  if (value->dtype() != target->dtype()) {
    if (!can_cast(value->dtype(), target->dtype()))
      throw Error("functionalize", where,
                  "result type " + std::string(dtype_name(value->dtype())) +
                      " can't be cast to the desired output type " +
                      std::string(dtype_name(target->dtype())) + " of %" + target->name());
    value = g.call(traits().op(OpRole::kCopyCast), {value}, {{"dtype", Arg(target->dtype())}});
  }
  // The new version must be a value of its own: made by this call, and no view or version.
  auto made = made_at_.find(value);
  if (made == made_at_.end() || made->second <= since || view_base(value) || storage_.count(value))
    value = g.call(traits().op(OpRole::kClone), {value});
  Node* cur = target;
  while (Node* base = view_base(cur)) {
    const Node* op_node = reads_tuple(*cur) ? cur->input(0) : cur;
    const ViewScatterFn* scatter = table().view(op_node->target()).second;
    if (!scatter)
      throw Error("functionalize", where,
                  "writes through %" + cur->name() + " (" + op_node->target() +
                      "), a view whose elements are not one element each of %" + base->name() +
                      "; Stax cannot write it back");
    value = (*scatter)(g, *cur, base, value);
    cur = base;
  }
  Node* s = storage_of(cur);
  int writes = ++version_[s];
  latest_[s] = value;
  storage_[value] = s;
  version_[value] = writes;
}

std::vector<Node*> FunctionalState::written_placeholders(const Graph& g) const {
  std::vector<Node*> out;
  for (Node* p : g.placeholders())
    if (lookup(version_, p) > 0) out.push_back(p);
  return out;
}

Node* apply_mutation(Graph& g, FunctionalState& state, const OpDef& op, const MutationEffect& e,
                     const CallArgs& c, int64_t since, const std::string& name) {
  std::string where = "%" + name;
  for (const auto& [param, value] : e.writes) {
    const Arg& a = c.get(param);
    if (a.is_absent()) continue;
    if (!a.is_node())
      throw Error("functionalize", where, op.name() + " writes its argument '" + param +
                                              "', which is no tensor");
    state.write(g, a.node(), value, since, where);
  }
  if (!e.returns_param.empty()) return state.read(g, c.get(e.returns_param).node());
  if (!e.result) throw Error("functionalize", where, op.name() + ": its rule returned no value");
  return e.result;
}

}  // namespace stax
