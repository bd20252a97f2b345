// The register tiles of stax/sdk/gemm.hpp for each instruction set, and the choice among them.
//
// One body (gemm_tile.inc) is compiled three times: for AVX-512F and for AVX2 + FMA inside a
// target region (the rest of the program keeps the baseline target; the driver picks a set with
// __builtin_cpu_supports at run time), and in plain C++ with std::fma (any CPU). Every version
// performs the same fused multiply-adds in the same order, so all give the same bits.
//
// Tile shapes (MR rows x NR = NV vectors of columns; accumulators MR * NV of the 32 zmm / 16 ymm
// registers): a product picks the widest tile whose NR does not exceed its column count rounded
// up to a vector, so that narrow products (attention's head dim 32) waste no lanes. MR stays at
// most 8: rows of a row-major A are read in place through one address register each (12 rows
// spilled registers in the inner loop: 12 x 32 ran at 70 GFLOP/s where 6 x 32 ran at 100).
#ifndef STAX_SDK_GEMM_TILES_HPP
#define STAX_SDK_GEMM_TILES_HPP

#include <cmath>
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define STAX_GEMM_X86 1
#else
#define STAX_GEMM_X86 0
#endif

namespace stax::sdk::gemm {

// A register tile (gemm_tile.inc): C tile (MR x NR) += A rows (strided) @ B panel (NR per term)
// over kc terms.
template <class T>
using TileFn = void (*)(int64_t kc, const T* a, int64_t a_rs, int64_t a_cs, const T* bp, T* c,
                        int64_t c_rs, bool accumulate, const T* c_next);

template <class T>
struct TileShape {
  int mr = 1, nr = 1;
  TileFn<T> fn = nullptr;
  // rows[h] for 0 < h < mr: the tile of h rows (a row block's last, partial tile row), or null.
  const TileFn<T>* rows = nullptr;
};

#if STAX_GEMM_X86

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,fma,prfchw"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,fma,prfchw")
#endif
namespace avx512 {
template <class T>
struct Isa;
template <>
struct Isa<float> {
  using V = __m512;
  static constexpr int kLanes = 16;
  static inline V zero() { return _mm512_setzero_ps(); }
  static inline V load(const float* p) { return _mm512_loadu_ps(p); }
  static inline void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static inline V broadcast(const float* p) { return _mm512_set1_ps(*p); }
  static inline V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  // prefetchw (PRFCHW: every CPU with AVX-512 has it).
  static inline void prefetch_write(const float* p) { __builtin_prefetch(p, 1, 3); }
};
template <>
struct Isa<double> {
  using V = __m512d;
  static constexpr int kLanes = 8;
  static inline V zero() { return _mm512_setzero_pd(); }
  static inline V load(const double* p) { return _mm512_loadu_pd(p); }
  static inline void store(double* p, V v) { _mm512_storeu_pd(p, v); }
  static inline V broadcast(const double* p) { return _mm512_set1_pd(*p); }
  static inline V fma(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
  static inline void prefetch_write(const double* p) { __builtin_prefetch(p, 1, 3); }
};
#include "stax/sdk/gemm_tile.inc"

// dst[c * dst_stride + r] = src[r * src_stride + c] for a 16 x 16 block of floats, in registers
// (packing a transposed B: attention's Kᵀ): unpack pairs of rows, then shuffle lanes and 128-bit
// quarters. The loops are unrolled (at -O2 GCC kept r and t on the stack: 1.7x slower), and the
// shuffles are the merge-masked forms with a full mask (the same instructions; the plain ones
// start from _mm512_undefined_ps, which GCC 12 reports as uninitialized once unrolled).
inline void transpose16(const float* src, int64_t src_stride, float* dst, int64_t dst_stride) {
  constexpr __mmask16 all = 0xffff;
  __m512 r[16], t[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(src + i * src_stride);
#pragma GCC unroll 16
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_mask_unpacklo_ps(r[i], all, r[i], r[i + 1]);
    t[i + 1] = _mm512_mask_unpackhi_ps(r[i], all, r[i], r[i + 1]);
  }
#pragma GCC unroll 16
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_mask_shuffle_ps(t[i], all, t[i], t[i + 2], 0x44);
    r[i + 1] = _mm512_mask_shuffle_ps(t[i], all, t[i], t[i + 2], 0xee);
    r[i + 2] = _mm512_mask_shuffle_ps(t[i + 1], all, t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm512_mask_shuffle_ps(t[i + 1], all, t[i + 1], t[i + 3], 0xee);
  }
#pragma GCC unroll 16
  for (int i = 0; i < 4; ++i) {
    t[i] = _mm512_mask_shuffle_f32x4(r[i], all, r[i], r[i + 4], 0x88);
    t[i + 4] = _mm512_mask_shuffle_f32x4(r[i], all, r[i], r[i + 4], 0xdd);
    t[i + 8] = _mm512_mask_shuffle_f32x4(r[i + 8], all, r[i + 8], r[i + 12], 0x88);
    t[i + 12] = _mm512_mask_shuffle_f32x4(r[i + 8], all, r[i + 8], r[i + 12], 0xdd);
  }
#pragma GCC unroll 16
  for (int i = 0; i < 8; ++i) {
    r[i] = _mm512_mask_shuffle_f32x4(t[i], all, t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_mask_shuffle_f32x4(t[i], all, t[i], t[i + 8], 0xdd);
  }
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) _mm512_storeu_ps(dst + i * dst_stride, r[i]);
}

// dst[r * dst_stride + j] = j < n ? src[r * src_stride + j] : 0 for j < width and r < rows:
// `rows` strided rows of n floats copied into rows of `width` (the tail zeroed), 16 lanes at a
// time with masked loads and stores. The packing of a row-major B panel (n = NR columns, or
// fewer in the last panel) and of a transposed A's row panel (n = MR rows per term); the
// driver's plain loops, which GCC does not vectorise at -O2, took ~12% of a GPT block's step
// at K = 128..512.
inline void copy_rows(const float* src, int64_t src_stride, float* dst, int64_t dst_stride,
                      int64_t rows, int64_t n, int64_t width) {
  auto lanes = [](int64_t k) { return k >= 16 ? __mmask16(0xffff) : __mmask16((1u << k) - 1u); };
  for (int64_t r = 0; r < rows; ++r) {
    const float* s = src + r * src_stride;
    float* d = dst + r * dst_stride;
    for (int64_t j = 0; j < width; j += 16) {
      const __m512 v = _mm512_maskz_loadu_ps(lanes(n > j ? n - j : 0), s + j);
      _mm512_mask_storeu_ps(d + j, lanes(width - j), v);
    }
  }
}
}  // namespace avx512
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif
namespace avx2 {
template <class T>
struct Isa;
template <>
struct Isa<float> {
  using V = __m256;
  static constexpr int kLanes = 8;
  static inline V zero() { return _mm256_setzero_ps(); }
  static inline V load(const float* p) { return _mm256_loadu_ps(p); }
  static inline void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static inline V broadcast(const float* p) { return _mm256_broadcast_ss(p); }
  static inline V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  // A read prefetch: Haswell has AVX2 but not PRFCHW.
  static inline void prefetch_write(const float* p) { __builtin_prefetch(p, 0, 3); }
};
template <>
struct Isa<double> {
  using V = __m256d;
  static constexpr int kLanes = 4;
  static inline V zero() { return _mm256_setzero_pd(); }
  static inline V load(const double* p) { return _mm256_loadu_pd(p); }
  static inline void store(double* p, V v) { _mm256_storeu_pd(p, v); }
  static inline V broadcast(const double* p) { return _mm256_broadcast_sd(p); }
  static inline V fma(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
  static inline void prefetch_write(const double* p) { __builtin_prefetch(p, 0, 3); }
};
#include "stax/sdk/gemm_tile.inc"
}  // namespace avx2
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#endif  // STAX_GEMM_X86

namespace portable {
template <class T>
struct Isa {
  using V = T;
  static constexpr int kLanes = 1;
  static inline V zero() { return T(0); }
  static inline V load(const T* p) { return *p; }
  static inline void store(T* p, V v) { *p = v; }
  static inline V broadcast(const T* p) { return *p; }
  static inline V fma(V a, V b, V c) { return std::fma(a, b, c); }
  static inline void prefetch_write(const T*) {}
};
#include "stax/sdk/gemm_tile.inc"
}  // namespace portable

inline InstructionSet detect_instruction_set() {
#if STAX_GEMM_X86
  static const InstructionSet set = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return InstructionSet::Avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return InstructionSet::Avx2;
    return InstructionSet::Portable;
  }();
  return set;
#else
  return InstructionSet::Portable;
#endif
}

// The tile for a product with n columns: the widest shape of the set whose NR <= n rounded up to
// a vector (shapes listed widest first).
template <class T>
TileShape<T> pick_tile(InstructionSet set, int64_t n) {
  auto choose = [n](const TileShape<T>* shapes, int count, int lanes) {
    int64_t want = (n + lanes - 1) / lanes * lanes;
    for (int s = 0; s < count; ++s)
      if (shapes[s].nr <= want) return shapes[s];
    return shapes[count - 1];
  };
#if STAX_GEMM_X86
  if (set == InstructionSet::Avx512) {
    constexpr int L = avx512::Isa<T>::kLanes;
    using avx512::tile;
    static const TileFn<T> rows6x4[] = {nullptr,         &tile<T, 1, 4>, &tile<T, 2, 4>,
                                        &tile<T, 3, 4>, &tile<T, 4, 4>, &tile<T, 5, 4>};
    static const TileFn<T> rows6x2[] = {nullptr,         &tile<T, 1, 2>, &tile<T, 2, 2>,
                                        &tile<T, 3, 2>, &tile<T, 4, 2>, &tile<T, 5, 2>};
    static const TileShape<T> shapes[] = {{6, 4 * L, &tile<T, 6, 4>, rows6x4},
                                          {8, 3 * L, &tile<T, 8, 3>},
                                          {6, 2 * L, &tile<T, 6, 2>, rows6x2},
                                          {8, L, &tile<T, 8, 1>}};
    return choose(shapes, 4, L);
  }
  if (set == InstructionSet::Avx2) {
    constexpr int L = avx2::Isa<T>::kLanes;
    static const TileShape<T> shapes[] = {{6, 2 * L, &avx2::tile<T, 6, 2>},
                                          {12, L, &avx2::tile<T, 12, 1>}};
    return choose(shapes, 2, L);
  }
#endif
  (void)set;
  static const TileShape<T> shapes[] = {{4, 4, &portable::tile<T, 4, 4>}};
  return choose(shapes, 1, 1);
}

}  // namespace stax::sdk::gemm

#endif  // STAX_SDK_GEMM_TILES_HPP
