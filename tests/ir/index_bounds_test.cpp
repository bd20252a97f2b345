// Range analysis reaching the generated code (core/ir/index_bounds.h; seed Def. 6.4, Listings
// 6.5 and 6.6): the guards of indirect indices dropped when value ranges prove them redundant,
// and 32-bit index arithmetic when every index fits int32. Unit tests on hand-built LoopBodies,
// then the compiled path (cpu_cpp): the generated source, results bit for bit equal to the
// interpreter, and the run-time error of an index the analysis cannot bound.
#include "core/ir/index_bounds.h"

#include <gtest/gtest.h>

#include "core/codegen/kernel_codegen.h"
#include "core/ops/pointwise/formulas.h"
#include "core/ir/ops_builder.h"
#include "tests/support/compiled_check.h"
#include "tests/support/interp_helpers.h"

namespace stax {
namespace {

using test::bitwise_equal;
using test::contains;
using test::cpu_compiler;

constexpr int64_t kInt32Max = 2147483647;

// out[i0] = x[f(idx[i0])] over 64 points, x of `size` elements along the indexed dim, where
// f = `index_of` applied to the loaded index; returns the indirect_indexing op after the pass.
LoopOp guarded_read(DType idx_dtype, int64_t size, bool wrap,
                    const std::function<Val(OpsBuilder&, Val)>& index_of) {
  OpsBuilder b({64});
  Expr i0 = Expr::iter(0, 64);
  Val loaded = b.to_dtype(b.load("idx", idx_dtype, i0), DType::Int64);
  Expr e = b.indirect_indexing(index_of(b, loaded), size, /*check=*/true, wrap);
  b.store("out", i0, b.load("x", DType::Float32, e));
  LoopBody body = drop_redundant_index_checks(b.body());
  for (const LoopOp& op : body.ops)
    if (op.opcode == Opcode::indirect_indexing) return op;
  ADD_FAILURE() << "no indirect_indexing op";
  return {};
}

Val as_is(OpsBuilder&, Val v) { return v; }
std::function<Val(OpsBuilder&, Val)> clamped(std::optional<double> lo, std::optional<double> hi) {
  return [lo, hi](OpsBuilder& b, Val v) { return formulas::clamp(b, v, lo, hi, DType::Int64); };
}

// ---- drop_redundant_index_checks --------------------------------------------------------------

TEST(DropRedundantIndexChecks, ClampedIndexKeepsNeitherGuard) {  // Listing 6.6
  LoopOp op = guarded_read(DType::Int64, 128, true, clamped(0, 127));
  EXPECT_FALSE(op.check);
  EXPECT_FALSE(op.wrap_negative);
}

TEST(DropRedundantIndexChecks, LoadedIndexKeepsBothGuards) {  // Listing 6.5
  LoopOp op = guarded_read(DType::Int64, 128, true, as_is);
  EXPECT_TRUE(op.check);
  EXPECT_TRUE(op.wrap_negative);
  // gather / index_select do not wrap: the check alone stays
  op = guarded_read(DType::Int64, 128, false, as_is);
  EXPECT_TRUE(op.check);
  EXPECT_FALSE(op.wrap_negative);
}

TEST(DropRedundantIndexChecks, EachGuardOnItsOwnEvidence) {
  // nonnegative but unbounded above: no wrap, still checked
  LoopOp op = guarded_read(DType::Int64, 128, true, clamped(0, std::nullopt));
  EXPECT_TRUE(op.check);
  EXPECT_FALSE(op.wrap_negative);
  // [-128, 127] wraps into [0, 127]: the wrap stays, the check goes
  op = guarded_read(DType::Int64, 128, true, clamped(-128, 127));
  EXPECT_FALSE(op.check);
  EXPECT_TRUE(op.wrap_negative);
  // [-129, 127] may wrap to -1; [0, 128] may reach the size: checked
  EXPECT_TRUE(guarded_read(DType::Int64, 128, true, clamped(-129, 127)).check);
  EXPECT_TRUE(guarded_read(DType::Int64, 128, true, clamped(0, 128)).check);
  // without wrapping, a negative lower bound keeps the check
  EXPECT_TRUE(guarded_read(DType::Int64, 128, false, clamped(-1, 127)).check);
}

TEST(DropRedundantIndexChecks, NarrowIntegerLoadsAreBoundedByTheirDtype) {
  LoopOp op = guarded_read(DType::UInt8, 256, true, as_is);  // [0, 255]
  EXPECT_FALSE(op.check);
  EXPECT_FALSE(op.wrap_negative);
  op = guarded_read(DType::UInt8, 200, true, as_is);
  EXPECT_TRUE(op.check);
  EXPECT_FALSE(op.wrap_negative);
  op = guarded_read(DType::Int8, 128, true, as_is);  // [-128, 127] wraps into [0, 127]
  EXPECT_FALSE(op.check);
  EXPECT_TRUE(op.wrap_negative);
  op = guarded_read(DType::Int32, 128, true, as_is);
  EXPECT_TRUE(op.check);
  EXPECT_TRUE(op.wrap_negative);
}

TEST(DropRedundantIndexChecks, ArithmeticAndSelectionPropagate) {
  // (idx % 128 + 128) % 128 ... with a floor modulo: [0, 127]
  LoopOp op = guarded_read(DType::Int64, 128, true, [](OpsBuilder& b, Val v) {
    return b.mod(v, b.constant(ScalarValue::integer(128), DType::Int64));
  });
  EXPECT_FALSE(op.check);
  EXPECT_FALSE(op.wrap_negative);
  // where(idx < 0, 5, clamp(idx, 0, 99)): [0, 99]
  op = guarded_read(DType::Int64, 100, true, [](OpsBuilder& b, Val v) {
    Val zero = b.constant(ScalarValue::integer(0), DType::Int64);
    Val five = b.constant(ScalarValue::integer(5), DType::Int64);
    return b.where(b.lt(v, zero), five, formulas::clamp(b, v, 0.0, 99.0, DType::Int64));
  });
  EXPECT_FALSE(op.check);
  EXPECT_FALSE(op.wrap_negative);
  // the analysis is not path-sensitive: where(idx < 0, 0, min(idx, 99)) is [-inf, 99]
  op = guarded_read(DType::Int64, 100, true, [](OpsBuilder& b, Val v) {
    Val zero = b.constant(ScalarValue::integer(0), DType::Int64);
    Val hi = b.minimum(v, b.constant(ScalarValue::integer(99), DType::Int64));
    return b.where(b.lt(v, zero), zero, hi);
  });
  EXPECT_TRUE(op.check);
  EXPECT_TRUE(op.wrap_negative);
  // a float index converted to int64 is unbounded
  op = guarded_read(DType::Float32, 100, true, as_is);
  EXPECT_TRUE(op.check);
  EXPECT_TRUE(op.wrap_negative);
}

TEST(ValueRanges, DtypesBoundConversionsAndOverflows) {
  OpsBuilder b({1000});
  Expr i0 = Expr::iter(0, 1000);
  Val a = b.index_expr(i0, DType::Int64);       // [0, 999]
  Val n8 = b.to_dtype(a, DType::Int8);          // does not fit: [-128, 127]
  Val n32 = b.to_dtype(a, DType::Int32);        // fits: [0, 999]
  Val big = b.constant(ScalarValue::integer(kInt32Max), DType::Int32);
  Val sum = b.add(n32, big);                    // may overflow int32: unknown
  Val u8 = b.load("u", DType::UInt8, i0);       // [0, 255]
  Val flag = b.load("m", DType::Bool, i0);      // [0, 1]
  Val f = b.load("f", DType::Float32, i0);
  b.store("out", i0, b.add(f, b.to_dtype(b.add(n8, b.to_dtype(sum, DType::Int8)), DType::Float32)));
  std::vector<Interval> r = value_ranges(b.body());
  auto at = [&](Val v) { return r[static_cast<size_t>(v.id)]; };
  EXPECT_EQ(at(n8), (Interval{-128, 127}));
  EXPECT_EQ(at(n32), (Interval{0, 999}));
  EXPECT_EQ(at(sum), Interval::unbounded());
  EXPECT_EQ(at(u8), (Interval{0, 255}));
  EXPECT_EQ(at(flag), (Interval{0, 1}));
  EXPECT_EQ(at(f), Interval::unbounded());
}

// ABI 1.8's bitwise ops: x & m lies in [0, m] for a nonnegative m whatever x is (an index masked
// to a power-of-two table needs no check); | and ^ of nonnegatives stay below the next power of
// two; a negative operand leaves | and ^ unbounded.
TEST(ValueRanges, BitwiseOpsOfNonnegativeOperands) {
  OpsBuilder b({1000});
  Expr i0 = Expr::iter(0, 1000);
  Val x = b.load("x", DType::Int64, i0);                            // unbounded
  Val m = b.constant(ScalarValue::integer(127), DType::Int64);
  Val k = b.index_expr(i0, DType::Int64);                           // [0, 999]
  Val masked = b.bitwise_and(x, m);                                 // [0, 127]
  Val both = b.bitwise_and(k, b.constant(ScalarValue::integer(4096), DType::Int64));  // [0, 999]
  Val ored = b.bitwise_or(k, m);                                    // [0, 1023]
  Val xored = b.bitwise_xor(k, b.constant(ScalarValue::integer(1024), DType::Int64));  // [0, 2047]
  Val neg = b.bitwise_or(k, x);                                     // unbounded
  Val byte = b.bitwise_xor(b.to_dtype(b.load("u", DType::UInt8, i0), DType::Int64), m);  // [0, 255]
  b.store("out", i0, b.add(b.add(masked, both), b.add(b.add(ored, xored), b.add(neg, byte))));
  std::vector<Interval> r = value_ranges(b.body());
  auto at = [&](Val v) { return r[static_cast<size_t>(v.id)]; };
  EXPECT_EQ(at(masked), (Interval{0, 127}));
  EXPECT_EQ(at(both), (Interval{0, 999}));
  EXPECT_EQ(at(ored), (Interval{0, 1023}));
  EXPECT_EQ(at(xored), (Interval{0, 2047}));
  EXPECT_EQ(at(neg), Interval::unbounded());
  EXPECT_EQ(at(byte), (Interval{0, 255}));
  // the masked index needs no bounds check in a table of 128
  LoopOp op = guarded_read(DType::Int64, 128, true, [](OpsBuilder& bb, Val v) {
    return bb.bitwise_and(v, bb.constant(ScalarValue::integer(127), DType::Int64));
  });
  EXPECT_FALSE(op.check);
  EXPECT_FALSE(op.wrap_negative);
}

// ---- index_bits --------------------------------------------------------------------------------

int64_t no_offset(const std::string&) { return 0; }

// out[index] = x[index] over `ranges`.
LoopBody copy_body(std::vector<int64_t> ranges, const Expr& index) {
  OpsBuilder b(std::move(ranges));
  b.store("out", index, b.load("x", DType::Float32, index));
  return b.take();
}

TEST(IndexBits, SmallKernelsUse32Bits) {
  Expr i0 = Expr::iter(0, 64), r0 = Expr::reduce(0, 128);
  OpsBuilder b({64}, {128});
  Val x = b.load("x", DType::Float32, 128 * i0 + r0);
  b.store_reduction("out", i0, b.reduction(ReductionType::Sum, DType::Float32, x));
  EXPECT_EQ(index_bits(b.body(), no_offset), 32);
  // the largest int32 index still fits
  EXPECT_EQ(index_bits(copy_body({kInt32Max}, Expr::iter(0, kInt32Max)), no_offset), 32);
}

TEST(IndexBits, MoreThan2To31ElementsUse64Bits) {
  // 65536 x 65536 = 2^32 elements: nothing is allocated, only the ranges are looked at
  Expr i0 = Expr::iter(0, 65536), i1 = Expr::iter(1, 65536);
  EXPECT_EQ(index_bits(copy_body({65536, 65536}, 65536 * i0 + i1), no_offset), 64);
  EXPECT_EQ(index_bits(copy_body({kInt32Max + 1}, Expr::iter(0, kInt32Max + 1)), no_offset), 64);
  // an index_expr counts too
  OpsBuilder b({65536, 65536});
  Val v = b.index_expr(65536 * i0 + i1, DType::Int64);
  b.store("out", Expr(0), b.to_dtype(v, DType::Float32));
  EXPECT_EQ(index_bits(b.body(), no_offset), 64);
}

TEST(IndexBits, BufferOffsetsAndIntermediateSumsCount) {
  Expr i0 = Expr::iter(0, 1000);
  LoopBody body = copy_body({1000}, i0);
  EXPECT_EQ(index_bits(body, [](const std::string&) { return kInt32Max - 999; }), 32);
  EXPECT_EQ(index_bits(body, [](const std::string&) { return kInt32Max - 998; }), 64);
  // Partial sums, left to right: 2^30*i0 - 2^30*i1 + 2^30 - 1 stays within int32 throughout;
  // 2^30*i0 + 2^30*i1 - 2^30 ends in [-2^30, 2^30] but passes through 2^31.
  const int64_t g = int64_t{1} << 30;
  Expr a = Expr::iter(0, 2), b = Expr::iter(1, 2);
  EXPECT_EQ(index_bits(copy_body({2, 2}, g * a - g * b + (g - 1)), no_offset), 32);
  EXPECT_EQ(index_bits(copy_body({2, 2}, g * a + g * b - g), no_offset), 64);
}

TEST(IndexBits, IndirectIndicesAndArgmaxPositions) {
  // a checked indirect index ranges over [0, size)
  auto gather = [](int64_t size) {
    OpsBuilder b({64});
    Expr i0 = Expr::iter(0, 64);
    Expr e = b.indirect_indexing(b.load("idx", DType::Int64, i0), size);
    b.store("out", i0, b.load("x", DType::Float32, 4 * e));
    return b.take();
  };
  EXPECT_EQ(index_bits(gather(1 << 20), no_offset), 32);
  EXPECT_EQ(index_bits(gather(int64_t{1} << 30), no_offset), 64);  // 4 * (2^30 - 1)
  // argmax over 2^32 reduction points: each load index is small, the linear position is not
  OpsBuilder b({1}, {65536, 65536});
  Val x = b.load("x", DType::Float32, Expr::reduce(1, 65536));
  b.store_reduction("out", Expr(0), b.reduction(ReductionType::ArgMax, DType::Int64, x));
  EXPECT_EQ(index_bits(b.body(), no_offset), 64);
}

// ---- the compiled path (cpu_cpp) ------------------------------------------------------------

std::string kernel_source(const CompiledGraph& cg) {
  std::string all;
  for (const auto& k : cg.kernels()) all += k.source.substr(k.source.find("// ---- stax kernel"));
  return all;
}

const char kWrap[] = "< 0 ?";
const char kCheck[] = "STAX_CHECK(";

// Listing 6.6 with a clamp: x[clamp(idx, 0, 127)] along a dim of size 128.
TEST(CompiledIndexBounds, ClampedGatherAndIndexSelectHaveNoGuards) {
  Graph g;
  Node* x = g.placeholder("x", {4, 128});
  Node* xt = g.placeholder("xt", {128, 3});
  Node* idx = g.placeholder("idx", {4, 8}, DType::Int64);
  Node* sel = g.placeholder("sel", {10}, DType::Int64);
  auto clamp = [&](Node* n) {
    return g.call("clamp", {n}, {{"min", Arg(0)}, {"max", Arg(127)}});
  };
  g.output({g.call("gather", {x, 1, clamp(idx)}), g.call("index_select", {xt, 0, clamp(sel)})});
  CompiledGraph cg = cpu_compiler().compile(g);
  std::string src = kernel_source(cg);
  EXPECT_FALSE(contains(src, kCheck)) << src;
  EXPECT_FALSE(contains(src, kWrap)) << src;
  for (const KernelPlan& p : plan_kernels(cg.schedule(), cg.lowered()))
    for (const LoopBody& body : p.bodies)
      for (const LoopOp& op : body.ops)
        if (op.opcode == Opcode::indirect_indexing) {
          EXPECT_FALSE(op.check || op.wrap_negative);
        }
  // indices far outside [0, 128) in both directions: clamped, equal to the interpreter
  std::vector<Tensor> in = {Tensor::randn({4, 128}), Tensor::randn({128, 3}),
                            Tensor::randint({4, 8}, -300, 300, DType::Int64, 5),
                            Tensor::randint({10}, -300, 300, DType::Int64, 6)};
  std::vector<Tensor> got = cg.run(in), want = test::reference(g, in);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(bitwise_equal(got[0], want[0]));
  EXPECT_TRUE(bitwise_equal(got[1], want[1]));
}

// Listing 6.5: an index read from memory keeps the wrap (index.Tensor) and the check.
TEST(CompiledIndexBounds, LoadedIndexKeepsWrapAndCheck) {
  Graph g;
  Node* x = g.placeholder("x", {128});
  Node* idx = g.placeholder("idx", {16}, DType::Int64);
  g.output({g.call("mul.Scalar", {g.call("index.Tensor", {x, Arg(Arg::List{Arg(idx)})}), 2})});
  CompiledGraph cg = cpu_compiler().compile(g);
  std::string src = kernel_source(cg);
  EXPECT_TRUE(contains(src, kCheck)) << src;
  EXPECT_TRUE(contains(src, kWrap)) << src;
  std::vector<Tensor> in = {Tensor::randn({128}),
                            Tensor::randint({16}, -128, 128, DType::Int64, 3)};
  EXPECT_TRUE(bitwise_equal(cg.run(in)[0], test::reference(g, in)[0]));
  // out of range on either side: the clean run-time error
  for (int64_t bad : {128, -129}) {
    in[1].set_double(7, static_cast<double>(bad));
    std::string what = test::error_of([&] { cg.run(in); });
    EXPECT_TRUE(contains(what, "index out of bounds")) << bad << ": " << what;
  }
}

// A clamp too wide for the dim proves the lower bound only: no wrap, the check stays and fires.
TEST(CompiledIndexBounds, TooWideClampKeepsTheCheck) {
  Graph g;
  Node* x = g.placeholder("x", {128});
  Node* idx = g.placeholder("idx", {16}, DType::Int64);
  Node* c = g.call("clamp", {idx}, {{"min", Arg(0)}, {"max", Arg(200)}});
  g.output({g.call("index.Tensor", {x, Arg(Arg::List{Arg(c)})})});
  CompiledGraph cg = cpu_compiler().compile(g);
  std::string src = kernel_source(cg);
  EXPECT_TRUE(contains(src, kCheck)) << src;
  EXPECT_FALSE(contains(src, kWrap)) << src;
  std::vector<Tensor> in = {Tensor::randn({128}),
                            Tensor::randint({16}, -50, 128, DType::Int64, 4)};
  EXPECT_TRUE(bitwise_equal(cg.run(in)[0], test::reference(g, in)[0]));
  in[1].set_double(3, 150.0);
  EXPECT_TRUE(contains(test::error_of([&] { cg.run(in); }), "index out of bounds"));
}

// Example 6.3 g2: an index computed from arange is propagated into the read; nothing to guard.
TEST(CompiledIndexBounds, ArangeIndexHasNoGuards) {
  Graph g;
  Node* x = g.placeholder("x", {128});
  Node* a = g.call("arange", {128}, {{"dtype", DType::Int64}});
  Node* idx = g.call("remainder.Scalar", {g.call("mul.Scalar", {a, 3}), 128});
  g.output({g.call("mul.Scalar", {g.call("index.Tensor", {x, Arg(Arg::List{Arg(idx)})}), 2})});
  CompiledGraph cg = cpu_compiler().compile(g);
  std::string src = kernel_source(cg);
  EXPECT_FALSE(contains(src, kCheck)) << src;
  EXPECT_FALSE(contains(src, kWrap)) << src;
  std::vector<Tensor> in = {Tensor::randn({128})};
  EXPECT_TRUE(bitwise_equal(cg.run(in)[0], test::reference(g, in)[0]));
}

TEST(CompiledIndexBounds, SmallKernelsIndexIn32Bits) {
  Graph g;
  Node* x = g.placeholder("x", {64, 128});
  Node* idx = g.placeholder("idx", {64}, DType::Int64);
  Node* rows = g.call("index_select", {x, 0, idx});
  g.output({g.call("argmax", {rows, 1}), g.call("sum.dim_IntList", {rows, std::vector<int64_t>{0}}),
            g.call("relu", {rows})});
  CompiledGraph cg = cpu_compiler().compile(g);
  for (const KernelPlan& p : plan_kernels(cg.schedule(), cg.lowered())) EXPECT_EQ(p.desc.get()->index_bits, 32);
  std::string src = kernel_source(cg);
  // the row loop runs on int (plain rows, or blocks of lanes with an int tail)
  EXPECT_TRUE(contains(src, "int i0 = (int)stax_begin;")) << src;
  EXPECT_TRUE(contains(src, "i0 < (int)stax_end; ++i0)")) << src;
  EXPECT_TRUE(contains(src, "for (int r0_0 = 0; r0_0 < 128; ++r0_0) {")) << src;
  EXPECT_TRUE(contains(src, "stax_scalar::convert<int>(")) << src;  // the checked indirect index
  EXPECT_FALSE(contains(src, "for (long long")) << src;
  std::vector<Tensor> in = {Tensor::randn({64, 128}),
                            Tensor::randint({64}, 0, 64, DType::Int64, 8)};
  std::vector<Tensor> got = cg.run(in), want = test::reference(g, in);
  ASSERT_EQ(got.size(), 3u);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(bitwise_equal(got[i], want[i])) << i;
  in[1].set_double(5, 64.0);
  EXPECT_TRUE(contains(test::error_of([&] { cg.run(in); }), "index out of bounds"));
}

TEST(CompiledIndexBounds, HugeBuffersIndexIn64Bits) {
  // 2^16 x 2^16 float32 (16 GiB): lowered and planned, never allocated
  Graph g;
  Node* x = g.placeholder("x", {65536, 65536});
  g.output({g.call("relu", {g.call("t", {x})})});
  LoweredGraph l = lower_graph(g);
  std::vector<KernelPlan> plans = plan_kernels(schedule(l), l);
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ(plans[0].desc.get()->index_bits, 64);
}

}  // namespace
}  // namespace stax
