// cpu_cpp's body fusion (PrintOptions::fuse_bodies, issue 9): a reduction-loop body that only
// stores (softmax's exp(x - max) written over the row) runs inside the loop of the segmented sum
// after it, so the kernel makes 3 passes over a row instead of 4. Nothing is computed
// differently: every result is bit for bit the unfused printing's and the interpreter's (segmented
// order), on 1, 2 and 3 threads; the fused kernel really has one reduction loop fewer; kernels
// where the next body does not read the stored row at the stored index are left alone.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "tests/support/compiled_check.h"
#include "tests/support/strings.h"

namespace stax {
namespace {

using test::count_of;
using test::kernel_functions;

using test::bitwise_equal;

Compiler& compiler(bool fuse, int threads, test::Order order = test::Order::Segmented) {
  static std::map<std::tuple<bool, int, bool>, std::unique_ptr<Compiler>> compilers;
  auto& c = compilers[{fuse, threads, order == test::Order::Strict}];
  if (!c) {
    OptionValue o = test::cpu_options(order, threads);
    o.set("fuse_bodies", OptionValue::make_scalar(fuse ? "true" : "false"));
    c = std::make_unique<Compiler>(test::cpu_config(o));
  }
  return *c;
}

// Occurrences of `what` in s.

const char* kFusedNote = "// (runs in the next body's loop)";

// Compiles g with fusion on and off on 1, 2 and 3 threads (and in strict order, where nothing is
// segmented and nothing fuses): every result the interpreter's bits. Returns how many bodies
// were fused (segmented order), after checking that each fused body removed one loop.
size_t expect_same_bits(const Graph& g, const std::string& what, uint64_t seed = 5) {
  SCOPED_TRACE(what);
  std::vector<Tensor> in = test::random_inputs(g, seed);
  size_t fused_bodies = 0;
  for (test::Order order : {test::Order::Segmented, test::Order::Strict}) {
    SCOPED_TRACE(test::order_name(order));
    std::vector<Tensor> want;
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE("threads " + std::to_string(threads));
      CompiledGraph on = compiler(true, threads, order).compile(g);
      CompiledGraph off = compiler(false, threads, order).compile(g);
      if (want.empty()) want = test::reference(on.graph(), in, order);
      std::string on_src = kernel_functions(on), off_src = kernel_functions(off);
      EXPECT_EQ(count_of(off_src, kFusedNote), 0u);
      size_t fused = count_of(on_src, kFusedNote);
      if (order == test::Order::Strict) {
        EXPECT_EQ(fused, 0u) << on_src;
      }
      if (order == test::Order::Segmented) fused_bodies = fused;
      // Each fused body's own reduction loop is gone.
      EXPECT_EQ(count_of(on_src, "for ("), count_of(off_src, "for (") - fused) << on_src;
      std::vector<Tensor> a = on.run(in), b = off.run(in);
      EXPECT_EQ(a.size(), want.size());
      EXPECT_EQ(b.size(), want.size());
      if (a.size() != want.size() || b.size() != want.size()) return fused_bodies;
      for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_TRUE(bitwise_equal(a[i], want[i])) << "output " << i << " fused vs interpreter";
        EXPECT_TRUE(bitwise_equal(b[i], want[i])) << "output " << i << " unfused vs interpreter";
      }
    }
  }
  return fused_bodies;
}

Graph softmax(int64_t rows, int64_t cols) {
  Graph g;
  g.output({g.call("softmax.int", {g.placeholder("x", {rows, cols}), -1})});
  return g;
}

TEST(FusedBodies, SoftmaxExpRunsInTheSumLoop) {
  // 64 x 4099: a tail of 3 after the 16-wide steps and 262k points (the host chunks the rows
  // across threads); 300 x 1024: no tail; 5 x 37 and 3 x 7: short rows, one thread.
  EXPECT_EQ(expect_same_bits(softmax(64, 4099), "64x4099"), 1u);
  EXPECT_EQ(expect_same_bits(softmax(300, 1024), "300x1024"), 1u);
  EXPECT_EQ(expect_same_bits(softmax(5, 37), "5x37"), 1u);
  EXPECT_EQ(expect_same_bits(softmax(3, 7), "3x7"), 1u);
}

