// Geometry of the neural-network ops (convolution, pooling, padding, upsampling) shared by their
// shape inference (core/graph/ops/nn_ops.cpp), decompositions (core/graph/decompositions_nn.cpp),
// interpreter kernels, derivative rules and lowering: one copy of each size formula.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/graph/arg.h"

namespace stax::nn {

using Ints = std::vector<int64_t>;

// An int-list argument of an op over `n` spatial dims: a list of n ints, or one int (or a 1-list)
// repeated n times. Throws Error("shape", where, ...) naming `what` otherwise, or when an entry is
// below `min_value`.
Ints expand_list(const Arg& a, size_t n, const std::string& what, const std::string& where,
                 int64_t min_value = 0);

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

// Output extent of one spatial dim: (L + 2p - d(K-1) - 1) / s + 1, or for a transposed
// convolution (L-1) s - 2p + d(K-1) + output_padding + 1.
int64_t conv_out_size(int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t dilation,
                      bool transposed, int64_t output_padding);

// Output extent of one pooled dim (torch's pooling_output_shape): floor or ceil of
// (L + 2p - d(K-1) - 1) / s, plus 1; with ceil_mode the last window must start inside the input
// or its left padding.
int64_t pool_out_size(int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t dilation,
                      bool ceil_mode);

// Pooling parameters over `spatial` dims: kernel_size, stride (empty: = kernel_size), padding,
// dilation (1 when the op has none); validated (padding at most half the effective kernel).
struct PoolParams {
  Ints kernel, stride, padding, dilation;
  bool ceil_mode = false;
};
PoolParams pool_params(const std::function<const Arg&(const char*)>& get, size_t spatial,
                       bool has_dilation, const std::string& where);

// The loss reductions (torch's at::Reduction): the int values of `reduction`.
enum Reduction : int64_t { kReductionNone = 0, kReductionMean = 1, kReductionSum = 2 };

}  // namespace stax::nn
