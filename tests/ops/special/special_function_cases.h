// Autodiff cases of the special functions (core/ops/special): erfinv, digamma, polygamma, the
// Bessel functions, ndtri, log_ndtr, erfcx, entr, xlog1py, mvlgamma.
// (Included by tests/autodiff/autodiff_cases.h, which says how they are checked.)
#pragma once

#include <vector>

namespace stax::testing {

inline std::vector<Case> special_function_cases() {
  std::vector<Case> out;
  auto add = case_adder(out);
  add("erfinv", {U({3, 4}, -0.9, 0.9)}, op1("erfinv"));
  add("digamma", {U({3, 4}, 0.3, 4)}, op1("digamma"));
  add("digamma_negative", {Fixed({3}, {-0.4, -1.3, -2.7})}, op1("digamma"));
  add("polygamma_1", {U({3, 4}, 0.3, 4)}, [](Graph& g, const std::vector<Node*>& x) {
    return g.call("polygamma", {1, x[0]});
  });
  add("polygamma_3", {U({3, 4}, 0.3, 4)}, [](Graph& g, const std::vector<Node*>& x) {
    return g.call("polygamma", {3, x[0]});
  });
  add("i0", {U({3, 4})}, op1("i0"));
  add("special_i0e", {NZ({3, 4})}, op1("special_i0e"));
  add("special_i1", {U({3, 4})}, op1("special_i1"));
  add("special_i1e", {NZ({3, 4})}, op1("special_i1e"));
  for (const char* f : {"special_bessel_j0", "special_bessel_j1", "special_modified_bessel_i0",
                        "special_modified_bessel_i1"})
    add(f, {U({3, 4})}, op1(f));
  for (const char* f : {"special_bessel_y0", "special_bessel_y1", "special_modified_bessel_k0",
                        "special_modified_bessel_k1"})  // defined for x > 0
    add(f, {P({3, 4}, 0.5, 3)}, op1(f));
  add("special_ndtri", {U({3, 4}, 0.05, 0.95)}, op1("special_ndtri"));
  add("special_log_ndtr", {U({3, 4}, -5, 3)}, op1("special_log_ndtr"));
  add("special_erfcx", {U({3, 4}, -1, 4)}, op1("special_erfcx"));
  add("special_entr", {P({3, 4}, 0.1, 2)}, op1("special_entr"));
  add("special_xlog1py", {U({3, 4}), P({3, 4})}, op2("special_xlog1py"));
  add("mvlgamma", {U({3, 4}, 2.5, 4)}, op1("mvlgamma", {3}));
  return out;
}

}  // namespace stax::testing
