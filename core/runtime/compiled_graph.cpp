#include "core/runtime/compiled_graph.h"

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "core/runtime/compiled_graph_impl.h"
#include "core/runtime/step_profile.h"
#include "core/graph/source_location.h"
#include "core/interpreter/interpreter.h"
#include "core/support/error.h"

namespace stax {

namespace {

using Impl = CompiledGraph::Impl;


// Same sizes and the same strides wherever they matter (extent > 1).
bool same_layout(const Tensor& t, const Shape& sizes, const Shape& strides) {
  if (t.sizes() != sizes || strides.size() != sizes.size()) return false;
  if (shape_numel(sizes) == 0) return true;
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] > 1 && t.strides()[d] != strides[d]) return false;
  return true;
}

// The graph nodes a step computes, "%a, %b" (the origins of the buffers it produces), for
// run-time errors.
std::string step_nodes(const Impl& impl, const Impl::Step& step) {
  std::string out;
  for (size_t s : step.outputs)
    for (const Node* n : impl.slots[s]->origins())
      if (n->is_call()) out += (out.empty() ? "" : ", ") + node_where(*n);
  return out;
}

// What a step runs, for the step profile (step_profile.h): the kernel, or the extern with its
// operands' sizes and strides (and its epilogue), or the fallback, then the nodes it computes.
std::string step_label(const Impl& impl, const Impl::Step& step) {
  std::string what;
  const Buffer& produced = *impl.slots[step.outputs.front()];
  switch (step.kind) {
    case Impl::StepKind::Kernel: what = "kernel " + impl.compiled[step.kernel]->name(); break;
    case Impl::StepKind::Extern: {
      const auto& ek = static_cast<const ExternKernel&>(produced);
      what = std::string(step.on_interpreter ? "extern (interpreted) " : "extern ") + ek.kernel();
      for (const auto& in : ek.inputs())
        what += " " + shape_str(in.layout.size) + "/" + shape_str(in.layout.stride);
      if (step.epilogue != SIZE_MAX) what += " + epilogue " + impl.compiled[step.epilogue]->name();
      break;
    }
    case Impl::StepKind::Fallback: what = "fallback"; break;
  }
  return what + " -> " + shape_str(produced.layout().size) + " " + step_nodes(impl, step);
}

// A RunContext taken from the CompiledGraph's free list for one run (a new one when every
// context is in use by another run) and put back when the run ends, normally or not.
class ContextLease {
 public:
  explicit ContextLease(const Impl& impl) : impl_(impl) {
    std::lock_guard<std::mutex> lock(impl.contexts_mutex);
    if (impl.free_contexts.empty()) {
      context_ = std::make_unique<Impl::RunContext>();
    } else {
      context_ = std::move(impl.free_contexts.back());
      impl.free_contexts.pop_back();
    }
  }
  ~ContextLease() {
    std::lock_guard<std::mutex> lock(impl_.contexts_mutex);
    impl_.free_contexts.push_back(std::move(context_));
  }
  ContextLease(const ContextLease&) = delete;
  ContextLease& operator=(const ContextLease&) = delete;

  Impl::RunContext& operator*() const { return *context_; }
  Impl::RunContext* operator->() const { return context_.get(); }

 private:
  const Impl& impl_;
  std::unique_ptr<Impl::RunContext> context_;
};

// The run's buffers: one Tensor per slot, viewing the slot buffer's storage with its layout.
class Slots {
 public:
  explicit Slots(const Impl& impl) : impl_(impl), tensors_(impl.slots.size()) {}

  Tensor& at(size_t s) { return tensors_.at(s); }
  const Layout& layout(size_t s) const { return impl_.slots[s]->layout(); }

  const Tensor& get(size_t s) const {
    const Tensor& t = tensors_.at(s);
    if (!t.defined())
      throw Error("runtime", impl_.slots[s]->name(),
                  "internal: buffer used before it was computed or after it was released");
    return t;
  }
  // The address of element 0 of the slot's storage frame (what layout offsets count from).
  void* base(size_t s) const {
    const Tensor& t = get(s);
    return t.data_ptr() - layout(s).offset * t.itemsize();
  }
  // A view of slot s's storage with `view` (a layout over the same storage frame).
  Tensor view(size_t s, const Layout& view) const {
    const Tensor& t = get(s);
    int64_t offset = t.storage_offset() - layout(s).offset + view.offset;
    return t.as_strided(view.size, view.stride, offset);
  }

