// JVP rules of the neural-network ops: convolution is linear in input, weight and bias
// separately, so its tangent is conv(ẋ, w) + conv(x, ẇ) + ḃ; every other nn op propagates
// tangents through its decomposition (jvp_by_decomposition).
#include <cmath>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "core/autodiff/jvp.h"
#include "core/autodiff/vjp.h"
#include "core/ops/common/derivative_formulas.h"
#include "core/ops/common/via_decomposition.h"
#include "core/ops/nn/derivatives.h"
#include "core/graph/decompositions.h"
#include "core/graph/op_registry.h"
#include "core/support/error.h"
#include "core/ops/registration.h"

namespace stax {

Node* jvp_by_decomposition(JvpContext& c) {
  Graph& g = c.graph();
  Node* n = c.node();
  const std::string where = "%" + n->name();
  const DecompositionFn* fn = default_decompositions().find(n->op()->name());
  if (!fn) throw Error("autodiff", where, "no decomposition to differentiate " + n->op()->name());
  std::unordered_set<const Node*> before(g.nodes().begin(), g.nodes().end());
  Node* r = (*fn)(g, *n);
  std::vector<Node*> fresh;
  for (Node* m : g.nodes())
    if (!before.count(m)) fresh.push_back(m);
  key_random_nodes(*n, fresh);
  std::unordered_set<const Node*> fresh_set(fresh.begin(), fresh.end());
  std::unordered_map<const Node*, Node*> tangent;
  auto tangent_of = [&](const Node* m) -> Node* {
    auto it = tangent.find(m);
    if (it != tangent.end()) return it->second;
    return fresh_set.count(m) ? nullptr : c.tangent(m);
  };
  const JvpTable& rules = default_jvp_table();
  for (Node* m : fresh) {
    if (!m->is_call() || !m->op()->differentiable || !is_floating(m->dtype())) continue;
    bool any = false;
    for (Node* in : m->input_nodes()) any = any || tangent_of(in);
    if (!any) continue;
    const JvpFn* rule = rules.find(m->op()->name());
    if (!rule)
      throw Error("autodiff", where,
                  "no JVP rule for " + m->op()->name() + " in the decomposition of " +
                      n->op()->name());
    JvpContext sub(g, m, tangent_of, c.phase());
    Node* t = (*rule)(sub);
    if (!t) continue;
    if (t->shape() != m->shape()) t = sub.expand_to(t, m->shape());
    tangent[m] = sub.cast(t, m->dtype());
  }
  return tangent_of(r);
}

namespace {

Node* convolution_jvp(JvpContext& c) {
  Node* x = c.in("input");
  Node* w = c.in("weight");
  Node* b = c.in("bias");
  auto conv = [&](Node* in, Node* wt) {
    return c.call("convolution", {in, wt, Arg(), c.arg("stride"), c.arg("padding"),
                                  c.arg("dilation"), c.arg("transposed"), c.arg("output_padding"),
                                  c.arg("groups")});
  };
  Node* r = nullptr;
  if (Node* tx = c.tangent(x)) r = conv(tx, w);
  if (Node* tw = c.tangent(w)) r = r ? c.add(r, conv(x, tw)) : conv(x, tw);
  if (Node* tb = c.tangent(b)) {
    Shape s{tb->shape()[0]};
    for (int64_t d = 2; d < x->meta().dim(); ++d) s.push_back(1);
    Node* v = c.reshape(tb, s);
    r = r ? c.add(r, v) : v;
  }
  return r;
}

// linear(i̇, W) + linear(i, Ẇ) + ḃ
Node* linear_op_jvp(JvpContext& c) {
  Node* x = c.in("input");
  Node* w = c.in("weight");
  Node* r = nullptr;
  auto add = [&](Node* t) { r = r ? c.add(r, t) : t; };
  if (Node* d = c.tangent(x)) add(c.call("linear", {d, w}));
  if (Node* d = c.tangent(w)) add(c.call("linear", {x, d}));
  if (Node* d = c.tangent("bias")) add(d);
  return r;
}

// ẋ̂ = rstd (ẋ - mean(ẋ) - x̂ mean(ẋ x̂));  ȯut = ẋ̂ w + x̂ ẇ + ḃ
Node* layer_norm_jvp(JvpContext& c) {
  Node* x = c.in("input");
  Node* w = c.in("weight");
  size_t k = c.arg("normalized_shape").to_int_list().size();
  auto st = formulas::layer_norm_stats(c, x, k, c.arg("eps").to_double());
  Node* r = nullptr;
  auto add = [&](Node* t) { r = r ? c.add(r, t) : t; };
  if (Node* xd = c.tangent(x)) {
    Node* mean_xd = c.call("mean.dim", {xd, Arg(st.dims), true});
    Node* mean_xdx = c.call("mean.dim", {c.mul(xd, st.xhat), Arg(st.dims), true});
    Node* xhat_d = c.mul(st.rstd, c.sub(c.sub(xd, mean_xd), c.mul(st.xhat, mean_xdx)));
    add(w ? c.mul(xhat_d, w) : xhat_d);
  }
  if (Node* wd = c.tangent(w)) add(c.mul(st.xhat, wd));
  if (Node* bd = c.tangent("bias")) add(bd);
  return r;
}

}  // namespace

void register_nn_jvps(JvpTable& t) {
  t.add("convolution.default", convolution_jvp);
  for (const std::string& op : nn_decomposed_ops()) t.add(op, jvp_by_decomposition);
  t.add("linear.default", linear_op_jvp);
  {
    // log_softmax: ẏ = ẋ - Σ_dim softmax(x) ẋ, with softmax(x) = exp(y)
    auto log_softmax_jvp = [](JvpContext& c) {
      Node* xd = c.tangent("self");
      Node* s = c.call("exp", {c.out()});
      Node* dot = c.call("sum.dim_IntList",
                         {c.mul(s, xd), Arg(std::vector<int64_t>{c.arg("dim").to_int()}), true});
      return c.sub(xd, dot);
    };

    // softmax's Jacobian diag(y) - y yᵀ is symmetric: its VJP rule applies to the tangent.
    t.add("softmax.int", jvp_via_symmetric_vjp("softmax.int", "self"));

    t.add("_softmax.default", jvp_via_symmetric_vjp("_softmax.default", "self"));

    t.add("log_softmax.int", log_softmax_jvp);

    t.add("_log_softmax.default", log_softmax_jvp);

    t.add("layer_norm.default", layer_norm_jvp);
  }
  // The nn.functional ops composed from other ops (functional_decompositions.cpp).
  for (const std::string& op : nn_functional_ops()) t.add(op, jvp_via_decomposition);
}

}  // namespace stax