TEST(FusedBodies, SoftmaxWithExpAlsoAnOutputAndExtremeInputs) {
  // exp(x - max) is also an output (a real buffer, not a temporary in the result's row).
  Graph g;
  Node* x = g.placeholder("x", {40, 4100});
  Node* m = g.call("amax", {x, std::vector<int64_t>{-1}, true});
  Node* e = g.call("exp", {g.call("sub.Tensor", {x, m})});
  Node* s = g.call("sum.dim_IntList", {e, std::vector<int64_t>{-1}, true});
  g.output({g.call("div.Tensor", {e, s}), e});
  EXPECT_EQ(expect_same_bits(g, "softmax and exp"), 1u);
  // Wide inputs (exp underflows to 0 for most of a row; the sum is then dominated by one term).
  Graph h;
  Node* y = h.placeholder("y", {33, 1000});
  h.output({h.call("softmax.int", {h.call("mul.Scalar", {y, 60.0}), -1})});
  EXPECT_EQ(expect_same_bits(h, "softmax(60 y)"), 1u);
}

TEST(FusedBodies, KernelsWithoutAStoreOnlyBodyAreUnchanged) {
  // Sums, layer_norm (its intermediates are inlined: no store-only body), a reduction over an
  // outer dimension: nothing fuses, and the source is the unfused printer's.
  Graph a;
  Node* x = a.placeholder("x", {64, 300});
  a.output({a.call("sum.dim_IntList", {a.call("mul.Tensor", {x, x}), std::vector<int64_t>{-1}})});
  EXPECT_EQ(expect_same_bits(a, "row sum"), 0u);
  Graph c;
  Node* y = c.placeholder("y", {300, 64});
  c.output({c.call("sum.dim_IntList", {y, std::vector<int64_t>{0}})});
  EXPECT_EQ(expect_same_bits(c, "column sum"), 0u);
  CompiledGraph on = compiler(true, 1).compile(a), off = compiler(false, 1).compile(a);
  EXPECT_EQ(kernel_functions(on), kernel_functions(off));
}

TEST(FusedBodies, TheFusedLoop) {
  // The structure of softmax's kernel over rows of 100: max; exp stored and summed in one loop;
  // the division. One `stax_seg` loop carries both the store of exp and the sum's accumulation.
  CompiledGraph cg = compiler(true, 1).compile(softmax(8, 100));
  ASSERT_EQ(cg.kernels().size(), 1u);
  std::string src = kernel_functions(cg);
  if (std::getenv("STAX_TEST_PRINT_SOURCE")) std::cout << src;
  EXPECT_EQ(count_of(src, kFusedNote), 1u) << src;
  size_t note = src.find(kFusedNote);
  ASSERT_NE(note, std::string::npos);
  // After the note: the sum's vector loop, whose segment loop computes exp, stores it and adds
  // the stored value to the accumulator, before the tree.
  size_t loop = src.find("vectorize_width(16)", note);
  ASSERT_NE(loop, std::string::npos) << src;
  size_t exp = src.find("exp(", loop), store = src.find("] = ", loop),
         acc = src.find("acc", loop), tree = src.find("stax_seg < 8", loop);
  EXPECT_NE(exp, std::string::npos) << src;
  EXPECT_LT(exp, tree) << src;
  EXPECT_LT(store, tree) << src;
  EXPECT_LT(acc, tree) << src;
  // The 16-wide main loops over the row: max (its fast form, and the exact one run again only
  // when a NaN was seen), exp + sum; the division is a plain loop.
  EXPECT_EQ(count_of(src, "r0_0 <= 100 - 16"), 3u) << src;
  EXPECT_EQ(count_of(src, "stax_scalar::maximum(acc0[stax_seg], tmp0)"), 2u) << src;  // exact loops
  EXPECT_EQ(count_of(src, "acc0[stax_seg] = acc0[stax_seg] > tmp0 ? acc0[stax_seg] : tmp0;"), 2u)
      << src;
}

// ---- the fast form of max / min accumulations (fast_min_max in body_loops.cpp) ----------------

