// LoopBody (core/ir/loop_body.h): recording with OpsBuilder, the replays of §6.7 (read/write
// recorder, op counter, formatter, value ranges) and loop normalization (Prop. 6.3).
#include "core/ir/loop_body.h"

#include <gtest/gtest.h>

#include <functional>

#include "core/ops/pointwise/formulas.h"
#include "core/ir/eliminate_dead_ops.h"
#include "core/ir/normalize_loops.h"
#include "core/ir/ops_builder.h"
#include "core/support/error.h"

namespace stax {
using Index = std::vector<Expr>;

namespace {

// Listing 6.2's body, recorded by hand.
LoopBody example11() {
  OpsBuilder b({64}, {128});
  Expr i0 = Expr::iter(0, 64), r0 = Expr::reduce(0, 128);
  Expr idx = 128 * i0 + r0;
  Val x = b.load("primals_1", DType::Float32, idx);
  Val y = b.load("primals_2", DType::Float32, idx);
  Val s = b.add(x, y);
  Val r = b.relu(s);
  Val two = b.constant(ScalarValue::integer(2), DType::Float32);
  Val m = b.mul(r, two);
  Val red = b.reduction(ReductionType::Sum, DType::Float32, m);
  b.store_reduction("buf2", i0, red);
  return b.take();
}

TEST(LoopBody, RecordsAnSsaListWithSeparateIndices) {
  LoopBody body = example11();
  ASSERT_EQ(body.ops.size(), 8u);
  EXPECT_EQ(body.indices.size(), 2u);  // 128*i0 + r0_0 (shared by both loads) and i0
  EXPECT_EQ(body.ops[2].operands[0], 0);
  EXPECT_EQ(body.ops[2].operands[1], 1);
  EXPECT_EQ(body.ops[2].num_operands(), 2);
  EXPECT_TRUE(body.is_reduction());
  EXPECT_EQ(body.reduction_type(), ReductionType::Sum);
  EXPECT_EQ(body.result(), 5);
  EXPECT_EQ(body.iter_vars(), (std::vector<Expr>{Expr::iter(0, 64)}));
}

TEST(LoopBody, FormatterPrintsListing62) {
  EXPECT_EQ(format_inner_fn(example11(), "  "),
            "  def inner_fn(index, rindex):\n"
            "      i0 = index\n"
            "      r0_0 = rindex\n"
            "      tmp0 = ops.load('primals_1', 128*i0 + r0_0)\n"
            "      tmp1 = ops.load('primals_2', 128*i0 + r0_0)\n"
            "      tmp2 = ops.add('tmp0', 'tmp1')\n"
            "      tmp3 = ops.relu('tmp2')\n"
            "      tmp4 = ops.constant(2, tensorplay.float32)\n"
            "      tmp5 = ops.mul('tmp3', 'tmp4')\n"
            "      return tmp5\n");
  EXPECT_EQ(format_loop_body(example11()).substr(format_loop_body(example11()).find("tmp6")),
            "tmp6 = ops.reduction('sum', tensorplay.float32, 'tmp5')\n"
            "ops.store_reduction('buf2', i0, 'tmp6')\n");
}

TEST(LoopBody, ReadWriteRecorder) {
  ReadWrites rw = read_writes(example11());
  ASSERT_EQ(rw.reads.size(), 2u);
  EXPECT_EQ(rw.reads[0].buffer, "primals_1");
  EXPECT_EQ(rw.reads[1].index.str(), "128*i0 + r0_0");
  EXPECT_EQ(rw.read_buffers(), (std::vector<std::string>{"primals_1", "primals_2"}));
  ASSERT_EQ(rw.writes.size(), 1u);
  EXPECT_EQ(rw.writes[0], (MemoryDep{"buf2", Expr::iter(0, 64)}));
}

TEST(LoopBody, OpCounter) {
  OpCounts c = count_ops(example11());
  EXPECT_EQ(c.num_ops, 6);  // 2 loads, add, relu, constant, mul
  EXPECT_EQ(c.num_loads, 2);
  EXPECT_EQ(c.buffers_read, (std::vector<std::string>{"primals_1", "primals_2"}));
  EXPECT_TRUE(c.ops.count(Opcode::relu));
  EXPECT_FALSE(c.ops.count(Opcode::exp));
}

TEST(LoopBody, BuilderChecksDtypesAndSkipsNoOpCasts) {
  OpsBuilder b({4});
  Val x = b.load("x", DType::Float16, Expr::iter(0, 4));
  EXPECT_EQ(b.to_dtype(x, DType::Float16), x);
  Val f = b.to_dtype(x, DType::Float32);
  EXPECT_NE(f, x);
  EXPECT_EQ(b.dtype(f), DType::Float32);
  EXPECT_THROW(b.add(x, f), Error);
  EXPECT_EQ(b.dtype(b.lt(f, f)), DType::Bool);
  EXPECT_EQ(b.dtype(b.isnan(f)), DType::Bool);
  // Constants keep both spellings: the literal for printing, the value in the dtype's domain.
  Val c = b.constant(2.75, DType::Int64);
  EXPECT_EQ(b.body().ops[static_cast<size_t>(c.id)].imm.i, 2);
  EXPECT_EQ(b.body().ops[static_cast<size_t>(c.id)].imm.str(), "2.75");
}

TEST(LoopBody, SharedFormulasRecordLoopOps) {
  OpsBuilder b({8});
  Val x = b.load("x", DType::Float32, Expr::iter(0, 8));
  Val y = formulas::silu(b, x, DType::Float32);
  b.store("out", Expr::iter(0, 8), y);
  EXPECT_EQ(format_loop_body(b.body()),
            "tmp0 = ops.load('x', i0)\n"
            "tmp1 = ops.sigmoid('tmp0')\n"
            "tmp2 = ops.mul('tmp0', 'tmp1')\n"
            "ops.store('out', i0, 'tmp2')\n");
}

// Example 6.3: an index computed from the loop variable has a provable range and is propagated
// into the read's index expression; one read from memory stays an indirect index.
TEST(LoopBody, ValueRangesAndIndexPropagationOfExample63) {
  OpsBuilder b({128});
  Expr i0 = Expr::iter(0, 128);
  Val a = b.index_expr(i0, DType::Int64);
  Val three = b.constant(ScalarValue::integer(3), DType::Int64);
  Val m = b.mul(a, three);
  Val n = b.constant(ScalarValue::integer(128), DType::Int64);
  Val idx = b.mod(m, n);
  Val loaded = b.load("idx", DType::Int64, i0);
  Expr direct = b.indirect_indexing(idx, 128);       // g2
  Expr indirect = b.indirect_indexing(loaded, 128);  // g1
  Val x2 = b.load("x", DType::Float32, direct);
  Val x1 = b.load("x", DType::Float32, indirect);
  b.store("out", i0, b.add(x1, x2));
  std::vector<Interval> r = value_ranges(b.body());
  EXPECT_EQ(r[static_cast<size_t>(a.id)], (Interval{0, 127}));
  EXPECT_EQ(r[static_cast<size_t>(m.id)], (Interval{0, 381}));
  EXPECT_EQ(r[static_cast<size_t>(idx.id)], (Interval{0, 127}));        // check can be dropped
  EXPECT_EQ(r[static_cast<size_t>(loaded.id)], Interval::unbounded());  // g1: kept
  EXPECT_EQ(direct.str(), "(3*i0) % 128");
  EXPECT_EQ(indirect.str(), "tmp6");
  EXPECT_EQ(bound(indirect), (Interval{0, 127}));
  EXPECT_EQ(format_loop_body(b.body()),
            "tmp0 = ops.index_expr(i0, tensorplay.int64)\n"
            "tmp1 = ops.constant(3, tensorplay.int64)\n"
            "tmp2 = ops.mul('tmp0', 'tmp1')\n"
            "tmp3 = ops.constant(128, tensorplay.int64)\n"
            "tmp4 = ops.mod('tmp2', 'tmp3')\n"
            "tmp5 = ops.load('idx', i0)\n"
            "tmp6 = ops.indirect_indexing('tmp5', 128)\n"
            "tmp7 = ops.load('x', (3*i0) % 128)\n"
            "tmp8 = ops.load('x', tmp6)\n"
            "tmp9 = ops.add('tmp8', 'tmp7')\n"
            "ops.store('out', i0, 'tmp9')\n");
  // The value ops of the propagated index are dead; tmp<op> names follow the renumbering.
  EXPECT_EQ(format_loop_body(eliminate_dead_ops(b.body())),
            "tmp0 = ops.load('idx', i0)\n"
            "tmp1 = ops.indirect_indexing('tmp0', 128)\n"
            "tmp2 = ops.load('x', (3*i0) % 128)\n"
            "tmp3 = ops.load('x', tmp1)\n"
            "tmp4 = ops.add('tmp3', 'tmp2')\n"
            "ops.store('out', i0, 'tmp4')\n");
}

// ---- normalize_loops (Prop. 6.3) ----------------------------------------------------------------

LoopBody body_with(std::vector<int64_t> ranges, std::vector<int64_t> rranges,
                   const std::vector<std::function<Expr(const Index&, const Index&)>>& loads,
                   std::function<Expr(const Index&)> store) {
  OpsBuilder b(ranges, rranges);
  Index idx, ridx;
  for (size_t k = 0; k < ranges.size(); ++k)
    idx.push_back(Expr::iter(static_cast<int32_t>(k), ranges[k]));
  for (size_t k = 0; k < rranges.size(); ++k)
    ridx.push_back(Expr::reduce(static_cast<int32_t>(k), rranges[k]));
  Val acc{};
  for (const auto& l : loads) {
    Val v = b.load("in", DType::Float32, l(idx, ridx));
    acc = acc.valid() ? b.add(acc, v) : v;
  }
  if (!rranges.empty()) {
    Val r = b.reduction(ReductionType::Sum, DType::Float32, acc);
    b.store_reduction("out", store(idx), r);
  } else {
    b.store("out", store(idx), acc);
  }
  return b.take();
}

std::vector<std::string> indices_of(const LoopBody& b) {
  std::vector<std::string> out;
  for (const LoopOp& op : b.ops)
    if (op.index >= 0) out.push_back(b.index_of(op).str());
  return out;
}

TEST(NormalizeLoops, Example62MergesIntoOneLoop) {
  LoopBody b =
      body_with({64, 2}, {8192},
                {[](const Index& i, const Index& r) { return 16384 * i[0] + 8192 * i[1] + r[0]; }},
                [](const Index& i) { return 2 * i[0] + i[1]; });
  LoopBody n = normalize_loops(b);
  EXPECT_EQ(n.ranges, (std::vector<int64_t>{128}));
  EXPECT_EQ(n.reduction_ranges, (std::vector<int64_t>{8192}));
  EXPECT_EQ(indices_of(n), (std::vector<std::string>{"8192*i0 + r0_0", "i0"}));
  EXPECT_EQ(n.ops.size(), b.ops.size());
}

TEST(NormalizeLoops, DropsUnitDimsThenMerges) {
  LoopBody b =
      body_with({1, 64, 1, 32}, {}, {[](const Index& i, const Index&) { return 32 * i[1] + i[3]; }},
                [](const Index& i) { return 32 * i[1] + i[3]; });
  LoopBody n = normalize_loops(b);
  EXPECT_EQ(n.ranges, (std::vector<int64_t>{2048}));
  EXPECT_EQ(indices_of(n), (std::vector<std::string>{"i0", "i0"}));
}

TEST(NormalizeLoops, KeepsLoopsWhoseAccessesDisagree) {
  // A transposed read and a contiguous write: the read's contiguous dim goes inside, and the
  // write (a_0 = 1 != 32 * 64) keeps the two loops apart.
  LoopBody t =
      body_with({32, 64}, {}, {[](const Index& i, const Index&) { return i[0] + 32 * i[1]; }},
                [](const Index& i) { return 64 * i[0] + i[1]; });
  LoopBody tn = normalize_loops(t);
  EXPECT_EQ(tn.ranges, (std::vector<int64_t>{64, 32}));
  EXPECT_EQ(indices_of(tn), (std::vector<std::string>{"32*i0 + i1", "i0 + 64*i1"}));
  // Only the inner pair merges when the outer coefficient of one access breaks the condition.
  LoopBody p =
      body_with({4, 8, 16}, {},
                {[](const Index& i, const Index&) { return 128 * i[0] + 16 * i[1] + i[2]; },
                 [](const Index& i, const Index&) { return 1000 * i[0] + 16 * i[1] + i[2]; }},
                [](const Index& i) { return 128 * i[0] + 16 * i[1] + i[2]; });
  LoopBody n = normalize_loops(p);
  EXPECT_EQ(n.ranges, (std::vector<int64_t>{4, 128}));
  EXPECT_EQ(indices_of(n),
            (std::vector<std::string>{"128*i0 + i1", "1000*i0 + i1", "128*i0 + i1"}));
}

TEST(NormalizeLoops, MergesReductionDimsInOrder) {
  LoopBody b = body_with(
      {8}, {4, 8}, {[](const Index& i, const Index& r) { return 32 * i[0] + 8 * r[0] + r[1]; }},
      [](const Index& i) { return i[0]; });
  LoopBody n = normalize_loops(b);
  EXPECT_EQ(n.ranges, (std::vector<int64_t>{8}));
  EXPECT_EQ(n.reduction_ranges, (std::vector<int64_t>{32}));
  EXPECT_EQ(indices_of(n), (std::vector<std::string>{"32*i0 + r0_0", "i0"}));
  // A reduction over a single point stays a reduction.
  LoopBody one = body_with({8}, {1}, {[](const Index& i, const Index&) { return i[0]; }},
                           [](const Index& i) { return i[0]; });
  EXPECT_EQ(normalize_loops(one).reduction_ranges, (std::vector<int64_t>{1}));
}

}  // namespace
}  // namespace stax
