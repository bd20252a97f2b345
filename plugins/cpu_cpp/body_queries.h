// Questions the cpu_cpp printers ask of a loop body's index expressions (cpp_printer.cpp,
// streaming_store.cpp).
#pragma once

#include "stax/sdk/loop_body.hpp"

namespace stax::cpu {

// Whether expression e is affine (sums and products of constants and variables: no indirect
// value, floordiv, mod, min or max).
inline bool affine(const sdk::Expr& e) {
  switch (e.kind()) {
    case sdk::ExprKind::Const:
    case sdk::ExprKind::IterVar:
    case sdk::ExprKind::ReduceVar: return true;
    case sdk::ExprKind::Add:
    case sdk::ExprKind::Mul: return affine(e.lhs()) && affine(e.rhs());
    default: return false;
  }
}

// Whether some index of the body is indirect (read from a tensor).
inline bool has_indirect(const sdk::LoopBody& body) {
  for (size_t i = 0; i < body.num_exprs(); ++i)
    if (body.expr(static_cast<int32_t>(i)).kind() == sdk::ExprKind::Indirect) return true;
  return false;
}

}  // namespace stax::cpu
