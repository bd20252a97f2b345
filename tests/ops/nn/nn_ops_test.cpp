// The neural-network ops (core/graph/ops/nn_ops.cpp): values on the interpreter against
// hand-computed ones and against an independent implementation (the direct loops of convolution,
// pooling and batch_norm vs their decompositions; convolution_transpose as the adjoint of
// convolution), the compiled path on cpu_cpp (convolution's im2col + gemm extern, the decomposed
// ops fused) against the interpreter, the fallback of convolution on a plugin without the extern,
// and must-fail shapes. Gradients and tangents against finite differences: tests/nn_cases.h (run
// by autodiff_vjp_test and autodiff_functional_test).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/graph/decompositions.h"
#include "core/graph/op_registry.h"
#include "core/autodiff/joint_graph.h"
#include "core/support/error.h"
#include "tests/support/compiled_check.h"
#include "tests/support/strings.h"

namespace stax {
namespace {

using Ints = std::vector<int64_t>;

Tensor tensor_of(const Shape& s, const std::vector<double>& v, DType t = DType::Float64) {
  Tensor x = Tensor::empty(s, t);
  for (int64_t i = 0; i < x.numel(); ++i) x.set_double(i, v.at(static_cast<size_t>(i)));
  return x;
}

Tensor random_tensor(const Shape& s, uint64_t seed, DType t = DType::Float64) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-2, 2);
  Tensor x = Tensor::empty(s, t);
  for (int64_t i = 0; i < x.numel(); ++i) x.set_double(i, u(rng));
  return x;
}

void expect_values(const Tensor& t, const std::vector<double>& want, double tol = 1e-12) {
  ASSERT_EQ(t.numel(), static_cast<int64_t>(want.size()));
  for (int64_t i = 0; i < t.numel(); ++i)
    EXPECT_NEAR(t.get_double(i), want[static_cast<size_t>(i)], tol) << "element " << i;
}

void expect_close(const Tensor& a, const Tensor& b, double rtol, double atol, const std::string& what) {
  ASSERT_EQ(a.sizes(), b.sizes()) << what;
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double x = a.get_double(i), y = b.get_double(i);
    if (std::isnan(x) || std::isnan(y)) {
      if (std::isnan(x) != std::isnan(y)) {
        ADD_FAILURE() << what << ": element " << i << " is " << x << ", want " << y;
        return;
      }
      continue;
    }
    double err = std::abs(x - y) - (atol + rtol * std::abs(y));
    worst = std::max(worst, err);
    if (err > 0) {
      ADD_FAILURE() << what << ": element " << i << " is " << x << ", want " << y;
      return;
    }
  }
}

// One call over placeholders named x0, x1, ... with the given values.
struct OneOp {
  Graph g;
  std::vector<Tensor> in;
};
OneOp one_op(const std::string& op, const std::vector<Tensor>& tensors, std::vector<Arg> extra,
             Kwargs kw = {}) {
  OneOp o;
  std::vector<Arg> args;
  for (size_t i = 0; i < tensors.size(); ++i) {
    args.push_back(o.g.placeholder("x" + std::to_string(i), tensors[i].meta()));
    o.in.push_back(tensors[i]);
  }
  args.insert(args.end(), extra.begin(), extra.end());
  o.g.output({o.g.call(op, args, std::move(kw))});
  return o;
}

Tensor run1(const std::string& op, const std::vector<Tensor>& t, std::vector<Arg> extra = {}, Kwargs kw = {}) {
  OneOp o = one_op(op, t, std::move(extra), std::move(kw));
  return interpret(o.g, o.in).at(0);
}

// The op's decomposition (recursively into base ops) run on the interpreter.
Tensor run_decomposed(const std::string& op, const std::vector<Tensor>& t, std::vector<Arg> extra) {
  OneOp o = one_op(op, t, std::move(extra));
  decompose(o.g);
  for (const Node* n : o.g.nodes())
    if (n->is_call()) {
      EXPECT_NE(n->op()->category, OpCategory::Composite) << n->target();
    }
  return interpret(o.g, o.in).at(0);
}

// ---- convolution ---------------------------------------------------------------------------

TEST(NnConvolution, HandComputed1d) {
  // y[o] = x[o-1] - x[o+1] (padding 1), plus bias 0.5
  Tensor x = tensor_of({1, 1, 4}, {1, 2, 3, 4});
  Tensor w = tensor_of({1, 1, 3}, {1, 0, -1});
  Tensor b = tensor_of({1}, {0.5});
  expect_values(run1("conv1d", {x, w, b}, {Ints{1}, Ints{1}}), {-1.5, -1.5, -1.5, 3.5});
  // stride 2, dilation 2, no padding: y[o] = x[2o] - x[2o+4] over x of length 7
  Tensor x7 = tensor_of({1, 1, 7}, {1, 2, 4, 8, 16, 32, 64});
  expect_values(run1("convolution", {x7, w}, {Arg(), Ints{2}, Ints{0}, Ints{2}, false, Ints{0}, 1}),
                {1 - 16, 4 - 64});
  // transposed, stride 2: y[2i + k - 0] += x[i] w[k]
  Tensor xt = tensor_of({1, 1, 2}, {1, 10});
  expect_values(run1("conv_transpose1d", {xt, w}, {Arg(), Ints{2}}), {1, 0, -1 + 10, 0, -10});
}

