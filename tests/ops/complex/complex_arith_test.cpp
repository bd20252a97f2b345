// Complex arithmetic (core/ops/complex/, docs/complex.md): the interpreter's complex kernels
// against std::complex<double> (within a few ULPs of the dtype), torch's promotion of float and
// complex operands, the VJPs by torch's convention (z̄ = ∂L/∂a + i ∂L/∂b) against central
// differences with the real and imaginary parts perturbed separately, the JVPs (the FFT ops and
// complex arithmetic) against central differences, and the compiled path (cpu_cpp) running complex
// nodes as counted interpreter fallbacks, bit for bit the interpreter.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <functional>
#include <limits>
#include <string>
#include <tuple>
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

using V = std::vector<int64_t>;

Tensor randn(const Shape& s, DType t, uint64_t seed) { return Tensor::randn(s, t, seed); }

std::vector<cd> values(const Tensor& t) { return complex_values(t); }

void expect_near(const std::vector<cd>& got, const std::vector<cd>& want, double tol,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    double scale = std::max(1.0, std::abs(want[i]));
    EXPECT_LE(std::abs(got[i] - want[i]), tol * scale)
        << what << " at " << i << ": " << got[i] << " vs " << want[i];
  }
}

// t + h·d elementwise (complex tensors through their real views).
Tensor along(const Tensor& t, const Tensor& d, double h) {
  Tensor c = t.clone();
  Tensor p = is_complex(c.dtype()) ? c.as_real_view() : c;
  Tensor q = is_complex(d.dtype()) ? d.contiguous().as_real_view() : d;
  for (int64_t j = 0; j < p.numel(); ++j) p.set_double(j, p.get_double(j) + h * q.get_double(j));
  return c;
}

// J v of f (one output, any dtype) against central differences along v.
void check_jvp(const std::string& name, Graph& g, const std::vector<Tensor>& in) {
  verify(g);
  std::vector<Tensor> v;
  for (size_t k = 0; k < in.size(); ++k) v.push_back(randn(in[k].sizes(), in[k].dtype(), 20 + k));
  JvpResult r = jvp(g, in, v);
  ASSERT_EQ(r.tangents.size(), 1u) << name;
  const double h = 1e-6;
  std::vector<Tensor> p, m;
  for (size_t k = 0; k < in.size(); ++k) {
    p.push_back(along(in[k], v[k], h));
    m.push_back(along(in[k], v[k], -h));
  }
  std::vector<cd> fp = values(interpret(g, p)[0]), fm = values(interpret(g, m)[0]);
  std::vector<cd> want;
  for (size_t i = 0; i < fp.size(); ++i) want.push_back((fp[i] - fm[i]) / (2 * h));
  expect_near(values(r.tangents[0]), want, 1e-6, name + " (jvp)");
}

Node* real_view(Graph& g, Node* z) {
  return is_complex(z->dtype()) ? g.call("view_as_real", {z}) : z;
}

}  // namespace

// Every elementwise op's complex kernel against std::complex<double>, complex64 and complex128,
// with a broadcast operand.
TEST(ComplexArith, ElementwiseMatchesStdComplex) {
  using Ref1 = std::function<cd(cd)>;
  using Ref2 = std::function<cd(cd, cd)>;
  struct Case {
    const char* name;
    std::function<Node*(Graph&, Node*, Node*)> f;
    Ref2 ref;
  };
  auto un = [](const char* op, Ref1 r) {
    return Case{op, [op](Graph& g, Node* z, Node*) { return g.call(op, {z}); },
                [r](cd a, cd) { return r(a); }};
  };
  std::vector<Case> cases{
      {"add alpha", [](Graph& g, Node* z, Node* w) { return g.call("add.Tensor", {z, w}, {{"alpha", 2}}); },
       [](cd a, cd b) { return a + 2.0 * b; }},
      {"sub", [](Graph& g, Node* z, Node* w) { return g.call("sub.Tensor", {z, w}); },
       [](cd a, cd b) { return a - b; }},
      {"mul", [](Graph& g, Node* z, Node* w) { return g.call("mul.Tensor", {z, w}); },
       [](cd a, cd b) { return a * b; }},
      {"div", [](Graph& g, Node* z, Node* w) { return g.call("div.Tensor", {z, w}); },
       [](cd a, cd b) { return a / b; }},
      {"mul.Scalar", [](Graph& g, Node* z, Node*) { return g.call("mul.Scalar", {z, 3.0}); },
       [](cd a, cd) { return 3.0 * a; }},
      {"div.Scalar", [](Graph& g, Node* z, Node*) { return g.call("div.Scalar", {z, 4.0}); },
       [](cd a, cd) { return a / 4.0; }},
      {"add.Scalar", [](Graph& g, Node* z, Node*) { return g.call("add.Scalar", {z, 1.5}); },
       [](cd a, cd) { return a + 1.5; }},
      {"rsub.Scalar", [](Graph& g, Node* z, Node*) { return g.call("rsub.Scalar", {z, 1.0}); },
       [](cd a, cd) { return 1.0 - a; }},
      {"pow 2", [](Graph& g, Node* z, Node*) { return g.call("pow.Tensor_Scalar", {z, 2}); },
       [](cd a, cd) { return a * a; }},
      {"pow 1.5", [](Graph& g, Node* z, Node*) { return g.call("pow.Tensor_Scalar", {z, 1.5}); },
       [](cd a, cd) { return std::pow(a, 1.5); }},
      un("neg", [](cd a) { return -a; }),
      un("exp", [](cd a) { return std::exp(a); }),
      un("log", [](cd a) { return std::log(a); }),
      un("sqrt", [](cd a) { return std::sqrt(a); }),
      un("reciprocal", [](cd a) { return 1.0 / a; }),
      un("sin", [](cd a) { return std::sin(a); }),
      un("cos", [](cd a) { return std::cos(a); }),
      un("tanh", [](cd a) { return std::tanh(a); }),
      un("sgn", [](cd a) { return a / std::abs(a); }),
      un("abs", [](cd a) { return cd(std::abs(a), 0); }),
      un("angle", [](cd a) { return cd(std::arg(a), 0); }),
  };
  for (DType dt : {DType::Complex64, DType::Complex128}) {
    double tol = dt == DType::Complex64 ? 4e-6 : 1e-14;
    Tensor zt = randn({3, 4}, dt, 1), wt = randn({4}, dt, 2);
    std::vector<cd> z = values(zt), w = values(wt);
    for (const Case& k : cases) {
      Graph g;
      Node* zn = g.placeholder("z", {3, 4}, dt);
      Node* y = k.f(g, zn, g.placeholder("w", {4}, dt));
      g.output({y});
      verify(g);
      bool real_out = std::string(k.name) == "abs" || std::string(k.name) == "angle";
      EXPECT_EQ(y->dtype(), real_out ? complex_to_real(dt) : dt) << k.name;
      std::vector<cd> want;
      for (size_t i = 0; i < z.size(); ++i) want.push_back(k.ref(z[i], w[i % 4]));
      expect_near(values(interpret(g, {zt, wt})[0]), want, tol,
                  std::string(k.name) + " " + std::string(dtype_name(dt)));
    }
  }
}

