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
//
// Long reductions are cut into fixed blocks first (the split that lets threads share a full
// reduction, issue 9): when B = reduction_blocks(n) > 1, the flat range 0 .. n-1 is cut into B
// consecutive blocks of n / B elements, each block is folded as above (from init) into a partial
// p_b, and the partials p_0 .. p_{B-1} are folded as above (from init) into the result. B depends
// on n alone (not on the thread count), so every thread count gives the same bits. A compiled
// backend reproduces it with a two-level split reduction (split_reduction() = B; the lowering's
// level 1 reduces each block, level 2 the partials, Listing 6.4). Error bound: the blocks' and
// the partials' bounds add, (⌈n/(B·K)⌉ + ⌈B/K⌉ - 2 + 2·log2 K)·u·Σ|a_i| — below the unblocked one.
#pragma once

#include <cstdint>

namespace stax::sdk {

inline constexpr int kReductionSegments = 16;

// Blocks: a reduction of at least kReductionBlockMinLength elements is cut into B blocks, B the
// largest divisor of n with B <= min(kReductionMaxBlocks, n / kReductionBlockMinSize) (a prime n
// stays one block). Rows shorter than 2^17 (every row of the issue-9 workloads, softmax and
// layer_norm rows of practical widths) keep the plain order and their fused one-kernel form.
inline constexpr int64_t kReductionBlockMinLength = int64_t{1} << 17;
inline constexpr int64_t kReductionBlockMinSize = int64_t{1} << 14;
inline constexpr int64_t kReductionMaxBlocks = 1024;

constexpr int64_t reduction_blocks(int64_t n) {
  if (n < kReductionBlockMinLength) return 1;
  int64_t cap = n / kReductionBlockMinSize;
  if (cap > kReductionMaxBlocks) cap = kReductionMaxBlocks;
  for (int64_t b = cap; b > 1; --b)
    if (n % b == 0) return b;
  return 1;
}

// The 16 chains and the tree over a_first .. a_{first+n-1}, from init.
template <class C, class Get, class Op>
C segmented_chains(int64_t first, int64_t n, C init, Get& get, Op& op) {
  C s[kReductionSegments];
  for (C& x : s) x = init;
  for (int64_t j = 0; j < n; ++j) {
    C& acc = s[j % kReductionSegments];
    acc = op(acc, get(first + j));
  }
  for (int h = kReductionSegments / 2; h >= 1; h /= 2)
    for (int l = 0; l < h; ++l) s[l] = op(s[l], s[l + h]);
  return s[0];
}

// The fold above: get(j) returns a_j, op(acc, value) combines (the stax_scalar function).
template <class C, class Get, class Op>
C segmented_fold(int64_t n, C init, Get get, Op op) {
  const int64_t blocks = reduction_blocks(n);
  if (blocks == 1) return segmented_chains<C>(0, n, init, get, op);
  const int64_t size = n / blocks;
  auto partial = [&](int64_t b) { return segmented_chains<C>(b * size, size, init, get, op); };
  return segmented_chains<C>(0, blocks, init, partial, op);
}

}  // namespace stax::sdk
