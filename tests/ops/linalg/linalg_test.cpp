// The linear-algebra ops (core/ops/linalg, docs/linalg.md). Values are checked by the identities
// that define them (P L U = A, Q R = A with Q orthonormal and R upper triangular, A V = V diag(L),
// U diag(S) Vh = A, L L^T = A, A X = B, a 3 x 3 determinant by its formula) in float64 and
// float32; torch's own values are the OpInfo test's (tests/aten/opinfo.py). Gradients are
// checked against central differences of the interpreter (float64).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/functional/functional.h"
#include "core/graph/graph.h"
#include "core/graph/parser.h"
#include "core/graph/verifier.h"
#include "core/interpreter/interpreter.h"
#include "tests/support/compiled_check.h"
#include "tests/ops/linalg/linalg_test_support.h"
#include "tests/support/interp_helpers.h"

using namespace stax;
using namespace stax::test;
using namespace stax::test::linalg;

namespace {

using Ints = std::vector<int64_t>;

// Row-major product of the last two dims, in double, batch-broadcast-free (same batch).
std::vector<double> matmul(const Tensor& a, const Tensor& b) {
  int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
  int64_t batch = a.numel() / std::max<int64_t>(1, m * k);
  std::vector<double> out(static_cast<size_t>(batch * m * n), 0.0);
  for (int64_t p = 0; p < batch; ++p)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t l = 0; l < k; ++l)
          s += a.get_double(p * m * k + i * k + l) * b.get_double(p * k * n + l * n + j);
        out[static_cast<size_t>(p * m * n + i * n + j)] = s;
      }
  return out;
}

void expect_close(const std::vector<double>& got, const Tensor& want, double tol,
                  const std::string& what) {
  ASSERT_EQ(static_cast<int64_t>(got.size()), want.numel()) << what;
  for (int64_t i = 0; i < want.numel(); ++i)
    ASSERT_NEAR(got[static_cast<size_t>(i)], want.get_double(i), tol) << what << " at " << i;
}

// The transpose of the last two dims (contiguous).
Tensor mT(const Tensor& t) {
  Shape s = t.sizes(), st = t.strides();
  std::swap(s[s.size() - 1], s[s.size() - 2]);
  std::swap(st[st.size() - 1], st[st.size() - 2]);
  return t.as_strided(s, st, t.storage_offset()).contiguous();
}

Tensor eye(int64_t n) {
  Tensor e = Tensor::zeros({n, n}, DType::Float64);
  for (int64_t i = 0; i < n; ++i) e.set_double(i * n + i, 1.0);
  return e;
}

std::vector<Tensor> run(Graph& g, const std::vector<Tensor>& in) {
  verify(g);
  return interpret(g, in);
}

}  // namespace

TEST(Linalg, LuFactorsReassembleTheMatrix) {
  for (Shape s : {Shape{4, 4}, Shape{2, 5, 3}, Shape{3, 6}}) {
    Graph g;
    Node* a = g.placeholder("a", s, DType::Float64);
    Node* lu = g.call("linalg_lu", {a});
    Node* f = g.call("linalg_lu_factor_ex", {a});
    g.output({elem(g, lu, 0), elem(g, lu, 1), elem(g, lu, 2), elem(g, f, 1),
              elem(g, f, 2)});
    Tensor in = randn(s, DType::Float64, 3);
    std::vector<Tensor> out = run(g, {in});
    std::vector<double> lu_prod = matmul(out[1], out[2]);
    Tensor plu = Tensor::from_vector(out[1].sizes().size() == 3
                                         ? Shape{s[0], s[1], s[2]} : Shape{s[0], s[1]},
                                     lu_prod);
    expect_close(matmul(out[0], plu), in, 1e-12, "P L U = A " + shape_str(s));
    EXPECT_EQ(out[3].dtype(), DType::Int32);
    for (int64_t i = 0; i < out[3].numel(); ++i) {
      EXPECT_GE(out[3].get_int(i), 1);
      EXPECT_LE(out[3].get_int(i), s[s.size() - 2]);
    }
    for (int64_t i = 0; i < out[4].numel(); ++i) EXPECT_EQ(out[4].get_int(i), 0);
  }
}

