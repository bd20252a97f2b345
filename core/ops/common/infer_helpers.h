// Shared pieces of shape/dtype inference rules (used by core/ops/<family>/*schemas.cpp only).
#pragma once

#include <string>
#include <vector>

#include "core/graph/op_registry.h"

namespace stax::infer {

// Broadcast shape of the tensor-valued params among `params`; result dtype by `mode`.
TensorMeta elementwise(const CallArgs& c, const std::vector<std::string>& params, Promotion mode);

// An InferFn for an elementwise op over `params` with the op's own promotion mode.
InferFn elementwise_rule(std::vector<std::string> params);

// Reduced shape of `in` over `dims` (all dims when empty), keeping reduced dims as 1 if keepdim.
Shape reduce_shape(const Shape& in, const std::vector<int64_t>& dims, bool keepdim, const CallArgs& c);

// Elementwise over `params` (promotion `mode`) with a floating-point result required: torch has no
// integer kernel ("... not implemented for 'int64', as in torch").
InferFn floating(std::vector<std::string> params, Promotion mode = Promotion::Default);

// Elementwise over `params` (promotion `mode`), rejecting bool tensors as torch does.
InferFn numeric(std::vector<std::string> params, Promotion mode = Promotion::Default);

// Registers `name(Tensor param) -> Tensor`, a base Pointwise math op with a floating result
// (integers promote to the default float): the library and special functions.
OpDef& add_unary_math(OpRegistry& r, const std::string& name, const char* param,
                      bool differentiable);

}  // namespace stax::infer
