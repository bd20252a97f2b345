// 16-bit floating-point storage types: IEEE binary16 (stax::Half) and bfloat16 (stax::BFloat16).
//
// Both are storage types: they hold the raw uint16_t bits and do arithmetic by converting to float
// (the implicit conversions make `a + b` compute in float, as c10::Half does).
//
// Conversions, all branch-only integer code (no FPU state, no F16C), so every platform agrees:
//   - to float: exact (both formats are subsets of float32); NaN payloads are kept.
//   - from float: round to nearest, ties to even. Values >= 65520 in magnitude become +-Inf for
//     Half; float subnormals and tiny values round to Half subnormals / signed zero correctly.
//     NaN stays NaN with the sign and the top payload bits kept and the quiet bit set (what F16C
//     hardware does), so every non-NaN Half survives Half -> float -> Half bit for bit.
//   - from double: through float, i.e. Half(float(d)): PyTorch's semantics (c10::Half has no
//     double constructor), which can round twice; numpy's float64 -> float16 rounds once.
#pragma once

#include <bit>
#include <cstdint>

namespace stax {

// ---- raw bit conversions ------------------------------------------------------------------------

constexpr float half_bits_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (man << 13));  // Inf / NaN
  if (exp == 0) {
    if (man == 0) return std::bit_cast<float>(sign);  // signed zero
    // Subnormal: man * 2^-24. Normalize so the leading 1 reaches bit 10.
    uint32_t shift = 0;
    while ((man & 0x400u) == 0) {
      man <<= 1;
      ++shift;
    }
    man &= 0x3ffu;
    return std::bit_cast<float>(sign | ((113u - shift) << 23) | (man << 13));
  }
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (man << 13));
}

constexpr uint16_t float_to_half_bits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) {
    if (ax == 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u);  // Inf
    return static_cast<uint16_t>(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));  // quiet NaN
  }
  if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 rounds to Inf
  if (ax < 0x38800000u) {
    // Below the smallest normal Half (2^-14): result is a subnormal count of 2^-24 units.
    uint32_t e = ax >> 23;
    if (e < 102) return static_cast<uint16_t>(sign);  // < 2^-25: rounds to zero
    uint32_t m = (ax & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - e;  // 14..24
    uint32_t r = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (r & 1u))) ++r;  // may carry into the smallest normal
    return static_cast<uint16_t>(sign | r);
  }
  uint32_t r = ax - 0x38000000u;  // rebias the exponent from 127 to 15
  uint32_t h = r >> 13;
  uint32_t rem = r & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // carries into the exponent correctly
  return static_cast<uint16_t>(sign | h);
}

constexpr float bf16_bits_to_float(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

constexpr uint16_t float_to_bf16_bits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x0040u);  // NaN
  uint32_t bias = 0x7fffu + ((x >> 16) & 1u);  // ties to even; overflow carries into Inf
  return static_cast<uint16_t>((x + bias) >> 16);
}

// ---- storage types ------------------------------------------------------------------------------

struct Half {
  uint16_t bits = 0;

  constexpr Half() = default;
  constexpr Half(float f) : bits(float_to_half_bits(f)) {}  // NOLINT: implicit, like c10::Half
  static constexpr Half from_bits(uint16_t b) {
    Half h;
    h.bits = b;
    return h;
  }
  constexpr operator float() const { return half_bits_to_float(bits); }  // NOLINT
};

struct BFloat16 {
  uint16_t bits = 0;

  constexpr BFloat16() = default;
  constexpr BFloat16(float f) : bits(float_to_bf16_bits(f)) {}  // NOLINT: implicit
  static constexpr BFloat16 from_bits(uint16_t b) {
    BFloat16 h;
    h.bits = b;
    return h;
  }
  constexpr operator float() const { return bf16_bits_to_float(bits); }  // NOLINT
};

static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2);

}  // namespace stax
