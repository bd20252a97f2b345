// Shared pieces of shape/dtype inference rules (used by core/ops/<family>/*schemas.cpp only).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/graph/op_registry.h"

namespace stax::infer {

// Fails with "<an> (<dtype>) and <bn> (<dtype>) must have the same dtype" unless a and b share
// their dtype.
void same_dtype(const CallArgs& c, const TensorMeta& a, const TensorMeta& b, const char* an,
                const char* bn);

// c.get as a callable taking the parameter's name (for rules that hand it to a parser of params).
inline auto getter(const CallArgs& c) {
  return [&c](const char* p) -> const Arg& { return c.get(p); };
}

// Broadcast shape of the tensor-valued params among `params`; result dtype by `mode`.
TensorMeta elementwise(const CallArgs& c, const std::vector<std::string>& params, Promotion mode);

// An InferFn for an elementwise op over `params` with the op's own promotion mode.
InferFn elementwise_rule(std::vector<std::string> params);

// Reduced shape of `in` over `dims` (all dims when empty), keeping reduced dims as 1 if keepdim.
Shape reduce_shape(const Shape& in, const std::vector<int64_t>& dims, bool keepdim, const CallArgs& c);

// Torch's reductions without an identity (amax, amin, aminmax, max.dim ...): an empty input may
// not be reduced over a dimension of size 0 (`dims` empty: every dimension).
void check_nonempty_reduced_dims(const Shape& in, const std::vector<int64_t>& dims,
                                 const CallArgs& c);

// The number `param` (a Scalar argument) must convert to `t` without overflow, as torch's
// checked conversion demands of fill values (full, masked_fill, scatter.value, threshold ...):
// 256 into uint8, 1e5 into float16. Absent or tensor arguments are not checked.
void check_scalar_fits(const CallArgs& c, std::string_view param, DType t);

// clamp / clamp_max / hardtanh: an integer upper bound `param` below the range of the integer
// result dtype `t` is an error (torch: "Clamp max value -1 is outside the representable range").
void check_clamp_max(const CallArgs& c, const char* param, DType t);

// clamp / hardtanh bounds `min_param` / `max_param` (either may be nullptr) of an integer result
// dtype `t`, as torch's clamp: a lower bound above the dtype's range, or an upper bound below it,
// is an error. `truncate`: float bounds count as their truncation (hardtanh's int(min_val));
// otherwise only integer bounds are checked.
void check_clamp_bounds(const CallArgs& c, const char* min_param, const char* max_param, DType t,
                        bool truncate);

// The affine parameters `params` (those given) of a layer / group norm over an input of dtype `x`:
// torch's CPU kernels take them in the input's dtype, or all in float32 for a float16 / bfloat16
// input ("mixed dtype").
void check_norm_param_dtypes(const CallArgs& c, DType x, const std::vector<std::string>& params);

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
