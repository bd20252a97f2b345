// 16-bit float storage for C++ kernels on any C++17 compiler: GCC 12 has no __bf16 (the default
// CStyleTables spelling), and _Float16 is not everywhere either. stax_half / stax_bf16 hold the
// bits; stax_scalar::convert between them and every compute type goes through float with
// half_bits.hpp's rounding (the reference runtime's, so results agree bit for bit).
//
//   kernel prelude:  #include "stax/sdk/scalar_ops.hpp"
//                    #include "stax/sdk/scalar_ops_f16.hpp"
//   printer tables:  CStyleTables t = f16_struct_tables();   // storage_types for the two dtypes
#ifndef STAX_SDK_SCALAR_OPS_F16_HPP
#define STAX_SDK_SCALAR_OPS_F16_HPP

#include "stax/sdk/half_bits.hpp"

struct stax_half { unsigned short bits; };
struct stax_bf16 { unsigned short bits; };

namespace stax_scalar {
inline float stax_to_float(stax_half x) { return stax_f16::half_to_float(x.bits); }
inline float stax_to_float(stax_bf16 x) { return stax_f16::bf16_to_float(x.bits); }
template <class H> inline H stax_from_float(float x);
template <> inline stax_half stax_from_float<stax_half>(float x) {
  return stax_half{stax_f16::float_to_half(x)};
}
template <> inline stax_bf16 stax_from_float<stax_bf16>(float x) {
  return stax_bf16{stax_f16::float_to_bf16(x)};
}
#define STAX_F16_CONVERSIONS(H)                                                         \
  template <> inline float convert<float, H>(H x) { return stax_to_float(x); }          \
  template <> inline double convert<double, H>(H x) { return stax_to_float(x); }        \
  template <> inline i64 convert<i64, H>(H x) { return convert<i64>(stax_to_float(x)); } \
  template <> inline bool convert<bool, H>(H x) { return stax_to_float(x) != 0.0f; }    \
  template <> inline H convert<H, float>(float x) { return stax_from_float<H>(x); }     \
  template <> inline H convert<H, double>(double x) {                                   \
    return stax_from_float<H>((float)x);                                                \
  }                                                                                     \
  template <> inline H convert<H, i64>(i64 x) { return stax_from_float<H>((float)x); }  \
  template <> inline H convert<H, bool>(bool x) {                                       \
    return stax_from_float<H>(x ? 1.0f : 0.0f);                                         \
  }
STAX_F16_CONVERSIONS(stax_half)
STAX_F16_CONVERSIONS(stax_bf16)
#undef STAX_F16_CONVERSIONS
}  // namespace stax_scalar

#endif  // STAX_SDK_SCALAR_OPS_F16_HPP