TEST(NnConvolution, OneByOneIsAMatrixProduct) {
  Tensor x = random_tensor({2, 3, 4, 5}, 1), w = random_tensor({6, 3, 1, 1}, 2);
  Tensor y = run1("conv2d", {x, w}, {});
  // y[n, o, h, w] = Σ_c w[o, c] x[n, c, h, w]
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t o = 0; o < 6; ++o)
      for (int64_t s = 0; s < 20; ++s) {
        double want = 0;
        for (int64_t c = 0; c < 3; ++c) want += w.get_double(o * 3 + c) * x.get_double((n * 3 + c) * 20 + s);
        EXPECT_NEAR(y.get_double((n * 6 + o) * 20 + s), want, 1e-12);
      }
}

// <conv(x, w), y> = <x, conv_transpose(y, w)> for every geometry (groups, stride, padding,
// dilation, 1-3 spatial dims): the transposed kernel is the adjoint of the direct one.
TEST(NnConvolution, TransposedIsTheAdjoint) {
  struct G {
    Shape x, w;
    Ints s, p, d;
    int64_t groups;
  };
  std::vector<G> cases = {
      {{2, 4, 9}, {6, 2, 3}, {2}, {1}, {2}, 2},
      {{1, 3, 7, 6}, {4, 3, 3, 2}, {2, 1}, {1, 0}, {1, 2}, 1},
      {{2, 4, 5, 5}, {4, 1, 3, 3}, {1, 2}, {1, 1}, {1, 1}, 4},
      {{1, 2, 4, 5, 4}, {2, 2, 2, 3, 2}, {1, 2, 1}, {0, 1, 1}, {2, 1, 1}, 1}};
  for (size_t k = 0; k < cases.size(); ++k) {
    const G& c = cases[k];
    Tensor x = random_tensor(c.x, 10 + k), w = random_tensor(c.w, 20 + k);
    Ints zeros(c.s.size(), 0);
    Tensor y = run1("convolution", {x, w}, {Arg(), c.s, c.p, c.d, false, zeros, c.groups});
    Tensor v = random_tensor(y.sizes(), 30 + k);
    // output_padding so that the transposed result has x's size
    Ints op(c.s.size());
    for (size_t i = 0; i < op.size(); ++i) {
      int64_t L = c.x[2 + i], K = c.w[2 + i], O = y.sizes()[2 + i];
      op[i] = L - ((O - 1) * c.s[i] - 2 * c.p[i] + c.d[i] * (K - 1) + 1);
    }
    Tensor xt = run1("convolution", {v, w}, {Arg(), c.s, c.p, c.d, true, op, c.groups});
    ASSERT_EQ(xt.sizes(), x.sizes());
    double lhs = 0, rhs = 0;
    for (int64_t i = 0; i < y.numel(); ++i) lhs += y.get_double(i) * v.get_double(i);
    for (int64_t i = 0; i < x.numel(); ++i) rhs += x.get_double(i) * xt.get_double(i);
    EXPECT_NEAR(lhs, rhs, 1e-9 * (1 + std::abs(lhs))) << "case " << k;
  }
}

