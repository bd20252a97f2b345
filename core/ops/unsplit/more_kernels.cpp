// Interpreter kernels of the ops of core/graph/ops/more_ops.cpp (issue 14):
//   * the base math ops evaluate the C++ library function (asin, sinh, erfc, lgamma, atan2, hypot,
//     copysign, nextafter, signbit ...) in the computation type of the result (float for float32,
//     as torch's CPU kernels), or a special function of special_functions.h in double, rounded
//     once to the result type;
//   * the Composite ops run their decomposition (core/graph/decompositions_more.cpp), which the
//     compiled path runs too.
#include <array>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <string>

#include "core/graph/op_registry.h"
#include "core/interpreter/interpreter.h"
#include "core/ops/common/kernel_utils.h"
#include "core/ops/registration.h"
#include "core/ops/special/functions.h"

namespace stax {
namespace {

using namespace kernels;

Tensor operand(const KernelContext& ctx, const std::string& param, DType dt) {
  const Arg& a = ctx.arg(param);
  if (a.is_node()) return ctx.value(a.node());
  if (!a.is_number()) ctx.fail("parameter '" + param + "' is not a number");
  return scalar_tensor(a, dt);
}

// The first N parameters of the op's schema that are not ints (polygamma's n is read apart).
template <size_t N>
std::array<std::string, N> tensor_params(const KernelContext& ctx) {
  std::array<std::string, N> out;
  size_t k = 0;
  for (const auto& p : ctx.node().op()->schema.params) {
    if (k == N) break;
    if (p.type == ParamType::Int) continue;
    out[k++] = p.name;
  }
  return out;
}

// out = f(x[, y]) elementwise, f called with values of the floating computation type C of the
// result and returning C (or bool for a bool result).
template <size_t N, class F>
KernelFn floating_map(F f) {
  return [f](const KernelContext& ctx) -> Tensor {
    DType dt = computation_dtype(ctx.out_meta().dtype);
    auto params = tensor_params<N>(ctx);
    std::array<Tensor, N> ins;
    for (size_t i = 0; i < N; ++i) ins[i] = operand(ctx, params[i], dt);
    Tensor out = empty_output(ctx.out_meta());
    dispatch_compute(dt, [&](auto tag) {
      using C = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<C>)
        map_into_as<C>(out, ins, [&](auto... xs) -> C { return f(xs...); });
      else
        ctx.fail("not defined for " + std::string(dtype_name(dt)) + " values");
    });
    return out;
  };
}

// A double special function, rounded once to the computation type.
template <class Fn>
auto in_double(Fn fn) {
  return [fn](auto x0, auto... xs) { return static_cast<decltype(x0)>(fn(static_cast<double>(x0), static_cast<double>(xs)...)); };
}

KernelFn polynomial_kernel(special::Poly p) {
  return floating_map<2>([p](auto x, auto n) {
    using C = decltype(x);
    if (std::isnan(n) || std::isinf(n)) return std::numeric_limits<C>::quiet_NaN();
    return static_cast<C>(special::polynomial(p, static_cast<double>(x), static_cast<int64_t>(n)));
  });
}

Tensor signbit(const KernelContext& ctx) {
  const Tensor& in = ctx.tensor("self");
  Tensor out = empty_output(ctx.out_meta());
  DType dt = computation_dtype(in.dtype());
  dispatch_compute(dt, [&](auto tag) {
    using C = typename decltype(tag)::type;
    map_into_as<C>(out, std::array<Tensor, 1>{in}, [](C v) -> bool {
      if constexpr (std::is_floating_point_v<C>) return std::signbit(v);
      else if constexpr (std::is_same_v<C, bool>) return false;
      else return v < 0;
    });
  });
  return out;
}

Tensor polygamma(const KernelContext& ctx) {
  int64_t n = ctx.arg("n").to_int();
  return floating_map<1>([n](auto x) {
    return static_cast<decltype(x)>(special::polygamma(n, static_cast<double>(x)));
  })(ctx);
}

// gcd / lcm on int64 values (torch: lcm = |a / gcd * b|, 0 when gcd is 0).
template <bool Lcm>
Tensor gcd_lcm(const KernelContext& ctx) {
  DType dt = computation_dtype(ctx.out_meta().dtype);
  std::array<Tensor, 2> ins{operand(ctx, "self", dt), operand(ctx, "other", dt)};
  Tensor out = empty_output(ctx.out_meta());
  map_into_as<i64>(out, ins, [](i64 a, i64 b) -> i64 {
    i64 g = std::gcd(a, b);
    if constexpr (Lcm) return g == 0 ? 0 : std::abs(a / g * b);
    else return g;
  });
  return out;
}

// normal(mean, std): mean + std * z, z the standard normal numbers of the node's seed.
Tensor normal(const KernelContext& ctx) {
  const TensorMeta& om = ctx.out_meta();
  DType dt = computation_dtype(om.dtype);
  std::array<Tensor, 3> ins{operand(ctx, "mean", dt), operand(ctx, "std", dt),
                            Tensor::randn(om.sizes, om.dtype, ctx.seed(), 0)};
  Tensor out = empty_output(om);
  dispatch_compute(dt, [&](auto tag) {
    using C = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<C>)
      map_into_as<C>(out, ins, [](C m, C s, C z) -> C { return m + s * z; });
  });
  return out;
}

