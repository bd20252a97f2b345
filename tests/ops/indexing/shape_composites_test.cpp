// The shape, indexing and reduction Composite ops (diagonal, trace, diag, take, rot90, unfold,
// narrow_copy, index_fill, nansum, count_nonzero, median, logcumsumexp, bucketize, linspace)
// against results worked out by hand; each also compiled on cpu_cpp and compared bit for bit
// with the interpreter.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "tests/support/op_check.h"

using namespace stax;
using namespace stax::test;

TEST(ShapeComposites, MatchHandResults) {
  // diagonal / trace / diag / diag_embed on a 3 x 4 matrix 0..11
  std::vector<double> m(12);
  for (int i = 0; i < 12; ++i) m[i] = i;
  Tensor t = Tensor::from_vector({3, 4}, m, DType::Float64);
  expect_values(run({t}, op("diagonal", {1})).out, {1, 6, 11}, 0, "diagonal+1");
  expect_values(run({t}, op("diagonal", {-1})).out, {4, 9}, 0, "diagonal-1");
  expect_values(run({t}, op("diagonal", {5})).out, {}, 0, "diagonal empty");
  expect_values(run({t}, op("trace")).out, {0 + 5 + 10}, 0, "trace");
  expect_values(run({vec({1, 2})}, op("diag", {1})).out, {0, 1, 0, 0, 0, 2, 0, 0, 0}, 0, "diag");
  Tensor idx = Tensor::from_vector({3}, std::vector<double>{-1, 0, 5}, DType::Int64);
  expect_values(run({t, idx}, op("take", {}, {}, 2)).out, {11, 0, 5}, 0, "take");
  expect_values(run({t}, op("rot90")).out, {3, 7, 11, 2, 6, 10, 1, 5, 9, 0, 4, 8}, 0, "rot90");
  expect_values(run({t}, op("unfold", {1, 2, 2})).out, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 0,
                "unfold");
  expect_values(run({t}, op("narrow_copy", {1, 1, 2})).out, {1, 2, 5, 6, 9, 10}, 0, "narrow");
  Tensor fill = Tensor::from_vector({2}, std::vector<double>{0, -1}, DType::Int64);
  expect_values(run({t, fill}, [](Graph& g, const std::vector<Node*>& x) {
                  return g.call("index_fill.int_Scalar", {x[0], 1, x[1], -5.0});
                }).out,
                {-5, 1, 2, -5, -5, 5, 6, -5, -5, 9, 10, -5}, 0, "index_fill");
  // nansum / count_nonzero / logcumsumexp / median
  Tensor n = vec({1.0, kNaN, 2.0, 0.0});
  expect_values(run({n}, op("nansum")).out, {3}, 0, "nansum");
  expect_values(run({n}, op("count_nonzero")).out, {3}, 0, "count_nonzero");
  expect_values(run({n}, op("median")).out, {kNaN}, 0, "median with NaN");
  expect_values(run({n}, op("nanmedian")).out, {1}, 0, "nanmedian");
  expect_values(run({vec({3.0, -1.0, 2.0, 7.0})}, op("median")).out, {2}, 0, "median");
  Tensor l = vec({0.5, -1.0, 2.0});
  double c1 = std::log(std::exp(0.5) + std::exp(-1.0));
  expect_values(run({l}, op("logcumsumexp", {0})).out,
                {0.5, c1, std::log(std::exp(0.5) + std::exp(-1.0) + std::exp(2.0))}, 1e-15,
                "logcumsumexp");
  // bucketize / searchsorted: NaN values go last (torch's comparisons)
  Tensor bounds = vec({1.0, 3.0, 5.0});
  Tensor vals = vec({0.0, 1.0, 4.0, 5.0, 9.0, kNaN});
  expect_values(run({vals, bounds}, op("bucketize.Tensor", {}, {}, 2)).out, {0, 0, 2, 2, 3, 3}, 0,
                "bucketize");
  expect_values(run({vals, bounds}, op("bucketize.Tensor", {}, {{"right", true}}, 2)).out,
                {0, 1, 2, 3, 3, 3}, 0, "bucketize right");
  // searchsorted with sorter: the sequence sorted through the permutation (torch's
  // sorted_sequence[sorter]); rows of a 2-D sequence each with their own permutation; a sorter
  // of another dtype or shape is rejected as torch does
  Tensor unsorted = vec({5.0, 1.0, 3.0});
  Tensor perm = Tensor::from_vector({3}, std::vector<double>{1, 2, 0}, DType::Int64);
  auto sorted_by = [](Kwargs kw) {
    return [kw](Graph& g, const std::vector<Node*>& x) {
      Kwargs k = kw;
      k.push_back({"sorter", x[2]});
      return g.call("searchsorted.Tensor", {x[0], x[1]}, k);
    };
  };
  expect_values(run({unsorted, vals, perm}, sorted_by({})).out, {0, 0, 2, 2, 3, 3}, 0,
                "searchsorted sorter");
  expect_values(run({unsorted, vals, perm}, sorted_by({{"side", std::string("right")}})).out,
                {0, 1, 2, 3, 3, 3}, 0, "searchsorted sorter right");
  Tensor rows = Tensor::from_vector({2, 3}, std::vector<double>{5, 1, 3, 2, 8, 4}, DType::Float64);
  Tensor row_perm =
      Tensor::from_vector({2, 3}, std::vector<double>{1, 2, 0, 0, 2, 1}, DType::Int64);
  Tensor row_vals = Tensor::from_vector({2, 2}, std::vector<double>{4, 0, 4, 9}, DType::Float64);
  expect_values(run({rows, row_vals, row_perm}, sorted_by({})).out, {2, 0, 1, 3}, 0,
                "searchsorted sorter rows");
  Tensor perm32 = Tensor::from_vector({3}, std::vector<double>{1, 2, 0}, DType::Int32);
  EXPECT_THROW(run({unsorted, vals, perm32}, sorted_by({})), Error);
  EXPECT_THROW(run({rows, row_vals, perm}, sorted_by({})), Error);
  // linspace: torch's two halves, in float32
  OpRun ls = run({}, [](Graph& g, const std::vector<Node*>&) {
    return g.call("linspace", {-1.0, 2.0, 7});
  });
  expect_values(ls.out, {-1, -0.5, 0, 0.5, 1, 1.5, 2}, 0, "linspace");
}
