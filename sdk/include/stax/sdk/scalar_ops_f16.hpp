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
STAX_SCALAR_F16_CONVERSIONS(stax_half)
STAX_SCALAR_F16_CONVERSIONS(stax_bf16)
}  // namespace stax_scalar

#endif  // STAX_SDK_SCALAR_OPS_F16_HPP
