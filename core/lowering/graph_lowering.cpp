#include "core/lowering/graph_lowering.h"

#include <algorithm>
#include <cassert>
#include <set>

#include "core/graph/op_registry.h"
#include "core/support/error.h"

namespace stax {

namespace {

// Origins an input value passes on to nodes built from it.
Origins contributed_origins(const IRPtr& v) {
  if (auto box = std::dynamic_pointer_cast<StorageBox>(v)) {
    IRKind k = box->data()->kind();
    if (k == IRKind::ComputedBuffer || k == IRKind::ExternKernel || k == IRKind::FallbackKernel)
      return {};
    return box->data()->origins();
  }
  return v->origins();
}

// The §6.4 layout of a flexible buffer: strides in the loop order its reads prefer.
std::vector<int> pick_fill_order(const LoopBody& inner) {
  std::vector<Expr> reads;
  for (const MemoryDep& d : read_writes(inner).reads) reads.push_back(d.index);
  return fill_order_by_strides(reads, inner.iter_vars());
}

// The buffers an extern or fallback kernel reads.
std::vector<const Buffer*> kernel_inputs(const Buffer& b) {
  std::vector<const Buffer*> deps;
  auto add = [&](const std::vector<KernelInput>& in) {
    for (const auto& i : in) deps.push_back(i.buffer.get());
  };
  if (b.kind() == IRKind::ExternKernel) add(static_cast<const ExternKernel&>(b).inputs());
  if (b.kind() == IRKind::FallbackKernel) add(static_cast<const FallbackKernel&>(b).inputs());
  return deps;
}

}  // namespace

LoopBody record_loader(const IRPtr& value) {
  OpsBuilder b(value->size());
  value->make_loader()(b, iter_index(value->size()));
  return b.take();
}

// ---------------------------------------------------------------------------------------------

GraphLowering::GraphLowering(const Graph& g, const LoweringOptions& options,
                             const LoweringTable& table)
    : graph_(g), options_(options), table_(table) {}

IRPtr GraphLowering::value(const Node* n) const {
  auto it = env_.find(n);
  if (it == env_.end())
    throw Error("lowering", n ? "%" + n->name() : "", "internal: value used before it was lowered");
  return it->second;
}

IRPtr GraphLowering::input(const Node& n, std::string_view param) const {
  const Arg& a = n.arg(param);
  if (!a.is_node())
    throw Error("lowering", "%" + n.name(),
                "parameter '" + std::string(param) + "' is not a tensor");
  return value(a.node());
}

Origins GraphLowering::origins_for(const std::vector<IRPtr>& inputs) const {
  Origins o;
  if (current_) o.push_back(current_);
  for (const IRPtr& in : inputs)
    for (const Node* n : contributed_origins(in))
      if (std::find(o.begin(), o.end(), n) == o.end()) o.push_back(n);
  std::stable_sort(o.begin(), o.end(),
                   [](const Node* a, const Node* b) { return a->index() < b->index(); });
  return o;
}

IRPtr GraphLowering::box(const std::shared_ptr<Loops>& loops, const std::vector<IRPtr>& inputs) {
  loops->add_origins(origins_for(inputs));
  return std::make_shared<StorageBox>(loops);
}

IRPtr GraphLowering::view(const IRPtr& base, Shape size, Reindex reindex) {
  IRPtr b = base;
  // Compose chains of views so that a View's base is never a View.
  if (auto inner = std::dynamic_pointer_cast<View>(base)) {
    Reindex outer = std::move(reindex);
    Reindex first = inner->reindex();
    reindex = [first, outer](const Index& i) { return first(outer(i)); };
    b = inner->base();
  }
  IRPtr v = make_view(b, std::move(size), std::move(reindex));
  v->add_origins(origins_for({base}));
  return v;
}

std::string GraphLowering::new_buffer_name() { return "buf" + std::to_string(name_counter_++); }

void GraphLowering::register_buffer(const BufferPtr& buffer) { buffers_.push_back(buffer); }

BufferPtr GraphLowering::realize(const IRPtr& value) {
  auto box = std::dynamic_pointer_cast<StorageBox>(value);
  if (!box) {  // a view: copy its elements into a new buffer
    auto loops = std::make_shared<Pointwise>(value->device(), value->dtype(), value->size(),
                                             value->make_loader());
    loops->add_origins(origins_for({value}));
    box = std::make_shared<StorageBox>(loops);
  }
  if (BufferPtr b = box->buffer()) return b;
  auto loops = std::static_pointer_cast<Loops>(box->data());
  auto buf = std::make_shared<ComputedBuffer>(
      new_buffer_name(), Layout::flexible(loops->device(), loops->dtype(), loops->size()), loops);
  buf->add_origins(loops->origins());
  register_buffer(buf);
  box->set_data(buf);
  return buf;
}

KernelInput GraphLowering::realize_input(const IRPtr& value) {
  if (auto fs = as_fixed_storage(value)) return *fs;
  if (auto v = std::dynamic_pointer_cast<View>(value)) {
    auto base = std::dynamic_pointer_cast<StorageBox>(v->base());
    if (base && base->is_realized()) {
      base->buffer()->mutable_layout().freeze();
      if (auto fs = as_fixed_storage(make_view(base, v->size(), v->reindex()))) return *fs;
    }
  }
  BufferPtr buf = realize(value);
  if (!buf->layout().is_fixed()) buf->mutable_layout().freeze();
  return {buf, buf->layout()};
}

// ---------------------------------------------------------------------------------------------

void GraphLowering::lower_placeholder(const Node& n) {
  const TensorMeta& m = n.meta();
  auto buf =
      std::make_shared<InputBuffer>(n.name(), Layout::fixed(m.device, m.dtype, m.sizes, m.strides));
  buf->add_origins({&n});
  ++name_counter_;
  inputs_.push_back(buf);
  env_[&n] = std::make_shared<StorageBox>(buf);
}

bool GraphLowering::user_needs_memory(const Node& n) const {
  for (const Node* u : n.users()) {
    if (!u->is_call()) continue;
    const LoweringEntry* e = table_.find(u->target());
    if (!e || e->realizes_inputs) return true;
  }
  return false;
}

IRPtr GraphLowering::fallback(const Node& n) {
  std::vector<const Node*> arg_nodes;
  std::vector<KernelInput> inputs;
  for (const Node* a : n.input_nodes()) {
    arg_nodes.push_back(a);
    inputs.push_back(realize_input(value(a)));
  }
  const TensorMeta& m = n.meta();
  auto k = std::make_shared<FallbackKernel>(new_buffer_name(),
                                            Layout::fixed(m.device, m.dtype, m.sizes, m.strides),
                                            &n, std::move(arg_nodes), std::move(inputs));
  k->add_origins({&n});
  register_buffer(k);
  return std::make_shared<StorageBox>(k);
}

void GraphLowering::lower_call(const Node& n) {
  const LoweringEntry* e = table_.find(n.target());
  IRPtr v;
  try {
    if (e) v = e->rule(*this, n);
    if (!v) v = fallback(n);
  } catch (const Error& err) {
    if (err.location().empty()) throw Error(err.stage(), "%" + n.name(), err.message());
    throw;
  }
  env_[&n] = v;

  auto outs = graph_.outputs();
  if (std::find(outs.begin(), outs.end(), &n) != outs.end()) {
    outputs_done_[&n] = realize_output(n);
    return;
  }
  auto box = std::dynamic_pointer_cast<StorageBox>(v);
  if (!box || box->is_realized()) return;
  if (box->data()->kind() == IRKind::Reduction || user_needs_memory(n)) {
    realize(v);
    return;
  }
  if (n.num_users() > 1 && box->is_pointwise() &&
      should_realize(options_.thresholds, count_ops(record_loader(v)), n.num_users()))
    realize(v);
}

GraphOutput GraphLowering::realize_output(const Node& n) {
  auto done = outputs_done_.find(&n);
  if (done != outputs_done_.end()) return done->second;
  IRPtr v = value(&n);
  if (auto fs = as_fixed_storage(v)) return {fs->buffer, fs->layout};
  BufferPtr buf = realize(v);
  if (!buf->layout().is_fixed()) buf->mutable_layout().freeze();
  return {buf, buf->layout()};
}

void GraphLowering::finalize(LoweredGraph& out) {
  // 1. freeze flexible layouts (§6.4), 2. record every body with final layouts.
  for (const BufferPtr& b : buffers_) {
    if (b->layout().is_fixed() || b->kind() != IRKind::ComputedBuffer) continue;
    auto& cb = static_cast<ComputedBuffer&>(*b);
    cb.mutable_layout().freeze(pick_fill_order(cb.record_inner()));
  }
  for (const BufferPtr& b : buffers_)
    if (b->kind() == IRKind::ComputedBuffer) {
      auto& cb = static_cast<ComputedBuffer&>(*b);
      cb.set_body(cb.record_body());
    }
  // 3. producers before consumers (stable: registration order where already valid).
  std::set<const Buffer*> pending;
  for (const BufferPtr& b : buffers_) pending.insert(b.get());
  std::map<const Buffer*, std::vector<const Buffer*>> deps;
  for (const BufferPtr& b : buffers_) {
    auto d = kernel_inputs(*b);
    if (b->kind() == IRKind::ComputedBuffer) {
      for (const std::string& name :
           read_writes(static_cast<const ComputedBuffer&>(*b).body()).read_buffers())
        for (const BufferPtr& p : buffers_)
          if (p->name() == name) d.push_back(p.get());
    }
    deps[b.get()] = std::move(d);
  }
  while (!pending.empty()) {
    bool progress = false;
    for (const BufferPtr& b : buffers_) {
      if (!pending.count(b.get())) continue;
      bool ready = std::none_of(deps[b.get()].begin(), deps[b.get()].end(),
                                [&](const Buffer* d) { return d != b.get() && pending.count(d); });
      if (!ready) continue;
      out.buffers.push_back(b);
      pending.erase(b.get());
      progress = true;
      break;
    }
    assert(progress && "cyclic buffer dependencies");
    if (!progress) break;
  }
  out.inputs = inputs_;
}

LoweredGraph GraphLowering::run() {
  LoweredGraph out;
  for (const Node* n : graph_.nodes()) {
    current_ = n;
    if (n->is_placeholder())
      lower_placeholder(*n);
    else if (n->is_call())
      lower_call(*n);
  }
  current_ = nullptr;
  for (const Node* n : graph_.outputs()) out.outputs.push_back(realize_output(*n));
  finalize(out);
  return out;
}

LoweredGraph lower_graph(const Graph& g, const LoweringOptions& options,
                         const LoweringTable& table) {
  GraphLowering lowering(g, options, table);
  return lowering.run();
}

// ---------------------------------------------------------------------------------------------

const Buffer* LoweredGraph::find(std::string_view name) const {
  for (const auto& b : inputs)
    if (b->name() == name) return b.get();
  for (const auto& b : buffers)
    if (b->name() == name) return b.get();
  return nullptr;
}

std::string LoweredGraph::str(FormatStyle style) const {
  std::string s;
  for (const auto& b : inputs) s += format_buffer(*b, style) + "\n";
  for (const auto& b : buffers) s += format_buffer(*b, style) + "\n";
  return s;
}

}  // namespace stax