// torch's promotion: float ⊕ complex is the complex dtype wide enough for both; predicates are
// bool; where picks complex values.
TEST(ComplexArith, PromotionPredicatesAndWhere) {
  Graph g;
  Node* x32 = g.placeholder("x32", {4});
  Node* x64 = g.placeholder("x64", {4}, DType::Float64);
  Node* z = g.placeholder("z", {4}, DType::Complex64);
  Node* i = g.placeholder("i", {4}, DType::Int64);
  Node* a = g.call("add.Tensor", {x32, z});
  Node* b = g.call("mul.Tensor", {x64, z});
  Node* c = g.call("sub.Tensor", {z, i});
  Node* e = g.call("eq.Tensor", {z, g.call("conj_physical", {z})});
  Node* w = g.call("where.self", {e, z, x64});
  g.output({a, b, c, e, w});
  verify(g);
  EXPECT_EQ(a->dtype(), DType::Complex64);
  EXPECT_EQ(b->dtype(), DType::Complex128);
  EXPECT_EQ(c->dtype(), DType::Complex64);
  EXPECT_EQ(e->dtype(), DType::Bool);
  EXPECT_EQ(w->dtype(), DType::Complex128);
  const float zdata[] = {1, 2, 3, 0, -1, -1, 0, 0};
  Tensor zt = Tensor::from_data({4}, DType::Complex64, zdata);
  Tensor xt = Tensor::from_vector<float>({4}, {1, 2, 3, 4});
  Tensor x64t = Tensor::from_vector<double>({4}, {1, 2, 3, 4});
  Tensor it = Tensor::from_vector<int64_t>({4}, {1, 1, 1, 1});
  auto out = interpret(g, {xt, x64t, zt, it});
  expect_near(values(out[0]), {{2, 2}, {5, 0}, {2, -1}, {4, 0}}, 0, "add");
  expect_near(values(out[1]), {{1, 2}, {6, 0}, {-3, -3}, {0, 0}}, 0, "mul");
  expect_near(values(out[2]), {{0, 2}, {2, 0}, {-2, -1}, {-1, 0}}, 0, "sub int");
  expect_near(values(out[3]), {{0, 0}, {1, 0}, {0, 0}, {1, 0}}, 0, "eq");
  expect_near(values(out[4]), {{1, 0}, {3, 0}, {3, 0}, {0, 0}}, 0, "where");
  // Ops that stay real-only still refuse complex with the op and argument named.
  std::string err = error_of([&] { g.call("lt.Tensor", {z, z}); });
  EXPECT_TRUE(has(err, "lt.Tensor does not support complex tensors")) << err;
}

