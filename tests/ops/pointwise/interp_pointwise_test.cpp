// The reference interpreter's pointwise kernels against hand-computed values: every pointwise op,
// broadcasting, strided inputs, type promotion, NaN / inf / signed zeros, integer division signs,
// half / bfloat16 rounding, and the interpreter's own checks (inputs, missing kernels).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/graph/op_registry.h"
#include "core/interpreter/interpreter.h"
#include "core/support/error.h"

using namespace stax;

// The transcendentals are SLEEF's deterministic functions (scalar_ops.hpp, docs/vector_math.md):
// the expected values call them directly, by their documented names.
extern "C" {
#define STAX_TEST_SLEEF(n) float Sleef_cinz_##n##f1_u10purec(float);
STAX_TEST_SLEEF(exp) STAX_TEST_SLEEF(exp2) STAX_TEST_SLEEF(expm1) STAX_TEST_SLEEF(sin)
STAX_TEST_SLEEF(cos) STAX_TEST_SLEEF(tan) STAX_TEST_SLEEF(tanh) STAX_TEST_SLEEF(erf)
STAX_TEST_SLEEF(log) STAX_TEST_SLEEF(log2) STAX_TEST_SLEEF(log10) STAX_TEST_SLEEF(log1p)
#undef STAX_TEST_SLEEF
}
namespace sleef {
// NaN results: any NaN (expect_bits); scalar_ops.hpp returns the default one.
#define STAX_TEST_SLEEF(n) \
  inline float n(float x) { return Sleef_cinz_##n##f1_u10purec(x); }
STAX_TEST_SLEEF(exp) STAX_TEST_SLEEF(exp2) STAX_TEST_SLEEF(expm1) STAX_TEST_SLEEF(sin)
STAX_TEST_SLEEF(cos) STAX_TEST_SLEEF(tan) STAX_TEST_SLEEF(tanh) STAX_TEST_SLEEF(erf)
STAX_TEST_SLEEF(log) STAX_TEST_SLEEF(log2) STAX_TEST_SLEEF(log10) STAX_TEST_SLEEF(log1p)
#undef STAX_TEST_SLEEF
}  // namespace sleef

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Builds a one-op graph over input tensors and runs it.
struct OneOp {
  Graph g;
  std::vector<Tensor> inputs;
  Node* in(const Tensor& t) {
    inputs.push_back(t);
    return g.placeholder("x" + std::to_string(inputs.size()), t.sizes(), t.dtype());
  }
  Tensor run(const std::string& op, std::vector<Arg> args, Kwargs kwargs = {}) {
    Node* n = g.call(op, std::move(args), std::move(kwargs));
    g.output({n});
    return interpret(g, inputs).at(0);
  }
};

Tensor f32(const Shape& s, std::vector<float> v) { return Tensor::from_vector(s, v); }
Tensor i64(const Shape& s, std::vector<int64_t> v) { return Tensor::from_vector(s, v); }

Tensor unary(const std::string& op, const Tensor& x, Kwargs kw = {}) {
  OneOp o;
  return o.run(op, {o.in(x)}, std::move(kw));
}
Tensor binary(const std::string& op, const Tensor& a, const Tensor& b, Kwargs kw = {}) {
  OneOp o;
  Node* na = o.in(a);
  Node* nb = o.in(b);
  return o.run(op, {na, nb}, std::move(kw));
}
Tensor binary_scalar(const std::string& op, const Tensor& a, Arg b, Kwargs kw = {}) {
  OneOp o;
  return o.run(op, {o.in(a), std::move(b)}, std::move(kw));
}

// Bitwise equality of float vectors (+0 != -0), except that any NaN matches any NaN (the sign
// and payload of a NaN produced by 0 / 0 are the hardware's).
void expect_bits(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "element " << i << ": got " << got[i] << ", want NaN";
      continue;
    }
    EXPECT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]))
        << "element " << i << ": got " << got[i] << ", want " << want[i];
  }
}

const std::vector<float> kSample = {-3.5f, -1.0f, -0.25f, 0.0f, 0.5f, 1.0f, 2.0f, 7.25f};

}  // namespace

// ---- unary -----------------------------------------------------------------------------------

