// Small helpers shared by the decomposition entries of the op families (core/ops/*/
// decompositions*.cpp).
#pragma once

#include "core/graph/graph.h"
#include "core/graph/op_registry.h"

namespace stax::decomp {

inline bool is_half_like(DType t) { return t == DType::Float16 || t == DType::BFloat16; }

// The argument bound to `param`, or None when the op's schema has no such parameter.
inline Arg opt_arg(const Node& n, const char* param) {
  if (n.op()->schema.index_of(param) < 0) return Arg();
  return n.arg(param);
}

// x converted to dtype t (x itself when it has that dtype already).
inline Node* cast(Graph& g, Node* x, DType t) {
  return x->dtype() == t ? x : g.call("to.dtype", {x, t});
}

}  // namespace stax::decomp
