// x * log(y) (or log1p) with torch's special cases, shared by xlogy and special_xlog1py:
// y NaN ? NaN : x == 0 ? 0 : x * log(y), the inputs cast to the node's dtype first.
#pragma once

#include "core/graph/graph.h"

namespace stax::xlogy_formula {

inline Node* xlogy(Graph& g, const Node& n, const char* log_op) {
  auto in = [&](const char* p) {
    Node* v = n.arg(p).node();
    return v->dtype() == n.dtype() ? v : g.call("to.dtype", {v, n.dtype()});
  };
  Node* x = in("self");
  Node* y = in("other");
  Node* v = g.call("mul.Tensor", {x, g.call(log_op, {y})});
  v = g.call("where.ScalarSelf", {g.call("eq.Scalar", {x, 0}), 0.0, v});
  return g.call("where.self", {g.call("isnan", {y}), y, v});
}

}  // namespace stax::xlogy_formula
