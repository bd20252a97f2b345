// Must-fail tests of the checks the meta-differential test (meta_differential.py) found missing:
// each call is one torch rejects (its meta function or its CPU kernel), and Stax must reject it
// when the graph is built, naming the op and the cause. They run without torch, so CI keeps them
// where the differential test skips; the differential test covers the same checks over random
// cases when torch is there.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/graph/op_registry.h"
#include "core/support/error.h"

using namespace stax;

namespace {

// The message of the stax::Error the call throws ("" when it builds).
std::string call_error(Graph& g, std::string_view op, std::vector<Arg> args, Kwargs kw = {}) {
  try {
    g.call(op, std::move(args), std::move(kw));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_REJECTS(msg_piece, ...)                                         \
  do {                                                                         \
    std::string m = call_error(__VA_ARGS__);                                   \
    EXPECT_NE(m.find(msg_piece), std::string::npos) << "message: '" << m << "'"; \
  } while (0)

}  // namespace

TEST(InferenceChecks, FillValuesMustFitTheDtype) {
  Graph g;
  Node* u8 = g.placeholder("u8", {2}, DType::UInt8);
  Node* mask = g.placeholder("mask", {2}, DType::Bool);
  EXPECT_REJECTS("fill_value = 256 cannot be converted to uint8", g, "full",
                 {Arg(Shape{2}), int64_t{256}}, {{"dtype", Arg(DType::UInt8)}});
  EXPECT_REJECTS("fill_value = 100000.0 cannot be converted to float16", g, "full",
                 {Arg(Shape{2}), 1e5}, {{"dtype", Arg(DType::Float16)}});
  EXPECT_REJECTS("value = 300 cannot be converted to uint8", g, "masked_fill.Scalar",
                 {u8, mask, int64_t{300}});
  EXPECT_REJECTS("cannot be converted to uint8", g, "threshold", {u8, int64_t{1}, 1000.0});
  // torch's two's complement rule: -1 fits an unsigned byte (255), and infinity a float.
  EXPECT_EQ(call_error(g, "full", {Arg(Shape{2}), int64_t{-1}}, {{"dtype", Arg(DType::UInt8)}}),
            "");
  EXPECT_EQ(call_error(g, "full", {Arg(Shape{2}), HUGE_VAL}, {{"dtype", Arg(DType::Float16)}}),
            "");
}

TEST(InferenceChecks, ConvolutionBiasKernelAndOutputPadding) {
  Graph g;
  Node* x = g.placeholder("x", {1, 2, 8, 8});
  Node* w = g.placeholder("w", {3, 2, 3, 3});
  Node* b64 = g.placeholder("b64", {3}, DType::Float64);
  Node* w0 = g.placeholder("w0", {3, 2, 3, 0});
  Node* wt = g.placeholder("wt", {2, 3, 2, 2});
  EXPECT_REJECTS("input (float32) and bias (float64) must have the same dtype", g, "conv2d",
                 {x, w, b64});
  EXPECT_REJECTS("kernel size should be greater than zero", g, "conv2d", {x, w0});
  EXPECT_REJECTS("output padding must be smaller than either stride or dilation", g,
                 "conv_transpose2d.input",
                 {x, wt, Arg(), Arg(Shape{1, 1}), Arg(Shape{0, 0}), Arg(Shape{0, 1})});
}

TEST(InferenceChecks, DuplicateAndEmptyReductionDims) {
  Graph g;
  Node* x = g.placeholder("x", {2, 3});
  Node* s = g.placeholder("s", Shape{});
  Node* e = g.placeholder("e", {0, 3});
  EXPECT_REJECTS("appears multiple times", g, "mean.dim", {x, Arg(Shape{1, -1})});
  EXPECT_REJECTS("appears multiple times", g, "sum.dim_IntList", {s, Arg(Shape{0, -1})});
  EXPECT_REJECTS("appears multiple times", g, "squeeze.dims", {x, Arg(Shape{0, -2})});
  EXPECT_REJECTS("zero-size dimension", g, "amax", {e, Arg(Shape{0})});
  EXPECT_EQ(call_error(g, "amax", {e, Arg(Shape{1})}), "");  // reduces the non-empty dim only
}

TEST(InferenceChecks, PoolingNeedsNonEmptyChannels) {
  Graph g;
  Node* x = g.placeholder("x", {1, 0, 4, 4});
  Node* ok = g.placeholder("ok", {0, 2, 4, 4});
  EXPECT_REJECTS("non-zero size for non-batch dimensions", g, "max_pool2d",
                 {x, Arg(Shape{2, 2})});
  EXPECT_EQ(call_error(g, "max_pool2d", {ok, Arg(Shape{2, 2})}), "");  // an empty batch is fine
}

TEST(InferenceChecks, NormParametersTakeTheInputsDtypeOrFloat32) {
  Graph g;
  Node* x = g.placeholder("x", {2, 4}, DType::BFloat16);
  Node* w32 = g.placeholder("w32", {4});
  Node* w64 = g.placeholder("w64", {4}, DType::Float64);
  Node* b16 = g.placeholder("b16", {4}, DType::BFloat16);
  EXPECT_REJECTS("weight (float64) must have the input's dtype (bfloat16)", g, "layer_norm",
                 {x, Arg(Shape{4}), w64});
  EXPECT_REJECTS("all parameters float32", g, "layer_norm", {x, Arg(Shape{4}), w32, b16});
  EXPECT_EQ(call_error(g, "layer_norm", {x, Arg(Shape{4}), w32, w32}), "");  // mixed dtype
}

TEST(InferenceChecks, AlphaBoolAndNegativeIntegerPowers) {
  Graph g;
  Node* i = g.placeholder("i", {2}, DType::Int32);
  EXPECT_REJECTS("bool alpha is only supported for bool results", g, "add.Tensor", {i, i},
                 {{"alpha", Arg(true)}});
  EXPECT_REJECTS("integers to negative integer powers are not allowed", g, "pow.Tensor_Scalar",
                 {i, int64_t{-1}});
  EXPECT_EQ(call_error(g, "pow.Tensor_Scalar", {i, -1.0}), "");  // a float power: float result
}
