// Geometry of the neural-network ops (convolution, pooling, padding, upsampling) shared by their
// shape inference (core/ops/nn/schemas.cpp), decompositions (core/ops/nn/decompositions.cpp),
// interpreter kernels, derivative rules and lowering: one copy of each size formula.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/graph/arg.h"
#include "core/graph/graph.h"

namespace stax::nn {

using Ints = std::vector<int64_t>;

// An int-list argument of an op over `n` spatial dims: a list of n ints, or one int (or a 1-list)
// repeated n times. Throws Error("shape", where, ...) naming `what` otherwise, or when an entry is
// below `min_value`.
Ints expand_list(const Arg& a, size_t n, const std::string& what, const std::string& where,
                 int64_t min_value = 0);

// OpDef::draws_random of the attention ops (scaled_dot_product_attention and its aten forms):
// they draw (the dropout of their decomposition) only when dropout_p is not 0.
bool attention_draws_random(const Node& n);

// convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
struct ConvParams {
  Ints stride, padding, dilation, output_padding;
  bool transposed = false;
  int64_t groups = 1;
  size_t spatial() const { return stride.size(); }
};

// Reads the parameters of a convolution.default call over `spatial` dims from its arguments
// (`get(param)`), validating them.
ConvParams conv_params(const std::function<const Arg&(const char*)>& get, size_t spatial,
                       const std::string& where);

// torch's checks of a convolution's empty tensors (check_shape_forward and its backend choice):
// weight.size(0) is at least `groups`; only the batch or the channel dim of the (batched) input
// may be empty; a transposed convolution's weight is non-empty. Throws Error("shape", where, ...).
void check_conv_empty_dims(const Shape& x, const Shape& w, int64_t groups, bool transposed,
                           const std::string& where);

// Output extent of one spatial dim: (L + 2p - d(K-1) - 1) / s + 1, or for a transposed
// convolution (L-1) s - 2p + d(K-1) + output_padding + 1.
int64_t conv_out_size(int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t dilation,
                      bool transposed, int64_t output_padding);

// Output extent of one pooled dim (torch's pooling_output_shape): floor or ceil of
// (L + 2p - d(K-1) - 1) / s, plus 1; with ceil_mode the last window must start inside the input
// or its left padding.
int64_t pool_out_size(int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t dilation,
                      bool ceil_mode);

// A pooling input over `spatial` dims: (C, spatial...) or (N, C, spatial...), empty only in the
// batch dim; torch's adaptive average pools check the spatial dims only (1-D, 2-D), or every dim
// after the first (3-D, batched or not). Throws Error("shape", where, ...).
void check_pool_input(const Shape& x, size_t spatial, bool adaptive, const std::string& where);

// Pooling parameters over `spatial` dims: kernel_size, stride (empty: = kernel_size), padding,
// dilation (1 when the op has none); validated (padding at most half the kernel, undilated).
struct PoolParams {
  Ints kernel, stride, padding, dilation;
  bool ceil_mode = false;
};
PoolParams pool_params(const std::function<const Arg&(const char*)>& get, size_t spatial,
                       bool has_dilation, const std::string& where);

// Output extents of a pooling of an input whose last p.kernel.size() dims are `in` (pool_out_size).
Ints pool_out_sizes(const Shape& x, const PoolParams& p);

// The windows of a pooling (core/ops/nn/decompositions.cpp): x's last spatial dims padded by
// p.padding with pad_value (plus what ceil_mode's last window needs, with extra_value), then one
// strided slice per kernel offset, in row-major kernel order; each has the output's shape.
std::vector<Node*> pool_windows(Graph& g, Node* x, const PoolParams& p, double pad_value,
                                double extra_value);

// The divisor of avg_poolNd call `n` over x: a number (divisor_override, or the kernel's size when
// every window lies inside input + padding) or, when windows differ, a map over the output's
// spatial dims (null map: use `scalar`).
struct AvgDivisor {
  Node* map = nullptr;
  double scalar = 1;
};
AvgDivisor avg_pool_divisor(Graph& g, const Node& n, Node* x, const PoolParams& p);

// The loss reductions (torch's at::Reduction): the int values of `reduction`.
enum Reduction : int64_t { kReductionNone = 0, kReductionMean = 1, kReductionSum = 2 };

}  // namespace stax::nn