TEST(InterpPointwise, UnaryFloatMatchesSleefBitForBit) {
  Tensor x = f32({8}, kSample);
  struct Case {
    const char* op;
    float (*fn)(float);
  };
  const Case cases[] = {
      {"exp", [](float v) { return sleef::exp(v); }},
      {"exp2", [](float v) { return sleef::exp2(v); }},
      {"expm1", [](float v) { return sleef::expm1(v); }},
      {"sin", [](float v) { return sleef::sin(v); }},
      {"cos", [](float v) { return sleef::cos(v); }},
      {"tan", [](float v) { return sleef::tan(v); }},
      {"tanh", [](float v) { return sleef::tanh(v); }},
      {"erf", [](float v) { return sleef::erf(v); }},
      {"sigmoid", [](float v) { return 1.0f / (1.0f + sleef::exp(-v)); }},
      {"reciprocal", [](float v) { return 1.0f / v; }},
      {"neg", [](float v) { return -v; }},
      {"abs", [](float v) { return std::fabs(v); }},
      {"floor", [](float v) { return std::floor(v); }},
      {"ceil", [](float v) { return std::ceil(v); }},
      {"trunc", [](float v) { return std::trunc(v); }},
  };
  for (const Case& c : cases) {
    std::vector<float> want;
    for (float v : kSample) want.push_back(c.fn(v));
    SCOPED_TRACE(c.op);
    Tensor y = unary(c.op, x);
    EXPECT_EQ(y.dtype(), DType::Float32);
    expect_bits(y.to_vector<float>(), want);
  }
  // Logarithms and roots on positive values; NaN / -inf at the edges.
  Tensor p = f32({5}, {0.0f, 0.5f, 1.0f, 10.0f, -1.0f});
  expect_bits(unary("log", p).to_vector<float>(),
              {-kInf, sleef::log(0.5f), 0.0f, sleef::log(10.0f), sleef::log(-1.0f)});
  expect_bits(unary("log2", p).to_vector<float>(),
              {-kInf, -1.0f, 0.0f, sleef::log2(10.0f), sleef::log2(-1.0f)});
  expect_bits(unary("log10", p).to_vector<float>(),
              {-kInf, sleef::log10(0.5f), 0.0f, 1.0f, sleef::log10(-1.0f)});
  expect_bits(unary("log1p", p).to_vector<float>(),
              {0.0f, sleef::log1p(0.5f), sleef::log1p(1.0f), sleef::log1p(10.0f), -kInf});
  expect_bits(unary("sqrt", p).to_vector<float>(),
              {0.0f, std::sqrt(0.5f), 1.0f, std::sqrt(10.0f), std::sqrt(-1.0f)});
  expect_bits(unary("rsqrt", p).to_vector<float>(),
              {kInf, 1.0f / std::sqrt(0.5f), 1.0f, 1.0f / std::sqrt(10.0f), std::sqrt(-1.0f)});
}

TEST(InterpPointwise, UnaryIntToFloatAndIntegerOps) {
  Tensor x = i64({4}, {-2, 0, 1, 3});
  Tensor e = unary("exp", x);
  EXPECT_EQ(e.dtype(), DType::Float32);
  expect_bits(e.to_vector<float>(),
              {sleef::exp(-2.0f), 1.0f, sleef::exp(1.0f), sleef::exp(3.0f)});
  EXPECT_EQ(unary("neg", x).to_vector<int64_t>(), (std::vector<int64_t>{2, 0, -1, -3}));
  EXPECT_EQ(unary("abs", x).to_vector<int64_t>(), (std::vector<int64_t>{2, 0, 1, 3}));
  EXPECT_EQ(unary("relu", x).to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 1, 3}));
  EXPECT_EQ(unary("sign", x).to_vector<int64_t>(), (std::vector<int64_t>{-1, 0, 1, 1}));
  EXPECT_EQ(unary("floor", x).dtype(), DType::Int64);
  EXPECT_EQ(unary("round", x).to_vector<int64_t>(), (std::vector<int64_t>{-2, 0, 1, 3}));
  // int32 stays int32 (computed in int64, narrowed).
  Tensor x32 = Tensor::from_vector<int32_t>({2}, {-5, 7});
  Tensor n32 = unary("neg", x32);
  EXPECT_EQ(n32.dtype(), DType::Int32);
  EXPECT_EQ(n32.to_vector<int32_t>(), (std::vector<int32_t>{5, -7}));
}

TEST(InterpPointwise, ReluSignRoundSpecialValues) {
  Tensor x = f32({7}, {-0.0f, 0.0f, kNaN, -kInf, kInf, -2.5f, 2.5f});
  expect_bits(unary("relu", x).to_vector<float>(), {-0.0f, 0.0f, kNaN, 0.0f, kInf, 0.0f, 2.5f});
  // torch: sign(x) = (0 < x) - (x < 0), so NaN and -0.0 give +0.0.
  expect_bits(unary("sign", x).to_vector<float>(), {0.0f, 0.0f, 0.0f, -1.0f, 1.0f, -1.0f, 1.0f});
  // round: half to even.
  Tensor h = f32({6}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 3.7f});
  expect_bits(unary("round", h).to_vector<float>(), {0.0f, 2.0f, 2.0f, -0.0f, -2.0f, 4.0f});
  Tensor n = unary("isnan", x);
  EXPECT_EQ(n.dtype(), DType::Bool);
  using B = std::vector<bool>;
  EXPECT_EQ(n.to_vector<bool>(), (B{false, false, true, false, false, false, false}));
  Tensor l = unary("logical_not", x);
  EXPECT_EQ(l.to_vector<bool>(), (B{true, true, false, false, false, false, false}));
  EXPECT_EQ(unary("logical_not", i64({3}, {0, 2, -1})).to_vector<bool>(),
            (std::vector<bool>{true, false, false}));
}

