// Decompositions of mean and var into sums (seed §4.8).
#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/graph/decompositions.h"
#include "core/ops/common/decomposition_helpers.h"
#include "core/ops/registration.h"

namespace stax {
namespace {

using Ints = std::vector<int64_t>;
using decomp::cast;
using decomp::is_half_like;
using decomp::opt_arg;

Node* mean_decomp(Graph& g, const Node& n) {
  Node* x = n.input(0);
  const Arg& dt = opt_arg(n, "dtype");
  if (dt.is_dtype()) x = cast(g, x, dt.dtype());
  Arg dim = opt_arg(n, "dim");
  Ints dims = reduced_dims(*x, dim);
  Node* s = n.op()->schema.index_of("dim") >= 0
                ? g.call("sum.dim_IntList", {x, dim, n.arg("keepdim").to_bool()})
                : g.call("sum.default", {x});
  return g.call("div.Scalar", {s, reduced_count(*x, dims)});
}

Node* var_decomp(Graph& g, const Node& n) {
  Node* x = n.input(0);
  Arg dim = opt_arg(n, "dim");
  Ints dims = reduced_dims(*x, dim);
  double correction = 1;
  if (Arg c = opt_arg(n, "correction"); !c.is_absent()) correction = c.to_double();
  if (Arg u = opt_arg(n, "unbiased"); !u.is_absent()) correction = u.to_bool() ? 1 : 0;
  Arg keepdim = opt_arg(n, "keepdim");
  Node* mean = g.call("mean.dim", {x, dims, true});
  Node* xc = g.call("sub.Tensor", {x, mean});
  Node* s = g.call("sum.dim_IntList", {g.call("mul.Tensor", {xc, xc}), dims,
                                       !keepdim.is_absent() && keepdim.to_bool()});
  double denom = std::max(0.0, static_cast<double>(reduced_count(*x, dims)) - correction);
  return g.call("div.Scalar", {s, denom});
}

}  // namespace

void register_reduction_decompositions(DecompositionTable& t) {
  t.add("mean.dim", mean_decomp);
  t.add("mean.default", mean_decomp);
  t.add("var.correction", var_decomp);
}

}  // namespace stax
