// JVP rules of the nonlinear reductions and composites: prod, amax / amin, var (Σ ∂y/∂x ẋ over
// the reduced dims, with the partials of formulas.h), softmax / log_softmax, layer_norm, dropout.
#include "core/ops/common/derivative_formulas.h"
#include "core/autodiff/jvp.h"
#include "core/graph/op_registry.h"
#include "core/ops/registration.h"

namespace stax {
namespace {

bool keepdim_of(const JvpContext& c) {
  const auto& schema = c.node()->op()->schema;
  return schema.index_of("keepdim") >= 0 && c.arg("keepdim").to_bool();
}

std::vector<int64_t> dims_of(const JvpContext& c) {
  const auto& schema = c.node()->op()->schema;
  Arg dim = schema.index_of("dim") >= 0 ? c.arg("dim") : Arg();
  return reduced_dims(dim, c.in("self")->meta().dim());
}

// Σ over the reduced dims of partials * ẋ, shaped like the output.
Node* reduce_weighted(JvpContext& c, Node* partials) {
  Node* v = c.mul(partials, c.tangent("self"));
  std::vector<int64_t> dims = dims_of(c);
  if (dims.empty()) return v;  // a 0-d input: nothing is reduced
  return c.call("sum.dim_IntList", {v, Arg(dims), keepdim_of(c)});
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

// dropout is linear for a fixed mask: the same dropout (same rng_seed) of the tangent.
Node* dropout_jvp(JvpContext& c) {
  Node* d = c.call("dropout", {c.tangent("input"), c.arg("p"), c.arg("train")});
  auto it = c.node()->attrs.find("rng_seed");
  d->attrs["rng_seed"] = it != c.node()->attrs.end() ? it->second : Arg(c.node()->name());
  return d;
}

}  // namespace

void register_nonlinear_jvps(JvpTable& t) {
  t.add("prod.default", [](JvpContext& c) {
    return reduce_weighted(c, formulas::prod_partials(c, c.in("self"), std::nullopt));
  });
  t.add("prod.dim_int", [](JvpContext& c) {
    return reduce_weighted(c, formulas::prod_partials(c, c.in("self"), c.arg("dim").to_int()));
  });
  auto extremum = [](JvpContext& c) {
    return reduce_weighted(
        c, formulas::extremum_weights(c, c.in("self"), c.out(), dims_of(c), keepdim_of(c)));
  };
  t.add("amax.default", extremum);
  t.add("amin.default", extremum);
  t.add("var.correction", [](JvpContext& c) {
    const Arg& corr = c.arg("correction");
    double correction = corr.is_absent() ? 1.0 : corr.to_double();
    return reduce_weighted(c, formulas::var_partials(c, c.in("self"), dims_of(c), correction));
  });
  // softmax's Jacobian diag(y) - y yᵀ is symmetric: its VJP rule applies to the tangent.
  t.add("softmax.int", jvp_via_symmetric_vjp("softmax.int", "self"));
  t.add("_softmax.default", jvp_via_symmetric_vjp("_softmax.default", "self"));
  // log_softmax: ẏ = ẋ - Σ_dim softmax(x) ẋ, with softmax(x) = exp(y)
  auto log_softmax_jvp = [](JvpContext& c) {
    Node* xd = c.tangent("self");
    Node* s = c.call("exp", {c.out()});
    Node* dot = c.call("sum.dim_IntList",
                       {c.mul(s, xd), Arg(std::vector<int64_t>{c.arg("dim").to_int()}), true});
    return c.sub(xd, dot);
  };
  t.add("log_softmax.int", log_softmax_jvp);
  t.add("_log_softmax.default", log_softmax_jvp);
  t.add("layer_norm.default", layer_norm_jvp);
  t.add("dropout.default", dropout_jvp);
}

}  // namespace stax