TEST(Linalg, DeterminantsMatchTheFormulaAndSlogdet) {
  Graph g;
  Node* a = g.placeholder("a", {2, 3, 3}, DType::Float64);
  Node* sl = g.call("_linalg_slogdet", {a});
  g.output({elem(g, g.call("_linalg_det", {a}), 0), elem(g, sl, 0), elem(g, sl, 1)});
  Tensor in = randn({2, 3, 3}, DType::Float64, 5);
  std::vector<Tensor> out = run(g, {in});
  for (int64_t b = 0; b < 2; ++b) {
    auto x = [&](int i, int j) { return in.get_double(b * 9 + i * 3 + j); };
    double det = x(0, 0) * (x(1, 1) * x(2, 2) - x(1, 2) * x(2, 1)) -
                 x(0, 1) * (x(1, 0) * x(2, 2) - x(1, 2) * x(2, 0)) +
                 x(0, 2) * (x(1, 0) * x(2, 1) - x(1, 1) * x(2, 0));
    EXPECT_NEAR(out[0].get_double(b), det, 1e-12);
    EXPECT_EQ(out[1].get_double(b), det > 0 ? 1.0 : -1.0);
    EXPECT_NEAR(out[2].get_double(b), std::log(std::fabs(det)), 1e-12);
  }
}

TEST(Linalg, SolveAndInverseSatisfyTheirEquations) {
  Graph g;
  Node* a = g.placeholder("a", {2, 4, 4}, DType::Float64);
  Node* b = g.placeholder("b", {4, 3}, DType::Float64);   // broadcast over A's batch
  Node* br = g.placeholder("br", {2, 3, 4}, DType::Float64);
  Node* v = g.placeholder("v", {2, 4}, DType::Float64);   // a batch of vectors
  g.output({elem(g, g.call("_linalg_solve_ex", {a, b}), 0),
            elem(g, g.call("_linalg_solve_ex", {a, br}, {{"left", false}}), 0),
            elem(g, g.call("_linalg_solve_ex", {a, v}), 0),
            elem(g, g.call("linalg_inv_ex", {a}), 0)});
  Tensor ta = well_conditioned({2, 4, 4}, DType::Float64, 1), tb = randn({4, 3}, DType::Float64, 2);
  Tensor tbr = randn({2, 3, 4}, DType::Float64, 3), tv = randn({2, 4}, DType::Float64, 4);
  std::vector<Tensor> out = run(g, {ta, tb, tbr, tv});
  ASSERT_EQ(out[0].sizes(), (Shape{2, 4, 3}));
  ASSERT_EQ(out[2].sizes(), (Shape{2, 4}));
  Tensor tb2 = Tensor::zeros({2, 4, 3}, DType::Float64);
  for (int64_t i = 0; i < tb2.numel(); ++i) tb2.set_double(i, tb.get_double(i % 12));
  expect_close(matmul(ta, out[0]), tb2, 1e-12, "A X = B");
  expect_close(matmul(out[1], ta), tbr, 1e-12, "X A = B");
  expect_close(matmul(ta, out[2].as_strided({2, 4, 1}, {4, 1, 1}, 0)), tv, 1e-12, "A x = v");
  Tensor eyes = Tensor::zeros({2, 4, 4}, DType::Float64);
  for (int64_t i = 0; i < 8; ++i) eyes.set_double(i * 4 + i % 4, 1.0);
  expect_close(matmul(ta, out[3]), eyes, 1e-12, "A inv(A) = I");
}

