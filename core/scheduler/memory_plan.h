// The compile-time memory plan of a scheduled graph: where every buffer lives when it runs.
//
//   * graph inputs: the caller's tensors;
//   * buffers the graph returns (or returns a view of): storage of their own per run, so the
//     caller may keep them (the executor recycles the ones the caller dropped);
//   * fallback results: the storage the reference interpreter returns;
//   * every other buffer (kernel and extern-kernel intermediates): a byte range of ONE arena,
//     allocated once per CompiledGraph and reused by every run. A buffer is live from the step
//     that writes it to the last step that reads it (both included, so the buffers a kernel
//     reads and writes never overlap); buffers whose lifetimes are disjoint share bytes.
//     Offsets are assigned greedily, largest buffer first, at the lowest 64-byte-aligned offset
//     free over its lifetime.
//   * in place: a kernel's arena buffer O takes over the bytes of an arena buffer I that an
//     earlier step wrote and this kernel reads for the last time, when both have the same layout
//     and dtype and every read of I in the kernel is at the address where O is written, in O's
//     body or an earlier one (so each element of I is read before O overwrites it, in the same
//     iteration point). apply_in_place() (in_place.h) then points those reads at O, so the
//     kernel sees one buffer (INOUT) and no two of its pointers alias.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/lowering/graph_lowering.h"
#include "core/scheduler/schedule.h"

namespace stax {

struct BufferPlacement {
  enum class Kind { Output, Fallback, Arena };
  std::string buffer;
  Kind kind = Kind::Arena;
  int64_t offset = 0;      // Arena: byte offset, a multiple of kArenaAlignment
  int64_t bytes = 0;       // the storage the buffer's layout spans
  size_t first_step = 0;   // the step that writes it
  size_t last_step = 0;    // the last step that reads it (first_step if none)
  std::string in_place_of;  // Arena: the buffer whose bytes it takes over at first_step, or ""
};

struct MemoryPlan {
  static constexpr int64_t kArenaAlignment = 64;
  std::vector<BufferPlacement> buffers;  // one per LoweredGraph::buffers entry, same order
  std::unordered_map<std::string, size_t> index;  // buffer name -> position in `buffers`
  int64_t arena_bytes = 0;
  int64_t intermediate_bytes = 0;  // the sum over the arena's buffers (the arena without reuse)

  const BufferPlacement* find(const std::string& buffer) const;
  // "arena: 4096 bytes for 6 intermediates of 12288 bytes (33.3%)" and one line per buffer.
  std::string str() const;
};

MemoryPlan plan_memory(const LoweredGraph& graph, const Schedule& schedule);

}  // namespace stax
