#include "core/graph/op_registry.h"

#include <algorithm>
#include <cassert>
#include <tuple>

#include "core/support/error.h"

namespace stax {

std::string_view category_name(OpCategory c) {
  switch (c) {
    case OpCategory::Pointwise: return "pointwise";
    case OpCategory::Reduction: return "reduction";
    case OpCategory::View: return "view";
    case OpCategory::Indexing: return "indexing";
    case OpCategory::Extern: return "extern";
    case OpCategory::Random: return "random";
    case OpCategory::Creation: return "creation";
    case OpCategory::Composite: return "composite";
    case OpCategory::Mutating: return "mutating";
  }
  return "?";
}

// ---- CallArgs ------------------------------------------------------------------------------------

const Arg& CallArgs::get(std::string_view param) const {
  int idx = op_.schema.index_of(std::string(param));
  assert(idx >= 0 && "inference rule asked for a parameter its schema lacks");
  const auto& p = op_.schema.params[idx];
  if (!p.kwarg_only) return args_.at(idx);
  for (const auto& [k, v] : kwargs_)
    if (k == param) return v;
  assert(false && "kwarg not bound");
  static const Arg none;
  return none;
}

const TensorMeta& CallArgs::tensor(std::string_view param) const {
  const Arg& a = get(param);
  if (!a.is_node()) fail("parameter '" + std::string(param) + "' is not a tensor");
  return a.node()->meta();
}

void CallArgs::fail(const std::string& message) const {
  throw Error("shape", where_, op_.name() + ": " + message);
}

OpDef& OpDef::allow_positional(const std::string& param) {
  int idx = schema.index_of(param);
  if (idx < 0 || !schema.params[idx].kwarg_only)
    throw Error("registry", "", name() + ": '" + param + "' is not a kwarg-only parameter");
  schema.params[idx].positional_compat = true;
  return *this;
}

// ---- registry ------------------------------------------------------------------------------------

std::string canonical_target(std::string_view t) {
  std::string s(t);
  // "operator.getitem": FX's target for selecting one element of a tuple-valued op.
  for (std::string_view prefix :
       {"tensorplay.ops.", "torch.ops.", "tp.", "aten.", "operator.", "_operator."}) {
    if (s.rfind(prefix, 0) == 0) s.erase(0, prefix.size());
  }
  if (s.find('.') == std::string::npos) s += ".default";
  return s;
}

OpDef& OpRegistry::add(const std::string& schema, OpCategory category, Promotion promotion, InferFn infer) {
  auto def = std::make_unique<OpDef>();
  def->schema = parse_schema(schema);
  def->category = category;
  def->promotion = promotion;
  def->infer = std::move(infer);
  auto [it, inserted] = ops_.emplace(def->schema.name, std::move(def));
  if (!inserted) throw Error("registry", "", "op " + it->first + " registered twice");
  return *it->second;
}

OpDef& OpRegistry::add_multi(const std::string& schema, OpCategory category,
                             InferMultiFn infer) {
  OpDef& d = add(schema, category, Promotion::None, nullptr);
  d.infer_multi = std::move(infer);
  return d;
}

const OpDef* OpRegistry::find(std::string_view target) const {
  auto it = ops_.find(canonical_target(target));
  return it == ops_.end() ? nullptr : it->second.get();
}

OpDef& OpRegistry::extend(std::string_view target) {
  auto it = ops_.find(canonical_target(target));
  if (it == ops_.end())
    throw Error("registry", std::string(target), "no op " + std::string(target) + " to extend");
  return *it->second;
}

// Edit distance with adjacent transpositions counting 1 (optimal string alignment): "rleu" is one
// edit from "relu" as from "elu".
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev2(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        cur[j] = std::min(cur[j], prev2[j - 2] + 1);
    }
    std::swap(prev2, prev);
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::vector<std::string> OpRegistry::suggest(std::string_view target, size_t n) const {
  std::string want = canonical_target(target);
  std::string want_base = want.substr(0, want.find('.'));
  // By distance, then by length difference (a swap or a wrong letter before a missing one).
  std::vector<std::tuple<size_t, size_t, std::string>> scored;
  for (const auto& [name, def] : ops_) {
    size_t d = std::min(edit_distance(want, name), edit_distance(want_base, def->schema.base) + 1);
    size_t len = want_base.size() > def->schema.base.size()
                     ? want_base.size() - def->schema.base.size()
                     : def->schema.base.size() - want_base.size();
    scored.emplace_back(d, len, name);
  }
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && out.size() < n; ++i)
    out.push_back(std::get<2>(scored[i]));
  return out;
}

