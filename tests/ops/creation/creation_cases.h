// Autodiff cases of the creation family's Core ATen ops that take a gradient: copy (the source,
// broadcast to self's shape, in self's dtype) and fill.Tensor (a 0-d value filling self's shape).
// self's values are overwritten, so its gradient is zero; the finite differences check that too.
// (Included by tests/autodiff/autodiff_cases.h, which says how they are checked.)
#pragma once

#include <vector>

namespace stax::testing {

inline std::vector<Case> creation_cases() {
  std::vector<Case> out;
  auto add = case_adder(out);
  add("copy", {U({3, 4}), U({3, 4})}, op2("copy"));
  add("copy_broadcast", {U({2, 3, 4}), U({3, 1})}, op2("copy"));
  add("fill_Tensor", {U({3, 4}), U({})}, op2("fill.Tensor"));
  return out;
}

}  // namespace stax::testing