TEST(InterpPointwise, GeluSiluMatchTheListingSequence) {
  Tensor x = f32({8}, kSample);
  std::vector<float> gelu, gelu_tanh, silu;
  for (float h : kSample) {
    float cdf = 0.5f * (1.0f + sleef::erf(h * 0.7071067811865476f));
    gelu.push_back(h * cdf);
    float x_sq = h * h;
    float t = sleef::tanh(0.7978845608028654f * (h + 0.044715f * (x_sq * h)));
    gelu_tanh.push_back((0.5f * h) * (1.0f + t));
    silu.push_back(h * (1.0f / (1.0f + sleef::exp(-h))));
  }
  expect_bits(unary("gelu", x).to_vector<float>(), gelu);
  expect_bits(unary("gelu", x, {{"approximate", "tanh"}}).to_vector<float>(), gelu_tanh);
  expect_bits(unary("silu", x).to_vector<float>(), silu);
  // Known values: gelu(0) = 0, gelu(1) = 0.8413447...
  EXPECT_NEAR(unary("gelu", f32({1}, {1.0f})).item(), 0.8413447460685429, 1e-7);
  EXPECT_THROW(unary("gelu", x, {{"approximate", "fast"}}), Error);
  EXPECT_THROW(unary("gelu", i64({1}, {1})), Error);  // floating only, at graph build
}

// ---- binary arithmetic -------------------------------------------------------------------------

TEST(InterpPointwise, AddSubWithAlpha) {
  Tensor a = f32({3}, {1.0f, 2.0f, 3.0f});
  Tensor b = f32({3}, {0.5f, -1.0f, 0.1f});
  expect_bits(binary("add.Tensor", a, b).to_vector<float>(), {1.5f, 1.0f, 3.0f + 0.1f});
  expect_bits(binary("add.Tensor", a, b, {{"alpha", 2.5}}).to_vector<float>(),
              {1.0f + 2.5f * 0.5f, 2.0f + 2.5f * -1.0f, 3.0f + 2.5f * 0.1f});
  expect_bits(binary("sub.Tensor", a, b, {{"alpha", 2}}).to_vector<float>(),
              {1.0f - 2.0f * 0.5f, 2.0f + 2.0f, 3.0f - 2.0f * 0.1f});
  expect_bits(binary_scalar("sub.Scalar", a, 0.25, {{"alpha", -2}}).to_vector<float>(),
              {1.5f, 2.5f, 3.5f});
  Tensor ia = i64({3}, {1, 2, 3}), ib = i64({3}, {10, 20, 30});
  EXPECT_EQ(binary("add.Tensor", ia, ib, {{"alpha", 3}}).to_vector<int64_t>(),
            (std::vector<int64_t>{31, 62, 93}));
  // A floating alpha with integer tensors and subtracting bools are errors (as in torch).
  EXPECT_THROW(binary("add.Tensor", ia, ib, {{"alpha", 1.5}}), Error);
  Tensor t = Tensor::from_vector<bool>({2}, {true, false});
  EXPECT_THROW(binary("sub.Tensor", t, t), Error);
  EXPECT_EQ(binary("add.Tensor", t, t).to_vector<bool>(), (std::vector<bool>{true, false}));
}

TEST(InterpPointwise, MulDivPow) {
  Tensor a = f32({4}, {1.5f, -2.0f, 0.0f, 3.0f});
  Tensor b = f32({4}, {2.0f, 0.5f, 0.0f, -0.0f});
  expect_bits(binary("mul.Tensor", a, b).to_vector<float>(), {3.0f, -1.0f, 0.0f, -0.0f});
  expect_bits(binary("div.Tensor", a, b).to_vector<float>(), {0.75f, -4.0f, kNaN, -kInf});
  // True division of integers gives float32.
  Tensor q = binary("div.Tensor", i64({4}, {7, -7, 1, 0}), i64({4}, {2, 2, 0, 0}));
  EXPECT_EQ(q.dtype(), DType::Float32);
  expect_bits(q.to_vector<float>(), {3.5f, -3.5f, kInf, kNaN});
  EXPECT_EQ(binary_scalar("div.Scalar", i64({2}, {1, 3}), 4).dtype(), DType::Float32);
  // pow: float via powf; integers by repeated squaring.
  expect_bits(binary_scalar("pow.Tensor_Scalar", f32({3}, {2.0f, 9.0f, -2.0f}), 0.5).to_vector<float>(),
              {std::pow(2.0f, 0.5f), 3.0f, std::pow(-2.0f, 0.5f)});
  EXPECT_EQ(binary("pow.Tensor_Tensor", i64({4}, {2, -3, 5, 1}), i64({4}, {10, 3, 0, -1}))
                .to_vector<int64_t>(),
            (std::vector<int64_t>{1024, -27, 1, 1}));
  Tensor ps = binary_scalar("pow.Tensor_Scalar", i64({2}, {2, 3}), 2);
  EXPECT_EQ(ps.dtype(), DType::Int64);
  EXPECT_EQ(ps.to_vector<int64_t>(), (std::vector<int64_t>{4, 9}));
  // A Python float exponent promotes an int tensor to float32.
  EXPECT_EQ(binary_scalar("pow.Tensor_Scalar", i64({1}, {4}), 0.5).dtype(), DType::Float32);
}

