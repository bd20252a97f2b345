// Shared pieces of the complex interpreter kernels (core/ops/complex/kernels_*.cpp): torch's
// complex products and quotients (c10::complex's formulas), operands converted to the computation
// dtype, and the wrapping that sends a node touching complex values to its complex kernel while
// real nodes keep the kernel they had.
#pragma once

#include <array>
#include <cmath>
#include <complex>
#include <cstdint>
#include <string>
#include <utility>

#include "core/interpreter/interpreter.h"
#include "core/ops/common/kernel_utils.h"

namespace stax::complex_kernels {

template <class R>
using Cx = std::complex<R>;

// c10::complex's product (no C99 Annex G recovery of infinities, as torch's CPU kernels).
template <class R>
Cx<R> cmul(Cx<R> a, Cx<R> b) {
  return {a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real()};
}

// c10::complex's quotient (Smith's algorithm, as NumPy).
template <class R>
Cx<R> cdiv(Cx<R> x, Cx<R> y) {
  R a = x.real(), b = x.imag(), c = y.real(), d = y.imag();
  if (std::abs(c) >= std::abs(d)) {
    if (c == R(0) && d == R(0)) return {a / std::abs(c), b / std::abs(d)};
    R rat = d / c, scl = R(1) / (c + d * rat);
    return {(a + b * rat) * scl, (b - a * rat) * scl};
  }
  R rat = c / d, scl = R(1) / (d + c * rat);
  return {(a * rat + b) * scl, (b * rat - a) * scl};
}

// Whether the node reads or produces a complex value.
inline bool touches_complex(const KernelContext& c) {
  if (is_complex(c.out_meta().dtype)) return true;
  for (const Node* n : c.node().input_nodes())
    if (is_complex(n->meta().dtype)) return true;
  return false;
}

// t in dtype `cd` (a copy unless it already is).
inline Tensor converted(const Tensor& t, DType cd) { return t.dtype() == cd ? t : t.to(cd); }

// The tensor bound to `param`, or its number argument, in complex dtype cd.
inline Tensor operand(const KernelContext& c, const std::string& param, DType cd) {
  const Arg& a = c.arg(param);
  if (a.is_node()) return converted(c.value(a.node()), cd);
  if (!a.is_number()) c.fail("parameter '" + param + "' is not a number");
  return kernels::scalar_tensor(a, complex_to_real(cd)).to(cd);
}

// The complex computation dtype of a node: its result's if complex, else the promotion of its
// tensor inputs (abs, eq ... of complex values).
inline DType computation_dtype(const KernelContext& c) {
  DType out = c.out_meta().dtype;
  if (is_complex(out)) return out;
  DType t = DType::Complex64;
  for (const Node* n : c.node().input_nodes()) t = promote_types(t, n->meta().dtype);
  return t;
}

// out[i] = f(ins[0][i], ...) over out's elements, the inputs (of dtype Cx<R>) broadcast to out's
// sizes; f returns out's element type (Cx<R>, R or bool).
template <class R, size_t N, class F>
void cmap(const Tensor& out, const std::array<Tensor, N>& ins, F f) {
  std::array<Shape, N + 1> st;
  st[0] = out.strides();
  std::array<const Cx<R>*, N> p{};
  for (size_t k = 0; k < N; ++k) {
    st[k + 1] = kernels::broadcast_strides(ins[k], out.sizes());
    p[k] = ins[k].template data<Cx<R>>();
  }
  auto body = [&]<size_t... I>(std::index_sequence<I...>) {
    using Res = decltype(f(p[I][0]...));
    Res* o = out.template data<Res>();
    kernels::for_each_offset<N + 1>(out.sizes(), st, [&](const std::array<int64_t, N + 1>& off) {
      o[off[0]] = f(p[I][off[I + 1]]...);
    });
  };
  body(std::make_index_sequence<N>{});
}

// Registers `cx` as op's kernel for nodes touching complex values; others keep their kernel (a
// Composite op without one runs its decomposition).
void extend_kernel(InterpreterTable& t, const std::string& op, KernelFn cx);

}  // namespace stax::complex_kernels
