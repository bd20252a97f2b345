// Element types of Stax tensors and PyTorch's type-promotion lattice.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace stax {

enum class DType : uint8_t { Float32, Float64, Float16, BFloat16, Int64, Int32, Int8, UInt8, Bool };
inline constexpr int kNumDTypes = 9;

enum class DTypeCategory : uint8_t { Bool = 0, Integral = 1, Floating = 2 };

std::string_view dtype_name(DType t);            // "float32", "int64", "bool", ...
std::optional<DType> parse_dtype(std::string_view name);  // accepts "float32", "tensorplay.float32",
                                                           // "tp.float32", "float", "long", ...
size_t dtype_size(DType t);                      // bytes per element
DTypeCategory dtype_category(DType t);
inline bool is_floating(DType t) { return dtype_category(t) == DTypeCategory::Floating; }
inline bool is_integral(DType t) { return dtype_category(t) == DTypeCategory::Integral; }  // bool excluded
inline bool is_bool(DType t) { return t == DType::Bool; }

// torch.promote_types: the smallest type both a and b convert to without losing category.
// (float16, bfloat16) -> float32; (uint8, int8) -> int16 is not a Stax dtype, so -> int32.
DType promote_types(DType a, DType b);

// Default dtypes of Python scalars (torch.get_default_dtype() is float32).
inline constexpr DType kDefaultFloat = DType::Float32;
inline constexpr DType kDefaultInt = DType::Int64;

}  // namespace stax