TEST(Linalg, CholeskyQrEighAndSvdSatisfyTheirDefinitions) {
  for (DType t : {DType::Float64, DType::Float32}) {
    double tol = t == DType::Float64 ? 1e-11 : 2e-4;
    Tensor x = randn({5, 3}, t, 7);
    Tensor spd = Tensor::from_vector({3, 3}, matmul(mT(x), x)).to(t);
    for (int64_t i = 0; i < 3; ++i) spd.set_double(i * 4, spd.get_double(i * 4) + 1.0);
    Graph g;
    Node* a = g.placeholder("a", {3, 3}, t);
    Node* w = g.placeholder("w", {5, 3}, t);
    Node* wide = g.placeholder("wide", {3, 5}, t);
    Node* qr = g.call("linalg_qr", {w});
    Node* eh = g.call("_linalg_eigh", {a});
    Node* sv = g.call("_linalg_svd", {wide});
    g.output({elem(g, g.call("linalg_cholesky_ex", {a}), 0), elem(g, qr, 0),
              elem(g, qr, 1), elem(g, eh, 0), elem(g, eh, 1), elem(g, sv, 0),
              elem(g, sv, 1), elem(g, sv, 2)});
    Tensor tw = randn({5, 3}, t, 8), twide = randn({3, 5}, t, 9);
    std::vector<Tensor> o = run(g, {spd, tw, twide});
    std::string dt(dtype_name(t));
    expect_close(matmul(o[0], mT(o[0])), spd, tol * 10, "L L^T = A " + dt);
    EXPECT_EQ(o[0].get_double(1), 0.0);  // the upper triangle is zeroed
    expect_close(matmul(o[1], o[2]), tw, tol, "Q R = A " + dt);
    expect_close(matmul(mT(o[1]), o[1]), eye(3), tol, "Q^T Q = I " + dt);
    EXPECT_EQ(o[2].get_double(3), 0.0);  // R is upper triangular
    // A V = V diag(L), eigenvalues ascending.
    Tensor vl = o[4].to(DType::Float64).clone();
    for (int64_t i = 0; i < 9; ++i) vl.set_double(i, vl.get_double(i) * o[3].get_double(i % 3));
    expect_close(matmul(spd, o[4]), vl, tol * 10, "A V = V L " + dt);
    EXPECT_LE(o[3].get_double(0), o[3].get_double(1));
    // U diag(S) Vh = A, singular values descending.
    Tensor us = o[5].to(DType::Float64).clone();
    for (int64_t i = 0; i < 9; ++i) us.set_double(i, us.get_double(i) * o[6].get_double(i % 3));
    expect_close(matmul(us, o[7]), twide, tol, "U S Vh = A " + dt);
    EXPECT_GE(o[6].get_double(0), o[6].get_double(1));
    EXPECT_EQ(o[7].sizes(), (Shape{3, 5}));
  }
}

TEST(Linalg, QrModesAndFullSvdShapes) {
  Graph g;
  Node* a = g.placeholder("a", {2, 5, 3}, DType::Float64);
  Node* c = g.call("linalg_qr", {a, std::string("complete")});
  Node* r = g.call("linalg_qr", {a, std::string("r")});
  Node* s = g.call("_linalg_svd", {a, true});
  Node* sv = g.call("_linalg_svd", {a, false, false});
  g.output({elem(g, c, 0), elem(g, c, 1), elem(g, r, 0), elem(g, r, 1), elem(g, s, 0),
            elem(g, s, 2), elem(g, sv, 1)});
  std::vector<Tensor> o = run(g, {randn({2, 5, 3}, DType::Float64, 11)});
  EXPECT_EQ(o[0].sizes(), (Shape{2, 5, 5}));
  EXPECT_EQ(o[1].sizes(), (Shape{2, 5, 3}));
  EXPECT_EQ(o[2].sizes(), (Shape{0}));
  EXPECT_EQ(o[3].sizes(), (Shape{2, 3, 3}));
  EXPECT_EQ(o[4].sizes(), (Shape{2, 5, 5}));
  EXPECT_EQ(o[5].sizes(), (Shape{2, 3, 3}));
  for (int64_t i = 0; i < 6; ++i) EXPECT_NEAR(o[6].get_double(i), o[6].get_double(i), 0);
  expect_close(matmul(mT(o[0]), o[0]), Tensor::from_vector({2, 5, 5}, [] {
                 std::vector<double> e(50, 0.0);
                 for (int b = 0; b < 2; ++b)
                   for (int i = 0; i < 5; ++i) e[b * 25 + i * 6] = 1;
                 return e;
               }()), 1e-12, "complete Q orthogonal");
}

TEST(Linalg, TriangularSolvesAndCholeskySolve) {
  Graph g;
  Node* a = g.placeholder("a", {4, 4}, DType::Float64);
  Node* b = g.placeholder("b", {4, 2}, DType::Float64);
  Node* upper = g.call("triu", {a});
  Node* x = g.call("linalg_solve_triangular", {upper, b}, {{"upper", true}});
  Node* ts = g.call("triangular_solve", {b, a, true, true});  // A^T X = B, A upper
  Node* l = elem(g, g.call("linalg_cholesky_ex", {a}), 0);
  g.output({upper, x, elem(g, ts, 0), g.call("cholesky_solve", {b, l}),
            g.call("cholesky_inverse", {l})});
  Tensor ta = well_conditioned({4, 4}, DType::Float64, 2);
  Tensor spd = Tensor::from_vector({4, 4}, matmul(mT(ta), ta));
  Tensor tb = randn({4, 2}, DType::Float64, 3);
  std::vector<Tensor> o = run(g, {spd, tb});
  expect_close(matmul(o[0], o[1]), tb, 1e-10, "U X = B");
  expect_close(matmul(mT(o[0]), o[2]), tb, 1e-10, "U^T X = B");
  expect_close(matmul(spd, o[3]), tb, 1e-9, "cholesky_solve");
  expect_close(matmul(spd, o[4]), eye(4), 1e-9, "cholesky_inverse");
}

