// The direct convolution (conv_direct.h): padded planes, register tiles per instruction set.
#include "plugins/cpu_cpp/conv_direct.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include "stax/sdk/backend.hpp"
#include "stax/sdk/gemm.hpp"

namespace stax::cpu::conv {

namespace {

// What a tile reads: the group's weights (Cig x k1 x k2 terms in chain order) and the padded
// scratch's geometry (elements per channel plane, per padded row), the output row stride.
template <class T>
struct DirectArgs {
  const T* w = nullptr;
  int64_t cig = 1, plane = 0, wp = 0, out_rs = 0;
  int64_t k1 = 1, k2 = 1, s1 = 1, d1 = 1, d2 = 1;
  int64_t w_cs = 0, out_cs = 0;  // a block's channel strides: weights, output planes
};

// Output channels per block of the blocked form.
constexpr int kBlockChannels = 4;

template <class T>
using DirectTileFn = void (*)(const DirectArgs<T>&, const T*, T*, int64_t);

template <class T>
struct DirectTile {
  DirectTileFn<T> fn = nullptr;
  int64_t lanes = 1;
};

// The target strings are the SDK's own (stax/sdk/gemm_tiles.hpp): GCC inlines Isa<T>'s functions
// only into a caller whose target has every feature of theirs; with "avx512f,fma" here (no
// prfchw) every load and fma of the tiles was a call (the blocked form ran 3x slower than the
// GEMM forms, the depthwise form too).
#if STAX_GEMM_X86
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,fma,prfchw"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,fma,prfchw")
#endif
namespace avx512 {
template <class T>
using Isa = sdk::gemm::avx512::Isa<T>;
#include "plugins/cpu_cpp/conv_direct_tile.inc"
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
using Isa = sdk::gemm::avx2::Isa<T>;
#include "plugins/cpu_cpp/conv_direct_tile.inc"
}  // namespace avx2
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif  // STAX_GEMM_X86

namespace portable {
template <class T>
using Isa = sdk::gemm::portable::Isa<T>;
#include "plugins/cpu_cpp/conv_direct_tile.inc"
}  // namespace portable

template <class T>
DirectTile<T> tile_for(int64_t rows) {
#if STAX_GEMM_X86
  switch (sdk::gemm::detect_instruction_set()) {
    case sdk::gemm::InstructionSet::Avx512: return avx512::direct_tile_for<T>(rows);
    case sdk::gemm::InstructionSet::Avx2: return avx2::direct_tile_for<T>(rows);
    case sdk::gemm::InstructionSet::Portable: break;
  }
#endif
  return portable::direct_tile_for<T>(rows);
}

// The blocked form's block of `rows` rows and its most rows, for the CPU's set.
template <class T>
DirectTile<T> block_for(int64_t rows) {
#if STAX_GEMM_X86
  switch (sdk::gemm::detect_instruction_set()) {
    case sdk::gemm::InstructionSet::Avx512: return avx512::direct_block_for<T>(rows);
    case sdk::gemm::InstructionSet::Avx2: return avx2::direct_block_for<T>(rows);
    case sdk::gemm::InstructionSet::Portable: break;
  }
#endif
  return portable::direct_block_for<T>(rows);
}

template <class T>
int64_t block_rows() {
#if STAX_GEMM_X86
  switch (sdk::gemm::detect_instruction_set()) {
    case sdk::gemm::InstructionSet::Avx512: return avx512::block_rows<T>();
    case sdk::gemm::InstructionSet::Avx2: return avx2::block_rows<T>();
    case sdk::gemm::InstructionSet::Portable: break;
  }
#endif
  return portable::block_rows<T>();
}

constexpr int64_t kTileRows = 8;

// The patch tiles run on AVX-512 alone (6 x 4 accumulators need its 32 vector registers).
bool avx512_available() {
#if STAX_GEMM_X86
  return sdk::gemm::detect_instruction_set() == sdk::gemm::InstructionSet::Avx512;
#else
  return false;
#endif
}

[[noreturn]] void out_of_memory(size_t bytes, const char* what) {
  throw sdk::PluginError(STAX_ERROR_RUNTIME, "cpu_cpp extern kernel 'convolution': out of memory: " +
                                                 std::to_string(bytes) + " bytes for " + what);
}

// The blocked form's padded input (every sample and channel), kept by the calling thread between
// calls (the pool's tasks read it; plane_scratch is the tasks' own).
template <class T>
T* padded_input(int64_t n) {
  thread_local std::vector<T> keep;
  if (static_cast<int64_t>(keep.size()) < n) {
    std::vector<T>().swap(keep);
    try {
      keep.resize(static_cast<size_t>(n), T(0));
    } catch (const std::bad_alloc&) {
      out_of_memory(static_cast<size_t>(n) * sizeof(T),
                    "the padded input planes of the blocked direct convolution");
    }
  }
  return keep.data();
}

// The patches form's W_gᵀ and C, kept by the calling thread between calls.
template <class T>
T* patch_scratch(int slot, int64_t n) {
  thread_local std::vector<T> keep[2];
  std::vector<T>& v = keep[slot];
  if (static_cast<int64_t>(v.size()) < n) {
    std::vector<T>().swap(v);
    try {
      v.resize(static_cast<size_t>(n));
    } catch (const std::bad_alloc&) {
      out_of_memory(static_cast<size_t>(n) * sizeof(T), "the patches form's operands");
    }
  }
  return v.data();
}

// The scratch of one plane task, kept by the pool thread between calls.
template <class T>
T* plane_scratch(int64_t n) {
  thread_local std::vector<T> keep;
  if (static_cast<int64_t>(keep.size()) < n) {
    std::vector<T>().swap(keep);
    try {
      keep.resize(static_cast<size_t>(n), T(0));
    } catch (const std::bad_alloc&) {
      return nullptr;
    }
  }
  return keep.data();
}

// Row r of the padded planes holds input row r - p1 (zeros outside the input), column c input
// column c - p2.
template <class T>
void pad_planes(const T* x, int64_t cig, const Geometry& g, int64_t hp, int64_t wp, T* xp) {
  const int64_t H = g.in[1], W = g.in[2];
  const int64_t c_lo = std::clamp<int64_t>(g.p[2], 0, wp);
  const int64_t c_hi = std::clamp<int64_t>(W + g.p[2], c_lo, wp);
  for (int64_t ci = 0; ci < cig; ++ci)
    for (int64_t r = 0; r < hp; ++r) {
      T* dst = xp + (ci * hp + r) * wp;
      const int64_t i1 = r - g.p[1];
      if (i1 < 0 || i1 >= H) {
        std::fill(dst, dst + wp, T(0));
        continue;
      }
      const T* src = x + (ci * H + i1) * W;
      std::fill(dst, dst + c_lo, T(0));
      std::memcpy(dst + c_lo, src + (c_lo - g.p[2]), static_cast<size_t>(c_hi - c_lo) * sizeof(T));
      std::fill(dst + c_hi, dst + wp, T(0));
    }
}

}  // namespace

