// Realization (materialization) thresholds of seed §6.6. A value with several users is written to
// memory when any rule holds; otherwise every user inlines (recomputes) it (Property 6.1).
//
// The thresholds come from the backend (DESIGN.md §3: plugin `thresholds()`); the field names
// match the C struct StaxRealizationThresholds of sdk/include/stax/plugin_api.h and the SDK's
// sdk::RealizationThresholds; realization_thresholds_from_c / _from_sdk convert them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/ir/loop_body.h"

struct StaxRealizationThresholds;

namespace stax {
namespace sdk {
struct RealizationThresholds;
}

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

// Converts the plugin's C struct (fields beyond its struct_size keep the CPU defaults; opcodes that
// are not ops of this build are ignored).
RealizationThresholds realization_thresholds_from_c(const StaxRealizationThresholds& c);
// Converts the SDK's C++ mirror (stax/sdk/backend.hpp, same field names).
RealizationThresholds realization_thresholds_from_sdk(const sdk::RealizationThresholds& t);

// Whether a value whose recorded computation has `counts` and that has `num_users` users must be
// realized (§6.6 rules 1-4, checked in turn). Values with one user are never realized by it.
bool should_realize(const RealizationThresholds& t, const OpCounts& counts, size_t num_users);

}  // namespace stax
