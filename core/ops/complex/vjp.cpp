// VJP rules of complex arithmetic, by torch's convention (docs/complex.md): the gradient of a real
// loss L with respect to z = a + ib is z̄ = ∂L/∂a + i ∂L/∂b, so for f(z) with upstream gradient g
//   z̄ = g · conj(∂f/∂z) + conj(g) · ∂f/∂z̄
// (autograd's "conjugate Wirtinger" rule). For holomorphic f (∂f/∂z̄ = 0) that is the real rule's
// g · f'(z) with both g and the result conjugated, which `conjugated` builds from the op's own
// rule; ops linear with real coefficients keep their rules; abs / angle / sgn have their own. A
// real input of a complex op receives the real part (the joint-graph builder's dtype conversion).
#include <functional>
#include <string>
#include <vector>

#include "core/autodiff/vjp.h"
#include "core/graph/op_registry.h"
#include "core/ops/complex/complex_ops.h"
#include "core/ops/registration.h"
#include "core/support/error.h"

namespace stax {
namespace {

bool touches_complex(const Node* n) { return complex_ops::touches_complex(*n); }
using complex_ops::conj;

// The op's real rule applied to conj(g), its contributions conjugated (holomorphic ops).
VjpFn conjugated(VjpFn real) {
  return [real = std::move(real)](VjpContext& c) {
    if (!touches_complex(c.node())) return real(c);
    VjpContext inner(c.graph(), c.node(), conj(c, c.grad()),
                     [&c](const Node* n) { return c.needs(n); }, c.phase());
    real(inner);
    for (const auto& [n, g] : inner.contributions()) c.give(n, conj(c, g));
  };
}

// `cx` for nodes touching complex values, the op's own rule otherwise.
std::function<VjpFn(VjpFn)> for_complex(VjpFn cx) {
  return [cx = std::move(cx)](VjpFn real) -> VjpFn {
    return [real = std::move(real), cx](VjpContext& c) { touches_complex(c.node()) ? cx(c) : real(c); };
  };
}

// i·z as complex(-imag z, real z).
Node* times_i(VjpContext& c, Node* z) {
  return c.call("complex", {c.neg(c.call("imag", {z})), c.call("real", {z})});
}

// `v` where z != 0, else 0 (torch masks abs / angle / sgn gradients at 0).
Node* zero_at_origin(VjpContext& c, Node* z, Node* v) {
  return c.call("where.self", {c.call("eq.Scalar", {z, 0}), c.zeros_like(v), v});
}

// |z|: ∂|z|/∂z̄ = z / (2|z|) = ∂|z|/∂z conjugated, g real: z̄ = g · sgn(z).
void abs_vjp(VjpContext& c) {
  Node* z = c.in("self");
  if (c.needs(z)) c.give(z, c.mul(c.grad(), c.call("sgn", {z})));
}

// arg z = atan2(b, a): z̄ = g (-b + i a) / |z|² = g · i z / |z|² (0 at z = 0).
void angle_vjp(VjpContext& c) {
  Node* z = c.in("self");
  if (!c.needs(z)) return;
  Node* r = c.call("abs", {z});
  Node* v = c.mul(times_i(c, z), c.div(c.grad(), c.mul(r, r)));
  c.give(z, zero_at_origin(c, z, v));
}

// s = z/|z|: ∂s/∂z = 1/(2|z|), ∂s/∂z̄ = -s²/(2|z|), so z̄ = (g - s² conj(g)) / (2|z|).
void sgn_vjp(VjpContext& c) {
  Node* z = c.in("self");
  if (!c.needs(z)) return;
  Node* s = c.out();
  Node* g = c.grad();
  Node* num = c.sub(g, c.mul(c.mul(s, s), conj(c, g)));
  Node* v = c.div(num, c.mul(c.call("abs", {z}), Arg(2.0)));
  c.give(z, zero_at_origin(c, z, v));
}

// The Composite ops whose real rules go through their decompositions (written for real values):
// their rules on complex values, all linear.
void rsub_vjp(VjpContext& c) {
  double alpha = c.arg("alpha").is_absent() ? 1.0 : c.arg("alpha").to_double();
  if (c.needs("self")) c.give("self", c.mul(c.grad(), Arg(-alpha)));
}

void slice_scatter_vjp(VjpContext& c) {
  Node* g = c.grad();
  Node* src = c.in("src");
  const Arg& dim = c.arg("dim");
  if (c.needs("self"))
    c.give("self", c.call("slice_scatter", {g, c.zeros_like(src), dim, c.arg("start"),
                                            c.arg("end"), c.arg("step")}));
  if (c.needs(src))
    c.give(src, c.call("slice.Tensor", {g, dim, c.arg("start"), c.arg("end"), c.arg("step")}));
}

void select_scatter_vjp(VjpContext& c) {
  Node* g = c.grad();
  Node* src = c.in("src");
  if (c.needs("self"))
    c.give("self", c.call("select_scatter", {g, c.zeros_like(src), c.arg("dim"), c.arg("index")}));
  if (c.needs(src)) c.give(src, c.call("select.int", {g, c.arg("dim"), c.arg("index")}));
}

void constant_pad_vjp(VjpContext& c) {
  if (!c.needs("self")) return;
  std::vector<int64_t> pad = c.arg("pad").to_int_list();
  for (int64_t& p : pad) p = -p;
  c.give("self", c.call("constant_pad_nd", {c.grad(), pad, 0.0}));
}

void copy_vjp(VjpContext& c) {
  Node* src = c.in("src");
  if (c.needs(src)) c.give(src, c.sum_to_shape(c.grad(), src->shape()));
}

// linalg_vector_norm of complex values, the norm of a = |z| (decompositions.cpp): the real rule
// (with its subgradients: 0 at a zero norm, shared maxima for ord inf) gives ā on a real norm
// node over a, and abs's complex rule z̄ = ā · sgn(z).
VjpFn vector_norm_of_complex(VjpFn real) {
  return [real](VjpContext& c) {
    if (!touches_complex(c.node())) return real(c);
    if (!c.needs("self")) return;
    Node* z = c.in("self");
    const Arg dtype = c.arg("dtype");
    Node* zc = dtype.is_dtype() ? c.call("_to_copy", {z}, {{"dtype", dtype}}) : z;
    Node* a = c.call("abs", {zc});
    Kwargs kwargs;
    for (const char* p : {"ord", "dim", "keepdim"}) {
      Arg v = c.arg(p);
      if (!v.is_absent() && !v.is_none()) kwargs.emplace_back(p, v);
    }
    Node* norm = c.call("linalg_vector_norm", {a}, std::move(kwargs));
    VjpContext inner(c.graph(), norm, c.grad(), [a](const Node* n) { return n == a; },
                     c.phase());
    real(inner);
    Node* ga = nullptr;
    for (const auto& [n, g] : inner.contributions())
      if (n == a) ga = ga ? c.add(ga, g) : g;
    if (!ga) return;
    Node* gz = c.mul(ga, c.call("sgn", {zc}));
    if (gz->dtype() != z->dtype()) gz = c.call("_to_copy", {gz}, {{"dtype", z->dtype()}});
    c.give("self", gz);
  };
}

// Where torch zeroes the exponent's derivative of pow: a == 0 and b real with b >= 0 (for a complex
// b: imag b == 0 and real b >= 0).
template <class Context>
Node* pow_zero_mask(Context& c, Node* a, Node* b) {
  Node* nonneg = is_complex(b->dtype())
                     ? c.call("logical_and", {c.call("eq.Scalar", {c.call("imag", {b}), 0}),
                                              c.call("ge.Scalar", {c.call("real", {b}), 0})})
                     : c.call("ge.Scalar", {b, 0});
  return c.call("logical_and", {c.call("eq.Scalar", {a, 0}), nonneg});
}

// pow(a, b) of complex values (holomorphic in both): ā = g · conj(b a^(b-1)),
// b̄ = g · conj(y log a), 0 where pow_zero_mask (torch's pow_backward_self / _exponent).
void pow_vjp(VjpContext& c) {
  Node* g = c.grad();
  Node* a = c.in("self");
  Node* b = c.in("exponent");
  if (c.needs(a)) {
    Node* d = c.mul(b, c.call("pow.Tensor_Tensor", {a, c.call("sub.Scalar", {b, 1})}));
    c.give(a, c.sum_to_shape(c.mul(g, conj(c, d)), a->shape()));
  }
  if (c.needs(b)) {
    Node* v = c.mul(g, conj(c, c.mul(c.out(), c.call("log", {a}))));
    v = c.call("where.ScalarSelf", {pow_zero_mask(c, a, b), 0.0, v});
    c.give(b, c.sum_to_shape(v, b->shape()));
  }
}

// Extends op's rule with `wrap`; an op without one gets a rule for complex values only.
void extend(VjpTable& t, const char* op, const std::function<VjpFn(VjpFn)>& wrap) {
  t.extend(op, wrap, [op = std::string(op)](VjpContext& c) {
    throw Error("autodiff", "%" + c.node()->name(), "no derivative (VJP) rule for op " + op);
  });
}

}  // namespace

void register_complex_vjps(VjpTable& t) {
  for (const char* op : complex_ops::kHolomorphic) extend(t, op, conjugated);
  extend(t, "abs.default", for_complex(abs_vjp));
  extend(t, "angle.default", for_complex(angle_vjp));
  extend(t, "sgn.default", for_complex(sgn_vjp));
  extend(t, "rsub.Scalar", for_complex(rsub_vjp));
  extend(t, "slice_scatter.default", for_complex(slice_scatter_vjp));
  extend(t, "select_scatter.default", for_complex(select_scatter_vjp));
  extend(t, "constant_pad_nd.default", for_complex(constant_pad_vjp));
  extend(t, "copy.default", for_complex(copy_vjp));
  // addmm is holomorphic in mat1 / mat2 and linear in self with real beta / alpha: its real rule
  // on conj(g), conjugated (g·conj(mat2)ᵀ ...).
  extend(t, "addmm.default", conjugated);
  extend(t, "pow.Tensor_Tensor", for_complex(pow_vjp));
  extend(t, "linalg_vector_norm.default", vector_norm_of_complex);
  // tanh's real rule (tanh_backward, conjugating for complex values) holds unchanged.
  extend(t, "tanh_backward.default", for_complex([](VjpContext& c) {
           throw Error("autodiff", "%" + c.node()->name(),
                       "no derivative rule for tanh_backward on complex values (a second "
                       "derivative of complex tanh)");
         }));
}

}  // namespace stax
