// strict_order's row tiles (cpu_cpp option `row_tiles`, issue 9, DECISIONS "row tiles"): a row
// reduction in the strict (sequential) order runs 16 rows at once in 16 vector lanes, lane l
// row l's own sequential accumulator, over 16 x 16 tiles transposed in registers. Nothing is
// computed in another order: every result is bit for bit the interpreter's sequential order and
// the 8 scalar row chains' (`row_tiles: false`), on 1, 2 and 3 threads, for row counts and
// lengths that are not multiples of 16 (the rows left over run in the chains, the last partial
// tile of a row loads masked rows), NaNs of different payloads (the first NaN of a row wins),
// signed zeros, infinities. Inputs are distinct per element, so a wrong transpose (a lane
// reading another row's or another column's element) changes the results.
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

Compiler& compiler(bool tiles, int threads) {
  static std::map<std::tuple<bool, int>, std::unique_ptr<Compiler>> compilers;
  auto& c = compilers[{tiles, threads}];
  if (!c) {
    OptionValue o = test::cpu_options(test::Order::Strict, threads);
    o.set("row_tiles", OptionValue::make_scalar(tiles ? "true" : "false"));
    c = std::make_unique<Compiler>(test::cpu_config(o));
  }
  return *c;
}

// Whether this machine runs the tiles (the backend needs AVX-512 for them).
bool tiles_available() {
  Graph g;
  g.output({g.call("sum.dim_IntList", {g.placeholder("x", {16, 16}), std::vector<int64_t>{-1}})});
  return kernel_functions(compiler(true, 1).compile(g)).find("transpose16(") != std::string::npos;
}

// Compiles g with row tiles on 1, 2 and 3 threads and off on 1 thread: every output the
// interpreter's bits (sequential order). Returns how many tiled bodies the tiled printing has (1 thread).
size_t expect_same_bits(const Graph& g, const std::vector<Tensor>& in, const std::string& what) {
  SCOPED_TRACE(what);
  std::vector<Tensor> want;
  size_t tiled = 0;
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    // The chains (row_tiles: false) on 1 thread only: each row's result does not depend on the
    // thread count (the rows are split, not the reductions), and CI time is kept down.
    CompiledGraph on = compiler(true, threads).compile(g);
    CompiledGraph off = compiler(false, 1).compile(g);
    if (want.empty()) want = test::reference(on.graph(), in, test::Order::Strict);
    std::string on_src = kernel_functions(on), off_src = kernel_functions(off);
    if (std::getenv("STAX_TEST_PRINT_SOURCE") && threads == 1) std::cout << on_src;
    EXPECT_EQ(count_of(off_src, "transpose16("), 0u);
    if (threads == 1) tiled = count_of(on_src, "stax_vec::transpose16(stax_tile0)");
    std::vector<Tensor> a = on.run(in), b = threads == 1 ? off.run(in) : want;
    EXPECT_EQ(a.size(), want.size());
    EXPECT_EQ(b.size(), want.size());
    if (a.size() != want.size() || b.size() != want.size()) return tiled;
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_TRUE(bitwise_equal(a[i], want[i])) << "output " << i << " tiles vs interpreter";
      EXPECT_TRUE(bitwise_equal(b[i], want[i])) << "output " << i << " chains vs interpreter";
    }
  }
  return tiled;
}

size_t expect_same_bits(const Graph& g, const std::string& what, uint64_t seed = 7) {
  return expect_same_bits(g, test::random_inputs(g, seed), what);
}

using Build = Node* (*)(Graph&, Node*);

struct RowOp {
  const char* name;
  Build build;
};

const std::vector<RowOp>& row_ops() {
  static const std::vector<RowOp> ops = {
      {"sum", [](Graph& g, Node* x) { return g.call("sum.dim_IntList", {x, std::vector<int64_t>{-1}}); }},
      {"sum of squares",
       [](Graph& g, Node* x) {
         return g.call("sum.dim_IntList", {g.call("mul.Tensor", {x, x}), std::vector<int64_t>{-1}});
       }},
      {"amax", [](Graph& g, Node* x) { return g.call("amax", {x, std::vector<int64_t>{-1}}); }},
      {"amin", [](Graph& g, Node* x) { return g.call("amin", {x, std::vector<int64_t>{-1}}); }},
      {"mean", [](Graph& g, Node* x) { return g.call("mean.dim", {x, std::vector<int64_t>{-1}}); }},
      {"prod", [](Graph& g, Node* x) { return g.call("prod.dim_int", {x, -1}); }},
      {"softmax", [](Graph& g, Node* x) { return g.call("softmax.int", {x, -1}); }},
      {"log_softmax", [](Graph& g, Node* x) { return g.call("log_softmax.int", {x, -1}); }},
      {"layer_norm",
       [](Graph& g, Node* x) {
         int64_t n = x->shape().back();
         return g.call("layer_norm", {x, std::vector<int64_t>{n}, g.placeholder("w", {n}),
                                      g.placeholder("b", {n})});
       }},
  };
  return ops;
}

TEST(RowTiles, RowReductionsGiveTheInterpretersBits) {
  const bool available = tiles_available();
  if (!available) std::cout << "[ note ] no AVX-512: row_tiles is off, the chains are compared\n";
  // Rows / lengths not multiples of 16: 5 x 37 (too few rows for a tile), 17 x 33 (one tile
  // block and one row left; a partial tile of 1 column), 64 x 4099 (a tail of 3 columns; the
  // rows chunked across threads), 300 x 1024 (no column tail, 12 rows left), 40 x 16.
  const std::vector<std::pair<int64_t, int64_t>> shapes = {
      {5, 37}, {17, 33}, {64, 4099}, {300, 1024}, {40, 16}};
  for (const RowOp& op : row_ops()) {
    for (auto [rows, cols] : shapes) {
      Graph g;
      g.output({op.build(g, g.placeholder("x", {rows, cols}))});
      size_t tiled = expect_same_bits(g, std::string(op.name) + " " + std::to_string(rows) +
                                             "x" + std::to_string(cols));
      if (available && rows >= 16) {
        EXPECT_GE(tiled, 1u) << op.name << " " << rows << "x" << cols;
      }
      if (rows < 16) {
        EXPECT_EQ(tiled, 0u);
      }
    }
  }
}

