#include "plugins/cpu_cpp/epilogue_blocks.h"

#include <algorithm>

namespace stax::cpu {

EpilogueBlocks::EpilogueBlocks(int64_t total, int64_t units, int64_t align,
                               std::function<void(int64_t, int64_t)> run)
    : total_(total), units_(std::max<int64_t>(units, 1)), align_(std::max<int64_t>(align, 1)),
      run_(std::move(run)) {
  // Elements per unit; a kernel whose points are not the product's elements in whole units runs
  // as one chunk once everything is final.
  const int64_t per_unit = total_ % units_ == 0 ? total_ / units_ : 0;
  grain_ = per_unit > 0 ? per_unit * align_ : std::max<int64_t>(total_, 1);
  if (per_unit == 0) align_ = units_;
  chunks_ = (total_ + grain_ - 1) / grain_;
}

int64_t EpilogueBlocks::chunk_end(int64_t g) const { return std::min(total_, (g + 1) * grain_); }

void EpilogueBlocks::run_chunks(int64_t g0, int64_t g1) {
  if (g0 >= g1) return;
  run_(g0 * align_, std::min(units_, g1 * align_));
  done_.fetch_add(chunk_end(g1 - 1) - g0 * grain_, std::memory_order_acq_rel);
}

void EpilogueBlocks::add_part(int64_t g, int64_t elements) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    int64_t& have = partial_[g];
    have += elements;
    if (have < chunk_end(g) - g * grain_) return;
    partial_.erase(g);
  }
  run_chunks(g, g + 1);
}

void EpilogueBlocks::finished(int64_t begin, int64_t end) {
  begin = std::max<int64_t>(begin, 0);
  end = std::min(end, total_);
  if (begin >= end) return;
  const bool aligned_begin = begin % grain_ == 0;
  const int64_t first_full = aligned_begin ? begin / grain_ : begin / grain_ + 1;
  const int64_t end_full = end == total_ ? chunks_ : end / grain_;
  if (!aligned_begin) {
    const int64_t g = begin / grain_;
    add_part(g, std::min(end, chunk_end(g)) - begin);
  }
  run_chunks(first_full, std::max(first_full, end_full));
  if (end != total_ && end % grain_ != 0) {
    const int64_t g = end / grain_;
    if (g * grain_ >= begin) add_part(g, end - g * grain_);
  }
}

}  // namespace stax::cpu
