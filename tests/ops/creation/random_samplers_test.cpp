// The samplers cauchy / exponential / geometric / log_normal (the functional forms of aten's
// in-place cauchy_ ... log_normal_) and normal.float_float (core/ops/random/): shapes, dtypes,
// torch's argument checks, and their distributions over 20000 draws of a fixed seed (sample
// statistics within 6 standard errors of the exact values, so a wrong transformation fails
// while the seed's draws pass); compiled runs (an interpreter fallback) equal the interpreter.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/graph/op_registry.h"
#include "core/support/error.h"
#include "tests/support/op_check.h"

using namespace stax;
using namespace stax::test;

namespace {

constexpr int64_t kN = 20000;

std::vector<double> draws(const std::string& name, std::vector<Arg> args, DType t = DType::Float64) {
  Tensor like = Tensor::zeros({kN}, t);
  OpRun r = run({like}, op(name, std::move(args)));
  EXPECT_EQ(r.out.dtype(), t) << name;
  EXPECT_EQ(r.fallbacks, 1u) << name;
  std::vector<double> v;
  for (int64_t i = 0; i < r.out.numel(); ++i) v.push_back(r.out.get_double(i));
  return v;
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
}

}  // namespace

TEST(RandomSamplers, Distributions) {
  double se = 1.0 / std::sqrt(static_cast<double>(kN));
  std::vector<double> e = draws("exponential", {2.0});
  EXPECT_GE(*std::min_element(e.begin(), e.end()), 0.0);
  EXPECT_NEAR(mean(e), 0.5, 6 * 0.5 * se);  // mean and sd 1/lambda
  std::vector<double> g = draws("geometric", {0.25}, DType::Int64);
  EXPECT_GE(*std::min_element(g.begin(), g.end()), 1.0);
  for (double v : g) ASSERT_EQ(v, std::floor(v));
  EXPECT_NEAR(mean(g), 4.0, 6 * std::sqrt(0.75) / 0.25 * se);  // mean 1/p, sd sqrt(1-p)/p
  std::vector<double> c = draws("cauchy", {1.0, 2.0});
  EXPECT_NEAR(quantile(c, 0.5), 1.0, 0.1);  // median; quartiles at median -/+ sigma
  EXPECT_NEAR(quantile(c, 0.25), -1.0, 0.15);
  EXPECT_NEAR(quantile(c, 0.75), 3.0, 0.15);
  std::vector<double> ln = draws("log_normal", {0.5, 0.25}, DType::Float32);
  std::vector<double> logs;
  for (double v : ln) logs.push_back(std::log(v));
  EXPECT_NEAR(mean(logs), 0.5, 6 * 0.25 * se);
  OpRun n = run({}, [](Graph& gr, const std::vector<Node*>&) {
    return gr.call("normal.float_float", {3.0, 2.0, std::vector<int64_t>{kN}});
  });
  EXPECT_EQ(n.out.dtype(), DType::Float32);
  double s = 0;
  for (int64_t i = 0; i < kN; ++i) s += n.out.get_double(i);
  EXPECT_NEAR(s / kN, 3.0, 6 * 2.0 * se);
}

TEST(RandomSamplers, TorchsChecks) {
  Graph g;
  Node* f = g.placeholder("f", {3});
  Node* i = g.placeholder("i", {3}, DType::Int64);
  EXPECT_THROW(g.call("exponential", {f, 0.0}), Error);
  EXPECT_THROW(g.call("exponential", {i}), Error);
  EXPECT_THROW(g.call("geometric", {f, 1.0}), Error);
  EXPECT_EQ(g.call("geometric", {i, 0.5})->dtype(), DType::Int64);
  EXPECT_THROW(g.call("log_normal", {f, 1.0, -2.0}), Error);
  EXPECT_THROW(g.call("cauchy", {i}), Error);
  EXPECT_THROW(g.call("normal.float_float", {0.0, -1.0, std::vector<int64_t>{2}}), Error);
  // the in-place forms exist (inplace_forms.def) and are functionalized
  EXPECT_NE(g.registry().find("cauchy_"), nullptr);
  EXPECT_NE(g.registry().find("log_normal_"), nullptr);
}
