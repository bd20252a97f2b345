#include "core/graph/verifier.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "core/graph/op_registry.h"
#include "core/graph/op_traits.h"
#include "core/graph/unsigned_ops.h"
#include "core/support/error.h"

namespace stax {
namespace {

[[noreturn]] void fail(const Node& n, const std::string& msg) {
  throw Error("verify", "%" + n.name(), msg);
}

std::string meta_str(const TensorMeta& m) {
  return "shape=" + shape_str(m.sizes) + " strides=" + shape_str(m.strides) +
         " dtype=" + std::string(dtype_name(m.dtype)) + " device=" + m.device;
}

// Arg equality that compares doubles by their bits (so a NaN argument equals itself).
bool same(const Arg& a, const Arg& b) {
  if (a.is_double() && b.is_double()) {
    double x = a.to_double(), y = b.to_double();
    return std::memcmp(&x, &y, sizeof x) == 0;
  }
  if (a.is_list() && b.is_list()) {
    if (a.list().size() != b.list().size()) return false;
    for (size_t i = 0; i < a.list().size(); ++i)
      if (!same(a.list()[i], b.list()[i])) return false;
    return true;
  }
  return a == b;
}

bool same_args(const std::vector<Arg>& a, const std::vector<Arg>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!same(a[i], b[i])) return false;
  return true;
}

bool same_kwargs(const Kwargs& a, const Kwargs& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].first != b[i].first || !same(a[i].second, b[i].second)) return false;
  return true;
}

// A cycle among `nodes` (all of the graph), as "%a -> %b -> %a", or "" when there is none.
std::string find_cycle(const std::vector<Node*>& nodes) {
  enum class Mark { None, Active, Done };
  std::unordered_map<const Node*, Mark> mark;
  std::unordered_set<const Node*> in_graph(nodes.begin(), nodes.end());
  std::vector<const Node*> stack;
  std::string found;
  std::function<bool(const Node*)> visit = [&](const Node* n) {
    mark[n] = Mark::Active;
    stack.push_back(n);
    for (const Node* in : n->input_nodes()) {
      if (!in_graph.count(in)) continue;
      if (mark[in] == Mark::Active) {
        auto it = std::find(stack.begin(), stack.end(), in);
        for (; it != stack.end(); ++it) found += "%" + (*it)->name() + " -> ";
        found += "%" + in->name();
        return true;
      }
      if (mark[in] == Mark::None && visit(in)) return true;
    }
    stack.pop_back();
    mark[n] = Mark::Done;
    return false;
  };
  for (const Node* n : nodes)
    if (mark[n] == Mark::None && visit(n)) return found;
  return "";
}

void check_placeholder(const Node& n) {
  if (n.op() || !n.args().empty() || !n.kwargs().empty())
    fail(n, "a placeholder has no op and no arguments");
  const TensorMeta& m = n.meta();
  if (m.strides.size() != m.sizes.size())
    fail(n, "placeholder metadata is malformed: " + std::to_string(m.sizes.size()) + " sizes but " +
                std::to_string(m.strides.size()) + " strides");
  for (int64_t s : m.sizes)
    if (s < 0) fail(n, "placeholder metadata has a negative size: " + shape_str(m.sizes));
  if (m.device.empty()) fail(n, "placeholder metadata has no device");
}

