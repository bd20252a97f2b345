// Threads on cpu_cpp (issue 9): kernels parallel over their outermost (non-reduced) dimension in
// dynamically claimed chunks, and full / long reductions split into the segmented order's fixed
// blocks (stax/sdk/reduction_order.hpp: a two-level reduction whose first level has one output
// per block, so threads share it). Every result is bit-identical to the reference interpreter in
// the same order, for 1, 2 and 3 threads, in both orders; no timing is asserted.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "stax/sdk/reduction_order.hpp"
#include "tests/support/compiled_check.h"

namespace stax {
namespace {

using test::bitwise_equal;
using test::random_inputs;

TEST(ReductionBlocks, DependOnTheLengthAlone) {
  EXPECT_EQ(sdk::reduction_blocks(1), 1);
  EXPECT_EQ(sdk::reduction_blocks(8192), 1);
  EXPECT_EQ(sdk::reduction_blocks((1 << 17) - 1), 1);  // below the threshold
  EXPECT_EQ(sdk::reduction_blocks(1 << 17), 8);         // blocks of 16384
  EXPECT_EQ(sdk::reduction_blocks(1 << 20), 64);        // W2's forward sum: 64 blocks
  EXPECT_EQ(sdk::reduction_blocks(int64_t{1} << 26), 1024);  // at most 1024 blocks
  EXPECT_EQ(sdk::reduction_blocks(1000003), 1);         // a prime stays one block
  EXPECT_EQ(sdk::reduction_blocks(2 * 1000003), 2);
  EXPECT_EQ(sdk::reduction_blocks(3 * 5 * 7 * 11 * 13 * 17), 15);  // 255255: at most 15 blocks
}

// The interpreter's segmented order with blocks, on values whose rounding shows the block
// structure. n = 2^17: 8 blocks of 16384. x_0 = 1e8, every other x_j = 1 (float32, ulp(1e8) = 8).
//   block 0: chain 0 = 1e8 (+1 rounds away 1023 times), chains 1..15 = 1024 each; tree:
//            1e8 + 1024 + 2048 + 4096 + 8192 = 100015360; blocks 1..7: 16384 each (exact);
//   partials: chain 0 = 100015360, chains 1..7 = 16384, the rest 0; tree: h = 8 adds zeros,
//            then + 16384 + 32768 + 65536                     -> 100130048
// Without blocks (one fold of 2^17): 1e8 + 15 * 8192           -> 100122880.
TEST(ReductionBlocks, TheInterpreterFoldsBlocksThenPartials) {
  const int64_t n = int64_t{1} << 17;
  std::vector<float> v(static_cast<size_t>(n), 1.0f);
  v[0] = 1e8f;
  Graph g;
  g.output({g.call("sum.default", {g.placeholder("x", {n})})});
  std::vector<Tensor> in = {Tensor::from_vector<float>({n}, v)};
  EXPECT_EQ(test::reference(g, in, test::Order::Segmented)[0].item(), 100130048.0);
  EXPECT_EQ(test::reference(g, in, test::Order::Strict)[0].item(), 1e8);
  // cpu_cpp computes the same two levels (two kernels) in the segmented order, one in strict.
  CompiledGraph seg = test::cpu_compiler(test::Order::Segmented).compile(g);
  CompiledGraph strict = test::cpu_compiler(test::Order::Strict).compile(g);
  EXPECT_EQ(seg.num_kernels(), 2u);
  EXPECT_EQ(strict.num_kernels(), 1u);
  EXPECT_EQ(seg.run(in)[0].item(), 100130048.0);
  EXPECT_EQ(strict.run(in)[0].item(), 1e8);
}

// Long and full reductions of every kind, with prologues (gelu, as W2's forward after its matmul),
// few outputs and long rows, a column reduction, kernels whose outermost extent is 1: 1, 2 and 3 threads, both orders, equal
// to the interpreter bit for bit.
TEST(CompiledThreads, LongReductionsGiveTheSameBitsOnAnyThreadCount) {
  Graph g;
  Node* x = g.placeholder("x", {256, 1024});  // 262144 elements: 16 blocks
  Node* m = g.placeholder("m", {512, 1024});  // W2's x @ W at a smaller scale: 32 blocks
  Node* z = g.placeholder("z", {3, 1 << 17});
  Node* c = g.placeholder("c", {(1 << 17) + 16, 5});  // a column reduction of 131088 = 16·8193
  Node* k = g.placeholder("k", {1024, 300});
  Node* u = g.placeholder("u", {1, 300000});
  Node* h = g.call("gelu", {g.call("mul.Scalar", {m, 8.0})});
  g.output({g.call("sum.default", {h}),                                     // W2's forward
            g.call("sum.default", {g.call("mul.Tensor", {x, x})}),          // full, prologue
            g.call("amax", {x, std::vector<int64_t>{0, 1}}),                // full max
            g.call("mean.dim", {z, std::vector<int64_t>{-1}}),              // 3 long rows
            g.call("amin", {z, std::vector<int64_t>{1}}),                   // 3 long rows
            g.call("sum.dim_IntList", {c, std::vector<int64_t>{0}}),        // 5 long columns
            g.call("prod", {g.call("add.Scalar", {g.call("mul.Scalar", {z, 1e-4}), 1.0})}),
            g.call("sum.dim_IntList", {x, std::vector<int64_t>{-1}}),      // short rows
            // a bias gradient's [1, n] (keepdim column sum): split along n, in lane blocks
            g.call("sum.dim_IntList", {k, std::vector<int64_t>{0}, true}),
            g.call("relu", {u})});  // [1, n] pointwise: split along n
  std::vector<Tensor> in = random_inputs(g, 17);
  for (test::Order order : {test::Order::Segmented, test::Order::Strict}) {
    std::vector<Tensor> want;
    for (int threads : {1, 2, 3}) {
      Compiler compiler(test::cpu_config(test::cpu_options(order, threads)));
      CompiledGraph cg = compiler.compile(g);
      if (want.empty()) want = test::reference(cg.graph(), in, order);
      for (int rep = 0; rep < 2; ++rep) {  // the second run: reused storage, warm pool
        std::vector<Tensor> got = cg.run(in);
        ASSERT_EQ(got.size(), want.size());
        for (size_t i = 0; i < got.size(); ++i)
          EXPECT_TRUE(bitwise_equal(got[i], want[i]))
              << test::order_name(order) << ", " << threads << " threads, output " << i;
      }
    }
  }
}

// cpu_cpp's chunk_points cuts a large kernel's outer loop into up to 32 chunks per thread: at its
// smallest (1024 points) every kernel here above the parallel cut-off runs as 64 / 96 chunks of a
// few rows, uneven ones included (1031 rows, a 4099-wide row reduction), claimed from the home
// ranges and stolen; at 2^40 as the 4 chunks per thread of before. The same bits as the
// interpreter either way, on 2 and 3 threads.
TEST(CompiledThreads, FineChunksGiveTheSameBits) {
  Graph g;
  Node* x = g.placeholder("x", {1031, 4099});
  Node* y = g.placeholder("y", {1031, 4099});
  Node* r = g.call("relu", {g.call("add.Tensor", {x, y})});
  g.output({g.call("sum.dim_IntList", {g.call("mul.Scalar", {r, 2.0}), std::vector<int64_t>{-1}}),
            g.call("sum.dim_IntList", {g.call("mul.Tensor", {x, x}), std::vector<int64_t>{-1}}),
            g.call("amax", {y, std::vector<int64_t>{0}}),         // a column reduction
            g.call("mul.Tensor", {g.call("exp", {x}), y})});      // pointwise, 4.2 M points
  std::vector<Tensor> in = random_inputs(g, 23);
  const std::vector<Tensor> want = test::reference(g, in);
  for (const char* points : {"1024", "65536", "1099511627776"}) {
    for (int threads : {2, 3}) {
      OptionValue o = test::cpu_options(test::Order::Segmented, threads);
      o.set("chunk_points", OptionValue::make_scalar(points));
      Compiler compiler(test::cpu_config(o));
      CompiledGraph cg = compiler.compile(g);
      for (int rep = 0; rep < 2; ++rep) {
        std::vector<Tensor> got = cg.run(in);
        ASSERT_EQ(got.size(), want.size());
        for (size_t i = 0; i < got.size(); ++i)
          EXPECT_TRUE(bitwise_equal(got[i], want[i]))
              << "chunk_points " << points << ", " << threads << " threads, output " << i;
      }
    }
  }
}

TEST(CompiledThreads, BadChunkPointsAreClearErrors) {
  for (const char* bad : {"0", "1023", "-5", "lots", "1099511627777"}) {
    OptionValue o = test::cpu_options(test::Order::Segmented, 2);
    o.set("chunk_points", OptionValue::make_scalar(bad));
    std::string what;
    try {
      Compiler compiler(test::cpu_config(o));
      Graph g;
      g.output({g.call("relu", {g.placeholder("x", {4, 4})})});
      compiler.compile(g);
    } catch (const Error& e) {
      what = e.what();
    }
    EXPECT_NE(what.find("option 'chunk_points' of backend 'cpu_cpp'"), std::string::npos)
        << bad << ": " << what;
  }
}

}  // namespace
}  // namespace stax
