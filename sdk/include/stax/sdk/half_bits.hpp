// Bit conversions between float32 and the 16-bit float storage formats (IEEE binary16 and
// bfloat16). This one text serves twice: plugins include it (cpu_cpp's extern kernels, the
// kernels of scalar_ops_f16.hpp), and the cpu_cpp build embeds it verbatim into every kernel's
// prelude (kernels load / store float16 and bfloat16 through these helpers). So: no #include, C++17, integer code only (no F16C, no FPU state).
// It is also valid C99, the one copy of these roundings for C kernels too: stax/sdk/scalar_ops.h
// includes it, and in C the functions are `static inline stax_f16_<name>` (stax_f16_half_to_float,
// stax_f16_float_to_half, stax_f16_bf16_to_float, stax_f16_float_to_bf16).
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

#ifdef __cplusplus
namespace stax_f16 {
#define STAX_F16_FN inline
#define STAX_F16(name) name
#else
#define STAX_F16_FN static inline
#define STAX_F16(name) stax_f16_##name
#endif

typedef unsigned int STAX_F16(u32);
typedef unsigned short STAX_F16(u16);
#define u32 STAX_F16(u32)
#define u16 STAX_F16(u16)

#ifdef __cplusplus
inline u32 bits_of(float f) { return __builtin_bit_cast(u32, f); }
inline float float_of(u32 x) { return __builtin_bit_cast(float, x); }
#else
static inline u32 stax_f16_bits_of(float f) {
  union { float f; u32 u; } v;
  v.f = f;
  return v.u;
}
static inline float stax_f16_float_of(u32 x) {
  union { u32 u; float f; } v;
  v.u = x;
  return v.f;
}
#endif

STAX_F16_FN float STAX_F16(half_to_float)(u16 h) {
  u32 sign = (u32)(h & 0x8000u) << 16;
  u32 e = ((u32)h >> 10) & 0x1fu;
  u32 m = (u32)h & 0x3ffu;
  if (e == 0x1fu) return STAX_F16(float_of)(sign | 0x7f800000u | (m << 13));  // Inf, NaN
  if (e == 0) {
    if (m == 0) return STAX_F16(float_of)(sign);  // +-0
    u32 shift = 0;                      // subnormal: normalise the mantissa
    while ((m & 0x400u) == 0) {
      m <<= 1;
      ++shift;
    }
    return STAX_F16(float_of)(sign | ((113u - shift) << 23) | ((m & 0x3ffu) << 13));
  }
  return STAX_F16(float_of)(sign | ((e + 112u) << 23) | (m << 13));
}

STAX_F16_FN u16 STAX_F16(float_to_half)(float f) {
  u32 x = STAX_F16(bits_of)(f);
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

STAX_F16_FN float STAX_F16(bf16_to_float)(u16 b) { return STAX_F16(float_of)((u32)b << 16); }

STAX_F16_FN u16 STAX_F16(float_to_bf16)(float f) {
  u32 x = STAX_F16(bits_of)(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (u16)((x >> 16) | 0x0040u);
  return (u16)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

#undef u32
#undef u16
#undef STAX_F16_FN
#undef STAX_F16
#ifdef __cplusplus
}  // namespace stax_f16
#endif

#endif  // STAX_SDK_HALF_BITS_HPP
