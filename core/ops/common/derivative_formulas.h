// Derivative formulas shared by the VJP and JVP rules of the same op (core/autodiff internal).
#pragma once

#include <optional>
#include <vector>

#include "core/autodiff/emitter.h"

namespace stax::formulas {

// ∂prod/∂x_i of a product over `dim` (all dims when none), without dividing by zero (torch's
// prod_backward): y / x_i where the reduced slice has no zero, the product of the other
// elements at the single zero of a slice with one zero, and 0 elsewhere. Shape: x's. Built from
// eq, where, prod, sum, logical_and and div, so it is one data-independent graph.
Node* prod_partials(const Emitter& e, Node* x, std::optional<int64_t> dim);

// amax / amin's derivative weights (torch's scale_grad_by_count): (x == y) / count(x == y) over
// the reduced dims, so ties share the gradient evenly. `y` is the reduction's output. Shape: x's.
Node* extremum_weights(const Emitter& e, Node* x, Node* y, const std::vector<int64_t>& dims,
                       bool keepdim);

// var's derivative: 2 (x - mean(x)) / (N - correction). Shape: x's.
Node* var_partials(const Emitter& e, Node* x, const std::vector<int64_t>& dims, double correction);

// layer_norm's normalized input x̂ = (x - mean) * rstd and rstd = rsqrt(var + eps), both over the
// trailing `k` dims (rstd keeps them as size-1 dims).
struct Normalized {
  Node* xhat;
  Node* rstd;
  std::vector<int64_t> dims;  // the normalized dims
};
Normalized layer_norm_stats(const Emitter& e, Node* x, size_t k, double eps);

}  // namespace stax::formulas
