// The reference interpreter's reduction kernels against hand-computed values: dims / keepdim /
// negative dims, full reductions, dtypes, the documented sequential summation order, NaN handling,
// ties, strided inputs and error cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/interpreter/interpreter.h"
#include "core/support/error.h"

using namespace stax;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
using I = std::vector<int64_t>;
using F = std::vector<float>;
using B = std::vector<bool>;

Tensor reduce(const std::string& op, const Tensor& x, std::vector<Arg> args = {},
              Kwargs kwargs = {}, ReductionOrder order = ReductionOrder::Sequential) {
  Graph g;
  Node* p = g.placeholder("x", x.sizes(), x.dtype());
  std::vector<Arg> all(1 + args.size());
  all[0] = Arg(p);
  std::copy(args.begin(), args.end(), all.begin() + 1);
  g.output({g.call(op, std::move(all), std::move(kwargs))});
  InterpreterOptions o;
  o.reduction_order = order;
  return interpret(g, {x}, o).at(0);
}

Tensor f32(const Shape& s, F v) { return Tensor::from_vector(s, v); }
Tensor i64(const Shape& s, I v) { return Tensor::from_vector(s, v); }

// x = [[1, 2, 3], [4, 5, 6]]
Tensor x23() { return f32({2, 3}, {1, 2, 3, 4, 5, 6}); }

}  // namespace