TEST(Linalg, SingularAndIndefiniteInputsReportInfo) {
  Graph g;
  Node* a = g.placeholder("a", {2, 3, 3}, DType::Float64);
  g.output({elem(g, g.call("linalg_lu_factor_ex", {a}), 2),
            elem(g, g.call("linalg_cholesky_ex", {a}), 1),
            elem(g, g.call("_linalg_det", {a}), 0),
            elem(g, g.call("linalg_inv_ex", {a}), 1)});
  // Matrix 0 is singular (two equal rows), matrix 1 is the identity with a negative entry.
  Tensor in = Tensor::from_vector({2, 3, 3}, std::vector<double>{1, 2, 3, 1, 2, 3, 4, 5, 7,  //
                                                                 1, 0, 0, 0, -1, 0, 0, 0, 1});
  std::vector<Tensor> o = run(g, {in});
  EXPECT_GT(o[0].get_int(0), 0);  // getrf: U(i, i) = 0
  EXPECT_EQ(o[0].get_int(1), 0);
  EXPECT_EQ(o[1].get_int(1), 2);  // potrf: the leading minor of order 2 is not positive
  EXPECT_EQ(o[2].get_double(0), 0.0);
  EXPECT_EQ(o[2].get_double(1), -1.0);
  EXPECT_GT(o[3].get_int(0), 0);
}

TEST(Linalg, BadInputsAreClearErrors) {
  auto fails = [](const std::function<void(Graph&)>& f, const std::string& part) {
    Graph g;
    try {
      f(g);
      ADD_FAILURE() << "no error; expected " << part;
    } catch (const Error& e) {
      EXPECT_TRUE(has(e.what(), part)) << e.what();
    }
  };
  fails([](Graph& g) { g.call("_linalg_det", {g.placeholder("a", {3, 4}, DType::Float64)}); },
        "linalg.det: A must be batches of square matrices, but they are 3 by 4 matrices");
  fails([](Graph& g) { g.call("linalg_qr", {g.placeholder("a", {3, 3}, DType::Int64)}); },
        "Expected a floating point or complex tensor as input. Got int64");
  fails([](Graph& g) { g.call("linalg_inv_ex", {g.placeholder("a", {3}, DType::Float32)}); },
        "must be batches of square matrices");
  fails([](Graph& g) {
    g.call("_linalg_solve_ex", {g.placeholder("a", {3, 3}), g.placeholder("b", {4, 2})});
  }, "Incompatible shapes of A and B");
  // A vector B (A's shape without its last dim) is a column: XA = B cannot take it (torch).
  fails([](Graph& g) {
    g.call("_linalg_solve_ex", {g.placeholder("a", {2, 2, 2}, DType::Float64),
                                g.placeholder("b", {2, 2}, DType::Float64)},
           {{"left", false}});
  }, "Incompatible shapes of A and B for the equation XA = B (2x2 and 2x1)");
  fails([](Graph& g) {
    g.call("linalg_qr", {g.placeholder("a", {3, 3}), std::string("thin")});
  }, "qr received unrecognized mode 'thin'");
  fails([](Graph& g) {
    g.call("_linalg_svd", {g.placeholder("a", {3, 3}, DType::Complex64)});
  }, "does not support complex tensors");
}

