// The ops that take torch's "barebones" unsigned dtypes (uint16 / uint32 / uint64), handed to the
// graph's check (core/graph/unsigned_ops.h) by install_ops(); docs/dtypes.md.
#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "core/graph/unsigned_ops.h"

namespace stax {

namespace {

// The ops whose torch CPU kernels take uint16 / uint32 / uint64, measured against torch 2.15
// (each called on tensors of the three dtypes): a base name takes every overload, "base.overload"
// that one only. They move, select or compare data (torch's AT_BAREBONES_UNSIGNED_TYPES
// dispatch), or compute what int64 bits or a float conversion give exactly: wrapping products,
// bitwise ops, sums, true division, the special functions (computed in float), and the ordering
// ops (maximum, minimum, sort, clamp by tensors: unsigned order above 2^63 too). Sorted.
constexpr std::array<std::string_view, 105> kUnsignedOps = {
    "__and__", "__or__", "__xor__", "_stax_unique", "_stax_unique_dim", "_to_copy", "_unique2",
    "_unsafe_view", "alias", "alias_copy", "all", "any", "argsort", "as_strided",
    "as_strided_copy", "bitwise_and", "bitwise_or", "bitwise_xor", "cat", "clamp.Tensor",
    "clamp_max.Tensor", "clamp_min.Tensor", "clone", "constant_pad_nd", "contiguous", "copy",
    "cumsum", "detach", "detach_copy", "diag_embed", "diagonal", "diagonal_copy", "div.Scalar",
    "div.Tensor", "embedding", "empty", "empty_like", "empty_strided", "eq", "expand",
    "expand_copy", "fill", "flip", "floor", "full", "full_like", "gather", "getitem", "index",
    "index_add", "index_select", "isnan", "lift_fresh_copy", "maximum", "minimum", "mul", "narrow",
    "narrow_copy", "ne", "new_empty", "new_empty_strided", "new_full", "new_ones", "new_zeros",
    "ones", "ones_like", "permute", "permute_copy", "prod", "repeat", "reshape", "roll",
    "scalar_tensor", "scatter.src", "scatter.value", "scatter_add", "select", "select_copy",
    "select_scatter", "slice", "slice_copy", "slice_scatter", "sort", "split", "split_with_sizes",
    "squeeze", "squeeze_copy", "stack", "sum", "t", "to", "transpose", "transpose_copy", "trunc",
    "unbind", "unfold", "unique_consecutive", "unique_dim", "unique_dim_consecutive", "unsqueeze",
    "unsqueeze_copy", "view", "where", "zeros", "zeros_like"};
// Ops torch also takes them in that order values by Python-number bounds (clamp with numbers):
// exact for uint16 / uint32 in int64, but a number bound is read as a double and Stax holds
// uint64 as int64 bits, so uint64 is refused there (a Stax limit, said in the message).
// maximum / minimum / sort / the tensor-bound clamps compare uint64 as unsigned (the kernels
// and lowering rules flip the top bit) and are in the list above.
constexpr std::array<std::string_view, 3> kOrderingOps = {"clamp", "clamp_max", "clamp_min"};
static_assert(std::is_sorted(kUnsignedOps.begin(), kUnsignedOps.end()));
static_assert(std::is_sorted(kOrderingOps.begin(), kOrderingOps.end()));

template <size_t N>
std::vector<std::string> names(const std::array<std::string_view, N>& list) {
  return std::vector<std::string>(list.begin(), list.end());
}

}  // namespace

void register_barebones_unsigned_ops() {
  set_barebones_unsigned_ops(names(kUnsignedOps), names(kOrderingOps));
}

}  // namespace stax
