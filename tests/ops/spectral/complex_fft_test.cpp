// Complex dtypes and the spectral ops (docs/complex.md): dtype names, sizes and torch's promotion
// rules; .npy round trips and printing; _fft_r2c / _fft_c2r / _fft_c2c on the interpreter against
// a plain O(n²) DFT in double (odd and even sizes, every normalization, several dims); ops without
// complex support rejecting it when the graph is built; the compiled path (cpu_cpp) running the
// spectral ops as counted fallbacks, bit for bit the interpreter; VJPs against central
// differences (their JVPs: tests/ops/complex/complex_arith_test.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <functional>
#include <vector>

#include "core/functional/functional.h"
#include "core/graph/graph.h"
#include "core/graph/verifier.h"
#include "core/interpreter/interpreter.h"
#include "core/tensor/npy.h"
#include "tests/support/compiled_check.h"
#include "tests/support/interp_helpers.h"

using namespace stax;
using namespace stax::test;
using cd = std::complex<double>;

namespace {

const double kPi = std::acos(-1.0);

Tensor randn(const Shape& s, DType t, uint64_t seed) { return Tensor::randn(s, t, seed); }

// The DFT of x (complex, double) over `dims` with sign -1 (forward) or +1, unnormalized.
std::vector<cd> dft(const std::vector<cd>& x, const Shape& sizes, const std::vector<int64_t>& dims,
                    int sign) {
  std::vector<cd> cur = x;
  Shape strides = contiguous_strides(sizes);
  for (int64_t d : dims) {
    std::vector<cd> next(cur.size());
    int64_t n = sizes[d], st = strides[d];
    for (int64_t i = 0; i < static_cast<int64_t>(cur.size()); ++i) {
      int64_t k = (i / st) % n, base = i - k * st;
      cd s = 0;
      for (int64_t j = 0; j < n; ++j)
        s += cur[base + j * st] * std::polar(1.0, sign * 2 * kPi * double(j * k) / double(n));
      next[i] = s;
    }
    cur = std::move(next);
  }
  return cur;
}

std::vector<cd> complex_values(const Tensor& t) {
  Tensor p = t.as_real_view().to(DType::Float64);
  std::vector<cd> out;
  for (int64_t i = 0; i < t.numel(); ++i) out.emplace_back(p.get_double(2 * i), p.get_double(2 * i + 1));
  return out;
}

std::vector<cd> real_values(const Tensor& t) {
  std::vector<cd> out;
  for (int64_t i = 0; i < t.numel(); ++i) out.emplace_back(t.get_double(i), 0.0);
  return out;
}

// The entries of the full-size `sizes` array `full` whose index along `dim` is < keep.
std::vector<cd> keep_prefix(const std::vector<cd>& full, const Shape& sizes, int64_t dim,
                            int64_t keep) {
  Shape st = contiguous_strides(sizes);
  std::vector<cd> out;
  for (int64_t i = 0; i < static_cast<int64_t>(full.size()); ++i)
    if ((i / st[dim]) % sizes[dim] < keep) out.push_back(full[i]);
  return out;
}

void expect_near(const std::vector<cd>& got, const std::vector<cd>& want, double tol,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 1;
  for (const cd& w : want) scale = std::max(scale, std::abs(w));
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_LE(std::abs(got[i] - want[i]), tol * scale) << what << " at " << i << ": " << got[i]
                                                       << " vs " << want[i];
}

double norm_factor(int64_t mode, int64_t n) {
  return mode == 0 ? 1.0 : mode == 1 ? 1.0 / std::sqrt(double(n)) : 1.0 / double(n);
}

Tensor run1(Graph& g, const std::vector<Tensor>& in) {
  verify(g);
  return interpret(g, in)[0];
}

}  // namespace

