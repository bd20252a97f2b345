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

// The complex ops' rules: the autodiff case tables hold real tensors, so these rules are checked
// against central differences in tests/ops/spectral/complex_fft_test.cpp
// (Fft.VjpsMatchCentralDifferences: real losses through view_as_real / real / imag) and, their
// JVP rules, in tests/ops/complex/complex_arith_test.cpp (ComplexArith.JvpsMatchCentralDifferences;
// docs/complex.md).
inline const std::set<std::string>& complex_rules_checked_in_complex_fft_test() {
  static const std::set<std::string> names = {
      "_conj.default",         "_conj_physical.default", "_fft_c2c.default",
      "_fft_c2r.default",      "_fft_r2c.default",       "complex.default",
      "conj_physical.default", "imag.default",           "real.default",
      "view_as_complex.default", "view_as_real.default",
      "polar.default"};  // ComplexArith.PolarMatchesStdPolar (tests/ops/complex)
  return names;
}

// The linear-algebra ops' rules (core/ops/linalg): checked against central differences in
// tests/ops/linalg/linalg_test.cpp (Linalg.VjpsMatchCentralDifferences: their inputs must be
// invertible, positive definite or symmetric, which the case tables' random inputs are not), or,
// for the derivatives Stax does not have (the LU factorization, householder_product, ormqr), the
// refusal there (Linalg.UnsupportedDerivativesAreRefused); their JVP rules against directional
// differences in tests/ops/linalg/linalg_jvp_test.cpp, the error check's in linalg_errors_test.
// Also masked_select, whose VJP is a refusal (a result of a run-time size) tested in
// tests/ops/indexing/runtime_sized_test.cpp.
inline const std::set<std::string>& linalg_rules_checked_in_linalg_test() {
  static const std::set<std::string> names = {
      "_stax_linalg_cholesky.default", "_stax_linalg_det.default",
      "_stax_linalg_eigh.default",     "_stax_linalg_lu.default",
      "_stax_linalg_qr.default",       "_stax_linalg_solve.default",
      "_stax_linalg_svd.default",      "cholesky_inverse.default",
      "cholesky_solve.default",        "linalg_householder_product.default",
      "linalg_lu_solve.default",       "linalg_solve_triangular.default",
      "linalg_pinv.atol_rtol_tensor",  "linalg_matrix_sqrth.default",
      "linalg_matrix_exp.default",
      "ormqr.default",                 "_stax_linalg_check.default",
      "masked_select.default",
      // linalg_eig / eigvals and the complex solve their VJP uses: VJPs checked against central
      // differences in tests/ops/complex/eig_test.cpp (LinalgEig.VjpsMatchCentralDifferences);
      // no JVP rule yet (forward mode names the op in its error).
      "_stax_linalg_eig.default",      "linalg_eigvals.default",
      "_stax_complex_solve.default"};
  return names;
}

}  // namespace stax::test
