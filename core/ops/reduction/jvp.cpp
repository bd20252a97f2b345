// Jvp of the reduction ops.
#include "core/autodiff/joint_graph.h"
#include "core/autodiff/jvp.h"
#include <algorithm>
#include <cmath>
#include <functional>
#include <unordered_map>

#include "core/autodiff/vjp.h"
#include "core/graph/decompositions.h"
#include "core/graph/op_registry.h"
#include "core/ops/common/derivative_formulas.h"
#include "core/ops/common/linear_jvp.h"
#include "core/ops/common/via_decomposition.h"
#include "core/ops/reduction/derivatives.h"
#include "core/ops/registration.h"
#include "core/support/error.h"

namespace stax {
namespace {

using namespace reduction_derivatives;  // NOLINT
using namespace linear_jvp;  // NOLINT

// Σ over the reduced dims of partials * ẋ, shaped like the output.
Node* reduce_weighted(JvpContext& c, Node* partials) {
  Node* v = c.mul(partials, c.tangent("self"));
  std::vector<int64_t> dims = dims_of(c);
  if (dims.empty()) return v;  // a 0-d input: nothing is reduced
  return c.call("sum.dim_IntList", {v, Arg(dims), keepdim_of(c)});
}

Node* cumsum_jvp(JvpContext& c) {
  Node* t = c.tangent("self");
  if (!t) return nullptr;
  return c.call("cumsum", {t, c.arg("dim")}, {{"dtype", c.arg("dtype")}});
}

Node* cumprod_jvp(JvpContext& c) {
  Node* x = c.in("self");
  Node* tx = c.tangent(x);
  if (!tx) return nullptr;
  int64_t rank = x->meta().dim();
  if (rank == 0 || shape_numel(x->shape()) == 0) return c.cast(tx, c.out()->dtype());
  CumprodTerms t = cumprod_terms(c, *c.node());
  Node* tt = c.call("transpose.int", {c.cast(tx, x->dtype()), t.d, rank - 1});
  Node* p = c.mul(t.c, c.call("unsqueeze", {tt, rank}));
  Node* m = c.call("where.ScalarOther", {t.upper, p, 0.0});
  Node* s = c.call("sum.dim_IntList", {m, std::vector<int64_t>{rank - 1}});
  return c.cast(c.call("transpose.int", {s, t.d, rank - 1}), c.out()->dtype());
}

Node* std_jvp(JvpContext& c) {
  Node* x = c.in("self");
  Node* t = c.tangent(x);
  if (!t) return nullptr;
  const Node& n = *c.node();
  Reduced r = reduced_of(n);
  Node* xc = c.sub(x, c.call("mean.dim", {x, r.dims, true}));
  Node* vt = c.call("sum.dim_IntList", {c.mul(t, xc), r.dims, r.keepdim});
  vt = c.mul(vt, Arg(2.0 / std_denominator(n, r)));
  Node* y = c.out();
  return zero_where_zero(c, y, c.div(vt, c.mul(y, Arg(2.0))));
}

Node* norm_jvp(JvpContext& c) {
  double p = norm_p(*c.node());
  if (!plain_p(p)) return jvp_via_decomposition(c);
  Node* x0 = c.in("self");
  Node* t = c.tangent(x0);
  if (!t) return nullptr;
  Node* y = c.out();
  Node* x = c.cast(x0, y->dtype());
  Reduced r = reduced_of(*c.node());
  Node* s = c.call("sum.dim_IntList",
                   {c.mul(norm_scaled(c, x, p), c.cast(t, y->dtype())), r.dims, r.keepdim});
  return zero_where_zero(c, y, c.div(s, norm_power(c, y, p)));
}

}  // namespace

void register_reduction_jvps(JvpTable& t) {
  for (const char* op : {"sum.default", "sum.dim_IntList", "mean.default", "mean.dim"})
    t.add(op, linear());
  {
    auto extremum = [](JvpContext& c) {
      return reduce_weighted(
          c, formulas::extremum_weights(c, c.in("self"), c.out(), dims_of(c), keepdim_of(c)));
    };
    t.add("prod.default", [](JvpContext& c) {
      return reduce_weighted(c, formulas::prod_partials(c, c.in("self"), std::nullopt));
    });

    t.add("prod.dim_int", [](JvpContext& c) {
      return reduce_weighted(c, formulas::prod_partials(c, c.in("self"), c.arg("dim").to_int()));
    });

    t.add("amax.default", extremum);

    t.add("amin.default", extremum);

    t.add("var.correction", [](JvpContext& c) {
      const Arg& corr = c.arg("correction");
      double correction = corr.is_absent() ? 1.0 : corr.to_double();
      return reduce_weighted(c, formulas::var_partials(c, c.in("self"), dims_of(c), correction));
    });
  }
  for (const char* op :
         {"var.dim", "var.default", "logsumexp.default", "max.default", "min.default"}) t.add(op, jvp_via_decomposition);

  for (const char* op : {"std.correction", "std.dim", "std.default"}) t.add(op, std_jvp);

  for (const char* op : {"norm.ScalarOpt_dim", "norm.Scalar", "linalg_vector_norm.default"})
    t.add(op, norm_jvp);

  t.add("cumsum.default", cumsum_jvp);

  t.add("cumprod.default", cumprod_jvp);
  for (const char* op :
         {"nansum.default", "logcumsumexp.default", "trace.default", "median.default",
          "nanmedian.default"}) t.add(op, jvp_via_decomposition);
}

}  // namespace stax
