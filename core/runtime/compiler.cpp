#include "core/runtime/compiler.h"

#include <chrono>
#include <map>
#include <set>

#include "core/graph/decompositions.h"
#include "core/ir/layout.h"
#include "core/lowering/realization.h"
#include "core/runtime/compiled_graph_impl.h"
#include "core/support/error.h"

namespace stax {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// The buffers a step reads (by name).
std::vector<std::string> read_buffer_names(const Buffer& b) {
  std::vector<std::string> names;
  if (b.kind() == IRKind::ExternKernel)
    for (const KernelInput& in : static_cast<const ExternKernel&>(b).inputs())
      names.push_back(in.buffer->name());
  if (b.kind() == IRKind::FallbackKernel)
    for (const KernelInput& in : static_cast<const FallbackKernel&>(b).inputs())
      names.push_back(in.buffer->name());
  return names;
}

// The executor's steps (compiled_graph_impl.h) from the schedule: slots (graph inputs first,
// then the lowered buffers), what each step writes and reads, and when a slot is released.
void build_steps(CompiledGraph::Impl& impl) {
  using Impl = CompiledGraph::Impl;
  const LoweredGraph& l = impl.lowered;
  std::map<std::string, size_t> slot_of;
  for (const auto& in : l.inputs) {
    slot_of[in->name()] = impl.slots.size();
    impl.slots.push_back(in.get());
    impl.placements.push_back(nullptr);
  }
  for (const BufferPtr& b : l.buffers) {
    slot_of[b->name()] = impl.slots.size();
    impl.slots.push_back(b.get());
    impl.placements.push_back(impl.memory.find(b->name()));
  }
  auto slot = [&](const std::string& name) {
    auto it = slot_of.find(name);
    if (it == slot_of.end()) throw Error("compile", name, "internal: unknown buffer");
    return it->second;
  };
  for (const ScheduleStep& s : impl.schedule.steps) {
    Impl::Step step;
    for (const Buffer* b : impl.schedule.writes(s)) step.outputs.push_back(slot(b->name()));
    if (s.kind == ScheduleStep::Kind::Kernel) {
      step.kind = Impl::StepKind::Kernel;
      step.kernel = s.kernel;
      for (const std::string& name : impl.plans[s.kernel].desc.buffer_names())
        step.arg_slots.push_back(slot(name));
    } else {
      bool ext = s.kind == ScheduleStep::Kind::Extern;
      step.kind = ext ? Impl::StepKind::Extern : Impl::StepKind::Fallback;
      ++(ext ? impl.num_externs : impl.num_fallbacks);
      for (const std::string& name : read_buffer_names(*s.buffer))
        step.arg_slots.push_back(slot(name));
    }
    impl.steps.push_back(std::move(step));
  }
  std::set<size_t> keep;  // graph inputs and outputs are never released
  for (size_t s = 0; s < l.inputs.size(); ++s) keep.insert(s);
  for (const GraphOutput& o : l.outputs) keep.insert(slot(o.buffer->name()));
  std::map<size_t, size_t> last_step;
  for (size_t i = 0; i < impl.steps.size(); ++i) {
    for (size_t s : impl.steps[i].outputs) last_step[s] = i;
    for (size_t s : impl.steps[i].arg_slots) last_step[s] = i;
  }
  for (const auto& [s, i] : last_step)
    if (!keep.count(s)) impl.steps[i].frees.push_back(s);
}

}  // namespace

std::string graph_device_kind(const Graph& graph) {
  std::string kind;
  for (const Node* p : graph.placeholders()) {
    std::string k = device_type(p->meta().device);
    if (!kind.empty() && k != kind)
      throw Error("compile", "%" + p->name(),
                  "placeholders live on different device kinds ('" + kind + "' and '" + k + "')");
    kind = k;
  }
  if (!kind.empty()) return kind;
  for (const Node* n : graph.nodes())
    if (n->is_call()) return device_type(n->meta().device);
  return "cpu";
}

Compiler::Compiler(Config config, CompileOptions options)
    : shared_(std::make_shared<Shared>(std::move(config))), options_(std::move(options)) {}

Compiler::~Compiler() = default;

PluginRegistry& Compiler::registry() { return shared_->registry; }
const Config& Compiler::config() const { return shared_->registry.config(); }

CompiledGraph Compiler::compile(const Graph& source) {
  const auto t_start = Clock::now();
  auto impl = std::make_shared<CompiledGraph::Impl>();
  impl->shared = shared_;

  // 1. own a copy; decompose composite ops
  impl->graph = std::make_unique<Graph>(source.clone());
  Graph& g = *impl->graph;
  auto t = Clock::now();
  if (options_.decompose) decompose(g);
  impl->stats.decompose_ms = ms_since(t);

  // 2. the backend
  const std::string kind = graph_device_kind(g);
  Plugin& plugin = shared_->registry.backend(kind);
  impl->plugin = &plugin;

  // 3. lowering with the backend's policies
  LoweringOptions lowering;
  lowering.thresholds = realization_thresholds_from_sdk(shared_->registry.thresholds(kind));
  lowering.split_reduction = [&plugin](int64_t rn, int64_t n, ReductionType type) {
    return plugin.split_reduction(rn, n, static_cast<sdk::ReductionType>(type));
  };
  t = Clock::now();
  impl->lowered = lower_graph(g, lowering);
  impl->stats.lower_ms = ms_since(t);

  // 4. schedule: fused kernels in step order; memory plan
  t = Clock::now();
  impl->schedule = schedule(impl->lowered, options_.schedule);
  impl->memory = plan_memory(impl->lowered, impl->schedule);
  impl->stats.schedule_ms = ms_since(t);

  // 5. kernels
  t = Clock::now();
  impl->plans = plan_kernels(impl->schedule, impl->lowered, options_.codegen);
  impl->stats.codegen_ms = ms_since(t);
  for (const KernelPlan& plan : impl->plans) {
    auto tk = Clock::now();
    impl->compiled.push_back(plugin.compile(*plan.desc.get()));
    double ms = ms_since(tk);
    impl->stats.compile_ms += ms;
    std::string names;
    for (const ComputedBuffer* b : plan.buffers) names += (names.empty() ? "" : ", ") + b->name();
    impl->infos.push_back({plan.name, names, impl->compiled.back()->source(), ms});
  }

  // 6. the run plan: slots, steps, last uses
  build_steps(*impl);

  impl->stats.total_ms = ms_since(t_start);
  return CompiledGraph(std::move(impl));
}

}  // namespace stax