// Integer convolution, as torch's slow path: exact, wrapping in the element type (torch 2.15:
// conv1d of int8 100s by a kernel of 3s gives 600 mod 256 = 88, with a bias of 100: -68); the
// small-value results equal float64's; compiled, a counted fallback with the interpreter's bits.
TEST(NnConvolution, IntegerInputsWrapAsTorch) {
  Tensor x8 = tensor_of({1, 1, 3}, {100, 100, 100}, DType::Int8);
  Tensor w8 = tensor_of({1, 1, 2}, {3, 3}, DType::Int8);
  Tensor b8 = tensor_of({1}, {100}, DType::Int8);
  expect_values(run1("conv1d", {x8, w8}), {88, 88}, 0);
  expect_values(run1("conv1d", {x8, w8, b8}), {-68, -68}, 0);
  // int64 past 2^53 (exact, not through double) and past 2^63 (wraps)
  Tensor xl = tensor_of({1, 1, 2}, {0, 0}, DType::Int64), wl = tensor_of({1, 1, 1}, {0}, DType::Int64);
  xl.set_int(0, (int64_t{1} << 53) + 1);
  xl.set_int(1, int64_t{1} << 40);
  wl.set_int(0, 3);
  Tensor yl = run1("conv1d", {xl, wl});
  EXPECT_EQ(yl.get_int(0), 3 * ((int64_t{1} << 53) + 1));
  wl.set_int(0, int64_t{1} << 30);
  Tensor bl = tensor_of({1}, {0}, DType::Int64);
  bl.set_int(0, int64_t{1} << 62);
  Tensor yw = run1("conv1d", {xl, wl, bl});  // (2^53 + 1) 2^30 and 2^40 2^30 modulo 2^64, + 2^62
  EXPECT_EQ(yw.get_int(0), (int64_t{1} << 62) + (int64_t{1} << 30));
  EXPECT_EQ(yw.get_int(1), int64_t{1} << 62);
  struct C {
    const char* op;
    Shape x, w;
    std::vector<Arg> extra;
    DType t;
  };
  for (const C& c : std::vector<C>{
           {"conv2d", {2, 4, 5, 6}, {4, 2, 3, 2}, {Arg(), Ints{2, 1}, Ints{1, 0}, Ints{1, 2}, 2}, DType::Int64},
           {"conv2d", {2, 4, 5, 6}, {3, 4, 3, 2}, {Arg(), Ints{1}, Ints{1}}, DType::Int32},
           {"conv3d", {1, 2, 3, 4, 3}, {2, 2, 2, 2, 2}, {}, DType::UInt8},
           {"conv1d", {2, 3, 7}, {4, 3, 3}, {Arg(), Ints{2}}, DType::Int16},
           {"conv_transpose2d.input", {2, 4, 3, 3}, {4, 3, 3, 2}, {Arg(), Ints{2, 1}, Ints{1, 0}, Ints{1, 0}, 2},
            DType::Int64},
           {"conv_transpose1d", {1, 3, 5}, {3, 2, 3}, {Arg(), Ints{2}, Ints{1}, Ints{0}, 1, Ints{2}}, DType::Int64}}) {
    SCOPED_TRACE(std::string(c.op) + " " + std::string(dtype_name(c.t)));
    Tensor x = Tensor::empty(c.x, c.t), w = Tensor::empty(c.w, c.t);
    bool u = c.t == DType::UInt8;
    for (int64_t i = 0; i < x.numel(); ++i) x.set_int(i, (i * 7 + 3) % 9 - (u ? 0 : 4));
    for (int64_t i = 0; i < w.numel(); ++i) w.set_int(i, (i * 5 + 1) % 7 - (u ? 0 : 3));
    Tensor got = run1(c.op, {x, w}, c.extra);
    ASSERT_EQ(got.dtype(), c.t);
    Tensor want = run1(c.op, {x.to(DType::Float64), w.to(DType::Float64)}, c.extra);
    for (int64_t i = 0; i < got.numel(); ++i) {
      double v = want.get_double(i);
      if (u) v = std::fmod(v, 256.0);  // uint8 wraps (the inputs are nonnegative)
      ASSERT_EQ(static_cast<double>(got.get_int(i)), v) << "element " << i;
    }
    OneOp o = one_op(c.op, {x, w}, c.extra);
    CompiledGraph cg = test::cpu_compiler().compile(o.g);
    EXPECT_TRUE(test::bitwise_equal(cg.run(o.in).at(0), got));
    EXPECT_EQ(cg.num_fallbacks(), 1u) << cg.summary();
  }
  Graph g;
  auto rejects = [&g](const char* op, DType t, const char* why) {
    Node* a = g.placeholder(std::string("a_") + std::string(dtype_name(t)) + op, {1, 2, 4}, t);
    Node* b = g.placeholder(std::string("b_") + std::string(dtype_name(t)) + op, {2, 2, 2}, t);
    try {
      g.call(op, {a, b});
      ADD_FAILURE() << op << " of " << dtype_name(t) << ": expected an error";
    } catch (const Error& e) {
      EXPECT_TRUE(test::contains(e.what(), why)) << e.what();
    }
  };
  rejects("conv_transpose1d", DType::Int32, "takes int64 only");
  rejects("conv1d", DType::Bool, "floating or integer dtype");
  rejects("conv1d", DType::UInt16, "not implemented for 'UInt16'");
}

TEST(NnConvolution, BadShapesAreClearErrors) {
  Graph g;
  Node* x = g.placeholder("x", {1, 3, 8, 8});
  Node* w = g.placeholder("w", {4, 2, 3, 3});
  try {
    g.call("conv2d", {x, w});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_TRUE(test::contains(e.what(), "input channels")) << e.what();
  }
  Node* w2 = g.placeholder("w2", {4, 3, 3, 3});
  EXPECT_THROW(g.call("conv2d", {x, w2, Arg(), Ints{0, 0}}), Error);           // stride 0
  EXPECT_THROW(g.call("conv2d", {x, w2, Arg(), Ints{1}, Ints{0}, Ints{9}}), Error);  // kernel > input
  EXPECT_THROW(g.call("max_pool2d", {x, Ints{2, 2}, Ints{}, Ints{2, 2}}), Error);  // pad > k/2
  EXPECT_THROW(g.call("scaled_dot_product_attention", {x, x, x, Arg(), 1.0}), Error);  // dropout_p 1
}

// ---- pooling, batch_norm: direct kernels vs decompositions -----------------------------------

TEST(NnPooling, HandComputed) {
  Tensor x = tensor_of({1, 1, 5}, {1, 5, 2, 4, 3});
  expect_values(run1("max_pool1d", {x}, {Ints{2}}), {5, 4});
  expect_values(run1("max_pool1d", {x}, {Ints{2}, Ints{2}, Ints{0}, Ints{1}, true}), {5, 4, 3});
  expect_values(run1("avg_pool1d", {x}, {Ints{3}, Ints{1}, Ints{1}}),
                {6.0 / 3, 8.0 / 3, 11.0 / 3, 9.0 / 3, 7.0 / 3});
  expect_values(run1("avg_pool1d", {x}, {Ints{3}, Ints{1}, Ints{1}, false, false}),
                {6.0 / 2, 8.0 / 3, 11.0 / 3, 9.0 / 3, 7.0 / 2});
  expect_values(run1("adaptive_avg_pool1d", {x}, {Ints{2}}), {8.0 / 3, 9.0 / 3});
}

