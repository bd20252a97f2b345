#include "core/ops/common/infer_helpers.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <optional>
#include <string_view>

namespace stax::infer {

void same_dtype(const CallArgs& c, const TensorMeta& a, const TensorMeta& b, const char* an,
                const char* bn) {
  if (a.dtype != b.dtype)
    c.fail(std::string(an) + " (" + std::string(dtype_name(a.dtype)) + ") and " + bn + " (" +
           std::string(dtype_name(b.dtype)) + ") must have the same dtype");
}

TensorMeta elementwise(const CallArgs& c, const std::vector<std::string>& params, Promotion mode) {
  Shape shape;
  std::string device = "cpu";
  bool first = true;
  for (const auto& p : params) {
    const Arg& a = c.get(p);
    if (!a.is_node()) continue;
    const TensorMeta& m = a.node()->meta();
    shape = first ? m.sizes : broadcast_shapes(shape, m.sizes, c.where());
    if (first) device = m.device;
    first = false;
  }
  return TensorMeta::contiguous(shape, result_type(c, params, mode), device);
}

InferFn elementwise_rule(std::vector<std::string> params) {
  return [params = std::move(params)](const CallArgs& c) {
    return elementwise(c, params, c.op().promotion);
  };
}

Shape reduce_shape(const Shape& in, const std::vector<int64_t>& dims_in, bool keepdim, const CallArgs& c) {
  int64_t rank = static_cast<int64_t>(in.size());
  std::vector<bool> reduced(in.size(), dims_in.empty());
  std::vector<bool> seen(std::max<size_t>(in.size(), 1), false);  // a 0-d tensor: dims 0 and -1
  for (int64_t d : dims_in) {
    int64_t w = wrap_dim(d, rank, c.where());
    if (seen[w])  // also 0 and -1 of a 0-d tensor, or 1 and -1 of a matrix (as torch)
      c.fail("dim " + std::to_string(w) + " appears multiple times in the list of dims");
    seen[w] = true;
    if (rank > 0) reduced[w] = true;
  }
  Shape out;
  for (int64_t i = 0; i < rank; ++i) {
    if (!reduced[i]) out.push_back(in[i]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

void check_nonempty_reduced_dims(const Shape& in, const std::vector<int64_t>& dims,
                                 const CallArgs& c) {
  if (shape_numel(in) != 0) return;
  const int64_t rank = static_cast<int64_t>(in.size());
  for (int64_t i = 0; i < rank; ++i) {
    bool reduced = dims.empty();
    for (int64_t d : dims) reduced = reduced || wrap_dim(d, rank, c.where()) == i;
    if (reduced && in[i] == 0)
      c.fail("reducing over zero-size dimension " + std::to_string(i) + " of " + shape_str(in) +
             " for a reduction without identity");
  }
}

namespace {

// c10::overflows: whether converting the number `v` to `t` loses its value. Like torch's
// checked conversion, a negative integer converts to an unsigned type when its magnitude fits
// (two's complement), infinities and NaN to floating types, and anything to bool.
bool overflows(const Arg& v, DType t) {
  if (v.is_bool() || t == DType::Bool) return false;
  double lo = 0, hi = 0;
  switch (t) {
    case DType::UInt8: lo = 0, hi = 255; break;
    case DType::Int8: lo = -128, hi = 127; break;
    case DType::Int32: lo = -2147483648.0, hi = 2147483647.0; break;
    case DType::Int64: lo = -0x1p63, hi = 0x1p63; break;  // every int64 Arg fits
    case DType::Float16: lo = -65504.0, hi = 65504.0; break;
    case DType::BFloat16: lo = -0x1.fep127, hi = 0x1.fep127; break;
    case DType::Float32: lo = -0x1.fffffep127, hi = 0x1.fffffep127; break;
    case DType::Float64: case DType::Complex128: return false;
    case DType::Complex64: lo = -0x1.fffffep127, hi = 0x1.fffffep127; break;
    case DType::Bool: return false;
    case DType::Int16: lo = -32768, hi = 32767; break;
    case DType::UInt16: lo = 0, hi = 65535; break;
    case DType::UInt32: lo = 0, hi = 4294967295.0; break;
    case DType::UInt64: lo = 0, hi = 0x1p64; break;  // every int64 Arg fits (two's complement)
  }
  if (v.is_int()) {
    int64_t i = v.to_int();
    if (t == DType::Int64 || t == DType::UInt64) return false;
    bool is_unsigned = t == DType::UInt8 || t == DType::UInt16 || t == DType::UInt32;
    if (is_unsigned && i < 0) return -static_cast<double>(i) > hi;
    return static_cast<double>(i) < lo || static_cast<double>(i) > hi;
  }
  double d = v.to_double();
  if (is_floating(t) || is_complex(t)) return std::isfinite(d) && (d < lo || d > hi);
  if (std::isnan(d)) return true;
  // A float converts to an integer type when its truncation fits (torch: 255.5 fits uint8,
  // -1.0 does not).
  if (t == DType::UInt64) return !(d > -0x1p64 && d < hi);  // as torch: negatives wrap
  return t == DType::Int64 ? !(d >= lo && d < hi) : (d <= lo - 1 || d >= hi + 1);
}

}  // namespace

void check_scalar_fits(const CallArgs& c, std::string_view param, DType t) {
  const Arg& v = c.get(param);
  if (!v.is_number() || !overflows(v, t)) return;
  c.fail(std::string(param) + " = " + arg_str(v) + " cannot be converted to " +
         std::string(dtype_name(t)) + " without overflow");
}

void check_norm_param_dtypes(const CallArgs& c, DType x, const std::vector<std::string>& params) {
  bool same = true, any_float = false;
  for (const auto& p : params) {
    if (!c.get(p).is_node()) continue;
    same = same && c.tensor(p).dtype == x;
    any_float = any_float || c.tensor(p).dtype == DType::Float32;
  }
  if (same) return;
  bool reduced = x == DType::Float16 || x == DType::BFloat16;
  for (const auto& p : params) {
    if (!c.get(p).is_node()) continue;
    DType t = c.tensor(p).dtype;
    if (reduced && any_float ? t != DType::Float32 : t != x)
      c.fail(p + " (" + std::string(dtype_name(t)) + ") must have the input's dtype (" +
             std::string(dtype_name(x)) + ")" +
             (reduced ? ", or all parameters float32 (mixed dtype)" : ""));
  }
}

// clamp / clamp_max / hardtanh of an integer tensor: torch rejects an integer upper bound below
// the dtype's range (uint8 with max -1), which would make every element that bound.
void check_clamp_max(const CallArgs& c, const char* param, DType t) {
  const Arg& v = c.get(param);
  if (t == DType::Bool || is_floating(t) || !v.is_int()) return;
  int64_t lowest = is_unsigned_int(t) ? 0 : t == DType::Int8 ? -128 : t == DType::Int16 ? -32768
                 : t == DType::Int32 ? int64_t{-2147483648LL} : INT64_MIN;
  if (v.to_int() < lowest)
    c.fail("clamp max value " + std::to_string(v.to_int()) +
           " is outside the representable range of " + std::string(dtype_name(t)));
}

void check_clamp_bounds(const CallArgs& c, const char* min_param, const char* max_param, DType t,
                        bool truncate) {
  if (t == DType::Bool || is_floating(t) || is_complex(t)) return;
  double lowest = is_unsigned_int(t) ? 0.0 : t == DType::Int8 ? -128.0
                : t == DType::Int16 ? -32768.0 : t == DType::Int32 ? -2147483648.0 : -0x1p63;
  double highest = t == DType::UInt8 ? 255.0 : t == DType::Int8 ? 127.0
                 : t == DType::Int16 ? 32767.0 : t == DType::UInt16 ? 65535.0
                 : t == DType::Int32 ? 2147483647.0 : t == DType::UInt32 ? 4294967295.0
                 : t == DType::UInt64 ? 0x1p64 : 0x1p63;
  auto bound = [&](const char* p) -> std::optional<double> {
    if (!p) return std::nullopt;
    const Arg& v = c.get(p);
    if (v.is_int()) return static_cast<double>(v.to_int());
    if (truncate && v.is_double() && std::isfinite(v.to_double())) return std::trunc(v.to_double());
    return std::nullopt;
  };
  auto say = [&](const char* what, const char* p) {
    c.fail(std::string("clamp ") + what + " value " + arg_str(c.get(p)) +
           (c.get(p).is_double() ? " (truncated for an integer tensor)" : "") +
           " is outside the representable range of " + std::string(dtype_name(t)));
  };
  if (auto lo = bound(min_param); lo && *lo > highest) say("min", min_param);
  if (auto hi = bound(max_param); hi && *hi < lowest) say("max", max_param);
}

InferFn floating(std::vector<std::string> params, Promotion mode) {
  return [params = std::move(params), mode](const CallArgs& c) {
    TensorMeta m = elementwise(c, params, mode);
    if (!is_floating(m.dtype)) {
      std::string t(dtype_name(m.dtype));
      c.fail("expected a floating-point input, got " + t + " (not implemented for '" + t +
             "', as in torch)");
    }
    return m;
  };
}

InferFn numeric(std::vector<std::string> params, Promotion mode) {
  return [params = std::move(params), mode](const CallArgs& c) {
    TensorMeta m = elementwise(c, params, mode);
    if (m.dtype == DType::Bool) c.fail("not implemented for 'bool' tensors");
    return m;
  };
}

OpDef& add_unary_math(OpRegistry& r, const std::string& name, const char* param,
                      bool differentiable) {
  OpDef& d = r.add(name + "(Tensor " + param + ") -> Tensor", OpCategory::Pointwise,
                   Promotion::IntToFloat, floating({param}, Promotion::IntToFloat));
  d.differentiable = differentiable;
  return d;
}

}  // namespace stax::infer
