// bincount (core/ops/indexing/bincount.cpp): torch 2.15's values (counts, float32 / float64 /
// integer weights, minlength, an empty input), its errors, the run-time-sized result (the bound in
// the meta, the real size at run time; a value past the bound of an int64 input fails the run, never
// a wrong shape), and compiled (cpu_cpp: a counted fallback) equal to the interpreter.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/graph/verifier.h"
#include "core/interpreter/interpreter.h"
#include "tests/support/compiled_check.h"
#include "tests/support/interp_helpers.h"

namespace stax {
namespace {

using test::cpu_compiler;
using test::error_of;
using test::has;
using test::ints;

std::vector<double> doubles(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.get_double(i));
  return v;
}

// torch 2.15: torch.bincount(torch.tensor([1, 3, 3, 0, 7], dtype=torch.uint8)) = [1, 1, 0, 2, 0,
// 0, 0, 1]; with weights [0.5, 1, 2, 4, 8] (float32) = [4, 0.5, 0, 3, 0, 0, 0, 8] float32; with
// float64 weights the same in float64; with int64 weights float64; minlength=10 pads with zeros.
TEST(Bincount, ValuesDtypesAndMinlength) {
  Graph g;
  Node* x = g.placeholder("x", {5}, DType::UInt8);
  Node* wf = g.placeholder("wf", {5}, DType::Float32);
  Node* wd = g.placeholder("wd", {5}, DType::Float64);
  Node* wi = g.placeholder("wi", {5}, DType::Int64);
  Node* c = g.call("bincount", {x});
  EXPECT_EQ(c->shape(), (Shape{256}));  // the bound: uint8 values
  EXPECT_TRUE(c->meta().runtime_sized());
  g.output({c, g.call("bincount", {x, wf}), g.call("bincount", {x, wd}),
            g.call("bincount", {x, wi}), g.call("bincount", {x}, {{"minlength", int64_t{10}}})});
  verify(g);
  std::vector<Tensor> in = {
      Tensor::from_vector({5}, std::vector<int64_t>{1, 3, 3, 0, 7}, DType::UInt8),
      Tensor::from_vector({5}, std::vector<double>{0.5, 1, 2, 4, 8}, DType::Float32),
      Tensor::from_vector({5}, std::vector<double>{0.5, 1, 2, 4, 8}, DType::Float64),
      Tensor::from_vector({5}, std::vector<int64_t>{1, 2, 3, 4, 5}, DType::Int64)};
  std::vector<Tensor> want = interpret(g, in);
  EXPECT_EQ(want[0].dtype(), DType::Int64);
  EXPECT_EQ(ints(want[0]), (std::vector<int64_t>{1, 1, 0, 2, 0, 0, 0, 1}));
  EXPECT_EQ(want[1].dtype(), DType::Float32);
  EXPECT_EQ(doubles(want[1]), (std::vector<double>{4, 0.5, 0, 3, 0, 0, 0, 8}));
  EXPECT_EQ(want[2].dtype(), DType::Float64);
  EXPECT_EQ(doubles(want[2]), (std::vector<double>{4, 0.5, 0, 3, 0, 0, 0, 8}));
  EXPECT_EQ(want[3].dtype(), DType::Float64);
  EXPECT_EQ(doubles(want[3]), (std::vector<double>{4, 1, 0, 5, 0, 0, 0, 5}));
  EXPECT_EQ(ints(want[4]), (std::vector<int64_t>{1, 1, 0, 2, 0, 0, 0, 1, 0, 0}));
  CompiledGraph cg = cpu_compiler().compile(g);
  std::vector<Tensor> got = cg.run(in);
  EXPECT_EQ(cg.num_fallbacks(), 5u) << cg.summary();
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i].equal(want[i])) << i;
}

// int64 values: minlength gives the bound; the result is max(x) + 1 long, or minlength; a value at
// or past the bound fails the run (the runtime's size check), an empty input gives minlength
// zeros (torch: tensor([], dtype=int64) without minlength).
TEST(Bincount, WideIntegersNeedMinlengthAsTheirBound) {
  Graph g;
  Node* x = g.placeholder("x", {4}, DType::Int64);
  g.output({g.call("bincount", {x}, {{"minlength", int64_t{6}}})});
  verify(g);
  CompiledGraph cg = cpu_compiler().compile(g);
  Tensor small = Tensor::from_vector({4}, std::vector<int64_t>{2, 2, 0, 4});
  EXPECT_EQ(ints(interpret(g, {small})[0]), (std::vector<int64_t>{1, 0, 2, 0, 1, 0}));
  EXPECT_EQ(ints(cg.run({small})[0]), (std::vector<int64_t>{1, 0, 2, 0, 1, 0}));
  Tensor big = Tensor::from_vector({4}, std::vector<int64_t>{2, 9, 0, 4});
  std::string e = error_of([&] { cg.run({big}); });
  EXPECT_TRUE(has(e, "bincount")) << e;
  Graph ge;
  Node* empty = ge.placeholder("x", {0}, DType::Int64);
  ge.output({ge.call("bincount", {empty}, {{"minlength", int64_t{3}}})});
  EXPECT_EQ(ints(interpret(ge, {Tensor::zeros({0}, DType::Int64)})[0]),
            (std::vector<int64_t>{0, 0, 0}));
}

TEST(Bincount, TorchsErrors) {
  Graph g;
  Node* i64 = g.placeholder("i", {3}, DType::Int64);
  Node* f = g.placeholder("f", {3}, DType::Float32);
  Node* b = g.placeholder("b", {3}, DType::Bool);
  Node* m = g.placeholder("m", {2, 2}, DType::UInt8);
  Node* u = g.placeholder("u", {3}, DType::UInt8);
  Node* w = g.placeholder("w", {2}, DType::Float32);
  EXPECT_TRUE(has(error_of([&] { g.call("bincount", {f}); }),
                  "\"bincount_cpu\" not implemented for 'Float'"));
  EXPECT_TRUE(has(error_of([&] { g.call("bincount", {b}); }),
                  "\"bincount_cpu\" not implemented for 'Bool'"));
  EXPECT_TRUE(has(error_of([&] { g.call("bincount", {m}); }),
                  "bincount only supports 1-d non-negative integral inputs."));
  EXPECT_TRUE(has(error_of([&] { g.call("bincount", {u}, {{"minlength", int64_t{-1}}}); }),
                  "minlength should be >= 0"));
  EXPECT_TRUE(has(error_of([&] { g.call("bincount", {u, w}); }),
                  "weights should be 1-d and have the same length as input"));
  EXPECT_TRUE(has(error_of([&] { g.call("bincount", {i64}); }), "pass minlength"));
  // a negative value: torch's message, at run time
  Graph gn;
  Node* s = gn.placeholder("s", {2}, DType::Int8);
  gn.output({gn.call("bincount", {s})});
  std::string e = error_of([&] {
    interpret(gn, {Tensor::from_vector({2}, std::vector<int64_t>{1, -1}, DType::Int8)});
  });
  EXPECT_TRUE(has(e, "bincount only supports 1-d non-negative integral inputs.")) << e;
}

}  // namespace
}  // namespace stax
