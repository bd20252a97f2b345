// Reduction splitting policy (seed §6.5). The backend decides into how many segments k an inner
// reduction is split (DESIGN.md §3: plugin `split_reduction`; Algorithm 6.1 for GPUs is the SDK's
// sdk::split_reduction_gpu in stax/sdk/backend.hpp); GraphLowering builds the two-level form of
// Listing 6.4 when k > 1 and k divides the reduction (otherwise it does not split).
#pragma once

#include <cstdint>
#include <functional>

#include "core/ir/loop_body.h"

namespace stax {

// k >= 1 segments for a reduction of `reduction_numel` elements per output and `output_numel`
// outputs. Null, or 1: never split. Never called for argmax / argmin (they carry an index).
using SplitReductionFn =
    std::function<int64_t(int64_t reduction_numel, int64_t output_numel, ReductionType type)>;

}  // namespace stax
