#include "core/codegen/kernel_codegen.h"

#include "core/ir/index_bounds.h"
#include "core/ir/normalize_loops.h"
#include "core/support/error.h"

namespace stax {

KernelPlan plan_kernel(const ScheduledKernel& kernel, const LoweredGraph& graph,
                       const std::string& name, const CodegenOptions& options) {
  if (kernel.bodies.empty() || kernel.bodies.size() != kernel.buffers.size())
    throw Error("codegen", name, "internal: a scheduled kernel without bodies");
  KernelPlan plan;
  plan.name = name;
  plan.buffers = kernel.buffers;
  plan.bodies = options.normalize_loops ? normalize_loops(kernel.bodies) : kernel.bodies;
  for (LoopBody& b : plan.bodies) b = drop_redundant_index_checks(b);
  std::vector<const LoopBody*> bodies;
  std::vector<std::string> names;
  for (size_t k = 0; k < plan.bodies.size(); ++k) {
    bodies.push_back(&plan.bodies[k]);
    names.push_back(plan.buffers[k]->name());
  }
  plan.desc = make_kernel_desc(name, bodies, names,
                               [&graph](std::string_view n) { return graph.find(n); });
  return plan;
}

std::vector<KernelPlan> plan_kernels(const Schedule& schedule, const LoweredGraph& graph,
                                     const CodegenOptions& options) {
  std::vector<KernelPlan> plans;
  for (const ScheduledKernel& k : schedule.kernels)
    plans.push_back(plan_kernel(k, graph, "kernel" + std::to_string(plans.size()), options));
  return plans;
}

}  // namespace stax
