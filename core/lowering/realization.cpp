#include "core/lowering/realization.h"

#include <algorithm>
#include <cstddef>

#include "stax/plugin_api.h"
#include "stax/sdk/backend.hpp"

namespace stax {

RealizationThresholds RealizationThresholds::cpu() {
  RealizationThresholds t;
  t.transcendental_ops = {Opcode::exp,  Opcode::log,     Opcode::log10, Opcode::log1p,
                          Opcode::log2, Opcode::sigmoid, Opcode::tanh};
  return t;
}

RealizationThresholds RealizationThresholds::gpu() {
  RealizationThresholds t;
  t.op_limit = 30;
  t.users_limit = 0;
  t.users_near_op_limit = 0;
  t.max_reads = 4;
  t.max_accumulated_reads = 8;
  return t;
}

RealizationThresholds realization_thresholds_from_c(const StaxRealizationThresholds& c) {
  RealizationThresholds t = RealizationThresholds::cpu();
  auto has = [&](size_t end) { return c.struct_size >= end; };
#define STAX_FIELD_END(f) (offsetof(StaxRealizationThresholds, f) + sizeof(c.f))
  if (has(STAX_FIELD_END(op_limit))) t.op_limit = c.op_limit;
  if (has(STAX_FIELD_END(users_limit))) t.users_limit = c.users_limit;
  if (has(STAX_FIELD_END(users_near_op_limit))) t.users_near_op_limit = c.users_near_op_limit;
  if (has(STAX_FIELD_END(max_reads))) t.max_reads = c.max_reads;
  if (has(STAX_FIELD_END(max_accumulated_reads))) t.max_accumulated_reads = c.max_accumulated_reads;
  if (has(STAX_FIELD_END(num_transcendental_ops))) {
    t.transcendental_ops.clear();
    for (size_t k = 0; k < c.num_transcendental_ops; ++k) {
      int32_t op = c.transcendental_ops[k];
      if (op > 0 && op < static_cast<int32_t>(Opcode::num_opcodes))
        t.transcendental_ops.push_back(static_cast<Opcode>(op));
    }
  }
#undef STAX_FIELD_END
  return t;
}

RealizationThresholds realization_thresholds_from_sdk(const sdk::RealizationThresholds& s) {
  RealizationThresholds t;
  t.op_limit = s.op_limit;
  t.users_limit = s.users_limit;
  t.users_near_op_limit = s.users_near_op_limit;
  t.max_reads = s.max_reads;
  t.max_accumulated_reads = s.max_accumulated_reads;
  for (int32_t op : s.transcendental_ops)
    if (op > 0 && op < static_cast<int32_t>(Opcode::num_opcodes))
      t.transcendental_ops.push_back(static_cast<Opcode>(op));
  return t;
}

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