// A tie inside a window: the whole gradient goes to the first maximum (torch's choice).
TEST(NnPooling, MaxPoolGradientGoesToTheFirstMaximum) {
  Graph g;
  Node* x = g.placeholder("x", TensorMeta::contiguous({1, 1, 6}, DType::Float64));
  g.output({g.call("sum", {g.call("max_pool1d", {x, Ints{3}, Ints{2}, Ints{1}})})});
  JointGraph j = build_joint_graph(g, {"x"});
  Tensor v = tensor_of({1, 1, 6}, {2, 2, 1, 5, 5, 5});
  std::vector<Tensor> r = interpret(j.graph, {v, Tensor::ones({}, DType::Float64)});
  // windows (pad, x0, x1) = (-inf, 2, 2), (x1, x2, x3) = (2, 1, 5), (x3, x4, x5) = (5, 5, 5):
  // first maxima at x0, x3, x3
  expect_values(r[1], {1, 0, 0, 2, 0, 0});
}

TEST(NnPooling, DirectKernelsAgreeWithDecompositions) {
  struct P {
    std::string op;
    Shape x;
    std::vector<Arg> args;
  };
  std::vector<P> cases = {
      {"max_pool2d", {2, 3, 7, 6}, {Ints{3, 2}, Ints{2, 2}, Ints{1, 0}, Ints{1, 2}, true}},
      {"max_pool2d", {1, 2, 8, 8}, {Ints{2, 2}}},
      {"max_pool1d", {2, 9}, {Ints{4}, Ints{3}, Ints{2}, Ints{1}, true}},
      {"max_pool3d", {1, 2, 5, 4, 6}, {Ints{2, 3, 2}, Ints{2, 1, 2}, Ints{1, 1, 0}}},
      {"avg_pool2d", {2, 3, 7, 6}, {Ints{3, 2}, Ints{2, 2}, Ints{1, 1}, true, true}},
      {"avg_pool2d", {2, 3, 7, 6}, {Ints{3, 3}, Ints{2, 2}, Ints{1, 1}, true, false}},
      {"avg_pool2d", {1, 2, 6, 6}, {Ints{2, 2}, Ints{}, Ints{0, 0}, false, true, 3}},
      {"avg_pool1d", {2, 3, 9}, {Ints{3}, Ints{2}, Ints{1}, false, false}},
      {"avg_pool3d", {1, 1, 5, 4, 5}, {Ints{3, 2, 3}, Ints{2, 2, 2}, Ints{1, 1, 1}, true, false}},
  };
  for (size_t k = 0; k < cases.size(); ++k) {
    const P& c = cases[k];
    Tensor x = random_tensor(c.x, 40 + k);
    Tensor direct = run1(c.op, {x}, c.args);
    Tensor dec = run_decomposed(c.op, {x}, c.args);
    expect_close(dec, direct, 1e-12, 1e-12, c.op + " case " + std::to_string(k));
  }
}

TEST(NnBatchNorm, DirectKernelAgreesWithDecompositionAndHand) {
  Tensor x = random_tensor({4, 3, 2, 5}, 50), w = random_tensor({3}, 51), b = random_tensor({3}, 52);
  Tensor rm = random_tensor({3}, 53), rv = tensor_of({3}, {0.5, 1.5, 2.0});
  for (bool training : {true, false}) {
    std::vector<Arg> a{training, 0.1, 1e-5, false};
    expect_close(run_decomposed("batch_norm", {x, w, b, rm, rv}, a),
                 run1("batch_norm", {x, w, b, rm, rv}, a), 1e-12, 1e-12, training ? "train" : "eval");
  }
  // eval by hand: (x - rm) / sqrt(rv + eps) * w + b
  Tensor y = run1("batch_norm", {x, w, b, rm, rv}, {false, 0.1, 1e-5, false});
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t c = (i / 10) % 3;
    double want = (x.get_double(i) - rm.get_double(c)) / std::sqrt(rv.get_double(c) + 1e-5) *
                      w.get_double(c) + b.get_double(c);
    EXPECT_NEAR(y.get_double(i), want, 1e-12);
  }
  // group_norm with one group per channel is instance norm: every (n, c) row has mean 0, var 1
  Tensor g = run1("group_norm", {x}, {3, Arg(), Arg(), 0.0});
  for (int64_t row = 0; row < 12; ++row) {
    double m = 0, v = 0;
    for (int64_t j = 0; j < 10; ++j) m += g.get_double(row * 10 + j) / 10;
    for (int64_t j = 0; j < 10; ++j) v += std::pow(g.get_double(row * 10 + j) - m, 2) / 10;
    EXPECT_NEAR(m, 0, 1e-12);
    EXPECT_NEAR(v, 1, 1e-9);
  }
}

// ---- padding, upsampling, embedding -------------------------------------------------------

TEST(NnPadding, HandComputed) {
  Tensor x = tensor_of({1, 4}, {1, 2, 3, 4});
  expect_values(run1("reflection_pad1d", {x}, {Ints{2, 1}}), {3, 2, 1, 2, 3, 4, 3});
  expect_values(run1("replication_pad1d", {x}, {Ints{2, 1}}), {1, 1, 1, 2, 3, 4, 4});
  expect_values(run1("constant_pad_nd", {x}, {Ints{1, -1}, 9}), {9, 1, 2, 3});
  Tensor x2 = tensor_of({1, 2, 2}, {1, 2, 3, 4});
  expect_values(run1("reflection_pad2d", {x2}, {Ints{1, 0, 0, 1}}), {2, 1, 2, 4, 3, 4, 2, 1, 2});
  expect_values(run1("replication_pad2d", {x2}, {Ints{0, 1, 1, 0}}), {1, 2, 2, 1, 2, 2, 3, 4, 4});
}

