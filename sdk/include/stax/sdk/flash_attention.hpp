// Fused (flash-style) attention on the CPU: softmax(Q Kᵀ · scale + mask) V without the L × S
// matrix of scores in memory, forward and backward (docs/attention.md).
//
// FORWARD. For each batch entry and block of kRows queries, the keys are visited in blocks of
// kKeys: the block's scores s = (q · k) · scale (a chain of fused multiply-adds over the head dim,
// then one multiplication), masked (causal: key j > query i is -inf; a boolean mask's false is
// -inf; an additive mask is added), and folded into running per-row statistics (online softmax):
//     m' = max(m, max_j s_j),  l' = l · exp(m - m') + Σ_j exp(s_j - m'),
//     acc' = acc · exp(m - m') + Σ_j exp(s_j - m') v_j.
// Causal key blocks past the query block's last row are skipped. The output is acc / l and the
// log-sum-exp of the row's scores is m + log(l) (a row whose keys are all masked gives NaN and
// -inf, as softmax of -inf everywhere does).
//
// BACKWARD (the gradients of q, k, v for a gradient dO of the output and dlse of the log-sum-exp):
// the probabilities are recomputed from the saved log-sum-exp, p_ij = exp(s_ij - lse_i), with
//     D_i = Σ_e dO_ie O_ie - dlse_i,  dS_ij = p_ij (dO_i · v_j - D_i) · scale,
//     dV_j = Σ_i p_ij dO_i,  dK_j = Σ_i dS_ij q_i,  dQ_i = Σ_j dS_ij k_j.
// With many batch entries (kOnePassBatch) one task per entry computes each block's P and dS once
// and adds to dQ, dK and dV; with few, dK and dV are computed per block of keys (one pass over the
// queries), dQ per block of queries (one pass over the keys). No atomics: every element is summed
// in one fixed order, so the result does not depend on the thread count.
//
// DROPOUT (dropout_p > 0, docs/attention.md): the probabilities are dropped after the softmax,
// as the unfused softmax -> dropout -> matmul does: element (n, i, j) of the scores draws the
// uniform number u of Philox index (n·l + i)·s + j under drop_seed (core/tensor/random.h's recipe
// for T, the numbers rand_like of the [batch, l, s] probabilities gives), is kept when
// u > threshold (dropout) or u < threshold (native_dropout's bernoulli), and a kept one is
// multiplied by drop_scale. The forward sums the normaliser l over every probability and the
// accumulator over the kept ones (out = acc / l · drop_scale; lse as without dropout); the
// backward draws the same numbers again per block (no L × S mask is saved) and uses
//     dV_j = Σ_i keep_ij p_ij drop_scale dO_i,  dS_ij = p_ij (keep_ij drop_scale dO_i · v_j - D_i) · scale
// (D_i = Σ_e dO_ie O_ie - dlse_i still equals Σ_j p_ij dP_ij).
//
// ORDER. The softmax's sums run in another order than the decomposed softmax's (blocks of kKeys,
// rescaled), so results agree with the decomposed form within the §6.5 bound of a reordered sum
// (docs/attention.md gives the bound tests use); the same inputs give the same bits here on any
// thread count. The reference interpreter runs this same code for the fused ops, so compiled and
// interpreted fused attention agree bit for bit.
//
// The block loops (flash_attention_rows.inc) are compiled for AVX-512F, AVX2 + FMA and plain C++
// and picked at run time like the GEMM's tiles. Their block products are register tiles that
// read the blocks in place (no packing; since 2026-12-06), with the GEMM's order of operations
// and so its bits (Problem::gemm_products runs the GEMM instead).
#ifndef STAX_SDK_FLASH_ATTENTION_HPP
#define STAX_SDK_FLASH_ATTENTION_HPP

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <mutex>
#include <vector>

#include "stax/sdk/gemm.hpp"
#include "stax/sdk/scalar_ops.hpp"

