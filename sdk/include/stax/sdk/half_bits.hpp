// Bit conversions between float32 and the 16-bit float storage formats (IEEE binary16 and
// bfloat16). This one text serves twice: plugins include it (cpu_cpp's extern kernels, the
// kernels of scalar_ops_f16.hpp), and the cpu_cpp build embeds it verbatim into every kernel's
// prelude (kernels load / store float16 and bfloat16 through these helpers). So: no #include, C++17, integer code only (no F16C, no FPU state).
//
// Semantics (the reference runtime's Half / BFloat16, so that compiled code agrees bit for bit):
//   * to float: exact; NaN payloads kept.
//   * float -> binary16: round to nearest, ties to even; |x| >= 65520 -> +-Inf; results below the
//     smallest normal become subnormals or signed zero; NaN -> quiet NaN with the sign and the top
//     payload bits kept.
//   * float -> bfloat16: round to nearest, ties to even (overflow carries into Inf); NaN -> quiet
//     NaN (bit 6 of the result set).
//   * double -> either format goes through float first (PyTorch's semantics).
#ifndef STAX_SDK_HALF_BITS_HPP
#define STAX_SDK_HALF_BITS_HPP

namespace stax_f16 {

typedef unsigned int u32;
typedef unsigned short u16;

inline u32 bits_of(float f) { return __builtin_bit_cast(u32, f); }
inline float float_of(u32 x) { return __builtin_bit_cast(float, x); }

inline float half_to_float(u16 h) {
  u32 sign = (u32)(h & 0x8000u) << 16;
  u32 e = ((u32)h >> 10) & 0x1fu;
  u32 m = (u32)h & 0x3ffu;
  if (e == 0x1fu) return float_of(sign | 0x7f800000u | (m << 13));  // Inf, NaN
  if (e == 0) {
    if (m == 0) return float_of(sign);  // +-0
    u32 shift = 0;                      // subnormal: normalise the mantissa
    while ((m & 0x400u) == 0) {
      m <<= 1;
      ++shift;
    }
    return float_of(sign | ((113u - shift) << 23) | ((m & 0x3ffu) << 13));
  }
  return float_of(sign | ((e + 112u) << 23) | (m << 13));
}

inline u16 float_to_half(float f) {
  u32 x = bits_of(f);
  u32 sign = (x >> 16) & 0x8000u;
  u32 a = x & 0x7fffffffu;
  if (a >= 0x7f800000u) {
    if (a == 0x7f800000u) return (u16)(sign | 0x7c00u);
    return (u16)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  }
  if (a >= 0x477ff000u) return (u16)(sign | 0x7c00u);  // rounds to Inf
  if (a < 0x38800000u) {                               // below 2^-14: subnormal or zero
    u32 e = a >> 23;
    if (e < 102u) return (u16)sign;
    u32 m = (a & 0x7fffffu) | 0x800000u;
    u32 shift = 126u - e;
    u32 r = m >> shift;
    u32 rest = m & ((1u << shift) - 1u);
    u32 half = 1u << (shift - 1u);
    if (rest > half || (rest == half && (r & 1u))) ++r;
    return (u16)(sign | r);
  }
  u32 r = a - 0x38000000u;  // exponent bias 127 -> 15
  u32 h = r >> 13;
  u32 rest = r & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return (u16)(sign | h);
}

inline float bf16_to_float(u16 b) { return float_of((u32)b << 16); }

inline u16 float_to_bf16(float f) {
  u32 x = bits_of(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (u16)((x >> 16) | 0x0040u);
  return (u16)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

}  // namespace stax_f16

#endif  // STAX_SDK_HALF_BITS_HPP
