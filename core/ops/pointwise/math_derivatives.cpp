// VJP and JVP rules of the pointwise math ops (asin ... lgamma, atan2, hypot, copysign,
// nextafter): torch's
// derivative formulas (derivatives.yaml), written once as dy/dx (dy/da, dy/db) and used by both
// modes (core/ops/common/elementwise_derivatives.h).
#include <cmath>
#include <utility>
#include <vector>

#include "core/ops/common/elementwise_derivatives.h"
#include "core/ops/registration.h"

namespace stax {
namespace {

using namespace derivatives;  // NOLINT: the formulas' vocabulary (sq, one_minus, where_zero ...)

const std::vector<std::pair<const char*, Deriv>>& unary_rules() {
  static const std::vector<std::pair<const char*, Deriv>> rules = {
      {"asin.default",
       [](const Emitter& e, const Node&, Node* x, Node*) {
         return e.call("rsqrt", {one_minus(e, sq(e, x))});
       }},
      {"acos.default",
       [](const Emitter& e, const Node&, Node* x, Node*) {
         return e.neg(e.call("rsqrt", {one_minus(e, sq(e, x))}));
       }},
      {"atan.default",
       [](const Emitter& e, const Node&, Node* x, Node*) {
         return e.call("reciprocal", {e.add(sq(e, x), Arg(1))});
       }},
      {"sinh.default",
       [](const Emitter& e, const Node&, Node* x, Node*) { return e.call("cosh", {x}); }},
      {"cosh.default",
       [](const Emitter& e, const Node&, Node* x, Node*) { return e.call("sinh", {x}); }},
      {"asinh.default",
       [](const Emitter& e, const Node&, Node* x, Node*) {
         return e.call("rsqrt", {e.add(sq(e, x), Arg(1))});
       }},
      {"acosh.default",
       [](const Emitter& e, const Node&, Node* x, Node*) {
         return e.call("rsqrt", {e.add(sq(e, x), Arg(-1))});
       }},
      {"atanh.default",
       [](const Emitter& e, const Node&, Node* x, Node*) {
         return e.call("reciprocal", {one_minus(e, sq(e, x))});
       }},
      {"erfc.default",
       [](const Emitter& e, const Node&, Node* x, Node*) {
         return e.mul(e.call("exp", {e.neg(sq(e, x))}), Arg(-kTwoOverSqrtPi));
       }},
      {"lgamma.default",
       [](const Emitter& e, const Node&, Node* x, Node*) { return e.call("digamma", {x}); }},
  };
  return rules;
}

const std::vector<std::pair<const char*, Partials>>& binary_rules() {
  static const std::vector<std::pair<const char*, Partials>> rules = {
      {"atan2.default",
       [](const Emitter& e, Node* a, Node* b, Node*) {
         Node* r = e.add(sq(e, a), sq(e, b));
         return std::make_pair(e.div(b, r), e.neg(e.div(a, r)));
       }},
      {"hypot.default",
       [](const Emitter& e, Node* a, Node* b, Node* y) {
         return std::make_pair(e.div(a, y), e.div(b, y));
       }},
      {"copysign.Tensor",
       [](const Emitter& e, Node* a, Node*, Node* y) {
         return std::make_pair(where_zero(e, a, 0.0, e.div(y, safe(e, a))),
                               static_cast<Node*>(nullptr));
       }},
      // torch 2.x: the step towards `other` is treated as the identity in self, constant in other
      {"nextafter.default",
       [](const Emitter& e, Node*, Node*, Node* y) {
         return std::make_pair(e.call("ones_like", {y}), static_cast<Node*>(nullptr));
       }},
      {"copysign.Scalar",
       [](const Emitter& e, Node* a, Node*, Node* y) {
         return std::make_pair(where_zero(e, a, 0.0, e.div(y, safe(e, a))),
                               static_cast<Node*>(nullptr));
       }},
  };
  return rules;
}

}  // namespace

void register_pointwise_math_vjps(VjpTable& t) {
  for (const auto& [op, d] : unary_rules()) t.add(op, unary_vjp(d));
  for (const auto& [op, p] : binary_rules()) t.add(op, binary_vjp(p));
}

void register_pointwise_math_jvps(JvpTable& t) {
  for (const auto& [op, d] : unary_rules()) t.add(op, unary_jvp(d));
  for (const auto& [op, p] : binary_rules()) t.add(op, binary_jvp(p));
}

}  // namespace stax
