// VJP and JVP rules of the special functions (erfinv, digamma, polygamma, the Bessel-type i0 /
// i0e / i1 / i1e, ndtri, log_ndtr, entr, erfcx): torch's derivative formulas, written once as
// dy/dx and used by both modes (core/ops/common/elementwise_derivatives.h). The special functions
// torch gives no derivative (Airy, scaled K, spherical J0, polynomials) are not differentiable.
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
      {"erfinv.default",
       [](const Emitter& e, const Node&, Node*, Node* y) {
         return e.mul(e.call("exp", {sq(e, y)}), Arg(std::sqrt(kPi) / 2));
       }},
      {"digamma.default",
       [](const Emitter& e, const Node&, Node* x, Node*) {
         return e.call("polygamma", {Arg(1), x});
       }},
      {"polygamma.default",
       [](const Emitter& e, const Node& n, Node* x, Node*) {
         return e.call("polygamma", {Arg(n.arg("n").to_int() + 1), x});
       }},
      {"i0.default",
       [](const Emitter& e, const Node&, Node* x, Node*) { return e.call("special_i1", {x}); }},
      {"special_i0e.default",
       [](const Emitter& e, const Node&, Node* x, Node* y) {
         return e.sub(e.call("special_i1e", {x}), e.mul(e.call("sign", {x}), y));
       }},
      {"special_i1.default",
       [](const Emitter& e, const Node&, Node* x, Node* y) {
         Node* v = e.sub(e.call("i0", {x}), e.div(y, safe(e, x)));
         return where_zero(e, x, 0.5, v);
       }},
      {"special_i1e.default",
       [](const Emitter& e, const Node&, Node* x, Node* y) {
         Node* s = e.add(e.call("sign", {x}), e.call("reciprocal", {safe(e, x)}));
         Node* v = e.sub(e.call("special_i0e", {x}), e.mul(y, s));
         return where_zero(e, x, 0.5, v);
       }},
      // The Bessel functions torch 2.x differentiates (J, Y, I, K of orders 0 and 1):
      // J0' = -J1, Y0' = -Y1, I0' = I1, K0' = -K1; J1' = J0 - J1/x, Y1' = Y0 - Y1/x,
      // I1' = I0 - I1/x, K1' = -K0 - K1/x (at x = 0 torch's values: 0.5, 0.5, inf, -inf).
      {"special_bessel_j0.default",
       [](const Emitter& e, const Node&, Node* x, Node*) {
         return e.neg(e.call("special_bessel_j1", {x}));
       }},
      {"special_bessel_y0.default",
       [](const Emitter& e, const Node&, Node* x, Node*) {
         return e.neg(e.call("special_bessel_y1", {x}));
       }},
      {"special_modified_bessel_i0.default",
       [](const Emitter& e, const Node&, Node* x, Node*) {
         return e.call("special_modified_bessel_i1", {x});
       }},
      {"special_modified_bessel_k0.default",
       [](const Emitter& e, const Node&, Node* x, Node*) {
         return e.neg(e.call("special_modified_bessel_k1", {x}));
       }},
      {"special_bessel_j1.default",
       [](const Emitter& e, const Node&, Node* x, Node* y) {
         Node* v = e.sub(e.call("special_bessel_j0", {x}), e.div(y, safe(e, x)));
         return where_zero(e, x, 0.5, v);
       }},
      {"special_bessel_y1.default",
       [](const Emitter& e, const Node&, Node* x, Node* y) {
         Node* v = e.sub(e.call("special_bessel_y0", {x}), e.div(y, safe(e, x)));
         return where_zero(e, x, INFINITY, v);
       }},
      {"special_modified_bessel_i1.default",
       [](const Emitter& e, const Node&, Node* x, Node* y) {
         Node* v = e.sub(e.call("special_modified_bessel_i0", {x}), e.div(y, safe(e, x)));
         return where_zero(e, x, 0.5, v);
       }},
      {"special_modified_bessel_k1.default",
       [](const Emitter& e, const Node&, Node* x, Node* y) {
         Node* v = e.neg(e.add(e.call("special_modified_bessel_k0", {x}), e.div(y, safe(e, x))));
         return where_zero(e, x, -INFINITY, v);
       }},
      {"special_ndtri.default",
       [](const Emitter& e, const Node&, Node*, Node* y) {
         return e.mul(e.call("exp", {e.mul(sq(e, y), Arg(0.5))}), Arg(std::sqrt(2 * kPi)));
       }},
      {"special_log_ndtr.default",
       [](const Emitter& e, const Node&, Node* x, Node* y) {
         Node* a = e.neg(e.add(y, e.mul(sq(e, x), Arg(0.5))));
         return e.mul(e.call("exp", {a}), Arg(1 / std::sqrt(2 * kPi)));
       }},
      // torch: -(1 + log x) everywhere (NaN for x < 0, inf at 0), not the where-branches'
      {"special_entr.default",
       [](const Emitter& e, const Node&, Node* x, Node*) {
         return e.neg(e.add(e.call("log", {x}), Arg(1)));
       }},
      {"special_erfcx.default",
       [](const Emitter& e, const Node&, Node* x, Node* y) {
         return e.add(e.mul(e.mul(x, y), Arg(2.0)), Arg(-kTwoOverSqrtPi));
       }},
  };
  return rules;
}

}  // namespace

void register_special_derivative_vjps(VjpTable& t) {
  for (const auto& [op, d] : unary_rules()) t.add(op, unary_vjp(d));
}

void register_special_derivative_jvps(JvpTable& t) {
  for (const auto& [op, d] : unary_rules()) t.add(op, unary_jvp(d));
}

}  // namespace stax