TEST(InterpPointwise, IntegerFloorDivideAndRemainderSigns) {
  Tensor a = i64({8}, {7, -7, 7, -7, 6, -6, 5, 0});
  Tensor b = i64({8}, {2, 2, -2, -2, 3, 4, 5, -3});
  // Python semantics: floor toward -inf; remainder takes the divisor's sign.
  EXPECT_EQ(binary("floor_divide", a, b).to_vector<int64_t>(),
            (std::vector<int64_t>{3, -4, -4, 3, 2, -2, 1, 0}));
  EXPECT_EQ(binary("remainder.Tensor", a, b).to_vector<int64_t>(),
            (std::vector<int64_t>{1, 1, -1, -1, 0, 2, 0, 0}));
  // A zero divisor raises torch's ZeroDivisionError (docs/dtypes.md), not a made-up value.
  Tensor z = i64({8}, {2, 2, -2, -2, 3, 4, 0, -3});
  for (const char* op : {"floor_divide", "remainder.Tensor"}) {
    std::string e;
    try {
      binary(op, a, z);
    } catch (const std::exception& ex) {
      e = ex.what();
    }
    EXPECT_NE(e.find("ZeroDivisionError"), std::string::npos) << op << ": " << e;
  }
  EXPECT_EQ(binary_scalar("remainder.Scalar", i64({3}, {-1, -5, 4}), 3).to_vector<int64_t>(),
            (std::vector<int64_t>{2, 1, 1}));
}

TEST(InterpPointwise, FloatFloorDivideAndRemainder) {
  Tensor a = f32({6}, {7.5f, -7.5f, 7.5f, -7.5f, 1.0f, -0.0f});
  Tensor b = f32({6}, {2.0f, 2.0f, -2.0f, -2.0f, 0.0f, 3.0f});
  expect_bits(binary("floor_divide", a, b).to_vector<float>(),
              {3.0f, -4.0f, -4.0f, 3.0f, kInf, -0.0f});
  expect_bits(binary("remainder.Tensor", a, b).to_vector<float>(),
              {1.5f, 0.5f, -0.5f, -1.5f, std::fmod(1.0f, 0.0f), -0.0f});
}

TEST(InterpPointwise, MaximumMinimumPropagateNaN) {
  Tensor a = f32({4}, {1.0f, kNaN, 3.0f, -0.0f});
  Tensor b = f32({4}, {2.0f, 1.0f, kNaN, 0.0f});
  expect_bits(binary("maximum", a, b).to_vector<float>(), {2.0f, kNaN, kNaN, 0.0f});
  expect_bits(binary("minimum", a, b).to_vector<float>(), {1.0f, kNaN, kNaN, 0.0f});
  EXPECT_EQ(binary("maximum", i64({2}, {3, -4}), i64({2}, {1, 5})).to_vector<int64_t>(),
            (std::vector<int64_t>{3, 5}));
}

TEST(InterpPointwise, ComparisonsAndLogicalOps) {
  Tensor a = f32({4}, {1.0f, 2.0f, kNaN, 3.0f});
  Tensor b = f32({4}, {1.0f, 3.0f, kNaN, 2.0f});
  using B = std::vector<bool>;
  EXPECT_EQ(binary("eq.Tensor", a, b).to_vector<bool>(), (B{true, false, false, false}));
  EXPECT_EQ(binary("ne.Tensor", a, b).to_vector<bool>(), (B{false, true, true, true}));
  EXPECT_EQ(binary("lt.Tensor", a, b).to_vector<bool>(), (B{false, true, false, false}));
  EXPECT_EQ(binary("le.Tensor", a, b).to_vector<bool>(), (B{true, true, false, false}));
  EXPECT_EQ(binary("gt.Tensor", a, b).to_vector<bool>(), (B{false, false, false, true}));
  EXPECT_EQ(binary("ge.Tensor", a, b).to_vector<bool>(), (B{true, false, false, true}));
  // The comparison happens in the promoted dtype: 2 < 2.5 with an int tensor.
  Tensor c = binary_scalar("lt.Scalar", i64({3}, {1, 2, 3}), 2.5);
  EXPECT_EQ(c.dtype(), DType::Bool);
  EXPECT_EQ(c.to_vector<bool>(), (B{true, true, false}));
  EXPECT_EQ(binary_scalar("eq.Scalar", i64({2}, {2, 3}), 2).to_vector<bool>(), (B{true, false}));
  // int64 values beyond 2^53 compare exactly (no detour through float).
  int64_t big = (int64_t{1} << 60) + 1;
  EXPECT_EQ(binary("eq.Tensor", i64({1}, {big}), i64({1}, {big - 1})).to_vector<bool>(),
            (B{false}));
  // Logical ops: nonzero (and NaN) is true.
  Tensor x = f32({4}, {0.0f, kNaN, 2.0f, 0.0f});
  Tensor y = f32({4}, {1.0f, 1.0f, 0.0f, 0.0f});
  EXPECT_EQ(binary("logical_and", x, y).to_vector<bool>(), (B{false, true, false, false}));
  EXPECT_EQ(binary("logical_or", x, y).to_vector<bool>(), (B{true, true, true, false}));
}

