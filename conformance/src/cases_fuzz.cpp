// The differential fuzz slice: seeded random graphs of pointwise ops over broadcast and
// transposed inputs, each ending in a value (compared bit for bit) and its row sums (within the
// §6.5 bound). SuiteOptions::fuzz_graphs graphs from SuiteOptions::fuzz_seed; a failure names
// the seed and prints the graph.
#include <cmath>
#include <random>
#include <string>

#include "core/graph/printer.h"
#include "stax/conformance/compare.h"
#include "target.h"

namespace stax::conformance {
namespace {

const char* kUnary[] = {"neg", "abs", "exp", "tanh", "sigmoid", "relu", "sin", "floor", "sqrt",
                        "log1p", "erf", "reciprocal"};
const char* kBinary[] = {"add.Tensor", "sub.Tensor", "mul.Tensor", "div.Tensor", "maximum",
                         "minimum"};

// One random graph: inputs x (R x C), a row vector (C), a column (R x 1) and a transposed (C x R)
// input, `depth` random ops over them, outputs {value, row sums of value}.
Graph random_graph(Target& t, std::mt19937_64& rng, DType dt, int64_t rows, int64_t cols) {
  Graph g;
  std::vector<Node*> pool = {t.input(g, "x", {rows, cols}, dt), t.input(g, "row", {cols}, dt),
                             t.input(g, "col", {rows, 1}, dt)};
  pool.push_back(g.call("t", {t.input(g, "xt", {cols, rows}, dt)}));
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  int depth = 3 + static_cast<int>(pick(8));
  for (int d = 0; d < depth; ++d) {
    Node* a = pool[pick(pool.size())];
    if (pick(3) == 0) {
      pool.push_back(g.call(kUnary[pick(std::size(kUnary))], {a}));
    } else {
      Node* b = pool[pick(pool.size())];
      pool.push_back(g.call(kBinary[pick(std::size(kBinary))], {a, b}));
    }
  }
  // The value: the last op broadcast against x, so it is R x C.
  Node* value = g.call("add.Tensor", {pool.back(), pool[0]});
  g.output({value, g.call("sum.dim_IntList", {value, std::vector<int64_t>{1}})});
  return g;
}

void fuzz(Target& t) {
  const SuiteOptions& o = t.options();
  for (int i = 0; i < o.fuzz_graphs; ++i) {
    uint64_t seed = o.fuzz_seed * 1000003 + static_cast<uint64_t>(i);
    std::mt19937_64 rng(seed);
    DType dt = rng() % 2 ? DType::Float32 : DType::Float64;
    int64_t rows = 1 + static_cast<int64_t>(rng() % 17), cols = 1 + static_cast<int64_t>(rng() % 70);
    Graph g = random_graph(t, rng, dt, rows, cols);
    SCOPED_TRACE("fuzz seed " + std::to_string(seed) + ":\n" + print_graph(g));
    std::vector<Tensor> in = random_inputs(g, seed);
    auto [got, want] = t.run_both(g, in);
    EXPECT_TRUE(bitwise_equal(got[0], want[0]));
    Tensor mag = Tensor::zeros({rows}, DType::Float64);
    for (int64_t r = 0; r < rows; ++r) {
      double s = 0;
      for (int64_t c = 0; c < cols; ++c) s += std::fabs(want[0].get_double(r * cols + c));
      mag.set_double(r, s);
    }
    EXPECT_TRUE(within_bound(got[1], want[1], reduction_bound(want[1], mag, cols)));
  }
}

}  // namespace

void add_fuzz_cases(std::vector<Case>& out) {
  out.push_back({"Fuzz", "RandomPointwiseGraphs", fuzz});
}

}  // namespace stax::conformance
