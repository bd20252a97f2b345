// Applies the memory plan's in-place decisions to the kernels (memory_plan.h: in place): in the
// kernel that writes O in place of I, every read of I becomes a read of O (same layout, same
// bytes), so the kernel has one INOUT buffer instead of two pointers to the same memory. A kernel
// temporary's store and reads become those of the buffer it lives in (MemoryPlan::host_of).
#pragma once

#include "core/scheduler/memory_plan.h"
#include "core/scheduler/schedule.h"

namespace stax {

void apply_in_place(Schedule& schedule, const MemoryPlan& plan);

}  // namespace stax
