#include "core/driver/compiler.h"

#include <chrono>
#include <map>
#include <mutex>
#include <set>

#include "core/backend/parallel_compile.h"
#include "core/driver/stage_dumper.h"
#include "core/graph/decompositions.h"
#include "core/graph/multi_output.h"
#include "core/graph/passes.h"
#include "core/graph/printer.h"
#include "core/ir/layout.h"
#include "core/lowering/lowering_rules.h"
#include "core/ops/install.h"
#include "core/ops/nn/attention_fusion.h"
#include "core/runtime/execution_plan.h"
#include "core/scheduler/in_place.h"
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

// Compiles every kernel plan of `execs` (graphs on one backend, with the same options) through
// the kernel cache in ONE batch (the misses on up to `threads` threads when the backend allows,
// the largest first, whichever graph they belong to), recording sources, times and where each
// kernel came from. The kernels found on disk are linked together (KernelCache::get_all: one
// plugin call). Each graph's compile_ms is the batch's wall time.
void compile_plans(const std::vector<ExecutionPlan*>& execs, KernelCache& cache,
                   const OptionValue& options, size_t threads, const CancellationToken* cancel) {
  auto t = Clock::now();
  std::vector<const StaxKernelDesc*> descs;
  for (const ExecutionPlan* exec : execs)
    for (const KernelPlan& plan : exec->plans) descs.push_back(plan.desc.get());
  std::vector<KernelOrigin> origins;
  std::vector<double> ms;
  std::vector<std::shared_ptr<CompiledKernel>> compiled =
      cache.get_all(*execs.front()->plugin, options, descs, &origins, &ms, threads, cancel);
  const double batch_ms = ms_since(t);
  size_t k = 0;
  for (ExecutionPlan* exec : execs) {
    for (size_t i = 0; i < exec->plans.size(); ++i, ++k) {
      const KernelPlan& plan = exec->plans[i];
      exec->compiled.push_back(std::move(compiled[k]));
      ++(origins[k] == KernelOrigin::Compiled ? exec->stats.kernels_compiled
         : origins[k] == KernelOrigin::Memory ? exec->stats.kernels_from_memory
                                              : exec->stats.kernels_from_disk);
      std::string names;
      for (const ComputedBuffer* b : plan.buffers) names += (names.empty() ? "" : ", ") + b->name();
      exec->infos.push_back({plan.name, names, {}, ms[k]});  // sources: CompiledGraph::kernels()
    }
    exec->stats.compile_ms += batch_ms;
  }
  cache.store_pending();
}

// The "kernels" dump: every kernel's source under a header line.
std::string kernels_text(const std::vector<CompiledKernelInfo>& kernels) {
  std::string text;
  for (const CompiledKernelInfo& k : kernels)
    text += "# kernel " + k.name + " (computes " + k.buffer + ")\n" + k.source + "\n";
  return text;
}

