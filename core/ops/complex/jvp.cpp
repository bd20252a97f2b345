// JVP rules of complex arithmetic (docs/complex.md). Forward mode needs no convention: the tangent
// of f(z) is ∂f/∂z · ż + ∂f/∂z̄ · conj(ż). The product-rule JVPs of mul / div / pow / mm hold for
// complex values unchanged; the unary ones built from their (now conjugating) VJP rules get the
// conjugation undone; abs / angle / sgn have their own.
#include <functional>
#include <string>

#include "core/autodiff/jvp.h"
#include "core/graph/op_registry.h"
#include "core/ops/common/via_decomposition.h"
#include "core/ops/complex/complex_ops.h"
#include "core/ops/registration.h"
#include "core/support/error.h"

namespace stax {
namespace {

bool touches_complex(const Node* n) { return complex_ops::touches_complex(*n); }
using complex_ops::conj;

// A rule J ẋ = Jᵀ ẋ taken from a VJP rule gives conj(f'(z)) ż on complex values (the VJP
// conjugates, vjp.cpp): applied to conj(ż) and conjugated it gives f'(z) ż.
JvpFn unconjugated(JvpFn rule) {
  return [rule = std::move(rule)](JvpContext& c) -> Node* {
    if (!touches_complex(c.node())) return rule(c);
    JvpContext inner(c.graph(), c.node(), [&c](const Node* n) -> Node* {
      Node* t = c.tangent(n);
      return t ? conj(c, t) : nullptr;
    }, c.phase());
    Node* r = rule(inner);
    return r ? conj(c, r) : nullptr;
  };
}

std::function<JvpFn(JvpFn)> for_complex(JvpFn cx) {
  return [cx = std::move(cx)](JvpFn real) -> JvpFn {
    return [real = std::move(real), cx](JvpContext& c) {
      return touches_complex(c.node()) ? cx(c) : real(c);
    };
  };
}

Node* zero_at_origin(JvpContext& c, Node* z, Node* v) {
  return c.call("where.self", {c.call("eq.Scalar", {z, 0}), c.zeros_like(v), v});
}

// d|z| = Re(conj(sgn z) ż).
Node* abs_jvp(JvpContext& c) {
  Node* z = c.in("self");
  Node* t = c.tangent(z);
  if (!t) return nullptr;
  return c.call("real", {c.mul(t, conj(c, c.call("sgn", {z})))});
}

// d arg z = Im(ż / z) (0 at z = 0).
Node* angle_jvp(JvpContext& c) {
  Node* z = c.in("self");
  Node* t = c.tangent(z);
  if (!t) return nullptr;
  Node* v = c.call("imag", {c.div(t, z)});
  return c.call("where.self", {c.call("eq.Scalar", {z, 0}), c.zeros_like(v), v});
}

// d(z/|z|) = (ż - s² conj(ż)) / (2|z|) (0 at z = 0).
Node* sgn_jvp(JvpContext& c) {
  Node* z = c.in("self");
  Node* t = c.tangent(z);
  if (!t) return nullptr;
  Node* s = c.out();
  Node* v = c.div(c.sub(t, c.mul(c.mul(s, s), conj(c, t))),
                  c.mul(c.call("abs", {z}), Arg(2.0)));
  return zero_at_origin(c, z, v);
}

// pow(a, b) of complex values: ȧ b a^(b-1) + ḃ y log a (the ḃ term 0 where a == 0 and b is real
// and >= 0, as the VJP).
Node* pow_jvp(JvpContext& c) {
  Node* a = c.in("self");
  Node* b = c.in("exponent");
  Node* ad = c.tangent(a);
  Node* bd = c.tangent(b);
  Node* r = nullptr;
  if (ad) r = c.mul(ad, c.mul(b, c.call("pow.Tensor_Tensor", {a, c.call("sub.Scalar", {b, 1})})));
  if (bd) {
    Node* v = c.mul(bd, c.mul(c.out(), c.call("log", {a})));
    Node* nonneg = is_complex(b->dtype())
                       ? c.call("logical_and", {c.call("eq.Scalar", {c.call("imag", {b}), 0}),
                                                c.call("ge.Scalar", {c.call("real", {b}), 0})})
                       : c.call("ge.Scalar", {b, 0});
    Node* mask = c.call("logical_and", {c.call("eq.Scalar", {a, 0}), nonneg});
    v = c.call("where.ScalarSelf", {mask, 0.0, v});
    r = r ? c.add(r, v) : v;
  }
  return r;
}

void extend(JvpTable& t, const char* op, const std::function<JvpFn(JvpFn)>& wrap) {
  t.extend(op, wrap, [op = std::string(op)](JvpContext& c) -> Node* {
    throw Error("autodiff", "%" + c.node()->name(), "no forward-mode (JVP) rule for op " + op);
  });
}

}  // namespace

void register_complex_jvps(JvpTable& t) {
  for (const char* op : {"exp.default", "log.default", "sqrt.default", "sin.default",
                         "cos.default", "tanh.default", "reciprocal.default"})
    extend(t, op, unconjugated);
  extend(t, "abs.default", for_complex(abs_jvp));
  extend(t, "angle.default", for_complex(angle_jvp));
  extend(t, "sgn.default", for_complex(sgn_jvp));
  extend(t, "linalg_vector_norm.default", for_complex(jvp_via_decomposition));
  extend(t, "pow.Tensor_Tensor", for_complex(pow_jvp));
}

}  // namespace stax