// Sums, cat, pad, the scatters and the products against loops in std::complex<double>.
TEST(ComplexArith, ReductionsMovementAndProducts) {
  DType dt = DType::Complex128;
  Tensor zt = randn({2, 3}, dt, 3), wt = randn({3, 2}, dt, 4);
  std::vector<cd> z = values(zt), w = values(wt);
  Graph g;
  Node* zn = g.placeholder("z", {2, 3}, dt);
  Node* wn = g.placeholder("w", {3, 2}, dt);
  Node* xn = g.placeholder("x", {2, 1}, DType::Float64);
  g.output({g.call("sum.dim_IntList", {zn, V{1}, true}), g.call("mean.dim", {zn, V{0}}),
            g.call("cat", {std::vector<Node*>{zn, xn}, 1}),
            g.call("constant_pad_nd", {zn, V{1, -1}, 0.5}), g.call("mm", {zn, wn}),
            g.call("slice_scatter", {zn, g.call("_to_copy", {xn}, {{"dtype", dt}}), 1, 2, 3}),
            g.call("bmm", {g.call("unsqueeze", {zn, 0}), g.call("unsqueeze", {wn, 0})}),
            g.call("sum.default", {zn})});
  verify(g);
  Tensor xt = Tensor::from_vector<double>({2, 1}, {7, 8});
  auto out = interpret(g, {zt, wt, xt});
  auto Z = [&](int r, int c) { return z[static_cast<size_t>(r * 3 + c)]; };
  auto W = [&](int r, int c) { return w[static_cast<size_t>(r * 2 + c)]; };
  expect_near(values(out[0]), {Z(0, 0) + Z(0, 1) + Z(0, 2), Z(1, 0) + Z(1, 1) + Z(1, 2)}, 1e-15, "sum");
  expect_near(values(out[1]), {(Z(0, 0) + Z(1, 0)) / 2.0, (Z(0, 1) + Z(1, 1)) / 2.0,
                               (Z(0, 2) + Z(1, 2)) / 2.0}, 1e-15, "mean");
  expect_near(values(out[2]), {Z(0, 0), Z(0, 1), Z(0, 2), 7, Z(1, 0), Z(1, 1), Z(1, 2), 8}, 0, "cat");
  expect_near(values(out[3]), {0.5, Z(0, 0), Z(0, 1), 0.5, Z(1, 0), Z(1, 1)}, 0, "pad");
  std::vector<cd> mm;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) mm.push_back(Z(i, 0) * W(0, j) + Z(i, 1) * W(1, j) + Z(i, 2) * W(2, j));
  expect_near(values(out[4]), mm, 1e-15, "mm");
  expect_near(values(out[5]), {Z(0, 0), Z(0, 1), 7, Z(1, 0), Z(1, 1), 8}, 0, "slice_scatter");
  expect_near(values(out[6]), mm, 1e-15, "bmm");
  cd all = 0;
  for (const cd& v : z) all += v;
  expect_near(values(out[7]), {all}, 1e-15, "sum all");
}

// Reverse mode by torch's convention against central differences (complex128 / float64).
TEST(ComplexArith, VjpsMatchCentralDifferences) {
  DType c = DType::Complex128;
  using F1 = std::function<Node*(Graph&, Node*)>;
  using F2 = std::function<Node*(Graph&, Node*, Node*)>;
  std::vector<std::pair<const char*, F1>> unary{
      {"exp", [](Graph& g, Node* z) { return g.call("exp", {z}); }},
      {"log", [](Graph& g, Node* z) { return g.call("log", {z}); }},
      {"sqrt", [](Graph& g, Node* z) { return g.call("sqrt", {z}); }},
      {"reciprocal", [](Graph& g, Node* z) { return g.call("reciprocal", {z}); }},
      {"sin", [](Graph& g, Node* z) { return g.call("sin", {z}); }},
      {"cos", [](Graph& g, Node* z) { return g.call("cos", {z}); }},
      {"pow 3", [](Graph& g, Node* z) { return g.call("pow.Tensor_Scalar", {z, 3}); }},
      {"abs", [](Graph& g, Node* z) { return g.call("abs", {z}); }},
      {"angle", [](Graph& g, Node* z) { return g.call("angle", {z}); }},
      {"sgn", [](Graph& g, Node* z) { return g.call("sgn", {z}); }},
      {"neg conj", [](Graph& g, Node* z) { return g.call("neg", {g.call("conj_physical", {z})}); }},
      {"rsub", [](Graph& g, Node* z) { return g.call("rsub.Scalar", {z, 2.0}, {{"alpha", 3}}); }},
      {"sum dim", [](Graph& g, Node* z) { return g.call("sum.dim_IntList", {z, V{0}}); }},
      {"mean", [](Graph& g, Node* z) { return g.call("mean.default", {z}); }},
      {"pad", [](Graph& g, Node* z) { return g.call("constant_pad_nd", {z, V{2, -1}, 0.0}); }},
      {"abs of mul (a value used twice)",
       [](Graph& g, Node* z) { return g.call("abs", {g.call("mul.Tensor", {z, z})}); }},
      {"fft then abs", [](Graph& g, Node* z) {
         return g.call("abs", {g.call("_fft_c2c", {z, V{1}, 0, true})});
       }},
  };
  std::vector<std::pair<const char*, F2>> binary{
      {"mul", [](Graph& g, Node* z, Node* w) { return g.call("mul.Tensor", {z, w}); }},
      {"div", [](Graph& g, Node* z, Node* w) { return g.call("div.Tensor", {z, w}); }},
      {"add alpha", [](Graph& g, Node* z, Node* w) { return g.call("add.Tensor", {z, w}, {{"alpha", -2}}); }},
      {"cat", [](Graph& g, Node* z, Node* w) { return g.call("cat", {std::vector<Node*>{z, w}, 0}); }},
      {"where", [](Graph& g, Node* z, Node* w) {
         return g.call("where.self", {g.call("gt.Scalar", {g.call("abs", {z}), 1.0}), z, w});
       }},
      {"mm", [](Graph& g, Node* z, Node* w) { return g.call("mm", {z, g.call("t", {w})}); }},
      {"slice_scatter", [](Graph& g, Node* z, Node* w) {
         return g.call("slice_scatter", {z, g.call("slice.Tensor", {w, 1, 0, 2}), 1, 1, 3});
       }},
  };
  for (auto& [name, f] : unary) {
    Graph g;
    Node* z = g.placeholder("z", {2, 3}, c);
    g.output({real_view(g, f(g, z))});
    check_complex_vjp(name, g, {randn({2, 3}, c, 5)});
  }
  for (auto& [name, f] : binary) {
    Graph g;
    Node* z = g.placeholder("z", {2, 3}, c);
    Node* w = g.placeholder("w", {2, 3}, c);
    g.output({real_view(g, f(g, z, w))});
    check_complex_vjp(name, g, {randn({2, 3}, c, 5), randn({2, 3}, c, 6)});
  }
  // A real input of complex ops (broadcast too) receives the real part of its gradient.
  Graph g;
  Node* x = g.placeholder("x", {3}, DType::Float64);
  Node* z = g.placeholder("z", {2, 3}, c);
  Node* y = g.call("mul.Tensor", {g.call("add.Tensor", {z, x}), x});
  g.output({g.call("view_as_real", {g.call("exp", {y})})});
  check_complex_vjp("real ⊕ complex", g, {randn({3}, DType::Float64, 8), randn({2, 3}, c, 9)});
}

