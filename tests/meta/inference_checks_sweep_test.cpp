// Must-fail tests of the checks the longer meta-differential sweep (meta_differential.py
// --seeds 8-23) found missing: each rejected call is one torch rejects (its meta function or its
// CPU kernel), mostly empty tensors the CI seeds never draw; Stax must reject it when the graph
// is built, naming the op and the cause. The accepted calls next to them are the edge torch
// still takes. Like inference_checks_test.cpp, they run without torch.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/graph/op_registry.h"
#include "core/support/error.h"
#include "tests/meta/inference_checks.h"

using namespace stax;
using stax::test::call_error;

namespace {

Node* index(Graph& g, const char* name, Shape s) { return g.placeholder(name, s, DType::Int64); }

}  // namespace

TEST(InferenceChecks, ConvolutionInputsMayBeEmptyOnlyInBatchOrChannels) {
  Graph g;
  // torch: "Only zero batch or zero channel inputs are supported" (padding makes the output
  // non-empty, so the output check does not catch it)
  Node* x = g.placeholder("x", {1, 2, 5, 0});
  Node* w = g.placeholder("w", {4, 1, 3, 1});
  std::vector<Arg> rest{Arg(), Arg(Shape{1, 2}), Arg(Shape{0, 1}), Arg(Shape{1, 1}), int64_t{2}};
  std::vector<Arg> args{x, w};
  args.insert(args.end(), rest.begin(), rest.end());
  EXPECT_REJECTS("only zero batch or zero channel inputs", g, "conv2d", args);
  Node* x0 = g.placeholder("x0", {0, 2, 5, 0});  // an empty batch is fine
  args[0] = x0;
  EXPECT_EQ(call_error(g, "conv2d", args), "");
  // torch: "Given groups=1, expected weight to be at least 1 at dimension 0"
  Node* x1 = g.placeholder("x1", {1, 2, 2}, DType::Float64);
  Node* w0 = g.placeholder("w0", {0, 2, 1}, DType::Float64);
  EXPECT_REJECTS("expected weight to be at least 1 at dimension 0", g, "conv1d", {x1, w0});
  // torch's transposed kernels: "non-empty 2D or 4D weight tensor expected"
  Node* x2 = g.placeholder("x2", {1, 2, 4}, DType::Float64);
  Node* wt = g.placeholder("wt", {2, 0, 2}, DType::Float64);
  EXPECT_REJECTS("must be non-empty", g, "conv_transpose1d", {x2, wt});
  // zero input channels (and weights without input channels) are fine
  Node* xc = g.placeholder("xc", {1, 0, 3});
  EXPECT_EQ(call_error(g, "conv1d", {xc, g.placeholder("wc", {4, 0, 1})}), "");
}

TEST(InferenceChecks, IndicesIntoAnEmptyDimAreOutOfRange) {
  Graph g;
  Node* e = g.placeholder("e", {0}, DType::Int32);
  Node* i1 = index(g, "i1", {1});
  Node* none = index(g, "none", {0});
  EXPECT_REJECTS("which is empty", g, "index_select", {e, int64_t{-1}, i1});
  EXPECT_EQ(call_error(g, "index_select", {e, int64_t{0}, none}), "");
  Node* table = g.placeholder("table", {0, 3});
  EXPECT_REJECTS("empty weight", g, "embedding", {table, index(g, "ids", {4, 3})});
  Node* h = g.placeholder("h", {0}, DType::Float16);
  EXPECT_REJECTS("which is empty", g, "index_copy",
                 {h, int64_t{0}, i1, g.placeholder("src", {1}, DType::Float16)});
  Node* u = g.placeholder("u", {2, 0, 3}, DType::UInt8);
  EXPECT_REJECTS("into an empty tensor", g, "put",
                 {u, index(g, "pi", {4, 2, 1}), g.placeholder("ps", {4, 2, 1}, DType::UInt8)});
  // torch's scatter shape check: the index no larger than self apart from dim
  Node* s = g.placeholder("s", {1, 2, 0}, DType::Int32);
  EXPECT_REJECTS("larger than self", g, "scatter_reduce.two",
                 {s, int64_t{1}, index(g, "si", {1, 2, 1}),
                  g.placeholder("ss", {1, 2, 1}, DType::Int32), Arg("amin")});
}

TEST(InferenceChecks, EmptyNormsAndNormalizations) {
  Graph g;
  Node* a = g.placeholder("a", {3, 2, 4, 1}, DType::Float64);
  Node* b = g.placeholder("b", {3, 2, 4, 0}, DType::Float64);
  // torch: "linalg.vector_norm cannot compute the -1.5 norm on an empty tensor"
  EXPECT_REJECTS("norm of an empty difference", g, "dist", {a, b, -1.5});
  EXPECT_EQ(call_error(g, "dist", {a, b, 2.0}), "");
  // torch's native_group_norm: "Expected HxW to be greater than 0, got 0"
  Node* x = g.placeholder("x", {3, 4, 0}, DType::BFloat16);
  Node* w = g.placeholder("w", {4}, DType::BFloat16);
  EXPECT_REJECTS("non-empty spatial size", g, "group_norm", {x, int64_t{2}, w, w});
  // torch's batch_norm CPU kernel in training: "input tensor must have at least one element"
  Node* y = g.placeholder("y", {3, 4, 0}, DType::Float64);
  Node* p = g.placeholder("p", {4}, DType::Float64);
  EXPECT_REJECTS("at least one element in training", g, "native_batch_norm",
                 {y, p, p, p, p, true, 0.1, 0.0});
  EXPECT_EQ(call_error(g, "native_batch_norm", {y, p, p, p, p, false, 0.1, 0.0}), "");
}

