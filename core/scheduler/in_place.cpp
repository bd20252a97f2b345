#include "core/scheduler/in_place.h"

namespace stax {

void apply_in_place(Schedule& schedule, const MemoryPlan& plan) {
  for (ScheduledKernel& kernel : schedule.kernels)
    for (LoopBody& body : kernel.bodies)
      for (LoopOp& op : body.ops) {
        if (op.buffer.empty()) continue;
        const BufferPlacement* p = plan.find(op.buffer);
        if (p && p->kind == BufferPlacement::Kind::Temporary) op.buffer = plan.host_of(op.buffer);
      }
  for (ScheduledKernel& kernel : schedule.kernels)
    for (const ComputedBuffer* out : kernel.buffers) {
      const BufferPlacement* p = plan.find(out->name());
      if (!p || p->in_place_of.empty()) continue;
      for (LoopBody& body : kernel.bodies)
        for (LoopOp& op : body.ops)
          if ((op.opcode == Opcode::load || op.opcode == Opcode::masked_load) &&
              op.buffer == p->in_place_of)
            op.buffer = out->name();
    }
}

}  // namespace stax
