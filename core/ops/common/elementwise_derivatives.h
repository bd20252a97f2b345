// Derivative formulas of elementwise math ops written once, as torch's derivatives.yaml does,
// and used by both modes: a unary op's dy/dx gives x̄ = ḡ dy/dx and ẏ = ẋ dy/dx; a binary op's
// partials (dy/da, dy/db) likewise. The op families' tables (pointwise/math_derivatives.cpp,
// special/derivatives.cpp) pair op names with formulas; these helpers turn a formula into rules.
#pragma once

#include <cmath>
#include <functional>
#include <utility>

#include "core/autodiff/jvp.h"
#include "core/autodiff/vjp.h"

namespace stax::derivatives {

// dy/dx of a unary op at input x (already in the output's dtype) and output y.
using Deriv = std::function<Node*(const Emitter& e, const Node& n, Node* x, Node* y)>;
// Partial derivatives (d/da, d/db) of a binary op; null: no contribution.
using Partials = std::function<std::pair<Node*, Node*>(const Emitter& e, Node* a, Node* b,
                                                       Node* y)>;

inline constexpr double kPi = 3.14159265358979323846;
inline const double kTwoOverSqrtPi = 2 / std::sqrt(kPi);

Node* sq(const Emitter& e, Node* x);                                  // x * x
Node* one_minus(const Emitter& e, Node* v);                           // 1 - v
Node* where_zero(const Emitter& e, Node* x, double at_zero, Node* v);  // at_zero where x == 0
Node* safe(const Emitter& e, Node* x);                                // x with 1 where x == 0

// The rules of a unary op with derivative `d`, and of a binary op with partials `p`.
VjpFn unary_vjp(Deriv d);
JvpFn unary_jvp(Deriv d);
VjpFn binary_vjp(Partials p);
JvpFn binary_jvp(Partials p);

}  // namespace stax::derivatives