void check_call(const Graph& g, const Node& n) {
  if (!n.op()) fail(n, "a call_function node has no op");
  const OpDef& op = *n.op();
  const OpDef* reg = g.registry().find(op.name());
  if (reg != &op) {
    std::string msg = "op '" + op.name() + "' is not in the graph's op registry";
    auto s = g.registry().suggest(op.name());
    if (!reg && !s.empty()) {
      msg += "; did you mean: ";
      for (size_t i = 0; i < s.size(); ++i) msg += (i ? ", " : "") + s[i];
      msg += "?";
    }
    fail(n, msg);
  }
  const std::string where = "%" + n.name();
  BoundCall b;
  try {
    b = bind_call(op, n.args(), n.kwargs(), where);
  } catch (const Error& e) {
    fail(n, e.message());
  }
  if (!same_args(b.args, n.args()) || !same_kwargs(b.kwargs, n.kwargs()))
    fail(n, "arguments of " + op.name() +
                " are not in normalized form (every positional "
                "parameter bound, defaults filled in, kwarg-only parameters in kwargs)");
  if (op.multi_output() != n.is_tuple())
    fail(n, n.is_tuple() ? "a tuple-valued node calls " + op.name() + ", which returns one tensor"
                         : op.name() + " returns several tensors but the node is not a tuple");
  for (const Node* in : n.input_nodes())
    if (in->is_tuple() && !default_op_traits().plays(op, OpRole::kTupleElement))
      fail(n, "reads the tuple %" + in->name() + " directly (only getitem may)");
  try {
    reject_unsupported_complex(op, b.args, b.kwargs, &n.meta(), where);
    reject_unsupported_unsigned(op, b.args, b.kwargs, &n.meta(), where);
  } catch (const Error& e) {
    fail(n, e.message());
  }
  if (n.is_tuple()) {
    std::vector<TensorMeta> metas;
    try {
      metas = op.infer_multi(CallArgs(op, b.args, b.kwargs, where));
    } catch (const Error& e) {
      fail(n, e.message());
    }
    for (auto& m : metas)
      if (m.strides.empty() && !m.sizes.empty()) m.strides = contiguous_strides(m.sizes);
    if (metas != n.tuple_metas()) fail(n, "tuple element metadata differ from the inferred ones");
    return;
  }
  TensorMeta meta;
  try {
    CallArgs ca(op, b.args, b.kwargs, where);
    meta = op.infer(ca);
  } catch (const Error& e) {
    fail(n, e.message());
  }
  if (meta.strides.empty() && !meta.sizes.empty()) meta.strides = contiguous_strides(meta.sizes);
  if (!(meta == n.meta()))
    fail(n, "metadata " + meta_str(n.meta()) + " differs from the inferred " + meta_str(meta));
}

}  // namespace

void verify(const Graph& g) {
  const auto& nodes = g.nodes();
  if (nodes.empty() || !nodes.back()->is_output())
    throw Error("verify", "graph", "the graph has no output node at its end");
  std::unordered_map<const Node*, size_t> pos;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = *nodes[i];
    if (n.is_output() && i + 1 != nodes.size())
      fail(n, "an output node before the end of the graph (there must be exactly one, last)");
    if (g.find(n.name()) != &n)
      fail(n, "the name '" + n.name() + "' does not resolve to this node");
    if (!pos.emplace(&n, i).second) fail(n, "the node appears twice in the node list");
  }
  // References: dangling first, then order (a misordering may be a cycle: name it).
  for (const Node* n : nodes)
    for (const Node* in : n->input_nodes())
      if (!pos.count(in))
        fail(*n, "refers to %" + in->name() + ", which is not a node of this graph");
  for (const Node* n : nodes)
    for (const Node* in : n->input_nodes())
      if (pos.at(in) >= pos.at(n)) {
        std::string cycle = find_cycle(nodes);
        if (!cycle.empty())
          fail(*n, "the graph has a cycle: " + cycle + " (each node uses the next)");
        fail(*n, "uses %" + in->name() + " before its definition (the order is not topological)");
      }
  for (const Node* n : nodes) {
    switch (n->kind()) {
      case NodeKind::Placeholder: check_placeholder(*n); break;
      case NodeKind::CallFunction: check_call(g, *n); break;
      case NodeKind::Output:
        if (n->op() || !n->kwargs().empty()) fail(*n, "the output node has no op and no kwargs");
        for (const auto& a : n->args()) {
          if (!a.is_node()) fail(*n, "the graph returns a non-tensor value " + arg_str(a));
          if (a.node()->is_tuple())
            fail(*n, "returns the tuple %" + a.node()->name() + " (return its getitem nodes)");
        }
        break;
    }
  }
}

}  // namespace stax