 private:
  const Impl& impl_;
  std::vector<Tensor> tensors_;
};

StaxTensorDesc tensor_desc(void* base, const Layout& l) {
  StaxTensorDesc d{};
  d.struct_size = sizeof(StaxTensorDesc);
  d.data = base;
  d.dtype = plugin_dtype_code(l.dtype);
  d.ndim = l.size.size();
  d.sizes = l.size.data();
  d.strides = l.stride.data();
  d.offset = l.offset;
  return d;
}

// Whether an interpreter result has its node's sizes: equal, or for a dim whose size is known only
// at run time (nonzero's rows, TensorMeta::runtime_sized_dims) at most the node's bound.
bool result_fits(const Tensor& r, const TensorMeta& m) {
  if (r.sizes().size() != m.sizes.size()) return false;
  for (size_t d = 0; d < m.sizes.size(); ++d)
    if (m.runtime_sized_dims >> d & 1u ? r.sizes()[d] > m.sizes[d] : r.sizes()[d] != m.sizes[d])
      return false;
  return true;
}

// A buffer whose size is known only at run time: a fallback result keeps the interpreter's tensor
// as it is, and the graph returns that tensor (nothing else may read it, Graph::call).
bool runtime_sized(const Buffer& b) {
  return b.kind() == IRKind::FallbackKernel &&
         static_cast<const FallbackKernel&>(b).node()->meta().runtime_sized();
}

// Runs `node` with the reference interpreter's kernel on `args` (bound to arg_nodes) and returns
// its result.
Tensor interpret_node(const Node& node, const std::vector<const Node*>& arg_nodes,
                      const std::vector<Tensor>& args, uint64_t run_seed) {
  const std::string where = node_where(node);
  const KernelFn* kernel = default_interpreter_table().find(node.target());
  if (!kernel) throw Error("runtime", where, "no interpreter kernel for op " + node.target());
  std::unordered_map<const Node*, const Tensor*> bound;
  for (size_t i = 0; i < arg_nodes.size() && i < args.size(); ++i) bound[arg_nodes[i]] = &args[i];
  std::function<const Tensor&(const Node*)> lookup = [&](const Node* n) -> const Tensor& {
    auto it = bound.find(n);
    if (it == bound.end())
      throw Error(
          "runtime", where,
          "fallback kernel reads %" + (n ? n->name() : "?") + ", which is not one of its inputs");
    return *it->second;
  };
  KernelContext ctx(node, lookup, node_seed(run_seed, node), ReductionOrder::Sequential, run_seed);
  Tensor r;
  try {
    r = (*kernel)(ctx);
  } catch (const Error& e) {
    if (e.location() == where) throw;
    throw Error("runtime", where, node.target() + ": " + e.message());
  }
  if (!r.defined() || !result_fits(r, node.meta()) || r.dtype() != node.dtype())
    throw Error("runtime", where,
                node.target() +
                    ": the interpreter kernel's result does not "
                    "match the node's metadata");
  return r;
}

// The tensor arguments of an extern kernel's node, in argument order (duplicates kept): they
// correspond one to one to ExternKernel::inputs().
// An extern's tensor arguments in argument order, lists flattened (index_put's indices), as its
// lowering rule lists its inputs.
std::vector<const Node*> tensor_args(const Node& n) {
  std::vector<const Node*> out;
  for (const Arg& a : n.args()) {
    if (a.is_node()) out.push_back(a.node());
    if (a.is_list())
      for (const Arg& e : a.list())
        if (e.is_node()) out.push_back(e.node());
  }
  return out;
}

}  // namespace

CompiledGraph::CompiledGraph(ExecutionPlan plan)
    : impl_(std::make_shared<const Impl>(std::move(plan))) {}