// ---- broadcasting, strides, promotion --------------------------------------------------------

TEST(InterpPointwise, BroadcastingShapes) {
  Tensor a = f32({3, 1}, {1, 2, 3});
  Tensor b = f32({1, 4}, {10, 20, 30, 40});
  Tensor c = binary("add.Tensor", a, b);
  EXPECT_EQ(c.sizes(), (Shape{3, 4}));
  EXPECT_EQ(c.to_vector<float>(),
            (std::vector<float>{11, 21, 31, 41, 12, 22, 32, 42, 13, 23, 33, 43}));
  Tensor d = binary("mul.Tensor", f32({4}, {1, 2, 3, 4}), f32({2, 1, 1}, {1, -1}));
  EXPECT_EQ(d.sizes(), (Shape{2, 1, 4}));
  EXPECT_EQ(d.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, -1, -2, -3, -4}));
  // A 0-d tensor operand.
  Tensor e = binary("sub.Tensor", f32({2, 2}, {1, 2, 3, 4}), Tensor::scalar(1.0));
  EXPECT_EQ(e.to_vector<float>(), (std::vector<float>{0, 1, 2, 3}));
  // Empty tensors run and stay empty.
  EXPECT_EQ(binary("add.Tensor", f32({0, 3}, {}), f32({3}, {1, 2, 3})).sizes(), (Shape{0, 3}));
}

TEST(InterpPointwise, StridedAndTransposedInputs) {
  // base = [[0, 1, 2], [3, 4, 5]]; its transpose (3, 2) with strides (1, 3).
  Tensor base = f32({2, 3}, {0, 1, 2, 3, 4, 5});
  Tensor t = base.as_strided({3, 2}, {1, 3}, 0);
  Tensor y = binary("mul.Tensor", t, f32({3, 2}, {1, 1, 1, 1, 1, 1}));
  EXPECT_TRUE(y.is_contiguous());
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  // Every other element with an offset: [1, 3, 5].
  Tensor s = base.as_strided({3}, {2}, 1);
  EXPECT_EQ(unary("neg", s).to_vector<float>(), (std::vector<float>{-1, -3, -5}));
  // A stride-0 (expanded) input.
  Tensor e = base.as_strided({2, 3}, {0, 1}, 3);
  EXPECT_EQ(binary("add.Tensor", e, t.as_strided({2, 3}, {3, 1}, 0)).to_vector<float>(),
            (std::vector<float>{3, 5, 7, 6, 8, 10}));
}

TEST(InterpPointwise, DtypePromotionResults) {
  Tensor h = Tensor::from_vector<float>({2}, {1.5f, -2.0f}, DType::Float16);
  Tensor i = Tensor::from_vector<int32_t>({2}, {2, 3});
  Tensor r = binary("add.Tensor", i, h);
  EXPECT_EQ(r.dtype(), DType::Float16);
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{3.5f, 1.0f}));
  Tensor s = binary_scalar("mul.Scalar", i, 2.5);
  EXPECT_EQ(s.dtype(), DType::Float32);
  EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{5.0f, 7.5f}));
  Tensor d = binary("add.Tensor", f32({1}, {1.0f}), Tensor::from_vector<double>({1}, {0.5}));
  EXPECT_EQ(d.dtype(), DType::Float64);
  // A 0-d float64 tensor does not promote a float32 tensor.
  Tensor z = binary("add.Tensor", f32({1}, {1.0f}), Tensor::scalar(0.1, DType::Float64));
  EXPECT_EQ(z.dtype(), DType::Float32);
  expect_bits(z.to_vector<float>(), {1.0f + 0.1f});
  // int32 + int64 scalar stays int32 and wraps on overflow (narrowed on store).
  Tensor w = binary_scalar("add.Scalar", Tensor::from_vector<int32_t>({1}, {2147483647}), 1);
  EXPECT_EQ(w.dtype(), DType::Int32);
  EXPECT_EQ(w.to_vector<int32_t>(), (std::vector<int32_t>{-2147483647 - 1}));
  // uint8 wraps too.
  Tensor u = binary_scalar("mul.Scalar", Tensor::from_vector<uint8_t>({1}, {200}), 2);
  EXPECT_EQ(u.dtype(), DType::UInt8);
  EXPECT_EQ(u.to_vector<int64_t>(), (std::vector<int64_t>{144}));
}

