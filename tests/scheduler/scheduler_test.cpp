// The scheduler (core/scheduler): iteration-space refinement, fusion decisions and their reasons,
// the memory plan, and fused kernels' results against the reference interpreter.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/graph/parser.h"
#include "core/ir/loop_body.h"
#include "core/lowering/graph_lowering.h"
#include "core/scheduler/iteration_space.h"
#include "core/scheduler/memory_plan.h"
#include "core/scheduler/schedule.h"
#include "core/codegen/kernel_codegen.h"
#include "tests/support/compiled_check.h"

namespace stax {
namespace {

using test::bitwise_equal;
using test::contains;
using test::cpu_compiler;

Graph example(const std::string& name) {
  return parse_graph_file(std::string(STAX_SOURCE_DIR) + "/examples/" + name);
}

void expect_matches_interpreter(const CompiledGraph& cg, const Graph& g, uint64_t seed = 5) {
  std::vector<Tensor> in = test::random_inputs(g, seed);
  std::vector<Tensor> got = cg.run(in), want = test::reference(cg.graph(), in);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(bitwise_equal(got[i], want[i])) << "out " << i;
}

// ---- iteration spaces ---------------------------------------------------------------------------

TEST(IterationSpace, CommonRefinement) {
  EXPECT_EQ(common_refinement({8, 32}, {256}), (Extents{8, 32}));
  EXPECT_EQ(common_refinement({4, 8, 16}, {32, 16}), (Extents{4, 8, 16}));
  EXPECT_EQ(common_refinement({6}, {2, 3}), (Extents{2, 3}));
  EXPECT_EQ(common_refinement({8, 1, 32}, {8, 32}), (Extents{8, 32}));
  EXPECT_EQ(common_refinement({4, 6}, {6, 4}), std::nullopt);  // no common refinement
  EXPECT_EQ(common_refinement({4, 6}, {25}), std::nullopt);    // different sizes
  EXPECT_EQ(common_refinement({}, {1, 1}), (Extents{}));
}

TEST(IterationSpace, SplitExtents) {
  EXPECT_EQ(split_extents({8, 32}, 32), std::make_pair(Extents{8}, Extents{32}));
  EXPECT_EQ(split_extents({4, 8, 16}, 128), std::make_pair(Extents{4}, Extents{8, 16}));
  EXPECT_EQ(split_extents({4, 8, 16}, 32), std::nullopt);
  EXPECT_EQ(split_extents({256}, 256), std::make_pair(Extents{}, Extents{256}));
}

TEST(IterationSpace, ReindexSplitsVariablesAffinely) {
  // A pointwise body over [256] (i0 = 32*j + r) placed in the reduction loop of [8] x [32].
  LoopBody b;
  b.ranges = {256};
  Expr i0 = Expr::iter(0, 256);
  b.add_index(i0 * Expr(2) + Expr(1));
  LoopBody full = reindex_body(b, BodyPlacement::Full, {8}, {32});
  EXPECT_EQ(full.ranges, (Extents{8}));
  EXPECT_EQ(full.reduction_ranges, (Extents{32}));
  EXPECT_EQ(full.indices[0].str(), "64*i0 + 2*r0_0 + 1");
  // A reduction [8, 1] x [32] onto [8] x [4, 8].
  LoopBody r;
  r.ranges = {8, 1};
  r.reduction_ranges = {32};
  r.add_index(Expr::iter(0, 8) * Expr(32) + Expr::reduce(0, 32));
  LoopBody rr = reindex_body(r, BodyPlacement::Reduction, {8}, {4, 8});
  EXPECT_EQ(rr.indices[0].str(), "32*i0 + 8*r0_0 + r0_1");
}

// ---- fusion -------------------------------------------------------------------------------------

TEST(Scheduler, SoftmaxAndLayerNormAreOneKernelEach) {
  for (const char* file : {"softmax.stax", "layer_norm.stax"}) {
    SCOPED_TRACE(file);
    Graph g = example(file);
    CompiledGraph cg = cpu_compiler().compile(g);
    EXPECT_GE(cg.lowered().buffers.size(), 3u);
    EXPECT_EQ(cg.num_kernels(), 1u) << cg.schedule().str();
    const ScheduledKernel& k = cg.schedule().kernels[0];
    EXPECT_FALSE(k.reduction_ranges.empty());
    EXPECT_TRUE(cg.schedule().splits.empty()) << cg.schedule().str();
    expect_matches_interpreter(cg, g);
  }
}

TEST(Scheduler, SoftmaxDumpShowsTheRowLoopsInSequence) {
  Graph g = example("softmax.stax");
  CompiledGraph cg = cpu_compiler().compile(g);
  std::string s = cg.schedule().str();
  EXPECT_TRUE(contains(s, "1 kernels for 8 computed buffers")) << s;
  EXPECT_TRUE(contains(s, "step 0: kernel0 ranges=[8] reduction_ranges=[32]")) << s;
  EXPECT_TRUE(contains(s, "buf1: reduction max")) << s;
  EXPECT_TRUE(contains(s, "buf2: pointwise, in the reduction loop")) << s;
  EXPECT_TRUE(contains(s, "buf3: reduction sum")) << s;
  // The kernel source runs the four row loops of each softmax one after another.
  const std::string& src = cg.kernels()[0].source;
  EXPECT_TRUE(contains(src, "// buf1")) << src;
  EXPECT_TRUE(contains(src, "// buf8")) << src;
  EXPECT_EQ(cg.kernels()[0].buffer, "buf1, buf2, buf3, buf4, buf5, buf6, buf7, buf8");
  std::string dot = cg.schedule().dot(cg.lowered());
  EXPECT_TRUE(contains(dot, "digraph schedule")) << dot;
  EXPECT_TRUE(contains(dot, "\"x\" -> s0")) << dot;
}

TEST(Scheduler, ExampleOneOneIsStillOneKernel) {
  Graph g = example("example_1_1.stax");
  CompiledGraph cg = cpu_compiler().compile(g);
  EXPECT_EQ(cg.num_kernels(), 1u);
  EXPECT_EQ(cg.schedule().kernels[0].bodies[0].ranges, cg.lowered().buffers[0]->size().empty()
                                                           ? Extents{}
                                                           : cg.schedule().kernels[0].ranges);
  expect_matches_interpreter(cg, g);
}

TEST(Scheduler, TwoUsersOfOneValueWithTheSameRangesAreOneKernel) {
  Graph g;
  Node* x = g.placeholder("x", {16, 16});
  Node* e = g.call("exp", {x});  // transcendental, two users: realized
  g.output({g.call("mul.Scalar", {e, 2}), g.call("add.Scalar", {e, 1})});
  CompiledGraph cg = cpu_compiler().compile(g);
  EXPECT_EQ(cg.lowered().buffers.size(), 3u);
  EXPECT_EQ(cg.num_kernels(), 1u) << cg.schedule().str();
  expect_matches_interpreter(cg, g);
}

TEST(Scheduler, PrologueAndEpilogueFuseIntoAReduction) {
  // exp(x) realized (two users) read by a row sum and a row max; the mean's division is an
  // epilogue over the rows.
  Graph g;
  Node* x = g.placeholder("x", {12, 40});
  Node* e = g.call("exp", {x});
  Node* s = g.call("sum.dim_IntList", {e, std::vector<int64_t>{1}});
  Node* m = g.call("amax", {e, std::vector<int64_t>{1}});
  g.output({g.call("div.Tensor", {s, m})});
  CompiledGraph cg = cpu_compiler().compile(g);
  EXPECT_EQ(cg.num_kernels(), 1u) << cg.schedule().str();
  expect_matches_interpreter(cg, g);
}

TEST(Scheduler, ReadingAtAnotherIndexIsNotFusedAndSaysWhy) {
  // y = exp(x) realized; y.t() + y reads y transposed: not where the kernel wrote it.
  Graph g;
  Node* x = g.placeholder("x", {8, 8});
  Node* y = g.call("exp", {x});
  g.output({g.call("add.Tensor", {g.call("t", {y}), y})});
  CompiledGraph cg = cpu_compiler().compile(g);
  EXPECT_EQ(cg.num_kernels(), 2u);
  ASSERT_EQ(cg.schedule().splits.size(), 1u) << cg.schedule().str();
  EXPECT_TRUE(contains(cg.schedule().splits[0].reason, "not where the kernel writes it"))
      << cg.schedule().splits[0].reason;
  expect_matches_interpreter(cg, g);
}

TEST(Scheduler, DifferentIterationSpacesAndExternKernelsSplit) {
  Graph g;
  Node* x = g.placeholder("x", {8, 16});
  Node* w = g.placeholder("w", {16, 4});
  Node* c = g.call("sum.dim_IntList", {x, std::vector<int64_t>{0}});  // [16] x [8]
  Node* r = g.call("sum.dim_IntList", {x, std::vector<int64_t>{1}});  // [8] x [16]
  Node* mm = g.call("mm", {g.call("relu", {x}), w});
  g.output({c, r, g.call("relu", {mm})});
  CompiledGraph cg = cpu_compiler().compile(g);
  std::string s = cg.schedule().str();
  EXPECT_TRUE(contains(s, "does not fit the kernel's")) << s;
  EXPECT_TRUE(contains(s, "an extern kernel")) << s;
  EXPECT_TRUE(contains(s, "extern mm")) << s;
  expect_matches_interpreter(cg, g);
}

TEST(Scheduler, APointwiseReadingOtherElementsStaysOutOfAColumnReduction) {
  // A column sum of exp(x) reads x down the columns; 2 * exp(x) (a second output) would fit the
  // sum's reduction loop ([32] x [128] refines [128, 32]) but visit x there row by row: no
  // element in common, and the sum would lose its lanes over the columns. Two kernels, and why.
  Graph g;
  Node* x = g.placeholder("x", {128, 32});
  Node* col = g.call("sum.dim_IntList", {g.call("exp", {x}), std::vector<int64_t>{0}});
  Node* twice = g.call("mul.Scalar", {g.call("exp", {x}), 2});
  g.output({col, twice});
  CompiledGraph cg = cpu_compiler().compile(g);
  EXPECT_EQ(cg.num_kernels(), 2u) << cg.schedule().str();
  EXPECT_TRUE(contains(cg.schedule().str(), "at other elements")) << cg.schedule().str();
  expect_matches_interpreter(cg, g);
  // A pointwise that reads the elements the reduction reads still joins it (softmax's exp).
  Graph h = example("softmax.stax");
  EXPECT_EQ(cpu_compiler().compile(h).num_kernels(), 1u);
}

TEST(Lowering, APointwiseThatTwoProductsReadThroughViewsIsRealizedOnce) {
  // p = relu(x) * 3, reshaped to [32, 16]: one product reads it, another its transpose, a sum
  // its columns. p itself is realized once (before: one copy per product).
  Graph g;
  Node* x = g.placeholder("x", {4, 8, 16});
  Node* w1 = g.placeholder("w1", {16, 5});
  Node* w2 = g.placeholder("w2", {32, 3});
  Node* p = g.call("mul.Scalar", {g.call("relu", {x}), 3});
  Node* r = g.call("reshape", {p, Arg(Shape{32, 16})});
  g.output({g.call("mm", {r, w1}), g.call("mm", {g.call("t", {r}), w2}),
            g.call("sum.dim_IntList", {r, std::vector<int64_t>{0}})});
  CompiledGraph cg = cpu_compiler().compile(g);
  size_t computed = 0;
  for (const BufferPtr& b : cg.lowered().buffers)
    if (b->kind() == IRKind::ComputedBuffer && b->size() == Shape{4, 8, 16}) ++computed;
  EXPECT_EQ(computed, 1u) << cg.loop_ir();
  EXPECT_EQ(cg.num_externs(), 2u);
  expect_matches_interpreter(cg, g);
}

TEST(Scheduler, FusionOffAndTheFusionLimit) {
  Graph g = example("softmax.stax");
  LoweredGraph l = lower_graph(cpu_compiler().compile(g).graph());
  FusionLimits no_fusion;
  no_fusion.enable_fusion = false;
  Schedule off = schedule(l, no_fusion);
  EXPECT_EQ(off.kernels.size(), l.buffers.size());
  for (const Schedule::Split& s : off.splits) EXPECT_EQ(s.reason, "fusion is off");
  FusionLimits two_per_kernel;
  two_per_kernel.max_fused_nodes = 2;
  Schedule two = schedule(l, two_per_kernel);
  EXPECT_EQ(two.kernels.size(), 4u) << two.str();
  EXPECT_TRUE(contains(two.str(), "fusion limit of 2 buffers")) << two.str();
}

// ---- memory plan --------------------------------------------------------------------------------

TEST(MemoryPlan, IntermediatesShareTheArenaWhenTheirLifetimesAreDisjoint) {
  // e_k = exp(e_{k-1}.t() + e_{k-1}): every e_k is realized (two users, transcendental) and read
  // transposed, so each is its own kernel and dies one step after it is written.
  Graph g;
  Node* v = g.call("exp", {g.placeholder("x", {32, 32})});
  for (int k = 0; k < 6; ++k) v = g.call("exp", {g.call("add.Tensor", {g.call("t", {v}), v})});
  g.output({g.call("neg", {v})});
  CompiledGraph cg = cpu_compiler().compile(g);
  const MemoryPlan& m = cg.memory_plan();
  EXPECT_GE(cg.num_kernels(), 6u) << cg.schedule().str();
  EXPECT_GT(m.intermediate_bytes, 0);
  EXPECT_LE(m.arena_bytes, 2 * 32 * 32 * 4) << m.str();  // two live buffers at a time
  EXPECT_LT(m.arena_bytes, m.intermediate_bytes) << m.str();
  // Buffers live at the same time never overlap.
  for (const BufferPlacement& a : m.buffers)
    for (const BufferPlacement& b : m.buffers) {
      if (&a == &b || a.kind != BufferPlacement::Kind::Arena ||
          b.kind != BufferPlacement::Kind::Arena)
        continue;
      bool live_together = !(a.last_step < b.first_step || b.last_step < a.first_step);
      bool overlap = a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
      EXPECT_FALSE(live_together && overlap) << a.buffer << " and " << b.buffer << "\n" << m.str();
    }
  // Outputs are not in the arena; repeated runs give the same results.
  EXPECT_EQ(m.find(cg.lowered().outputs[0].buffer->name())->kind, BufferPlacement::Kind::Output);
  std::vector<Tensor> in = test::random_inputs(g, 2);
  std::vector<Tensor> a = cg.run(in), b = cg.run(in);
  EXPECT_TRUE(bitwise_equal(a[0], b[0]));
  expect_matches_interpreter(cg, g);
}

TEST(MemoryPlan, AKernelWritesInPlaceOfAnInputThatDiesThere) {
  // i = exp(x) (read by the matmul and by o); o = i + i @ w needs the matmul, so it is a kernel
  // of its own after it, where i is read for the last time at o's own address: o takes i's bytes.
  // (With epilogues on, o's kernel runs inside the matmul's step instead, which still reads i:
  // then no in-place write, core/scheduler/extern_epilogue.h. This test keeps them apart.)
  Graph g;
  Node* x = g.placeholder("x", {16, 16});
  Node* w = g.placeholder("w", {16, 16});
  Node* i = g.call("exp", {x});
  Node* o = g.call("add.Tensor", {i, g.call("mm", {i, w})});
  g.output({g.call("mm", {o, w}), g.call("mul.Scalar", {o, 2})});
  OptionValue options = OptionValue::map();
  options.set("epilogues", OptionValue::make_scalar("false"));
  Compiler compiler(test::cpu_config(options));
  CompiledGraph cg = compiler.compile(g);
  const MemoryPlan& m = cg.memory_plan();
  const BufferPlacement* in_place = nullptr;
  for (const BufferPlacement& p : m.buffers)
    if (!p.in_place_of.empty()) in_place = &p;
  ASSERT_NE(in_place, nullptr) << m.str() << cg.schedule().str();
  const BufferPlacement* donor = m.find(in_place->in_place_of);
  EXPECT_EQ(in_place->offset, donor->offset) << m.str();
  EXPECT_TRUE(contains(m.str(), "in place of " + donor->buffer)) << m.str();
  // The kernel reads and writes one buffer: the donor is not among its buffers.
  for (const CompiledKernelInfo& k : cg.kernels())
    if (contains(k.buffer, in_place->buffer)) {
      EXPECT_FALSE(contains(k.source, "// " + donor->buffer + "\n")) << k.source;
    }
  for (const KernelPlan& plan : plan_kernels(cg.schedule(), cg.lowered()))
    for (const std::string& name : plan.desc.buffer_names())
      if (std::find(plan.buffers.begin(), plan.buffers.end(),
                    cg.lowered().find(in_place->buffer)) != plan.buffers.end()) {
        EXPECT_NE(name, donor->buffer);
      }
  for (uint64_t seed : {1, 2}) expect_matches_interpreter(cg, g, seed);
}

// Kernel temporaries (memory_plan.h, issue 9): softmax's exp is written and read only inside its
// kernel and its division overwrites it element for element, so it lives in the output's bytes:
// no n x n arena buffer, the kernel has one pointer for both, the results keep their bits.
TEST(MemoryPlan, SoftmaxExpLivesInItsOutputRow) {
  Graph g = example("softmax.stax");
  CompiledGraph cg = cpu_compiler().compile(g);
  const MemoryPlan& m = cg.memory_plan();
  // buf2 / buf6: exp of each softmax; buf4 / buf8: the divisions, the graph's outputs.
  for (auto [temp, host] : {std::pair{"buf2", "buf4"}, std::pair{"buf6", "buf8"}}) {
    const BufferPlacement* p = m.find(temp);
    ASSERT_NE(p, nullptr) << m.str();
    EXPECT_EQ(p->kind, BufferPlacement::Kind::Temporary) << m.str();
    EXPECT_EQ(p->stored_in, host) << m.str();
    EXPECT_EQ(m.host_of(temp), host);
    EXPECT_TRUE(contains(m.str(), std::string(temp) + ": kernel temporary in " + host)) << m.str();
  }
  // The arena holds the row statistics only (4 buffers of 8 floats, 64-byte aligned).
  EXPECT_LE(m.arena_bytes, 4 * 64) << m.str();
  ASSERT_EQ(cg.schedule().kernels.size(), 1u);
  std::vector<KernelPlan> plans = plan_kernels(cg.schedule(), cg.lowered());
  for (const std::string& name : plans[0].desc.buffer_names()) {
    EXPECT_NE(name, "buf2");
    EXPECT_NE(name, "buf6");
  }
  for (uint64_t seed : {1, 2, 3}) expect_matches_interpreter(cg, g, seed);
}

// A temporary read after the first later buffer's body cannot live there; it lives in the next
// buffer that overwrites it after its last read (o2), or in none. Rows of 4096 x 64: the kernel
// is cut into chunks, so 1, 2 and 3 threads run it; both orders, bit for bit.
TEST(MemoryPlan, KernelTemporariesKeepEveryBitOnAnyThreadCount) {
  Graph g;
  Node* x = g.placeholder("x", {64, 4096});
  Node* d = g.call("sub.Tensor", {x, g.call("amax", {x, std::vector<int64_t>{-1}, true})});
  Node* e = g.call("exp", {d});
  Node* s = g.call("sum.dim_IntList", {e, std::vector<int64_t>{-1}, true});
  Node* o = g.call("div.Tensor", {e, s});
  Node* o2 = g.call("mul.Tensor", {e, o});  // reads e after o's body
  Node* ls = g.call("sub.Tensor", {d, g.call("log", {s})});  // log_softmax
  g.output({o, o2, ls});
  for (test::Order order : {test::Order::Segmented, test::Order::Strict}) {
    SCOPED_TRACE(test::order_name(order));
    std::vector<Tensor> in = test::random_inputs(g, 11);
    std::vector<Tensor> want = test::reference(g, in, order);
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE(threads);
      Compiler c(test::cpu_config(test::cpu_options(order, threads)));
      CompiledGraph cg = c.compile(g);
      const MemoryPlan& m = cg.memory_plan();
      size_t temporaries = 0;
      for (const BufferPlacement& p : m.buffers) {
        if (p.kind != BufferPlacement::Kind::Temporary) continue;
        ++temporaries;
        // never the division's buffer: e is read after it
        EXPECT_NE(p.stored_in, cg.lowered().outputs[0].buffer->name()) << m.str();
      }
      EXPECT_GE(temporaries, 1u) << m.str() << cg.schedule().str();
      std::vector<Tensor> got = cg.run(in);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_TRUE(bitwise_equal(got[i], want[i])) << "out " << i << "\n" << m.str();
    }
  }
}

}  // namespace
}  // namespace stax
