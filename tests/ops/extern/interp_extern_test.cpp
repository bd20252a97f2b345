// Matrix products: inference for every matmul rank case, must-fail errors, interpreter values
// against a naive triple loop in double (BLAS and the plain-loop dtypes) and against numpy.
#include <gtest/gtest.h>

#include <cmath>

#include "core/graph/graph.h"
#include "core/graph/op_registry.h"
#include "core/interpreter/interpreter.h"
#include "core/support/error.h"
#include "tests/support/interp_helpers.h"

using namespace stax;
using namespace stax::test;

namespace {

// numpy.matmul semantics written plainly, in double: (result, sum of |a_ik b_kj| per element).
std::pair<Tensor, Tensor> naive_matmul(const Tensor& a_in, const Tensor& b_in) {
  Shape as = a_in.sizes(), bs = b_in.sizes();
  bool a1 = as.size() == 1, b1 = bs.size() == 1;
  if (a1) as.insert(as.begin(), 1);
  if (b1) bs.push_back(1);
  Tensor a = a_in.contiguous().as_strided(as, contiguous_strides(as), 0);
  Tensor b = b_in.contiguous().as_strided(bs, contiguous_strides(bs), 0);
  size_t nb = std::max(as.size(), bs.size()) - 2;
  Shape batch(nb);
  for (size_t i = 0; i < nb; ++i) {
    auto dim = [&](const Shape& s) -> int64_t {
      size_t lead = nb - (s.size() - 2);
      return i < lead ? 1 : s[i - lead];
    };
    batch[i] = std::max(dim(as), dim(bs));
  }
  int64_t n = as[as.size() - 2], k = as.back(), m = bs.back();
  Shape out = batch;
  out.push_back(n);
  out.push_back(m);
  Tensor r = Tensor::zeros(out, DType::Float64), mag = Tensor::zeros(out, DType::Float64);
  auto operand_index = [&](const Shape& s, const std::vector<int64_t>& bi, int64_t i, int64_t j) {
    std::vector<int64_t> idx;
    size_t lead = nb - (s.size() - 2);
    for (size_t d = lead; d < nb; ++d) idx.push_back(s[d - lead] == 1 ? 0 : bi[d]);
    idx.push_back(i);
    idx.push_back(j);
    return idx;
  };
  int64_t nbatch = shape_numel(batch);
  for (int64_t lin = 0; lin < nbatch; ++lin) {
    std::vector<int64_t> bi(nb);
    for (int64_t rem = lin, d = static_cast<int64_t>(nb) - 1; d >= 0; --d) {
      bi[d] = rem % batch[d];
      rem /= batch[d];
    }
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j) {
        double s = 0, sa = 0;
        for (int64_t p = 0; p < k; ++p) {
          double x = a.item_as_double(operand_index(as, bi, i, p)) *
                     b.item_as_double(operand_index(bs, bi, p, j));
          s += x;
          sa += std::fabs(x);
        }
        std::vector<int64_t> oi = bi;
        oi.push_back(i);
        oi.push_back(j);
        r.set_from_double(oi, s);
        mag.set_from_double(oi, sa);
      }
  }
  Shape final_shape = batch;
  if (!a1) final_shape.push_back(n);
  if (!b1) final_shape.push_back(m);
  return {r.as_strided(final_shape, contiguous_strides(final_shape), 0),
          mag.as_strided(final_shape, contiguous_strides(final_shape), 0)};
}

// |got - want| <= k * eps * magnitude + tiny, elementwise.
void expect_gemm_close(const Tensor& got, const std::pair<Tensor, Tensor>& want, int64_t k,
                       double eps) {
  ASSERT_EQ(got.sizes(), want.first.sizes());
  for (int64_t i = 0; i < got.numel(); ++i) {
    double bound = static_cast<double>(k + 1) * eps * want.second.get_double(i) + 1e-30;
    EXPECT_NEAR(got.get_double(i), want.first.get_double(i), bound) << "element " << i;
  }
}

Tensor run1(Graph& g, const std::vector<Tensor>& in) { return interpret(g, in).at(0); }

}  // namespace