TEST(ComplexDType, NamesSizesAndTorchPromotion) {
  EXPECT_EQ(dtype_name(DType::Complex64), "complex64");
  EXPECT_EQ(dtype_name(DType::Complex128), "complex128");
  EXPECT_EQ(dtype_size(DType::Complex64), 8u);
  EXPECT_EQ(dtype_size(DType::Complex128), 16u);
  EXPECT_EQ(parse_dtype("torch.complex64"), DType::Complex64);
  EXPECT_EQ(parse_dtype("cdouble"), DType::Complex128);
  // torch.promote_types
  EXPECT_EQ(promote_types(DType::Complex64, DType::Float64), DType::Complex128);
  EXPECT_EQ(promote_types(DType::Float16, DType::Complex64), DType::Complex64);
  EXPECT_EQ(promote_types(DType::Int64, DType::Complex64), DType::Complex64);
  EXPECT_EQ(promote_types(DType::Bool, DType::Complex128), DType::Complex128);
  EXPECT_EQ(promote_types(DType::Complex64, DType::Complex128), DType::Complex128);
  EXPECT_FALSE(is_floating(DType::Complex64));
  EXPECT_EQ(complex_to_real(DType::Complex128), DType::Float64);
  EXPECT_EQ(real_to_complex(DType::Float32), DType::Complex64);
}

TEST(ComplexTensor, CopiesPrintsAndNpyRoundTrips) {
  Tensor re = Tensor::from_vector<double>({3}, {1, -2, 0.5});
  Tensor z = re.to(DType::Complex64);  // imaginary parts zero
  EXPECT_EQ(z.to_string(), "[1+0j, -2+0j, 0.5+0j]");
  Tensor parts = z.as_real_view();
  parts.set_double(1, 3.0);
  parts.set_double(3, -1.5);
  EXPECT_EQ(z.to_string(), "[1+3j, -2-1.5j, 0.5+0j]");
  // To real: the real parts, as torch; to bool: either part nonzero.
  EXPECT_EQ(z.to(DType::Float32).to_string(), "[1, -2, 0.5]");
  Tensor imag_only = Tensor::zeros({2}, DType::Complex64);
  imag_only.as_real_view().set_double(1, 2.0);
  EXPECT_EQ(imag_only.to(DType::Bool).to_string(), "[true, false]");
  Tensor w = z.to(DType::Complex128);
  EXPECT_TRUE(w.allclose(z));
  EXPECT_FALSE(w.allclose(re));
  for (const Tensor& t : {z, w}) {
    Tensor back = npy_from_bytes(npy_to_bytes(t));
    EXPECT_EQ(back.dtype(), t.dtype());
    EXPECT_TRUE(back.equal(t));
  }
  EXPECT_EQ(npy_descr(DType::Complex64), "<c8");
  EXPECT_EQ(npy_descr(DType::Complex128), "<c16");
  // NumPy writes the same bytes: its complex array reads back as these values.
  if (std::optional<Tensor> np = numpy_eval({}, "out = np.array([1+3j, -2-1.5j], np.complex64)")) {
    EXPECT_EQ(np->dtype(), DType::Complex64);
    EXPECT_EQ(np->to_string(), "[1+3j, -2-1.5j]");
  }
}

TEST(ComplexOps, OpsWithoutComplexSupportRejectItAtBuildTime) {
  Graph g;
  Node* x = g.placeholder("x", {4}, DType::Complex64);
  std::string e = error_of([&] { g.call("atan2.default", {x, x}); });
  EXPECT_TRUE(has(e, "atan2.default does not support complex tensors")) << e;
  EXPECT_TRUE(has(e, "complex64")) << e;
  Node* r = g.placeholder("r", {4});
  e = error_of([&] { g.call("ones", {std::vector<int64_t>{2}}, {{"dtype", DType::Complex64}}); });
  EXPECT_TRUE(has(e, "does not support complex tensors")) << e;
  e = error_of([&] { g.call("view_as_complex", {r}); });
  EXPECT_TRUE(has(e, "last dimension of size 2")) << e;
  e = error_of([&] { g.call("_fft_c2r", {x, std::vector<int64_t>{0}, 0, int64_t{9}}); });
  EXPECT_TRUE(has(e, "needs 5 (onesided) or 9")) << e;
  e = error_of([&] { g.call("_fft_r2c", {x, std::vector<int64_t>{0}, 0, true}); });
  EXPECT_TRUE(has(e, "float32 or float64")) << e;
  e = error_of([&] { g.call("_fft_r2c", {r, std::vector<int64_t>{0}, 3, true}); });
  EXPECT_TRUE(has(e, "normalization must be")) << e;
}

