// The ops of other families that complex arithmetic extends to complex64 / complex128
// (docs/complex.md), grouped by how their derivative rules carry over.
#pragma once

#include <functional>

#include "core/graph/graph.h"

namespace stax::complex_ops {

// Whether node `n` reads or makes a complex value: such a node takes its op's complex form.
inline bool touches_complex(const Node& n) {
  if (is_complex(n.dtype())) return true;
  for (const Node* a : n.input_nodes())
    if (is_complex(a->dtype())) return true;
  return false;
}

// conj(v) in a derivative rule's context (VjpContext, JvpContext); a real v is its own conjugate.
template <class Context>
Node* conj(Context& c, Node* v) {
  return is_complex(v->dtype()) ? c.call("conj_physical", {v}) : v;
}

// Holomorphic ops whose VJP rule, written for real values, is grad * f'(x) with f' built from the
// op's inputs and output: for complex values torch's rule is grad * conj(f'(z)), which is the real
// rule applied to conj(grad), conjugated (vjp.cpp).
inline constexpr const char* kHolomorphic[] = {
    "mul.Tensor", "div.Tensor", "exp.default", "log.default", "sqrt.default",
    "reciprocal.default", "pow.Tensor_Scalar", "mm.default", "bmm.default", "sin.default",
    "cos.default"};

// Ops linear in their complex inputs with real coefficients: the real rules hold unchanged.
inline constexpr const char* kLinear[] = {
    "add.Tensor", "add.Scalar", "sub.Tensor", "sub.Scalar", "rsub.Scalar", "mul.Scalar",
    "div.Scalar", "neg.default", "sum.default", "sum.dim_IntList", "mean.default", "mean.dim",
    "cat.default", "constant_pad_nd.default", "where.self", "where.ScalarSelf",
    "where.ScalarOther", "slice_scatter.default", "select_scatter.default",
    "slice_backward.default", "select_backward.default", "copy.default", "index.Tensor",
    "index_put.default", "index_select.default", "flip.default", "roll.default",
    "cumsum.default"};

// Ops with their own complex rules (vjp.cpp, jvp.cpp): the non-holomorphic ones; tanh, whose rule
// is tanh_backward, which conjugates for complex values as torch's does (g·conj(1 − y²));
// tanh_backward itself (no complex double backward yet: a clear error).
inline constexpr const char* kOwnRules[] = {"abs.default", "angle.default", "sgn.default",
                                            "tanh.default", "tanh_backward.default",
                                            "pow.Tensor_Tensor"};

// Products whose decomposition is built from ops that take complex values (mm, reshape,
// conj_physical, mul.Scalar, add.Tensor): on complex values their kernel, VJP and JVP go through
// it (vdot's complex decomposition conjugates self, decompositions.cpp). dot / vdot / mv are
// Composite already; addmm's real kernel and rules are its own, so complex nodes take the
// decomposition's (kernels_movement.cpp, vjp.cpp, jvp.cpp).
inline constexpr const char* kByDecomposition[] = {"dot.default", "vdot.default", "mv.default",
                                                   "addmm.default"};

// Ops without a derivative (predicates) or whose value does not depend on the input's values.
inline constexpr const char* kNoDerivative[] = {
    "eq.Tensor", "eq.Scalar", "ne.Tensor", "ne.Scalar", "new_zeros.default", "new_empty.default",
    "isnan.default"};

// linalg_vector_norm of a complex tensor: the norm of |z| (real), as torch (its result is the
// real dtype; `dtype`, when given, must be complex and converts z first). `arg(param)` gives the
// call's arguments (absent or None: the default). Inference and decomposition share it.
Node* vector_norm_of_complex(Graph& g, Node* z, const std::function<Arg(const char*)>& arg);

}  // namespace stax::complex_ops