Impl::DeviceBlock::DeviceBlock(const Plugin& p, size_t n) : plugin(p), bytes(n) {
  data = plugin.device_alloc(n == 0 ? 1 : n, static_cast<size_t>(MemoryPlan::kArenaAlignment));
}

Impl::DeviceBlock::~DeviceBlock() {
  try {
    plugin.device_free(data);
  } catch (const Error&) {  // a destructor does not throw; the device is gone anyway
  }
}

Impl::RunContext::~RunContext() {
  device_slots.clear();
  device_arena.reset();
  if (stream_owner) try {
      stream_owner->stream_destroy(stream);
    } catch (const Error&) {
    }
}

namespace {

// Whether a run keeps its buffers in the backend's device memory: a backend whose device is not
// the CPU and whose ABI has device memory (1.2).
bool device_resident(const Impl& impl) {
  return impl.plugin->kind() != sdk::DeviceKind::CPU && impl.plugin->has_device_memory();
}

void check_input(const LoweredGraph& l, size_t i, const Tensor& t) {
  const Layout& want = l.inputs[i]->layout();
  const std::string where = "%" + l.inputs[i]->name();
  if (!t.defined()) throw Error("runtime", where, "input tensor is undefined");
  if (t.sizes() != want.size || t.dtype() != want.dtype)
    throw Error("runtime", where,
                "input has " + std::string(dtype_name(t.dtype())) + shape_str(t.sizes()) +
                    " but the placeholder expects " + std::string(dtype_name(want.dtype)) +
                    shape_str(want.size));
}

// The index of the slot an output returns.
size_t output_slot(const Impl& impl, const GraphOutput& o) {
  size_t s = 0;
  while (s < impl.slots.size() && impl.slots[s] != o.buffer.get()) ++s;
  if (s == impl.slots.size())
    throw Error("runtime", o.buffer->name(), "internal: output buffer has no slot");
  return s;
}

// A view of `t` (whose storage holds slot layout `have`) with layout `view` of the same frame.
Tensor frame_view(const Tensor& t, const Layout& have, const Layout& view) {
  return t.as_strided(view.size, view.stride, t.storage_offset() - have.offset + view.offset);
}

// One run with every buffer in the backend's device memory (see RunStats): the slots' device
// storage, their host copies and the copies between them, step by step.
class DeviceRun {
 public:
  DeviceRun(const Impl& impl, const GraphRunOptions& options, Impl::RunContext& ctx,
            OutputPool& alloc)
      : impl_(impl), plugin_(*impl.plugin), options_(options), ctx_(ctx), alloc_(alloc) {
    st_.on_device = true;
    if (!ctx_.stream_owner) {
      ctx_.stream = plugin_.stream_create();
      ctx_.stream_owner = &plugin_;
    }
    stream_ = ctx_.stream;
    ctx_.device_slots.resize(impl_.slots.size());
    if (!ctx_.device_arena && impl_.memory.arena_bytes > 0)
      ctx_.device_arena = std::make_unique<Impl::DeviceBlock>(
          plugin_, static_cast<size_t>(impl_.memory.arena_bytes));
    dev_.assign(impl_.slots.size(), nullptr);
    host_.resize(impl_.slots.size());
  }

  std::vector<Tensor> run(const std::vector<Tensor>& inputs) {
    try {
      load_inputs(inputs);
      for (const Impl::Step& step : impl_.steps) {
        try {
          run_step(step);
        } catch (const Error& e) {
          if (!e.location().empty()) throw;
          throw Error(e.stage(), step_nodes(impl_, step), e.message());
        }
        for (size_t s : step.frees) {
          dev_[s] = nullptr;
          host_[s] = Tensor();
        }
      }
      return outputs();
    } catch (...) {
      // Queued copies may still target host memory this frame owns: wait for them first.
      try {
        plugin_.device_synchronize(stream_);
      } catch (const Error&) {
      }
      throw;
    }
  }

