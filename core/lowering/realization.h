// Realization (materialization) decisions of seed §6.6: whether a value with several users is
// written to memory (the thresholds: RealizationThresholds, core/policy/backend_policy.h, from the
// backend).
#pragma once

#include <cstddef>

#include "core/ir/loop_body.h"
#include "core/policy/backend_policy.h"

namespace stax {

// Whether a value whose recorded computation has `counts` and that has `num_users` users must be
// realized (§6.6 rules 1-4, checked in turn). Values with one user are never realized by it.
bool should_realize(const RealizationThresholds& t, const OpCounts& counts, size_t num_users);

}  // namespace stax
