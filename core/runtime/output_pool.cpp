#include "core/runtime/output_pool.h"

#include <algorithm>

namespace stax {

namespace {

// Whether only the pool references the entry's storage (no returned output, no slot of this
// run views it).
bool is_free(const Tensor& t) { return t.storage().use_count() == 1; }

}  // namespace

void OutputPool::begin_run() {
  most_taken_ = std::max(most_taken_, taken_this_run_);
  taken_this_run_ = 0;
  ++run_;
  const size_t cap = std::max(kMinEntries, kRunsKept * most_taken_);
  if (entries_.size() <= cap) return;
  // Keep the `cap` entries taken most recently (stable: among equals, the earlier ones).
  std::stable_sort(entries_.begin(), entries_.end(),
                   [](const Entry& a, const Entry& b) { return a.last_run > b.last_run; });
  entries_.resize(cap);
}

Tensor OutputPool::allocate(const Layout& layout) {
  const int64_t need = std::max<int64_t>(layout.storage_numel(), 1);
  Entry* best = nullptr;
  for (Entry& e : entries_) {
    const Tensor& t = e.storage;
    if (t.dtype() != layout.dtype || t.numel() < need || t.numel() > 2 * need + 64) continue;
    if (best && best->storage.numel() <= t.numel()) continue;
    if (is_free(t)) best = &e;
  }
  if (!best) {
    entries_.push_back(Entry{Tensor::empty({need}, layout.dtype), run_});
    ++allocations_;
    best = &entries_.back();
  }
  best->last_run = run_;
  ++taken_this_run_;
  return best->storage.as_strided(layout.size, layout.stride, layout.offset);
}

size_t OutputPool::free_entries() const {
  return static_cast<size_t>(
      std::count_if(entries_.begin(), entries_.end(), [](const Entry& e) {
        return is_free(e.storage);
      }));
}

}  // namespace stax