TEST(InterpPointwise, HalfAndBFloat16ComputeInFloatAndRoundToEven) {
  // Half: 1 + 2^-11 is a tie between 1 and 1 + 2^-10 -> 1 (even); 1 + 2^-10 + 2^-11 -> 1 + 2^-9.
  Tensor one = Tensor::from_vector<float>({2}, {1.0f, 1.0f + 0x1p-10f}, DType::Float16);
  Tensor eps = Tensor::from_vector<float>({2}, {0x1p-11f, 0x1p-11f}, DType::Float16);
  Tensor r = binary("add.Tensor", one, eps);
  EXPECT_EQ(r.dtype(), DType::Float16);
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{1.0f, 1.0f + 0x1p-9f}));
  // Compute in float32: (a * b) / b is exact in float even where half would overflow.
  Tensor big = Tensor::from_vector<float>({1}, {60000.0f}, DType::Float16);
  Tensor two = Tensor::from_vector<float>({1}, {2.0f}, DType::Float16);
  Tensor m = binary("mul.Tensor", big, two);
  EXPECT_EQ(m.to_vector<float>(), (std::vector<float>{kInf}));  // overflow on store
  // exp of half: float expf, rounded once.
  Tensor hx = Tensor::from_vector<float>({1}, {0.3f}, DType::Float16);
  float in = hx.to_vector<float>()[0];
  EXPECT_EQ(unary("exp", hx).to_vector<float>()[0], static_cast<float>(Half(sleef::exp(in))));
  // bfloat16: 1 + 2^-8 ties to 1; 1 + 3 * 2^-8 ties up to 1 + 2^-6.
  Tensor b1 = Tensor::from_vector<float>({2}, {1.0f, 1.0f + 0x1p-7f}, DType::BFloat16);
  Tensor b2 = Tensor::from_vector<float>({2}, {0x1p-8f, 0x1p-8f}, DType::BFloat16);
  Tensor rb = binary("add.Tensor", b1, b2);
  EXPECT_EQ(rb.dtype(), DType::BFloat16);
  EXPECT_EQ(rb.to_vector<float>(), (std::vector<float>{1.0f, 1.0f + 0x1p-6f}));
}

// ---- where, clamp, casts ------------------------------------------------------------------------

TEST(InterpPointwise, WhereBroadcastsAndPromotes) {
  Tensor c = Tensor::from_vector<bool>({2, 1}, {true, false});
  Tensor a = f32({3}, {1, 2, 3});
  Tensor b = i64({2, 3}, {10, 20, 30, 40, 50, 60});
  OneOp o;
  Node* nc = o.in(c);
  Node* na = o.in(a);
  Node* nb = o.in(b);
  Tensor r = o.run("where.self", {nc, na, nb});
  EXPECT_EQ(r.dtype(), DType::Float32);
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{1, 2, 3, 40, 50, 60}));
  OneOp o2;
  Node* c2 = o2.in(c);
  Node* a2 = o2.in(i64({3}, {1, 2, 3}));
  Tensor r2 = o2.run("where.ScalarOther", {c2, a2, 0.5});
  EXPECT_EQ(r2.dtype(), DType::Float32);
  EXPECT_EQ(r2.to_vector<float>(), (std::vector<float>{1, 2, 3, 0.5f, 0.5f, 0.5f}));
  OneOp o3;
  EXPECT_EQ(o3.run("where.Scalar", {o3.in(c), 1, 0}).to_vector<int64_t>(),
            (std::vector<int64_t>{1, 0}));
}

TEST(InterpPointwise, Clamp) {
  Tensor x = f32({5}, {-2.0f, 0.5f, 3.0f, kNaN, -0.0f});
  expect_bits(unary("clamp", x, {{"min", 0.0}, {"max", 1.0}}).to_vector<float>(),
              {0.0f, 0.5f, 1.0f, kNaN, 0.0f});
  expect_bits(unary("clamp", x, {{"min", 0.0}}).to_vector<float>(),
              {0.0f, 0.5f, 3.0f, kNaN, 0.0f});
  expect_bits(unary("clamp", x, {{"max", 1.0}}).to_vector<float>(),
              {-2.0f, 0.5f, 1.0f, kNaN, -0.0f});
  // min > max gives max everywhere (NaN stays NaN).
  expect_bits(unary("clamp", x, {{"min", 2.0}, {"max", 1.0}}).to_vector<float>(),
              {1.0f, 1.0f, 1.0f, kNaN, 1.0f});
  Tensor ic = unary("clamp", i64({3}, {-5, 3, 9}), {{"min", 0}, {"max", 5}});
  EXPECT_EQ(ic.dtype(), DType::Int64);
  EXPECT_EQ(ic.to_vector<int64_t>(), (std::vector<int64_t>{0, 3, 5}));
  // A float bound promotes an int tensor.
  EXPECT_EQ(unary("clamp", i64({1}, {1}), {{"min", 0.5}}).dtype(), DType::Float32);
  EXPECT_THROW(unary("clamp", x), Error);  // neither bound
}