namespace stax::sdk::attention {

constexpr int64_t kKeys = 64;  // keys per block (the width of a row of scores)
constexpr int64_t kRows = 64;  // queries per task
// Rows per product where the causal diagonal crosses a block (Problem::sub_rows,
// flash_attention_rows.inc's causal_sub_rows).
constexpr int64_t kSubRows = 32;
// The backward runs one task per batch entry (entry_grads: the probabilities of each block once)
// from this many entries on; below it, tasks per block of keys and per block of queries (more
// tasks than entries, each block's probabilities computed twice). Both sum every element in the
// same order.
constexpr int64_t kOnePassBatch = 8;

// A matrix per batch entry: element (n, i, j) at data[offsets[n] + i * rs + j * cs].
template <class T>
struct Operand {
  const T* data = nullptr;
  const int64_t* offsets = nullptr;
  int64_t rs = 0, cs = 0;
  const T* at(int64_t n, int64_t i) const { return data + offsets[n] + i * rs; }
};

// The attention of `batch` entries: q (l x e), k (s x e), v (s x ev), an optional mask (l x s,
// bool as bytes or additive in T), causal (top-left aligned: key j is seen by query i when j <= i).
template <class T>
struct Problem {
  int64_t batch = 1, l = 0, s = 0, e = 0, ev = 0;
  Operand<T> q, k, v;
  Operand<uint8_t> mask_bool;  // data == nullptr: none
  Operand<T> mask_add;         // data == nullptr: none
  bool causal = false;
  T scale = T(1);
  // Dropout of the probabilities (see DROPOUT above); dropout == false: none.
  bool dropout = false;
  bool drop_keep_above = true;  // keep when u > threshold; false: when u < threshold
  uint64_t drop_seed = 0;
  T drop_threshold = T(0);
  T drop_scale = T(1);
  // Rows per product where the causal diagonal crosses a block (kSubRows; kRows: whole blocks,
  // as before 2026-12-06). Any value in [1, kRows] gives the same bits; benches compare them.
  int64_t sub_rows = kSubRows;
  // The block products by Stax's packing GEMM (true: as before 2026-12-06) instead of register
  // tiles reading the blocks in place (flash_attention_rows.inc's product): the same fma chains,
  // the same bits; tests and benches compare them.
  bool gemm_products = false;
};

// out: [batch, l, ev] contiguous; lse: [batch, l] contiguous.
template <class T>
struct Forward : Problem<T> {
  T* out = nullptr;
  T* lse = nullptr;
};

// out, lse: as Forward wrote them; dout [batch, l, ev] contiguous; dlse [batch, l] contiguous or
// nullptr (zero); dq [batch, l, e], dk [batch, s, e], dv [batch, s, ev] contiguous.
template <class T>
struct Backward : Problem<T> {
  const T* out = nullptr;
  const T* lse = nullptr;
  const T* dout = nullptr;
  const T* dlse = nullptr;
  T* dq = nullptr;
  T* dk = nullptr;
  T* dv = nullptr;
};

// How the tasks run (gemm::Context's parallel_for: without it, on the calling thread).
struct Context {
  std::function<void(int64_t tasks, const std::function<void(int64_t)>& task)> parallel_for;
  // The best set the CPU has by default; a set it lacks is replaced by the best it has (tests
  // ask for the others: every set gives the same bits).
  gemm::InstructionSet instruction_set = gemm::InstructionSet::Avx512;
};

// The element offsets of each batch entry of a tensor of `sizes` / `strides` whose last two dims
// are the matrix (row-major order of the batch dims), starting at `offset`.
inline std::vector<int64_t> batch_offsets(const std::vector<int64_t>& sizes,
                                          const std::vector<int64_t>& strides, int64_t offset) {
  const size_t nb = sizes.size() >= 2 ? sizes.size() - 2 : 0;
  int64_t count = 1;
  for (size_t d = 0; d < nb; ++d) count *= sizes[d];
  std::vector<int64_t> out(static_cast<size_t>(count), offset);
  for (int64_t n = 0; n < count; ++n) {
    int64_t rest = n, off = offset;
    for (size_t d = nb; d-- > 0;) {
      off += (rest % sizes[d]) * strides[d];
      rest /= sizes[d];
    }
    out[static_cast<size_t>(n)] = off;
  }
  return out;
}

namespace detail {

inline float exp_of(float x) { return stax_scalar::m::exp_f32::formula(x); }
inline double exp_of(double x) { return std::exp(x); }

}  // namespace detail

}  // namespace stax::sdk::attention