 private:
  static size_t bytes_of(const Layout& lay) {
    return static_cast<size_t>(lay.storage_numel()) * dtype_size(lay.dtype);
  }
  std::byte* host_base(size_t s) const {
    const Tensor& t = host_[s];
    return t.data_ptr() - impl_.slots[s]->layout().offset * static_cast<int64_t>(t.itemsize());
  }
  // Device storage for slot s: its arena bytes, or a block of this context's.
  std::byte* device_storage(size_t s) {
    const BufferPlacement* p = s < impl_.placements.size() ? impl_.placements[s] : nullptr;
    if (p && p->kind == BufferPlacement::Kind::Arena)
      return static_cast<std::byte*>(ctx_.device_arena->data) + p->offset;
    if (p && p->kind == BufferPlacement::Kind::Temporary) return nullptr;  // in its host's bytes
    size_t need = bytes_of(impl_.slots[s]->layout());
    std::unique_ptr<Impl::DeviceBlock>& b = ctx_.device_slots[s];
    if (!b || b->bytes < need) {
      b.reset();
      b = std::make_unique<Impl::DeviceBlock>(plugin_, need);
    }
    return static_cast<std::byte*>(b->data);
  }
  void copy(StaxCopyKind kind, void* dst, const void* src, size_t bytes) {
    if (bytes == 0) return;
    plugin_.device_copy(kind, dst, src, bytes, stream_);
    if (kind == STAX_COPY_HOST_TO_DEVICE) {
      ++st_.host_to_device;
      st_.host_to_device_bytes += static_cast<int64_t>(bytes);
    } else {
      ++st_.device_to_host;
      st_.device_to_host_bytes += static_cast<int64_t>(bytes);
    }
  }
  void synchronize() {
    plugin_.device_synchronize(stream_);
    ++st_.synchronizes;
  }
  // The slot's device pointer, copying its host copy in on first use.
  std::byte* on_device(size_t s) {
    if (dev_[s]) return dev_[s];
    if (!host_[s].defined())
      throw Error("runtime", impl_.slots[s]->name(),
                  "internal: buffer used before it was computed or after it was released");
    dev_[s] = device_storage(s);
    copy(STAX_COPY_HOST_TO_DEVICE, dev_[s], host_base(s), bytes_of(impl_.slots[s]->layout()));
    return dev_[s];
  }
  // Queues the copy of slot s to the host (into `into`, storage with the slot's layout) unless
  // the host has it; the caller synchronises before reading.
  void to_host(size_t s, Tensor into) {
    if (host_[s].defined()) return;
    if (!dev_[s])
      throw Error("runtime", impl_.slots[s]->name(),
                  "internal: buffer used before it was computed or after it was released");
    host_[s] = std::move(into);
    copy(STAX_COPY_DEVICE_TO_HOST, host_base(s), dev_[s], bytes_of(impl_.slots[s]->layout()));
  }
  Tensor staging(size_t s) const {
    const Layout& lay = impl_.slots[s]->layout();
    return Tensor::empty({std::max<int64_t>(lay.storage_numel(), 1)}, lay.dtype)
        .as_strided(lay.size, lay.stride, lay.offset);
  }
  // Output `out` is written in place of `donor` (memory_plan.h): the kernel reads the donor's
  // values through out's pointer, so they must be in those device bytes, which are the donor's
  // (one arena offset per in-place chain). A donor only the host has (an interpreter result) is
  // copied in here; one already on the device is there.
  void take_over(size_t out, size_t donor) {
    std::byte* bytes = on_device(donor);
    if (bytes != device_storage(out))
      throw Error("runtime", impl_.slots[out]->name(),
                  "internal: written in place of " + impl_.slots[donor]->name() +
                      " but not in its device bytes");
  }
  // Slot s is (about to be) written on the device: its host copy is stale.
  void written_on_device(size_t s) {
    dev_[s] = device_storage(s);
    host_[s] = Tensor();
  }

  void load_inputs(const std::vector<Tensor>& inputs) {
    const LoweredGraph& l = impl_.lowered;
    for (size_t i = 0; i < l.inputs.size(); ++i) {
      const Tensor& t = inputs[i];
      const Layout& want = l.inputs[i]->layout();
      if (same_layout(t, want.size, want.stride) && want.offset == 0) {
        host_[i] = t;
      } else {
        host_[i] = alloc_.allocate(want);
        host_[i].copy_from(t);
      }
    }
  }

