// The segmented reduction order (seed §6.5, Listing 1.1): the order in which compiled CPU kernels
// accumulate sum / prod / amax / amin by default, shared by the reference interpreter (its
// `ReductionOrder::Segmented` mode) and the cpu_cpp printer, so that both give the same bits.
//
// For one output element with reduced elements a_0 .. a_{n-1} (the lexicographic order of §6.9
// over the reduced dims, whatever the layout):
//     s_l = init;  s_l = op(s_l, a_j) for every j ≡ l (mod K), j increasing     (l = 0 .. K-1)
//     for h = K/2, K/4, .., 1:  s_l = op(s_l, s_{l+h}) for l = 0 .. h-1        (a fixed tree)
//     result = s_0
// with K = kReductionSegments = 16 (one AVX-512 vector of float: the K chains are vector lanes).
// The order depends on n alone: not on the layout, the fusion, the thread count or the run, so
// it is deterministic. Error bound: each lane sums ⌈n/K⌉ terms sequentially and the tree adds
// log2 K levels, so |ŝ - s| <= (⌈n/K⌉ - 1 + log2 K)·u·Σ|a_i| (to first order), tighter than the
// sequential (n - 1)·u·Σ|a_i| once n > 2K. max / min are exact in any order, except that the
// winner among +0 / -0 (and among NaN payloads) may differ from the sequential order's.
// argmax / argmin / any / all keep the sequential order (ties pick the first index).
#pragma once

#include <cstdint>

namespace stax::sdk {

inline constexpr int kReductionSegments = 16;

// The fold above: get(j) returns a_j, op(acc, value) combines (the stax_scalar function).
template <class C, class Get, class Op>
C segmented_fold(int64_t n, C init, Get get, Op op) {
  C s[kReductionSegments];
  for (C& x : s) x = init;
  for (int64_t j = 0; j < n; ++j) {
    C& acc = s[j % kReductionSegments];
    acc = op(acc, get(j));
  }
  for (int h = kReductionSegments / 2; h >= 1; h /= 2)
    for (int l = 0; l < h; ++l) s[l] = op(s[l], s[l + h]);
  return s[0];
}

}  // namespace stax::sdk
