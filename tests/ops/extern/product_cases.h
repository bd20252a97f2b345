// Autodiff cases of the vector and matrix products of issue 14: dot, vdot, mv, addmv, addr,
// addbmm.
// (Included by tests/autodiff/autodiff_cases.h, which says how they are checked.)
#pragma once

#include <vector>

namespace stax::testing {

inline std::vector<Case> matrix_product_cases() {
  std::vector<Case> out;
  auto add = case_adder(out);
  add("dot", {U({5}), U({5})}, op2("dot"));
  add("mv", {U({3, 5}), U({5})}, op2("mv"));
  add("addmv", {U({3}), U({3, 5}), U({5})}, op3("addmv", {}, {{"beta", 0.5}, {"alpha", 2.0}}));
  add("addr", {U({3, 4}), U({3}), U({4})}, op3("addr", {}, {{"alpha", 2.0}}));
  add("addbmm", {U({3, 4}), U({2, 3, 5}), U({2, 5, 4})}, op3("addbmm"));
  add("vdot", {U({5}), U({5})}, op2("vdot"));
  return out;
}

}  // namespace stax::testing
