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
#include "tests/meta/inference_checks.h"

using namespace stax;
using stax::test::call_error;

namespace {

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

// Phase 5 (the last accepts / shape / dtype lines of expected_mismatches.txt).

TEST(InferenceChecks, PreluKernelBackwardIsTorchsKernel) {
  Graph g;
  Node* gi = g.placeholder("gi", {2, 3}, DType::Int64);
  Node* xb = g.placeholder("xb", {2, 3}, DType::Bool);
  Node* w = g.placeholder("w", {2, 3});
  Node* grad = g.placeholder("grad", {3});
  Node* x0 = g.placeholder("x0", Shape{});
  // one TensorIterator over the three: one dtype ("Found dtype Bool but expected Float")
  EXPECT_REJECTS("must have the same dtype", g, "_prelu_kernel_backward", {gi, xb, w});
  // both gradients in the broadcast shape of grad_output, self and weight
  Node* r = g.call("_prelu_kernel_backward", {grad, x0, g.placeholder("w3", {3})});
  ASSERT_TRUE(r->is_tuple());
  EXPECT_EQ(r->tuple_metas()[0].sizes, (Shape{3}));
  EXPECT_EQ(r->tuple_metas()[1].sizes, (Shape{3}));
}

TEST(InferenceChecks, CdistBackwardHasTheBroadcastBatchOfX1) {
  Graph g;
  Node* x1 = g.placeholder("x1", {2, 1});
  Node* x2 = g.placeholder("x2", {2, 1, 2, 1});
  Node* grad = g.placeholder("grad", {2, 1, 2, 2});
  Node* cd = g.placeholder("cd", {2, 1, 2, 2});
  EXPECT_EQ(g.call("_cdist_backward", {grad, x1, x2, 2.0, cd})->shape(), (Shape{2, 1, 2, 1}));
  // an empty x1 column count: zeros of x1's shape, whatever x2's columns (torch's kernel)
  Node* e1 = g.placeholder("e1", {3, 0});
  Node* x23 = g.placeholder("x23", {4, 5});
  EXPECT_EQ(g.call("_cdist_backward", {g.placeholder("g34", {3, 4}), e1, x23, 2.0,
                                       g.placeholder("c34", {3, 4})})->shape(),
            (Shape{3, 0}));
  EXPECT_REJECTS("must have at least 2 dims", g, "_cdist_backward",
                 {grad, g.placeholder("v", {4}), x2, 2.0, cd});
}

TEST(InferenceChecks, AsStridedStaysInsideTheStorage) {
  Graph g;
  Node* x = g.placeholder("x", {3}, DType::UInt8);
  // torch: "sizes [3, 2], strides [2, 2], storage offset 4 ... requiring a storage size of 11 are
  // out of bounds for storage of size 3"
  EXPECT_REJECTS("out of bounds for the storage of %x (3 elements)", g, "as_strided",
                 {x, Arg(Shape{3, 2}), Arg(Shape{2, 2}), int64_t{4}});
  EXPECT_REJECTS("require a storage of 4 elements", g, "as_strided",
                 {x, Arg(Shape{2}), Arg(Shape{3})});
  EXPECT_EQ(call_error(g, "as_strided", {x, Arg(Shape{2}), Arg(Shape{2})}), "");
  EXPECT_EQ(call_error(g, "as_strided", {x, Arg(Shape{0, 5}), Arg(Shape{9, 9}), int64_t{7}}),
            "");  // an empty view reaches nothing
  // through views, the base's storage: a slice of 2 of x's 6 elements may view all 6
  Node* big = g.placeholder("big", {6});
  Node* s = g.call("slice.Tensor", {big, 0, 0, 2});
  EXPECT_EQ(call_error(g, "as_strided", {s, Arg(Shape{6}), Arg(Shape{1}), int64_t{0}}), "");
  EXPECT_REJECTS("storage of %big (6 elements)", g, "as_strided",
                 {s, Arg(Shape{7}), Arg(Shape{1}), int64_t{0}});
}

TEST(InferenceChecks, LogsumexpOfNoDimsWithoutKeepdim) {
  Graph g;
  Node* x = g.placeholder("x", {2, 2});
  EXPECT_REJECTS("dim=[] with keepdim=False", g, "logsumexp", {x, Arg(Shape{}), false});
  EXPECT_EQ(g.call("logsumexp", {x, Arg(Shape{}), true})->shape(), (Shape{1, 1}));
  EXPECT_EQ(g.call("logsumexp", {x, Arg(Shape{0, 1}), false})->shape(), Shape{});
}

TEST(InferenceChecks, AdaptiveAvgPoolTakesOneSizePerSpatialDim) {
  Graph g;
  Node* x = g.placeholder("x", {3, 3, 3, 1}, DType::Float64);
  EXPECT_REJECTS("output_size must be 2", g, "_adaptive_avg_pool2d", {x, Arg(Shape{1})});
  EXPECT_REJECTS("output_size must be 2", g, "adaptive_avg_pool2d", {x, Arg(Shape{1, 1, 1})});
  EXPECT_EQ(g.call("_adaptive_avg_pool2d", {x, Arg(Shape{1, 1})})->shape(), (Shape{3, 3, 1, 1}));
}

TEST(InferenceChecks, GeluBackwardGradientOneDnnReads) {
  Graph g;
  Node* x32 = g.placeholder("x32", {3});
  Node* x64 = g.placeholder("x64", {3}, DType::Float64);
  Node* g64 = g.placeholder("g64", {3}, DType::Float64);
  Node* gi = g.placeholder("gi", {3}, DType::Int64);
  // torch's CPU kernel: "itensor_view_from_dense expects float/bfloat16/half/int8/fp8 tensor"
  EXPECT_REJECTS("must be float32, float16, bfloat16 or 8-bit", g, "gelu_backward", {g64, x32});
  EXPECT_REJECTS("must be float32, float16, bfloat16 or 8-bit", g, "gelu_backward", {gi, x32});
  EXPECT_EQ(call_error(g, "gelu_backward", {g64, x32}, {{"approximate", Arg("tanh")}}), "");
  EXPECT_REJECTS("approximate argument must be either none or tanh", g, "gelu_backward",
                 {x32, x32}, {{"approximate", Arg("bad")}});
  EXPECT_EQ(g.call("gelu_backward", {gi, x64})->dtype(), DType::Float64);
}

TEST(InferenceChecks, DistPromotesAndMaskedFillBroadcasts) {
  Graph g;
  Node* f = g.placeholder("f", {3, 2});
  Node* i = g.placeholder("i", {3, 2}, DType::Int64);
  Node* b = g.placeholder("b", {3, 2}, DType::Bool);
  EXPECT_EQ(g.call("dist", {f, i})->dtype(), DType::Float32);  // torch: norm(self - other)
  EXPECT_REJECTS("subtraction with a bool tensor", g, "dist", {f, b});
  EXPECT_REJECTS("expected floating-point inputs", g, "dist", {i, i});
  Node* s = g.placeholder("s", {1, 1}, DType::Float64);
  Node* mask = g.placeholder("mask", {2, 4, 1}, DType::Bool);
  EXPECT_EQ(g.call("masked_fill.Scalar", {s, mask, int64_t{-1}})->shape(), (Shape{2, 4, 1}));
}

TEST(InferenceChecks, PointwiseLossBackwardsAreTorchsKernels) {
  Graph g;
  Node* g0 = g.placeholder("g0", Shape{}, DType::BFloat16);
  Node* x0 = g.placeholder("x0", Shape{}, DType::BFloat16);
  Node* t2 = g.placeholder("t2", {2}, DType::Int64);
  Node* i8 = g.placeholder("i8", {2, 1}, DType::Int8);
  Node* b21 = g.placeholder("b21", {2, 1}, DType::BFloat16);
  // the broadcast of grad_output, self and target, in self's dtype
  Node* r = g.call("mse_loss_backward", {g0, x0, t2, int64_t{2}});
  EXPECT_EQ(r->shape(), (Shape{2}));
  EXPECT_EQ(r->dtype(), DType::BFloat16);
  Node* g64 = g.placeholder("g64", Shape{}, DType::Float64);
  EXPECT_EQ(g.call("mse_loss_backward", {g64, x0, t2, int64_t{2}})->dtype(), DType::BFloat16);
  // "result type BFloat16 can't be cast to the desired output type Char"
  EXPECT_REJECTS("can't be cast to the desired output type int8", g, "mse_loss_backward",
                 {i8, i8, b21, int64_t{0}});
  Node* u = g.placeholder("u", {4, 2, 2}, DType::UInt8);
  Node* x1 = g.placeholder("x1", {1}, DType::Float64);
  Node* t = g.placeholder("t", {4, 2, 2}, DType::Int64);
  EXPECT_EQ(g.call("smooth_l1_loss_backward", {u, x1, t, int64_t{0}, 1e-5})->shape(),
            (Shape{4, 2, 2}));
  EXPECT_REJECTS("reduction must be", g, "smooth_l1_loss_backward", {u, x1, t, int64_t{3}, 1.0});
}

TEST(InferenceChecks, AnEmptyIndexIsNotChecked) {
  Graph g;
  // torch checks an index's dtype and rank only when it has elements
  Node* s = g.placeholder("s", {0, 4}, DType::UInt8);
  Node* h = g.placeholder("h", {0, 4}, DType::Float16);
  EXPECT_EQ(call_error(g, "gather", {s, int64_t{1}, h}), "");
  Node* h1 = g.placeholder("h1", {1, 4}, DType::Float16);
  EXPECT_REJECTS("index must be an int64 or int32 tensor", g, "gather", {s, int64_t{1}, h1});
  Node* x = g.placeholder("x", {3, 2});
  Node* e = g.placeholder("e", {3, 0, 2}, DType::Int64);
  Node* i3 = g.placeholder("i3", {3, 1, 2}, DType::Int64);
  Node* src = g.placeholder("src", {2, 4, 3});
  EXPECT_EQ(call_error(g, "scatter_add", {x, int64_t{-1}, e, src}), "");
  EXPECT_REJECTS("must have the same number of dimensions", g, "scatter_add",
                 {x, int64_t{-1}, i3, src});
}

TEST(InferenceChecks, BatchNormRunningStatisticsInTrainingHaveTheParameterDtype) {
  Graph g;
  Node* x = g.placeholder("x", {3, 4, 2}, DType::Float64);
  Node* w = g.placeholder("w", {4}, DType::Float64);
  Node* rm = g.placeholder("rm", {4}, DType::BFloat16);
  Node* rv = g.placeholder("rv", {4}, DType::Float64);
  // torch's kernel: "expected scalar type Double but found BFloat16"
  EXPECT_REJECTS("running_mean (bfloat16) must have the input's dtype (float64)", g, "batch_norm",
                 {x, w, Arg(), rm, rv, true, 0.1, 1e-5, false});
}

TEST(InferenceChecks, IndexOpsOfAZeroDimSelfAndReshapeAliasSizes) {
  Graph g;
  Node* s = g.placeholder("s", Shape{}, DType::Int64);
  Node* idx4 = g.placeholder("idx4", {4}, DType::Int64);
  Node* idx1 = g.placeholder("idx1", {1}, DType::Int64);
  // torch: "Dimension specified as 0 but tensor has no dimensions"
  Kwargs no_self{{"include_self", Arg(false)}};
  EXPECT_REJECTS("a 0-d self takes one index", g, "index_reduce",
                 {s, int64_t{-1}, idx4, s, Arg("prod")}, no_self);
  EXPECT_EQ(call_error(g, "index_reduce", {s, int64_t{0}, idx1, s, Arg("prod")}), "");
  Node* x = g.placeholder("x", {2, 1}, DType::BFloat16);
  // torch takes the sizes as they are: -1 overflows its element count
  EXPECT_REJECTS("has a negative entry", g, "_reshape_alias",
                 {x, Arg(Shape{2, -1}), Arg(Shape{4, 4})});
  Node* scores = g.placeholder("scores", {1, 5}, DType::Float64);
  Node* t = g.placeholder("t", {1}, DType::Int64);
  EXPECT_REJECTS("reduction must be", g, "multi_margin_loss",
                 {scores, t, 2.0, int64_t{3}, Arg(), int64_t{3}});
}

TEST(InferenceChecks, ElementwiseBackwardsBroadcastAndEmbeddingRowsFlatten) {
  Graph g;
  Node* grad = g.placeholder("grad", {2, 1, 1, 1});
  Node* x = g.placeholder("x", {2, 4, 3, 3}, DType::Float16);
  // torch's binary backward kernels broadcast the gradient with self
  Node* r = g.call("hardshrink_backward", {grad, x, 2.0});
  EXPECT_EQ(r->shape(), (Shape{2, 4, 3, 3}));
  EXPECT_EQ(r->dtype(), DType::Float32);
  Node* wide = g.placeholder("wide", {2, 5, 3, 3});
  EXPECT_REJECTS("broadcast", g, "softshrink_backward", {wide, x, 0.5});
  // embedding_dense_backward views the gradient as (indices.numel(), its last dim)
  Node* g13 = g.placeholder("g13", {1, 3}, DType::Float64);
  Node* idx = g.placeholder("idx", {1, 1}, DType::Int64);
  EXPECT_EQ(g.call("embedding_dense_backward", {g13, idx, int64_t{2}, int64_t{0}, false})->shape(),
            (Shape{2, 3}));
  Node* g23 = g.placeholder("g23", {2, 3}, DType::Float64);
  EXPECT_REJECTS("one row of its last dim per index", g, "embedding_dense_backward",
                 {g23, idx, int64_t{2}, int64_t{0}, false});
}

TEST(InferenceChecks, CeilModePoolingKeepsAWindowThatStartsInside) {
  Graph g;
  // torch's pooling_output_shape rounds toward negative infinity: a dilated kernel (span 5) over
  // 4 elements in ceil mode still has one window, starting at 0
  Node* x = g.placeholder("x", {3, 4}, DType::Int64);
  Node* r = g.call("max_pool1d_with_indices", {x, Arg(Shape{3}), Arg(Shape{2}), Arg(Shape{0}),
                                               Arg(Shape{2}), true});
  EXPECT_EQ(r->tuple_metas()[0].sizes, (Shape{3, 1}));
  EXPECT_REJECTS("would be empty", g, "max_pool1d_with_indices",
                 {x, Arg(Shape{3}), Arg(Shape{2}), Arg(Shape{0}), Arg(Shape{2}), false});
  // a transposed convolution whose output is empty names that, not the kernel
  Node* in = g.placeholder("in", {2, 1, 3, 2, 2});
  Node* w = g.placeholder("w", {1, 2, 1, 1, 1});
  EXPECT_REJECTS("the output would be empty", g, "conv_transpose3d.input",
                 {in, w, Arg(), Arg(Shape{1, 1, 1}), Arg(Shape{1, 1, 1})});
}
