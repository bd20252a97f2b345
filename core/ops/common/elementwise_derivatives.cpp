#include "core/ops/common/elementwise_derivatives.h"

namespace stax::derivatives {
namespace {

Node* first_input(const Node& n) { return n.input_nodes().back(); }

}  // namespace

Node* sq(const Emitter& e, Node* x) { return e.mul(x, x); }
Node* one_minus(const Emitter& e, Node* v) { return e.add(e.neg(v), Arg(1)); }
Node* where_zero(const Emitter& e, Node* x, double at_zero, Node* v) {
  return e.call("where.ScalarSelf", {e.call("eq.Scalar", {x, 0}), at_zero, v});
}
Node* safe(const Emitter& e, Node* x) {
  return e.call("where.ScalarSelf", {e.call("eq.Scalar", {x, 0}), 1.0, x});
}

VjpFn unary_vjp(Deriv d) {
  return [deriv = std::move(d)](VjpContext& c) {
    Node* x0 = first_input(*c.node());
    if (!c.needs(x0)) return;
    Node* x = c.cast(x0, c.out()->dtype());
    c.give(x0, c.cast(c.mul(c.grad(), deriv(c, *c.node(), x, c.out())), x0->dtype()));
  };
}

JvpFn unary_jvp(Deriv d) {
  return [deriv = std::move(d)](JvpContext& c) -> Node* {
    Node* x0 = first_input(*c.node());
    Node* tx = c.tangent(x0);
    if (!tx) return nullptr;
    DType dt = c.out()->dtype();
    return c.mul(c.cast(tx, dt), deriv(c, *c.node(), c.cast(x0, dt), c.out()));
  };
}

VjpFn binary_vjp(Partials p) {
  return [partials = std::move(p)](VjpContext& c) {
    Node* a0 = c.in("self");
    const Arg& other = c.arg("other");
    Node* b0 = other.is_node() ? other.node() : nullptr;
    bool na = c.needs(a0), nb = b0 && c.needs(b0);
    if (!na && !nb) return;
    DType dt = c.out()->dtype();
    Node* a = c.cast(a0, dt);
    Node* b = b0 ? c.cast(b0, dt) : c.call("full_like", {c.out(), other});
    auto [da, db] = partials(c, a, b, c.out());
    if (na && da) c.give(a0, c.cast(c.sum_to_shape(c.mul(c.grad(), da), a0->shape()), a0->dtype()));
    if (nb && db) c.give(b0, c.cast(c.sum_to_shape(c.mul(c.grad(), db), b0->shape()), b0->dtype()));
  };
}

JvpFn binary_jvp(Partials p) {
  return [partials = std::move(p)](JvpContext& c) -> Node* {
    Node* a0 = c.in("self");
    const Arg& other = c.arg("other");
    Node* b0 = other.is_node() ? other.node() : nullptr;
    Node* ta = c.tangent(a0);
    Node* tb = b0 ? c.tangent(b0) : nullptr;
    if (!ta && !tb) return nullptr;
    DType dt = c.out()->dtype();
    Node* a = c.cast(a0, dt);
    Node* b = b0 ? c.cast(b0, dt) : c.call("full_like", {c.out(), other});
    auto [da, db] = partials(c, a, b, c.out());
    Node* r = nullptr;
    if (ta && da) r = c.mul(c.cast(ta, dt), da);
    if (tb && db) {
      Node* v = c.mul(c.cast(tb, dt), db);
      r = r ? c.add(r, v) : v;
    }
    return r ? c.expand_to(r, c.out()->shape()) : c.zeros_like(c.out());
  };
}

}  // namespace stax::derivatives
