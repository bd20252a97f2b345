// Element types of Stax tensors and PyTorch's type-promotion lattice.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace stax {

// Complex64 / Complex128 hold (real, imaginary) pairs of float / double (std::complex's layout,
// NumPy's <c8 / <c16). Only ops registered as accepting complex (OpDef::complex) take them; every
// other op rejects a complex tensor when the graph is built (docs/complex.md).
// Int16 / UInt16 / UInt32 / UInt64 came last (docs/dtypes.md): appended after the complex
// dtypes, so the values of the older dtypes never changed.
enum class DType : uint8_t {
  Float32, Float64, Float16, BFloat16, Int64, Int32, Int8, UInt8, Bool, Complex64, Complex128,
  Int16, UInt16, UInt32, UInt64
};
inline constexpr int kNumDTypes = 15;
// The dtypes the plugin ABI carries (STAX_NUM_DTYPES): the real ones. Complex tensors never reach
// a backend kernel, only the interpreter's (docs/complex.md). The ABI numbers them 0..12: the
// first nine as core's DType, then int16 = 9, uint16 = 10, uint32 = 11, uint64 = 12
// (plugin_dtype_code).
inline constexpr int kNumPluginDTypes = 13;

enum class DTypeCategory : uint8_t { Bool = 0, Integral = 1, Floating = 2, Complex = 3 };

std::string_view dtype_name(DType t);            // "float32", "int64", "bool", ...
std::optional<DType> parse_dtype(std::string_view name);  // accepts "float32", "tensorplay.float32",
                                                           // "tp.float32", "float", "long", ...
size_t dtype_size(DType t);                      // bytes per element
DTypeCategory dtype_category(DType t);
// The dtype's code in the plugin ABI (StaxDType), or -1 for a dtype the ABI does not carry
// (complex64 / complex128).
int plugin_dtype_code(DType t);
// uint16, uint32, uint64: torch's "barebones" unsigned dtypes, which torch's CPU kernels take only
// in the ops that move or select data (copy, fill, indexing, where, eq, ne, cat ...;
// docs/dtypes.md). uint8 is not one of them.
inline bool is_barebones_unsigned(DType t) {
  return t == DType::UInt16 || t == DType::UInt32 || t == DType::UInt64;
}
// uint8, uint16, uint32, uint64.
inline bool is_unsigned_int(DType t) { return t == DType::UInt8 || is_barebones_unsigned(t); }
inline bool is_floating(DType t) { return dtype_category(t) == DTypeCategory::Floating; }
inline bool is_integral(DType t) { return dtype_category(t) == DTypeCategory::Integral; }  // bool excluded
inline bool is_bool(DType t) { return t == DType::Bool; }
inline bool is_complex(DType t) { return t == DType::Complex64 || t == DType::Complex128; }
// complex64 -> float32, complex128 -> float64 (torch's toRealValueType); other dtypes unchanged.
DType complex_to_real(DType t);
// float32 (and float16 / bfloat16) -> complex64, float64 -> complex128 (toComplexType); complex
// dtypes unchanged; throws std::invalid_argument for integral and bool dtypes.
DType real_to_complex(DType t);

// torch.promote_types: the smallest type both a and b convert to without losing category.
// (float16, bfloat16) -> float32; (uint8, int8) -> int16. A complex and a real dtype -> the
// complex dtype wide enough for both (float64 + complex64 -> complex128), as torch. uint16 /
// uint32 / uint64 with another dtype: the other one if it is floating, else std::invalid_argument
// with torch's message ("Promotion for uint16, uint32, uint64 types is not supported, ...").
DType promote_types(DType a, DType b);

// Default dtypes of Python scalars (torch.get_default_dtype() is float32).
inline constexpr DType kDefaultFloat = DType::Float32;
inline constexpr DType kDefaultInt = DType::Int64;

}  // namespace stax