  void run_step(const Impl::Step& step) {
    const Buffer& produced = *impl_.slots[step.outputs.front()];
    switch (step.kind) {
      case Impl::StepKind::Kernel: {
        for (const auto& [out, donor] : step.in_place) take_over(out, donor);
        for (size_t s : step.outputs) written_on_device(s);
        launch(step, step.kernel, step.arg_slots);
        break;
      }
      case Impl::StepKind::Extern: {
        const auto& ek = static_cast<const ExternKernel&>(produced);
        if (!step.on_interpreter)
          call_extern(step, ek);
        else
          interpret(step, *ek.node(), tensor_args(*ek.node()), ek.inputs());
        if (step.epilogue != SIZE_MAX) {  // the product's epilogue, after it on the device
          for (size_t s : step.outputs)
            if (s != step.outputs.front()) written_on_device(s);
          launch(step, step.epilogue, step.epilogue_slots);
        }
        break;
      }
      case Impl::StepKind::Fallback: {
        const auto& fk = static_cast<const FallbackKernel&>(produced);
        interpret(step, *fk.node(), fk.arg_nodes(), fk.inputs());
        break;
      }
    }
  }

  // Runs compiled kernel `kernel` of `step` over the device pointers of `slots`.
  void launch(const Impl::Step& step, size_t kernel, const std::vector<size_t>& slots) {
    std::vector<void*> ptrs;
    for (size_t s : slots) ptrs.push_back(on_device(s));
    try {
      impl_.compiled[kernel]->run_on_device(ptrs.data(), ptrs.size(), stream_);
    } catch (const Error& e) {
      throw Error("runtime", step_nodes(impl_, step),
                  "kernel '" + impl_.compiled[kernel]->name() + "': " + e.message());
    }
    ++st_.launches;
  }

  void call_extern(const Impl::Step& step, const ExternKernel& ek) {
    const size_t out_slot = step.outputs.front();
    std::vector<StaxTensorDesc> descs;
    for (size_t k = 0; k < ek.inputs().size(); ++k)
      descs.push_back(tensor_desc(on_device(step.arg_slots[k]), ek.inputs()[k].layout));
    written_on_device(out_slot);
    descs.push_back(tensor_desc(dev_[out_slot], impl_.slots[out_slot]->layout()));
    plugin_.run_extern(ek.kernel(), descs, ek.inputs().size(), ek.scalars(), stream_);
    ++st_.extern_calls;
  }

  // An interpreter step: copy what it reads to the host, run, copy its result in lazily.
  void interpret(const Impl::Step& step, const Node& node,
                 const std::vector<const Node*>& arg_nodes, const std::vector<KernelInput>& ins) {
    const size_t out_slot = step.outputs.front();
    const size_t queued = st_.device_to_host;
    for (size_t k = 0; k < ins.size(); ++k) to_host(step.arg_slots[k], staging(step.arg_slots[k]));
    if (st_.device_to_host > queued) synchronize();
    std::vector<Tensor> args;
    for (size_t k = 0; k < ins.size(); ++k) {
      size_t s = step.arg_slots[k];
      args.push_back(frame_view(host_[s], impl_.slots[s]->layout(), ins[k].layout));
    }
    if (node.meta().runtime_sized())
      throw Error("runtime", node_where(node),
                  node.target() + ": a result whose size is known only at run time is not "
                  "supported on a device-resident backend yet; run the graph on cpu_cpp");
    Tensor r = interpret_node(node, arg_nodes, args, options_.seed);
    ++st_.interpreter_steps;
    const Layout& want = impl_.slots[out_slot]->layout();
    if (same_layout(r, want.size, want.stride) && want.offset == 0) {
      host_[out_slot] = r;
    } else {
      host_[out_slot] = staging(out_slot);
      host_[out_slot].copy_from(r);
    }
    dev_[out_slot] = nullptr;  // copied in when a device step reads it
  }

