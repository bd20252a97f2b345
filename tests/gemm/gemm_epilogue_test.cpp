// Epilogues fused into matrix products (issue 27 item 2; core/scheduler/extern_epilogue.h, ABI
// 1.5 plugin_api.h EPILOGUES, cpu_cpp's EpilogueBlocks): which kernels the scheduler fuses and
// why (the `schedule` dump), and that the results are the interpreter's bits with the fusion on
// and off, on 1, 2 and 3 threads, with Stax's GEMM (the interpreter's bits) and, where it is
// installed, another library (within the gemm bound, and the same bits with and without
// epilogues).
#include <gtest/gtest.h>

#include <limits>

#include <string>
#include <vector>

#include "core/graph/parser.h"
#include "core/scheduler/memory_plan.h"
#include "plugins/cpu_cpp/epilogue_blocks.h"
#include "tests/support/compiled_check.h"

namespace stax {
namespace {

using test::bitwise_equal;
using test::contains;
using test::cpu_config;

OptionValue options(int threads, bool epilogues, const std::string& blas = "stax") {
  OptionValue o = OptionValue::map();
  o.set("threads", OptionValue::make_scalar(std::to_string(threads)));
  o.set("epilogues", OptionValue::make_scalar(epilogues ? "true" : "false"));
  o.set("blas", OptionValue::make_scalar(blas));
  return o;
}

Compiler& compiler(int threads, bool epilogues) {
  static std::map<std::pair<int, bool>, std::unique_ptr<Compiler>> made;
  auto& c = made[{threads, epilogues}];
  if (!c) c = std::make_unique<Compiler>(cpu_config(options(threads, epilogues)));
  return *c;
}


// gelu(x @ w + b): the MLP layer's bias and activation after the product.
const char* kLinearGelu = R"(graph(
    %x shape=(300, 96) = placeholder[target=x]
    %w shape=(96, 200) = placeholder[target=w]
    %b shape=(200,) = placeholder[target=b]
    %mm shape=(300, 200) = call_function[target=tp.mm.default](args = (%x, %w))
    %add shape=(300, 200) = call_function[target=tp.add.Tensor](args = (%mm, %b))
    %gelu shape=(300, 200) = call_function[target=tp.gelu.default](args = (%add,))
    return (gelu,)
))";

// relu(addmm(b, x, w, beta=0.5, alpha=2)) + r: addmm's own epilogue, then the kernel's.
const char* kAddmmReluResidual = R"(graph(
    %x shape=(97, 64) = placeholder[target=x]
    %w shape=(64, 130) = placeholder[target=w]
    %b shape=(130,) = placeholder[target=b]
    %r shape=(97, 130) = placeholder[target=r]
    %am shape=(97, 130) = call_function[target=tp.addmm.default](args = (%b, %x, %w), kwargs = {beta: 0.5, alpha: 2})
    %relu shape=(97, 130) = call_function[target=tp.relu.default](args = (%am,))
    %out shape=(97, 130) = call_function[target=tp.add.Tensor](args = (%relu, %r))
    return (out,)
))";

// nn.Linear's addmm (beta = alpha = 1: cpu_cpp's vectorised bias rows) with a row bias, a full
// 2-D self and a float64 product: the interpreter's bits, NaN, infinities and signed zeros
// among the operands.
const char* kAddmmBias = R"(graph(
    %x shape=(37, 24) = placeholder[target=x]
    %w shape=(24, 70) = placeholder[target=w]
    %b shape=(70,) = placeholder[target=b]
    %c shape=(37, 70) = placeholder[target=c]
    %xd shape=(37, 24) dtype=float64 = placeholder[target=xd]
    %wd shape=(24, 70) dtype=float64 = placeholder[target=wd]
    %bd shape=(1, 70) dtype=float64 = placeholder[target=bd]
    %row shape=(37, 70) = call_function[target=tp.addmm.default](args = (%b, %x, %w))
    %full shape=(37, 70) = call_function[target=tp.addmm.default](args = (%c, %x, %w))
    %dbl shape=(37, 70) dtype=float64 = call_function[target=tp.addmm.default](args = (%bd, %xd, %wd))
    return (row, full, dbl)
))";

// silu over attention scores: bmm(q, k^T) through a transposed view, then scale and silu.
const char* kBmmSilu = R"(graph(
    %q shape=(6, 40, 16) = placeholder[target=q]
    %k shape=(6, 40, 16) = placeholder[target=k]
    %kt shape=(6, 16, 40) = call_function[target=tp.transpose.int](args = (%k, 1, 2))
    %s shape=(6, 40, 40) = call_function[target=tp.bmm.default](args = (%q, %kt))
    %m shape=(6, 40, 40) = call_function[target=tp.mul.Tensor](args = (%s, 0.25))
    %silu shape=(6, 40, 40) = call_function[target=tp.silu.default](args = (%m,))
    return (silu,)
))";

