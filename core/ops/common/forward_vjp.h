// Backward ops as the VJP of their forward op. aten's *_backward ops (avg_pool2d_backward,
// convolution_backward, mse_loss_backward ...) compute what the forward op's VJP rule computes;
// their decompositions / expansions emit the forward call and run that rule, so a traced backward
// graph gets exactly the gradient formulas Stax's own autodiff uses (one formula per op, and twice
// differentiable because the rules emit differentiable base ops).
#pragma once

#include <string_view>
#include <vector>

#include "core/graph/graph.h"

namespace stax {

// Emits the forward call `target(args, kwargs)` into `g` (at its insert point) and runs the op's
// VJP rule with `grad` as the gradient of its output. Returns, per entry of `wrt` (input nodes of
// the call), the gradient of that input (contributions summed, converted to the input's dtype), or
// null when the rule gives it none (a zero gradient). The forward node is left in the graph; it is
// dead code unless the rule reads it. Throws stax::Error when the op has no VJP rule.
std::vector<Node*> gradients_by_vjp(Graph& g, std::string_view target, std::vector<Arg> args,
                                    Kwargs kwargs, Node* grad, const std::vector<Node*>& wrt);

// `grad` when not null, else zeros of `like`'s shape and dtype.
Node* or_zeros(Graph& g, Node* grad, const Node* like);

}  // namespace stax