bool direct_applies(const Geometry& g, int64_t Cin, int64_t Cout) {
  (void)Cin;
  return g.groups > 0 && Cout == g.groups && g.in[0] == 1 && g.k[0] == 1 && g.out[0] == 1 &&
         g.s[2] == 1;
}

bool blocked_enabled() {
  const char* v = std::getenv("STAX_CPU_CONV_BLOCKED");
  return !(v && v[0] == '0');
}

bool blocked_applies(const Geometry& g, int64_t Cin, int64_t Cout) {
  (void)Cin;
  if (g.groups < 1 || Cout / g.groups < kBlockChannels) return false;
  return g.in[0] == 1 && g.k[0] == 1 && g.out[0] == 1 && g.s[2] == 1 && g.k_n() > 1 &&
         g.out_n() >= kBlockedMinOutputs && g.out[2] >= kBlockedMinColumns;
}

template <class T>
void correlate_blocked(const T* x, const T* w, T* out, int64_t N, int64_t Cin, int64_t Cout,
                       const Geometry& g, const Exec& ex) {
  const int64_t G = g.groups, Cig = Cin / G, Cog = Cout / G, Ho = g.out[1], Wo = g.out[2];
  const int64_t hp = (Ho - 1) * g.s[1] + (g.k[1] - 1) * g.d[1] + 1;
  const int64_t wp = Wo + (g.k[2] - 1) * g.d[2];
  const int64_t lanes = block_for<T>(1).lanes, most = block_rows<T>(), K = g.k_n();
  T* xp = padded_input<T>(N * Cin * hp * wp + lanes);  // the slack: the last vector's lanes
  parallel(ex.pool, N * Cin, [&](int64_t t) {
    pad_planes(x + t * g.in_n(), 1, g, hp, wp, xp + t * hp * wp);
  });
  DirectArgs<T> base;
  base.cig = Cig;
  base.plane = hp * wp;
  base.wp = wp;
  base.out_rs = Wo;
  base.k1 = g.k[1];
  base.k2 = g.k[2];
  base.s1 = g.s[1];
  base.d1 = g.d[1];
  base.d2 = g.d[2];
  base.w_cs = Cig * K;
  base.out_cs = Ho * Wo;
  const int64_t blocks = (Cog + kBlockChannels - 1) / kBlockChannels;
  parallel(ex.pool, N * G * blocks, [&](int64_t t) {
    const int64_t b = t / (G * blocks), gr = t / blocks % G, c0 = t % blocks * kBlockChannels;
    const int64_t co = gr * Cog + c0, nc = std::min<int64_t>(kBlockChannels, Cog - c0);
    const T* xg = xp + (b * Cin + gr * Cig) * hp * wp;
    T* ob = out + (b * Cout + co) * Ho * Wo;
    // The rows in `nb` blocks of as equal a height as can be (32 rows: 5, 5, 5, 5, 6, 6, not
    // five of 6 and one of 2, whose 4 x 2 accumulators cannot keep the FMA units busy). Every
    // output's chain is the same whatever the blocks: the bits do not change.
    const int64_t nb = (Ho + most - 1) / most;
    for (int64_t ib = 0; ib < nb; ++ib) {
      const int64_t r0 = Ho * ib / nb, rows = Ho * (ib + 1) / nb - r0;
      const T* xr = xg + r0 * g.s[1] * wp;
      T* orow = ob + r0 * Wo;
      if (nc == kBlockChannels) {
        DirectArgs<T> a = base;
        a.w = w + co * Cig * K;
        const DirectTile<T> blk = block_for<T>(rows);
        for (int64_t j = 0; j < Wo; j += lanes)
          blk.fn(a, xr + j, orow + j, std::min(lanes, Wo - j));
        continue;
      }
      const DirectTile<T> tile = tile_for<T>(rows);  // the last channels, one at a time
      for (int64_t c = 0; c < nc; ++c) {
        DirectArgs<T> a = base;
        a.w = w + (co + c) * Cig * K;
        for (int64_t j = 0; j < Wo; j += lanes)
          tile.fn(a, xr + j, orow + c * Ho * Wo + j, std::min(lanes, Wo - j));
      }
    }
  });
}

