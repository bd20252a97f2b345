// VJP rules of the reductions: the gradient of a reduction is the upstream gradient with the
// reduced dims restored (unsqueeze where keepdim=False) and expanded to the input's shape, times
// the reduction's partial derivatives (1 for sum, 1/N for mean, formulas.h for prod, amax/amin,
// var). argmax / argmin / all / any are not differentiable (no rule needed: the joint-graph
// builder never asks for one).
#include <algorithm>
#include <cmath>
#include <functional>
#include <unordered_map>

#include "core/autodiff/joint_graph.h"
#include "core/autodiff/jvp.h"
#include "core/graph/decompositions.h"
#include "core/ops/common/derivative_formulas.h"
#include "core/autodiff/vjp.h"
#include "core/graph/op_registry.h"
#include "core/ops/common/via_decomposition.h"
#include "core/ops/reduction/derivatives.h"
#include "core/ops/registration.h"
#include "core/support/error.h"

namespace stax {
namespace {

using namespace reduction_derivatives;  // NOLINT

// The upstream gradient broadcast back to the input's shape.
Node* grad_expanded(VjpContext& c) {
  Node* x = c.in("self");
  Node* gk = c.restore_reduced_dims(c.grad(), x->shape(), dims_of(c), keepdim_of(c));
  return c.expand_to(gk, x->shape());
}

// The upstream gradient with keepdim-shaped dims (it broadcasts against the input).
Node* grad_keepdim(VjpContext& c) {
  return c.restore_reduced_dims(c.grad(), c.in("self")->shape(), dims_of(c), keepdim_of(c));
}

template <class F>
VjpFn reduction(F f) {
  return [f](VjpContext& c) {
    if (c.needs("self")) c.give("self", f(c));
  };
}

int64_t dim_arg(const Node* x, const Arg& d) {
  return wrap_dim(d.to_int(), std::max<int64_t>(x->meta().dim(), 1), "%" + x->name());
}

void cumsum_vjp(VjpContext& c) {
  Node* x = c.in("self");
  if (!c.needs(x)) return;
  if (x->meta().dim() == 0) {
    c.give(x, c.grad());
    return;
  }
  std::vector<int64_t> d{dim_arg(x, c.arg("dim"))};
  Node* f = c.call("flip", {c.grad(), d});
  Node* s = c.call("cumsum", {f, d[0]});
  c.give(x, c.call("flip", {s, d}));
}

void cumprod_vjp(VjpContext& c) {
  Node* x = c.in("self");
  if (!c.needs(x)) return;
  int64_t rank = x->meta().dim();
  if (rank == 0 || shape_numel(x->shape()) == 0) {
    c.give(x, c.cast(c.grad(), x->dtype()));
    return;
  }
  CumprodTerms t = cumprod_terms(c, *c.node());
  Node* gt = c.call("transpose.int", {c.cast(c.grad(), x->dtype()), t.d, rank - 1});
  Node* p = c.mul(t.c, c.call("unsqueeze", {gt, rank - 1}));
  Node* m = c.call("where.ScalarOther", {t.upper, p, 0.0});
  Node* s = c.call("sum.dim_IntList", {m, std::vector<int64_t>{rank}});
  c.give(x, c.call("transpose.int", {s, t.d, rank - 1}));
}

void std_vjp(VjpContext& c) {
  Node* x = c.in("self");
  if (!c.needs(x)) return;
  const Node& n = *c.node();
  Reduced r = reduced_of(n);
  Node* y = c.out();
  Node* gv = zero_where_zero(c, y, c.div(c.grad(), c.mul(y, Arg(2.0))));
  Node* ge = c.restore_reduced_dims(gv, x->shape(), r.dims, r.keepdim);
  Node* xc = c.sub(x, c.call("mean.dim", {x, r.dims, true}));
  c.give(x, c.mul(c.mul(xc, Arg(2.0 / std_denominator(n, r))), ge));
}

void norm_vjp(VjpContext& c) {
  double p = norm_p(*c.node());
  if (!plain_p(p)) return vjp_via_decomposition(c);
  Node* x0 = c.in("self");
  if (!c.needs(x0)) return;
  Node* y = c.out();
  Node* x = c.cast(x0, y->dtype());
  Reduced r = reduced_of(*c.node());
  Node* ye = c.restore_reduced_dims(y, x->shape(), r.dims, r.keepdim);
  Node* ge = c.restore_reduced_dims(c.grad(), x->shape(), r.dims, r.keepdim);
  Node* v = c.div(c.mul(norm_scaled(c, x, p), ge), norm_power(c, ye, p));
  c.give(x0, zero_where_zero(c, ye, v));
}

}  // namespace

void register_reduction_vjps(VjpTable& t) {
  // torch: grad.expand(self.sizes()) (after unsqueezing the reduced dims when keepdim=False)
  t.add("sum.default", reduction(grad_expanded));
  t.add("sum.dim_IntList", reduction(grad_expanded));
  // torch: grad.expand(sizes) / N
  auto mean = reduction([](VjpContext& c) {
    int64_t n = reduced_numel(c.in("self")->shape(), dims_of(c));
    return c.div(grad_expanded(c), Arg(n));
  });
  t.add("mean.default", mean);
  t.add("mean.dim", mean);
  t.add("prod.default", reduction([](VjpContext& c) {
          return c.mul(formulas::prod_partials(c, c.in("self"), std::nullopt), c.grad());
        }));
  t.add("prod.dim_int", reduction([](VjpContext& c) {
          int64_t d = c.arg("dim").to_int();
          return c.mul(formulas::prod_partials(c, c.in("self"), d), grad_keepdim(c));
        }));
  auto extremum = reduction([](VjpContext& c) {
    Node* w = formulas::extremum_weights(c, c.in("self"), c.out(), dims_of(c), keepdim_of(c));
    return c.mul(w, grad_keepdim(c));
  });
  t.add("amax.default", extremum);
  t.add("amin.default", extremum);
  t.add("var.correction", reduction([](VjpContext& c) {
          const Arg& corr = c.arg("correction");
          double correction = corr.is_absent() ? 1.0 : corr.to_double();
          Node* p = formulas::var_partials(c, c.in("self"), dims_of(c), correction);
          return c.mul(p, grad_keepdim(c));
        }));
  for (const char* op :
         {"var.dim", "var.default", "logsumexp.default", "max.default", "min.default"}) t.add(op, vjp_via_decomposition);

  for (const char* op : {"std.correction", "std.dim", "std.default"}) t.add(op, std_vjp);

  for (const char* op : {"norm.ScalarOpt_dim", "norm.Scalar", "linalg_vector_norm.default"})
    t.add(op, norm_vjp);

  t.add("cumsum.default", cumsum_vjp);

  t.add("cumprod.default", cumprod_vjp);
  for (const char* op :
         {"nansum.default", "logcumsumexp.default", "trace.default", "median.default",
          "nanmedian.default"}) t.add(op, vjp_via_decomposition);
}

}  // namespace stax
