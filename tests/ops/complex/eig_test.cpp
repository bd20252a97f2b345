// linalg_eig / linalg_eigvals (core/ops/linalg/eig.cpp): LAPACK's geev with complex results.
// A V = V diag(λ) for random matrices with complex eigenvalue pairs (float32 and float64,
// batched) and for complex matrices (cgeev / zgeev), unit-norm eigenvectors, known spectra,
// eigvals equal to eig's values, torch's errors, the compiled path running them as interpreter
// fallbacks, and the VJPs (torch's linalg_eig_backward) against central differences of functions
// that do not depend on the eigenvectors' phases or the eigenvalues' order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <functional>
#include <string>
#include <vector>

#include "core/functional/functional.h"
#include "core/graph/graph.h"
#include "core/graph/verifier.h"
#include "core/interpreter/interpreter.h"
#include "tests/ops/complex/complex_checks.h"
#include "tests/support/compiled_check.h"
#include "tests/support/interp_helpers.h"

using namespace stax;
using namespace stax::test;
using cd = std::complex<double>;

namespace {

std::vector<cd> values(const Tensor& t) { return complex_values(t); }

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

// Complex input matrices (cgeev / zgeev): A V = V diag(λ), unit norm, the largest component of
// each vector real, eigvals equal to eig's values; a Hermitian matrix's eigenvalues are real.
TEST(LinalgEig, ComplexInputs) {
  for (DType dt : {DType::Complex64, DType::Complex128}) {
    double tol = dt == DType::Complex64 ? 1e-4 : 1e-11;
    int64_t n = 4, nb = 2;
    Tensor a = Tensor::randn({nb, n, n}, dt, 11);
    std::vector<cd> av_in = values(a);
    std::vector<Tensor> r = eig_of(a);
    ASSERT_EQ(r[0].dtype(), dt);
    ASSERT_EQ(r[1].dtype(), dt);
    ASSERT_EQ(r[1].sizes(), (Shape{nb, n, n}));
    std::vector<cd> l = values(r[0]), v = values(r[1]), l2 = values(r[2]);
    for (int64_t b = 0; b < nb; ++b)
      for (int64_t j = 0; j < n; ++j) {
        cd lam = l[b * n + j];
        EXPECT_EQ(lam, l2[b * n + j]) << "eigvals = eig's values";
        double norm = 0, biggest = -1;
        cd top;
        for (int64_t i = 0; i < n; ++i) {
          cd sum = 0;
          for (int64_t k = 0; k < n; ++k) sum += av_in[b * n * n + i * n + k] * v[b * n * n + k * n + j];
          cd vij = v[b * n * n + i * n + j];
          EXPECT_LE(std::abs(sum - lam * vij), tol * (1 + std::abs(lam)))
              << dtype_name(dt) << " batch " << b << " vector " << j << " row " << i;
          norm += std::norm(vij);
          if (std::abs(vij) > biggest) biggest = std::abs(vij), top = vij;
        }
        EXPECT_NEAR(norm, 1.0, tol) << "unit norm";
        EXPECT_NEAR(top.imag(), 0.0, tol) << "the largest component is real";
      }
  }
  // H = [[2, 1-i], [1+i, 3]]: eigenvalues 1 and 4.
  Tensor h = Tensor::empty({2, 2}, DType::Complex128);
  Tensor hp = h.as_real_view();
  std::vector<double> parts{2, 0, 1, -1, 1, 1, 3, 0};
  for (int i = 0; i < 8; ++i) hp.set_double(i, parts[static_cast<size_t>(i)]);
  std::vector<cd> hl = values(eig_of(h)[0]);
  std::sort(hl.begin(), hl.end(), [](cd x, cd y) { return x.real() < y.real(); });
  EXPECT_NEAR(std::abs(hl[0] - cd(1, 0)), 0, 1e-14);
  EXPECT_NEAR(std::abs(hl[1] - cd(4, 0)), 0, 1e-14);
}

namespace {

Node* real_view(Graph& g, Node* z) { return g.call("view_as_real", {z}); }
Node* unsq(Graph& g, Node* x, int64_t d) { return g.call("unsqueeze", {x, d}); }

}  // namespace

// torch's linalg_eig_backward against central differences, real (float64) and complex
// (complex128) inputs, batched: functions of the eigenvalues symmetric in their order, and of the
// eigenvectors that neither their phases nor the columns' order change (|V| weighted by |λ|,
// V diag(λ) V^H); linalg_eigvals' rule; and _stax_complex_solve's (both forms).
TEST(LinalgEig, VjpsMatchCentralDifferences) {
  using V64 = std::vector<int64_t>;
  using Fn = std::function<Node*(Graph&, Node*)>;
  std::vector<std::pair<const char*, Fn>> fns{
      {"Σ λ² + λ³ (eig)",
       [](Graph& g, Node* a) {
         Node* l = g.call("getitem", {g.call("linalg_eig", {a}), int64_t{0}});
         Node* p = g.call("add.Tensor", {g.call("pow.Tensor_Scalar", {l, 2}),
                                         g.call("pow.Tensor_Scalar", {l, 3})});
         return real_view(g, g.call("sum.dim_IntList", {p, V64{-1}}));
       }},
      {"Σ exp(λ) (eigvals)",
       [](Graph& g, Node* a) {
         Node* l = g.call("linalg_eigvals", {a});
         return real_view(g, g.call("sum.dim_IntList", {g.call("exp", {l}), V64{-1}}));
       }},
      {"Σ_j |V_ij| |λ_j|",
       [](Graph& g, Node* a) {
         Node* e = g.call("linalg_eig", {a});
         Node* l = g.call("getitem", {e, int64_t{0}});
         Node* v = g.call("getitem", {e, int64_t{1}});
         Node* w = g.call("mul.Tensor", {g.call("abs", {v}), unsq(g, g.call("abs", {l}), -2)});
         return g.call("sum.dim_IntList", {w, V64{-1}});
       }},
      {"V diag(λ) V^H",
       [](Graph& g, Node* a) {
         Node* e = g.call("linalg_eig", {a});
         Node* l = g.call("getitem", {e, int64_t{0}});
         Node* v = g.call("getitem", {e, int64_t{1}});
         Node* vl = g.call("mul.Tensor", {v, unsq(g, l, -2)});
         Node* vh = g.call("conj_physical", {g.call("transpose.int", {v, -2, -1})});
         return real_view(g, g.call("bmm", {vl, vh}));
       }},
  };
  for (DType dt : {DType::Float64, DType::Complex128})
    for (auto& [name, f] : fns) {
      Graph g;
      Node* a = g.placeholder("a", {2, 4, 4}, dt);
      g.output({f(g, a)});
      check_complex_vjp(std::string(name) + " " + std::string(dtype_name(dt)), g,
                {Tensor::randn({2, 4, 4}, dt, 13)}, 1e-5);
    }
  for (bool adjoint : {false, true}) {
    Graph g;
    Node* a = g.placeholder("a", {2, 3, 3}, DType::Complex128);
    Node* b = g.placeholder("b", {2, 3, 2}, DType::Complex128);
    g.output({real_view(g, g.call("_stax_complex_solve", {a, b, adjoint}))});
    check_complex_vjp(adjoint ? "solve A^H X = B" : "solve A X = B", g,
              {Tensor::randn({2, 3, 3}, DType::Complex128, 3),
               Tensor::randn({2, 3, 2}, DType::Complex128, 4)},
              1e-6);
  }
}
