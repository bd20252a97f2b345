// Kernels of the special ops.
#include <array>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <string>

#include "core/graph/op_registry.h"
#include "core/interpreter/interpreter.h"
#include "core/ops/common/elementwise_kernels.h"
#include "core/ops/common/kernel_utils.h"
#include "core/ops/registration.h"
#include "core/ops/special/functions.h"

namespace stax {
namespace {

using namespace elementwise_kernels;  // NOLINT
using namespace kernels;

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

Tensor polygamma(const KernelContext& ctx) {
  int64_t n = ctx.arg("n").to_int();
  return floating_map<1>([n](auto x) {
    return static_cast<decltype(x)>(special::polygamma(n, static_cast<double>(x)));
  })(ctx);
}

}  // namespace

void register_special_kernels(InterpreterTable& t) {
  {
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

    for (const auto& [name, p] : polys) t.add(std::string(name) + ".default", polynomial_kernel(p));

    // ---- Composite ops: their decomposition
    for (const char* op : {"special_entr.default", "special_xlog1py.default", "mvlgamma.default"})
      t.add(op, kernels::run_decomposition);
  }
}

}  // namespace stax