  std::vector<Tensor> outputs() {
    const LoweredGraph& l = impl_.lowered;
    std::vector<size_t> out_slots;
    for (const GraphOutput& o : l.outputs) {
      size_t s = output_slot(impl_, o);
      to_host(s, alloc_.allocate(impl_.slots[s]->layout()));
      out_slots.push_back(s);
    }
    synchronize();  // before the host reads what the device wrote
    std::vector<Tensor> outputs;
    for (size_t k = 0; k < l.outputs.size(); ++k) {
      size_t s = out_slots[k];
      outputs.push_back(frame_view(host_[s], impl_.slots[s]->layout(), l.outputs[k].layout));
    }
    if (options_.stats) *options_.stats = st_;
    return outputs;
  }

  const Impl& impl_;
  const Plugin& plugin_;
  const GraphRunOptions& options_;
  Impl::RunContext& ctx_;
  OutputPool& alloc_;
  RunStats st_;
  void* stream_ = nullptr;
  // Per slot: its device storage (element 0 of the slot's frame), and its host copy when the
  // host has one (an input, an interpreter result, a slot copied out for the interpreter).
  std::vector<std::byte*> dev_;
  std::vector<Tensor> host_;
};

// One run with every buffer in host memory: the arena, pool storage for outputs, steps in order.
class HostRun {
 public:
  HostRun(const Impl& impl, const GraphRunOptions& options, Impl::RunContext& ctx,
          OutputPool& alloc)
      : impl_(impl), options_(options), ctx_(ctx), alloc_(alloc), slots_(impl) {
    if (!ctx_.arena.defined() && impl_.memory.arena_bytes > 0)
      ctx_.arena = Tensor::empty({impl_.memory.arena_bytes}, DType::UInt8);
  }

  std::vector<Tensor> run(const std::vector<Tensor>& inputs) {
    load_inputs(inputs);
    const bool profile = StepProfile::enabled();
    for (size_t i = 0; i < impl_.steps.size(); ++i) {
      const Impl::Step& step = impl_.steps[i];
      try {
        const auto t0 = profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
        run_step(step);
        if (profile)
          StepProfile::add(&impl_, i,
                           std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::steady_clock::now() - t0).count(),
                           step_label(impl_, step));
      } catch (const Error& e) {  // e.g. an allocation failure: name the graph nodes
        if (!e.location().empty()) throw;
        throw Error(e.stage(), step_nodes(impl_, step), e.message());
      }
      for (size_t s : step.frees) slots_.at(s) = Tensor();
    }
    std::vector<Tensor> outputs;
    for (const GraphOutput& o : impl_.lowered.outputs) {
      size_t s = output_slot(impl_, o);
      outputs.push_back(runtime_sized(*o.buffer) ? slots_.get(s) : slots_.view(s, o.layout));
    }
    if (options_.stats) *options_.stats = st_;
    return outputs;
  }

 private:
  // Storage for a slot a step writes: its place in the arena, or pool storage for an output.
  Tensor storage_for(size_t s) {
    const Layout& want = impl_.slots[s]->layout();
    const BufferPlacement* p = impl_.placements[s];
    if (p && p->kind == BufferPlacement::Kind::Temporary) return Tensor();  // in its host's bytes
    if (!p || p->kind != BufferPlacement::Kind::Arena) return alloc_.allocate(want);
    int64_t item = static_cast<int64_t>(dtype_size(want.dtype));
    return ctx_.arena.reinterpret(want.dtype, want.size, want.stride,
                                  p->offset / item + want.offset);
  }