// ---- the block loops, once per instruction set ----------------------------------------------

#if STAX_GEMM_X86
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,fma")
#pragma GCC optimize("O3")  // the loop vectoriser at its full cost model
#endif
namespace stax::sdk::attention::avx512 {
// The register tiles of the block products (flash_attention_rows.inc's block_tile): the set's
// vector of T (kLanes lanes) and its operations, masked loads and stores for a last partial
// vector of columns, and the tile shapes: at most kMaxVectors vectors of columns, rows(NV) rows of
// accumulators. (Not gemm::avx512::Isa: its functions' target adds prfchw, so GCC would not
// inline them here.)
template <class T>
struct Vectors;
template <>
struct Vectors<float> {
  using V = __m512;
  using M = __mmask16;
};
template <>
struct Vectors<double> {
  using V = __m512d;
  using M = __mmask8;
};
template <class T>
struct BlockIsa {
  static constexpr bool kFloat = sizeof(T) == 4;
  using V = typename Vectors<T>::V;
  using M = typename Vectors<T>::M;
  static constexpr int kLanes = kFloat ? 16 : 8;
  static constexpr int kMaxVectors = 4;
  static constexpr int rows(int nv) { return nv == 4 ? 6 : 8; }  // 24 / 24 / 16 / 8 of 32 zmm
  static V zero() {
    if constexpr (kFloat) return _mm512_setzero_ps(); else return _mm512_setzero_pd();
  }
  static V load(const T* p) {
    if constexpr (kFloat) return _mm512_loadu_ps(p); else return _mm512_loadu_pd(p);
  }
  static void store(T* p, V v) {
    if constexpr (kFloat) _mm512_storeu_ps(p, v); else _mm512_storeu_pd(p, v);
  }
  static V broadcast(const T* p) {
    if constexpr (kFloat) return _mm512_set1_ps(*p); else return _mm512_set1_pd(*p);
  }
  static V fma(V a, V b, V c) {
    if constexpr (kFloat) return _mm512_fmadd_ps(a, b, c); else return _mm512_fmadd_pd(a, b, c);
  }
  static V load_first(const T* p, int n) {
    const M m = static_cast<M>((1u << n) - 1u);
    if constexpr (kFloat) return _mm512_maskz_loadu_ps(m, p); else return _mm512_maskz_loadu_pd(m, p);
  }
  static void store_first(T* p, V v, int n) {
    const M m = static_cast<M>((1u << n) - 1u);
    if constexpr (kFloat) _mm512_mask_storeu_ps(p, m, v); else _mm512_mask_storeu_pd(p, m, v);
  }
  // dst[c * ds + r] = src[r * ss + c] for r, c < 16, in registers (float: the GEMM's packing
  // transpose); kTranspose16 false: none.
  static constexpr bool kTranspose16 = kFloat;
  static void transpose16(const T* src, int64_t ss, T* dst, int64_t ds) {
    if constexpr (kFloat) gemm::avx512::transpose16(src, ss, dst, ds);
  }
};
#include "stax/sdk/flash_attention_rows.inc"
}  // namespace stax::sdk::attention::avx512
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
#pragma GCC optimize("O3")  // the loop vectoriser at its full cost model
#endif
namespace stax::sdk::attention::avx2 {
template <class T>
struct Vectors;
template <>
struct Vectors<float> {
  using V = __m256;
};
template <>
struct Vectors<double> {
  using V = __m256d;
};
template <class T>
struct BlockIsa {
  static constexpr bool kFloat = sizeof(T) == 4;
  using V = typename Vectors<T>::V;
  static constexpr int kLanes = kFloat ? 8 : 4;
  static constexpr int kMaxVectors = 2;
  static constexpr int rows(int nv) { return nv == 2 ? 6 : 8; }  // 12 / 8 of 16 ymm
  static V zero() {
    if constexpr (kFloat) return _mm256_setzero_ps(); else return _mm256_setzero_pd();
  }
  static V load(const T* p) {
    if constexpr (kFloat) return _mm256_loadu_ps(p); else return _mm256_loadu_pd(p);
  }
  static void store(T* p, V v) {
    if constexpr (kFloat) _mm256_storeu_ps(p, v); else _mm256_storeu_pd(p, v);
  }
  static V broadcast(const T* p) {
    if constexpr (kFloat) return _mm256_broadcast_ss(p); else return _mm256_broadcast_sd(p);
  }
  static V fma(V a, V b, V c) {
    if constexpr (kFloat) return _mm256_fmadd_ps(a, b, c); else return _mm256_fmadd_pd(a, b, c);
  }
  // Lanes [0, n) set: the mask of vmaskmov.
  static __m256i first(int n) {
    if constexpr (kFloat)
      return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    else
      return _mm256_cmpgt_epi64(_mm256_set1_epi64x(n), _mm256_setr_epi64x(0, 1, 2, 3));
  }
  static V load_first(const T* p, int n) {
    if constexpr (kFloat) return _mm256_maskload_ps(p, first(n)); else return _mm256_maskload_pd(p, first(n));
  }
  static void store_first(T* p, V v, int n) {
    if constexpr (kFloat) _mm256_maskstore_ps(p, first(n), v); else _mm256_maskstore_pd(p, first(n), v);
  }
  static constexpr bool kTranspose16 = false;
  static void transpose16(const T*, int64_t, T*, int64_t) {}
};
#include "stax/sdk/flash_attention_rows.inc"
}  // namespace stax::sdk::attention::avx2
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif  // STAX_GEMM_X86