// Forward mode: the FFT ops (linear) and complex arithmetic against central differences.
TEST(ComplexArith, JvpsMatchCentralDifferences) {
  DType c = DType::Complex128, r = DType::Float64;
  struct Case {
    const char* name;
    Shape shape;
    DType dt;
    std::function<Node*(Graph&, Node*)> f;
  };
  std::vector<Case> cases{
      {"r2c", {3, 6}, r, [](Graph& g, Node* x) { return g.call("_fft_r2c", {x, V{1}, 1, true}); }},
      {"r2c 2-d twosided", {3, 5}, r,
       [](Graph& g, Node* x) { return g.call("_fft_r2c", {x, V{0, 1}, 2, false}); }},
      {"c2r", {3, 4}, c,
       [](Graph& g, Node* z) { return g.call("_fft_c2r", {z, V{1}, 0, int64_t{6}}); }},
      {"c2c", {3, 4}, c,
       [](Graph& g, Node* z) { return g.call("_fft_c2c", {z, V{0}, 1, false}); }},
      {"exp", {2, 3}, c, [](Graph& g, Node* z) { return g.call("exp", {z}); }},
      {"sqrt", {2, 3}, c, [](Graph& g, Node* z) { return g.call("sqrt", {z}); }},
      {"abs", {2, 3}, c, [](Graph& g, Node* z) { return g.call("abs", {z}); }},
      {"angle", {2, 3}, c, [](Graph& g, Node* z) { return g.call("angle", {z}); }},
      {"sgn", {2, 3}, c, [](Graph& g, Node* z) { return g.call("sgn", {z}); }},
      {"mul self", {2, 3}, c, [](Graph& g, Node* z) { return g.call("mul.Tensor", {z, z}); }},
      {"the complex parts", {2, 3}, c,
       [](Graph& g, Node* z) {
         Node* re = g.call("real", {g.call("conj_physical", {z})});
         Node* im = g.call("imag", {g.call("_conj", {g.call("_conj_physical", {z})})});
         return g.call("view_as_complex", {g.call("view_as_real", {g.call("complex", {re, im})})});
       }},
      {"sum of view_as_real", {2, 3}, c,
       [](Graph& g, Node* z) { return g.call("sum.dim_IntList", {g.call("view_as_real", {z}), V{0}}); }},
  };
  for (const Case& k : cases) {
    Graph g;
    g.output({k.f(g, g.placeholder("x", k.shape, k.dt))});
    check_jvp(k.name, g, {randn(k.shape, k.dt, 11)});
  }
}

// Compiled on cpu_cpp: complex nodes run as counted interpreter fallbacks (complex tensors never
// cross the plugin ABI), bit for bit the interpreter; the real ops around them become kernels.
TEST(ComplexArith, CompiledRunsComplexNodesAsFallbacksBitForBit) {
  Graph g;
  Node* x = g.placeholder("x", {4, 6});
  Node* z = g.placeholder("z", {6, 3}, DType::Complex64);
  Node* s = g.call("_fft_r2c", {g.call("relu", {x}), V{1}, 0, false});
  Node* p = g.call("mm", {g.call("mul.Tensor", {s, x}), z});
  Node* m = g.call("abs", {g.call("sum.dim_IntList", {p, V{1}})});
  g.output({g.call("add.Tensor", {m, m}), g.call("view_as_real", {p})});
  verify(g);
  std::vector<Tensor> in{randn({4, 6}, DType::Float32, 1), randn({6, 3}, DType::Complex64, 2)};
  std::vector<Tensor> want = reference(g, in);
  CompiledGraph cg = cpu_compiler().compile(g);
  std::vector<Tensor> got = cg.run(in);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i].equal(want[i])) << i;
  EXPECT_GE(cg.num_fallbacks(), 5u) << cg.summary();
  EXPECT_TRUE(has(cg.summary(), "mm")) << cg.summary();
  EXPECT_GE(cg.num_kernels(), 1u) << cg.summary();  // relu, add: real kernels
}

