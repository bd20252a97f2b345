// Autodiff cases of the Composite reductions of issue 14: nansum, logcumsumexp, median and
// nanmedian (inputs without ties).
// (Included by tests/autodiff/autodiff_cases.h, which says how they are checked.)
#pragma once

#include <vector>

namespace stax::testing {

inline std::vector<Case> reduction_composite_cases() {
  std::vector<Case> out;
  auto add = case_adder(out);
  add("nansum", {U({3, 4})}, op1("nansum", {L({1})}));
  add("logcumsumexp", {U({3, 4})}, op1("logcumsumexp", {1}));
  add("median", {Fixed({5}, {0.3, -1.2, 2.5, 0.9, -0.4})}, op1("median"));
  add("nanmedian", {Fixed({5}, {0.3, -1.2, 2.5, 0.9, -0.4})}, op1("nanmedian"));
  return out;
}

}  // namespace stax::testing
