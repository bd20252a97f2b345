// The runtime's output pool (core/runtime/output_pool.h): storage of returned buffers reused
// across runs once the caller drops it, never handed out while anyone still references it, best
// fit, bounded; and through a compiled graph, a training-style loop (the previous run's outputs
// still held while the next run starts) reaches a steady state without fresh storage, with every
// output right and nothing a caller holds overwritten.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "core/runtime/output_pool.h"
#include "tests/support/compiled_check.h"

namespace stax {
namespace {

Layout contiguous(Shape size, DType dtype = DType::Float32) {
  return Layout::fixed_contiguous("cpu", dtype, std::move(size));
}

const std::byte* storage_of(const Tensor& t) { return t.storage()->data(); }

TEST(OutputPool, ALiveBufferIsNeverHandedOutTwice) {
  OutputPool pool;
  pool.begin_run();
  Tensor a = pool.allocate(contiguous({8, 4}));
  Tensor b = pool.allocate(contiguous({8, 4}));  // same run: a is live
  EXPECT_NE(storage_of(a), storage_of(b));
  pool.begin_run();
  Tensor c = pool.allocate(contiguous({8, 4}));  // a and b still held by the caller
  EXPECT_NE(storage_of(c), storage_of(a));
  EXPECT_NE(storage_of(c), storage_of(b));
  EXPECT_EQ(pool.allocations(), 3u);
  // A view the caller keeps (not the tensor the pool returned) holds the storage too.
  Tensor view = a.as_strided({4}, {1}, 4);
  a = Tensor();
  pool.begin_run();
  Tensor d = pool.allocate(contiguous({8, 4}));
  EXPECT_NE(storage_of(d), storage_of(view));
  EXPECT_NE(storage_of(d), storage_of(b));
  EXPECT_NE(storage_of(d), storage_of(c));
}

TEST(OutputPool, StorageTheCallerDroppedRunsAgoIsReused) {
  OutputPool pool;
  pool.begin_run();
  Tensor first = pool.allocate(contiguous({16, 16}));
  const std::byte* bytes = storage_of(first);
  pool.begin_run();
  Tensor second = pool.allocate(contiguous({16, 16}));  // first is still held
  first = Tensor();  // dropped after the next run started (torch's autograd graph does that)
  pool.begin_run();
  Tensor third = pool.allocate(contiguous({16, 16}));
  EXPECT_EQ(storage_of(third), bytes);
  EXPECT_EQ(pool.allocations(), 2u);
  // The layout asked for, offset included, over the reused storage.
  Tensor strided = Tensor();
  third = Tensor();
  pool.begin_run();
  Layout l = Layout::fixed("cpu", DType::Float32, {16, 15}, {1, 16}, 3);  // 243 elements
  strided = pool.allocate(l);
  EXPECT_EQ(strided.sizes(), (Shape{16, 15}));
  EXPECT_EQ(strided.strides(), (Shape{1, 16}));
  EXPECT_EQ(strided.storage_offset(), 3);
  EXPECT_EQ(storage_of(strided), bytes);
}

TEST(OutputPool, BestFitByDtypeAndSize) {
  OutputPool pool;
  pool.begin_run();
  Tensor big = pool.allocate(contiguous({200}));
  Tensor small = pool.allocate(contiguous({100}));
  Tensor other = pool.allocate(contiguous({100}, DType::Int32));
  const std::byte* big_bytes = storage_of(big);
  const std::byte* small_bytes = storage_of(small);
  big = small = other = Tensor();
  pool.begin_run();
  // 100 floats: both float entries fit (200 <= 2 * 100 + 64); the smaller one is taken, so the
  // next request of 200 finds the larger one.
  Tensor s = pool.allocate(contiguous({100}));
  Tensor b = pool.allocate(contiguous({200}));
  EXPECT_EQ(storage_of(s), small_bytes);
  EXPECT_EQ(storage_of(b), big_bytes);
  // Too large an entry (more than twice the request + 64) or another dtype is not used.
  s = b = Tensor();
  pool.begin_run();
  Tensor tiny = pool.allocate(contiguous({10}));
  EXPECT_NE(storage_of(tiny), small_bytes);
  EXPECT_NE(storage_of(tiny), big_bytes);
  Tensor d = pool.allocate(contiguous({100}, DType::Float64));
  EXPECT_EQ(d.dtype(), DType::Float64);
  EXPECT_EQ(pool.allocations(), 5u);
}

TEST(OutputPool, ACallerThatKeepsEverythingCostsTheBoundedPoolNothing) {
  OutputPool pool;
  std::vector<Tensor> kept;
  const size_t per_run = 10, runs = 20;
  for (size_t r = 0; r < runs; ++r) {
    pool.begin_run();
    for (size_t i = 0; i < per_run; ++i) kept.push_back(pool.allocate(contiguous({32})));
  }
  std::set<const std::byte*> distinct;
  for (const Tensor& t : kept) distinct.insert(storage_of(t));
  EXPECT_EQ(distinct.size(), per_run * runs);  // nothing handed out twice
  pool.begin_run();
  EXPECT_LE(pool.size(), OutputPool::kRunsKept * per_run);
  EXPECT_EQ(pool.free_entries(), 0u);
  kept.clear();  // the pool keeps at most a few runs' worth of the memory
  EXPECT_EQ(pool.free_entries(), pool.size());
  EXPECT_LE(pool.size(), OutputPool::kRunsKept * per_run);
}

// A training-style loop through a compiled graph: run k's outputs are dropped only after run k+1
// (as torch's autograd graph holds a forward's outputs and saved values until the next step
// replaces them). From the third run on, every output lands in storage an earlier run used, the
// values are the interpreter's, and the outputs still held are not overwritten.
TEST(OutputPool, CompiledGraphReusesOutputsDroppedAfterTheNextRun) {
  Graph g;
  Node* x = g.placeholder("x", {64, 32});
  Node* w = g.placeholder("w", {32, 48});
  Node* h = g.call("relu", {g.call("mm", {x, w})});
  g.output({h, g.call("sum.dim_IntList", {h, std::vector<int64_t>{1}}), g.call("exp", {x})});
  CompiledGraph cg = test::cpu_compiler().compile(g);
  std::vector<Tensor> held;
  std::vector<Tensor> held_want;
  std::set<const std::byte*> seen;
  for (int run = 0; run < 6; ++run) {
    std::vector<Tensor> in = {Tensor::randn({64, 32}, DType::Float32, 10 + run),
                              Tensor::randn({32, 48}, DType::Float32, 20 + run)};
    std::vector<Tensor> want = test::reference(g, in);
    std::vector<Tensor> got = cg.run(in);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_TRUE(test::bitwise_equal(got[i], want[i])) << "run " << run << ", out " << i;
      if (run >= 2) EXPECT_TRUE(seen.count(storage_of(got[i]))) << "run " << run << " out " << i;
      seen.insert(storage_of(got[i]));
    }
    // The previous run's outputs, still held during this run, are intact.
    for (size_t i = 0; i < held.size(); ++i)
      EXPECT_TRUE(test::bitwise_equal(held[i], held_want[i])) << "run " << run - 1 << " out " << i;
    held = got;  // drops the run before's outputs
    held_want = want;
  }
}

}  // namespace
}  // namespace stax
