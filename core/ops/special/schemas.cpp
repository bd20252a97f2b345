// Schemas of the special ops.
#include <algorithm>
#include <cmath>

#include "core/graph/op_registry.h"
#include "core/ops/common/infer_helpers.h"
#include "core/ops/nn/params.h"
#include "core/ops/registration.h"

namespace stax {
namespace {

using P = Promotion;
using C = OpCategory;

using infer::floating;

TensorMeta mvlgamma_rule(const CallArgs& c) {
  if (c.get("p").to_int() < 1) c.fail("p has to be greater than or equal to 1");
  if (c.tensor("self").dtype == DType::Bool) c.fail("the input tensor may not be a bool tensor");
  return floating({"self"}, P::IntToFloat)(c);
}

TensorMeta polygamma_rule(const CallArgs& c) {
  if (c.get("n").to_int() < 0) c.fail("polygamma(n, x) does not support negative n.");
  return floating({"self"}, P::IntToFloat)(c);
}

}  // namespace

void register_special_ops(OpRegistry& r) {
  {
    // ---- base unary math (interpreter kernels; float results, integers promote). The special
    // functions torch gives no derivative (Bessel, Airy) are not differentiable here either.
    auto unary = [&](const char* n, const char* param, bool differentiable) {
      infer::add_unary_math(r, n, param, differentiable);
    };

    // ---- pointwise formulas (Composite)
    auto comp = [&](const std::string& schema, Promotion p, InferFn f) -> OpDef& {
      return r.add(schema, C::Composite, p, std::move(f));
    };

    for (const char* n :
           {"erfinv", "digamma", "i0", "special_i0e", "special_i1", "special_i1e", "special_ndtri",
            "special_log_ndtr", "special_erfcx"})
      unary(n, "self", true);

    // Differentiable in torch 2.x (core/ops/special/derivatives.cpp).
    for (const char* n : {"special_bessel_j0", "special_bessel_j1", "special_bessel_y0",
                          "special_bessel_y1", "special_modified_bessel_i0",
                          "special_modified_bessel_i1", "special_modified_bessel_k0",
                          "special_modified_bessel_k1"})
      unary(n, "self", true);

    for (const char* n : {"special_airy_ai", "special_scaled_modified_bessel_k0",
                          "special_scaled_modified_bessel_k1", "special_spherical_bessel_j0"})
      unary(n, "x", false);

    r.add("polygamma(int n, Tensor self) -> Tensor", C::Pointwise, P::IntToFloat, polygamma_rule);

    r.add("special_zeta(Tensor self, Tensor other) -> Tensor", C::Pointwise, P::IntToFloat,
          floating({"self", "other"}, P::IntToFloat))
        .differentiable = false;

    r.add("igamma(Tensor self, Tensor other) -> Tensor", C::Pointwise, P::Default,
          floating({"self", "other"}))
        .differentiable = false;

    r.add("igammac(Tensor self, Tensor other) -> Tensor", C::Pointwise, P::Default,
          floating({"self", "other"}))
        .differentiable = false;

    for (const char* n : {"special_chebyshev_polynomial_t", "special_chebyshev_polynomial_u",
                          "special_chebyshev_polynomial_v", "special_chebyshev_polynomial_w",
                          "special_shifted_chebyshev_polynomial_t",
                          "special_shifted_chebyshev_polynomial_u",
                          "special_shifted_chebyshev_polynomial_v",
                          "special_shifted_chebyshev_polynomial_w", "special_hermite_polynomial_h",
                          "special_hermite_polynomial_he", "special_laguerre_polynomial_l",
                          "special_legendre_polynomial_p"})
      r.add(std::string(n) + "(Tensor x, Tensor n) -> Tensor", C::Pointwise, P::IntToFloat,
            floating({"x", "n"}, P::IntToFloat))
          .differentiable = false;

    comp("special_entr(Tensor self) -> Tensor", P::IntToFloat, floating({"self"}, P::IntToFloat));

    comp("special_xlog1py(Tensor self, Tensor other) -> Tensor", P::IntToFloat,
         floating({"self", "other"}, P::IntToFloat));

    comp("mvlgamma(Tensor self, int p) -> Tensor", P::IntToFloat, mvlgamma_rule);
  }
}

}  // namespace stax