// The run plan from the schedule: one slot per input and buffer (with its place in the memory
// plan), one step per scheduled step with the slots it writes and reads, and after each step the
// slots whose last reader it is (graph inputs and outputs are never released).
void plan_steps(ExecutionPlan& exec) {
  const LoweredGraph& l = exec.lowered;
  std::map<std::string, size_t> slot_of;
  for (const auto& in : l.inputs) {
    slot_of[in->name()] = exec.slots.size();
    exec.slots.push_back(in.get());
    exec.placements.push_back(nullptr);
  }
  for (const BufferPtr& b : l.buffers) {
    slot_of[b->name()] = exec.slots.size();
    exec.slots.push_back(b.get());
    exec.placements.push_back(exec.memory.find(b->name()));
  }
  auto slot = [&](const std::string& name) {
    auto it = slot_of.find(name);
    if (it == slot_of.end()) throw Error("compile", name, "internal: unknown buffer");
    return it->second;
  };
  for (const ScheduleStep& s : exec.schedule.steps) {
    ExecutionPlan::Step step;
    for (const Buffer* b : exec.schedule.writes(s)) step.outputs.push_back(slot(b->name()));
    if (s.kind == ScheduleStep::Kind::Kernel) {
      step.kind = ExecutionPlan::StepKind::Kernel;
      step.kernel = s.kernel;
      for (const std::string& name : exec.plans[s.kernel].desc.buffer_names())
        step.arg_slots.push_back(slot(name));
      for (size_t out : step.outputs) {
        const BufferPlacement* p = exec.placements[out];
        if (p && !p->in_place_of.empty()) step.in_place.push_back({out, slot(p->in_place_of)});
      }
    } else {
      bool ext = s.kind == ScheduleStep::Kind::Extern;
      step.kind = ext ? ExecutionPlan::StepKind::Extern : ExecutionPlan::StepKind::Fallback;
      // An extern the plugin does not offer runs on the interpreter: a fallback, and counted so.
      step.on_interpreter =
          ext && !exec.plugin->has_extern_kernel(
                     static_cast<const ExternKernel&>(*s.buffer).kernel());
      ++(ext && !step.on_interpreter ? exec.num_externs : exec.num_fallbacks);
      for (const std::string& name : read_buffer_names(*s.buffer))
        step.arg_slots.push_back(slot(name));
      if (s.has_epilogue()) {
        step.epilogue = s.epilogue;
        for (const std::string& name : exec.plans[s.epilogue].desc.buffer_names())
          step.epilogue_slots.push_back(slot(name));
      }
    }
    exec.steps.push_back(std::move(step));
  }
  std::set<size_t> keep;
  for (size_t s = 0; s < l.inputs.size(); ++s) keep.insert(s);
  for (const GraphOutput& o : l.outputs) keep.insert(slot(o.buffer->name()));
  std::map<size_t, size_t> last_step;
  for (size_t i = 0; i < exec.steps.size(); ++i) {
    for (size_t s : exec.steps[i].outputs) last_step[s] = i;
    for (size_t s : exec.steps[i].arg_slots) last_step[s] = i;
    for (size_t s : exec.steps[i].epilogue_slots) last_step[s] = i;
    for (const auto& [out, donor] : exec.steps[i].in_place) last_step[donor] = i;
  }
  for (const auto& [s, i] : last_step)
    if (!keep.count(s)) exec.steps[i].frees.push_back(s);
}

}  // namespace

static bool offers_fused_attention(const Plugin& plugin) {
  for (const std::string& name : fused_attention_externs())
    if (!plugin.has_extern_kernel(name)) return false;
  return true;
}

static bool offers_fused_attention_dropout(const Plugin& plugin) {
  for (const std::string& name : fused_attention_dropout_externs())
    if (!plugin.has_extern_kernel(name)) return false;
  return true;
}

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
    : session_(std::make_shared<BackendSession>(std::move(config))),
      options_(std::move(options)),
      cache_(std::make_unique<KernelCache>(CacheSettings::resolve(
          session_->registry.config().cache, session_->registry.config().cache_dir))) {
  // The process's op tables (~0.45 M instructions for ~600 entries) are filled once, by the
  // entry point or here, with the plugin set-up, rather than inside the first graph's compile
  // (issue 11 counts a compile's time per graph).
  install_ops();
}

Compiler::~Compiler() = default;

PluginRegistry& Compiler::registry() { return session_->registry; }

bool Compiler::fuses_attention(const Graph& graph) {
  if (!options_.fuse_attention) return false;
  std::lock_guard<std::mutex> lock(session_->mutex);
  std::string kind = graph_device_kind(graph);
  const std::string& default_device = session_->registry.config().default_device;
  if (kind == "cpu" && !default_device.empty()) kind = default_device;
  return offers_fused_attention(session_->registry.backend(kind));
}

