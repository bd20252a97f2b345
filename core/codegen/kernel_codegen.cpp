#include "core/codegen/kernel_codegen.h"

#include "core/ir/index_bounds.h"
#include "core/ir/normalize_loops.h"
#include "core/support/error.h"

namespace stax {

KernelPlan plan_kernel(const ComputedBuffer& buffer, const LoweredGraph& graph,
                       const std::string& name, const CodegenOptions& options) {
  if (buffer.body().ops.empty())
    throw Error("codegen", buffer.name(), "the buffer has no recorded loop body");
  KernelPlan plan;
  plan.name = name;
  plan.buffer = &buffer;
  plan.body = drop_redundant_index_checks(options.normalize_loops ? normalize_loops(buffer.body())
                                                                  : buffer.body());
  plan.desc = make_kernel_desc(name, {&plan.body}, {buffer.name()},
                               [&graph](std::string_view n) { return graph.find(n); });
  return plan;
}

std::vector<KernelPlan> plan_kernels(const LoweredGraph& graph, const CodegenOptions& options) {
  std::vector<KernelPlan> plans;
  for (const BufferPtr& b : graph.buffers) {
    if (b->kind() != IRKind::ComputedBuffer) continue;
    plans.push_back(plan_kernel(static_cast<const ComputedBuffer&>(*b), graph,
                                "kernel" + std::to_string(plans.size()), options));
  }
  return plans;
}

}  // namespace stax
