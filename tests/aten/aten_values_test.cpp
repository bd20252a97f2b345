// Values that now match torch (issue 14): sign(NaN) and abs's gradient at NaN, float -> int casts
// of NaN / inf / out-of-range values (x86's conversions, as torch on x86), index_put with a bool
// mask index, gather with an empty index, as_strided's gradient. Each through the reference
// interpreter and compiled on cpu_cpp (bit for bit against the interpreter); the expected values
// were taken from torch 1.13 (tests/aten/ checks the same ops against an installed torch).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/graph/graph.h"
#include "core/functional/functional.h"
#include "core/interpreter/interpreter.h"
#include "core/support/error.h"
#include "tests/support/compiled_check.h"

namespace stax {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Runs g on the interpreter and compiled; expects the same bytes and returns the interpreter's.
std::vector<Tensor> run_both(const Graph& g, const std::vector<Tensor>& in) {
  std::vector<Tensor> want = interpret(g, in);
  CompiledGraph cg = test::cpu_compiler().compile(g);
  std::vector<Tensor> got = cg.run(in);
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size() && i < want.size(); ++i)
    EXPECT_TRUE(test::bitwise_equal(got[i], want[i])) << "output " << i;
  return want;
}

TEST(AtenValues, SignOfNaNAndZeroIsPositiveZero) {
  Graph g;
  Node* x = g.placeholder("x", {5});
  g.output({g.call("sign", {x})});
  auto r = run_both(g, {Tensor::from_vector<float>({5}, {kNaN, -0.0f, 0.0f, -3.0f, kInf})});
  std::vector<float> v = r[0].to_vector<float>();
  EXPECT_EQ(v, (std::vector<float>{0.0f, 0.0f, 0.0f, -1.0f, 1.0f}));
  EXPECT_FALSE(std::signbit(v[1]));  // torch: (0 < x) - (x < 0) is +0 for -0.0
}

TEST(AtenValues, AbsGradientAtNaNIsZero) {
  Graph g;
  Node* x = g.placeholder("x", {3});
  g.output({g.call("sum", {g.call("abs", {x})})});
  Tensor in = Tensor::from_vector<float>({3}, {kNaN, -2.0f, 0.0f});
  std::vector<Tensor> grads = vjp(g, {in}, {Tensor::ones({}, DType::Float32)}).grads;
  EXPECT_EQ(grads[0].to_vector<float>(), (std::vector<float>{0.0f, -1.0f, 0.0f}));  // torch 1.13
}

TEST(AtenValues, FloatToIntCastsMatchTorchOnX86) {
  Graph g;
  Node* x = g.placeholder("x", {8});
  g.output({g.call("to.dtype", {x, DType::Int64}), g.call("to.dtype", {x, DType::Int32}),
            g.call("to.dtype", {x, DType::Int8}), g.call("to.dtype", {x, DType::UInt8}),
            g.call("to.dtype", {g.call("to.dtype", {x, DType::Float64}), DType::Int32})});
  auto r = run_both(g, {Tensor::from_vector<float>(
                           {8}, {kNaN, kInf, -kInf, 3e9f, 1e20f, 300.7f, -200.5f, -1.5f})});
  constexpr int64_t m64 = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(r[0].to_vector<int64_t>(),
            (std::vector<int64_t>{m64, m64, m64, 3000000000LL, m64, 300, -200, -1}));
  std::vector<int32_t> i32 = {INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN, 300, -200, -1};
  EXPECT_EQ(r[1].to_vector<int32_t>(), i32);
  EXPECT_EQ(r[2].to_vector<int8_t>(), (std::vector<int8_t>{0, 0, 0, 0, 0, 44, 56, -1}));
  EXPECT_EQ(r[3].to_vector<uint8_t>(), (std::vector<uint8_t>{0, 0, 0, 0, 0, 44, 56, 255}));
  EXPECT_EQ(r[4].to_vector<int32_t>(), i32);
}

