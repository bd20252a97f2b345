// Header-only C++ comfort over plugin_api.h: enums, small value types, the struct_size helpers
// and the one exception type plugins throw (STAX_DEFINE_PLUGIN turns it into a StaxError).
// C++17; no dependency beyond the standard library.
#ifndef STAX_SDK_TYPES_HPP
#define STAX_SDK_TYPES_HPP

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "stax/plugin_api.h"

namespace stax {
namespace sdk {

enum class DType : int32_t {
  Float32 = STAX_DTYPE_FLOAT32,
  Float64 = STAX_DTYPE_FLOAT64,
  Float16 = STAX_DTYPE_FLOAT16,
  BFloat16 = STAX_DTYPE_BFLOAT16,
  Int64 = STAX_DTYPE_INT64,
  Int32 = STAX_DTYPE_INT32,
  Int8 = STAX_DTYPE_INT8,
  UInt8 = STAX_DTYPE_UINT8,
  Bool = STAX_DTYPE_BOOL,
  Int16 = STAX_DTYPE_INT16,
  UInt16 = STAX_DTYPE_UINT16,
  UInt32 = STAX_DTYPE_UINT32,
  UInt64 = STAX_DTYPE_UINT64,
};
inline constexpr int kNumDTypes = STAX_NUM_DTYPES;

// Other (ABI 1.2): a kind the backend names in DeviceProperties::kind_name.
enum class DeviceKind : int32_t {
  CPU = STAX_DEVICE_CPU,
  CUDA = STAX_DEVICE_CUDA,
  Other = STAX_DEVICE_OTHER
};

enum class ReductionType : int32_t {
  None = STAX_REDUCTION_NONE,
  Sum = STAX_REDUCTION_SUM,
  Prod = STAX_REDUCTION_PROD,
  Max = STAX_REDUCTION_MAX,
  Min = STAX_REDUCTION_MIN,
  ArgMax = STAX_REDUCTION_ARGMAX,
  ArgMin = STAX_REDUCTION_ARGMIN,
  Any = STAX_REDUCTION_ANY,
  All = STAX_REDUCTION_ALL,
};

enum class BufferRole : int32_t {
  Input = STAX_BUFFER_INPUT,
  Output = STAX_BUFFER_OUTPUT,
  InOut = STAX_BUFFER_INOUT,
  Temp = STAX_BUFFER_TEMP,
};

inline bool valid_dtype(int32_t d) { return d >= 0 && d < STAX_NUM_DTYPES; }

inline const char* dtype_name(DType t) {
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
    case DType::Int16: return "int16";
    case DType::UInt16: return "uint16";
    case DType::UInt32: return "uint32";
    case DType::UInt64: return "uint64";
  }
  return "?";
}

inline bool is_floating(DType t) {
  return t == DType::Float32 || t == DType::Float64 || t == DType::Float16 ||
         t == DType::BFloat16;
}
inline bool is_integral(DType t) { return !is_floating(t) && t != DType::Bool; }  // bool excluded

inline const char* reduction_type_name(ReductionType r) {
  switch (r) {
    case ReductionType::None: return "none";
    case ReductionType::Sum: return "sum";
    case ReductionType::Prod: return "prod";
    case ReductionType::Max: return "max";
    case ReductionType::Min: return "min";
    case ReductionType::ArgMax: return "argmax";
    case ReductionType::ArgMin: return "argmin";
    case ReductionType::Any: return "any";
    case ReductionType::All: return "all";
  }
  return "?";
}

inline const char* buffer_role_name(BufferRole r) {
  switch (r) {
    case BufferRole::Input: return "input";
    case BufferRole::Output: return "output";
    case BufferRole::InOut: return "inout";
    case BufferRole::Temp: return "temp";
  }
  return "?";
}

// The op's name ("add", "load", ...) or "<opcode N>" for an unknown opcode.
inline std::string opcode_name(int32_t opcode) {
  const char* n = stax_opcode_name(opcode);
  return n ? std::string(n) : "<opcode " + std::to_string(opcode) + ">";
}

// The opcode for an op name, or STAX_OP_INVALID.
inline StaxOpcode opcode_from_name(const std::string& name) {
  for (int32_t op = 1; op < STAX_NUM_OPCODES; ++op) {
    const char* n = stax_opcode_name(op);
    if (n && name == n) return static_cast<StaxOpcode>(op);
  }
  return STAX_OP_INVALID;
}

// Op classes, generated from ops.def.
inline bool is_unary_op(int32_t opcode) {
  switch (opcode) {
#define STAX_UNARY_OP(name) case STAX_OP_##name:
#include "stax/sdk/ops.def"
      return true;
    default: return false;
  }
}
inline bool is_binary_op(int32_t opcode) {
  switch (opcode) {
#define STAX_BINARY_OP(name) case STAX_OP_##name:
#include "stax/sdk/ops.def"
      return true;
    default: return false;
  }
}
inline bool is_compare_op(int32_t opcode) {
  switch (opcode) {
#define STAX_COMPARE_OP(name) case STAX_OP_##name:
#include "stax/sdk/ops.def"
      return true;
    default: return false;
  }
}

// A constant's value: floating dtypes use `f`, integer and bool dtypes use `i` (no precision
// lost for int64 beyond 2^53).
struct Scalar {
  double f = 0.0;
  int64_t i = 0;
  bool integral = false;

