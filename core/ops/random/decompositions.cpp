// Decompositions of dropout and bernoulli.p into rand_like and a comparison (seed §4.8).
#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/graph/decompositions.h"
#include "core/ops/common/decomposition_helpers.h"
#include "core/ops/registration.h"

namespace stax {
namespace {

using decomp::cast;

Node* dropout_decomp(Graph& g, const Node& n) {
  Node* x = n.input(0);
  double p = n.arg("p").to_double();
  if (!n.arg("train").to_bool() || p == 0) return g.call("clone", {x});
  if (p == 1) return g.call("zeros_like", {x});
  Node* keep = g.call("gt.Scalar", {g.call("rand_like", {x}), p});
  return g.call("mul.Scalar", {g.call("mul.Tensor", {keep, x}), 1.0 / (1.0 - p)});
}

Node* bernoulli_decomp(Graph& g, const Node& n) {
  Node* x = n.input(0);
  Node* u = is_floating(x->dtype())
                ? g.call("rand_like", {x})
                : g.call("rand", {Arg(x->shape())}, {{"dtype", Arg(DType::Float32)}});
  return cast(g, g.call("lt.Scalar", {u, n.arg("p")}), x->dtype());
}

}  // namespace

void register_random_decompositions(DecompositionTable& t) {
  t.add("dropout.default", dropout_decomp);
  t.add("bernoulli.p", bernoulli_decomp);
}

}  // namespace stax