TEST(AtenValues, IndexPutWithABoolMask) {
  Graph g;
  Node* x = g.placeholder("x", {2, 3});
  Node* m = g.placeholder("m", {2, 3}, DType::Bool);
  Node* v = g.placeholder("v", Shape{}, DType::Float32);
  Node* k = g.placeholder("k", {3}, DType::Float32);
  Node* r = g.placeholder("r", {2}, DType::Bool);
  Node* set = g.call("index_put", {x, Arg(Arg::List{Arg(m)}), v});
  Node* acc = g.call("index_put", {x, Arg(Arg::List{Arg(m)}), v, true});
  Node* cnt = g.call("index_put", {x, Arg(Arg::List{Arg(m)}), k});  // 3 True entries
  Node* rows = g.call("index_put", {x, Arg(Arg::List{Arg(r)}), k});  // rows: values per row
  EXPECT_EQ(set->shape(), (Shape{2, 3}));
  g.output({set, acc, cnt, rows});
  Tensor xi = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor mi = Tensor::from_vector<bool>({2, 3}, {true, false, true, false, false, true});
  auto out = run_both(g, {xi, mi, Tensor::from_vector<float>({}, {9}),
                          Tensor::from_vector<float>({3}, {7, 8, 9}),
                          Tensor::from_vector<bool>({2}, {false, true})});
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{9, 2, 9, 4, 5, 9}));
  EXPECT_EQ(out[1].to_vector<float>(), (std::vector<float>{10, 2, 12, 4, 5, 15}));
  EXPECT_EQ(out[2].to_vector<float>(), (std::vector<float>{7, 2, 8, 4, 5, 9}));
  EXPECT_EQ(out[3].to_vector<float>(), (std::vector<float>{1, 2, 3, 7, 8, 9}));
  // values that do not fit the count of True entries: an error naming the node.
  Graph h;
  Node* hx = h.placeholder("x", {4});
  h.output({h.call("index_put", {hx, Arg(Arg::List{Arg(h.placeholder("m", {4}, DType::Bool))}),
                                 h.placeholder("v", {3})}, {}, "put")});
  try {
    interpret(h, {Tensor::zeros({4}, DType::Float32),
                  Tensor::from_vector<bool>({4}, {true, false, false, false}),
                  Tensor::zeros({3}, DType::Float32)});
    FAIL() << "a mask with 1 True entry accepted 3 values";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("%put"), std::string::npos) << e.what();
  }
  // A mask that does not match self's dims is rejected when the graph is built.
  Graph bad;
  Node* bx = bad.placeholder("x", {2, 3});
  Node* bm = bad.placeholder("m", {3}, DType::Bool);
  Node* bv = bad.placeholder("v", Shape{}, DType::Float32);
  EXPECT_THROW(bad.call("index_put", {bx, Arg(Arg::List{Arg(bm)}), bv}), Error);
}

TEST(AtenValues, IndexPutMaskGradient) {
  Graph g;
  Node* x = g.placeholder("x", {2, 3}, DType::Float64);
  Node* s = g.placeholder("s", {2, 3}, DType::Float64);
  Node* m = g.call("gt.Scalar", {s, 0});  // every placeholder gets a gradient: a float one
  Node* v = g.placeholder("v", Shape{}, DType::Float64);
  Node* y = g.call("index_put", {x, Arg(Arg::List{Arg(m)}), v});
  g.output({g.call("sum", {g.call("mul.Tensor", {y, y})})});
  Tensor xi = Tensor::from_vector<double>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor mi = Tensor::from_vector<double>({2, 3}, {1, -1, 1, -1, -1, 1});
  Tensor vi = Tensor::from_vector<double>({}, {0.5});
  auto grads = vjp(g, {xi, mi, vi}, {Tensor::ones({}, DType::Float64)}).grads;
  // d/dx: 2x where not masked, 0 where masked; d/dv: Σ over the 3 masked entries of 2v = 3.
  EXPECT_EQ(grads[0].to_vector<double>(), (std::vector<double>{0, 4, 0, 8, 10, 0}));
  EXPECT_EQ(grads[2].to_vector<double>(), (std::vector<double>{3.0}));
}

TEST(AtenValues, GatherWithAnEmptyIndex) {
  Graph g;
  Node* x = g.placeholder("x", {3, 4});
  Node* i = g.placeholder("i", {0}, DType::Int64);  // rank 1 against a 2-d input: torch allows it
  Node* r = g.call("gather", {x, 1, i});
  EXPECT_EQ(r->shape(), (Shape{0}));
  g.output({r});
  auto out = run_both(g, {Tensor::zeros({3, 4}, DType::Float32), Tensor::zeros({0}, DType::Int64)});
  EXPECT_EQ(out[0].numel(), 0);
}

// Found by the OpInfo harness (pow's gradient for a 0-d exponent): cpu_cpp hoisted the invariant
// `ge(b, 0.0f)` out of the reduction loop but reused the loop's own `0.0f`, declared inside it,
// and the kernel did not compile.
TEST(AtenValues, HoistedValueDoesNotReuseALoopLocalConstant) {
  Graph g;
  Node* x = g.placeholder("x", {37});
  Node* b = g.placeholder("b", Shape{}, DType::Float32);
  Node* mask = g.call("logical_and", {g.call("eq.Scalar", {x, 0.0}), g.call("ge.Scalar", {b, 0.0})});
  g.output({g.call("sum", {g.call("where.ScalarSelf", {mask, 0.0, x})})});
  std::vector<float> xs(37);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = i % 3 == 0 ? 0.0f : static_cast<float>(i);
  auto r = run_both(g, {Tensor::from_vector<float>({37}, xs), Tensor::from_vector<float>({}, {1})});
  EXPECT_EQ(r[0].to_vector<float>()[0], 432.0f);  // the sum of the i not divisible by 3
}

}  // namespace
}  // namespace stax