// index, index_select, index_put (accumulate or not; the mask form), flip and roll on complex tensors: the real kernels on
// the real views, against loops in std::complex<double>; compiled equal to the interpreter bit
// for bit; their VJPs (the real rules: linear) against central differences.
TEST(ComplexArith, IndexAndIndexPut) {
  using L = Arg::List;
  Tensor iv = Tensor::from_vector({3}, std::vector<double>{0, 2, 0}, DType::Int64);
  Tensor pv = Tensor::from_vector({3}, std::vector<double>{2, 0, 1}, DType::Int64);
  Tensor mv = Tensor::from_vector({3, 4}, std::vector<double>{1, 0, 0, 1, 0, 1, 1, 0, 0, 0, 0, 1},
                                  DType::Bool);
  for (DType c : {DType::Complex64, DType::Complex128}) {
    double tol = c == DType::Complex64 ? 1e-6 : 1e-15;
    Graph g;
    Node* z = g.placeholder("z", {3, 4}, c);
    Node* w = g.placeholder("w", {3, 4}, c);
    Node* v = g.placeholder("v", {}, c);
    Node* i = g.placeholder("i", {3}, DType::Int64);
    Node* p = g.placeholder("p", {3}, DType::Int64);
    Node* m = g.placeholder("m", {3, 4}, DType::Bool);
    g.output({g.call("index.Tensor", {z, Arg(L{Arg(i)})}),
              g.call("index_put", {z, Arg(L{Arg(i)}), w, true}),
              g.call("index_put", {z, Arg(L{Arg(p)}), w, false}),
              g.call("index_put", {z, Arg(L{Arg(m)}), v, false}),
              g.call("index_select", {z, -1, p}),
              g.call("flip", {z, V{-1, 0}}),
              g.call("roll", {z, V{1}, V{-1}}),
              g.call("roll", {z, V{2}})});
    verify(g);
    std::vector<Tensor> in{randn({3, 4}, c, 1), randn({3, 4}, c, 2), randn({}, c, 3), iv, pv, mv};
    std::vector<Tensor> out = interpret(g, in);
    std::vector<cd> zv = values(in[0]), wv = values(in[1]), vv = values(in[2]);
    std::vector<int64_t> idx{0, 2, 0}, perm{2, 0, 1};
    std::vector<cd> want_index, want_acc = zv, want_put = zv, want_mask = zv, want_sel, want_flip,
        want_roll, want_roll_flat(12);
    for (int64_t r = 0; r < 3; ++r)
      for (int64_t k = 0; k < 4; ++k) {
        want_index.push_back(zv[idx[r] * 4 + k]);
        want_acc[idx[r] * 4 + k] += wv[r * 4 + k];
        want_put[perm[r] * 4 + k] = wv[r * 4 + k];
        if (mv.get_double(r * 4 + k) != 0) want_mask[r * 4 + k] = vv[0];
        if (k < 3) want_sel.push_back(zv[r * 4 + perm[static_cast<size_t>(k)]]);
        want_flip.push_back(zv[(2 - r) * 4 + (3 - k)]);
        want_roll.push_back(zv[r * 4 + (k + 3) % 4]);
        want_roll_flat[static_cast<size_t>((r * 4 + k + 2) % 12)] = zv[r * 4 + k];
      }
    for (const Tensor& o : out) EXPECT_EQ(o.dtype(), c);
    expect_near(values(out[0]), want_index, tol, "index");
    expect_near(values(out[1]), want_acc, tol, "index_put accumulate");
    expect_near(values(out[2]), want_put, tol, "index_put");
    expect_near(values(out[3]), want_mask, tol, "index_put mask");
    expect_near(values(out[4]), want_sel, tol, "index_select");
    expect_near(values(out[5]), want_flip, tol, "flip");
    expect_near(values(out[6]), want_roll, tol, "roll");
    expect_near(values(out[7]), want_roll_flat, tol, "roll (flattened)");
    CompiledGraph cg = cpu_compiler().compile(g);
    std::vector<Tensor> got = cg.run(in);
    for (size_t k = 0; k < out.size(); ++k) EXPECT_TRUE(got[k].equal(out[k])) << "output " << k;
  }
  // VJPs over the complex inputs, the indices made in the graph: [0 1 2 0] (accumulating twice
  // into row 0) and [2 1 0].
  DType c = DType::Complex128;
  for (bool accumulate : {true, false}) {
    Graph g;
    Node* z = g.placeholder("z", {3, 4}, c);
    Node* w = g.placeholder("w", {4, 4}, c);
    Node* r3 = g.call("arange", {int64_t{3}}, {{"dtype", DType::Int64}});
    Node* r1 = g.call("arange", {int64_t{1}}, {{"dtype", DType::Int64}});
    Node* i = accumulate ? g.call("cat", {std::vector<Node*>{r3, r1}, 0}) : g.call("flip", {r3, V{0}});
    Node* src = accumulate ? w : g.call("slice.Tensor", {w, 0, 0, 3});
    Node* put = g.call("index_put", {g.call("mul.Tensor", {z, z}), Arg(L{Arg(i)}), src, accumulate});
    Node* sel = g.call("index.Tensor", {g.call("mul.Tensor", {put, z}), Arg(L{Arg(i)})});
    sel = g.call("roll", {g.call("flip", {g.call("index_select", {sel, -1, i}), V{0}}), V{1}, V{1}});
    g.output({real_view(g, sel)});
    check_complex_vjp(accumulate ? "index_put accumulate, index" : "index_put, index", g,
              {randn({3, 4}, c, 5), randn({4, 4}, c, 6)});
  }
}

