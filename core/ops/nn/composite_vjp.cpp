// VJP rules of the composite ops (softmax, log_softmax, layer_norm, linear) and of dropout.
// softmax / log_softmax use torch's backward ops (_softmax_backward_data,
// _log_softmax_backward_data); layer_norm and linear are written with base ops.
#include "core/ops/common/derivative_formulas.h"
#include "core/autodiff/vjp.h"
#include "core/ops/registration.h"

namespace stax {
namespace {

VjpFn softmax_vjp(const char* backward_op) {
  return [backward_op](VjpContext& c) {
    if (!c.needs("self")) return;
    Node* x = c.in("self");
    c.give(x, c.call(backward_op, {c.grad(), c.out(), c.arg("dim"), x->dtype()}));
  };
}

// x̂ = (x - μ) rstd, out = x̂ w + b over the trailing normalized dims:
//   x̄ = rstd (ĝ - mean(ĝ) - x̂ mean(ĝ x̂)) with ĝ = ḡ w;  w̄ = Σ ḡ x̂;  b̄ = Σ ḡ.
void layer_norm_vjp(VjpContext& c) {
  Node* x = c.in("input");
  Node* w = c.in("weight");
  Node* b = c.in("bias");
  if (!c.needs(x) && !c.needs(w) && !c.needs(b)) return;
  Node* g = c.grad();
  size_t k = c.arg("normalized_shape").to_int_list().size();
  if (c.needs(x) || c.needs(w)) {
    auto st = formulas::layer_norm_stats(c, x, k, c.arg("eps").to_double());
    if (c.needs(x)) {
      Node* gh = w ? c.mul(g, w) : g;
      Node* mean_gh = c.call("mean.dim", {gh, Arg(st.dims), true});
      Node* mean_ghx = c.call("mean.dim", {c.mul(gh, st.xhat), Arg(st.dims), true});
      Node* inner = c.sub(c.sub(gh, mean_gh), c.mul(st.xhat, mean_ghx));
      c.give(x, c.mul(st.rstd, inner));
    }
    if (c.needs(w)) c.give(w, c.sum_to_shape(c.mul(g, st.xhat), w->shape()));
  }
  if (c.needs(b)) c.give(b, c.sum_to_shape(g, b->shape()));
}

// input @ weight.T + bias: input̄ = ḡ W; W̄ = ḡᵀ input over the flattened leading dims; b̄ = Σ ḡ.
void linear_vjp(VjpContext& c) {
  Node* x = c.in("input");
  Node* w = c.in("weight");
  Node* g = c.grad();
  if (c.needs(x)) c.give(x, c.call("matmul", {g, w}));
  if (c.needs(w)) {
    int64_t out_f = w->shape()[0], in_f = w->shape()[1];
    int64_t n = out_f == 0 ? 0 : shape_numel(g->shape()) / out_f;
    Node* g2 = c.reshape(g, Shape{n, out_f});
    Node* x2 = c.reshape(x, Shape{n, in_f});
    c.give(w, c.call("mm", {c.call("t", {g2}), x2}));
  }
  if (c.needs("bias")) c.give("bias", c.sum_to_shape(g, c.in("bias")->shape()));
}

// dropout(x) = x * mask / (1 - p) with a mask drawn from the node's seed: its backward is the
// same dropout of the gradient, drawing the same mask (same rng_seed, §5.3 item 5).
void dropout_vjp(VjpContext& c) {
  if (!c.needs("input")) return;
  double p = c.arg("p").to_double();
  bool train = c.arg("train").to_bool();
  if (!train || p == 0.0) {
    c.give("input", c.grad());
    return;
  }
  if (p == 1.0) return;  // everything dropped: zero gradient
  Node* d = c.call("dropout", {c.grad(), c.arg("p"), c.arg("train")});
  auto it = c.node()->attrs.find("rng_seed");
  d->attrs["rng_seed"] = it != c.node()->attrs.end() ? it->second : Arg(c.node()->name());
  c.give("input", d);
}

}  // namespace

void register_composite_vjps(VjpTable& t) {
  t.add("softmax.int", softmax_vjp("_softmax_backward_data"));
  t.add("_softmax.default", softmax_vjp("_softmax_backward_data"));
  t.add("log_softmax.int", softmax_vjp("_log_softmax_backward_data"));
  t.add("_log_softmax.default", softmax_vjp("_log_softmax_backward_data"));
  t.add("layer_norm.default", layer_norm_vjp);
  t.add("linear.default", linear_vjp);
  t.add("dropout.default", dropout_vjp);
}

}  // namespace stax
