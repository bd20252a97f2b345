// Decompositions of the pointwise composites silu and gelu (seed §4.8).
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

// Half types compute in float32 and round once at the end, as the silu kernel does (x * sigmoid(x)
// on float16 / bfloat16 values would round sigmoid's result to the half type first).
Node* silu_decomp(Graph& g, const Node& n) {
  Node* x = n.input(0);
  DType in = x->dtype();
  bool up = is_half_like(in);
  if (up) x = cast(g, x, DType::Float32);
  Node* y = g.call("mul.Tensor", {x, g.call("sigmoid", {x})});
  return up ? cast(g, y, in) : y;
}

Node* gelu_decomp(Graph& g, const Node& n) {
  Node* x = n.input(0);
  Node* half_x = g.call("mul.Scalar", {x, 0.5});
  if (n.arg("approximate").str() == "tanh") {
    // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    Node* x3 = g.call("mul.Tensor", {g.call("mul.Tensor", {x, x}), x});
    Node* inner = g.call("add.Tensor", {x, g.call("mul.Scalar", {x3, 0.044715})});
    Node* t = g.call("tanh", {g.call("mul.Scalar", {inner, std::sqrt(2.0 / std::numbers::pi)})});
    return g.call("mul.Tensor", {half_x, g.call("add.Scalar", {t, 1})});
  }
  // 0.5 x (1 + erf(x / sqrt 2))
  Node* e = g.call("erf", {g.call("mul.Scalar", {x, 1.0 / std::numbers::sqrt2})});
  return g.call("mul.Tensor", {half_x, g.call("add.Scalar", {e, 1})});
}

}  // namespace

void register_pointwise_decompositions(DecompositionTable& t) {
  t.add("silu.default", silu_decomp);
  t.add("gelu.default", gelu_decomp);
}

}  // namespace stax