TEST(Fft, RealToComplexMatchesThePlainDft) {
  for (DType dt : {DType::Float32, DType::Float64}) {
    double tol = dt == DType::Float32 ? 2e-6 : 1e-13;
    for (const auto& [sizes, dims] : std::vector<std::pair<Shape, std::vector<int64_t>>>{
             {{7}, {0}}, {{8}, {0}}, {{1}, {0}}, {{3, 5}, {1}}, {{6, 3}, {0}}, {{4, 3, 5}, {0, 2}},
             {{4, 3, 5}, {2, 0}}, {{2, 3, 4}, {0, 1, 2}}}) {
      for (int64_t mode : {0, 1, 2}) {
        for (bool onesided : {true, false}) {
          Graph g;
          Node* x = g.placeholder("x", sizes, dt);
          g.output({g.call("_fft_r2c", {x, dims, mode, onesided})});
          Tensor in = randn(sizes, dt, 3);
          Tensor got = run1(g, {in});
          std::vector<cd> want = dft(real_values(in), sizes, dims, -1);
          int64_t n = 1;
          for (int64_t d : dims) n *= sizes[d];
          for (cd& v : want) v *= norm_factor(mode, n);
          if (onesided) want = keep_prefix(want, sizes, dims.back(), sizes[dims.back()] / 2 + 1);
          EXPECT_EQ(got.dtype(), real_to_complex(dt));
          expect_near(complex_values(got), want, tol,
                      shape_str(sizes) + " mode " + std::to_string(mode));
        }
      }
    }
  }
}

TEST(Fft, ComplexToRealInvertsTheOnesidedTransform) {
  for (DType dt : {DType::Float32, DType::Float64}) {
    double tol = dt == DType::Float32 ? 2e-6 : 1e-13;
    for (const auto& [sizes, dims] : std::vector<std::pair<Shape, std::vector<int64_t>>>{
             {{7}, {0}}, {{8}, {0}}, {{3, 5}, {1}}, {{4, 3, 5}, {0, 2}}, {{4, 6, 3}, {2, 1}},
             {{3, 4, 5}, {0, 1, 2}}}) {
      for (int64_t mode : {0, 1, 2}) {
        Graph g;
        Node* x = g.placeholder("x", sizes, dt);
        int64_t last = dims.back();
        Node* spec = g.call("_fft_r2c", {x, dims, mode, true});
        // irfft with the complementary normalization gives x back.
        g.output({g.call("_fft_c2r", {spec, dims, 2 - mode, sizes[last]})});
        Tensor in = randn(sizes, dt, 5);
        Tensor got = run1(g, {in});
        EXPECT_EQ(got.dtype(), dt);
        expect_near(real_values(got), real_values(in), tol, shape_str(sizes));
      }
    }
  }
}