TEST(InterpPointwise, ToDtypeUsesLoopLevelConversions) {
  Tensor x = f32({6}, {2.7f, -2.7f, kNaN, 1e20f, -1e20f, 0.0f});
  OneOp o;
  Tensor r = o.run("to.dtype", {o.in(x), DType::Int64});
  EXPECT_EQ(r.dtype(), DType::Int64);
  // Truncation toward zero; NaN and out of range give INT64_MIN (x86's cvttss2si, as torch).
  constexpr int64_t kMin64 = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(r.to_vector<int64_t>(), (std::vector<int64_t>{2, -2, kMin64, kMin64, kMin64, 0}));
  // Narrower integers go through the 32-bit conversion (INT32_MIN for NaN / inf / out of range)
  // and keep the low bits, as torch on x86: values from torch 1.13.
  Tensor v = f32({9}, {3e9f, -1.5f, kNaN, kInf, -kInf, 300.7f, -200.5f, 255.9f, 128.0f});
  OneOp o2;
  EXPECT_EQ(o2.run("to.dtype", {o2.in(v), DType::Int32}).to_vector<int32_t>(),
            (std::vector<int32_t>{INT32_MIN, -1, INT32_MIN, INT32_MIN, INT32_MIN, 300, -200, 255,
                                  128}));
  OneOp o8;
  EXPECT_EQ(o8.run("to.dtype", {o8.in(v), DType::Int8}).to_vector<int8_t>(),
            (std::vector<int8_t>{0, -1, 0, 0, 0, 44, 56, -1, -128}));
  OneOp o9;
  EXPECT_EQ(o9.run("to.dtype", {o9.in(v), DType::UInt8}).to_vector<uint8_t>(),
            (std::vector<uint8_t>{0, 255, 0, 0, 0, 44, 56, 255, 128}));
  OneOp o3;
  Tensor b = o3.run("to.dtype", {o3.in(x), DType::Bool});
  EXPECT_EQ(b.to_vector<bool>(), (std::vector<bool>{true, true, true, true, true, false}));
  OneOp o4;
  Tensor h = o4.run("to.dtype", {o4.in(f32({3}, {1.0f + 0x1p-11f, 65520.0f, 0.1f})),
                                 DType::Float16});
  EXPECT_EQ(h.to_vector<float>(),
            (std::vector<float>{1.0f, kInf, static_cast<float>(Half(0.1f))}));
  OneOp o5;
  Tensor f = o5.run("to.dtype", {o5.in(Tensor::from_vector<bool>({2}, {true, false})),
                                 DType::Float64});
  EXPECT_EQ(f.to_vector<double>(), (std::vector<double>{1.0, 0.0}));
}

// ---- backward ops ------------------------------------------------------------------------------

TEST(InterpPointwise, BackwardOpsFollowTheirFormulas) {
  Tensor g = f32({8}, {1.0f, -2.0f, 0.5f, 3.0f, 1.0f, -1.0f, 0.25f, 2.0f});
  Tensor x = f32({8}, kSample);
  std::vector<float> gv = g.to_vector<float>();
  std::vector<float> gelu_bw, gelu_tanh_bw, silu_bw, sig_bw, tanh_bw, thr_bw;
  for (size_t i = 0; i < kSample.size(); ++i) {
    float h = kSample[i], gr = gv[i];
    // Listing 5.3 / 5.4.
    float cdf = 0.5f * (1.0f + sleef::erf(h * 0.7071067811865476f));
    float pdf = 0.3989422804014327f * sleef::exp(-0.5f * (h * h));
    gelu_bw.push_back(gr * (cdf + h * pdf));
    float x_sq = h * h;
    float t = sleef::tanh(0.7978845608028654f * (h + 0.044715f * (x_sq * h)));
    float left = 0.5f * h, right = 1.0f + t;
    float right_d = (left * (1.0f - t * t)) *
                    (0.7978845608028654f * (1.0f + static_cast<float>(3 * 0.044715) * x_sq));
    gelu_tanh_bw.push_back(gr * (0.5f * right + right_d));
    float s = 1.0f / (1.0f + sleef::exp(-h));
    silu_bw.push_back((gr * s) * (1.0f + h * (1.0f - s)));
    sig_bw.push_back(gr * (h * (1.0f - h)));
    tanh_bw.push_back(gr * (1.0f - h * h));
    thr_bw.push_back(h <= 0.5f ? 0.0f : gr);
  }
  expect_bits(binary("gelu_backward", g, x).to_vector<float>(), gelu_bw);
  expect_bits(binary("gelu_backward", g, x, {{"approximate", "tanh"}}).to_vector<float>(),
              gelu_tanh_bw);
  expect_bits(binary("silu_backward", g, x).to_vector<float>(), silu_bw);
  expect_bits(binary("sigmoid_backward", g, x).to_vector<float>(), sig_bw);
  expect_bits(binary("tanh_backward", g, x).to_vector<float>(), tanh_bw);
  OneOp o;
  Node* ng = o.in(g);
  Node* nx = o.in(x);
  expect_bits(o.run("threshold_backward", {ng, nx, 0.5}).to_vector<float>(), thr_bw);
  // Broadcast upstream gradient (Listing 5.4: a scalar upstream).
  Tensor up = Tensor::scalar(2.0);
  Tensor bw = binary("gelu_backward", up, x);
  EXPECT_EQ(bw.sizes(), (Shape{8}));
  EXPECT_EQ(bw.to_vector<float>()[5],
            2.0f * (0.5f * (1.0f + sleef::erf(1.0f * 0.7071067811865476f)) +
                    1.0f * (0.3989422804014327f * sleef::exp(-0.5f * 1.0f))));
}