TEST(Linalg, CompiledGraphsRunTheKernelsAsCountedFallbacks) {
  Graph g;
  Node* a = g.placeholder("a", {2, 4, 4});
  Node* b = g.placeholder("b", {2, 4, 3});
  Node* x = elem(g, g.call("_linalg_solve_ex", {a, b}), 0);
  Node* s = elem(g, g.call("_linalg_svd", {g.call("relu", {a})}), 1);
  Node* d = elem(g, g.call("_linalg_det", {a}), 0);
  g.output({g.call("add.Tensor", {x, b}), s, g.call("mul.Tensor", {d, d})});
  verify(g);
  std::vector<Tensor> in{well_conditioned({2, 4, 4}, DType::Float32, 1),
                         randn({2, 4, 3}, DType::Float32, 2)};
  std::vector<Tensor> want = reference(g, in);
  CompiledGraph cg = cpu_compiler().compile(g);
  std::vector<Tensor> got = cg.run(in);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i].equal(want[i])) << i;
  EXPECT_GE(cg.num_fallbacks(), 3u) << cg.summary();
  EXPECT_TRUE(has(cg.summary(), "_stax_linalg_svd")) << cg.summary();
  EXPECT_GE(cg.num_kernels(), 1u) << cg.summary();  // relu, add, mul
}