// gelu(bmm(x, w.expand(6, 24, 40)) + b): a weight shared by the batch, x's entries one after
// the other: one product of 300 rows (gemm's fold_batch), whose row blocks span entries (50 rows
// an entry, tiles of 6 rows), reported to the epilogue entry by entry.
const char* kBmmSharedWeightGelu = R"(graph(
    %x shape=(6, 50, 24) = placeholder[target=x]
    %w shape=(24, 40) = placeholder[target=w]
    %b shape=(40,) = placeholder[target=b]
    %we shape=(6, 24, 40) = call_function[target=tp.expand.default](args = (%w, [6, 24, 40]))
    %mm shape=(6, 50, 40) = call_function[target=tp.bmm.default](args = (%x, %we))
    %add shape=(6, 50, 40) = call_function[target=tp.add.Tensor](args = (%mm, %b))
    %gelu shape=(6, 50, 40) = call_function[target=tp.gelu.default](args = (%add,))
    return (gelu,)
))";

// Not fusable: a row reduction reads the product; a kernel reads it transposed.
const char* kReduction = R"(graph(
    %x shape=(64, 32) = placeholder[target=x]
    %w shape=(32, 48) = placeholder[target=w]
    %mm shape=(64, 48) = call_function[target=tp.mm.default](args = (%x, %w))
    %s shape=(64,) = call_function[target=tp.sum.dim_IntList](args = (%mm, [1]))
    return (s,)
))";
const char* kTransposedRead = R"(graph(
    %x shape=(48, 32) = placeholder[target=x]
    %w shape=(32, 48) = placeholder[target=w]
    %y shape=(48, 48) = placeholder[target=y]
    %mm shape=(48, 48) = call_function[target=tp.mm.default](args = (%x, %w))
    %t shape=(48, 48) = call_function[target=tp.t.default](args = (%mm,))
    %out shape=(48, 48) = call_function[target=tp.add.Tensor](args = (%t, %y))
    return (out,)
))";

const Schedule::EpilogueNote* note_for(const CompiledGraph& cg) {
  const auto& notes = cg.schedule().epilogues;
  return notes.empty() ? nullptr : &notes.front();
}

void expect_fused_and_exact(const char* text, const std::string& what) {
  Graph g = parse_graph(text);
  std::vector<Tensor> inputs = test::random_inputs(g, 11, -2, 2);
  std::vector<Tensor> want = test::reference(g, inputs);
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE(what + ", threads " + std::to_string(threads));
    CompiledGraph fused = compiler(threads, true).compile(g);
    const Schedule::EpilogueNote* note = note_for(fused);
    ASSERT_NE(note, nullptr) << fused.schedule().str();
    EXPECT_TRUE(note->fused) << note->reason;
    EXPECT_TRUE(contains(fused.schedule().str(), "+ epilogue kernel")) << fused.schedule().str();
    RunStats stats;
    GraphRunOptions ro;
    ro.stats = &stats;
    std::vector<Tensor> got = fused.run(inputs, ro);
    EXPECT_EQ(stats.extern_calls, 1u);
    EXPECT_EQ(stats.fused_epilogues, 1u) << "cpu_cpp ran the epilogue inside the product";
    EXPECT_TRUE(bitwise_equal(got[0], want[0])) << "fused epilogue vs the interpreter";
    CompiledGraph apart = compiler(threads, false).compile(g);
    EXPECT_TRUE(apart.schedule().epilogues.empty()) << "epilogues: false";
    EXPECT_TRUE(bitwise_equal(apart.run(inputs)[0], got[0])) << "fused vs not fused";
  }
}

TEST(GemmEpilogue, LinearBiasGeleIsFusedAndBitExact) {
  expect_fused_and_exact(kLinearGelu, "mm + bias + gelu");
}

TEST(GemmEpilogue, AddmmReluResidualIsFusedAndBitExact) {
  expect_fused_and_exact(kAddmmReluResidual, "addmm + relu + residual");
}

TEST(GemmEpilogue, BatchedProductThroughTransposedViewIsFusedAndBitExact) {
  expect_fused_and_exact(kBmmSilu, "bmm(q, k^T) * scale, silu");
}

TEST(GemmEpilogue, BatchSharingItsWeightIsOneProductFusedAndBitExact) {
  expect_fused_and_exact(kBmmSharedWeightGelu, "bmm(x, w.expand) + bias, gelu");
}

