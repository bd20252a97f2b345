// Rules of the VJP / JVP tables that no finite-difference case exercises yet, each named so that
// the coverage tests (autodiff_vjp_test, autodiff_functional_test) fail on any other gap. Empty:
// every rule has a case (issue 29's backward and Core ATen ops in tests/ops/nn/backward_op_cases.h,
// tests/ops/creation/creation_cases.h and tests/ops/pointwise/math_op_cases.h). A rule added
// without a case may be named here for a while, with the reason; the coverage tests fail once a
// case exercises a listed name, so the list cannot go stale.
#pragma once

#include <set>
#include <string>

namespace stax::test {

inline const std::set<std::string>& rules_pending_a_gradient_check() {
  static const std::set<std::string> names = {};
  return names;
}

}  // namespace stax::test
