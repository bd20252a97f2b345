// Second-order gradients on the compiled path (seed §5.7, Listing 5.5).
//
// The compiled path supports first-order reverse mode only: the compiled backward is an
// artifact without a graph to differentiate again. When a caller asks for the first-order
// gradient to be differentiable itself (create_graph=True), the runtime still returns the
// compiled backward's gradients (bitwise the same values), connected to the forward's inputs,
// but their own backward rejects explicitly, where the request is made, instead of failing far
// away with "does not require grad". Higher-order derivatives (hvp, hessian) go through
// core/functional/functional.h on the uncompiled graph.
//
// The compiled runtime (CompiledFunction, §5.6) calls reject_double_backward() at the point a
// second derivative is requested: it installs rejecting_backward() as the backward of the
// gradients it returns under create_graph, or calls check_backward_request() directly.
#pragma once

#include <functional>
#include <string_view>
#include <vector>

#include "core/tensor/tensor.h"

namespace stax {

// The message of Listing 5.5, verbatim.
inline constexpr std::string_view kDoubleBackwardMessage =
    "Compiled regions do not support second-order gradients (double backward). Run the "
    "function without compilation to compute higher-order derivatives.";

// Throws stax::Error (stage "autodiff", location "compiled backward") with
// kDoubleBackwardMessage as its message.
[[noreturn]] void reject_double_backward();

// The backward of a compiled backward (Listing 5.5's CompiledFunctionBackward.backward): a
// function from upstream gradients to gradients that computes nothing and rejects.
using BackwardFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
BackwardFn rejecting_backward();

// What the runtime asks when a backward call arrives: `order` is the derivative order being
// requested of the compiled region (1: an ordinary backward; 2 or more: differentiating a
// gradient it returned). Returns for order 1; calls reject_double_backward() otherwise.
void check_backward_request(int order);

}  // namespace stax
