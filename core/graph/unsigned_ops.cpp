#include "core/graph/unsigned_ops.h"

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/graph/graph.h"
#include "core/support/error.h"

namespace stax {

namespace {

// The op names core/ops gave (set_barebones_unsigned_ops), sorted.
struct NameLists {
  std::vector<std::string> all, ordering;
};
NameLists& name_lists() {
  static NameLists lists;
  return lists;
}

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

bool listed(const std::vector<std::string>& list, std::string_view op) {
  auto has = [&](std::string_view name) {
    return std::binary_search(list.begin(), list.end(), name,
                              [](std::string_view x, std::string_view y) { return x < y; });
  };
  return has(base_name(op)) || has(op);
}

}  // namespace

void set_barebones_unsigned_ops(std::vector<std::string> all, std::vector<std::string> ordering) {
  std::sort(all.begin(), all.end());
  std::sort(ordering.begin(), ordering.end());
  name_lists() = NameLists{std::move(all), std::move(ordering)};
}

bool accepts_barebones_unsigned(const OpDef& op, DType t) {
  std::string_view name = op.name();
  if (name.substr(0, 8) == "special_") return true;  // torch computes them in float
  if (listed(name_lists().all, name)) return true;
  return t != DType::UInt64 && listed(name_lists().ordering, name);
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
  if (*t == DType::UInt64 && listed(name_lists().ordering, op.name()))
    throw Error("shape", where,
                op.name() + " of uint64 is not supported by Stax (" + what + "uint64): Stax "
                "holds uint64 values as int64 bits and reads a number bound as int64 or double, "
                "which order wrongly from 2^63 on; torch takes it (tensor bounds work: "
                "clamp.Tensor, maximum, minimum; docs/dtypes.md)");
  throw Error("shape", where,
              "\"" + base + "\" not implemented for '" + c10_name(*t) + "' (" + what +
                  std::string(dtype_name(*t)) +
                  "; torch's CPU kernels take uint16 / uint32 / uint64 only in the ops that "
                  "move, select or compare data and a few more: docs/dtypes.md)");
}

}  // namespace stax