// Gradients through every rule against central differences (float64). Functions of symmetric
// input (eigh, cholesky) are composed with X -> X + X^T (+ a shift), as torch's gradcheck
// wrappers do, since the ops read one triangle only.
TEST(Linalg, VjpsMatchCentralDifferences) {
  struct Case {
    const char* name;
    std::vector<Shape> shapes;
    std::function<Node*(Graph&, const std::vector<Node*>&)> f;
  };
  auto sym = [](Graph& g, Node* x, double shift) {
    Node* s = g.call("add.Tensor", {x, g.call("transpose.int", {x, int64_t{-2}, int64_t{-1}})});
    int64_t n = x->shape().back();
    return g.call("add.Tensor", {s, g.call("mul.Scalar", {g.call("eye", {n}, {{"dtype", DType::Float64}}), shift})});
  };
  auto item = [](Graph& g, Node* t, int64_t i) { return elem(g, t, i); };
  std::vector<Case> cases{
      {"det", {{2, 3, 3}}, [&](Graph& g, auto in) { return item(g, g.call("_linalg_det", {in[0]}), 0); }},
      {"slogdet", {{3, 3}}, [&](Graph& g, auto in) { return item(g, g.call("_linalg_slogdet", {in[0]}), 1); }},
      {"solve left", {{2, 3, 3}, {3, 2}},
       [&](Graph& g, auto in) { return item(g, g.call("_linalg_solve_ex", {in[0], in[1]}), 0); }},
      {"solve right vector", {{3, 3}, {2, 3}},
       [&](Graph& g, auto in) {
         return item(g, g.call("_linalg_solve_ex", {in[0], in[1]}, {{"left", false}}), 0);
       }},
      {"inv", {{3, 3}}, [&](Graph& g, auto in) { return item(g, g.call("linalg_inv_ex", {in[0]}), 0); }},
      {"cholesky", {{3, 3}},
       [&](Graph& g, auto in) { return item(g, g.call("linalg_cholesky_ex", {sym(g, in[0], 6.0)}), 0); }},
      {"cholesky upper", {{2, 3, 3}},
       [&](Graph& g, auto in) {
         return item(g, g.call("linalg_cholesky_ex", {sym(g, in[0], 6.0)}, {{"upper", true}}), 0);
       }},
      {"qr Q tall", {{4, 3}}, [&](Graph& g, auto in) { return item(g, g.call("linalg_qr", {in[0]}), 0); }},
      {"qr R tall", {{4, 3}}, [&](Graph& g, auto in) { return item(g, g.call("linalg_qr", {in[0]}), 1); }},
      {"qr Q wide", {{3, 4}}, [&](Graph& g, auto in) { return item(g, g.call("linalg_qr", {in[0]}), 0); }},
      {"qr R wide", {{3, 4}}, [&](Graph& g, auto in) { return item(g, g.call("linalg_qr", {in[0]}), 1); }},
      {"eigh values", {{4, 4}},
       [&](Graph& g, auto in) { return item(g, g.call("_linalg_eigh", {sym(g, in[0], 0.0)}), 0); }},
      {"eigh vectors", {{3, 3}},
       [&](Graph& g, auto in) { return item(g, g.call("_linalg_eigh", {sym(g, in[0], 0.0)}), 1); }},
      {"svd S", {{4, 3}}, [&](Graph& g, auto in) { return item(g, g.call("_linalg_svd", {in[0]}), 1); }},
      {"svd U tall", {{4, 3}}, [&](Graph& g, auto in) { return item(g, g.call("_linalg_svd", {in[0]}), 0); }},
      {"svd Vh tall", {{4, 3}}, [&](Graph& g, auto in) { return item(g, g.call("_linalg_svd", {in[0]}), 2); }},
      {"svd U wide", {{3, 5}}, [&](Graph& g, auto in) { return item(g, g.call("_linalg_svd", {in[0]}), 0); }},
      {"svd Vh wide", {{3, 5}}, [&](Graph& g, auto in) { return item(g, g.call("_linalg_svd", {in[0]}), 2); }},
      {"svd U full", {{3, 3}}, [&](Graph& g, auto in) { return item(g, g.call("_linalg_svd", {in[0], true}), 0); }},
      {"solve_triangular upper left", {{3, 3}, {3, 2}},
       [&](Graph& g, auto in) {
         return g.call("linalg_solve_triangular", {in[0], in[1]}, {{"upper", true}});
       }},
      {"solve_triangular lower right unit", {{2, 3, 3}, {2, 3}},
       [&](Graph& g, auto in) {
         return g.call("linalg_solve_triangular", {in[0], in[1]},
                       {{"upper", false}, {"left", false}, {"unitriangular", true}});
       }},
      {"cholesky_solve", {{3, 2}, {3, 3}},
       [&](Graph& g, auto in) {
         Node* l = g.call("tril", {g.call("add.Tensor", {in[1], g.call("mul.Scalar", {g.call("eye", {int64_t{3}}, {{"dtype", DType::Float64}}), 4.0})})});
         return g.call("cholesky_solve", {in[0], l});
       }},
      {"cholesky_inverse upper", {{3, 3}},
       [&](Graph& g, auto in) {
         Node* u = g.call("triu", {g.call("add.Tensor", {in[0], g.call("mul.Scalar", {g.call("eye", {int64_t{3}}, {{"dtype", DType::Float64}}), 4.0})})});
         return g.call("cholesky_inverse", {u, true});
       }},
      {"pinv tall", {{4, 3}},
       [&](Graph& g, auto in) { return g.call("linalg_pinv.atol_rtol_tensor", {in[0]}); }},
      {"pinv wide hermitian", {{3, 3}},
       [&](Graph& g, auto in) {
         return g.call("linalg_pinv.atol_rtol_tensor", {sym(g, in[0], 0.0)}, {{"hermitian", true}});
       }},
      {"pinv wide", {{2, 5}},
       [&](Graph& g, auto in) { return g.call("linalg_pinv.atol_rtol_tensor", {in[0]}); }},
      {"matrix_sqrth", {{3, 3}},
       [&](Graph& g, auto in) { return g.call("linalg_matrix_sqrth", {sym(g, in[0], 6.0)}); }},
      {"polar U", {{4, 3}}, [&](Graph& g, auto in) { return item(g, g.call("linalg_polar", {in[0]}), 0); }},
      {"polar H", {{4, 3}}, [&](Graph& g, auto in) { return item(g, g.call("linalg_polar", {in[0]}), 1); }},
      {"lstsq", {{5, 3}, {5, 2}},
       [&](Graph& g, auto in) { return item(g, g.call("linalg_lstsq", {in[0], in[1]}), 0); }},
      {"matrix_exp", {{2, 3, 3}}, [&](Graph& g, auto in) { return g.call("linalg_matrix_exp", {in[0]}); }},
      {"lu_factor square", {{3, 3}},
       [&](Graph& g, auto in) { return elem(g, g.call("linalg_lu_factor_ex", {in[0]}), 0); }},
      {"lu_factor wide", {{3, 5}},
       [&](Graph& g, auto in) { return elem(g, g.call("linalg_lu_factor_ex", {in[0]}), 0); }},
      {"lu_factor tall", {{5, 3}},
       [&](Graph& g, auto in) { return elem(g, g.call("linalg_lu_factor_ex", {in[0]}), 0); }},
  };
  for (bool left : {true, false})
    for (bool adjoint : {false, true})
      cases.push_back({left ? (adjoint ? "lu_solve left adjoint" : "lu_solve left")
                            : (adjoint ? "lu_solve right adjoint" : "lu_solve right"),
                       {{3, 3}, left ? Shape{2, 3, 2} : Shape{2, 3}},
                       [=](Graph& g, auto in) {
                         Node* f = g.call("linalg_lu_factor_ex", {in[0]});
                         return g.call("linalg_lu_solve", {elem(g, f, 0), elem(g, f, 1), in[1]},
                                       {{"left", left}, {"adjoint", adjoint}});
                       }});
  for (const Case& k : cases) {
    Graph g;
    std::vector<Node*> in;
    std::vector<Tensor> vals;
    for (size_t i = 0; i < k.shapes.size(); ++i) {
      in.push_back(g.placeholder("x" + std::to_string(i), k.shapes[i], DType::Float64));
      const Shape& s = k.shapes[i];
      bool square = s.size() >= 2 && s[s.size() - 1] == s[s.size() - 2];
      vals.push_back(square ? well_conditioned(s, DType::Float64, 10 + i)
                            : randn(s, DType::Float64, 10 + i));
    }
    Node* y = k.f(g, in);
    g.output({y});
    verify(g);
    Tensor u = randn(y->shape(), DType::Float64, 6);
    VjpResult r = vjp(g, vals, {u});
    ASSERT_EQ(r.grads.size(), vals.size()) << k.name;
    const double h = 1e-6;
    for (size_t v = 0; v < vals.size(); ++v) {
      for (int64_t i = 0; i < vals[v].numel(); ++i) {
        std::vector<Tensor> p = vals, m = vals;
        p[v] = vals[v].clone();
        m[v] = vals[v].clone();
        p[v].set_double(i, vals[v].get_double(i) + h);
        m[v].set_double(i, vals[v].get_double(i) - h);
        Tensor fp = interpret(g, p)[0], fm = interpret(g, m)[0];
        double d = 0;
        for (int64_t j = 0; j < u.numel(); ++j)
          d += u.get_double(j) * (fp.get_double(j) - fm.get_double(j)) / (2 * h);
        EXPECT_NEAR(r.grads[v].get_double(i), d, 1e-5 * std::max(1.0, std::fabs(d)))
            << k.name << " input " << v << " element " << i;
      }
    }
  }
}

