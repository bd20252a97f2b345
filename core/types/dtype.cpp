#include "core/types/dtype.h"

#include <array>
#include <stdexcept>
#include <string>

namespace stax {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::Float16: return "float16";
    case DType::BFloat16: return "bfloat16";
    case DType::Int64: return "int64";
    case DType::Int32: return "int32";
    case DType::Int8: return "int8";
    case DType::UInt8: return "uint8";
    case DType::Bool: return "bool";
    case DType::Complex64: return "complex64";
    case DType::Complex128: return "complex128";
    case DType::Int16: return "int16";
    case DType::UInt16: return "uint16";
    case DType::UInt32: return "uint32";
    case DType::UInt64: return "uint64";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view s) {
  for (std::string_view prefix : {"tensorplay.", "tp.", "torch."}) {
    if (s.substr(0, prefix.size()) == prefix) {
      s.remove_prefix(prefix.size());
      break;
    }
  }
  struct Alias { std::string_view name; DType t; };
  static constexpr std::array<Alias, 25> kAliases{{
      {"float32", DType::Float32}, {"float", DType::Float32}, {"float64", DType::Float64},
      {"double", DType::Float64}, {"float16", DType::Float16}, {"half", DType::Float16},
      {"bfloat16", DType::BFloat16}, {"int64", DType::Int64}, {"long", DType::Int64},
      {"int32", DType::Int32}, {"int", DType::Int32}, {"int8", DType::Int8},
      {"uint8", DType::UInt8}, {"bool", DType::Bool}, {"f32", DType::Float32},
      {"f64", DType::Float64}, {"complex64", DType::Complex64}, {"cfloat", DType::Complex64},
      {"complex128", DType::Complex128}, {"cdouble", DType::Complex128},
      {"int16", DType::Int16}, {"short", DType::Int16}, {"uint16", DType::UInt16},
      {"uint32", DType::UInt32}, {"uint64", DType::UInt64}}};
  for (const auto& a : kAliases)
    if (a.name == s) return a.t;
  return std::nullopt;
}

size_t dtype_size(DType t) {
  switch (t) {
    case DType::Complex128: return 16;
    case DType::Float64: case DType::Int64: case DType::Complex64: case DType::UInt64: return 8;
    case DType::Float32: case DType::Int32: case DType::UInt32: return 4;
    case DType::Float16: case DType::BFloat16: case DType::Int16: case DType::UInt16: return 2;
    case DType::Int8: case DType::UInt8: case DType::Bool: return 1;
  }
  return 0;
}

DTypeCategory dtype_category(DType t) {
  switch (t) {
    case DType::Bool: return DTypeCategory::Bool;
    case DType::Int64: case DType::Int32: case DType::Int8: case DType::UInt8:
    case DType::Int16: case DType::UInt16: case DType::UInt32: case DType::UInt64:
      return DTypeCategory::Integral;
    case DType::Complex64: case DType::Complex128: return DTypeCategory::Complex;
    default: return DTypeCategory::Floating;
  }
}

int plugin_dtype_code(DType t) {
  switch (t) {
    case DType::Complex64: case DType::Complex128: return -1;
    case DType::Int16: return 9;
    case DType::UInt16: return 10;
    case DType::UInt32: return 11;
    case DType::UInt64: return 12;
    default: return static_cast<int>(t);  // the first nine: the same numbers
  }
}

DType complex_to_real(DType t) {
  if (t == DType::Complex64) return DType::Float32;
  if (t == DType::Complex128) return DType::Float64;
  return t;
}

DType real_to_complex(DType t) {
  switch (t) {
    case DType::Float64: case DType::Complex128: return DType::Complex128;
    case DType::Float32: case DType::Float16: case DType::BFloat16: case DType::Complex64:
      return DType::Complex64;
    default:
      throw std::invalid_argument("real_to_complex: no complex dtype for " +
                                  std::string(dtype_name(t)));
  }
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  auto ca = dtype_category(a), cb = dtype_category(b);
  if (is_barebones_unsigned(a) || is_barebones_unsigned(b)) {  // as torch (c10 promoteTypes)
    if (ca == DTypeCategory::Floating) return a;
    if (cb == DTypeCategory::Floating) return b;
    throw std::invalid_argument(
        "Promotion for uint16, uint32, uint64 types is not supported, attempted to promote " +
        std::string(dtype_name(a)) + " and " + std::string(dtype_name(b)));
  }
  if (ca == DTypeCategory::Complex || cb == DTypeCategory::Complex) {
    // The complex dtype whose parts hold both: complex64 with float64 -> complex128.
    DType ra = complex_to_real(a), rb = complex_to_real(b);
    bool wide = ra == DType::Float64 || rb == DType::Float64;
    return wide ? DType::Complex128 : DType::Complex64;
  }
  if (ca != cb) return ca > cb ? a : b;
  if (ca == DTypeCategory::Floating) {
    auto rank = [](DType t) {
      switch (t) {
        case DType::Float16: case DType::BFloat16: return 1;
        case DType::Float32: return 2;
        default: return 3;  // Float64
      }
    };
    if ((a == DType::Float16 && b == DType::BFloat16) || (a == DType::BFloat16 && b == DType::Float16))
      return DType::Float32;
    return rank(a) >= rank(b) ? a : b;
  }
  // Integral (signed, or uint8): the wider; uint8 with int8 -> int16.
  auto bits = [](DType t) { return dtype_size(t); };
  if (a == DType::UInt8) return bits(b) > 1 ? b : DType::Int16;
  if (b == DType::UInt8) return bits(a) > 1 ? a : DType::Int16;
  return bits(a) >= bits(b) ? a : b;
}

}  // namespace stax