template <class T>
bool patches_direct_applies(const Geometry& g, int64_t Cin, int64_t Cout) {
  (void)Cin;
#if STAX_GEMM_X86
  constexpr int64_t lanes = sdk::gemm::avx512::Isa<T>::kLanes;
  if (!avx512_available() || g.groups < 1 || (Cout / g.groups) % lanes != 0) return false;
  return g.in[0] == 1 && g.k[0] == 1 && g.out[0] == 1;
#else
  (void)g, (void)Cout;
  return false;
#endif
}

// W_gᵀ: wt[(gr, q), co] = w[(gr * Cog + co), q], 16 x 16 float blocks in registers; q = (ci, k)
// at wp.s1 * ci + k of output channel co's wp.s0 * co (K: the taps of a plane).
template <class T>
void transpose_weights(const T* w, const Planes& wp, T* wt, int64_t G, int64_t Cog, int64_t Kc,
                       int64_t K, const Exec& ex) {
  const int64_t qb = (Kc + 15) / 16;
  auto at = [&](int64_t co, int64_t q) { return w + co * wp.s0 + q / K * wp.s1 + q % K; };
  parallel(ex.pool, G * qb, [&](int64_t t) {
    const int64_t gr = t / qb, q0 = t % qb * 16, nq = std::min<int64_t>(16, Kc - q0);
    T* dst = wt + (gr * Kc + q0) * Cog;
    for (int64_t c0 = 0; c0 < Cog; c0 += 16) {
#if STAX_GEMM_X86
      if constexpr (std::is_same_v<T, float>) {  // 16 q in a row: rows at wp.s0
        if (nq == 16 && Cog - c0 >= 16 && (wp.s1 == K || q0 / K == (q0 + 15) / K)) {
          sdk::gemm::avx512::transpose16(at(gr * Cog + c0, q0), wp.s0, dst + c0, Cog);
          continue;
        }
      }
#endif
      for (int64_t co = c0; co < std::min<int64_t>(Cog, c0 + 16); ++co)
        for (int64_t q = 0; q < nq; ++q) dst[q * Cog + co] = *at(gr * Cog + co, q0 + q);
    }
  });
}

