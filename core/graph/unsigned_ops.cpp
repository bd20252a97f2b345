#include "core/graph/unsigned_ops.h"

#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "core/graph/graph.h"
#include "core/support/error.h"

namespace stax {

namespace {

// The ops whose torch CPU kernels take uint16 / uint32 / uint64, measured against torch 2.15
// (each called on tensors of the three dtypes): a base name takes every overload, "base.overload"
// that one only. They move, select or compare data (torch's AT_BAREBONES_UNSIGNED_TYPES
// dispatch), or compute what int64 bits or a float conversion give exactly: wrapping products,
// bitwise ops, sums, true division, the special functions (computed in float). Sorted.
constexpr std::array<std::string_view, 88> kUnsignedOps = {
    "_to_copy", "_unsafe_view", "alias", "alias_copy", "all", "any", "as_strided",
    "as_strided_copy", "bitwise_and", "bitwise_or", "bitwise_xor", "cat", "clone",
    "constant_pad_nd", "contiguous", "copy", "cumsum", "detach", "detach_copy", "diag_embed",
    "diagonal", "diagonal_copy", "div.Scalar", "div.Tensor", "embedding", "empty", "empty_like",
    "empty_strided", "eq", "expand", "expand_copy", "fill", "flip", "floor", "full", "full_like",
    "gather", "index", "index_add", "index_select", "isnan", "lift_fresh_copy", "mul", "narrow",
    "narrow_copy", "ne", "new_empty", "new_empty_strided", "new_full", "new_ones", "new_zeros",
    "ones", "ones_like", "permute", "permute_copy", "prod", "repeat", "reshape", "roll",
    "scalar_tensor", "scatter.src", "scatter.value", "scatter_add", "select", "select_copy",
    "select_scatter", "slice", "slice_copy", "slice_scatter", "split", "split_with_sizes",
    "squeeze", "squeeze_copy", "stack", "sum", "t", "to", "transpose", "transpose_copy", "trunc",
    "unbind", "unfold", "unsqueeze", "unsqueeze_copy", "view", "where", "zeros", "zeros_like"};
// Ops torch also takes them in that order values (max, sort ...): exact for uint16 / uint32 in
// int64, but Stax holds uint64 as int64 bits, which order wrongly from 2^63 on, so uint64 is
// refused there (a Stax limit, said in the message).
constexpr std::array<std::string_view, 6> kOrderingOps = {
    "clamp", "clamp_max", "clamp_min", "maximum", "minimum", "sort"};
static_assert(std::is_sorted(kUnsignedOps.begin(), kUnsignedOps.end()));
static_assert(std::is_sorted(kOrderingOps.begin(), kOrderingOps.end()));

std::string_view base_name(std::string_view op) {
  size_t dot = op.find('.');
  return dot == std::string_view::npos ? op : op.substr(0, dot);
}

// c10's name of the dtype, as torch's "not implemented for" messages spell it.
const char* c10_name(DType t) {
  switch (t) {
    case DType::UInt16: return "UInt16";
    case DType::UInt32: return "UInt32";
    default: return "UInt64";
  }
}

const Node* first_unsigned(const Arg& a) {
  if (a.is_node()) return is_barebones_unsigned(a.node()->meta().dtype) ? a.node() : nullptr;
  if (a.is_list())
    for (const auto& e : a.list())
      if (const Node* n = first_unsigned(e)) return n;
  return nullptr;
}

template <size_t N>
bool listed(const std::array<std::string_view, N>& list, std::string_view op) {
  return std::binary_search(list.begin(), list.end(), base_name(op)) ||
         std::binary_search(list.begin(), list.end(), op);
}

}  // namespace

bool accepts_barebones_unsigned(const OpDef& op, DType t) {
  std::string_view name = op.name();
  if (name.substr(0, 8) == "special_") return true;  // torch computes them in float
  if (listed(kUnsignedOps, name)) return true;
  return t != DType::UInt64 && listed(kOrderingOps, name);
}

void reject_unsupported_unsigned(const OpDef& op, const std::vector<Arg>& args,
                                 const Kwargs& kwargs, const TensorMeta* out,
                                 const std::string& where) {
  const Node* u = nullptr;
  for (const auto& a : args)
    if (!u) u = first_unsigned(a);
  for (const auto& kv : kwargs)
    if (!u) u = first_unsigned(kv.second);
  std::optional<DType> t;
  if (u) t = u->meta().dtype;
  else if (out && is_barebones_unsigned(out->dtype)) t = out->dtype;
  if (!t || accepts_barebones_unsigned(op, *t)) return;
  std::string what = u ? "argument %" + u->name() + " is " : "its result would be ";
  std::string base(base_name(op.name()));
  if (*t == DType::UInt64 && listed(kOrderingOps, op.name()))
    throw Error("shape", where,
                op.name() + " of uint64 is not supported by Stax (" + what + "uint64): Stax "
                "holds uint64 values as int64 bits, which order wrongly from 2^63 on; torch "
                "takes it (docs/dtypes.md)");
  throw Error("shape", where,
              "\"" + base + "\" not implemented for '" + c10_name(*t) + "' (" + what +
                  std::string(dtype_name(*t)) +
                  "; torch's CPU kernels take uint16 / uint32 / uint64 only in the ops that "
                  "move, select or compare data and a few more: docs/dtypes.md)");
}

}  // namespace stax
