#include "core/policy/backend_policy.h"

#include "stax/sdk/threshold_defaults.h"

namespace stax {

RealizationThresholds RealizationThresholds::cpu() {
  RealizationThresholds t;
  t.op_limit = STAX_CPU_OP_LIMIT;
  t.users_limit = STAX_CPU_USERS_LIMIT;
  t.users_near_op_limit = STAX_CPU_USERS_NEAR_OP_LIMIT;
  t.max_reads = STAX_CPU_MAX_READS;
  t.max_accumulated_reads = STAX_CPU_MAX_ACCUMULATED_READS;
#define STAX_CORE_OPCODE(name) Opcode::name,
  t.transcendental_ops = {STAX_CPU_TRANSCENDENTAL_OPS(STAX_CORE_OPCODE)};
#undef STAX_CORE_OPCODE
  return t;
}

RealizationThresholds RealizationThresholds::gpu() {
  RealizationThresholds t;
  t.op_limit = STAX_GPU_OP_LIMIT;
  t.users_limit = STAX_GPU_USERS_LIMIT;
  t.users_near_op_limit = STAX_GPU_USERS_NEAR_OP_LIMIT;
  t.max_reads = STAX_GPU_MAX_READS;
  t.max_accumulated_reads = STAX_GPU_MAX_ACCUMULATED_READS;
  return t;
}

}  // namespace stax