template <class T>
void correlate_patches_direct(const T* x, const Planes& xpl, const T* w, const Planes& wpl, T* out,
                              int64_t N, int64_t Cin, int64_t Cout, const Geometry& g,
                              const Exec& ex) {
#if STAX_GEMM_X86
  constexpr int64_t L = sdk::gemm::avx512::Isa<T>::kLanes, kRows = 6, kVecs = 4;
  const int64_t G = g.groups, Cig = Cin / G, Cog = Cout / G, K = g.k_n(), O = g.out_n();
  const int64_t Kc = Cig * K, rows = N * O, O2 = g.out[2];
  const int64_t hp = (g.out[1] - 1) * g.s[1] + (g.k[1] - 1) * g.d[1] + 1;
  const int64_t wp = (O2 - 1) * g.s[2] + (g.k[2] - 1) * g.d[2] + 1, plane = hp * wp;
  T* xp = padded_input<T>(N * Cin * plane);
  parallel(ex.pool, N * Cin, [&](int64_t t) {
    pad_planes(x + t / Cin * xpl.s0 + t % Cin * xpl.s1, 1, g, hp, wp, xp + t * plane);
  });
  T* wt = patch_scratch<T>(0, G * Kc * Cog);
  transpose_weights(w, wpl, wt, G, Cog, Kc, K, ex);
  T* cm = patch_scratch<T>(1, G * rows * Cog);
  DirectArgs<T> a;
  a.plane = plane;
  a.wp = wp;
  a.k1 = g.k[1];
  a.k2 = g.k[2];
  a.d1 = g.d[1];
  a.d2 = g.d[2];
  a.w_cs = Cog;
  a.out_rs = Cog;
  const int64_t runs = Cig * g.k[1], per_block = std::max<int64_t>(1, 512 / g.k[2]);
  const int64_t tiles = (rows + kRows - 1) / kRows;
  const int64_t threads = ex.pool ? std::max(1, ex.pool->threads()) : 1;
  const int64_t chunks = std::min<int64_t>(tiles, 2 * threads);
  parallel(ex.pool, G * chunks, [&](int64_t t) {
    const int64_t gr = t / chunks, ch = t % chunks;
    const int64_t t0 = tiles * ch / chunks, t1 = tiles * (ch + 1) / chunks;
    for (int64_t j0 = 0; j0 < runs; j0 += per_block) {  // blocks of terms: W_gᵀ's rows in cache
      const int64_t j1 = std::min(runs, j0 + per_block);
      for (int64_t tile = t0; tile < t1; ++tile) {
        const int64_t r0 = tile * kRows, nr = std::min(kRows, rows - r0);
        const T* xr[kRows];
        for (int64_t r = 0; r < nr; ++r) {
          const int64_t b = (r0 + r) / O, o = (r0 + r) % O;
          xr[r] = xp + (b * Cin + gr * Cig) * plane + o / O2 * g.s[1] * wp + o % O2 * g.s[2];
        }
        T* c = cm + (gr * rows + r0) * Cog;
        const T* wg = wt + gr * Kc * Cog;
        int64_t co = 0;
        for (; co + kVecs * L <= Cog; co += kVecs * L)
          avx512::patch_tile_for<T>(nr, kVecs)(a, xr, wg + co, c + co, j0, j1, j0 == 0);
        for (; co < Cog; co += L)
          avx512::patch_tile_for<T>(nr, 1)(a, xr, wg + co, c + co, j0, j1, j0 == 0);
      }
    }
  });
  parallel(ex.pool, G * N, [&](int64_t t) {  // C (rows x Cog per group) into out
    const int64_t gr = t / N, b = t % N;
    for (int64_t co = 0; co < Cog; ++co) {
      T* dst = out + (b * Cout + gr * Cog + co) * O;
      const T* src = cm + (gr * rows + b * O) * Cog + co;
      for (int64_t o = 0; o < O; ++o) dst[o] = src[o * Cog];
    }
  });
#else
  (void)x, (void)xpl, (void)w, (void)wpl, (void)out, (void)N, (void)Cin, (void)Cout, (void)g,
      (void)ex;
#endif
}