TEST(GemmEpilogue, LinearBiasAddmmIsBitExact) {
  Graph g = parse_graph(kAddmmBias);
  std::vector<Tensor> in = test::random_inputs(g, 13, -2, 2);
  const double specials[] = {std::numeric_limits<double>::quiet_NaN(), -0.0,
                             std::numeric_limits<double>::infinity(), 0.0, -1e30};
  for (size_t i : {2u, 3u, 6u})  // the biases and the full self
    for (int64_t e = 0; e < 5; ++e) in[i].set_double(e * 3, specials[e]);
  std::vector<Tensor> want = test::reference(g, in);
  for (int threads : {1, 2}) {
    std::vector<Tensor> got = compiler(threads, true).compile(g).run(in);
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k)
      EXPECT_TRUE(bitwise_equal(got[k], want[k])) << "output " << k << ", threads " << threads;
  }
}

TEST(GemmEpilogue, TheScheduleDumpSaysWhyAKernelIsNotFused) {
  CompiledGraph red = compiler(1, true).compile(parse_graph(kReduction));
  const Schedule::EpilogueNote* note = note_for(red);
  ASSERT_NE(note, nullptr);
  EXPECT_FALSE(note->fused);
  EXPECT_TRUE(contains(note->reason, "reduction")) << note->reason;
  EXPECT_TRUE(contains(red.schedule().str(), "extern epilogues:\n  mm") ||
              contains(red.schedule().str(), "not fused: kernel"))
      << red.schedule().str();

  Graph g = parse_graph(kTransposedRead);
  CompiledGraph tr = compiler(2, true).compile(g);
  note = note_for(tr);
  ASSERT_NE(note, nullptr);
  EXPECT_FALSE(note->fused);
  EXPECT_TRUE(contains(note->reason, "not at the point it computes")) << note->reason;
  std::vector<Tensor> inputs = test::random_inputs(g, 3, -2, 2);
  EXPECT_TRUE(bitwise_equal(tr.run(inputs)[0], test::reference(g, inputs)[0]));
}

TEST(GemmEpilogue, AnotherLibraryGivesTheSameBitsWithAndWithoutEpilogues) {
  // A library that sums in its own order: within the gemm bound of the interpreter, and the
  // same bits whether its epilogue runs per block or after the product.
  for (const char* blas : {"openblas", "mkl", "blis", "onednn"}) {
    std::unique_ptr<Compiler> on, off;
    try {
      on = std::make_unique<Compiler>(cpu_config(options(2, true, blas)));
      off = std::make_unique<Compiler>(cpu_config(options(2, false, blas)));
      Graph probe = parse_graph(kLinearGelu);
      on->compile(probe);
    } catch (const Error& e) {
      std::cout << "blas: " << blas << " not available here: " << e.what() << "\n";
      continue;
    }
    SCOPED_TRACE(blas);
    Graph g = parse_graph(kAddmmReluResidual);
    std::vector<Tensor> inputs = test::random_inputs(g, 5, -2, 2);
    CompiledGraph a = on->compile(g), b = off->compile(g);
    ASSERT_NE(note_for(a), nullptr);
    EXPECT_TRUE(note_for(a)->fused);
    RunStats stats;
    GraphRunOptions ro;
    ro.stats = &stats;
    Tensor x = a.run(inputs, ro)[0], y = b.run(inputs)[0];
    EXPECT_EQ(stats.fused_epilogues, 1u);
    EXPECT_TRUE(bitwise_equal(x, y));
    Tensor want = test::reference(g, inputs)[0];
    // relu and a residual add after the product: every element within a few ulps of the
    // interpreter's (the products differ by the summation order only).
    const float* p = x.data<float>();
    const float* q = want.data<float>();
    for (int64_t i = 0; i < x.numel(); ++i)
      ASSERT_NEAR(p[i], q[i], 1e-3 * (1 + std::abs(q[i]))) << "element " << i;
  }
}

