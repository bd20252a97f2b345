// Decomposition of addmm into mm and the scaled sum (seed §4.8).
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

Node* addmm_decomp(Graph& g, const Node& n) {
  Node* self = n.input(0);
  Node* p = g.call("mm", {n.input(1), n.input(2)});
  const Arg& alpha = n.arg("alpha");
  const Arg& beta = n.arg("beta");
  // addmm's kernel forms beta * self + alpha * p in the computation type: the same two roundings.
  bool alpha_one = alpha.is_int() && alpha.to_int() == 1;
  bool beta_one = beta.is_int() && beta.to_int() == 1;
  if (beta.to_double() == 0) return alpha_one ? p : g.call("mul.Scalar", {p, alpha});
  Node* ap = alpha_one ? p : g.call("mul.Scalar", {p, alpha});
  Node* bs = beta_one ? self : g.call("mul.Scalar", {self, beta});
  return cast(g, g.call("add.Tensor", {bs, ap}), n.dtype());
}

}  // namespace

void register_extern_decompositions(DecompositionTable& t) {
  t.add("addmm.default", addmm_decomp);
}

}  // namespace stax