template bool patches_direct_applies<float>(const Geometry&, int64_t, int64_t);
template bool patches_direct_applies<double>(const Geometry&, int64_t, int64_t);
template void correlate_patches_direct<float>(const float*, const Planes&, const float*,
                                              const Planes&, float*, int64_t, int64_t, int64_t,
                                              const Geometry&, const Exec&);
template void correlate_patches_direct<double>(const double*, const Planes&, const double*,
                                               const Planes&, double*, int64_t, int64_t, int64_t,
                                               const Geometry&, const Exec&);

template void correlate_blocked<float>(const float*, const float*, float*, int64_t, int64_t,
                                       int64_t, const Geometry&, const Exec&);
template void correlate_blocked<double>(const double*, const double*, double*, int64_t, int64_t,
                                        int64_t, const Geometry&, const Exec&);

template <class T>
void correlate_direct(const T* x, const T* w, T* out, int64_t N, int64_t Cin, int64_t Cout,
                      const Geometry& g, const Exec& ex) {
  const int64_t G = g.groups, Cig = Cin / G, Ho = g.out[1], Wo = g.out[2];
  const int64_t hp = (Ho - 1) * g.s[1] + (g.k[1] - 1) * g.d[1] + 1;
  const int64_t wp = Wo + (g.k[2] - 1) * g.d[2];
  const int64_t lanes = tile_for<T>(1).lanes;
  const int64_t need = Cig * hp * wp + lanes;  // the slack: the last tile's dropped lanes
  DirectArgs<T> base;
  base.cig = Cig;
  base.plane = hp * wp;
  base.wp = wp;
  base.out_rs = Wo;
  base.k1 = g.k[1];
  base.k2 = g.k[2];
  base.s1 = g.s[1];
  base.d1 = g.d[1];
  base.d2 = g.d[2];
  std::vector<char> failed(static_cast<size_t>(N * Cout), 0);
  parallel(ex.pool, N * Cout, [&](int64_t t) {
    const int64_t b = t / Cout, co = t % Cout;  // one output channel per group: co is the group
    T* xp = plane_scratch<T>(need);
    if (!xp) {
      failed[static_cast<size_t>(t)] = 1;
      return;
    }
    pad_planes(x + (b * Cin + co * Cig) * g.in_n(), Cig, g, hp, wp, xp);
    DirectArgs<T> a = base;
    a.w = w + co * Cig * g.k_n();
    T* plane = out + t * Ho * Wo;
    for (int64_t r0 = 0; r0 < Ho; r0 += kTileRows) {
      const DirectTile<T> tile = tile_for<T>(std::min(kTileRows, Ho - r0));
      for (int64_t c0 = 0; c0 < Wo; c0 += tile.lanes)
        tile.fn(a, xp + r0 * g.s[1] * wp + c0, plane + r0 * Wo + c0, std::min(tile.lanes, Wo - c0));
    }
  });
  if (std::find(failed.begin(), failed.end(), 1) != failed.end())
    throw sdk::PluginError(STAX_ERROR_RUNTIME,
                           "cpu_cpp extern kernel 'convolution': out of memory: " +
                               std::to_string(static_cast<size_t>(need) * sizeof(T)) +
                               " bytes for the padded input planes of the direct convolution");
}

template void correlate_direct<float>(const float*, const float*, float*, int64_t, int64_t,
                                      int64_t, const Geometry&, const Exec&);
template void correlate_direct<double>(const double*, const double*, double*, int64_t, int64_t,
                                       int64_t, const Geometry&, const Exec&);

}  // namespace stax::cpu::conv