TEST(InferenceChecks, PoolingArgumentsTorchsKernelsCheck) {
  Graph g;
  // torch: "adaptive_max_pool2d(): internal error: output_size.size() must be 2"
  Node* x = g.placeholder("x", {4, 1, 1});
  EXPECT_REJECTS("output_size must have 2 entries", g, "adaptive_max_pool2d", {x, Arg(Shape{1})});
  // max_unpool: only the batch dim may be empty; max_unpool3d's strides are positive
  Node* e = g.placeholder("e", {1, 0, 1, 2}, DType::Float64);
  EXPECT_REJECTS("non-zero size for non-batch dimensions", g, "max_unpool2d",
                 {e, index(g, "ei", {1, 0, 1, 2}), Arg(Shape{1, 3})});
  Node* v = g.placeholder("v", {1, 2, 2, 2}, DType::Int8);
  EXPECT_REJECTS("strides should be greater than zero", g, "max_unpool3d",
                 {v, index(g, "vi", {1, 2, 2, 2}), Arg(Shape{1, 3, 3}), Arg(Shape{-1, 3, 3}),
                  Arg(Shape{0, 2, 0})});
  // max pools pad at most half the kernel itself, dilated or not (torch's pool2d_shape_check)
  Node* p = g.placeholder("p", {1, 2, 8, 8});
  EXPECT_REJECTS("at most half of the kernel size", g, "max_pool2d",
                 {p, Arg(Shape{3, 3}), Arg(Shape{1, 1}), Arg(Shape{2, 2}), Arg(Shape{3, 3})});
  // adaptive average pools check the spatial dims only: empty channels are fine
  Node* ec = g.placeholder("ec", {2, 0, 4, 4});
  EXPECT_EQ(call_error(g, "_adaptive_avg_pool2d", {ec, Arg(Shape{2, 2})}), "");
  // im2col: "Expected 3D or 4D (batch mode) tensor ... non-zero dimensions"
  Node* c0 = g.placeholder("c0", {1, 0, 3, 3}, DType::Float16);
  EXPECT_REJECTS("non-zero dimensions", g, "im2col",
                 {c0, Arg(Shape{1, 1}), Arg(Shape{1, 1}), Arg(Shape{3, 1}), Arg(Shape{1, 2})});
}

TEST(InferenceChecks, ScalarBoundsOfIntegerTensors) {
  Graph g;
  Node* u = g.placeholder("u", Shape{}, DType::UInt8);
  // torch's hardtanh of an integer tensor is clamp(int(min_val), int(max_val)): max -1 < 0
  EXPECT_REJECTS("outside the representable range of uint8", g, "hardtanh", {u, int64_t{2}, -1.5});
  EXPECT_EQ(call_error(g, "hardtanh", {u, int64_t{0}, 6.5}), "");
  // addcmul converts value to the result dtype, checked
  Node* a = g.placeholder("a", {2}, DType::UInt8);
  Node* b = g.placeholder("b", {1}, DType::UInt8);
  EXPECT_REJECTS("cannot be converted to uint8", g, "addcmul", {a, a, b}, {{"value", Arg(-1.5)}});
  EXPECT_EQ(call_error(g, "addcmul", {a, a, b}, {{"value", Arg(int64_t{-1})}}), "");
}

TEST(InferenceChecks, AttentionHeadsDimsTorchReads) {
  Graph g;
  // torch reads the heads dim (-3) with enable_gqa
  Node* q = g.placeholder("q", {4, 2}, DType::BFloat16);
  EXPECT_REJECTS("enable_gqa needs a heads dim", g, "scaled_dot_product_attention",
                 {q, q, q, Arg(), 0.0, false}, {{"enable_gqa", Arg(true)}});
  // the flash form's backward lays out 4-D gradients only
  Node* t = g.placeholder("t", {3, 3, 1}, DType::BFloat16);
  Node* lse = g.placeholder("lse", {1, 3, 1}, DType::Int32);
  EXPECT_REJECTS("must be 4-D", g, "_scaled_dot_product_flash_attention_for_cpu_backward",
                 {t, t, t, t, t, lse, 0.0, false});
}

TEST(InferenceChecks, GluBackwardTakesOneDtype) {
  Graph g;
  // torch's kernel: "Found dtype Half but expected Float"
  Node* grad = g.placeholder("grad", {2}, DType::Float16);
  Node* x = g.placeholder("x", {4});
  EXPECT_REJECTS("must have self's dtype", g, "glu_backward", {grad, x, int64_t{-1}});
  EXPECT_EQ(call_error(g, "glu_backward", {g.placeholder("g32", {2}), x, int64_t{-1}}), "");
}