// The rules that cannot differentiate refuse, naming the op, rather than give a zero gradient.
TEST(Linalg, UnsupportedDerivativesAreRefused) {
  Graph g;
  Node* a = g.placeholder("a", {3, 3}, DType::Float64);
  Node* tau = g.placeholder("tau", {2}, DType::Float64);
  g.output({g.call("linalg_householder_product", {a, tau})});
  Tensor in = well_conditioned({3, 3}, DType::Float64, 1);
  try {
    vjp(g, {in, randn({2}, DType::Float64, 2)}, {in});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "derivative of linalg_householder_product is not implemented"))
        << e.what();
  }
  Graph h;
  Node* b = h.placeholder("b", {3, 3}, DType::Float64);
  h.output({elem(h, h.call("linalg_qr", {b, std::string("r")}), 1)});
  try {
    vjp(h, {in}, {in});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "not computed when mode='r'")) << e.what();
  }
}

// torch.linalg.inv as make_fx prints it: the check's API name is an unquoted dotted string, and
// _linalg_check_errors (which returns nothing) becomes a check on the output (it raises on a
// singular input: tests/ops/linalg/linalg_errors_test.cpp).
TEST(Linalg, TracedInverseWithItsErrorCheckParsesAndRuns) {
  const char* text =
      "graph():\n"
      "    %a_1 : [num_users=1] = placeholder[target=a_1]\n"
      "    %linalg_inv_ex : [num_users=2] = call_function[target=torch.ops.aten.linalg_inv_ex."
      "default](args = (%a_1,), kwargs = {})\n"
      "    %getitem : [num_users=1] = call_function[target=operator.getitem](args = "
      "(%linalg_inv_ex, 0), kwargs = {})\n"
      "    %getitem_1 : [num_users=1] = call_function[target=operator.getitem](args = "
      "(%linalg_inv_ex, 1), kwargs = {})\n"
      "    %_linalg_check_errors : [num_users=0] = call_function[target=torch.ops.aten."
      "_linalg_check_errors.default](args = (%getitem_1, torch.linalg.inv), kwargs = {is_matrix: "
      "True})\n"
      "    return getitem\n";
  ParseOptions opts;
  opts.placeholder_meta = {{"a_1", TensorMeta::contiguous({3, 3}, DType::Float64)}};
  Graph g = parse_graph(text, "inv.stax", opts);
  Tensor a = well_conditioned({3, 3}, DType::Float64, 3);
  std::vector<Tensor> out = run(g, {a});
  expect_close(matmul(a, out[0]), eye(3), 1e-12, "A inv(A) = I");
}

