#include "core/lowering/realization.h"

namespace stax {

bool should_realize(const RealizationThresholds& t, const OpCounts& counts, size_t num_users) {
  if (num_users <= 1) return false;
  // 1. an expensive transcendental function (CPU)
  for (Opcode op : t.transcendental_ops)
    if (counts.ops.count(op)) return true;
  // 2. many users and an op count close to the limit (CPU)
  if (t.users_limit > 0 && num_users > static_cast<size_t>(t.users_limit) &&
      counts.num_ops >= t.users_near_op_limit)
    return true;
  // 3. too many ops
  if (counts.num_ops > t.op_limit) return true;
  // 4. too many buffers read, or too many reads accumulated by inlining
  if (static_cast<int64_t>(counts.buffers_read.size()) > t.max_reads) return true;
  if (counts.num_loads > t.max_accumulated_reads) return true;
  return false;
}

}  // namespace stax