  void load_inputs(const std::vector<Tensor>& inputs) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Tensor& t = inputs[i];
      const Layout& want = impl_.lowered.inputs[i]->layout();
      if (same_layout(t, want.size, want.stride) && want.offset == 0) {
        slots_.at(i) = t;
      } else {
        slots_.at(i) = alloc_.allocate(want);
        slots_.at(i).copy_from(t);
      }
    }
  }

  void run_step(const Impl::Step& step) {
    switch (step.kind) {
      case Impl::StepKind::Kernel: {
        for (size_t s : step.outputs) slots_.at(s) = storage_for(s);
        std::vector<void*> ptrs;
        for (size_t s : step.arg_slots) ptrs.push_back(slots_.base(s));
        try {
          impl_.compiled[step.kernel]->run(ptrs);
          ++st_.launches;
        } catch (const Error& e) {  // e.g. an index out of bounds: name the graph nodes
          throw Error("runtime", step_nodes(impl_, step),
                      "kernel '" + impl_.compiled[step.kernel]->name() + "': " + e.message());
        }
        break;
      }
      case Impl::StepKind::Extern: run_extern_step(step); break;
      case Impl::StepKind::Fallback: run_fallback(step); break;
    }
  }

  void run_extern_step(const Impl::Step& step) {
    const size_t out_slot = step.outputs.front();
    const Buffer& produced = *impl_.slots[out_slot];
    const auto& ek = static_cast<const ExternKernel&>(produced);
    for (size_t s : step.outputs) slots_.at(s) = storage_for(s);
    // The product's epilogue kernel (extern_epilogue.h): run by the plugin on blocks of
    // rows as the product finishes them, or here after it.
    const CompiledKernel* epilogue =
        step.epilogue != SIZE_MAX ? impl_.compiled[step.epilogue].get() : nullptr;
    std::vector<void*> epilogue_ptrs;
    for (size_t s : step.epilogue_slots) epilogue_ptrs.push_back(slots_.base(s));
    bool epilogue_done = false;
    auto run_epilogue = [&] {
      try {
        epilogue->run(epilogue_ptrs);
      } catch (const Error& e) {
        throw Error("runtime", step_nodes(impl_, step),
                    "kernel '" + epilogue->name() + "': " + e.message());
      }
    };
    if (!step.on_interpreter) {
      std::vector<StaxTensorDesc> descs;
      for (size_t k = 0; k < ek.inputs().size(); ++k)
        descs.push_back(tensor_desc(slots_.base(step.arg_slots[k]), ek.inputs()[k].layout));
      descs.push_back(tensor_desc(slots_.base(out_slot), produced.layout()));
      try {
        epilogue_done = impl_.plugin->run_extern(ek.kernel(), descs, ek.inputs().size(),
                                                 ek.scalars(), nullptr, epilogue, epilogue_ptrs);
      } catch (const Error& e) {  // an error of the epilogue kernel names its nodes too
        if (!epilogue) throw;
        throw Error("runtime", step_nodes(impl_, step), e.message());
      }
      ++st_.extern_calls;
      if (epilogue) {
        if (!epilogue_done) run_epilogue();
        st_.fused_epilogues += epilogue_done ? 1 : 0;
        ++st_.launches;
      }
    } else {
      std::vector<Tensor> args;
      for (size_t k = 0; k < ek.inputs().size(); ++k)
        args.push_back(slots_.view(step.arg_slots[k], ek.inputs()[k].layout));
      slots_.at(out_slot).copy_from(
          interpret_node(*ek.node(), tensor_args(*ek.node()), args, options_.seed));
      ++st_.interpreter_steps;
      if (epilogue) {
        run_epilogue();
        ++st_.launches;
      }
    }
  }

  void run_fallback(const Impl::Step& step) {
    const size_t out_slot = step.outputs.front();
    const Buffer& produced = *impl_.slots[out_slot];
    const auto& fk = static_cast<const FallbackKernel&>(produced);
    std::vector<Tensor> args;
    for (size_t k = 0; k < fk.inputs().size(); ++k)
      args.push_back(slots_.view(step.arg_slots[k], fk.inputs()[k].layout));
    Tensor r = interpret_node(*fk.node(), fk.arg_nodes(), args, options_.seed);
    ++st_.interpreter_steps;
    const Layout& want = produced.layout();
    if (runtime_sized(produced) || (same_layout(r, want.size, want.stride) && want.offset == 0)) {
      slots_.at(out_slot) = r;
    } else {
      slots_.at(out_slot) = storage_for(out_slot);
      slots_.at(out_slot).copy_from(r);
    }
  }

  const Impl& impl_;
  const GraphRunOptions& options_;
  Impl::RunContext& ctx_;
  OutputPool& alloc_;
  RunStats st_;
  Slots slots_;
};

}  // namespace

