// Derivative pieces shared by the indexing ops' VJP and JVP rules (vjp.cpp, jvp.cpp):
// scatter_reduce's terms.
#pragma once

#include <string>

#include "core/autodiff/emitter.h"
#include "core/graph/op_registry.h"
#include "core/support/error.h"

namespace stax::indexing_derivatives {

// scatter_reduce.two (torch's formulas). With T = scatter_reduce(0, index, 1, "sum") the number of
// src elements scattered to each position:
//   sum    self: ḡ (0 where T > 0 without include_self); src: gather(ḡ)
//   mean   N = T + include_self (1 where N = 0): self ḡ / N (as sum without include_self);
//          src gather(ḡ / N)
//   amax / amin   the elements equal to the result share ḡ evenly (self counts when included,
//          or when nothing was scattered to it)
//   prod   not implemented (a clear error).
struct ScatterTerms {
  Node* touched;  // T > 0 (bool)
  Node* count;    // N for mean / the number of elements equal to the result for amax / amin
  Node* self_part = nullptr;  // amax / amin: self contributes (bool)
  Node* src_eq = nullptr;     // amax / amin: src element equals its target's result (bool)
};

inline ScatterTerms scatter_terms(const Emitter& e, const Node& n) {
  Node* self = n.arg("self").node();
  Node* src = n.arg("src").node();
  Node* index = n.arg("index").node();
  const Arg& dim = n.arg("dim");
  const std::string& red = n.arg("reduce").str();
  bool inc = n.arg("include_self").to_bool();
  if (src->shape() != index->shape())
    throw Error("autodiff", "%" + n.name(),
                "the gradient of scatter_reduce needs src of the index's shape " +
                    shape_str(index->shape()) + ", got " + shape_str(src->shape()));
  auto scatter_sum = [&](Node* base, Node* values) {
    return e.call("scatter_reduce.two", {base, dim, index, values, "sum"});
  };
  ScatterTerms t;
  Node* ones = e.call("ones_like", {src});
  Node* tcount = scatter_sum(e.zeros_like(self), ones);
  t.touched = e.call("gt.Scalar", {tcount, 0});
  if (red == "mean") {
    Node* nc = inc ? e.add(tcount, Arg(1)) : tcount;
    t.count = e.call("where.ScalarSelf", {e.call("eq.Scalar", {nc, 0}), 1.0, nc});
  } else if (red == "amax" || red == "amin") {
    Node* out = const_cast<Node*>(&n);
    t.self_part = inc ? e.call("eq.Tensor", {self, out}) : e.call("logical_not", {t.touched});
    t.src_eq = e.call("eq.Tensor", {src, e.call("gather", {out, dim, index})});
    t.count = scatter_sum(e.cast(t.self_part, self->dtype()), e.cast(t.src_eq, self->dtype()));
  } else if (red != "sum") {
    throw Error("autodiff", "%" + n.name(),
                "the derivative of scatter_reduce is implemented for reduce='sum', 'mean', "
                "'amax' and 'amin', got '" + red + "'");
  }
  return t;
}

}  // namespace stax::indexing_derivatives
