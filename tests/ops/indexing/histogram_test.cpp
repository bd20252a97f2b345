// torch.histogram (core/ops/indexing/histogram.cpp): both overloads against torch 2.15's values
// (the calls are written next to them), with weights and density, a zero-width data range, an
// empty input; torch's errors; compiled (cpu_cpp: counted fallbacks) equal to the interpreter.
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

std::vector<double> doubles(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.get_double(i));
  return v;
}

std::vector<Node*> both(Graph& g, Node* tuple) {
  return {g.call("getitem", {tuple, int64_t{0}}), g.call("getitem", {tuple, int64_t{1}})};
}

// x = torch.tensor([0.3, 1.7, 2.0, -1.0, 5.5, 2.5]) (float32):
//   torch.histogram(x, 4) = [2, 2, 1, 1], edges [-1, 0.625, 2.25, 3.875, 5.5]
//   torch.histogram(x, 3, range=(0., 3.), weight=[1, 2, 3, 4, 5, 6], density=True)
//       = [0.0833333358168602, 0.1666666716337204, 0.75], edges [0, 1, 2, 3]
//   torch.histogram(x, torch.tensor([0., 1., 2.5, 6.])) = [1, 2, 2], edges [0, 1, 2.5, 6]
//   torch.histogram(torch.tensor([2., 2.]), 2) = [0, 2], edges [1.5, 2, 2.5]
//   torch.histogram(torch.tensor([], dtype=torch.float64), 2) = [0, 0], edges [0, 0.5, 1]
TEST(Histogram, BothOverloadsMatchTorch) {
  Graph g;
  Node* x = g.placeholder("x", {2, 3}, DType::Float32);
  Node* w = g.placeholder("w", {2, 3}, DType::Float32);
  Node* edges = g.placeholder("edges", {4}, DType::Float32);
  Node* same = g.placeholder("same", {2}, DType::Float32);
  Node* empty = g.placeholder("empty", {0}, DType::Float64);
  std::vector<Node*> outs;
  for (Node* t : std::vector<Node*>{g.call("histogram.bin_ct", {x, int64_t{4}}),
                  g.call("histogram.bin_ct", {x, int64_t{3}},
                         {{"range", Arg(Arg::List{Arg(0.0), Arg(3.0)})}, {"weight", w},
                          {"density", true}}),
                  g.call("histogram.bins_tensor", {x, edges}),
                  g.call("histogram.bin_ct", {same, int64_t{2}}),
                  g.call("histogram.bin_ct", {empty, int64_t{2}})})
    for (Node* o : both(g, t)) outs.push_back(o);
  g.output(outs);
  verify(g);
  std::vector<Tensor> in = {
      Tensor::from_vector({2, 3}, std::vector<double>{0.3, 1.7, 2.0, -1.0, 5.5, 2.5}, DType::Float32),
      Tensor::from_vector({2, 3}, std::vector<double>{1, 2, 3, 4, 5, 6}, DType::Float32),
      Tensor::from_vector({4}, std::vector<double>{0, 1, 2.5, 6}, DType::Float32),
      Tensor::from_vector({2}, std::vector<double>{2, 2}, DType::Float32),
      Tensor::zeros({0}, DType::Float64)};
  std::vector<Tensor> r = interpret(g, in);
  EXPECT_EQ(r[0].dtype(), DType::Float32);
  EXPECT_EQ(doubles(r[0]), (std::vector<double>{2, 2, 1, 1}));
  EXPECT_EQ(doubles(r[1]), (std::vector<double>{-1, 0.625, 2.25, 3.875, 5.5}));
  EXPECT_EQ(doubles(r[2]),
            (std::vector<double>{0.0833333358168602, 0.1666666716337204, 0.75}));
  EXPECT_EQ(doubles(r[3]), (std::vector<double>{0, 1, 2, 3}));
  EXPECT_EQ(doubles(r[4]), (std::vector<double>{1, 2, 2}));
  EXPECT_EQ(doubles(r[5]), (std::vector<double>{0, 1, 2.5, 6}));
  EXPECT_EQ(doubles(r[6]), (std::vector<double>{0, 2}));
  EXPECT_EQ(doubles(r[7]), (std::vector<double>{1.5, 2, 2.5}));
  EXPECT_EQ(r[8].dtype(), DType::Float64);
  EXPECT_EQ(doubles(r[8]), (std::vector<double>{0, 0}));
  EXPECT_EQ(doubles(r[9]), (std::vector<double>{0, 0.5, 1}));
  CompiledGraph cg = cpu_compiler().compile(g);
  std::vector<Tensor> got = cg.run(in);
  EXPECT_GE(cg.num_fallbacks(), 5u) << cg.summary();
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i].equal(r[i])) << i;
}

TEST(Histogram, TorchsErrors) {
  Graph g;
  Node* i = g.placeholder("i", {3}, DType::Int64);
  Node* f = g.placeholder("f", {3}, DType::Float32);
  Node* d = g.placeholder("d", {3}, DType::Float64);
  EXPECT_TRUE(has(error_of([&] { g.call("histogram.bin_ct", {i, int64_t{3}}); }),
                  "\"histogramdd\" not implemented for 'Long'"));
  EXPECT_TRUE(has(error_of([&] {
                    g.call("histogram.bin_ct", {f, int64_t{3}},
                           {{"range", Arg(Arg::List{Arg(3.0), Arg(1.0)})}});
                  }),
                  "min should not exceed max"));
  EXPECT_TRUE(has(error_of([&] { g.call("histogram.bin_ct", {f, int64_t{0}}); }),
                  "bins must be > 0"));
  EXPECT_TRUE(has(error_of([&] { g.call("histogram.bins_tensor", {f, d}); }),
                  "should have the same dtype"));
  EXPECT_TRUE(has(error_of([&] {
                    g.call("histogram.bin_ct", {f, int64_t{3}}, {{"weight", d}});
                  }),
                  "should have the same dtype as the input tensor"));
}

}  // namespace
}  // namespace stax