float nan_with(uint32_t payload, bool negative) {
  return std::bit_cast<float>((negative ? 0xFF800000u : 0x7F800000u) | 0x00400000u | payload);
}

// Rows of `cols` with NaNs of different payloads and signs (first NaN of a row: the result),
// +-0 ties (the later one wins), +-inf, a row of all -inf, and plain random rows.
Tensor special_rows(int64_t rows, int64_t cols) {
  Tensor t = test::random_inputs([&] {
    Graph g;
    g.output({g.placeholder("x", {rows, cols})});
    return g;
  }(), 3)[0];
  std::vector<float> v(static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < rows * cols; ++i) v[static_cast<size_t>(i)] = static_cast<float>(t.get_double(i));
  auto at = [&](int64_t r, int64_t c) -> float& { return v[static_cast<size_t>(r * cols + c % cols)]; };
  for (int64_t r = 0; r < rows; ++r) {
    switch (r % 8) {
      case 0: at(r, 5) = nan_with(1, false); at(r, 21) = nan_with(2, true); break;  // same segment
      case 1: at(r, 7) = nan_with(3, true); at(r, cols - 1) = nan_with(4, false); break;  // tail
      case 2:  // all zeros of both signs: the last of the ties wins per segment
        for (int64_t c = 0; c < cols; ++c) at(r, c) = (c * 7 % 3) ? 0.0f : -0.0f;
        break;
      case 3: for (int64_t c = 0; c < cols; ++c) at(r, c) = -INFINITY; break;
      case 4: at(r, 3) = INFINITY; at(r, 40) = -INFINITY; break;
      case 5: at(r, cols - 1) = nan_with(5, false); break;  // a NaN in the last element only
      default: break;
    }
  }
  return Tensor::from_vector<float>({rows, cols}, v);
}

void expect_reference_bits(const Graph& g, const std::vector<Tensor>& in, const std::string& what) {
  SCOPED_TRACE(what);
  std::vector<Tensor> want;
  for (int threads : {1, 2, 3}) {
    CompiledGraph cg = compiler(true, threads).compile(g);
    // The interpreter on the graph as compiled (softmax decomposed into amax, exp, sum, div).
    if (want.empty()) want = test::reference(cg.graph(), in, test::Order::Segmented);
    std::vector<Tensor> got = cg.run(in);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_TRUE(bitwise_equal(got[i], want[i])) << "output " << i << ", " << threads << " threads";
    if (threads == 1) {
      EXPECT_NE(kernel_functions(cg).find("_any) {  // a NaN"), std::string::npos)
          << kernel_functions(cg);
    }
  }
}

TEST(FastMinMax, NaNsSignedZerosAndInfinitiesGiveTheInterpretersBits) {
  for (int64_t cols : {16, 100, 4099}) {
    const int64_t rows = cols == 4099 ? 64 : 40;  // 64 x 4099: the rows chunked across threads
    std::vector<Tensor> in = {special_rows(rows, cols)};
    for (const char* op : {"amax", "amin"}) {
      Graph g;
      g.output({g.call(op, {g.placeholder("x", {rows, cols}), std::vector<int64_t>{-1}})});
      expect_reference_bits(g, in, std::string(op) + " cols " + std::to_string(cols));
    }
    Graph s;
    s.output({s.call("softmax.int", {s.placeholder("x", {rows, cols}), -1})});
    expect_reference_bits(s, in, "softmax cols " + std::to_string(cols));
  }
  // Two reduction dimensions, the inner a multiple of 16: the segment follows the flat index.
  Tensor t = special_rows(8, 96);
  Graph g;
  Node* x = g.placeholder("x", {8, 3, 32});
  g.output({g.call("amax", {x, std::vector<int64_t>{1, 2}})});
  std::vector<float> v(8 * 96);
  for (int64_t i = 0; i < 8 * 96; ++i) v[static_cast<size_t>(i)] = static_cast<float>(t.get_double(i));
  expect_reference_bits(g, {Tensor::from_vector<float>({8, 3, 32}, v)}, "amax over (3, 32)");
}

}  // namespace
}  // namespace stax