const OpDef& OpRegistry::get(std::string_view target, const std::string& where) const {
  if (const OpDef* d = find(target)) return *d;
  std::string msg = "unknown op '" + std::string(target) + "'";
  auto s = suggest(target);
  if (!s.empty()) {
    msg += "; did you mean: ";
    for (size_t i = 0; i < s.size(); ++i) msg += (i ? ", " : "") + s[i];
    msg += "?";
  }
  throw Error("graph", where, msg);
}

std::vector<const OpDef*> OpRegistry::all() const {
  std::vector<const OpDef*> out;
  for (const auto& [k, v] : ops_) out.push_back(v.get());
  return out;
}

namespace {
OpRegistry& registry_storage() {
  static OpRegistry registry;
  return registry;
}
}  // namespace

const OpRegistry& default_registry() {
  const OpRegistry& r = registry_storage();
  if (r.empty()) throw_ops_not_installed("op registry");
  return r;
}

OpRegistry& registry_to_fill() { return registry_storage(); }

// ---- complex dtypes ----------------------------------------------------------------------------

namespace {
const Node* first_complex(const Arg& a) {
  if (a.is_node()) return is_complex(a.node()->meta().dtype) ? a.node() : nullptr;
  if (a.is_list())
    for (const auto& e : a.list())
      if (const Node* n = first_complex(e)) return n;
  return nullptr;
}
}  // namespace

void reject_unsupported_complex(const OpDef& op, const std::vector<Arg>& args, const Kwargs& kwargs,
                                const TensorMeta* out, const std::string& where) {
  if (op.complex) return;
  const Node* c = nullptr;
  for (const auto& a : args)
    if (!c) c = first_complex(a);
  for (const auto& kv : kwargs)
    if (!c) c = first_complex(kv.second);
  if (c)
    throw Error("shape", where,
                op.name() + " does not support complex tensors: argument %" + c->name() + " is " +
                    std::string(dtype_name(c->meta().dtype)) + " (docs/complex.md lists the ops "
                    "that take complex64 / complex128)");
  if (out && is_complex(out->dtype))
    throw Error("shape", where,
                op.name() + " does not support complex tensors: its result would be " +
                    std::string(dtype_name(out->dtype)) + " (docs/complex.md)");
}

// ---- shapes and promotion ----------------------------------------------------------------------

Shape broadcast_shapes(const Shape& a, const Shape& b, const std::string& where) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      throw Error("shape", where, "shapes " + shape_str(a) + " and " + shape_str(b) +
                                      " cannot be broadcast (dimension " + std::to_string(i) +
                                      ": " + std::to_string(da) + " vs " + std::to_string(db) + ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

DType result_type(const CallArgs& call, const std::vector<std::string>& params, Promotion mode) {
  // torch.result_type: three priority classes (dimensioned tensors, 0-d tensors, Python scalars);
  // a lower class only matters when its category (bool < integral < floating) is higher.
  std::optional<DType> dim_t, zero_t, scalar_t;
  auto fold = [](std::optional<DType>& acc, DType t) { acc = acc ? promote_types(*acc, t) : t; };
  for (const auto& p : params) {
    const Arg& a = call.get(p);
    if (a.is_node()) {
      const auto& m = a.node()->meta();
      fold(m.dim() > 0 ? dim_t : zero_t, m.dtype);
    } else if (a.is_list()) {
      for (const auto& e : a.list())
        if (e.is_node()) fold(e.node()->meta().dim() > 0 ? dim_t : zero_t, e.node()->meta().dtype);
    } else if (a.is_bool()) {
      fold(scalar_t, DType::Bool);
    } else if (a.is_int()) {
      fold(scalar_t, kDefaultInt);
    } else if (a.is_double()) {
      fold(scalar_t, kDefaultFloat);
    }
  }
  std::optional<DType> r = dim_t;
  for (auto* lower : {&zero_t, &scalar_t}) {
    if (!*lower) continue;
    if (!r) {
      r = *lower;
    } else if (is_complex(**lower) && dtype_category(*r) == DTypeCategory::Floating) {
      r = real_to_complex(*r);  // torch's combine_categories keeps the float's precision
    } else if (dtype_category(**lower) > dtype_category(*r)) {
      // A higher-category scalar/0-d operand: take its category's default for Python scalars,
      // or the 0-d tensor's dtype.
      r = lower == &scalar_t && dtype_category(**lower) == DTypeCategory::Floating ? kDefaultFloat
          : **lower;
    }
  }
  DType t = r.value_or(kDefaultFloat);
  switch (mode) {
    case Promotion::IntToFloat: return is_floating(t) || is_complex(t) ? t : kDefaultFloat;
    case Promotion::AlwaysBool: return DType::Bool;
    default: return t;
  }
}

}  // namespace stax