bool Compiler::fuses_attention_dropout(const Graph& graph) {
  if (!fuses_attention(graph)) return false;
  std::lock_guard<std::mutex> lock(session_->mutex);
  std::string kind = graph_device_kind(graph);
  const std::string& default_device = session_->registry.config().default_device;
  if (kind == "cpu" && !default_device.empty()) kind = default_device;
  return offers_fused_attention_dropout(session_->registry.backend(kind));
}
const Config& Compiler::config() const { return session_->registry.config(); }

void Compiler::prepare(const std::string& device_kind) {
  std::lock_guard<std::mutex> lock(session_->mutex);
  std::string kind = device_kind;
  if (kind.empty() || kind == "cpu") {
    const std::string& default_device = session_->registry.config().default_device;
    kind = default_device.empty() ? "cpu" : default_device;
  }
  Plugin& plugin = session_->registry.backend(kind);
  const DeviceConfig* device = session_->registry.config().device(kind);
  cache_->prepare(plugin, device ? device->options : OptionValue::map());
}

namespace {

// A graph through the passes up to its kernel descriptions, and the device kind it compiles for.
struct Staged {
  ExecutionPlan plan;
  std::string kind;
  double passes_ms = 0;  // decompose to codegen
};

// compile()'s passes before the kernels' compile: decompose, lower, schedule, codegen.
Staged plan_graph(const std::shared_ptr<BackendSession>& session, const CompileOptions& options,
                  const Graph& source, const CancellationToken* cancel) {
  // Cancellation checkpoints: before each pass (and, in compile_plans, each kernel).
  auto checkpoint = [&](const char* pass) { check_cancelled(cancel, options.name, pass); };
  checkpoint("decompose");
  const auto t_start = Clock::now();
  Staged staged;
  staged.plan.session = session;
  const StageDumper dump(session->registry.config().dump, options.name);

  // decompose: own a copy, composite ops into base ops
  staged.plan.graph = std::make_unique<Graph>(source.clone());
  Graph& g = *staged.plan.graph;
  auto t = Clock::now();
  expand_multi_output(g);  // ops returning several tensors: one node (and buffer) per element
  // the backend serving the graph's device kind (the config's default_device for a graph on the
  // default device "cpu")
  std::string& kind = staged.kind;
  kind = graph_device_kind(g);
  const std::string& default_device = session->registry.config().default_device;
  if (kind == "cpu" && !default_device.empty()) kind = default_device;
  staged.plan.plugin = &session->registry.backend(kind);
  // fused attention where the backend runs it, before sdpa would decompose
  AttentionFusion attention;
  if (options.fuse_attention && offers_fused_attention(*staged.plan.plugin))
    attention = fuse_attention(g, offers_fused_attention_dropout(*staged.plan.plugin));
  if (options.decompose) decompose(g);
  // a cat of head-merging reshapes (the backward of a qkv split) as the cat of the heads, reshaped
  // once: contiguous inner loops, the same bits (core/graph/passes.h)
  cat_before_reshape(g);
  staged.plan.stats.decompose_ms = ms_since(t);
  dump("graph", [&] { return print_graph(g); });

  // lower, with the policy of that backend
  checkpoint("lower");
  const BackendPolicy policy = session->registry.policy(kind);
  t = Clock::now();
  staged.plan.lowered =
      lower_graph(g, {policy.thresholds, policy.split_reduction, policy.bitwise_opcodes});
  staged.plan.stats.lower_ms = ms_since(t);
  dump("loop_ir", [&] { return staged.plan.lowered.str(); });

  // schedule: fused kernels in step order (the backend's fusion limits), the memory plan
  checkpoint("schedule");
  FusionLimits fusion = policy.fusion;
  if (!options.fuse) fusion.enable_fusion = false;
  t = Clock::now();
  staged.plan.schedule = schedule(staged.plan.lowered, fusion);
  staged.plan.memory = plan_memory(staged.plan.lowered, staged.plan.schedule);
  apply_in_place(staged.plan.schedule, staged.plan.memory);
  staged.plan.stats.schedule_ms = ms_since(t);
  staged.plan.schedule.attention = attention.notes;
  dump("schedule", [&] { return staged.plan.schedule.str() + staged.plan.memory.str(); });
  dump("schedule", [&] { return staged.plan.schedule.dot(staged.plan.lowered); }, "dot");

  // codegen: one kernel description per scheduled kernel (the plugin compiles them next)
  checkpoint("codegen");
  t = Clock::now();
  staged.plan.plans = plan_kernels(staged.plan.schedule, staged.plan.lowered, options.codegen);
  staged.plan.stats.codegen_ms = ms_since(t);
  staged.passes_ms = ms_since(t_start);
  return staged;
}

// The backend options of the staged graph's device (the config subtree).
OptionValue backend_options(const BackendSession& session, const Staged& s) {
  const DeviceConfig* device = session.registry.config().device(s.kind);
  return device ? device->options : OptionValue::map();
}

// compile()'s last steps once the kernels are compiled: the kernels dump and the run plan.
CompiledGraph finish(const BackendSession& session, const CompileOptions& options,
                     ExecutionPlan plan, double total_ms) {
  const StageDumper dump(session.registry.config().dump, options.name);
  dump("kernels", [&] {
    std::vector<CompiledKernelInfo> infos = plan.infos;
    for (size_t i = 0; i < infos.size(); ++i) infos[i].source = plan.compiled[i]->source();
    return kernels_text(infos);
  });

  // run plan: buffer slots, step order, last uses
  const auto t = Clock::now();
  plan_steps(plan);
  plan.stats.total_ms = total_ms + ms_since(t);
  return CompiledGraph(std::move(plan));
}

}  // namespace

