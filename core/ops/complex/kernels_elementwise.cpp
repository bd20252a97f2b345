// Interpreter kernels of complex arithmetic (docs/complex.md): the elementwise ops and the sums of
// complex tensors, computed in std::complex<float / double> with torch's formulas (c10::complex's
// products and quotients, the std:: functions torch's CPU kernels call). Each extends the op's
// kernel for nodes touching complex values; real nodes keep theirs.
#include <array>
#include <cmath>
#include <complex>
#include <string>
#include <vector>

#include "core/graph/op_registry.h"
#include "core/ops/complex/complex_kernel.h"
#include "core/ops/registration.h"

namespace stax {
namespace complex_kernels {

void extend_kernel(InterpreterTable& t, const std::string& op, KernelFn cx) {
  std::function<KernelFn(KernelFn)> pick = [cx](KernelFn real) -> KernelFn {
    return [real = std::move(real), cx](const KernelContext& c) {
      return touches_complex(c) ? cx(c) : real(c);
    };
  };
  t.extend(op, pick, [](const KernelContext& c) { return kernels::run_decomposition(c); });
}

}  // namespace complex_kernels

namespace {

using namespace complex_kernels;  // NOLINT: the complex kernels' vocabulary

// A kernel computing f over the complex operands bound to `params` (tensors or numbers), f
// called as f(tag, values...) with tag's type the part type R.
template <size_t N, class F>
KernelFn elementwise(std::array<const char*, N> params, F f) {
  return [params, f](const KernelContext& c) -> Tensor {
    DType cd = computation_dtype(c);
    std::array<Tensor, N> ins;
    for (size_t k = 0; k < N; ++k) ins[k] = operand(c, params[k], cd);
    Tensor out = kernels::empty_output(c.out_meta());
    dispatch_complex(cd, [&](auto tag) {
      using R = typename decltype(tag)::type::value_type;
      cmap<R>(out, ins, [&](auto... z) { return f(TypeTag<R>{}, z...); });
    });
    return out;
  };
}

template <class F>
KernelFn unary(F f) {
  return elementwise<1>({"self"}, [f](auto, auto z) { return f(z); });
}

// The scalar `alpha` of add / sub as a complex value of part type R.
template <class R>
Cx<R> alpha_of(const KernelContext& c) {
  const Arg& a = c.arg("alpha");
  return Cx<R>(a.is_absent() ? R(1) : static_cast<R>(a.to_double()), R(0));
}

// a + sign * alpha * b (add, sub; rsub swaps its operands).
KernelFn add_kernel(const char* first, const char* second, double sign) {
  return [first, second, sign](const KernelContext& c) -> Tensor {
    DType cd = computation_dtype(c);
    std::array<Tensor, 2> ins{operand(c, first, cd), operand(c, second, cd)};
    Tensor out = kernels::empty_output(c.out_meta());
    dispatch_complex(cd, [&](auto tag) {
      using R = typename decltype(tag)::type::value_type;
      Cx<R> alpha = alpha_of<R>(c) * static_cast<R>(sign);
      bool plain = alpha == Cx<R>(1);
      bool minus = alpha == Cx<R>(-1);
      cmap<R>(out, ins, [&](Cx<R> a, Cx<R> b) {
        return plain ? a + b : minus ? a - b : a + cmul(alpha, b);
      });
    });
    return out;
  };
}

// torch's pow(z, e) for complex z: the exponents its CPU kernel special-cases, else std::pow.
template <class R>
Cx<R> power(Cx<R> z, double e) {
  if (e == 2) return cmul(z, z);
  if (e == 3) return cmul(cmul(z, z), z);
  if (e == 0.5) return std::sqrt(z);
  if (e == -0.5) return cdiv(Cx<R>(1), std::sqrt(z));
  if (e == -1) return cdiv(Cx<R>(1), z);
  if (e == -2) return cdiv(Cx<R>(1), cmul(z, z));
  return std::pow(z, Cx<R>(static_cast<R>(e), R(0)));
}

void register_arithmetic(InterpreterTable& t) {
  extend_kernel(t, "add.Tensor", add_kernel("self", "other", 1));
  extend_kernel(t, "add.Scalar", add_kernel("self", "other", 1));
  extend_kernel(t, "sub.Tensor", add_kernel("self", "other", -1));
  extend_kernel(t, "sub.Scalar", add_kernel("self", "other", -1));
  auto mul = elementwise<2>({"self", "other"}, [](auto, auto a, auto b) { return cmul(a, b); });
  auto div = elementwise<2>({"self", "other"}, [](auto, auto a, auto b) { return cdiv(a, b); });
  for (const char* ov : {"mul.Tensor", "mul.Scalar"}) extend_kernel(t, ov, mul);
  for (const char* ov : {"div.Tensor", "div.Scalar"}) extend_kernel(t, ov, div);
  extend_kernel(t, "neg.default", unary([](auto z) { return -z; }));
  extend_kernel(t, "exp.default", unary([](auto z) { return std::exp(z); }));
  extend_kernel(t, "log.default", unary([](auto z) { return std::log(z); }));
  extend_kernel(t, "sqrt.default", unary([](auto z) { return std::sqrt(z); }));
  extend_kernel(t, "sin.default", unary([](auto z) { return std::sin(z); }));
  extend_kernel(t, "cos.default", unary([](auto z) { return std::cos(z); }));
  extend_kernel(t, "tanh.default", unary([](auto z) { return std::tanh(z); }));
  // torch's complex tanh_backward: g · conj(1 − y²).
  extend_kernel(t, "tanh_backward.default",
                elementwise<2>({"grad_output", "output"}, [](auto, auto g, auto y) {
                  using C = decltype(g);
                  return cmul(g, std::conj(C(1) - cmul(y, y)));
                }));
  extend_kernel(t, "reciprocal.default",
                unary([](auto z) { return cdiv(decltype(z)(1), z); }));
  extend_kernel(t, "abs.default", unary([](auto z) { return std::abs(z); }));
  extend_kernel(t, "isnan.default",
                unary([](auto z) { return std::isnan(z.real()) || std::isnan(z.imag()); }));
  extend_kernel(t, "pow.Tensor_Scalar", [](const KernelContext& c) {
    double e = c.arg("exponent").to_double();
    return elementwise<1>({"self"}, [e](auto, auto z) { return power(z, e); })(c);
  });
  // torch's complex pow with a tensor exponent: std::pow of the two (c10::complex's pow).
  extend_kernel(t, "pow.Tensor_Tensor",
                elementwise<2>({"self", "exponent"}, [](auto, auto a, auto b) { return std::pow(a, b); }));
  for (const char* ov : {"eq.Tensor", "eq.Scalar"})
    extend_kernel(t, ov, elementwise<2>({"self", "other"}, [](auto, auto a, auto b) { return a == b; }));
  for (const char* ov : {"ne.Tensor", "ne.Scalar"})
    extend_kernel(t, ov, elementwise<2>({"self", "other"}, [](auto, auto a, auto b) { return a != b; }));
  auto where = elementwise<3>({"condition", "self", "other"},
                              [](auto, auto k, auto a, auto b) { return k != decltype(k)(0) ? a : b; });
  for (const char* ov : {"where.self", "where.ScalarSelf", "where.ScalarOther"})
    extend_kernel(t, ov, where);
}

// sum / mean of a complex tensor over `dim` (absent or empty: every dim), in the documented
// order (lexicographic over the reduced indices); mean divides the sum by the count.
Tensor sum_kernel(const KernelContext& c, bool mean) {
  const Tensor& in = c.tensor("self");
  DType cd = c.out_meta().dtype;
  if (!is_complex(cd)) c.fail("the sum of a complex tensor is complex, not " +
                              std::string(dtype_name(cd)) + " (torch refuses the cast)");
  Tensor x = converted(in, cd);
  std::vector<int64_t> dims;
  const auto& schema = c.node().op()->schema;
  if (schema.index_of("dim") >= 0 && !c.arg("dim").is_absent()) dims = c.arg("dim").to_int_list();
  kernels::ReductionLayout l = kernels::reduction_layout(
      x, kernels::reduction_mask(x.dim(), dims, "%" + c.node().name()));
  Tensor out = kernels::empty_output(c.out_meta());
  dispatch_complex(cd, [&](auto tag) {
    using C = typename decltype(tag)::type;
    using R = typename C::value_type;
    const C* p = x.template data<C>();
    C* o = out.template data<C>();
    auto n = static_cast<R>(l.inner.size());
    for (size_t i = 0; i < l.outer.size(); ++i) {
      C s(0);
      for (int64_t d : l.inner) s += p[l.outer[i] + d];
      o[out.linear_offset(static_cast<int64_t>(i))] = mean ? C(s.real() / n, s.imag() / n) : s;
    }
  });
  return out;
}

}  // namespace

void register_complex_elementwise_kernels(InterpreterTable& t) {
  register_arithmetic(t);
  for (const char* ov : {"sum.default", "sum.dim_IntList"})
    extend_kernel(t, ov, [](const KernelContext& c) { return sum_kernel(c, false); });
  for (const char* ov : {"mean.default", "mean.dim"})
    extend_kernel(t, ov, [](const KernelContext& c) { return sum_kernel(c, true); });
}

}  // namespace stax
