// Autodiff cases of the pointwise math ops of issue 14: the base math ops (asin ... lgamma, atan2,
// hypot, copysign) through torch's derivative formulas, the Composite formulas (rsub, deg2rad,
// frac, sinc, logit, logaddexp, xlogy, fmax / fmin, round.decimals ...) through their
// decompositions.
// (Included by tests/autodiff/autodiff_cases.h, which says how they are checked.)
#pragma once

#include <vector>

namespace stax::testing {

inline std::vector<Case> pointwise_math_cases() {
  std::vector<Case> out;
  auto add = case_adder(out);
  add("asin", {U({3, 4}, -0.9, 0.9)}, op1("asin"));
  add("acos", {U({3, 4}, -0.9, 0.9)}, op1("acos"));
  add("atan", {U({3, 4})}, op1("atan"));
  add("sinh", {U({3, 4})}, op1("sinh"));
  add("cosh", {U({3, 4})}, op1("cosh"));
  add("asinh", {U({3, 4})}, op1("asinh"));
  add("acosh", {U({3, 4}, 1.2, 3)}, op1("acosh"));
  add("atanh", {U({3, 4}, -0.9, 0.9)}, op1("atanh"));
  add("erfc", {U({3, 4})}, op1("erfc"));
  add("lgamma", {U({3, 4}, 0.3, 4)}, op1("lgamma"));
  add("atan2", {U({3, 4}), NZ({4})}, op2("atan2"));
  add("hypot", {NZ({3, 4}), U({3, 1})}, op2("hypot"));
  add("copysign", {NZ({3, 4}), Const(NZ({4}))}, op2("copysign.Tensor"));
  add("rsub", {U({3, 4}), U({4})}, op2("rsub.Tensor", {}, {{"alpha", 1.5}}));
  add("rsub_scalar", {U({3, 4})}, op1("rsub.Scalar", {2.0, 0.5}));
  add("deg2rad", {U({3, 4})}, op1("deg2rad"));
  add("frac", {Fixed({4}, {-2.7, -0.4, 0.3, 1.6})}, op1("frac"));
  add("sinc", {NZ({3, 4})}, op1("sinc"));
  add("logit_eps", {U({3, 4}, 0.1, 0.9)}, op1("logit", {0.05}));
  add("logaddexp", {U({3, 4}), U({4})}, op2("logaddexp"));
  add("logaddexp2", {U({3, 4}), U({3, 4})}, op2("logaddexp2"));
  add("xlogy", {U({3, 4}), P({3, 4})}, op2("xlogy.Tensor"));
  add("fmax", {Fixed({4}, {1.0, -2.0, 0.5, 3.0}), Fixed({4}, {0.5, -1.0, 2.5, -3.0})},
      op2("fmax"));
  add("rad2deg", {U({3, 4})}, op1("rad2deg"));
  add("sgn", {NZ({3, 4})}, op1("sgn"));
  add("round_decimals", {U({3, 4})}, op1("round.decimals", {}, {{"decimals", 2}}));
  add("copysign_scalar", {NZ({3, 4})}, op1("copysign.Scalar", {-1.0}));
  add("fmin", {Fixed({4}, {1.0, -2.0, 0.5, 3.0}), Fixed({4}, {0.5, -1.0, 2.5, -3.0})},
      op2("fmin"));
  // nextafter: torch 2.x's gradient is 1 in self, 0 in other
  add("nextafter", {U({3, 4}), U({4})}, op2("nextafter"));
  // atan2.out (Core ATen's out= overload): its value is atan2's; the out tensor gets no gradient
  add("atan2_out", {U({3, 4}), NZ({4}), U({3, 4})}, [](Graph& g, const std::vector<Node*>& x) {
    return g.call("atan2.out", {x[0], x[1]}, {{"out", x[2]}});
  });
  return out;
}

}  // namespace stax::testing