// c2r of a spectrum that is not Hermitian-symmetric along the leading dims: torch's CPU kernels
// (and Stax) transform those dims complex-to-complex, then the last one complex-to-real.
TEST(Fft, ComplexToRealOfANonHermitianInputIsC2cThenC2r) {
  Shape sizes{3, 4};  // last dim: 4 entries -> n = 6 (or 7)
  for (int64_t n : {6, 7}) {
    Graph g;
    Node* z = g.placeholder("z", sizes, DType::Complex128);
    g.output({g.call("_fft_c2r", {z, std::vector<int64_t>{0, 1}, 0, n})});
    Tensor in = randn({3, 4, 2}, DType::Float64, 9);
    Tensor zin = Tensor::empty(sizes, DType::Complex128);
    zin.as_real_view().copy_from(in);
    Tensor got = run1(g, {zin});
    std::vector<cd> a = dft(complex_values(zin), sizes, {0}, +1);
    // 1-D c2r along dim 1: the Hermitian extension of each row (imaginary parts of the zero and
    // Nyquist entries ignored), inverse DFT, real part.
    std::vector<cd> want;
    for (int64_t r = 0; r < 3; ++r) {
      std::vector<cd> row(n);
      for (int64_t k = 0; k <= n / 2; ++k) row[k] = a[r * 4 + k];
      row[0] = row[0].real();
      if (n % 2 == 0) row[n / 2] = row[n / 2].real();
      for (int64_t k = n / 2 + 1; k < n; ++k) row[k] = std::conj(row[n - k]);
      std::vector<cd> y = dft(row, {n}, {0}, +1);
      for (const cd& v : y) want.emplace_back(v.real(), 0.0);
    }
    expect_near(real_values(got), want, 1e-13, "n=" + std::to_string(n));
  }
}

TEST(Fft, ComplexToComplexBothDirections) {
  Shape sizes{3, 5};
  Tensor in = Tensor::empty(sizes, DType::Complex64);
  in.as_real_view().copy_from(randn({3, 5, 2}, DType::Float32, 11));
  for (bool forward : {true, false}) {
    Graph g;
    Node* z = g.placeholder("z", sizes, DType::Complex64);
    g.output({g.call("_fft_c2c", {z, std::vector<int64_t>{1, 0}, 1, forward})});
    std::vector<cd> want = dft(complex_values(in), sizes, {0, 1}, forward ? -1 : 1);
    for (cd& v : want) v /= std::sqrt(15.0);
    expect_near(complex_values(run1(g, {in})), want, 2e-6, forward ? "forward" : "backward");
  }
}

// A spectral filter: rfft2 -> real view * weights -> complex -> irfft2, plus complex(re, im) and
// conj: compiled on cpu_cpp, the spectral ops run as counted fallbacks and every output is the
// interpreter's bit for bit.
TEST(Fft, CompiledSpectralLayerFallsBackBitForBit) {
  Graph g;
  Node* x = g.placeholder("x", {2, 4, 6});
  Node* w = g.placeholder("w", {4, 4, 1});
  Node* y = g.call("_fft_r2c", {x, std::vector<int64_t>{1, 2}, 1, true});
  Node* yr = g.call("mul.Tensor", {g.call("view_as_real", {y}), w});
  Node* out = g.call("_fft_c2r", {g.call("view_as_complex", {yr}), std::vector<int64_t>{1, 2}, 1,
                                  int64_t{6}});
  Node* c = g.call("complex", {x, g.call("relu", {x})});
  Node* cj = g.call("view_as_real", {g.call("conj_physical", {c})});
  // Views and copies of a complex value (slice, permute, clone) also run on the interpreter.
  Node* sl = g.call("clone", {g.call("permute", {g.call("slice.Tensor", {y, 2, 1, 3}),
                                                   std::vector<int64_t>{2, 0, 1}})});
  g.output({g.call("add.Tensor", {out, x}), cj, y, sl});
  verify(g);
  std::vector<Tensor> in{randn({2, 4, 6}, DType::Float32, 1), randn({4, 4, 1}, DType::Float32, 2)};
  std::vector<Tensor> want = reference(g, in);
  CompiledGraph cg = cpu_compiler().compile(g);
  std::vector<Tensor> got = cg.run(in);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i].equal(want[i])) << i;
  EXPECT_EQ(got[2].dtype(), DType::Complex64);
  EXPECT_EQ(got[3].sizes(), (Shape{2, 2, 4}));
  EXPECT_GE(cg.num_fallbacks(), 8u) << cg.summary();
  EXPECT_TRUE(has(cg.summary(), "_fft_r2c")) << cg.summary();
  EXPECT_GE(cg.num_kernels(), 1u) << cg.summary();  // mul, relu, add: real kernels
}