namespace stax::sdk::attention::portable {
template <class T>
struct BlockIsa {  // one lane: no partial vectors
  using V = T;
  static constexpr int kLanes = 1;
  static constexpr int kMaxVectors = 4;
  static constexpr int rows(int) { return 4; }
  static T zero() { return T(0); }
  static T load(const T* p) { return *p; }
  static void store(T* p, T v) { *p = v; }
  static T broadcast(const T* p) { return *p; }
  static T fma(T a, T b, T c) { return std::fma(a, b, c); }
  static T load_first(const T* p, int) { return *p; }
  static void store_first(T* p, T v, int) { *p = v; }
  static constexpr bool kTranspose16 = false;
  static void transpose16(const T*, int64_t, T*, int64_t) {}
};
#include "stax/sdk/flash_attention_rows.inc"
}  // namespace stax::sdk::attention::portable

namespace stax::sdk::attention {

namespace detail {

// Runs task(0 .. tasks-1) on the context's threads; the first exception is rethrown after all
// tasks have returned (pool tasks must not throw).
inline void run_tasks(const Context& c, int64_t tasks, const std::function<void(int64_t)>& task) {
  std::exception_ptr error;
  std::mutex mutex;
  auto guarded = [&](int64_t t) {
    try {
      task(t);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex);
      if (!error) error = std::current_exception();
    }
  };
  if (c.parallel_for && tasks > 1)
    c.parallel_for(tasks, guarded);
  else
    for (int64_t t = 0; t < tasks; ++t) guarded(t);
  if (error) std::rethrow_exception(error);
}

// The context's set, or the best the CPU has where it lacks it (the enum lists the best first).
inline gemm::InstructionSet isa(const Context& c) {
  const gemm::InstructionSet best = gemm::detect_instruction_set();
  return static_cast<int>(c.instruction_set) < static_cast<int>(best) ? best : c.instruction_set;
}

}  // namespace detail

