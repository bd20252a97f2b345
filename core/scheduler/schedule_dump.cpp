// Schedule::str() and Schedule::dot(): the `schedule` dump stage and the kernel graph picture.
#include <map>
#include <set>

#include "core/scheduler/schedule.h"

namespace stax {

namespace {

std::string step_label(const Schedule& s, const ScheduleStep& step) {
  switch (step.kind) {
    case ScheduleStep::Kind::Kernel:
      return "kernel" + std::to_string(step.kernel);
    case ScheduleStep::Kind::Extern:
      return "extern " + static_cast<const ExternKernel*>(step.buffer)->kernel() +
             (step.has_epilogue() ? " + epilogue kernel" + std::to_string(step.epilogue) : "");
    case ScheduleStep::Kind::Fallback:
      return "fallback " + static_cast<const FallbackKernel*>(step.buffer)->node()->target();
  }
  (void)s;
  return "";
}

}  // namespace

std::string Schedule::str() const {
  std::string out;
  size_t buffers = 0;
  for (const ScheduledKernel& k : kernels) buffers += k.buffers.size();
  out += "schedule: " + std::to_string(steps.size()) + " steps, " + std::to_string(kernels.size()) +
         " kernels for " + std::to_string(buffers) + " computed buffers\n";
  for (size_t i = 0; i < steps.size(); ++i) {
    const ScheduleStep& step = steps[i];
    out += "step " + std::to_string(i) + ": " + step_label(*this, step);
    if (step.kind != ScheduleStep::Kind::Kernel && !step.has_epilogue()) {
      out += " -> " + step.buffer->name() + "\n";
      continue;
    }
    if (step.kind != ScheduleStep::Kind::Kernel) out += " -> " + step.buffer->name() + "; epilogue";
    const ScheduledKernel& k = kernels[step.kind == ScheduleStep::Kind::Kernel ? step.kernel
                                                                                : step.epilogue];
    out += " ranges=" + extents_str(k.ranges);
    if (!k.reduction_ranges.empty()) out += " reduction_ranges=" + extents_str(k.reduction_ranges);
    out += "\n";
    for (size_t b = 0; b < k.buffers.size(); ++b) {
      const LoopBody& body = k.bodies[b];
      std::string what = body.reduction_type() != ReductionType::None
                             ? std::string("reduction ") +
                                   std::string(reduction_type_name(body.reduction_type()))
                         : body.is_reduction() ? "pointwise, in the reduction loop"
                                               : "pointwise";
      out += "  " + k.buffers[b]->name() + ": " + what + "\n";
    }
  }
  if (!splits.empty()) {
    out += "not fused:\n";
    for (const Split& s : splits) out += "  " + s.before + " | " + s.after + ": " + s.reason + "\n";
  }
  if (!epilogues.empty()) {
    out += "extern epilogues:\n";
    for (const EpilogueNote& e : epilogues)
      out += "  " + e.product + (e.fused ? ": fused: " : ": not fused: ") + e.reason + "\n";
  }
  if (!attention.empty()) {
    out += "attention:\n";
    for (const std::string& a : attention) out += "  " + a + "\n";
  }
  return out;
}

std::string Schedule::dot(const LoweredGraph& graph) const {
  std::map<std::string, size_t> step_of;
  for (size_t i = 0; i < steps.size(); ++i)
    for (const Buffer* b : writes(steps[i])) step_of[b->name()] = i;
  std::string out = "digraph schedule {\n  node [shape=box];\n";
  for (const auto& in : graph.inputs)
    out += "  \"" + in->name() + "\" [shape=ellipse];\n";
  for (size_t i = 0; i < steps.size(); ++i) {
    std::string names;
    for (const Buffer* b : writes(steps[i])) names += (names.empty() ? "" : ", ") + b->name();
    out += "  s" + std::to_string(i) + " [label=\"" + step_label(*this, steps[i]) + "\\n" + names +
           "\"];\n";
  }
  for (size_t i = 0; i < steps.size(); ++i)
    for (const std::string& n : reads(steps[i])) {
      auto it = step_of.find(n);
      std::string from = it == step_of.end() ? "\"" + n + "\"" : "s" + std::to_string(it->second);
      if (it != step_of.end() && it->second == i) continue;  // inside the kernel
      out += "  " + from + " -> s" + std::to_string(i) + " [label=\"" + n + "\"];\n";
    }
  for (const GraphOutput& o : graph.outputs) {
    auto it = step_of.find(o.buffer->name());
    if (it != step_of.end())
      out += "  s" + std::to_string(it->second) + " -> \"out:" + o.buffer->name() + "\";\n";
  }
  return out + "}\n";
}

}  // namespace stax