TEST(MatmulInference, AllRankCases) {
  Graph g;
  auto mm = [&](Shape a, Shape b) {
    return g.call("matmul", {g.placeholder("", a), g.placeholder("", b)})->shape();
  };
  EXPECT_EQ(mm({4}, {4}), Shape{});
  EXPECT_EQ(mm({3, 4}, {4}), (Shape{3}));
  EXPECT_EQ(mm({4}, {4, 5}), (Shape{5}));
  EXPECT_EQ(mm({3, 4}, {4, 5}), (Shape{3, 5}));
  EXPECT_EQ(mm({2, 3, 4}, {4}), (Shape{2, 3}));
  EXPECT_EQ(mm({4}, {2, 4, 5}), (Shape{2, 5}));
  EXPECT_EQ(mm({2, 1, 3, 4}, {5, 4, 6}), (Shape{2, 5, 3, 6}));
  EXPECT_EQ(g.call("mm", {g.placeholder("", {3, 4}), g.placeholder("", {4, 5})})->shape(),
            (Shape{3, 5}));
  EXPECT_EQ(g.call("bmm", {g.placeholder("", {2, 3, 4}), g.placeholder("", {2, 4, 5})})->shape(),
            (Shape{2, 3, 5}));
  Node* add = g.call(
      "addmm", {g.placeholder("", {5}), g.placeholder("", {3, 4}), g.placeholder("", {4, 5})});
  EXPECT_EQ(add->shape(), (Shape{3, 5}));
  EXPECT_EQ(g.registry().get("addmm").category, OpCategory::Extern);
}

TEST(MatmulErrors, ShapeMismatchNamesShapesAndNode) {
  Graph g;
  Node* a = g.placeholder("a", {3, 4});
  Node* b = g.placeholder("b", {5, 6});
  std::string m = error_of([&] { g.call("matmul", {a, b}, {}, "mm_bad"); });
  EXPECT_TRUE(has(m, "%mm_bad") && has(m, "(3, 4)") && has(m, "(5, 6)")) << m;
  m = error_of([&] { g.call("mm", {a, g.placeholder("c", {2, 4, 5})}, {}, "mm3"); });
  EXPECT_TRUE(has(m, "%mm3") && has(m, "2-D") && has(m, "(2, 4, 5)")) << m;
  m = error_of([&] {
    g.call("bmm", {g.placeholder("", {2, 3, 4}), g.placeholder("", {3, 4, 5})}, {}, "bmm_bad");
  });
  EXPECT_TRUE(has(m, "%bmm_bad") && has(m, "(2, 3, 4)") && has(m, "(3, 4, 5)")) << m;
  m = error_of([&] {
    g.call("matmul", {g.placeholder("", {2, 3, 4}), g.placeholder("", {3, 4, 5})}, {}, "bb");
  });
  EXPECT_TRUE(has(m, "%bb") && has(m, "(2,)") && has(m, "(3,)")) << m;  // batch dims
  m = error_of([&] {
    g.call("matmul", {a, g.placeholder("d", {4, 2}, DType::Float64)}, {}, "dt");
  });
  EXPECT_TRUE(has(m, "%dt") && has(m, "float32") && has(m, "float64")) << m;
  m = error_of([&] {
    g.call("addmm", {g.placeholder("", {4}), a, g.placeholder("", {4, 5})}, {}, "am");
  });
  EXPECT_TRUE(has(m, "%am") && has(m, "(4,)") && has(m, "(3, 5)")) << m;
}

TEST(MatmulInterp, HandComputed) {
  Graph g;
  Node* a = g.placeholder("a", {2, 2});
  Node* b = g.placeholder("b", {2, 2});
  Node* c = g.placeholder("c", {2});
  g.output({g.call("mm", {a, b}), g.call("matmul", {c, c}), g.call("matmul", {a, c}),
            g.call("addmm", {c, a, b}, {{"beta", 2}, {"alpha", 0.5}})});
  auto r = interpret(g, {Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4}),
                         Tensor::from_vector<float>({2, 2}, {5, 6, 7, 8}),
                         Tensor::from_vector<float>({2}, {1, -1})});
  EXPECT_EQ(r[0].to_vector<float>(), (std::vector<float>{19, 22, 43, 50}));
  EXPECT_EQ(r[1].dim(), 0);
  EXPECT_EQ(r[1].item(), 2);
  EXPECT_EQ(r[2].to_vector<float>(), (std::vector<float>{-1, -1}));
  EXPECT_EQ(r[3].to_vector<float>(), (std::vector<float>{11.5f, 9, 23.5f, 23}));
}

TEST(MatmulInterp, AgainstNaiveLoopAllRanksFloat) {
  struct Case {
    Shape a, b;
  };
  std::vector<Case> cases = {{{7}, {7}},
                             {{5, 7}, {7}},
                             {{7}, {7, 3}},
                             {{5, 7}, {7, 3}},
                             {{2, 5, 7}, {7}},
                             {{7}, {2, 7, 3}},
                             {{2, 1, 5, 7}, {4, 7, 3}},
                             {{1, 5, 7}, {3, 7, 2}},
                             {{0, 7}, {7, 3}},
                             {{5, 0}, {0, 3}}};
  uint64_t seed = 1;
  for (DType dt : {DType::Float32, DType::Float64}) {
    for (const Case& c : cases) {
      Graph g;
      g.output({g.call("matmul", {g.placeholder("a", c.a, dt), g.placeholder("b", c.b, dt)})});
      Tensor a = Tensor::randn(c.a, dt, seed++), b = Tensor::randn(c.b, dt, seed++);
      Tensor got = run1(g, {a, b});
      SCOPED_TRACE(shape_str(c.a) + " @ " + shape_str(c.b) + " " + std::string(dtype_name(dt)));
      expect_gemm_close(got, naive_matmul(a, b), c.a.back(),
                        dt == DType::Float32 ? 0x1p-24 : 0x1p-53);
    }
  }
}