TEST(InterpReduction, SumDimsKeepdimAndFull) {
  Tensor s0 = reduce("sum.dim_IntList", x23(), {I{0}});
  EXPECT_EQ(s0.sizes(), (Shape{3}));
  EXPECT_EQ(s0.to_vector<float>(), (F{5, 7, 9}));
  Tensor s1 = reduce("sum.dim_IntList", x23(), {I{-1}, true});
  EXPECT_EQ(s1.sizes(), (Shape{2, 1}));
  EXPECT_EQ(s1.to_vector<float>(), (F{6, 15}));
  Tensor all = reduce("sum.dim_IntList", x23(), {I{0, 1}});
  EXPECT_EQ(all.sizes(), Shape{});
  EXPECT_EQ(all.item(), 21.0);
  EXPECT_EQ(reduce("sum.dim_IntList", x23(), {I{}}).item(), 21.0);   // [] reduces every dim
  EXPECT_EQ(reduce("sum.dim_IntList", x23(), {Arg()}).item(), 21.0);  // None too
  EXPECT_EQ(reduce("sum.default", x23()).item(), 21.0);
  // 3-d, reducing the outer and inner dims: out[j] = sum over i, k.
  Tensor x3 = f32({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  EXPECT_EQ(reduce("sum.dim_IntList", x3, {I{0, 2}}).to_vector<float>(), (F{14, 22}));
  // 0-d input, and an empty reduction (sum of nothing is 0).
  EXPECT_EQ(reduce("sum.default", Tensor::scalar(2.5)).item(), 2.5);
  Tensor e = reduce("sum.dim_IntList", f32({2, 0}, {}), {I{1}});
  EXPECT_EQ(e.to_vector<float>(), (F{0, 0}));
  EXPECT_THROW(reduce("sum.dim_IntList", x23(), {I{2}}), Error);
}

TEST(InterpReduction, SumDtypes) {
  Tensor is = reduce("sum.default", Tensor::from_vector<int32_t>({3}, {2147483647, 1, 1}));
  EXPECT_EQ(is.dtype(), DType::Int64);
  EXPECT_EQ(is.item_as_int({}), 2147483649LL);
  Tensor bs = reduce("sum.default", Tensor::from_vector<bool>({4}, {true, false, true, true}));
  EXPECT_EQ(bs.dtype(), DType::Int64);
  EXPECT_EQ(bs.item_as_int({}), 3);
  Tensor ds = reduce("sum.default", f32({2}, {0.1f, 0.2f}), {}, {{"dtype", DType::Float64}});
  EXPECT_EQ(ds.dtype(), DType::Float64);
  EXPECT_EQ(ds.item(), static_cast<double>(0.1f) + static_cast<double>(0.2f));
  // float16 accumulates in float32: 4096 ones sum to 4096 (a float16 accumulator stops at 2048).
  Tensor ones = Tensor::full({4096}, 1.0, DType::Float16);
  Tensor hs = reduce("sum.default", ones);
  EXPECT_EQ(hs.dtype(), DType::Float16);
  EXPECT_EQ(hs.item(), 4096.0);
  Tensor bf = reduce("sum.default", Tensor::full({4096}, 1.0, DType::BFloat16));
  EXPECT_EQ(bf.item(), 4096.0);
}

TEST(InterpReduction, SumOrderIsSequentialInFloat32) {
  // Sequential float32: ((((0 + 1e8) + 1) + -1e8) + 1) = 1 (1e8 + 1 rounds to 1e8); exact is 2.
  Tensor x = f32({4}, {1e8f, 1.0f, -1e8f, 1.0f});
  EXPECT_EQ(reduce("sum.default", x).item(), 1.0);
  // The order is lexicographic over the reduced indices, whatever the strides: summing a
  // transposed view over both dims visits t[0][0], t[0][1], t[1][0], t[1][1].
  Tensor base = f32({2, 2}, {1e8f, -1e8f, 1.0f, 1.0f});  // t = [[1e8, 1], [-1e8, 1]]
  Tensor t = base.as_strided({2, 2}, {1, 2}, 0);
  EXPECT_EQ(reduce("sum.default", t).item(), 1.0);    // 1e8 + 1 -> 1e8, -1e8 -> 0, + 1
  EXPECT_EQ(reduce("sum.default", base).item(), 2.0);  // 1e8 - 1e8 + 1 + 1
}

// ReductionOrder::Segmented (stax/sdk/reduction_order.hpp): 16 chains (index mod 16), then the
// tree 8, 4, 2, 1. x = [1e8, 1 x 16] (n = 17), float32 (ulp(1e8) = 8):
//   sequential: 1e8 + 1 rounds to 1e8 sixteen times           -> 1e8
//   segmented: s0 = 1e8 + x16 = 1e8, s1..s15 = 1; tree h=8: s0 = 1e8 + 1 = 1e8, s1..7 = 2;
//              h=4: s0 = 1e8 + 2 = 1e8, s1..3 = 4; h=2: s0 = 1e8 + 4 = 1e8 (tie to even),
//              s1 = 8; h=1: s0 = 1e8 + 8                        -> 100000008 (exact: 100000016)
TEST(InterpReduction, SegmentedOrderIsSixteenChainsAndATree) {
  F v(17, 1.0f);
  v[0] = 1e8f;
  Tensor x = f32({17}, v);
  EXPECT_EQ(reduce("sum.default", x).item(), 1e8);
  EXPECT_EQ(reduce("sum.default", x, {}, {}, ReductionOrder::Segmented).item(), 100000008.0);
  // mean divides the same sum; along a dim, per row; the order ignores the strides.
  Tensor rows = f32({2, 17}, [&] {
    F r = v;
    r.insert(r.end(), v.begin(), v.end());
    return r;
  }());
  Tensor m = reduce("mean.dim", rows, {I{1}}, {}, ReductionOrder::Segmented);
  EXPECT_EQ(m.get_double(0), static_cast<double>(100000008.0f / 17.0f));
  Tensor t = rows.as_strided({17, 2}, {1, 17}, 0);  // the transpose: reduce dim 0
  Tensor st = reduce("sum.dim_IntList", t, {I{0}}, {}, ReductionOrder::Segmented);
  EXPECT_EQ(st.get_double(1), 100000008.0);
  // argmax stays sequential (first index wins); amax is order-independent here.
  Tensor am = reduce("argmax", x, {}, {}, ReductionOrder::Segmented);
  EXPECT_EQ(am.item(), 0.0);
}

TEST(InterpReduction, StridedInputs) {
  // Transposed x23: [[1, 4], [2, 5], [3, 6]].
  Tensor t = x23().as_strided({3, 2}, {1, 3}, 0);
  EXPECT_EQ(reduce("sum.dim_IntList", t, {I{1}}).to_vector<float>(), (F{5, 7, 9}));
  EXPECT_EQ(reduce("sum.dim_IntList", t, {I{0}}).to_vector<float>(), (F{6, 15}));
  EXPECT_EQ(reduce("argmax", t, {0}).to_vector<int64_t>(), (I{2, 2}));
  EXPECT_EQ(reduce("amin", t, {I{1}}).to_vector<float>(), (F{1, 2, 3}));
}

TEST(InterpReduction, Prod) {
  EXPECT_EQ(reduce("prod.dim_int", x23(), {1}).to_vector<float>(), (F{6, 120}));
  EXPECT_EQ(reduce("prod.dim_int", x23(), {0, true}).sizes(), (Shape{1, 3}));
  Tensor p = reduce("prod.default", i64({4}, {2, -3, 4, 5}));
  EXPECT_EQ(p.dtype(), DType::Int64);
  EXPECT_EQ(p.item_as_int({}), -120);
  EXPECT_EQ(reduce("prod.default", f32({0}, {})).item(), 1.0);
}

TEST(InterpReduction, AmaxAminPropagateNaN) {
  Tensor x = f32({2, 3}, {1, kNaN, 3, -1, -5, -2});
  Tensor mx = reduce("amax", x, {I{1}});
  EXPECT_TRUE(std::isnan(mx.to_vector<float>()[0]));
  EXPECT_EQ(mx.to_vector<float>()[1], -1.0f);
  EXPECT_EQ(reduce("amin", x, {I{1}}).to_vector<float>()[1], -5.0f);
  EXPECT_EQ(reduce("amax", x23(), {I{0}, true}).to_vector<float>(), (F{4, 5, 6}));
  EXPECT_EQ(reduce("amax", x23(), {I{0}, true}).sizes(), (Shape{1, 3}));
  EXPECT_EQ(reduce("amax", x23()).item(), 6.0);  // dim=[] reduces all
  EXPECT_EQ(reduce("amin", x23(), {I{0, 1}}).item(), 1.0);
  Tensor ix = reduce("amax", Tensor::from_vector<int32_t>({3}, {-7, 3, -9}));
  EXPECT_EQ(ix.dtype(), DType::Int32);
  EXPECT_EQ(ix.item_as_int({}), 3);
  EXPECT_EQ(reduce("amin", i64({2}, {std::numeric_limits<int64_t>::max(), 5})).item_as_int({}),
            5);
  EXPECT_EQ(reduce("amax", f32({2}, {-kInf, -kInf})).item(), -kInf);
  EXPECT_EQ(reduce("amax", Tensor::from_vector<bool>({2}, {false, true})).to_vector<bool>(),
            (B{true}));
  EXPECT_THROW(reduce("amax", f32({2, 0}, {}), {I{1}}), Error);
}

TEST(InterpReduction, ArgmaxArgminTiesAndNaN) {
  Tensor x = f32({2, 4}, {1, 3, 3, 2, 5, kNaN, 7, kNaN});
  EXPECT_EQ(reduce("argmax", x, {1}).to_vector<int64_t>(), (I{1, 1}));  // first tie; first NaN
  EXPECT_EQ(reduce("argmin", x, {1}).to_vector<int64_t>(), (I{0, 1}));  // NaN wins for argmin too
  EXPECT_EQ(reduce("argmax", x23(), {0}).to_vector<int64_t>(), (I{1, 1, 1}));
  Tensor k = reduce("argmin", x23(), {-1, true});
  EXPECT_EQ(k.sizes(), (Shape{2, 1}));
  EXPECT_EQ(k.to_vector<int64_t>(), (I{0, 0}));
  // dim=None: index into the flattened tensor.
  Tensor f = reduce("argmax", x23());
  EXPECT_EQ(f.dtype(), DType::Int64);
  EXPECT_EQ(f.sizes(), Shape{});
  EXPECT_EQ(f.item_as_int({}), 5);
  EXPECT_EQ(reduce("argmax", x23(), {Arg(), true}).sizes(), (Shape{1, 1}));
  EXPECT_EQ(reduce("argmin", i64({5}, {4, 1, 9, 1, 0})).item_as_int({}), 4);
  EXPECT_EQ(reduce("argmax", i64({4}, {2, 9, 9, 1})).item_as_int({}), 1);
  EXPECT_THROW(reduce("argmax", f32({0}, {})), Error);
}

TEST(InterpReduction, Mean) {
  EXPECT_EQ(reduce("mean.dim", x23(), {I{1}}).to_vector<float>(), (F{2, 5}));
  EXPECT_EQ(reduce("mean.dim", x23(), {I{0}, true}).to_vector<float>(), (F{2.5f, 3.5f, 4.5f}));
  EXPECT_EQ(reduce("mean.default", x23()).item(), 3.5);
  // sum / n in float32: mean of [0.1, 0.2, 0.4] is (0.1f + 0.2f + 0.4f) / 3.
  Tensor m = reduce("mean.default", f32({3}, {0.1f, 0.2f, 0.4f}));
  EXPECT_EQ(m.to_vector<float>()[0], ((0.0f + 0.1f + 0.2f) + 0.4f) / 3.0f);
  EXPECT_TRUE(std::isnan(reduce("mean.default", f32({0}, {})).item()));
  // Integer input: an error like torch, unless a floating dtype is given.
  EXPECT_THROW(reduce("mean.default", i64({2}, {1, 2})), Error);
  Tensor mi = reduce("mean.default", i64({2}, {1, 2}), {}, {{"dtype", DType::Float32}});
  EXPECT_EQ(mi.dtype(), DType::Float32);
  EXPECT_EQ(mi.item(), 1.5);
  Tensor mh = reduce("mean.default", Tensor::full({3}, 2.0, DType::Float16));
  EXPECT_EQ(mh.dtype(), DType::Float16);
  EXPECT_EQ(mh.item(), 2.0);
}

TEST(InterpReduction, VarCorrection) {
  Tensor x = f32({4}, {1, 2, 3, 4});
  // mean 2.5, m2 = 5: unbiased 5 / 3, population 5 / 4.
  EXPECT_EQ(reduce("var.correction", x).to_vector<float>()[0], 5.0f / 3.0f);
  EXPECT_EQ(reduce("var.correction", x, {}, {{"correction", 0}}).item(), 1.25);
  EXPECT_EQ(reduce("var.correction", x, {}, {{"correction", 1.5}}).to_vector<float>()[0],
            5.0f / 2.5f);
  Tensor v = reduce("var.correction", x23(), {I{1}}, {{"keepdim", true}});
  EXPECT_EQ(v.sizes(), (Shape{2, 1}));
  EXPECT_EQ(v.to_vector<float>(), (F{1, 1}));
  // One element with correction 1: 0 / 0 = NaN (torch too); n < correction gives inf for m2 > 0.
  EXPECT_TRUE(std::isnan(reduce("var.correction", f32({1}, {3})).item()));
  EXPECT_EQ(reduce("var.correction", f32({2}, {1, 3}), {}, {{"correction", 3}}).item(), kInf);
  EXPECT_THROW(reduce("var.correction", i64({2}, {1, 2})), Error);
  Tensor vd = reduce("var.correction", Tensor::from_vector<double>({3}, {1.0, 2.0, 4.0}));
  EXPECT_EQ(vd.dtype(), DType::Float64);
  EXPECT_DOUBLE_EQ(vd.item(), 7.0 / 3.0);
}

TEST(InterpReduction, AllAny) {
  Tensor x = f32({2, 3}, {1, kNaN, 0, 2, 3, -1});
  EXPECT_EQ(reduce("all.dim", x, {1}).to_vector<bool>(), (B{false, true}));
  EXPECT_EQ(reduce("any.dim", x, {0}).to_vector<bool>(), (B{true, true, true}));
  EXPECT_EQ(reduce("all.dim", x, {0, true}).sizes(), (Shape{1, 3}));
  EXPECT_EQ(reduce("all.default", x).to_vector<bool>(), (B{false}));
  EXPECT_EQ(reduce("any.default", f32({3}, {0, -0.0f, 0})).to_vector<bool>(), (B{false}));
  EXPECT_EQ(reduce("all.default", f32({0}, {})).to_vector<bool>(), (B{true}));
  EXPECT_EQ(reduce("any.default", f32({0}, {})).to_vector<bool>(), (B{false}));
  Tensor u = reduce("any.default", Tensor::from_vector<uint8_t>({2}, {0, 7}));
  EXPECT_EQ(u.dtype(), DType::UInt8);
  EXPECT_EQ(u.item_as_int({}), 1);
}
