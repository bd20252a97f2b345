/* The seed's default realization thresholds (§6.6), written once. The SDK's
 * sdk::RealizationThresholds::cpu() / gpu() (what a plugin reports unless it overrides
 * thresholds()) and core's RealizationThresholds::cpu() / gpu() (core/policy/backend_policy.h)
 * both read these. Plain C, no includes, so either side may use it. */
#ifndef STAX_SDK_THRESHOLD_DEFAULTS_H
#define STAX_SDK_THRESHOLD_DEFAULTS_H

/* CPU: all four rules. */
#define STAX_CPU_OP_LIMIT 50
#define STAX_CPU_USERS_LIMIT 5
#define STAX_CPU_USERS_NEAR_OP_LIMIT 40
#define STAX_CPU_MAX_READS 4
#define STAX_CPU_MAX_ACCUMULATED_READS 12
/* Rule 1's transcendental ops on a CPU, by op name (ops.def): X(name) for each. */
#define STAX_CPU_TRANSCENDENTAL_OPS(X) X(exp) X(log) X(log10) X(log1p) X(log2) X(sigmoid) X(tanh)

/* GPU: op limit 30, accumulated reads 8, no transcendental or users rule. */
#define STAX_GPU_OP_LIMIT 30
#define STAX_GPU_USERS_LIMIT 0
#define STAX_GPU_USERS_NEAR_OP_LIMIT 0
#define STAX_GPU_MAX_READS 4
#define STAX_GPU_MAX_ACCUMULATED_READS 8

#endif /* STAX_SDK_THRESHOLD_DEFAULTS_H */
