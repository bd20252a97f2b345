// BackendPolicy: everything the compiler asks of a backend, as plain core types, built once per
// device kind by core/backend (PluginRegistry::policy) from the plugin's C structs. Lowering (and
// the scheduler) take it instead of the plugin, so they include no sdk or plugin header.
//
//   thresholds       §6.6 realization rules (should_realize: core/lowering/realization.h)
//   split_reduction  §6.5: into how many segments an inner reduction is split
//   fusion           limits of the scheduler's fusion groups
//   device           the device's properties (mirrors StaxDeviceProperties of plugin_api.h)
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/ir/loop_body.h"

namespace stax {

// Seed §6.6: a value with several users is written to memory when any rule holds; otherwise
// every user inlines (recomputes) it (Property 6.1). Field names match StaxRealizationThresholds;
// the default values are stax/sdk/threshold_defaults.h (shared with the SDK).
struct RealizationThresholds {
  int32_t op_limit = 50;                   // rule 3: more ops than this (CPU 50, GPU 30)
  int32_t users_limit = 5;                 // rule 2: more users than this (CPU 5; 0 = rule off) ...
  int32_t users_near_op_limit = 40;        // ... and at least this many ops ("close to the limit")
  int32_t max_reads = 4;                   // rule 4: more distinct buffers read than this
  int32_t max_accumulated_reads = 12;      // rule 4: more loads after inlining (CPU 12, GPU 8)
  std::vector<Opcode> transcendental_ops;  // rule 1: any of these (CPU: exp log log10 log1p
                                           // log2 sigmoid tanh; GPU: none)

  // The seed's CPU defaults (all four rules).
  static RealizationThresholds cpu();
  // The seed's GPU defaults: op limit 30, accumulated reads 8, no transcendental or users rule.
  static RealizationThresholds gpu();
};

// Seed §6.5: k >= 1 segments for a reduction of `reduction_numel` elements per output and
// `output_numel` outputs; GraphLowering builds the two-level form of Listing 6.4 when k > 1 and k
// divides the reduction. Null, or 1: never split. Never called for argmax / argmin.
using SplitReductionFn =
    std::function<int64_t(int64_t reduction_numel, int64_t output_numel, ReductionType type)>;

// Limits of fusion groups (core/scheduler).
struct FusionLimits {
  int max_fused_nodes = 64;  // nodes in one fused kernel
  bool enable_fusion = true;
  // The backend runs epilogue kernels fused into matrix products (ABI 1.5, plugin_api.h
  // EPILOGUES); the scheduler then fuses them (core/scheduler/extern_epilogue.h).
  bool extern_epilogues = false;
};

// The device a backend drives (StaxDeviceProperties as core types).
struct DeviceInfo {
  std::string kind;  // "cpu", "cuda"
  std::string name;
  int32_t cores = 0;         // CPU: threads the backend uses
  int32_t vector_bytes = 0;  // CPU: SIMD width
  int32_t warp_size = 1;     // GPU: w
  int32_t multiprocessor_count = 0;            // GPU: S
  int32_t max_threads_per_multiprocessor = 0;  // GPU: T
  int32_t max_threads_per_block = 0;
  int32_t compute_capability = 0;
  int64_t memory_bytes = 0;
  int64_t l2_cache_bytes = 0;
  int64_t shared_memory_per_block = 0;
};

struct BackendPolicy {
  RealizationThresholds thresholds = RealizationThresholds::cpu();
  SplitReductionFn split_reduction;  // null: never split
  FusionLimits fusion;
  DeviceInfo device;
  // The plugin knows ops.def's bitwise_and / or / xor opcodes (its ABI minor is at least 8): a
  // 1.7 plugin would reject them as unknown opcodes, so the lowering keeps them out of its
  // kernels and integer and / or / xor run as counted fallbacks there.
  bool bitwise_opcodes = true;
};

}  // namespace stax