// polar(abs, angle) (core/ops/complex/polar.cpp): values against std::polar in double (float32:
// within a few ULPs), broadcasting, torch's dtype checks, the VJP in both real inputs and the JVP
// against central differences, and compiled (the cos / sin / mul kernels, complex() a counted
// fallback) equal to the interpreter bit for bit.
TEST(ComplexArith, PolarMatchesStdPolar) {
  for (DType t : {DType::Float64, DType::Float32}) {
    Graph g;
    Node* r = g.placeholder("r", {2, 3}, t);
    Node* a = g.placeholder("a", {3}, t);
    g.output({g.call("polar", {r, a})});
    verify(g);
    Tensor rv = Tensor::from_vector({2, 3}, std::vector<double>{1, 0.5, 2, 0, 3, 1e-3}, t);
    Tensor av = Tensor::from_vector({3}, std::vector<double>{0.25, -2.5, 3.14159}, t);
    std::vector<Tensor> in{rv, av};
    Tensor out = interpret(g, in)[0];
    EXPECT_EQ(out.dtype(), t == DType::Float64 ? DType::Complex128 : DType::Complex64);
    EXPECT_EQ(out.sizes(), (Shape{2, 3}));
    std::vector<cd> want;
    for (int64_t i = 0; i < 6; ++i) want.push_back(std::polar(rv.get_double(i), av.get_double(i % 3)));
    expect_near(values(out), want, t == DType::Float64 ? 1e-15 : 4e-7, "polar");
    std::vector<Tensor> ref = reference(g, in);
    CompiledGraph cg = cpu_compiler().compile(g);
    EXPECT_TRUE(cg.run(in)[0].equal(ref[0])) << cg.summary();
    EXPECT_EQ(cg.num_fallbacks(), 1u) << cg.summary();  // complex(): complex values stay off the ABI
  }
  Graph bad;
  Node* i = bad.placeholder("i", {2}, DType::Int64);
  Node* f = bad.placeholder("f", {2}, DType::Float32);
  Node* d = bad.placeholder("d", {2}, DType::Float64);
  EXPECT_TRUE(has(error_of([&] { bad.call("polar", {i, i}); }),
                  "Expected both inputs to be Half, Float or Double tensors but got int64 and int64"));
  EXPECT_TRUE(has(error_of([&] { bad.call("polar", {f, d}); }),
                  "Expected object of scalar type float32 but got scalar type float64"));

  Graph gv;
  Node* r = gv.placeholder("r", {2, 3}, DType::Float64);
  Node* a = gv.placeholder("a", {2, 3}, DType::Float64);
  gv.output({gv.call("view_as_real", {gv.call("polar", {r, a})})});
  check_complex_vjp("polar", gv, {randn({2, 3}, DType::Float64, 3), randn({2, 3}, DType::Float64, 4)});
  Graph gj;
  Node* x = gj.placeholder("x", {2, 3}, DType::Float64);
  gj.output({gj.call("polar", {gj.call("exp", {x}), x})});
  check_jvp("polar", gj, {randn({2, 3}, DType::Float64, 11)});
}

// The complex forms of dot / vdot / mv / addmm (complex_ops::kByDecomposition): values against
// loops in std::complex<double> (vdot conjugates its first argument, as torch), a fractional
// alpha / beta kept complex-safe, the VJPs by torch's convention and the JVPs against central
// differences, and compiled (counted fallbacks) equal to the interpreter bit for bit.
TEST(ComplexArith, DotVdotMvAddmm) {
  DType c = DType::Complex128;
  Tensor a = randn({3}, c, 1), b = randn({3}, c, 2), m = randn({2, 3}, c, 3);
  Tensor s = randn({2, 2}, c, 4), p = randn({2, 3}, c, 5), q = randn({3, 2}, c, 6);
  Graph g;
  Node* na = g.placeholder("a", {3}, c);
  Node* nb = g.placeholder("b", {3}, c);
  Node* nm = g.placeholder("m", {2, 3}, c);
  Node* ns = g.placeholder("s", {2, 2}, c);
  Node* np = g.placeholder("p", {2, 3}, c);
  Node* nq = g.placeholder("q", {3, 2}, c);
  g.output({g.call("dot", {na, nb}), g.call("vdot", {na, nb}), g.call("mv", {nm, nb}),
            g.call("addmm", {ns, np, nq}, {{"beta", 0.5}, {"alpha", -1.5}})});
  verify(g);
  std::vector<Tensor> in{a, b, m, s, p, q};
  std::vector<Tensor> out = interpret(g, in);
  std::vector<cd> va = values(a), vb = values(b), vm = values(m), vs = values(s), vp = values(p),
                  vq = values(q);
  cd dot = 0, vdot = 0;
  for (int k = 0; k < 3; ++k) {
    dot += va[k] * vb[k];
    vdot += std::conj(va[k]) * vb[k];
  }
  std::vector<cd> mv(2, 0.0), addmm(4, 0.0);
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 3; ++k) mv[i] += vm[i * 3 + k] * vb[k];
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      cd acc = 0;
      for (int k = 0; k < 3; ++k) acc += vp[i * 3 + k] * vq[k * 2 + j];
      addmm[i * 2 + j] = 0.5 * vs[i * 2 + j] - 1.5 * acc;
    }
  EXPECT_EQ(out[0].dtype(), c);
  EXPECT_EQ(out[0].sizes(), Shape{});
  expect_near(values(out[0]), {dot}, 1e-14, "dot");
  expect_near(values(out[1]), {vdot}, 1e-14, "vdot");
  expect_near(values(out[2]), mv, 1e-14, "mv");
  expect_near(values(out[3]), addmm, 1e-14, "addmm");
  std::vector<Tensor> ref = reference(g, in);
  CompiledGraph cg = cpu_compiler().compile(g);
  std::vector<Tensor> got = cg.run(in);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i].equal(ref[i])) << i << cg.summary();

  using F = std::function<Node*(Graph&, Node*, Node*)>;
  std::vector<std::tuple<const char*, Shape, Shape, F>> cases{
      {"dot", {3}, {3}, [](Graph& h, Node* x, Node* y) { return h.call("dot", {x, y}); }},
      {"vdot", {3}, {3}, [](Graph& h, Node* x, Node* y) { return h.call("vdot", {x, y}); }},
      {"mv", {2, 3}, {3}, [](Graph& h, Node* x, Node* y) { return h.call("mv", {x, y}); }},
      {"addmm", {2, 3}, {3, 2}, [](Graph& h, Node* x, Node* y) {
         Node* self = h.call("mul.Tensor", {h.call("sum.dim_IntList", {x, V{1}, true}), x});
         return h.call("addmm", {h.call("slice.Tensor", {self, 1, 0, 2}), x, y},
                       {{"beta", 0.5}, {"alpha", -1.5}});
       }}};
  for (auto& [name, x_shape, y_shape, f] : cases) {
    Graph gv;
    Node* x = gv.placeholder("x", x_shape, c);
    Node* y = gv.placeholder("y", y_shape, c);
    gv.output({real_view(gv, f(gv, x, y))});
    check_complex_vjp(name, gv, {randn(x_shape, c, 7), randn(y_shape, c, 8)});
    Graph gj;
    Node* z = gj.placeholder("z", x_shape, c);
    gj.output({f(gj, z, gj.call("mul.Scalar", {
                                   gj.call("reshape", {gj.call("slice.Tensor", {
                                                          gj.call("reshape", {z, V{-1}}), 0, 0,
                                                          shape_numel(y_shape)}),
                                                      y_shape}),
                                   0.5}))});
    check_jvp(name, gj, {randn(x_shape, c, 9)});
  }
}

