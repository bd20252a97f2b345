// cpu_cpp's extern "scatter_add" (plugins/cpu_cpp/scatter_kernel.cpp; the lowering rule in
// core/ops/indexing/lowering.cpp), with real values:
//   * scatter_add compiles to the extern (no interpreter fallback) for float32 / float64 / int32 /
//     int64 along every dim, with index tensors full of repeats (so the order of the additions
//     into one element shows in float bits) and strided (an expanded index, as the embedding's
//     gradient has), and its result is the interpreter's bit for bit on 1, 2 and 3 threads;
//   * the embedding's gradient (embedding_dense_backward, 8 x 64 tokens x 128 features into
//     1000 rows: the torch backend's LM) runs with no fallback, bit for bit the interpreter's;
//   * index_put (accumulate and not) compiles to the extern "index_put": nearest upsampling's
//     gradient (two broadcast index tensors after two full dims, 4 terms per element), separated
//     index tensors (their dims go first), negative indices, repeated writes (the last wins);
//   * float16 declines the rule (a counted fallback, still the interpreter's bits);
//   * an index out of bounds is an error naming the index and the dim.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tests/support/compiled_check.h"

namespace stax {
namespace {

Compiler& compiler_with(int threads) {
  static Compiler one(test::cpu_config(test::cpu_options(test::Order::Segmented, 1)));
  static Compiler two(test::cpu_config(test::cpu_options(test::Order::Segmented, 2)));
  static Compiler three(test::cpu_config(test::cpu_options(test::Order::Segmented, 3)));
  return threads == 1 ? one : threads == 2 ? two : three;
}

// Values of many magnitudes (the sum of one element's terms depends on their order).
Tensor spread(const Shape& s, DType dt, uint64_t seed) {
  Tensor t = Tensor::randn(s, DType::Float64, seed);
  Tensor out = Tensor::empty(s, dt);
  for (int64_t e = 0; e < t.numel(); ++e) {
    const double v = t.get_double(e) * std::pow(10.0, static_cast<double>(e % 9) - 4);
    out.set_double(e, is_floating(dt) ? v : std::round(v * 1e3));
  }
  return out;
}

struct Case {
  std::string name;
  Shape self, index, src;
  int64_t dim;
  int64_t bound;  // index values in [0, bound)
};

std::vector<Case> cases() {
  return {{"dim0", {7, 33}, {40, 33}, {41, 35}, 0, 7},
          {"dim1", {9, 6, 5}, {9, 50, 5}, {9, 50, 6}, 1, 6},
          {"last_dim", {6, 11}, {6, 70}, {6, 70}, -1, 11},
          {"index_smaller_than_self", {12, 40}, {300, 20}, {300, 20}, 0, 12},
          {"one_dim", {10}, {5000}, {5000}, 0, 10}};
}

void expect_compiled_bitwise(const Graph& g, const std::vector<Tensor>& in, const std::string& what) {
  const Tensor want = test::reference(g, in)[0];
  for (int threads : {1, 2, 3}) {
    CompiledGraph cg = compiler_with(threads).compile(g);
    EXPECT_EQ(cg.num_fallbacks(), 0u) << what << ": " << cg.summary();
    EXPECT_EQ(cg.num_externs(), 1u) << what << ": " << cg.summary();
    EXPECT_TRUE(test::bitwise_equal(cg.run(in)[0], want)) << what << ", " << threads << " threads";
  }
}

TEST(ScatterAddExtern, TheInterpretersBitsOnOneTwoAndThreeThreads) {
  for (const Case& c : cases())
    for (DType dt : {DType::Float32, DType::Float64, DType::Int32, DType::Int64}) {
      const std::string what = c.name + " " + std::string(dtype_name(dt));
      Graph g;
      Node* self = g.placeholder("self", c.self, dt);
      Node* index = g.placeholder("index", c.index, DType::Int64);
      Node* src = g.placeholder("src", c.src, dt);
      g.output({g.call("scatter_add", {self, c.dim, index, src})});
      std::vector<Tensor> in{spread(c.self, dt, 3), Tensor::randint(c.index, 0, c.bound,
                                                                    DType::Int64, 4),
                             spread(c.src, dt, 5)};
      expect_compiled_bitwise(g, in, what);
    }
}

// The index as the embedding's gradient writes it: one int64 per token expanded over the
// features (stride 0), read in place.
TEST(ScatterAddExtern, AnExpandedIndex) {
  Graph g;
  Node* tokens = g.placeholder("tokens", {300}, DType::Int64);
  Node* src = g.placeholder("src", {300, 64});
  Node* index = g.call("expand", {g.call("unsqueeze", {tokens, 1}), Shape{300, 64}});
  Node* zeros = g.call("zeros", {Shape{50, 64}});
  g.output({g.call("scatter_add", {zeros, 0, index, src})});
  expect_compiled_bitwise(g, {Tensor::randint({300}, 0, 50, DType::Int64, 6),
                              spread({300, 64}, DType::Float32, 7)},
                          "expanded index");
}

TEST(ScatterAddExtern, TheEmbeddingGradientOfTheLm) {
  Graph g;
  Node* grad = g.placeholder("grad", {8, 64, 128});
  Node* idx = g.placeholder("idx", {8, 64}, DType::Int64);
  g.output({g.call("embedding_dense_backward", {grad, idx, 1000, -1, false})});
  expect_compiled_bitwise(g, {spread({8, 64, 128}, DType::Float32, 8),
                              Tensor::randint({8, 64}, 0, 1000, DType::Int64, 9)},
                          "embedding_dense_backward");
}

Graph index_put_graph(const Shape& self, const std::vector<Shape>& index, const Shape& values,
                      bool accumulate) {
  Graph g;
  Node* s = g.placeholder("self", self);
  Arg::List indices;
  for (size_t k = 0; k < index.size(); ++k) {
    if (index[k].empty()) {
      indices.emplace_back();
      continue;
    }
    Node* i = g.placeholder("i" + std::to_string(k), index[k], DType::Int64);
    indices.emplace_back(i);
  }
  Node* v = g.placeholder("values", values);
  g.output({g.call("index_put", {s, Arg(std::move(indices)), v, accumulate})});
  return g;
}

// Index tensors with values in [lo, hi), the rest spread.
std::vector<Tensor> index_put_inputs(const Graph& g, int64_t lo, const std::vector<int64_t>& hi) {
  std::vector<Tensor> in;
  size_t k = 0;
  for (const Node* p : g.placeholders()) {
    if (p->dtype() == DType::Int64)
      in.push_back(Tensor::randint(p->shape(), lo, hi[k++], DType::Int64, 20 + in.size()));
    else
      in.push_back(spread(p->shape(), p->dtype(), 30 + in.size()));
  }
  return in;
}

TEST(IndexPutExtern, NearestUpsamplingsGradient) {
  // x[:, :, h[:, None], w] with h, w the nearest rows / columns of a 2x upsampling: its gradient
  // is index_put(zeros, [None, None, h (32, 1), w (32)], grad, accumulate=True).
  Graph g = index_put_graph({8, 16, 16, 16}, {{}, {}, {32, 1}, {32}}, {8, 16, 32, 32}, true);
  std::vector<Tensor> in = index_put_inputs(g, 0, {16, 16});
  for (int64_t r = 0; r < 32; ++r) {
    in[1].set_double(r, static_cast<double>(r / 2));
    in[2].set_double(r, static_cast<double>(r / 2));
  }
  expect_compiled_bitwise(g, in, "upsampling gradient");
}

TEST(IndexPutExtern, SeparatedNegativeAndRepeatedIndices) {
  for (bool accumulate : {true, false}) {
    SCOPED_TRACE(accumulate ? "accumulate" : "write");
    // separated index tensors: B (40) first, then the dim between them
    Graph sep = index_put_graph({5, 7, 6}, {{40}, {}, {40}}, {40, 7}, accumulate);
    expect_compiled_bitwise(sep, index_put_inputs(sep, -5, {5, 6}), "separated");
    // one index tensor, negative entries, values broadcast along the first dim
    Graph neg = index_put_graph({9, 300}, {{}, {2000}}, {1, 2000}, accumulate);
    expect_compiled_bitwise(neg, index_put_inputs(neg, -300, {300}), "negative");
  }
}

TEST(IndexPutExtern, AnIndexOutOfBoundsIsAnError) {
  Graph g = index_put_graph({4, 3}, {{5}}, {5, 3}, true);
  std::vector<Tensor> in = index_put_inputs(g, 0, {4});
  in[1].set_double(2, -5);
  CompiledGraph cg = compiler_with(1).compile(g);
  ASSERT_EQ(cg.num_fallbacks(), 0u) << cg.summary();
  try {
    cg.run(in);
    FAIL() << "no error for index -5 of a dim of size 4";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("index -5 is out of bounds for dimension 0 with size 4"),
              std::string::npos)
        << e.message();
  }
}

// A backend without these externs (tests/plugins' toy_cpu offers only mm) runs index_put on the
// interpreter's kernel, its index tensors (a list argument) bound in order: a counted fallback
// with the interpreter's bits.
TEST(IndexPutExtern, ABackendWithoutTheExternRunsTheInterpreter) {
  Config cfg = Config::parse("plugin_path: [" + std::string(STAX_BINARY_DIR) +
                                 "/test_plugins]\ndevices: {cpu: {backend: toy_cpu}}\n",
                             "toy.yaml", ::testing::TempDir());
  Compiler compiler(std::move(cfg));
  Graph g = index_put_graph({4, 5, 6}, {{}, {7, 1}, {3}}, {4, 7, 3}, true);
  std::vector<Tensor> in = index_put_inputs(g, -5, {5, 6});
  CompiledGraph cg = compiler.compile(g);
  EXPECT_EQ(cg.num_externs(), 0u) << cg.summary();
  EXPECT_EQ(cg.num_fallbacks(), 1u) << cg.summary();
  EXPECT_TRUE(test::contains(cg.summary(), "not offered by the backend")) << cg.summary();
  EXPECT_TRUE(test::bitwise_equal(cg.run(in)[0], interpret(g, in)[0]));
}

TEST(ScatterAddExtern, HalfValuesRunOnTheInterpreter) {
  Graph g;
  Node* self = g.placeholder("self", {5, 8}, DType::Float16);
  Node* index = g.placeholder("index", {20, 8}, DType::Int64);
  Node* src = g.placeholder("src", {20, 8}, DType::Float16);
  g.output({g.call("scatter_add", {self, 0, index, src})});
  std::vector<Tensor> in{Tensor::randn({5, 8}, DType::Float16, 1),
                         Tensor::randint({20, 8}, 0, 5, DType::Int64, 2),
                         Tensor::randn({20, 8}, DType::Float16, 3)};
  CompiledGraph cg = compiler_with(2).compile(g);
  EXPECT_EQ(cg.num_fallbacks(), 1u) << cg.summary();
  EXPECT_TRUE(test::bitwise_equal(cg.run(in)[0], test::reference(g, in)[0]));
}

TEST(ScatterAddExtern, AnIndexOutOfBoundsIsAnError) {
  Graph g;
  Node* self = g.placeholder("self", {4, 3});
  Node* index = g.placeholder("index", {2, 3}, DType::Int64);
  Node* src = g.placeholder("src", {2, 3});
  g.output({g.call("scatter_add", {self, 0, index, src})});
  Tensor bad_index = Tensor::randint({2, 3}, 0, 4, DType::Int64, 1);
  bad_index.set_double(4, 7);
  CompiledGraph cg = compiler_with(1).compile(g);
  ASSERT_EQ(cg.num_fallbacks(), 0u) << cg.summary();
  try {
    cg.run({Tensor::randn({4, 3}), bad_index, Tensor::randn({2, 3})});
    FAIL() << "no error for index 7 of a dim of size 4";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("index 7 is out of bounds for dimension 0 with size 4"),
              std::string::npos)
        << e.message();
  }
}

}  // namespace
}  // namespace stax
