// JVP rules of the ops that are linear in their floating-point tensor inputs (views, sums, means,
// cat, gather / index / scatter, clones): the tangent is the same op applied to the tangents
// (zeros for inputs without one), index tensors and other arguments unchanged. And of the
// products, which are multilinear: the sum over inputs of the op with that input replaced by its
// tangent (mul.Tensor is in jvp_rules_pointwise.cpp).
#include "core/autodiff/jvp.h"
#include "core/graph/op_registry.h"
#include "core/ops/registration.h"

namespace stax {
namespace {

Arg substitute(const JvpContext& c, const Arg& a) {
  if (a.is_node()) {
    Node* n = a.node();
    return is_floating(n->dtype()) ? Arg(c.tangent_or_zeros(n)) : a;
  }
  if (a.is_list()) {
    Arg::List l;
    for (const Arg& e : a.list()) l.push_back(substitute(c, e));
    return Arg(std::move(l));
  }
  return a;
}

// op(ẋ...) with the node's own arguments otherwise; `target` overrides the op (view -> reshape:
// a tangent need not have strides the view accepts).
JvpFn linear(std::string target = "") {
  return [target = std::move(target)](JvpContext& c) {
    std::vector<Arg> args;
    for (const Arg& a : c.node()->args()) args.push_back(substitute(c, a));
    Kwargs kw;
    for (const auto& [k, v] : c.node()->kwargs()) kw.emplace_back(k, substitute(c, v));
    return c.call(target.empty() ? c.node()->op()->name() : target, std::move(args), std::move(kw));
  };
}

// Σ_i op(x_1, ..., ẋ_i, ..., x_n) over the tensor arguments with a tangent.
Node* multilinear(JvpContext& c) {
  const auto& args = c.node()->args();
  Node* r = nullptr;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].is_node()) continue;
    Node* d = c.tangent(args[i].node());
    if (!d) continue;
    std::vector<Arg> a = args;
    a[i] = Arg(d);
    Node* term = c.call(c.node()->op()->name(), std::move(a), c.node()->kwargs());
    r = r ? c.add(r, term) : term;
  }
  return r;
}

// beta ṡ + alpha (ṁ1 m2 + m1 ṁ2)
Node* addmm_jvp(JvpContext& c) {
  Node* sd = c.tangent("self");
  Node* m1 = c.in("mat1");
  Node* m2 = c.in("mat2");
  Node* prod = nullptr;
  if (Node* d = c.tangent(m1)) prod = c.call("mm", {d, m2});
  if (Node* d = c.tangent(m2)) {
    Node* term = c.call("mm", {m1, d});
    prod = prod ? c.add(prod, term) : term;
  }
  const Arg& alpha = c.arg("alpha");
  const Arg& beta = c.arg("beta");
  if (prod && alpha.to_double() != 1.0) prod = c.mul(prod, alpha);
  if (sd && beta.to_double() != 0.0) {
    Node* s = beta.to_double() == 1.0 ? sd : c.mul(sd, beta);
    return prod ? c.add(prod, s) : s;
  }
  return prod;
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

}  // namespace

void register_linear_jvps(JvpTable& t) {
  for (const char* op :
       {"reshape.default", "permute.default", "t.default", "transpose.int", "expand.default",
        "squeeze.default", "squeeze.dim", "squeeze.dims", "unsqueeze.default", "slice.Tensor",
        "select.int", "alias.default", "clone.default", "contiguous.default",
        "lift_fresh_copy.default", "as_strided.default"})
    t.add(op, linear());
  t.add("view.default", linear("reshape"));
  t.add("_unsafe_view.default", linear("reshape"));
  t.add("_reshape_alias.default", [](JvpContext& c) -> Node* {
    Node* d = c.tangent("self");
    return d ? c.call("reshape", {d, c.arg("size")}) : nullptr;
  });
  for (const char* op : {"sum.default", "sum.dim_IntList", "mean.default", "mean.dim"})
    t.add(op, linear());
  for (const char* op : {"cat.default", "gather.default", "index.Tensor", "index_select.default",
                         "index_put.default", "scatter_add.default", "scatter.src"})
    t.add(op, linear());
  t.add("scatter.value", [](JvpContext& c) {
    return c.call("scatter.value", {c.tangent("self"), c.arg("dim"), c.in("index"), 0});
  });
  for (const char* op : {"matmul.default", "mm.default", "bmm.default"}) t.add(op, multilinear);
  t.add("addmm.default", addmm_jvp);
  t.add("linear.default", linear_op_jvp);
}

}  // namespace stax
