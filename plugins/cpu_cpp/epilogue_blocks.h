// An epilogue kernel run on a matrix product's output as the product finishes it (plugin_api.h
// EPILOGUES): the product reports finished ranges of its output's flat indices (blocks of rows,
// from several threads at once); the epilogue's outer loop is cut into chunks of `align` units
// (the printer's lane width along it), each unit `total / units` consecutive elements. A chunk
// runs as soon as all its elements are final, on the thread that finished the last of them:
// wholly covered chunks at once, a chunk that straddles two blocks when its second part arrives.
// The kernel computes each point exactly as it would alone, so the bits do not change.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <unordered_map>

namespace stax::cpu {

class EpilogueBlocks {
 public:
  // run(u0, u1) runs the kernel's outer loop over [u0, u1) (multiples of align, or units).
  EpilogueBlocks(int64_t total, int64_t units, int64_t align,
                 std::function<void(int64_t, int64_t)> run);

  // Elements [begin, end) are final (each element is reported once). Thread-safe.
  void finished(int64_t begin, int64_t end);
  // Whether every chunk has run.
  bool complete() const { return done_.load(std::memory_order_acquire) == total_; }

 private:
  int64_t chunk_end(int64_t g) const;  // the element after chunk g
  void run_chunks(int64_t g0, int64_t g1);
  void add_part(int64_t g, int64_t elements);

  int64_t total_, units_, align_, grain_, chunks_;
  std::function<void(int64_t, int64_t)> run_;
  std::mutex mutex_;
  std::unordered_map<int64_t, int64_t> partial_;  // chunk -> elements reported so far
  std::atomic<int64_t> done_{0};                 // elements of the chunks that ran
};

}  // namespace stax::cpu
