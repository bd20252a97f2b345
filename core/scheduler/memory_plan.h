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
//     kernel sees one buffer (INOUT) and no two of its pointers alias. I then appears in none of
//     the kernel's arguments: the run plan lists it as the step's in-place donor
//     (ExecutionPlan::Step::in_place), which a device-resident run copies into O's device bytes
//     first when only the host has it (an interpreter result).
//   * kernel temporaries (issue 9: softmax's exp): an arena buffer T that only its own kernel
//     writes and reads (no other step reads it, the graph does not return it) and that a later
//     body of the same kernel overwrites element for element keeps no storage of its own: it
//     lives in the bytes of that later buffer H (`stored_in`). Conditions: T's body stores it
//     with `store` at index e; H's body, later in the kernel, stores H at the same e; both have
//     the same dtype and layout; every read of T in the kernel is at e, in a body after T's and
//     not after H's (so each element of T is read before H overwrites it, in the same iteration
//     point: the order the kernel semantics already give, plugin_api.h), and no body before H's
//     reads H. apply_in_place() points T's store and reads at H, so softmax's kernel writes
//     exp(x - max) into its output row, sums it there and divides it in place: the hand-written
//     kernel's memory traffic (one read of x, one write of the result), where T alone took a
//     full n x n buffer written and read back. Each element keeps the bits it had: no body
//     changes, results are bit-identical.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/lowering/graph_lowering.h"
#include "core/scheduler/schedule.h"
#include "core/support/name_map.h"

namespace stax {

struct BufferPlacement {
  enum class Kind { Output, Fallback, Arena, Temporary };
  std::string buffer;
  Kind kind = Kind::Arena;
  int64_t offset = 0;      // Arena: byte offset, a multiple of kArenaAlignment
  int64_t bytes = 0;       // the storage the buffer's layout spans
  size_t first_step = 0;   // the step that writes it
  size_t last_step = 0;    // the last step that reads it (first_step if none)
  std::string in_place_of;  // Arena: the buffer whose bytes it takes over at first_step, or ""
  std::string stored_in;    // Temporary: the buffer of its kernel whose bytes it lives in
};

struct MemoryPlan {
  static constexpr int64_t kArenaAlignment = 64;
  std::vector<BufferPlacement> buffers;  // one per LoweredGraph::buffers entry, same order
  NameMap<size_t> index;  // buffer name -> position in `buffers`
  int64_t arena_bytes = 0;
  int64_t intermediate_bytes = 0;  // the sum over the arena's buffers (the arena without reuse)

  const BufferPlacement* find(std::string_view buffer) const;
  // The buffer whose storage `buffer` uses: itself, or for a kernel temporary the end of its
  // `stored_in` chain.
  std::string host_of(const std::string& buffer) const;
  // "arena: 4096 bytes for 6 intermediates of 12288 bytes (33.3%)" and one line per buffer.
  std::string str() const;
};

MemoryPlan plan_memory(const LoweredGraph& graph, const Schedule& schedule);

}  // namespace stax
