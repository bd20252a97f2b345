// linalg_eig / linalg_eigvals (core/ops/linalg/eig.cpp): LAPACK's geev with complex results.
// A V = V diag(λ) for random matrices with complex eigenvalue pairs (float32 and float64,
// batched), unit-norm eigenvectors, known spectra, eigvals equal to eig's values, torch's errors,
// and the compiled path running them as interpreter fallbacks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <vector>

#include "core/functional/functional.h"
#include "core/graph/graph.h"
#include "core/graph/verifier.h"
#include "core/interpreter/interpreter.h"
#include "tests/support/compiled_check.h"
#include "tests/support/interp_helpers.h"

using namespace stax;
using namespace stax::test;
using cd = std::complex<double>;

namespace {

std::vector<cd> values(const Tensor& t) {
  Tensor p = t.contiguous().as_real_view().to(DType::Float64);
  std::vector<cd> out;
  for (int64_t i = 0; i < t.numel(); ++i) out.emplace_back(p.get_double(2 * i), p.get_double(2 * i + 1));
  return out;
}

// eig's two results (and eigvals) of a (*, n, n) input.
std::vector<Tensor> eig_of(const Tensor& a) {
  Graph g;
  Node* x = g.placeholder("a", a.sizes(), a.dtype());
  Node* e = g.call("linalg_eig", {x});
  g.output({g.call("getitem", {e, int64_t{0}}), g.call("getitem", {e, int64_t{1}}),
            g.call("linalg_eigvals", {x})});
  verify(g);
  return interpret(g, {a});
}

}  // namespace

TEST(LinalgEig, EigenpairsSatisfyTheDefinition) {
  for (DType dt : {DType::Float32, DType::Float64}) {
    double tol = dt == DType::Float32 ? 1e-4 : 1e-11;
    int64_t n = 5, nb = 3;
    Tensor a = Tensor::randn({nb, n, n}, dt, 3);
    std::vector<Tensor> r = eig_of(a);
    ASSERT_EQ(r[0].dtype(), real_to_complex(dt));
    ASSERT_EQ(r[0].sizes(), (Shape{nb, n}));
    ASSERT_EQ(r[1].sizes(), (Shape{nb, n, n}));
    std::vector<cd> l = values(r[0]), v = values(r[1]), l2 = values(r[2]);
    bool pair = false;
    for (int64_t b = 0; b < nb; ++b) {
      for (int64_t j = 0; j < n; ++j) {
        cd lam = l[b * n + j];
        pair = pair || lam.imag() != 0;
        EXPECT_EQ(lam, l2[b * n + j]) << "eigvals = eig's values";
        double norm = 0;
        for (int64_t i = 0; i < n; ++i) {
          cd av = 0;
          for (int64_t k = 0; k < n; ++k)
            av += a.get_double(b * n * n + i * n + k) * v[b * n * n + k * n + j];
          EXPECT_LE(std::abs(av - lam * v[b * n * n + i * n + j]), tol * (1 + std::abs(lam)))
              << dtype_name(dt) << " batch " << b << " vector " << j << " row " << i;
          norm += std::norm(v[b * n * n + i * n + j]);
        }
        EXPECT_NEAR(norm, 1.0, tol) << "unit norm";
      }
    }
    EXPECT_TRUE(pair) << "the random matrices should have complex eigenvalue pairs";
  }
}

TEST(LinalgEig, KnownSpectraErrorsAndCompiledFallbacks) {
  // A rotation by 90 degrees: ±i; a triangular matrix: its diagonal.
  Tensor rot = Tensor::from_vector<double>({2, 2}, {0, -1, 1, 0});
  std::vector<cd> l = values(eig_of(rot)[0]);
  std::sort(l.begin(), l.end(), [](cd x, cd y) { return x.imag() < y.imag(); });
  EXPECT_NEAR(std::abs(l[0] - cd(0, -1)), 0, 1e-15);
  EXPECT_NEAR(std::abs(l[1] - cd(0, 1)), 0, 1e-15);
  Tensor tri = Tensor::from_vector<double>({3, 3}, {1, 2, 3, 0, 4, 5, 0, 0, 6});
  l = values(eig_of(tri)[0]);
  std::sort(l.begin(), l.end(), [](cd x, cd y) { return x.real() < y.real(); });
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(std::abs(l[i] - cd(std::vector<double>{1, 4, 6}[i], 0)), 0, 1e-14);

  Graph bad;
  Node* x = bad.placeholder("x", {2, 3});
  std::string e = error_of([&] { bad.call("linalg_eigvals", {x}); });
  EXPECT_TRUE(has(e, "linalg.eigvals: A must be batches of square matrices")) << e;
  Node* i = bad.placeholder("i", {2, 2}, DType::Int64);
  e = error_of([&] { bad.call("linalg_eig", {i}); });
  EXPECT_TRUE(has(e, "Expected a floating point or complex tensor as input. Got int64")) << e;

  Graph d;
  Node* y = d.placeholder("y", {3, 3}, DType::Float64);
  d.output({d.call("abs", {d.call("linalg_eigvals", {y})})});
  e = error_of([&] { vjp(d, {Tensor::randn({3, 3}, DType::Float64, 1)}, {Tensor::ones({3}, DType::Float64)}); });
  EXPECT_TRUE(has(e, "the derivative of linalg.eig / linalg.eigvals is not implemented")) << e;

  Graph g;
  Node* a = g.placeholder("a", {4, 4});
  Node* ev = g.call("linalg_eigvals", {g.call("relu", {a})});
  g.output({g.call("abs", {ev})});
  verify(g);
  std::vector<Tensor> in{Tensor::randn({4, 4}, DType::Float32, 5)};
  std::vector<Tensor> want = reference(g, in);
  CompiledGraph cg = cpu_compiler().compile(g);
  std::vector<Tensor> got = cg.run(in);
  EXPECT_TRUE(got[0].equal(want[0]));
  EXPECT_GE(cg.num_fallbacks(), 2u) << cg.summary();
  EXPECT_TRUE(has(cg.summary(), "linalg_eigvals")) << cg.summary();
}
