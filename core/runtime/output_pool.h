// OutputPool: the storage of a compiled graph's returned buffers (and of inputs copied into the
// placeholder's layout), kept by a run context between runs: a caching allocator.
//
// A run returns its outputs as views of pool storage; the caller (a training step: the forward's
// outputs and saved values, held by torch's autograd graph until after the next forward) drops
// them later. Every entry stays in the pool while the caller holds it, and an entry nobody else
// references any more is handed out again, so a steady stream of runs neither allocates nor
// page-faults, whenever the caller drops what a run returned.
//   * Never twice: an entry is handed out only when the pool holds its storage's only reference
//     (a returned output the caller keeps, or a buffer this run already took, is not free).
//   * Best fit: the smallest free entry of the dtype with at least the elements asked for and at
//     most twice as many (+64), so a small buffer does not take the entry a larger one needs.
//   * Reused storage is not cleared: every producer of a returned buffer (a kernel, an extern
//     kernel, a copy) writes all its elements. (Fresh storage is Tensor::empty's, zero-filled;
//     in a steady stream of runs there is none.)
//   * Bounded: begin_run() keeps the entries used most recently, at most kRunsKept times the
//     largest number of entries one run has taken (at least kMinEntries); older ones leave the
//     pool (a free one is freed; a held one becomes the caller's alone). A caller that keeps
//     every output of many runs thus costs the pool no more than a few runs' worth.
// Not thread-safe: one run context, one run at a time (compiled_graph_impl.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/ir/layout.h"
#include "core/tensor/tensor.h"

namespace stax {

class OutputPool {
 public:
  static constexpr size_t kRunsKept = 3;
  static constexpr size_t kMinEntries = 16;

  // Starts a run: counts it and trims the pool (above).
  void begin_run();
  // A tensor viewing storage of `layout.dtype` with exactly `layout` (offset included): a free
  // entry that fits, else new storage added to the pool.
  Tensor allocate(const Layout& layout);

  // Introspection (tests, stats).
  size_t size() const { return entries_.size(); }
  size_t free_entries() const;
  // Fresh storage allocated since the pool was made (entries reused do not count).
  size_t allocations() const { return allocations_; }

 private:
  struct Entry {
    Tensor storage;         // 1-D, storage offset 0
    uint64_t last_run = 0;  // the run that last took it
  };
  std::vector<Entry> entries_;
  uint64_t run_ = 0;
  size_t taken_this_run_ = 0;
  size_t most_taken_ = 0;  // the most entries one run took
  size_t allocations_ = 0;
};

}  // namespace stax