Tensor bernoulli(const KernelContext& ctx) {
  const TensorMeta& om = ctx.out_meta();
  DType dt = computation_dtype(om.dtype);
  std::array<Tensor, 2> ins{ctx.tensor("self"), Tensor::rand(om.sizes, om.dtype, ctx.seed(), 0)};
  Tensor out = empty_output(om);
  dispatch_compute(dt, [&](auto tag) {
    using C = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<C>)
      map_into_as<C>(out, ins, [](C p, C u) -> C { return u < p ? C(1) : C(0); });
  });
  return out;
}

Tensor randint_like(const KernelContext& ctx) {
  const TensorMeta& om = ctx.out_meta();
  bool low = ctx.node().op()->schema.index_of("low") >= 0;
  return Tensor::randint(om.sizes, low ? ctx.arg("low").to_int() : 0, ctx.arg("high").to_int(),
                         om.dtype, ctx.seed(), 0);
}

}  // namespace

void register_more_kernels(InterpreterTable& t) {
  t.add("gcd.default", gcd_lcm<false>);
  t.add("lcm.default", gcd_lcm<true>);
  for (const char* op : {"normal.Tensor_Tensor", "normal.Tensor_float", "normal.float_Tensor"})
    t.add(op, normal);
  t.add("bernoulli.default", bernoulli);
  t.add("randint_like.default", randint_like);
  t.add("randint_like.low_dtype", randint_like);
  // ---- library math in the computation type
  t.add("asin.default", floating_map<1>([](auto x) { return std::asin(x); }));
  t.add("acos.default", floating_map<1>([](auto x) { return std::acos(x); }));
  t.add("atan.default", floating_map<1>([](auto x) { return std::atan(x); }));
  t.add("sinh.default", floating_map<1>([](auto x) { return std::sinh(x); }));
  t.add("cosh.default", floating_map<1>([](auto x) { return std::cosh(x); }));
  t.add("asinh.default", floating_map<1>([](auto x) { return std::asinh(x); }));
  t.add("acosh.default", floating_map<1>([](auto x) { return std::acosh(x); }));
  t.add("atanh.default", floating_map<1>([](auto x) { return std::atanh(x); }));
  t.add("erfc.default", floating_map<1>([](auto x) { return std::erfc(x); }));
  t.add("lgamma.default", floating_map<1>([](auto x) { return std::lgamma(x); }));
  t.add("atan2.default", floating_map<2>([](auto a, auto b) { return std::atan2(a, b); }));
  t.add("hypot.default", floating_map<2>([](auto a, auto b) { return std::hypot(a, b); }));
  for (const char* op : {"copysign.Tensor", "copysign.Scalar"})
    t.add(op, floating_map<2>([](auto a, auto b) { return std::copysign(a, b); }));
  t.add("nextafter.default", floating_map<2>([](auto a, auto b) { return std::nextafter(a, b); }));
  t.add("signbit.default", signbit);

  // ---- special functions in double
  t.add("erfinv.default", floating_map<1>(in_double(special::erfinv)));
  t.add("digamma.default", floating_map<1>(in_double(special::digamma)));
  t.add("polygamma.default", polygamma);
  t.add("i0.default", floating_map<1>(in_double(special::i0)));
  t.add("special_i0e.default", floating_map<1>(in_double(special::i0e)));
  t.add("special_i1.default", floating_map<1>(in_double(special::i1)));
  t.add("special_i1e.default", floating_map<1>(in_double(special::i1e)));
  t.add("special_ndtri.default", floating_map<1>(in_double(special::ndtri)));
  t.add("special_log_ndtr.default", floating_map<1>(in_double(special::log_ndtr)));
  t.add("special_erfcx.default", floating_map<1>(in_double(special::erfcx)));
  t.add("special_bessel_j0.default", floating_map<1>(in_double(special::bessel_j0)));
  t.add("special_bessel_j1.default", floating_map<1>(in_double(special::bessel_j1)));
  t.add("special_bessel_y0.default", floating_map<1>(in_double(special::bessel_y0)));
  t.add("special_bessel_y1.default", floating_map<1>(in_double(special::bessel_y1)));
  t.add("special_modified_bessel_i0.default", floating_map<1>(in_double(special::i0)));
  t.add("special_modified_bessel_i1.default", floating_map<1>(in_double(special::i1)));
  t.add("special_modified_bessel_k0.default", floating_map<1>(in_double(special::bessel_k0)));
  t.add("special_modified_bessel_k1.default", floating_map<1>(in_double(special::bessel_k1)));
  t.add("special_scaled_modified_bessel_k0.default",
        floating_map<1>(in_double(special::bessel_k0e)));
  t.add("special_scaled_modified_bessel_k1.default",
        floating_map<1>(in_double(special::bessel_k1e)));
  t.add("special_spherical_bessel_j0.default",
        floating_map<1>(in_double(special::spherical_bessel_j0)));
  t.add("special_airy_ai.default", floating_map<1>(in_double(special::airy_ai)));
  t.add("special_zeta.default", floating_map<2>(in_double(special::zeta)));
  t.add("igamma.default", floating_map<2>(in_double(special::igamma)));
  t.add("igammac.default", floating_map<2>(in_double(special::igammac)));
  using special::Poly;
  const std::pair<const char*, Poly> polys[] = {
      {"special_chebyshev_polynomial_t", Poly::ChebyshevT},
      {"special_chebyshev_polynomial_u", Poly::ChebyshevU},
      {"special_chebyshev_polynomial_v", Poly::ChebyshevV},
      {"special_chebyshev_polynomial_w", Poly::ChebyshevW},
      {"special_shifted_chebyshev_polynomial_t", Poly::ShiftedChebyshevT},
      {"special_shifted_chebyshev_polynomial_u", Poly::ShiftedChebyshevU},
      {"special_shifted_chebyshev_polynomial_v", Poly::ShiftedChebyshevV},
      {"special_shifted_chebyshev_polynomial_w", Poly::ShiftedChebyshevW},
      {"special_hermite_polynomial_h", Poly::HermiteH},
      {"special_hermite_polynomial_he", Poly::HermiteHe},
      {"special_laguerre_polynomial_l", Poly::LaguerreL},
      {"special_legendre_polynomial_p", Poly::LegendreP}};
  for (const auto& [name, p] : polys) t.add(std::string(name) + ".default", polynomial_kernel(p));

  // ---- Composite ops: their decomposition
  for (const char* op :
       {"rsub.Tensor", "rsub.Scalar", "deg2rad.default", "rad2deg.default", "frac.default",
        "sgn.default", "sinc.default", "logit.default", "special_entr.default",
        "heaviside.default", "logaddexp.default", "logaddexp2.default", "xlogy.Tensor",
        "special_xlog1py.default", "fmax.default", "fmin.default", "round.decimals",
        "mvlgamma.default", "celu.default", "hardshrink.default", "softshrink.default",
        "threshold.default", "glu.default", "prelu.default", "huber_loss.default",
        "soft_margin_loss.default", "binary_cross_entropy.default", "dot.default", "vdot.default",
        "mv.default", "addmv.default", "addr.default", "addbmm.default", "dist.default",
        "nansum.default", "count_nonzero.dim_IntList", "count_nonzero.default",
        "logcumsumexp.default", "trace.default", "diagonal.default", "diag.default",
        "diag_embed.default", "take.default", "index_fill.int_Scalar", "index_fill.int_Tensor",
        "rot90.default", "pixel_shuffle.default", "pixel_unshuffle.default",
        "narrow_copy.default", "new_full.default", "new_zeros.default", "new_ones.default",
        "_adaptive_avg_pool2d.default", "_adaptive_avg_pool3d.default", "max_unpool2d.default",
        "max_unpool3d.default", "upsample_bilinear2d.vec", "upsample_nearest2d.vec",
        "upsample_nearest1d.vec", "linalg_cross.default", "median.default", "nanmedian.default",
        "eye.default", "eye.m", "linspace.default", "logspace.default", "isin.Tensor_Tensor",
        "bucketize.Tensor", "searchsorted.Tensor", "index_copy.default", "put.default",
        "masked_scatter.default", "renorm.default", "unfold.default", "_cdist_forward.default",
        "_pdist_forward.default", "block_diag.default", "slice_scatter.default",
        "select_scatter.default", "tril_indices.default", "triu_indices.default",
        "index_reduce.default", "multi_margin_loss.default"})
    t.add(op, kernels::run_decomposition);
}

}  // namespace stax
