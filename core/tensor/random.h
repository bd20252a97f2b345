// Counter-based random numbers for the reference runtime: Philox-4x32-10 (Salmon et al., "Parallel
// random numbers: as easy as 1, 2, 3", SC'11), the generator cuRAND and PyTorch's CUDA RNG use.
//
// Element i of a random tensor drawn with (seed, offset) is a pure function of (seed, offset + i):
//   key     = {lo32(seed), hi32(seed)}
//   counter = {lo32(offset + i), hi32(offset + i), 0, 0}
//   w[0..3] = philox4x32_10(counter, key)
// so the value of an element never depends on the thread count, the tile shape or the order of
// evaluation, and a kernel (C++, CUDA) can reproduce it from this file's few lines. A caller that
// draws several tensors from one seed advances `offset` by each tensor's numel.
//
// From the four words w:
//   uniform float32 / float16 / bfloat16 in [0, 1): (w0 >> (32 - p)) * 2^-p with p = 24 / 11 / 8
//     bits (the target's precision, so every value is exact and 1.0 never appears);
//   uniform float64 in [0, 1): ((w0 << 32 | w1) >> 11) * 2^-53;
//   normal (Box-Muller, computed in double, then rounded to the target dtype):
//     u1 = 1 - uniform64(w0, w1) in (0, 1], u2 = uniform64(w2, w3),
//     z = sqrt(-2 ln u1) * cos(2 pi u2)
//     (portable up to libm's last-place accuracy of log/cos/sqrt);
//   integer in [low, high): low + ((w0 << 32 | w1) mod (high - low))  (bias <= (high-low) / 2^64).
#pragma once

#include <array>
#include <cstdint>

namespace stax {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

// Philox-4x32 with 10 rounds; matches the Random123 known-answer vectors.
constexpr PhiloxCounter philox4x32_10(PhiloxCounter ctr, PhiloxKey key) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key[0] += kW0;
      key[1] += kW1;
    }
    uint64_t p0 = static_cast<uint64_t>(kM0) * ctr[0];
    uint64_t p1 = static_cast<uint64_t>(kM1) * ctr[2];
    uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    ctr = {hi1 ^ ctr[1] ^ key[0], lo1, hi0 ^ ctr[3] ^ key[1], lo0};
  }
  return ctr;
}

// The four words for element `index` (= offset + i) under `seed` (see the header comment).
constexpr PhiloxCounter philox_words(uint64_t seed, uint64_t index) {
  return philox4x32_10(
      {static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), 0u, 0u},
      {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
}

// Uniform in [0, 1) with `bits` bits of precision (1..24) from one word.
constexpr float uniform_from_word(uint32_t w, int bits) {
  return static_cast<float>(w >> (32 - bits)) * (1.0f / static_cast<float>(1u << bits));
}

// Uniform double in [0, 1) with 53 bits from two words.
constexpr double uniform64_from_words(uint32_t hi, uint32_t lo) {
  uint64_t v = ((static_cast<uint64_t>(hi) << 32) | lo) >> 11;
  return static_cast<double>(v) * 0x1.0p-53;
}

// Standard normal sample from four words (Box-Muller, cosine branch), in double.
double normal_from_words(const PhiloxCounter& w);

}  // namespace stax