TEST(RowTiles, ThreeDimensionalRowsAndStridedRows) {
  // Rows along the innermost of two iteration variables (4 x 20 rows of 50), and a reduction
  // over the last dimension of a transposed view (rows 1 apart, elements 48 apart: not
  // contiguous along the reduction, so the chains keep it; still the same bits).
  Graph a;
  a.output({a.call("sum.dim_IntList", {a.placeholder("x", {4, 20, 50}), std::vector<int64_t>{-1}})});
  expect_same_bits(a, "4x20x50");
  Graph b;
  Node* y = b.placeholder("y", {70, 48});
  b.output({b.call("amax", {b.call("t", {y}), std::vector<int64_t>{-1}})});
  expect_same_bits(b, "amax of y.t()");
  // A per-row value 3 elements apart (column 1 of a [rows, 3] tensor): gathered per tile step
  // for the 16 rows; a per-column weight shared by the rows: broadcast.
  Graph c;
  Node* x = c.placeholder("x", {37, 70});
  Node* m = c.call("unsqueeze", {c.call("select.int", {c.placeholder("m", {37, 3}), 1, 1}), 1});
  Node* w = c.placeholder("w", {70});
  c.output({c.call("sum.dim_IntList",
                   {c.call("mul.Tensor", {c.call("sub.Tensor", {x, m}), w}), std::vector<int64_t>{-1}})});
  size_t tiled = expect_same_bits(c, "sum((x - m[:, 1:2]) * w)");
  if (tiles_available()) {
    EXPECT_EQ(tiled, 2u);  // the full tiles and the partial one (70 = 4 * 16 + 6)
    std::string src = kernel_functions(compiler(true, 1).compile(c));
    EXPECT_NE(src.find("stax_vec::gather("), std::string::npos) << src;
  }
}

float nan_with(uint32_t payload, bool negative) {
  return std::bit_cast<float>((negative ? 0xFF800000u : 0x7F800000u) | 0x00400000u | payload);
}

// Rows with NaNs of different payloads and signs (the first NaN of a row is the result of max /
// min), +-0 ties, +-inf, a row of all -inf, an overflow to inf in a sum, plain random rows.
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
    switch (r % 9) {
      case 0: at(r, 5) = nan_with(1, false); at(r, 21) = nan_with(2, true); break;
      case 1: at(r, 7) = nan_with(3, true); at(r, cols - 1) = nan_with(4, false); break;
      case 2:
        for (int64_t c = 0; c < cols; ++c) at(r, c) = (c * 7 % 3) ? 0.0f : -0.0f;
        break;
      case 3: for (int64_t c = 0; c < cols; ++c) at(r, c) = -INFINITY; break;
      case 4: at(r, 3) = INFINITY; at(r, 40) = -INFINITY; break;
      case 5: at(r, cols - 1) = nan_with(5, false); break;
      case 6: at(r, 1) = 3e38f; at(r, 2) = 3e38f; at(r, 9) = -3e38f; break;
      default: break;
    }
  }
  return Tensor::from_vector<float>({rows, cols}, v);
}

TEST(RowTiles, NaNsSignedZerosAndInfinities) {
  for (auto [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{{17, 33}, {64, 4099}, {300, 100}}) {
    std::vector<Tensor> in = {special_rows(rows, cols)};
    for (const RowOp& op : row_ops()) {
      if (std::string(op.name) == "layer_norm") continue;  // has weight inputs
      Graph g;
      g.output({op.build(g, g.placeholder("x", {rows, cols}))});
      expect_same_bits(g, in, std::string(op.name) + " special " + std::to_string(rows) + "x" +
                                  std::to_string(cols));
    }
  }
}

TEST(RowTiles, TheTiledKernel) {
  // (x * x).sum(-1) over 40 rows of 100: two tile blocks of 16 rows (6 full tiles and a partial
  // one of 4 columns each), then one block of 8 chains; x*x computed on the transposed columns.
  if (!tiles_available()) GTEST_SKIP() << "no AVX-512";
  Graph g;
  Node* x = g.placeholder("x", {40, 100});
  g.output({g.call("sum.dim_IntList", {g.call("mul.Tensor", {x, x}), std::vector<int64_t>{-1}})});
  std::string src = kernel_functions(compiler(true, 1).compile(g));
  if (std::getenv("STAX_TEST_PRINT_SOURCE")) std::cout << src;
  EXPECT_EQ(count_of(src, "stax_vec::load_rows(stax_tile0, "), 2u) << src;  // full and partial
  EXPECT_EQ(count_of(src, "stax_vec::tail_mask(stax_rem)"), 1u) << src;
  EXPECT_EQ(count_of(src, "stax_tile1"), 0u) << src;  // x loaded once per tile
  EXPECT_NE(src.find("stax_vec::mul("), std::string::npos) << src;
  EXPECT_NE(src.find("stax_vec::store("), std::string::npos) << src;  // 16 results at once
  EXPECT_NE(src.find("rows' sequential chains"), std::string::npos) << src;  // rows left over
}

}  // namespace
}  // namespace stax