// out and lse of every row (see the top of this file).
template <class T>
void forward(const Forward<T>& p, const Context& c = {}) {
  if (p.batch == 0 || p.l == 0) return;
  const int64_t blocks = (p.l + kRows - 1) / kRows;
  const gemm::InstructionSet set = detail::isa(c);
  detail::run_tasks(c, p.batch * blocks, [&](int64_t t) {
    const int64_t n = t / blocks, i0 = (t % blocks) * kRows, i1 = std::min(p.l, i0 + kRows);
#if STAX_GEMM_X86
    if (set == gemm::InstructionSet::Avx512) return avx512::forward_rows(p, n, i0, i1);
    if (set == gemm::InstructionSet::Avx2) return avx2::forward_rows(p, n, i0, i1);
#endif
    (void)set;
    portable::forward_rows(p, n, i0, i1);
  });
}

// dq, dk, dv (see the top of this file).
template <class T>
void backward(const Backward<T>& p, const Context& c = {}) {
  if (p.batch == 0) return;
  // D_i = Σ_e dO_ie O_ie - dlse_i, per row.
  std::vector<T> delta(static_cast<size_t>(p.batch * p.l));
  const gemm::InstructionSet set = detail::isa(c);
  (void)set;
  [&] {
#if STAX_GEMM_X86
    if (set == gemm::InstructionSet::Avx512) return avx512::row_deltas(p, delta.data(), 0, p.batch * p.l);
    if (set == gemm::InstructionSet::Avx2) return avx2::row_deltas(p, delta.data(), 0, p.batch * p.l);
#endif
    portable::row_deltas(p, delta.data(), 0, p.batch * p.l);
  }();
  if (p.batch >= kOnePassBatch) {  // one task per batch entry, each block's P and dS once
    detail::run_tasks(c, p.batch, [&](int64_t n) {
#if STAX_GEMM_X86
      if (set == gemm::InstructionSet::Avx512) return avx512::entry_grads(p, delta.data(), n);
      if (set == gemm::InstructionSet::Avx2) return avx2::entry_grads(p, delta.data(), n);
#endif
      portable::entry_grads(p, delta.data(), n);
    });
    return;
  }
  const int64_t key_blocks = (p.s + kKeys - 1) / kKeys;
  const int64_t row_blocks = (p.l + kRows - 1) / kRows;
  // dK, dV per block of keys; then dQ per block of queries.
  detail::run_tasks(c, p.batch * key_blocks, [&](int64_t t) {
    const int64_t n = t / key_blocks, j0 = (t % key_blocks) * kKeys;
    const int64_t j1 = std::min(p.s, j0 + kKeys);
#if STAX_GEMM_X86
    if (set == gemm::InstructionSet::Avx512) return avx512::key_grads(p, delta.data(), n, j0, j1);
    if (set == gemm::InstructionSet::Avx2) return avx2::key_grads(p, delta.data(), n, j0, j1);
#endif
    portable::key_grads(p, delta.data(), n, j0, j1);
  });
  detail::run_tasks(c, p.batch * row_blocks, [&](int64_t t) {
    const int64_t n = t / row_blocks, i0 = (t % row_blocks) * kRows;
    const int64_t i1 = std::min(p.l, i0 + kRows);
#if STAX_GEMM_X86
    if (set == gemm::InstructionSet::Avx512) return avx512::query_grads(p, delta.data(), n, i0, i1);
    if (set == gemm::InstructionSet::Avx2) return avx2::query_grads(p, delta.data(), n, i0, i1);
#endif
    portable::query_grads(p, delta.data(), n, i0, i1);
  });
}

}  // namespace stax::sdk::attention

#endif  // STAX_SDK_FLASH_ATTENTION_HPP
