#include "core/graph/graph.h"

#include <algorithm>
#include <cassert>
#include <queue>
#include <set>
#include <stdexcept>
#include <unordered_set>

#include "core/graph/functionalize.h"
#include "core/graph/op_registry.h"
#include "core/graph/op_traits.h"
#include "core/graph/unsigned_ops.h"
#include "core/support/error.h"

namespace stax {

// ---------------------------------------------------------------------------------------------
// Node

const std::string& Node::target() const { return op_ ? op_->name() : name_; }

const Arg& Node::arg(std::string_view param) const {
  assert(op_ && "arg() on a node without an op");
  int idx = op_->schema.index_of(std::string(param));
  if (idx < 0) throw Error("graph", "%" + name_, "op " + op_->name() + " has no parameter '" + std::string(param) + "'");
  if (static_cast<size_t>(idx) < args_.size() && !op_->schema.params[idx].kwarg_only) return args_[idx];
  for (const auto& [k, v] : kwargs_)
    if (k == param) return v;
  throw Error("graph", "%" + name_, "parameter '" + std::string(param) + "' is not bound");
}

static void collect_nodes(const Arg& a, std::vector<Node*>& out) {
  if (a.is_node()) {
    out.push_back(a.node());
  } else if (a.is_list()) {
    for (const auto& e : a.list()) collect_nodes(e, out);
  }
}

std::vector<Node*> Node::input_nodes() const {
  std::vector<Node*> all;
  for (const auto& a : args_) collect_nodes(a, all);
  for (const auto& [k, v] : kwargs_) collect_nodes(v, all);
  if (all.size() <= 16) {  // the common case: a linear scan beats hashing
    std::vector<Node*> out;
    for (Node* n : all)
      if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
    return out;
  }
  // Output nodes of big joint graphs return thousands of values: keep this linear.
  std::vector<Node*> out;
  std::unordered_set<Node*> seen;
  for (Node* n : all)
    if (seen.insert(n).second) out.push_back(n);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Binding a call to its schema

static std::string describe(const Arg& a) {
  if (a.is_node()) return "tensor %" + a.node()->name();
  return arg_str(a);
}

static bool type_ok(const ParamSpec& p, const Arg& a) {
  if (a.is_absent()) return p.optional;
  switch (p.type) {
    case ParamType::Tensor: return a.is_node();
    case ParamType::TensorList:
      if (!a.is_list()) return false;
      for (const auto& e : a.list())
        if (!e.is_node() && !e.is_none()) return false;
      return true;
    case ParamType::Scalar: return a.is_number();
    case ParamType::Int: return a.is_int() || a.is_bool();
    case ParamType::IntList:
      if (a.is_int()) return true;
      if (!a.is_list()) return false;
      for (const auto& e : a.list())
        if (!e.is_int()) return false;
      return true;
    case ParamType::Float: return a.is_int() || a.is_double();
    case ParamType::FloatList:
      if (!a.is_list()) return false;
      for (const auto& e : a.list())
        if (!e.is_number()) return false;
      return true;
    case ParamType::BoolList:
      if (!a.is_list()) return false;
      for (const auto& e : a.list())
        if (!e.is_bool() && !e.is_int()) return false;
      return true;
    case ParamType::Bool: return a.is_bool() || a.is_int();
    case ParamType::Str: return a.is_string();
    case ParamType::ScalarType: return a.is_dtype();
    case ParamType::Layout: return true;
    case ParamType::Generator: return a.is_absent();
  }
  return false;
}

// A node passed where a number is expected: its static value (sym_size.int of a static shape) when
// its op has one, so `view(%x, [%sym_size_int, -1])` binds as `view(%x, [4, -1])`.
static void fold_static_values(const ParamSpec& p, Arg& a) {
  if (p.type == ParamType::Tensor || p.type == ParamType::TensorList) return;
  if (a.is_node()) {
    const Node* n = a.node();
    if (n->op() && n->op()->static_value) a = n->op()->static_value(*n);
  } else if (a.is_list()) {
    Arg::List items = a.list();
    for (auto& e : items) fold_static_values(p, e);
    a = Arg(std::move(items));
  }
}

BoundCall bind_call(const OpDef& op, std::vector<Arg> args, Kwargs kwargs, const std::string& where) {
  const auto& params = op.schema.params;
  size_t n_positional = 0;
  while (n_positional < params.size() &&
         (!params[n_positional].kwarg_only || params[n_positional].positional_compat))
    ++n_positional;
  if (args.size() > n_positional) {
    throw Error("graph", where,
                op.name() + " takes at most " + std::to_string(n_positional) +
                    " positional arguments but " + std::to_string(args.size()) +
                    " were given; schema: " + op.schema.str());
  }
  std::vector<std::optional<Arg>> bound(params.size());
  for (size_t i = 0; i < args.size(); ++i) bound[i] = std::move(args[i]);
  for (auto& [k, v] : kwargs) {
    int idx = op.schema.index_of(k);
    if (idx < 0)
      throw Error("graph", where, op.name() + " got an unexpected keyword argument '" + k +
                                      "'; schema: " + op.schema.str());
    if (bound[idx])
      throw Error("graph", where, op.name() + " got multiple values for argument '" + k + "'");
    bound[idx] = std::move(v);
  }
  BoundCall out;
  for (size_t i = 0; i < params.size(); ++i) {
    const auto& p = params[i];
    if (!bound[i]) {
      if (!p.default_value)
        throw Error("graph", where, op.name() + " missing required argument '" + p.name +
                                        "'; schema: " + op.schema.str());
      bound[i] = *p.default_value;
    }
    Arg& a = *bound[i];
    fold_static_values(p, a);
    if (!type_ok(p, a)) {
      std::string hint;
      if (p.type == ParamType::Tensor && a.is_number() && op.schema.overload == "Tensor")
        hint = " (a Python number goes to the " + op.schema.base + ".Scalar overload)";
      else if (a.is_node() && p.type != ParamType::Tensor && p.type != ParamType::TensorList)
        hint = " (a value the graph computes when it runs, " + a.node()->target() +
               "; Stax needs this argument when the graph is built)";
      throw Error("graph", where,
                  op.name() + " expected " + op.schema.str().substr(op.schema.str().find('(')) +
                      "; argument '" + p.name + "' got " + describe(a) + hint);
    }
    // Canonical forms: int[] given as a single int becomes a list; Float given an int stays.
    if (p.type == ParamType::IntList && a.is_int()) a = Arg(std::vector<int64_t>{a.to_int()});
    if (p.kwarg_only)
      out.kwargs.emplace_back(p.name, std::move(a));
    else
      out.args.push_back(std::move(a));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Graph

Graph::Graph() : registry_(&default_registry()) {}
Graph::Graph(const OpRegistry& registry) : registry_(&registry) {}
Graph::Graph(Graph&&) = default;
Graph& Graph::operator=(Graph&&) = default;
Graph::~Graph() = default;

void Graph::reserve_names(std::vector<std::string> names) {
  for (auto& n : names) reserved_[std::move(n)] = true;
}

std::string Graph::unique_name(std::string_view base_in) {
  // Names that shadow Python builtins start at _0 (sum_0); others are bare first, then _0, _1 ...
  // (seed Listing 5.2: matmul, matmul_0; sum_0).
  static const std::set<std::string, std::less<>> kReserved = {
      "sum", "max", "min", "abs", "all", "any", "pow", "round", "slice", "input", "output",
      "range", "format", "index", "float", "int", "bool", "list", "type", "len", "map", "zip",
      "filter", "id", "hash", "iter", "next", "open", "print", "repr", "set", "str", "tuple",
      "vars", "view"};
  std::string base(base_in);
  if (base.empty()) base = "node";
  int& count = name_counter_[base];
  bool reserved = kReserved.count(base) > 0;
  for (;;) {
    int k = count++;
    std::string cand;
    if (!reserved && k == 0)
      cand = base;
    else
      cand = base + "_" + std::to_string(reserved ? k : k - 1);
    if (!by_name_.count(cand) && !reserved_.count(cand)) return cand;
  }
}

Node* Graph::add_node(NodeKind kind, std::string name, const OpDef* op, std::vector<Arg> args,
                      Kwargs kwargs, TensorMeta meta) {
  if (by_name_.count(name))
    throw Error("graph", "%" + name, "a value named '" + name + "' is already defined");
  auto node = std::make_unique<Node>();
  Node* n = node.get();
  n->name_ = std::move(name);
  n->kind_ = kind;
  n->op_ = op;
  n->args_ = std::move(args);
  n->kwargs_ = std::move(kwargs);
  n->meta_ = std::move(meta);
  storage_.push_back(std::move(node));
  by_name_[n->name_] = n;
  // Insert before the insert point (or the output node), or append.
  Node* before = insert_before_;
  if (!before && kind != NodeKind::Output) before = output_node();
  if (before) {
    // Incremental: shift indices after the insertion point and splice n into its inputs' user
    // lists at its graph position (no full recomputation: keeps bulk insertion cheap).
    auto it = order_.begin() + before->index_;
    assert(*it == before);
    it = order_.insert(it, n);
    for (auto j = it; j != order_.end(); ++j) (*j)->index_ = j - order_.begin();
    for (Node* in : n->input_nodes()) {
      auto& us = in->users_;
      us.insert(std::upper_bound(us.begin(), us.end(), n,
                                 [](Node* a, Node* b) { return a->index_ < b->index_; }),
                n);
    }
  } else {
    n->index_ = static_cast<int64_t>(order_.size());
    order_.push_back(n);
    for (Node* in : n->input_nodes()) in->users_.push_back(n);
  }
  return n;
}

Node* Graph::placeholder(std::string name, TensorMeta meta) {
  if (name.empty()) {
    do name = "primals_" + std::to_string(next_primal_++);
    while (by_name_.count(name));
  }
  check_extent(meta.sizes, meta.dtype, "%" + name);
  if (meta.strides.empty() && !meta.sizes.empty()) meta.strides = contiguous_strides(meta.sizes);
  return add_node(NodeKind::Placeholder, std::move(name), nullptr, {}, {}, std::move(meta));
}

Node* Graph::placeholder(std::string name, Shape sizes, DType dtype) {
  return placeholder(std::move(name), TensorMeta::contiguous(std::move(sizes), dtype));
}

// aten accepts a Python number for a Tensor parameter (a "wrapped number", promoted like a Python
// scalar), and make_fx printouts contain such calls: add.Tensor(%x, 1), where.self(%c, %x, 0.0).
// Returns the overload of the same op that declares those parameters Scalar (add.Scalar,
// where.ScalarOther), or null.
static const OpDef* scalar_overload_for(const OpRegistry& reg, const OpDef& op,
                                        const std::vector<Arg>& args, const Kwargs& kwargs) {
  const auto& params = op.schema.params;
  std::vector<bool> number(params.size(), false);
  bool any = false;
  for (size_t i = 0; i < args.size() && i < params.size(); ++i)
    if (params[i].type == ParamType::Tensor && args[i].is_number()) number[i] = any = true;
  for (const auto& [k, v] : kwargs) {
    int i = op.schema.index_of(k);
    if (i >= 0 && params[i].type == ParamType::Tensor && v.is_number()) number[i] = any = true;
  }
  if (!any) return nullptr;
  for (const OpDef* cand : reg.all()) {
    if (cand == &op || cand->schema.base != op.schema.base) continue;
    const auto& cp = cand->schema.params;
    if (cp.size() != params.size()) continue;
    bool ok = true;
    for (size_t i = 0; ok && i < cp.size(); ++i)
      ok = cp[i].name == params[i].name &&  // add.Tensor's *, alpha is add.Scalar's alpha
           (number[i] ? cp[i].type == ParamType::Scalar : cp[i].type == params[i].type);
    if (ok) return cand;
  }
  return nullptr;
}

// Only getitem reads a tuple-valued node (an op returning several tensors).
static void reject_tuple_arg(const OpDef& op, const Arg& a, const std::string& where) {
  if (a.is_list()) {
    for (const auto& e : a.list()) reject_tuple_arg(op, e, where);
    return;
  }
  if (!a.is_node() || !a.node()->is_tuple()) return;
  const Node* t = a.node();
  throw Error("graph", where,
              op.name() + ": argument %" + t->name() + " is a tuple of " +
                  std::to_string(t->tuple_metas().size()) + " tensors (" + t->target() +
                  " returns several); select one with getitem (operator.getitem(%" + t->name() +
                  ", i))");
}

// After an in-place op, every tensor argument is read at its latest version.
static void read_latest(Graph& g, FunctionalState& state, Arg& a) {
  if (a.is_node())
    a = Arg(state.read(g, a.node()));
  else if (a.is_list())
    for (auto& e : std::get<Arg::List>(a.v)) read_latest(g, state, e);
}

// A value whose size is known only at run time (TensorMeta::runtime_sized_dims: nonzero's row
// count) may only be returned: Stax compiles static shapes, and no inference may read its upper
// bound as a size.
static void reject_runtime_sized(const OpDef& op, const Arg& a, const std::string& where) {
  if (a.is_list()) {
    for (const auto& e : a.list()) reject_runtime_sized(op, e, where);
    return;
  }
  if (!a.is_node() || !a.node()->meta().runtime_sized()) return;
  const Node* t = a.node();
  int64_t d = 0;
  while (!(t->meta().runtime_sized_dims >> d & 1u)) ++d;
  throw Error("graph", where,
              op.name() + ": argument %" + t->name() + " (" + t->target() +
                  ") has a size known only at run time (dim " + std::to_string(d) + ", at most " +
                  std::to_string(t->shape()[static_cast<size_t>(d)]) +
                  "); Stax compiles static shapes, so such a value can only be returned by the "
                  "graph");
}

Node* Graph::call(std::string_view target, std::vector<Arg> args, Kwargs kwargs, std::string name) {
  const OpDef& op0 = registry_->get(target, name.empty() ? "" : "%" + name);
  if (functional_) {
    for (auto& a : args) read_latest(*this, *functional_, a);
    for (auto& kv : kwargs) read_latest(*this, *functional_, kv.second);
  }
  const OpDef* scalar_op = scalar_overload_for(*registry_, op0, args, kwargs);
  const OpDef& op = scalar_op ? *scalar_op : op0;
  if (name.empty()) name = unique_name(op.schema.base);
  std::string where = "%" + name;
  BoundCall b = bind_call(op, std::move(args), std::move(kwargs), where);
  if (!default_op_traits().plays(op, OpRole::kTupleElement)) {
    for (const auto& a : b.args) reject_tuple_arg(op, a, where);
    for (const auto& kv : b.kwargs) reject_tuple_arg(op, kv.second, where);
  }
  for (const auto& a : b.args) reject_runtime_sized(op, a, where);
  for (const auto& kv : b.kwargs) reject_runtime_sized(op, kv.second, where);
  CallArgs ca(op, b.args, b.kwargs, where);
  if (const MutationFn* rule = default_functionalization_table().mutation(op.name())) {
    if (!functional_) functional_ = std::make_unique<FunctionalState>();
    int64_t since = functional_->made();
    if (std::optional<MutationEffect> e = (*rule)(*this, ca, name))
      return apply_mutation(*this, *functional_, op, *e, ca, since, name);
  }
  Node* n = make_call(op, std::move(b), std::move(name));
  if (functional_) functional_->note(n);
  return n;
}

namespace {
// op.infer(ca), with promote_types' std::invalid_argument (uint16 / uint32 / uint64 with an
// integer dtype, as torch) reported as an Error naming the node and the op.
TensorMeta infer_checked(const OpDef& op, const CallArgs& ca, const std::string& where) {
  try {
    return op.infer(ca);
  } catch (const std::invalid_argument& e) {
    throw Error("shape", where, op.name() + ": " + e.what());
  }
}
}  // namespace

Node* Graph::make_call(const OpDef& op, BoundCall b, std::string name) {
  std::string where = "%" + name;
  CallArgs ca(op, b.args, b.kwargs, where);
  if (op.multi_output()) {
    reject_unsupported_complex(op, ca.args(), ca.kwargs(), nullptr, where);
    reject_unsupported_unsigned(op, ca.args(), ca.kwargs(), nullptr, where);
    std::vector<TensorMeta> metas = op.infer_multi(ca);
    for (auto& m : metas) {
      check_extent(m.sizes, m.dtype, where);
      if (m.strides.empty() && !m.sizes.empty()) m.strides = contiguous_strides(m.sizes);
    }
    TensorMeta tuple_meta;  // empty: the elements carry the metadata
    if (!metas.empty()) {
      tuple_meta.dtype = metas[0].dtype;
      tuple_meta.device = metas[0].device;
    }
    Node* n = add_node(NodeKind::CallFunction, std::move(name), &op, std::move(b.args),
                       std::move(b.kwargs), std::move(tuple_meta));
    n->is_tuple_ = true;
    n->tuple_metas_ = std::move(metas);
    return n;
  }
  reject_unsupported_complex(op, ca.args(), ca.kwargs(), nullptr, where);
  reject_unsupported_unsigned(op, ca.args(), ca.kwargs(), nullptr, where);
  TensorMeta meta = infer_checked(op, ca, where);
  reject_unsupported_complex(op, ca.args(), ca.kwargs(), &meta, where);
  reject_unsupported_unsigned(op, ca.args(), ca.kwargs(), &meta, where);
  check_extent(meta.sizes, meta.dtype, where);
  if (meta.strides.empty() && !meta.sizes.empty()) meta.strides = contiguous_strides(meta.sizes);
  return add_node(NodeKind::CallFunction, std::move(name), &op, std::move(b.args),
                  std::move(b.kwargs), std::move(meta));
}

Node* Graph::output(std::vector<Node*> values, std::vector<std::string> updates) {
  if (!updates.empty() && updates.size() != values.size())
    throw Error("graph", "output", "output(): " + std::to_string(updates.size()) +
                                       " update marks for " + std::to_string(values.size()) +
                                       " values");
  updates.resize(values.size());
  if (functional_) {
    for (Node*& v : values) v = functional_->read(*this, v);
    for (Node* p : functional_->written_placeholders(*this)) {
      if (std::find(updates.begin(), updates.end(), p->name()) != updates.end())
        throw Error("graph", "%" + p->name(),
                    "the graph returns an update of input %" + p->name() +
                        " and an in-place op writes it too");
      values.push_back(functional_->read(*this, p));
      updates.push_back(p->name());
    }
  }
  bool returned = true;
  for (size_t i = 0; i < values.size(); ++i) {
    Node* v = values[i];
    if (v && v->is_tuple())
      throw Error("graph", "%" + v->name(),
                  "a tuple-valued node (" + v->target() +
                      ") cannot be a graph output; return its elements (getitem nodes)");
    if (updates[i].empty()) {
      if (!returned)
        throw Error("graph", v ? "%" + v->name() : "output",
                    "a returned value follows an input update (updates come last)");
      continue;
    }
    returned = false;
    Node* p = find(updates[i]);
    if (!p || !p->is_placeholder())
      throw Error("graph", "%" + updates[i],
                  "an output updates '" + updates[i] + "', which is not a placeholder");
    if (std::count(updates.begin(), updates.end(), updates[i]) > 1)
      throw Error("graph", "%" + updates[i], "input %" + updates[i] + " is updated twice");
    if (!v || v->shape() != p->shape() || v->dtype() != p->dtype())
      throw Error("graph", "%" + updates[i],
                  "the update of input %" + updates[i] + " (" +
                      (v ? "%" + v->name() + ": " + shape_str(v->shape()) + " " +
                               std::string(dtype_name(v->dtype()))
                         : std::string("no value")) +
                      ") differs from it (" + shape_str(p->shape()) + " " +
                      std::string(dtype_name(p->dtype())) + ")");
  }
  if (Node* old = output_node()) {
    order_.erase(std::find(order_.begin(), order_.end(), old));
    by_name_.erase(old->name_);
    recompute_users();
  }
  std::vector<Arg> args;
  for (Node* v : values) args.emplace_back(v);
  Node* saved = insert_before_;
  insert_before_ = nullptr;
  Node* out = add_node(NodeKind::Output, "output", nullptr, std::move(args), {}, TensorMeta{});
  insert_before_ = saved;
  if (!returned) out->output_updates_ = std::move(updates);
  return out;
}

std::vector<std::string> Graph::output_updates() const {
  std::vector<std::string> u;
  if (Node* o = output_node()) {
    u = o->output_updates_;
    u.resize(o->args().size());
  }
  return u;
}

size_t Graph::num_returned() const {
  size_t n = 0;
  for (const auto& u : output_updates())
    if (u.empty()) ++n;
  return n;
}

std::vector<Node*> Graph::placeholders() const {
  std::vector<Node*> out;
  for (Node* n : order_)
    if (n->is_placeholder()) out.push_back(n);
  return out;
}

Node* Graph::output_node() const {
  return !order_.empty() && order_.back()->is_output() ? order_.back() : nullptr;
}

std::vector<Node*> Graph::outputs() const {
  std::vector<Node*> out;
  if (Node* o = output_node())
    for (const auto& a : o->args()) out.push_back(a.is_node() ? a.node() : nullptr);
  return out;
}

Node* Graph::find(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : it->second;
}

static void replace_in(Arg& a, Node* from, Node* to) {
  if (a.is_node() && a.node() == from) a = Arg(to);
  else if (a.is_list())
    for (auto& e : std::get<Arg::List>(a.v)) replace_in(e, from, to);
}

void Graph::replace_all_uses(Node* from, Node* to) {
  for (Node* u : from->users_) {
    for (auto& a : u->args_) replace_in(a, from, to);
    for (auto& kv : u->kwargs_) replace_in(kv.second, from, to);
  }
  recompute_users();
}

void Graph::erase(Node* n) {
  if (!n->users_.empty())
    throw Error("graph", "%" + n->name_, "cannot erase a node that still has users");
  if (insert_before_ == n) insert_before_ = nullptr;
  order_.erase(std::find(order_.begin(), order_.end(), n));
  by_name_.erase(n->name_);
  recompute_users();
  // The storage stays alive until the graph dies (cheap, and keeps stale pointers harmless).
}

void Graph::recompute_users() {
  for (size_t i = 0; i < order_.size(); ++i) {
    order_[i]->index_ = static_cast<int64_t>(i);
    order_[i]->users_.clear();
  }
  for (Node* n : order_)
    for (Node* in : n->input_nodes()) in->users_.push_back(n);
}

void Graph::topo_sort() {
  recompute_users();
  std::unordered_map<Node*, size_t> pending;
  std::priority_queue<std::pair<int64_t, Node*>, std::vector<std::pair<int64_t, Node*>>, std::greater<>> ready;
  for (Node* n : order_) {
    size_t deps = 0;
    for (Node* in : n->input_nodes())
      if (by_name_.count(in->name_) && by_name_.at(in->name_) == in) ++deps;
    pending[n] = deps;
    if (deps == 0) ready.push({n->index_, n});
  }
  std::vector<Node*> sorted;
  while (!ready.empty()) {
    Node* n = ready.top().second;
    ready.pop();
    sorted.push_back(n);
    for (Node* u : n->users_)
      if (--pending[u] == 0) ready.push({u->index_, u});
  }
  if (sorted.size() != order_.size()) {
    // Report one cycle: walk from an unsorted node through unsorted inputs until a repeat.
    std::unordered_set<Node*> done(sorted.begin(), sorted.end());
    Node* cur = nullptr;
    for (Node* n : order_)
      if (!done.count(n)) {
        cur = n;
        break;
      }
    std::vector<Node*> path;
    std::unordered_map<Node*, size_t> pos;
    while (!pos.count(cur)) {
      pos[cur] = path.size();
      path.push_back(cur);
      for (Node* in : cur->input_nodes())
        if (!done.count(in)) {
          cur = in;
          break;
        }
    }
    std::string cyc;
    for (size_t i = pos[cur]; i < path.size(); ++i) cyc += "%" + path[i]->name_ + " <- ";
    cyc += "%" + cur->name_;
    throw Error("graph", "%" + cur->name_, "the graph has a cycle: " + cyc);
  }
  // Keep the output node last.
  auto it = std::find_if(sorted.begin(), sorted.end(), [](Node* n) { return n->is_output(); });
  if (it != sorted.end()) {
    Node* o = *it;
    sorted.erase(it);
    sorted.push_back(o);
  }
  order_ = std::move(sorted);
  recompute_users();
}

static Arg remap(const Arg& a, const std::unordered_map<const Node*, Node*>& m) {
  if (a.is_node()) return Arg(m.at(a.node()));
  if (a.is_list()) {
    Arg::List l;
    for (const auto& e : a.list()) l.push_back(remap(e, m));
    return Arg(std::move(l));
  }
  return a;
}

Graph Graph::clone(std::unordered_map<const Node*, Node*>* mapping) const {
  Graph g(*registry_);
  std::unordered_map<const Node*, Node*> m;
  for (Node* n : order_) {
    std::vector<Arg> args;
    for (const auto& a : n->args_) args.push_back(remap(a, m));
    Kwargs kw;
    for (const auto& [k, v] : n->kwargs_) kw.emplace_back(k, remap(v, m));
    Node* c = g.add_node(n->kind_, n->name_, n->op_, std::move(args), std::move(kw), n->meta_);
    c->phase_ = n->phase_;
    c->attrs = n->attrs;
    c->is_tuple_ = n->is_tuple_;
    c->tuple_metas_ = n->tuple_metas_;
    c->output_updates_ = n->output_updates_;
    m[n] = c;
  }
  g.name_counter_ = name_counter_;
  g.next_primal_ = next_primal_;
  g.reserved_ = reserved_;
  if (mapping) *mapping = std::move(m);
  return g;
}

}  // namespace stax