  static Scalar floating(double v) { return Scalar{v, 0, false}; }
  static Scalar integer(int64_t v) { return Scalar{static_cast<double>(v), v, true}; }
  double as_double() const { return integral ? static_cast<double>(i) : f; }
  int64_t as_int() const {  // floating: truncated; NaN and out-of-range values give 0
    if (integral) return i;
    return (f > -9.2e18 && f < 9.2e18) ? static_cast<int64_t>(f) : 0;
  }
};

// The exception plugins throw; STAX_DEFINE_PLUGIN turns it (and any other exception) into a
// StaxError carrying `code` and what().
class PluginError : public std::runtime_error {
 public:
  PluginError(StaxErrorCode code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  StaxErrorCode code() const { return code_; }

 private:
  StaxErrorCode code_;
};

// ---- struct_size helpers ------------------------------------------------------------------
// True when the struct `s` (written by the other side) is big enough to hold `field`.
#define STAX_SDK_HAS_FIELD(s, Type, field) \
  ((s)->struct_size >= offsetof(Type, field) + sizeof(((const Type*)nullptr)->field))

// Copies the prefix of `src` that fits into the caller's struct `*dst` (dst->struct_size says
// how big it is), keeping dst->struct_size. Use it to fill output structs.
template <class T>
void copy_out(T* dst, const T& src) {
  static_assert(std::is_trivially_copyable<T>::value, "C structs only");
  size_t caller_size = dst->struct_size;
  size_t n = caller_size < sizeof(T) ? caller_size : sizeof(T);
  std::memcpy(static_cast<void*>(dst), &src, n);
  dst->struct_size = caller_size;
}

// A copy of `*src` as a full struct of this build: fields the writer did not have are zero.
template <class T>
T copy_in(const T* src) {
  static_assert(std::is_trivially_copyable<T>::value, "C structs only");
  T out;
  std::memset(static_cast<void*>(&out), 0, sizeof(T));
  size_t n = src->struct_size < sizeof(T) ? src->struct_size : sizeof(T);
  std::memcpy(static_cast<void*>(&out), src, n);
  out.struct_size = sizeof(T);
  return out;
}

// A zero-initialised C struct with struct_size set.
template <class T>
T make_struct() {
  static_assert(std::is_trivially_copyable<T>::value, "C structs only");
  T out;
  std::memset(static_cast<void*>(&out), 0, sizeof(T));
  out.struct_size = sizeof(T);
  return out;
}

// A read-only view of a contiguous array (std::span is C++20).
template <class T>
class Span {
 public:
  Span() = default;
  Span(const T* data, size_t size) : data_(data), size_(size) {}
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T& operator[](size_t i) const { return data_[i]; }

 private:
  const T* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace sdk
}  // namespace stax

#endif  // STAX_SDK_TYPES_HPP