TEST(MatmulInterp, StridedOperandsUseTransAndCopies) {
  // t() views reach BLAS as CblasTrans; a sliced (every other column) operand goes via a copy.
  Graph g;
  Node* a = g.placeholder("a", {6, 5});
  Node* b = g.placeholder("b", {4, 12});
  Node* at = g.call("t", {a});                             // (5, 6), strides (1, 5)
  Node* bs = g.call("slice.Tensor", {b, 1, 0, Arg(), 2});  // (4, 6), strides (12, 2)
  Node* bt = g.call("t", {bs});                            // (6, 4), strides (2, 12)
  g.output({g.call("mm", {at, bt}), g.call("matmul", {bs, a})});
  Tensor ta = Tensor::randn({6, 5}, DType::Float32, 5),
         tb = Tensor::randn({4, 12}, DType::Float32, 6);
  auto r = interpret(g, {ta, tb});
  Tensor at_v = ta.as_strided({5, 6}, {1, 5}, 0);
  Tensor bs_v = tb.as_strided({4, 6}, {12, 2}, 0);
  Tensor bt_v = tb.as_strided({6, 4}, {2, 12}, 0);
  expect_gemm_close(r[0], naive_matmul(at_v, bt_v), 6, 0x1p-24);
  expect_gemm_close(r[1], naive_matmul(bs_v, ta), 6, 0x1p-24);
}

TEST(MatmulInterp, PlainLoopDtypes) {
  Graph g;
  Node* a = g.placeholder("a", {2, 3, 4}, DType::Int64);
  Node* b = g.placeholder("b", {4, 2}, DType::Int64);
  Node* h = g.placeholder("h", {3, 4}, DType::Float16);
  Node* hb = g.placeholder("hb", {4}, DType::Float16);
  g.output({g.call("matmul", {a, b}), g.call("matmul", {h, hb})});
  Tensor ta = Tensor::randint({2, 3, 4}, -9, 10, DType::Int64, 1);
  Tensor tb = Tensor::randint({4, 2}, -9, 10, DType::Int64, 2);
  Tensor th = Tensor::randn({3, 4}, DType::Float16, 3), thb = Tensor::randn({4}, DType::Float16, 4);
  auto r = interpret(g, {ta, tb, th, thb});
  EXPECT_EQ(r[0].dtype(), DType::Int64);
  EXPECT_TRUE(r[0].to(DType::Float64).equal(naive_matmul(ta, tb).first));  // exact for integers
  EXPECT_EQ(r[1].dtype(), DType::Float16);
  // Accumulated in double, rounded once to float16.
  EXPECT_TRUE(r[1].equal(naive_matmul(th, thb).first.to(DType::Float16)));
}

TEST(MatmulInterp, AddmmBetaZeroIgnoresNan) {
  Graph g;
  Node* s = g.placeholder("s", {2, 2});
  Node* a = g.placeholder("a", {2, 2});
  g.output({g.call("addmm", {s, a, a}, {{"beta", 0}, {"alpha", 1}}),
            g.call("addmm", {s, a, a}, {{"beta", 0.0}, {"alpha", 2}})});
  auto r = interpret(
      g, {Tensor::full({2, 2}, std::nan("")), Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4})});
  EXPECT_EQ(r[0].to_vector<float>(), (std::vector<float>{7, 10, 15, 22}));
  EXPECT_EQ(r[1].to_vector<float>(), (std::vector<float>{14, 20, 30, 44}));
}

TEST(MatmulInterp, BatchedBroadcastMatchesNumpy) {
  Graph g;
  Node* a = g.placeholder("a", {3, 1, 4, 6}, DType::Float64);
  Node* b = g.placeholder("b", {5, 6, 2}, DType::Float64);
  g.output({g.call("matmul", {a, b})});
  Tensor ta = Tensor::randn({3, 1, 4, 6}, DType::Float64, 21);
  Tensor tb = Tensor::randn({5, 6, 2}, DType::Float64, 22);
  Tensor got = run1(g, {ta, tb});
  auto want = numpy_eval({ta, tb}, "a, b = ins\nout = np.matmul(a, b)");
  if (!want) GTEST_SKIP() << "python3 with numpy is not available";
  EXPECT_TRUE(got.allclose(*want, 1e-12, 1e-12)) << got.summary() << " vs " << want->summary();
}