// Gradients of real losses through the spectral ops against central differences (float64).
TEST(Fft, VjpsMatchCentralDifferences) {
  struct Case {
    const char* name;
    Shape shape;
    std::function<Node*(Graph&, Node*)> f;
  };
  auto r2c = [](std::vector<int64_t> dims, int64_t mode, bool onesided) {
    return [=](Graph& g, Node* x) {
      return g.call("view_as_real", {g.call("_fft_r2c", {x, dims, mode, onesided})});
    };
  };
  auto c2r = [](std::vector<int64_t> dims, int64_t mode, int64_t n) {
    return [=](Graph& g, Node* x) {
      return g.call("_fft_c2r", {g.call("view_as_complex", {x}), dims, mode, n});
    };
  };
  std::vector<Case> cases{
      {"r2c 7", {3, 7}, r2c({1}, 0, true)},
      {"r2c 8 ortho", {8, 3}, r2c({0}, 1, true)},
      {"r2c 2-d by n", {4, 5}, r2c({0, 1}, 2, true)},
      {"r2c twosided", {5}, r2c({0}, 0, false)},
      {"c2r 9", {3, 5, 2}, c2r({1}, 2, 9)},
      {"c2r 8", {3, 5, 2}, c2r({1}, 0, 8)},
      {"c2r 2-d", {4, 3, 2}, c2r({0, 1}, 1, 5)},
      {"c2c", {3, 4, 2},
       [](Graph& g, Node* x) {
         Node* z = g.call("_fft_c2c", {g.call("view_as_complex", {x}), std::vector<int64_t>{0, 1},
                                       1, true});
         return g.call("imag", {z});
       }},
      // The complex helper ops' rules (the autodiff case tables hold real tensors only, so
      // their coverage tests name these ops as checked here: pending_gradient_checks.h).
      {"real", {3, 4, 2},
       [](Graph& g, Node* x) { return g.call("real", {g.call("view_as_complex", {x})}); }},
      {"complex", {3, 4},
       [](Graph& g, Node* x) {
         Node* im = g.call("mul.Tensor", {x, x});
         return g.call("view_as_real", {g.call("complex", {x, im})});
       }},
      {"conj_physical", {3, 4, 2},
       [](Graph& g, Node* x) {
         return g.call("view_as_real",
                       {g.call("conj_physical", {g.call("view_as_complex", {x})})});
       }},
      {"_conj", {3, 4, 2},
       [](Graph& g, Node* x) {
         return g.call("imag", {g.call("_conj", {g.call("view_as_complex", {x})})});
       }},
      {"_conj_physical", {3, 4, 2},
       [](Graph& g, Node* x) {
         return g.call("imag", {g.call("_conj_physical", {g.call("view_as_complex", {x})})});
       }},
  };
  for (const Case& k : cases) {
    Graph g;
    Node* x = g.placeholder("x", k.shape, DType::Float64);
    Node* y = k.f(g, x);
    g.output({y});
    Tensor in = randn(k.shape, DType::Float64, 4);
    Tensor u = randn(y->shape(), DType::Float64, 6);
    VjpResult r = vjp(g, {in}, {u});
    ASSERT_EQ(r.grads.size(), 1u) << k.name;
    const double h = 1e-6;
    for (int64_t i = 0; i < in.numel(); ++i) {
      Tensor p = in.clone(), m = in.clone();
      p.set_double(i, in.get_double(i) + h);
      m.set_double(i, in.get_double(i) - h);
      Tensor fp = interpret(g, {p})[0], fm = interpret(g, {m})[0];
      double d = 0;
      for (int64_t j = 0; j < u.numel(); ++j)
        d += u.get_double(j) * (fp.get_double(j) - fm.get_double(j)) / (2 * h);
      EXPECT_NEAR(r.grads[0].get_double(i), d, 1e-6 * std::max(1.0, std::fabs(d)))
          << k.name << " element " << i;
    }
  }
}
