#include "core/backend/policy_from_plugin.h"

#include <cstddef>

namespace stax {

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

DeviceInfo device_info_from_sdk(const sdk::DeviceProperties& p, const std::string& kind) {
  DeviceInfo d;
  d.kind = kind;
  d.name = p.device_name;
  d.cores = p.cores;
  d.vector_bytes = p.vector_bytes;
  d.warp_size = p.warp_size;
  d.multiprocessor_count = p.multiprocessor_count;
  d.max_threads_per_multiprocessor = p.max_threads_per_multiprocessor;
  d.max_threads_per_block = p.max_threads_per_block;
  d.compute_capability = p.compute_capability;
  d.memory_bytes = p.memory_bytes;
  d.l2_cache_bytes = p.l2_cache_bytes;
  d.shared_memory_per_block = p.shared_memory_per_block;
  return d;
}

}  // namespace stax