TEST(Linalg, LdlSolveAndLeastSquares) {
  Graph g;
  Node* a = g.placeholder("a", {4, 4}, DType::Float64);
  Node* b = g.placeholder("b", {4, 2}, DType::Float64);
  Node* t = g.placeholder("t", {6, 3}, DType::Float64);
  Node* tb = g.placeholder("tb", {6, 2}, DType::Float64);
  Node* f = g.call("linalg_ldl_factor_ex", {a});
  Node* ls = g.call("linalg_lstsq", {t, tb}, {{"driver", std::string("gelsd")}});
  g.output({g.call("linalg_ldl_solve", {elem(g, f, 0), elem(g, f, 1), b}), elem(g, f, 2),
            elem(g, ls, 0), elem(g, ls, 1), elem(g, ls, 2), elem(g, ls, 3)});
  // A symmetric indefinite matrix (Bunch-Kaufman pivots), a tall full-rank system.
  Tensor x = randn({4, 4}, DType::Float64, 21);
  Tensor sym = Tensor::zeros({4, 4}, DType::Float64);
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 4; ++j) sym.set_double(i * 4 + j, x.get_double(i * 4 + j) + x.get_double(j * 4 + i));
  Tensor rb = randn({4, 2}, DType::Float64, 22), rt = randn({6, 3}, DType::Float64, 23);
  Tensor rtb = randn({6, 2}, DType::Float64, 24);
  std::vector<Tensor> o = run(g, {sym, rb, rt, rtb});
  expect_close(matmul(sym, o[0]), rb, 1e-10, "A X = B through LDL^T");
  EXPECT_EQ(o[1].get_int(0), 0);
  // The least-squares solution satisfies the normal equations A^T (A X - B) = 0.
  std::vector<double> ax = matmul(rt, o[2]);
  Tensor r = Tensor::from_vector({6, 2}, ax);
  for (int64_t i = 0; i < 12; ++i) r.set_double(i, r.get_double(i) - rtb.get_double(i));
  expect_close(matmul(mT(rt), r), Tensor::zeros({3, 2}, DType::Float64), 1e-10, "normal equations");
  for (int64_t j = 0; j < 2; ++j) {
    double ss = 0;
    for (int64_t i = 0; i < 6; ++i) ss += r.get_double(i * 2 + j) * r.get_double(i * 2 + j);
    EXPECT_NEAR(o[3].get_double(j), ss, 1e-10);
  }
  EXPECT_EQ(o[4].dtype(), DType::Int64);
  EXPECT_EQ(o[4].get_int(0), 3);
  EXPECT_EQ(o[5].sizes(), (Shape{3}));
}

// exp of a nilpotent, a diagonal and a rotation generator, against their closed forms; exp(A)
// exp(-A) = I for a matrix whose norm needs squarings.
TEST(Linalg, MatrixExponentialMatchesClosedForms) {
  Graph g;
  Node* a = g.placeholder("a", {4, 2, 2}, DType::Float64);
  g.output({g.call("linalg_matrix_exp", {a})});
  double t = 7.5;
  Tensor in = Tensor::from_vector({4, 2, 2}, std::vector<double>{0, 1, 0, 0,  2, 0, 0, -1,
                                                                 0, -t, t, 0,  3, 4, -5, 6});
  std::vector<Tensor> o = run(g, {in});
  std::vector<double> want{1, 1, 0, 1, std::exp(2.0), 0, 0, std::exp(-1.0),
                           std::cos(t), -std::sin(t), std::sin(t), std::cos(t)};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(o[0].get_double(i), want[i], 1e-12) << i;
  Graph h;
  Node* b = h.placeholder("b", {3, 3}, DType::Float64);
  h.output({h.call("matmul", {h.call("linalg_matrix_exp", {b}),
                              h.call("linalg_matrix_exp", {h.call("neg", {b})})})});
  Tensor big = randn({3, 3}, DType::Float64, 31);
  for (int64_t i = 0; i < 9; ++i) big.set_double(i, 4.0 * big.get_double(i));
  expect_close(run(h, {big})[0].to_vector<double>(), eye(3), 1e-9, "exp(A) exp(-A) = I");
}