// linalg_vector_norm of complex tensors: the norm of |z| in the real dtype (torch), for ord 2, 1,
// inf, -inf, 0 and 3, over all elements or a dim (keepdim), with dtype=complex128; torch's error
// for a real dtype; values against loops in double, VJP / JVP against central differences,
// compiled equal to the interpreter.
TEST(ComplexArith, VectorNormOfComplexValues) {
  const double inf = std::numeric_limits<double>::infinity();
  Tensor z = randn({2, 3}, DType::Complex64, 3);
  std::vector<cd> v = values(z);
  auto norm = [&](double p, int row) {  // row -1: every element
    double s = p == inf ? 0 : (p == -inf ? inf : 0);
    for (int i = 0; i < 6; ++i) {
      if (row >= 0 && i / 3 != row) continue;
      double a = std::abs(v[i]);
      if (p == inf) s = std::max(s, a);
      else if (p == -inf) s = std::min(s, a);
      else if (p == 0) s += a != 0;
      else s += std::pow(a, p);
    }
    return (p == inf || p == -inf || p == 0) ? s : std::pow(s, 1 / p);
  };
  for (double p : {2.0, 1.0, inf, -inf, 0.0, 3.0}) {
    Graph g;
    Node* x = g.placeholder("z", {2, 3}, DType::Complex64);
    g.output({g.call("linalg_vector_norm", {x, p}),
              g.call("linalg_vector_norm", {x, p, V{1}, true}),
              g.call("linalg_vector_norm", {x, p}, {{"dtype", DType::Complex128}})});
    verify(g);
    std::vector<Tensor> out = interpret(g, {z});
    EXPECT_EQ(out[0].dtype(), DType::Float32);
    EXPECT_EQ(out[1].sizes(), (Shape{2, 1}));
    EXPECT_EQ(out[2].dtype(), DType::Float64);
    EXPECT_NEAR(out[0].get_double(0), norm(p, -1), 1e-5 * std::max(1.0, norm(p, -1))) << p;
    EXPECT_NEAR(out[2].get_double(0), norm(p, -1), 1e-5 * std::max(1.0, norm(p, -1))) << p;
    for (int r = 0; r < 2; ++r)
      EXPECT_NEAR(out[1].get_double(r), norm(p, r), 1e-5 * std::max(1.0, norm(p, r))) << p;
    std::vector<Tensor> ref = reference(g, {z});
    CompiledGraph cg = cpu_compiler().compile(g);
    std::vector<Tensor> got = cg.run({z});
    for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i].equal(ref[i])) << p << " " << i;
  }
  Graph bad;
  Node* x = bad.placeholder("z", {3}, DType::Complex64);
  EXPECT_TRUE(has(error_of([&] {
                    bad.call("linalg_vector_norm", {x, 2.0}, {{"dtype", DType::Float64}});
                  }),
                  "dtype should be complex for complex inputs"));
  for (double p : {2.0, 3.0, 1.0}) {
    Graph gv;
    Node* w = gv.placeholder("z", {2, 3}, DType::Complex128);
    gv.output({gv.call("linalg_vector_norm", {w, p, V{1}})});
    check_complex_vjp("vector_norm " + std::to_string(p), gv, {randn({2, 3}, DType::Complex128, 5)});
    Graph gj;
    Node* u = gj.placeholder("z", {2, 3}, DType::Complex128);
    gj.output({gj.call("linalg_vector_norm", {u, p, V{1}})});
    check_jvp("vector_norm " + std::to_string(p), gj, {randn({2, 3}, DType::Complex128, 6)});
  }
  // torch's subgradient at a zero norm: 0, not the 0 / 0 of the decomposition's sqrt.
  Graph gz;
  Node* w = gz.placeholder("z", {2, 3}, DType::Complex128);
  gz.output({gz.call("linalg_vector_norm", {w, 2.0, V{1}})});
  Tensor zero_row = randn({2, 3}, DType::Complex128, 7);
  for (int64_t j = 0; j < 6; ++j) zero_row.as_real_view().set_double(j, 0.0);
  VjpResult r = vjp(gz, {zero_row}, {Tensor::ones({2}, DType::Float64)});
  std::vector<cd> g0 = values(r.grads[0]);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(g0[i], cd(0.0, 0.0)) << i;
  for (int i = 3; i < 6; ++i) EXPECT_TRUE(std::isfinite(std::abs(g0[i]))) << i;
}