size_t Compiler::threads_for_kernels() const {
  return options_.compile_threads ? options_.compile_threads : compile_threads();
}

CompiledGraph Compiler::compile(const Graph& source, const CancellationToken* cancel) {
  // One compile at a time per Compiler: the registry creates backends lazily, and the plugin
  // ABI has the host serialise calls on a backend instance.
  std::lock_guard<std::mutex> lock(session_->mutex);
  const auto t_start = Clock::now();
  Staged s = plan_graph(session_, options_, source, cancel);
  compile_plans({&s.plan}, *cache_, backend_options(*session_, s), threads_for_kernels(), cancel);
  return finish(*session_, options_, std::move(s.plan), ms_since(t_start));
}

std::pair<CompiledGraph, CompiledGraph> Compiler::compile_pair(
    const Graph& first, const std::function<Graph(const LoweredGraph&)>& second,
    const CancellationToken* cancel) {
  std::lock_guard<std::mutex> lock(session_->mutex);
  Staged a = plan_graph(session_, options_, first, cancel);
  Staged b = plan_graph(session_, options_, second(a.plan.lowered), cancel);
  const auto t = Clock::now();
  const OptionValue a_options = backend_options(*session_, a);
  const OptionValue b_options = backend_options(*session_, b);
  if (a.plan.plugin == b.plan.plugin &&
      KernelCache::options_text(a_options) == KernelCache::options_text(b_options)) {
    compile_plans({&a.plan, &b.plan}, *cache_, a_options, threads_for_kernels(), cancel);
  } else {  // two backends: a batch each
    compile_plans({&a.plan}, *cache_, a_options, threads_for_kernels(), cancel);
    compile_plans({&b.plan}, *cache_, b_options, threads_for_kernels(), cancel);
  }
  // Each graph's total: its own passes and the kernels' compile (the batch, when shared).
  const double kernels_ms = ms_since(t);
  CompiledGraph ca = finish(*session_, options_, std::move(a.plan), a.passes_ms + kernels_ms);
  CompiledGraph cb = finish(*session_, options_, std::move(b.plan), b.passes_ms + kernels_ms);
  return {std::move(ca), std::move(cb)};
}

}  // namespace stax