std::vector<Tensor> CompiledGraph::run(const std::vector<Tensor>& inputs,
                                       const GraphRunOptions& options) const {
  const Impl& impl = *impl_;
  const LoweredGraph& l = impl.lowered;
  if (inputs.size() != l.inputs.size())
    throw Error("runtime", "",
                "the graph has " + std::to_string(l.inputs.size()) + " placeholders but " +
                    std::to_string(inputs.size()) + " inputs were given");
  for (size_t i = 0; i < inputs.size(); ++i) check_input(l, i, inputs[i]);
  // Runs of a backend whose kernels are not reentrant take turns (plugin_api.h, concurrent_runs).
  std::unique_lock<std::mutex> serial;
  if (!impl.plugin->properties().concurrent_runs)
    serial = std::unique_lock<std::mutex>(impl.session->mutex);
  ContextLease context(impl);
  OutputPool& pool = context->pool;
  pool.begin_run();
  if (device_resident(impl)) return DeviceRun(impl, options, *context, pool).run(inputs);
  return HostRun(impl, options, *context, pool).run(inputs);
}

const Graph& CompiledGraph::graph() const { return *impl_->graph; }
const LoweredGraph& CompiledGraph::lowered() const { return impl_->lowered; }
const Schedule& CompiledGraph::schedule() const { return impl_->schedule; }
const MemoryPlan& CompiledGraph::memory_plan() const { return impl_->memory; }
std::string CompiledGraph::loop_ir() const { return impl_->lowered.str(); }
const std::vector<CompiledKernelInfo>& CompiledGraph::kernels() const {
  return impl_->kernel_infos();
}
size_t CompiledGraph::num_kernels() const { return impl_->infos.size(); }
size_t CompiledGraph::num_externs() const { return impl_->num_externs; }
size_t CompiledGraph::num_fallbacks() const { return impl_->num_fallbacks; }
const CompileStats& CompiledGraph::stats() const { return impl_->stats; }
const std::string& CompiledGraph::backend_name() const { return impl_->plugin->name(); }

std::string CompiledGraph::summary() const {
  auto ms = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f ms", v);
    return std::string(buf);
  };
  std::string s = "kernels: " + std::to_string(num_kernels());
  if (!impl_->infos.empty()) {
    s += " (";
    for (size_t i = 0; i < impl_->infos.size(); ++i)
      s += (i ? ", " : "") + impl_->infos[i].name + " " + ms(impl_->infos[i].compile_ms);
    s += ")";
  }
  // Extern and fallback steps are listed by op, e.g. "fallbacks: 1 (buf1 = var.correction)"; an
  // extern the plugin does not offer is a fallback: "buf0 = extern mm on the interpreter".
  std::string externs, fallbacks;
  for (const Impl::Step& step : impl_->steps) {
    if (step.kind == Impl::StepKind::Kernel) continue;
    const Buffer& b = *impl_->slots[step.outputs.front()];
    std::string& list = step.kind == Impl::StepKind::Extern && !step.on_interpreter ? externs
                                                                                     : fallbacks;
    std::string what =
        step.kind == Impl::StepKind::Fallback
            ? static_cast<const FallbackKernel&>(b).node()->target()
            : static_cast<const ExternKernel&>(b).kernel() +
                  (step.on_interpreter ? " (extern, not offered by the backend: interpreter)" : "");
    list += (list.empty() ? "" : ", ") + b.name() + " = " + what;
  }
  auto listed = [](size_t count, const std::string& names) {
    return std::to_string(count) + (names.empty() ? "" : " (" + names + ")");
  };
  s += " | extern kernels: " + listed(num_externs(), externs);
  s += " | fallbacks: " + listed(num_fallbacks(), fallbacks);
  s += " | backend " + backend_name();
  const CompileStats& st = impl_->stats;
  s += " | lowering " + ms(st.lower_ms) + ", compile " + ms(st.compile_ms) + ", total " +
       ms(st.total_ms);
  return s;
}

}  // namespace stax