// cumsum of complex values (a componentwise sum: the real cumsum of the real view), along a
// negative dim, with dtype=complex128, of a real tensor with a complex dtype, and 0-d: values
// against running sums in std::complex<double>; VJP (flip · cumsum · flip) and JVP against central
// differences; compiled (a counted fallback) equal to the interpreter.
TEST(ComplexArith, CumsumOfComplexValues) {
  Tensor z = randn({2, 3}, DType::Complex64, 4);
  Tensor x = randn({4}, DType::Float32, 5);
  Graph g;
  Node* nz = g.placeholder("z", {2, 3}, DType::Complex64);
  Node* nx = g.placeholder("x", {4}, DType::Float32);
  Node* n0 = g.call("select.int", {nz, 1, 2});  // (2,)
  g.output({g.call("cumsum", {nz, -1}), g.call("cumsum", {nz, 0}, {{"dtype", DType::Complex128}}),
            g.call("cumsum", {nx, 0}, {{"dtype", DType::Complex64}}),
            g.call("cumsum", {g.call("select.int", {n0, 0, 1}), 0})});
  verify(g);
  std::vector<Tensor> out = interpret(g, {z, x});
  std::vector<cd> v = values(z);
  std::vector<cd> rows(6), cols(6), xs(4);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      rows[i * 3 + j] = v[i * 3 + j] + (j ? rows[i * 3 + j - 1] : 0.0);
      cols[i * 3 + j] = v[i * 3 + j] + (i ? cols[j] : 0.0);
    }
  for (int k = 0; k < 4; ++k) xs[k] = x.get_double(k) + (k ? xs[k - 1] : 0.0);
  EXPECT_EQ(out[0].dtype(), DType::Complex64);
  EXPECT_EQ(out[1].dtype(), DType::Complex128);
  EXPECT_EQ(out[2].dtype(), DType::Complex64);
  EXPECT_EQ(out[3].sizes(), Shape{});
  expect_near(values(out[0]), rows, 1e-6, "cumsum dim -1");
  expect_near(values(out[1]), cols, 1e-6, "cumsum dim 0, complex128");
  expect_near(values(out[2]), xs, 1e-6, "cumsum of a real tensor, complex64");
  expect_near(values(out[3]), {v[5]}, 0, "cumsum of a 0-d tensor");
  std::vector<Tensor> ref = reference(g, {z, x});
  CompiledGraph cg = cpu_compiler().compile(g);
  std::vector<Tensor> got = cg.run({z, x});
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i].equal(ref[i])) << i;

  DType c = DType::Complex128;
  Graph gv;
  Node* w = gv.placeholder("z", {2, 3}, c);
  gv.output({gv.call("view_as_real", {gv.call("cumsum", {gv.call("mul.Tensor", {w, w}), 1})})});
  check_complex_vjp("cumsum", gv, {randn({2, 3}, c, 6)});
  Graph gj;
  Node* u = gj.placeholder("z", {2, 3}, c);
  gj.output({gj.call("cumsum", {u, 0})});
  check_jvp("cumsum", gj, {randn({2, 3}, c, 7)});
}

// pow.Tensor_Tensor of complex values: std::pow of the two (torch's kernel), a real exponent
// tensor and a real base promoted, broadcasting; VJP (torch's conjugate convention) and JVP against
// central differences; compiled equal to the interpreter.
TEST(ComplexArith, PowOfComplexTensors) {
  DType c = DType::Complex128;
  Tensor a = randn({2, 3}, c, 1), b = randn({3}, c, 2), e = randn({2, 3}, DType::Float64, 3);
  Graph g;
  Node* na = g.placeholder("a", {2, 3}, c);
  Node* nb = g.placeholder("b", {3}, c);
  Node* ne = g.placeholder("e", {2, 3}, DType::Float64);
  g.output({g.call("pow.Tensor_Tensor", {na, nb}), g.call("pow.Tensor_Tensor", {na, ne}),
            g.call("pow.Tensor_Tensor", {ne, nb})});
  verify(g);
  std::vector<Tensor> out = interpret(g, {a, b, e});
  std::vector<cd> va = values(a), vb = values(b), ve = values(e), w0, w1, w2;
  for (int i = 0; i < 6; ++i) {
    w0.push_back(std::pow(va[i], vb[i % 3]));
    w1.push_back(std::pow(va[i], ve[i]));
    w2.push_back(std::pow(ve[i], vb[i % 3]));
  }
  for (const Tensor& t : out) EXPECT_EQ(t.dtype(), c);
  expect_near(values(out[0]), w0, 1e-14, "pow(z, w)");
  expect_near(values(out[1]), w1, 1e-14, "pow(z, real)");
  expect_near(values(out[2]), w2, 1e-14, "pow(real, w)");
  std::vector<Tensor> ref = reference(g, {a, b, e});
  CompiledGraph cg = cpu_compiler().compile(g);
  std::vector<Tensor> got = cg.run({a, b, e});
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i].equal(ref[i])) << i;

  Graph gv;
  Node* x = gv.placeholder("x", {2, 3}, c);
  Node* y = gv.placeholder("y", {3}, c);
  gv.output({gv.call("view_as_real", {gv.call("pow.Tensor_Tensor", {x, y})})});
  check_complex_vjp("pow", gv, {randn({2, 3}, c, 4), randn({3}, c, 5)});
  Graph gr;
  Node* xr = gr.placeholder("x", {2, 3}, c);
  Node* yr = gr.placeholder("y", {2, 3}, DType::Float64);
  gr.output({gr.call("view_as_real", {gr.call("pow.Tensor_Tensor", {xr, yr})})});
  check_complex_vjp("pow real exponent", gr, {randn({2, 3}, c, 6), randn({2, 3}, DType::Float64, 7)});
  Graph gj;
  Node* u = gj.placeholder("u", {2, 3}, c);
  gj.output({gj.call("pow.Tensor_Tensor", {u, gj.call("mul.Scalar", {u, 0.5})})});
  check_jvp("pow", gj, {randn({2, 3}, c, 8)});
}
