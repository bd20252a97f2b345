// Bad inputs of the aten ops of issue 14 fail when the call is built, naming the cause (glu's
// odd dim, dot's ranks, diagonal's equal dims, gcd on floats, ...), and the result dtypes follow
// torch (integers promote to float for the math ops; gcd stays integral; signbit is bool).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "tests/support/op_check.h"

using namespace stax;
using namespace stax::test;

TEST(OpInputs, BadInputsFailWithTheCause) {
  Graph g;
  Node* x = g.placeholder("x", {2, 3}, DType::Float32);
  Node* i = g.placeholder("i", {2, 3}, DType::Int64);
  Node* v = g.placeholder("v", {3}, DType::Float32);
  EXPECT_TRUE(has(error_of([&] { g.call("glu", {x, 1}); }), "must be even"));
  EXPECT_TRUE(has(error_of([&] { g.call("dot", {x, v}); }), "1D tensors expected"));
  EXPECT_TRUE(has(error_of([&] { g.call("diagonal", {x, 0, 1, -1}); }), "cannot be identical"));
  EXPECT_TRUE(has(error_of([&] { g.call("gcd", {x, x}); }), "integer tensors only"));
  EXPECT_TRUE(has(error_of([&] { g.call("polygamma", {-1, x}); }), "negative n"));
  EXPECT_TRUE(has(error_of([&] { g.call("huber_loss", {x, x, 1, -1.0}); }), "delta"));
  EXPECT_TRUE(has(error_of([&] { g.call("rot90", {x, 1, std::vector<int64_t>{0, 0}}); }),
                  "different"));
  Node* y = g.placeholder("y", {3, 2}, DType::Float32);
  EXPECT_TRUE(has(error_of([&] { g.call("linalg_cross", {y, y}); }), "must have length 3"));
  EXPECT_TRUE(has(error_of([&] { g.call("linalg_cross", {x, v}); }), "same number of dimensions"));
  // 0-d inputs (found by the meta-differential test: the rule read sizes[dim] of a 0-d tensor)
  Node* s = g.placeholder("s", {}, DType::Float64);
  Node* si = g.placeholder("si", {}, DType::Int64);
  EXPECT_TRUE(has(error_of([&] { g.call("linalg_cross", {si, s}); }), "0-d"));
  EXPECT_TRUE(has(error_of([&] { g.call("take", {x, x}); }), "long tensor"));
  EXPECT_TRUE(has(error_of([&] { g.call("narrow_copy", {x, 1, 2, 2}); }), "exceeds dimension"));
  EXPECT_TRUE(has(error_of([&] { g.call("unfold", {x, 1, 4, 1}); }), "maximum size"));
  EXPECT_TRUE(has(error_of([&] { g.call("softshrink", {x, -0.5}); }), "greater or equal to 0"));
  EXPECT_TRUE(has(error_of([&] { g.call("pixel_shuffle", {x, 2}); }), "at least 3"));
  // dtypes: integers promote to float for the math ops; gcd stays integral; signbit is bool
  EXPECT_EQ(g.call("asin", {i})->dtype(), DType::Float32);
  EXPECT_EQ(g.call("atan2", {i, i})->dtype(), DType::Float32);
  EXPECT_EQ(g.call("gcd", {i, i})->dtype(), DType::Int64);
  EXPECT_EQ(g.call("signbit", {x})->dtype(), DType::Bool);
  EXPECT_EQ(g.call("count_nonzero", {x})->dtype(), DType::Int64);
  EXPECT_EQ(g.call("nansum", {i})->dtype(), DType::Int64);
  EXPECT_EQ(g.call("trace", {i})->dtype(), DType::Int64);
  EXPECT_EQ(g.call("diagonal", {x, 1})->shape(), (Shape{2}));
  EXPECT_EQ(g.call("diag_embed", {x, -1})->shape(), (Shape{2, 4, 4}));
  EXPECT_EQ(g.call("unfold", {x, 1, 2, 1})->shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(g.call("bucketize.Tensor", {x, v}, {{"out_int32", true}})->dtype(), DType::Int32);
}