// ---- the interpreter's own checks ------------------------------------------------------------

TEST(Interpreter, ChainsFreeIntermediatesAndReturnInputs) {
  Graph g;
  Node* x = g.placeholder("x", {3});
  Node* a = g.call("exp", {x});
  Node* b = g.call("mul.Tensor", {a, a});
  Node* c = g.call("add.Tensor", {b, x});
  g.output({c, x, a});
  Tensor in = f32({3}, {0.0f, 1.0f, -1.0f});
  auto out = interpret(g, {in});
  ASSERT_EQ(out.size(), 3u);
  std::vector<float> want;
  for (float v : in.to_vector<float>()) want.push_back(sleef::exp(v) * sleef::exp(v) + v);
  expect_bits(out[0].to_vector<float>(), want);
  EXPECT_TRUE(out[1].equal(in));
  EXPECT_EQ(out[2].to_vector<float>()[0], 1.0f);
}

TEST(Interpreter, InputMismatchNamesPlaceholderAndShapes) {
  Graph g;
  Node* x = g.placeholder("primals_1", {3, 4});
  g.output({g.call("exp", {x})});
  try {
    interpret(g, {Tensor::zeros({4, 3})});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("primals_1"), std::string::npos) << m;
    EXPECT_NE(m.find("(3, 4)"), std::string::npos) << m;
    EXPECT_NE(m.find("(4, 3)"), std::string::npos) << m;
  }
  EXPECT_THROW(interpret(g, {Tensor::zeros({3, 4}, DType::Float64)}), Error);
  EXPECT_THROW(interpret(g, {}), Error);
}

TEST(Interpreter, MissingKernelNamesOpAndNode) {
  OpRegistry reg;
  reg.add("frobnicate(Tensor self) -> Tensor", OpCategory::Pointwise, Promotion::Default,
          [](const CallArgs& c) { return c.tensor("self"); });
  Graph g(reg);
  Node* x = g.placeholder("x", {2});
  g.output({g.call("frobnicate", {x}, {}, "frob_node")});
  try {
    interpret(g, {Tensor::zeros({2})});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("frobnicate"), std::string::npos) << m;
    EXPECT_NE(m.find("frob_node"), std::string::npos) << m;
  }
}

TEST(Interpreter, KernelErrorsNameTheNode) {
  Graph g;
  Node* x = g.placeholder("x", {2});
  Node* idx = g.placeholder("idx", {1}, DType::Int64);
  // Only the data can be wrong here (every argument's metadata is checked when the graph is
  // built): an index out of range is the kernel's error, named by the node.
  g.output({g.call("index_select", {x, 0, idx}, {}, "my_select")});
  Tensor bad = Tensor::zeros({1}, DType::Int64);
  bad.data<int64_t>()[0] = 5;
  try {
    interpret(g, {Tensor::zeros({2}), bad});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.location(), "%my_select");
    EXPECT_NE(std::string(e.what()).find("5"), std::string::npos) << e.what();
  }
}

TEST(Interpreter, EveryPointwiseAndReductionOpHasAKernel) {
  const InterpreterTable& table = default_interpreter_table();
  for (const OpDef* op : default_registry().all()) {
    if (op->category != OpCategory::Pointwise && op->category != OpCategory::Reduction) continue;
    if (op->multi_output()) continue;  // runs as its expansion (core/graph/multi_output.h)
    EXPECT_NE(table.find(op->name()), nullptr) << "no kernel for " << op->name();
  }
}