TEST(NnUpsample, HandComputed) {
  Tensor x = tensor_of({1, 1, 1, 3}, {10, 20, 30});
  // nearest: index floor(i * 3/5)
  expect_values(run1("upsample_nearest2d", {x}, {Ints{1, 5}}), {10, 10, 20, 20, 30});
  // uint8 images too, as torch's CPU kernel (a gather: the values and dtype kept)
  Tensor xu = tensor_of({1, 1, 1, 3}, {10, 20, 255}, DType::UInt8);
  Tensor yu = run1("upsample_nearest2d", {xu}, {Ints{1, 5}});
  EXPECT_EQ(yu.dtype(), DType::UInt8);
  expect_values(yu, {10, 10, 20, 20, 255});
  Tensor y = tensor_of({1, 1, 1, 2}, {0, 1});
  expect_values(run1("upsample_bilinear2d", {y}, {Ints{1, 4}, false}), {0, 0.25, 0.75, 1}, 1e-7);
  expect_values(run1("upsample_bilinear2d", {y}, {Ints{1, 4}, true}), {0, 1.0 / 3, 2.0 / 3, 1}, 1e-7);
  // 2-D, align_corners: the corners are kept, the centre is the mean of the four
  Tensor z = tensor_of({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor u = run1("upsample_bilinear2d", {z}, {Ints{3, 3}, true});
  expect_values(u, {1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4}, 1e-7);
}

TEST(NnPooling, AdaptiveAveragePoolOfEmptyChannels) {
  // torch checks the spatial dims only: empty channels give an empty result (both the divisible
  // and the sliced decomposition)
  Tensor ec = Tensor::empty({2, 0, 4, 4}, DType::Float64);
  EXPECT_EQ(run1("adaptive_avg_pool2d", {ec}, {Ints{2, 2}}).sizes(), (Shape{2, 0, 2, 2}));
  EXPECT_EQ(run1("adaptive_avg_pool2d", {ec}, {Ints{3, 3}}).sizes(), (Shape{2, 0, 3, 3}));
  Tensor e3 = Tensor::empty({0, 2, 4, 3}, DType::Float32);  // unbatched 3-D: C may be empty
  EXPECT_EQ(run1("adaptive_avg_pool3d", {e3}, {Ints{1, 3, 2}}).sizes(), (Shape{0, 1, 3, 2}));
  // an output size of 0: an empty result, as torch
  Tensor x = random_tensor({4, 3, 3, 2}, 7, DType::Float32);
  Tensor y = run1("adaptive_avg_pool2d", {x}, {Ints{1, 0}});
  EXPECT_EQ(y.sizes(), (Shape{4, 3, 1, 0}));
  EXPECT_EQ(y.dtype(), DType::Float32);
}

TEST(NnEmbedding, ValuesAndPaddingIdxGradient) {
  Tensor w = random_tensor({5, 3}, 60);
  Tensor idx = Tensor::empty({2, 2}, DType::Int64);
  int64_t ids[] = {4, 2, 2, 0};
  for (int i = 0; i < 4; ++i) idx.set_int(i, ids[i]);
  Tensor e = run1("embedding", {w, idx}, {2});
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(e.get_double(i * 3 + j), w.get_double(ids[i] * 3 + j));
  // d sum(embedding(w, idx)) / dw: the count of each row, 0 for padding_idx 2
  Graph g;
  Node* wn = g.placeholder("w", w.meta());
  Node* in = g.placeholder("idx", idx.meta());
  g.output({g.call("sum", {g.call("embedding", {wn, in, 2})})});
  JointGraph j = build_joint_graph(g, {"w"});
  std::vector<Tensor> r = interpret(j.graph, {w, idx, Tensor::ones({}, DType::Float64)});
  double counts[] = {1, 0, 0, 0, 1};
  for (int row = 0; row < 5; ++row)
    for (int c = 0; c < 3; ++c) EXPECT_EQ(r[1].get_double(row * 3 + c), counts[row]) << row;
  // scale_grad_by_freq divides by the count: row 2 (twice) gets 1 in total, like the others
  Tensor gb = run1("embedding_dense_backward", {Tensor::ones({2, 2, 3}, DType::Float64), idx},
                   {5, -1, true});
  double freq[] = {1, 0, 1, 0, 1};
  for (int row = 0; row < 5; ++row) EXPECT_NEAR(gb.get_double(row * 3), freq[row], 1e-15);
}

// ---- losses and attention ------------------------------------------------------------------

TEST(NnLosses, HandComputed) {
  Tensor x = tensor_of({3, 3}, {0.1, -0.4, 0.7, 1.2, 0.3, -0.5, -1.0, 0.0, 2.0});
  Tensor t = Tensor::empty({3}, DType::Int64);
  int64_t tv[] = {2, -100, 0};
  for (int i = 0; i < 3; ++i) t.set_int(i, tv[i]);
  Tensor w = tensor_of({3}, {0.5, 1.0, 2.0});
  // nll: mean over non-ignored rows weighted: (-0.7*2 + 1.0*0.5) / (2 + 0.5)
  expect_values(run1("nll_loss", {x, t, w}), {(-0.7 * 2 + 1.0 * 0.5) / 2.5});
  expect_values(run1("nll_loss", {x, t, w}, {0}), {-1.4, 0, 0.5});
  // cross entropy = nll of log_softmax
  auto lse = [&](int r) {
    double s = 0;
    for (int c = 0; c < 3; ++c) s += std::exp(x.get_double(r * 3 + c));
    return std::log(s);
  };
  double ce0 = lse(0) - 0.7, ce2 = lse(2) + 1.0;
  expect_values(run1("cross_entropy_loss", {x, t}), {(ce0 + ce2) / 2}, 1e-12);
  Tensor y = tensor_of({3, 3}, {0, 0, 1, 1, 0, 0, 0.5, 0.5, 0});
  expect_values(run1("mse_loss", {x, y}, {2}), {[&] {
                  double s = 0;
                  for (int i = 0; i < 9; ++i) s += std::pow(x.get_double(i) - y.get_double(i), 2);
                  return s;
                }()});
  Tensor sl = run1("smooth_l1_loss", {x, y}, {0, 0.5});
  for (int i = 0; i < 9; ++i) {
    double d = std::abs(x.get_double(i) - y.get_double(i));
    EXPECT_NEAR(sl.get_double(i), d < 0.5 ? 0.5 * d * d / 0.5 : d - 0.25, 1e-15);
  }
}

// A class index outside [0, C) is an error naming the node, on the interpreter and compiled.
TEST(NnLosses, TargetOutOfRangeIsAnError) {
  Tensor x = random_tensor({3, 4}, 80);
  Tensor t = Tensor::empty({3}, DType::Int64);
  int64_t tv[] = {1, 7, 0};
  for (int i = 0; i < 3; ++i) t.set_int(i, tv[i]);
  OneOp o = one_op("cross_entropy_loss", {x, t}, {});
  EXPECT_THROW(interpret(o.g, o.in), Error);
  CompiledGraph cg = test::cpu_compiler().compile(o.g);
  try {
    cg.run(o.in);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_TRUE(test::contains(e.what(), "out of")) << e.what();
  }
}

TEST(NnLosses, BceWithLogitsHand) {
  Tensor x = tensor_of({2, 3}, {0.1, -3.0, 2.5, 0.0, 40.0, -40.0});
  Tensor y = tensor_of({2, 3}, {1, 0, 0.3, 0.5, 1, 0});
  Tensor pw = tensor_of({3}, {1.0, 2.0, 3.0});
  Graph g;
  Node* a = g.placeholder("x", x.meta());
  Node* b = g.placeholder("y", y.meta());
  Node* p = g.placeholder("pw", pw.meta());
  g.output({g.call("binary_cross_entropy_with_logits", {a, b, Arg(), p, 0})});
  Tensor r = interpret(g, {x, y, pw}).at(0);
  for (int i = 0; i < 6; ++i) {
    double xi = x.get_double(i), yi = y.get_double(i), q = pw.get_double(i % 3);
    double sig_log = -std::log1p(std::exp(-std::abs(xi))) - std::max(-xi, 0.0);  // log σ(x)
    double want = -(q * yi * sig_log + (1 - yi) * (sig_log - xi));
    EXPECT_NEAR(r.get_double(i), want, 1e-12) << i;
  }
}

TEST(NnAttention, MatchesSoftmaxByHand) {
  Tensor q = random_tensor({2, 3, 4}, 70), k = random_tensor({2, 5, 4}, 71), v = random_tensor({2, 5, 2}, 72);
  Tensor causal = run1("scaled_dot_product_attention", {q, k, v}, {Arg(), 0.0, true});
  Tensor plain = run1("scaled_dot_product_attention", {q, k, v}, {}, {{"scale", 0.3}});
  for (int causal_mode = 0; causal_mode < 2; ++causal_mode)
    for (int b = 0; b < 2; ++b)
      for (int i = 0; i < 3; ++i) {
        double scale = causal_mode ? 0.5 : 0.3;
        std::vector<double> s(5);
        double m = -1e300, z = 0;
        for (int j = 0; j < 5; ++j) {
          double d = 0;
          for (int e = 0; e < 4; ++e) d += q.get_double((b * 3 + i) * 4 + e) * k.get_double((b * 5 + j) * 4 + e);
          s[j] = (causal_mode && j > i) ? -INFINITY : d * scale;
          m = std::max(m, s[j]);
        }
        for (int j = 0; j < 5; ++j) z += std::exp(s[j] - m);
        for (int e = 0; e < 2; ++e) {
          double o = 0;
          for (int j = 0; j < 5; ++j) o += std::exp(s[j] - m) / z * v.get_double((b * 5 + j) * 2 + e);
          const Tensor& got = causal_mode ? causal : plain;
          EXPECT_NEAR(got.get_double((b * 3 + i) * 2 + e), o, 1e-12);
        }
      }
}

// float16 / bfloat16 attention computes in float32 and rounds the output once (torch's CPU flash
// kernel keeps float accumulators; its math path upcasts): the low-precision result is the float32
// attention of the same values, rounded, bit for bit, with a float mask, a bool mask and causal;
// compiled within one rounding of the interpreter (gemm vs the interpreter's loop in float32).
TEST(NnAttention, LowPrecisionComputesInFloat32) {
  for (DType t : {DType::BFloat16, DType::Float16}) {
    SCOPED_TRACE(dtype_name(t));
    Tensor q = random_tensor({2, 2, 5, 8}, 80, t), k = random_tensor({2, 2, 7, 8}, 81, t);
    Tensor v = random_tensor({2, 2, 7, 4}, 82, t), fmask = random_tensor({5, 7}, 83, t);
    Tensor bmask = Tensor::empty({5, 7}, DType::Bool);
    for (int64_t i = 0; i < bmask.numel(); ++i) bmask.set_int(i, i % 7 != 2);
    struct Variant {
      const char* name;
      std::vector<Tensor> in;
      std::vector<Arg> extra;
    };
    for (const Variant& c : std::vector<Variant>{{"plain", {q, k, v}, {}},
                                                 {"float_mask", {q, k, v, fmask}, {}},
                                                 {"bool_mask", {q, k, v, bmask}, {}},
                                                 {"causal", {q, k, v}, {Arg(), 0.0, true}}}) {
      SCOPED_TRACE(c.name);
      std::vector<Tensor> wide;
      for (const Tensor& x : c.in) wide.push_back(x.dtype() == t ? x.to(DType::Float32) : x);
      Tensor got = run1("scaled_dot_product_attention", c.in, c.extra);
      ASSERT_EQ(got.dtype(), t);
      Tensor want = run1("scaled_dot_product_attention", wide, c.extra).to(t);
      EXPECT_TRUE(test::bitwise_equal(got, want));
      OneOp o = one_op("scaled_dot_product_attention", c.in, c.extra);
      CompiledGraph cg = test::cpu_compiler().compile(o.g);
      double tol = t == DType::BFloat16 ? 8e-3 : 1e-3;  // one rounding, 2^-8 / 2^-11 relative
      expect_close(cg.run(o.in).at(0), got, tol, tol, c.name);
    }
  }
}

// ---- compiled (cpu_cpp) vs interpreter ------------------------------------------------------

struct CompiledCase {
  std::string name, op;
  std::vector<Shape> shapes;
  std::vector<Arg> extra;
  size_t int_input = SIZE_MAX;  // this input holds class / row indices below int_bound
  int64_t int_bound = 0;
  size_t positive_input = SIZE_MAX;  // this input is drawn from [0.5, 2.5] (a variance)
  bool scatters = false;             // uses scatter_add (cpu_cpp: an extern; half types: a fallback)
};

std::ostream& operator<<(std::ostream& os, const CompiledCase& c) { return os << c.name; }

std::vector<CompiledCase> compiled_cases() {
  return {
      {"conv2d_bias_stride_pad", "conv2d", {{2, 3, 9, 8}, {5, 3, 3, 3}, {5}}, {Ints{2, 1}, Ints{1, 1}}},
      {"conv2d_grouped_dilated", "conv2d", {{1, 4, 8, 8}, {6, 2, 3, 3}}, {Arg(), Ints{1}, Ints{2}, Ints{2}, 2}},
      {"conv1d", "conv1d", {{3, 2, 11}, {4, 2, 4}, {4}}, {Ints{3}, Ints{2}}},
      {"conv3d", "conv3d", {{1, 2, 4, 5, 4}, {3, 2, 2, 3, 2}}, {Arg(), Ints{1, 2, 1}}},
      {"conv_transpose2d", "conv_transpose2d.input", {{2, 4, 4, 3}, {4, 3, 3, 3}, {6}},
       {Ints{2, 2}, Ints{1, 0}, Ints{1, 1}, 2}},
      {"conv_transpose1d_dilated", "conv_transpose1d", {{1, 3, 5}, {3, 2, 3}}, {Arg(), Ints{2}, Ints{1}, Ints{0}, 1, Ints{2}}},
      {"batch_norm", "batch_norm", {{4, 3, 5, 5}, {3}, {3}}, {Arg(), Arg(), true, 0.1, 1e-5, false}},
      {"group_norm", "group_norm", {{2, 6, 4, 4}}, {3}},
      {"max_pool2d", "max_pool2d", {{2, 3, 9, 8}}, {Ints{3, 3}, Ints{2, 2}, Ints{1, 1}, Ints{1, 1}, true}},
      {"avg_pool2d", "avg_pool2d", {{2, 3, 9, 8}}, {Ints{3, 3}, Ints{2, 2}, Ints{1, 1}, true, false}},
      {"adaptive_avg_pool2d", "adaptive_avg_pool2d", {{2, 3, 7, 9}}, {Ints{3, 4}}},
      {"constant_pad_nd", "constant_pad_nd", {{2, 3, 5}}, {Ints{1, 2, 0, 1}, 1.5}},
      {"reflection_pad2d", "reflection_pad2d", {{2, 3, 5}}, {Ints{2, 1, 1, 2}}},
      {"replication_pad1d", "replication_pad1d", {{2, 3, 5}}, {Ints{3, 1}}},
      {"upsample_nearest2d", "upsample_nearest2d", {{1, 2, 3, 5}}, {Ints{7, 8}}},
      {"upsample_bilinear2d", "upsample_bilinear2d", {{1, 2, 3, 5}}, {Ints{7, 8}, false}},
      {"upsample_bilinear2d_ac", "upsample_bilinear2d", {{1, 2, 3, 5}}, {Ints{7, 8}, true}},
      {"embedding", "embedding", {{10, 4}, {3, 5}}, {}, 1, 10},
      {"cross_entropy", "cross_entropy_loss", {{6, 5}, {6}}, {}, 1, 5},
      {"nll_loss_none", "nll_loss", {{6, 5}, {6}, {5}}, {0}, 1, 5},
      {"mse_loss", "mse_loss", {{4, 5}, {4, 5}}, {}},
      {"smooth_l1_loss", "smooth_l1_loss", {{4, 5}, {4, 5}}, {1, 0.5}},
      {"bce_with_logits", "binary_cross_entropy_with_logits", {{4, 5}, {4, 5}}, {}},
      {"conv3d_padding_same", "conv3d.padding", {{1, 2, 4, 5, 4}, {2, 2, 2, 3, 2}}, {Arg(), Ints{1}, "same"}},
      {"batch_norm_eval", "batch_norm", {{4, 3, 5}, {3}, {3}, {3}, {3}}, {false, 0.1, 1e-5, false},
       SIZE_MAX, 0, 4},
      {"max_pool3d", "max_pool3d", {{1, 2, 5, 4, 6}}, {Ints{2, 3, 2}, Ints{2, 1, 2}, Ints{1, 1, 0}}},
      {"avg_pool1d", "avg_pool1d", {{2, 3, 9}}, {Ints{3}, Ints{2}, Ints{1}, true, false}},
      {"adaptive_avg_pool3d", "adaptive_avg_pool3d", {{1, 2, 5, 4, 7}}, {Ints{2, 3, 3}}},
      {"reflection_pad1d", "reflection_pad1d", {{2, 3, 5}}, {Ints{4, 2}}},
      {"replication_pad2d", "replication_pad2d", {{1, 2, 3, 5}}, {Ints{1, 2, 3, 0}}},
      {"nll_loss2d", "nll_loss2d", {{2, 4, 3, 3}, {2, 3, 3}}, {Arg(), 2}, 1, 4},
      {"embedding_dense_backward", "embedding_dense_backward", {{3, 5, 4}, {3, 5}}, {10, 2, true}, 1, 10,
       SIZE_MAX, true},
      {"sdpa_causal", "scaled_dot_product_attention", {{2, 2, 6, 8}, {2, 2, 6, 8}, {2, 2, 6, 8}},
       {Arg(), 0.0, true}},
  };
}

class NnCompiled : public ::testing::TestWithParam<CompiledCase> {};

TEST_P(NnCompiled, MatchesTheInterpreter) {
  const CompiledCase& c = GetParam();
  std::vector<DType> dtypes{DType::Float32, DType::Float64};
  if (c.op.rfind("conv", 0) == 0) dtypes.insert(dtypes.end(), {DType::Float16, DType::BFloat16});
  for (DType t : dtypes) {
    SCOPED_TRACE(dtype_name(t));
    std::vector<Tensor> ts;
    for (size_t i = 0; i < c.shapes.size(); ++i) {
      if (i == c.int_input) {
        Tensor idx = Tensor::empty(c.shapes[i], DType::Int64);
        for (int64_t k = 0; k < idx.numel(); ++k) idx.set_int(k, (k * 7 + 3) % c.int_bound);
        ts.push_back(idx);
      } else {
        ts.push_back(random_tensor(c.shapes[i], 100 + i, t));
        if (i == c.positive_input)
          for (int64_t k = 0; k < ts.back().numel(); ++k)
            ts.back().set_double(k, std::abs(ts.back().get_double(k)) + 0.5);
      }
    }
    OneOp o = one_op(c.op, ts, c.extra);
    CompiledGraph cg = test::cpu_compiler().compile(o.g);
    std::vector<Tensor> got = cg.run(o.in);
    std::vector<Tensor> want = interpret(o.g, o.in);
    // float32: gemm vs a double-accumulated loop; half types: one rounding each, 2^-8 / 2^-11
    double tol = t == DType::Float64 ? 1e-11 : t == DType::Float32 ? 2e-5 : t == DType::BFloat16 ? 2e-2 : 4e-3;
    expect_close(got.at(0), want.at(0), tol, tol, c.name);
    if (c.op.rfind("conv", 0) == 0) {
      EXPECT_EQ(cg.num_externs(), 1u) << cg.summary();
      EXPECT_EQ(cg.num_fallbacks(), 0u) << cg.summary();
    } else if (!c.scatters) {
      EXPECT_EQ(cg.num_fallbacks(), 0u) << cg.summary();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, NnCompiled, ::testing::ValuesIn(compiled_cases()),
                         [](const auto& info) { return info.param.name; });

// A backend without the convolution extern (tests/plugins' toy_cpu offers only mm) runs it on the
// interpreter's kernel: a fallback, with the interpreter's values.
TEST(NnCompiledFallback, ConvolutionWithoutTheExternRunsOnTheInterpreter) {
  std::string dir = ::testing::TempDir();
  Config cfg = Config::parse("plugin_path: [" + std::string(STAX_BINARY_DIR) +
                                 "/test_plugins]\ndevices: {cpu: {backend: toy_cpu}}\n",
                             "toy.yaml", dir);
  Compiler compiler(std::move(cfg));
  Tensor x = random_tensor({2, 3, 6, 6}, 5, DType::Float32), w = random_tensor({4, 3, 3, 3}, 6, DType::Float32);
  OneOp o = one_op("conv2d", {x, w}, {Arg(), Ints{1}, Ints{1}});
  CompiledGraph cg = compiler.compile(o.g);
  EXPECT_EQ(cg.num_externs(), 0u);
  EXPECT_EQ(cg.num_fallbacks(), 1u);
  EXPECT_TRUE(test::contains(cg.summary(), "convolution (extern, not offered by the backend: interpreter)"))
      << cg.summary();
  EXPECT_TRUE(cg.run(o.in).at(0).equal(interpret(o.g, o.in).at(0)));
}

// The example models (examples/cnn_train_step.stax, examples/transformer_block.stax) are checked
// by the CLI tests of `stax grad --check` (cli_nn_examples in tests/CMakeLists.txt).

}  // namespace
}  // namespace stax
