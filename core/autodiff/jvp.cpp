#include "core/autodiff/jvp.h"

#include <algorithm>
#include <set>
#include <unordered_map>

#include "core/autodiff/vjp.h"
#include "core/graph/multi_output.h"
#include "core/graph/op_registry.h"
#include "core/support/error.h"

namespace stax {

Node* JvpContext::in(std::string_view param) const {
  const Arg& a = node_->arg(param);
  return a.is_node() ? a.node() : nullptr;
}

Node* JvpContext::tangent_or_zeros(Node* n) const {
  Node* t = tangent(n);
  return t ? t : zeros_like(n);
}

void JvpTable::add(const std::string& op, JvpFn fn) {
  if (!rules_.emplace(op, std::move(fn)).second)
    throw Error("autodiff", op, "duplicate JVP rule for op " + op);
}

const JvpFn* JvpTable::find(std::string_view op) const {
  auto it = rules_.find(op);
  return it == rules_.end() ? nullptr : &it->second;
}

void JvpTable::extend(const std::string& op, const std::function<JvpFn(JvpFn)>& wrap,
                      JvpFn absent) {
  auto it = rules_.find(op);
  if (it == rules_.end())
    rules_.emplace(op, wrap(std::move(absent)));
  else
    it->second = wrap(std::move(it->second));
}

std::vector<std::string> JvpTable::names() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : rules_) out.push_back(k);
  return out;
}

// Applies op's VJP rule to the tangent of `param` (valid when op's Jacobian with respect to
// that input is symmetric: elementwise ops, softmax). Used by the op families' JVP rules.
JvpFn jvp_via_symmetric_vjp(std::string op, std::string param) {
  return [op = std::move(op), param = std::move(param)](JvpContext& c) -> Node* {
    Node* x = c.in(param);
    Node* xd = c.tangent(x);
    if (!xd) return nullptr;
    const VjpFn* rule = default_vjp_table().find(op);
    VjpContext v(
        c.graph(), c.node(), xd, [x](const Node* n) { return n == x; }, c.phase());
    (*rule)(v);
    Node* r = nullptr;
    for (auto [n, contribution] : v.contributions()) r = r ? c.add(r, contribution) : contribution;
    return r;
  };
}

namespace {
JvpTable& jvp_storage() {
  static JvpTable table;
  return table;
}
}  // namespace

const JvpTable& default_jvp_table() {
  const JvpTable& t = jvp_storage();
  if (t.empty()) throw_ops_not_installed("JVP table");
  return t;
}

JvpTable& jvp_table_to_fill() { return jvp_storage(); }

namespace {

std::string where(const Node* n) { return "%" + n->name(); }

// A rule's tangent, brought to the output's shape and dtype.
Node* conform(const Emitter& e, Node* t, const Node* out) {
  if (t->shape() != out->shape()) {
    Shape b = broadcast_shapes(t->shape(), out->shape(), where(out));
    if (b != out->shape())
      throw Error("autodiff", where(out),
                  "the JVP rule of " + out->op()->name() + " gave a tangent of shape " +
                      shape_str(t->shape()) + " for an output of shape " + shape_str(out->shape()));
    t = e.expand_to(t, out->shape());
  }
  return e.cast(t, out->dtype());
}

}  // namespace

JvpGraph build_jvp_graph(const Graph& g, const std::vector<std::string>& wrt,
                         const JvpTable& rules) {
  if (!g.output_node()) throw Error("autodiff", "graph", "the graph has no output node");
  std::set<std::string> seen;
  for (const auto& name : wrt) {
    Node* n = g.find(name);
    if (!n || !n->is_placeholder())
      throw Error("autodiff", name,
                  "tangents can only be given for placeholders; '" + name +
                      "' is not a placeholder of the graph");
    if (!is_floating(n->dtype()) && !is_complex(n->dtype()))
      throw Error(
          "autodiff", where(n),
          "a " + std::string(dtype_name(n->dtype())) + " placeholder cannot carry a tangent");
    if (!seen.insert(name).second)
      throw Error("autodiff", where(n), "placeholder '" + name + "' is named twice in wrt");
  }
  JvpGraph j{g.clone(), {}, {}, wrt, g.outputs().size()};
  expand_multi_output(j.graph);  // a JVP sees one node per element of a multi-output op
  Graph& jg = j.graph;
  std::vector<Node*> nodes = jg.nodes();
  std::unordered_map<const Node*, Node*> tangent;
  auto tangent_of = [&tangent](const Node* n) -> Node* {
    auto it = tangent.find(n);
    return it == tangent.end() ? nullptr : it->second;
  };

  // Tangent placeholders after the last primal placeholder.
  auto last =
      std::find_if(nodes.rbegin(), nodes.rend(), [](Node* n) { return n->is_placeholder(); });
  jg.set_insert_point(last == nodes.rend() ? nodes.front() : *last.base());
  for (Node* n : nodes)
    if (n->is_placeholder()) j.primals.push_back(n->name());
  for (const auto& name : wrt) {
    Node* p = jg.find(name);
    Node* t = jg.placeholder(jg.unique_name(name + "_dot"), p->meta());
    tangent[p] = t;
    j.tangents.push_back(t->name());
  }

  // Each node's tangent right after it.
  for (size_t i = 0; i < nodes.size(); ++i) {
    Node* n = nodes[i];
    // Complex values carry tangents too (an FFT between real values): an op without a JVP rule
    // (the spectral ops, docs/complex.md) is then a clear error, never a silent zero tangent.
    if (!n->is_call() || !n->op()->differentiable ||
        !(is_floating(n->dtype()) || is_complex(n->dtype())))
      continue;
    bool any = false;
    for (Node* in : n->input_nodes()) any = any || tangent_of(in);
    if (!any) continue;
    const JvpFn* rule = rules.find(n->op()->name());
    if (!rule)
      throw Error("autodiff", where(n), "no forward-mode (JVP) rule for op " + n->op()->name());
    jg.set_insert_point(nodes[i + 1]);
    JvpContext ctx(jg, n, tangent_of);
    if (Node* t = (*rule)(ctx)) tangent[n] = conform(ctx, t, n);
  }
  jg.set_insert_point(nullptr);

  std::vector<Node*> outs = jg.outputs();
  Emitter e(jg, Phase::None);
  std::vector<Node*> values = outs;
  for (Node* o : outs) {
    Node* t = tangent_of(o);
    values.push_back(t ? t : e.zeros_like(o));
  }
  Phase out_phase = jg.output_node()->phase();
  jg.output(values)->set_phase(out_phase);
  return j;
}

}  // namespace stax