TEST(GemmEpilogue, AnEpilogueNeverWritesOverTheProductsInputs) {
  // o = i + i @ w: unfused, o's kernel writes in place of i, which it reads last (scheduler_test
  // MemoryPlan.AKernelWritesInPlaceOfAnInputThatDiesThere); fused, it runs while the product
  // still reads i, so the memory plan must keep them apart.
  const char* text = R"(graph(
    %x shape=(40, 40) = placeholder[target=x]
    %w shape=(40, 40) = placeholder[target=w]
    %i shape=(40, 40) = call_function[target=tp.exp.default](args = (%x,))
    %p shape=(40, 40) = call_function[target=tp.mm.default](args = (%i, %w))
    %o shape=(40, 40) = call_function[target=tp.add.Tensor](args = (%i, %p))
    %q shape=(40, 40) = call_function[target=tp.mm.default](args = (%o, %w))
    %r shape=(40, 40) = call_function[target=tp.mul.Tensor](args = (%o, 2))
    return (q, r)
))";
  Graph g = parse_graph(text);
  std::vector<Tensor> inputs = test::random_inputs(g, 4, -1, 1);
  std::vector<Tensor> want = test::reference(g, inputs);
  for (int threads : {1, 2}) {
    CompiledGraph cg = compiler(threads, true).compile(g);
    bool fused = false;
    for (const auto& n : cg.schedule().epilogues) fused = fused || n.fused;
    ASSERT_TRUE(fused) << cg.schedule().str();
    const MemoryPlan& m = cg.memory_plan();
    // Buffers live in one step (the product's inputs and its epilogue's outputs) never share
    // bytes: no in-place write of o over i, whose lifetimes now meet in the product's step.
    for (const BufferPlacement& a : m.buffers)
      for (const BufferPlacement& b : m.buffers) {
        if (&a == &b || a.kind != BufferPlacement::Kind::Arena ||
            b.kind != BufferPlacement::Kind::Arena)
          continue;
        bool live_together = !(a.last_step < b.first_step || b.last_step < a.first_step);
        bool overlap = a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
        EXPECT_FALSE(live_together && overlap) << a.buffer << " and " << b.buffer << "\n" << m.str();
      }
    std::vector<Tensor> got = cg.run(inputs);
    EXPECT_TRUE(bitwise_equal(got[0], want[0]));
    EXPECT_TRUE(bitwise_equal(got[1], want[1]));
  }
}

TEST(GemmEpilogue, HostRunsAnEpilogueTheBackendDeclines) {
  // toy_epilogue (tests/plugins) reports extern_epilogues but keeps the SDK's default
  // run_extern_with_epilogue, which declines: the step is fused, the host runs the epilogue after
  // the product, and the result is toy_cpu's unfused one bit for bit.
  auto toy = [](const std::string& backend) {
    Config c = cpu_config();
    c.plugin_path = {std::string(STAX_BINARY_DIR) + "/test_plugins"};
    c.devices["cpu"].backend = backend;
    return std::make_unique<Compiler>(c);
  };
  const char* text = R"(graph(
    %x shape=(20, 12) = placeholder[target=x]
    %w shape=(12, 36) = placeholder[target=w]
    %b shape=(36,) = placeholder[target=b]
    %mm shape=(20, 36) = call_function[target=tp.mm.default](args = (%x, %w))
    %add shape=(20, 36) = call_function[target=tp.add.Tensor](args = (%mm, %b))
    %relu shape=(20, 36) = call_function[target=tp.relu.default](args = (%add,))
    return (relu,)
))";
  Graph g = parse_graph(text);
  std::vector<Tensor> inputs = test::random_inputs(g, 2, -2, 2);
  CompiledGraph fused = toy("toy_epilogue")->compile(g);
  ASSERT_NE(note_for(fused), nullptr);
  EXPECT_TRUE(note_for(fused)->fused);
  RunStats stats;
  GraphRunOptions ro;
  ro.stats = &stats;
  Tensor got = fused.run(inputs, ro)[0];
  EXPECT_EQ(stats.fused_epilogues, 0u);
  EXPECT_EQ(stats.launches, 1u);
  EXPECT_EQ(stats.extern_calls, 1u);
  CompiledGraph apart = toy("toy_cpu")->compile(g);
  EXPECT_TRUE(apart.schedule().epilogues.empty());
  EXPECT_TRUE(bitwise_equal(got, apart.run(inputs)[0]));
}

TEST(EpilogueBlocks, EveryChunkRunsOnceWhenItsElementsAreFinal) {
  // 10 units of 6 elements, chunks of 4 units (24 elements; the last 12), blocks that straddle
  // chunks and arrive out of order.
  std::vector<int> runs(10, 0);
  std::vector<std::pair<int64_t, int64_t>> ranges;
  stax::cpu::EpilogueBlocks blocks(60, 10, 4, [&](int64_t u0, int64_t u1) {
    ranges.push_back({u0, u1});
    for (int64_t u = u0; u < u1; ++u) ++runs[static_cast<size_t>(u)];
  });
  blocks.finished(50, 60);  // the tail of the last chunk: not yet complete
  EXPECT_TRUE(ranges.empty());
  blocks.finished(7, 30);   // chunk 0 partly, chunk 1 partly
  EXPECT_TRUE(ranges.empty());
  blocks.finished(0, 7);    // completes chunk 0
  ASSERT_EQ(ranges.size(), 1u);
  EXPECT_EQ(ranges[0], std::make_pair(int64_t{0}, int64_t{4}));
  blocks.finished(30, 50);  // completes chunks 1 and 2
  EXPECT_TRUE(blocks.complete());
  for (int r : runs) EXPECT_EQ(r, 1);
}

}  // namespace
}  // namespace stax
