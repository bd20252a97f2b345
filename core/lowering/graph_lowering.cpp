#include "core/lowering/graph_lowering.h"

#include <algorithm>
#include <cassert>
#include <functional>
#include <optional>
#include <queue>
#include <set>
#include <unordered_map>

#include "core/graph/op_registry.h"
#include "core/support/error.h"

namespace stax {

namespace {

// Reading a value recurses once per inlined producer (loaders call their inputs' loaders), so a
// fused chain is realized every kMaxInlineDepth nodes: bounded stack, and bodies of bounded size.
constexpr int kMaxInlineDepth = 256;

bool is_storage(IRKind k) {
  return k == IRKind::ComputedBuffer || k == IRKind::ExternKernel ||
         k == IRKind::FallbackKernel || k == IRKind::InputBuffer;
}

// Origins an input value passes on to nodes built from it.
OriginSet contributed_origins(const IRPtr& v) {
  if (auto box = std::dynamic_pointer_cast<StorageBox>(v)) {
    IRKind k = box->data()->kind();
    if (k == IRKind::ComputedBuffer || k == IRKind::ExternKernel || k == IRKind::FallbackKernel)
      return {};
    return box->data()->origin_set();
  }
  return v->origin_set();
}

// IRNode::inline_depth of what reading `v` inlines: 0 for storage.
int inline_depth_of(const IRPtr& v) {
  if (auto box = std::dynamic_pointer_cast<StorageBox>(v))
    return is_storage(box->data()->kind()) ? 0 : box->data()->inline_depth();
  return v->inline_depth();
}

// The §6.4 layout of a flexible buffer: strides in the loop order its reads prefer.
std::vector<int> pick_fill_order(const LoopBody& inner) {
  std::vector<Expr> reads;  // read_writes(inner).reads' indices, without copying the names
  for (const LoopOp& op : inner.ops)
    if (op.opcode == Opcode::load || op.opcode == Opcode::masked_load)
      reads.push_back(inner.index_of(op));
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
    : graph_(g), options_(options), table_(table), env_(g.nodes().size()) {}

IRPtr* GraphLowering::slot(const Node* n) {
  auto i = n ? static_cast<size_t>(n->index()) : env_.size();
  if (i >= env_.size() || graph_.nodes()[i] != n)
    throw Error("lowering", n ? "%" + n->name() : "", "internal: a node of another graph");
  return &env_[i];
}

IRPtr GraphLowering::value(const Node* n) const {
  auto i = n ? static_cast<size_t>(n->index()) : env_.size();
  if (i >= env_.size() || graph_.nodes()[i] != n || !env_[i])
    throw Error("lowering", n ? "%" + n->name() : "", "internal: value used before it was lowered");
  return env_[i];
}

IRPtr GraphLowering::input(const Node& n, std::string_view param) const {
  const Arg& a = n.arg(param);
  if (!a.is_node())
    throw Error("lowering", "%" + n.name(),
                "parameter '" + std::string(param) + "' is not a tensor");
  return value(a.node());
}

OriginSet GraphLowering::origins_for(const std::vector<IRPtr>& inputs) const {
  OriginSet o;
  for (const IRPtr& in : inputs) o.add(contributed_origins(in));
  if (current_) o.add(current_);
  return o;
}

IRPtr GraphLowering::box(const std::shared_ptr<Loops>& loops, const std::vector<IRPtr>& inputs) {
  loops->add_origins(origins_for(inputs));
  int depth = 0;
  for (const IRPtr& in : inputs) depth = std::max(depth, inline_depth_of(in));
  loops->set_inline_depth(depth + 1);
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
  v->set_inline_depth(inline_depth_of(b) + 1);
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
  buf->add_origins(loops->origin_set());
  register_buffer(buf);
  box->set_data(buf);
  return buf;
}

KernelInput GraphLowering::realize_input(const IRPtr& value) {
  if (auto fs = as_fixed_storage(value)) return *fs;
  if (auto v = std::dynamic_pointer_cast<View>(value)) {
    auto base = std::dynamic_pointer_cast<StorageBox>(v->base());
    // A reshape / permute of a pointwise value (every element of it): the value itself is
    // realized, so that its other users (a second product reading its transpose, a bias
    // gradient's sum) read that one buffer instead of each computing a copy of their own.
    if (base && !base->is_realized() && base->is_pointwise() &&
        shape_numel(base->size()) == shape_numel(v->size()))
      realize(base);
    if (base && base->is_realized()) {
      base->buffer()->mutable_layout().freeze();
      if (auto fs = as_fixed_storage(make_view(base, v->size(), v->reindex()))) return *fs;
      // Not a strided view of the buffer (a permute folded into a reshape): a copy, shared by
      // every extern that reads this view of this buffer (the Mixer's backward read one
      // transposed (1024, 64) gradient through two products: two identical copies).
      const std::string key =
          shape_str(v->size()) + " " +
          base->buffer()->layout().index(v->reindex()(iter_index(v->size()))).str();
      auto [it, fresh] = realized_views_.try_emplace({base->buffer().get(), key}, nullptr);
      if (!fresh && it->second) return {it->second, it->second->layout()};
      BufferPtr copy = realize(value);
      if (!copy->layout().is_fixed()) copy->mutable_layout().freeze();
      it->second = copy;
      return {copy, copy->layout()};
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
  *slot(&n) = std::make_shared<StorageBox>(buf);
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

namespace {
// Complex values never reach the loop IR (no backend prints complex arithmetic, and the plugin ABI
// carries real dtypes only): a node reading or producing one runs on the interpreter.
bool touches_complex(const Node& n) {
  if (is_complex(n.meta().dtype)) return true;
  for (const Node* a : n.input_nodes())
    if (is_complex(a->meta().dtype)) return true;
  return false;
}
}  // namespace

void GraphLowering::lower_call(const Node& n) {
  const LoweringEntry* e = touches_complex(n) ? nullptr : table_.find(n.target());
  IRPtr v;
  try {
    if (e) v = e->rule(*this, n);
    if (!v) v = fallback(n);
  } catch (const Error& err) {
    if (err.location().empty()) throw Error(err.stage(), "%" + n.name(), err.message());
    throw;
  }
  *slot(&n) = v;

  // A returned node has the output node among its (distinct) users. Searching a fresh copy of
  // Graph::outputs() here was O(nodes x outputs): a 100k-node MLP step's backward graph returns
  // ~17k gradients.
  const Node* out_node = graph_.output_node();
  if (out_node && std::find(n.users().begin(), n.users().end(), out_node) != n.users().end()) {
    outputs_done_[&n] = realize_output(n);
    return;
  }
  auto box = std::dynamic_pointer_cast<StorageBox>(v);
  if (!box || box->is_realized()) return;
  if (box->data()->kind() == IRKind::Reduction || user_needs_memory(n) ||
      inline_depth_of(v) >= kMaxInlineDepth) {
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
  // A reshape of a whole pointwise value that reads it in its own row-major order (the (2048, 64)
  // view of an (8, 16, 16, 64) LayerNorm output that a training forward saves): the value's
  // buffer is the output, seen as a contiguous tensor of the view's shape, instead of a copy of
  // every element. Only when the base's storage order is row-major (fixed so, or flexible: it is
  // frozen row-major here), so that the output stays contiguous.
  if (auto view = std::dynamic_pointer_cast<View>(v)) {
    auto base = std::dynamic_pointer_cast<StorageBox>(view->base());
    if (base && (base->is_realized() || base->is_pointwise()) &&
        shape_numel(base->size()) == shape_numel(view->size())) {
      BufferPtr realized = base->buffer();
      const Layout base_layout =
          realized && realized->layout().is_fixed()
              ? realized->layout()
              : Layout::fixed_contiguous(v->device(), v->dtype(), base->size());
      const Layout want = Layout::fixed_contiguous(v->device(), v->dtype(), view->size());
      const Index vars = iter_index(view->size());
      if (base_layout.dtype == want.dtype &&
          base_layout.index(view->reindex()(vars)) == want.index(vars)) {
        BufferPtr b = realize(base);
        if (!b->layout().is_fixed()) b->mutable_layout().freeze();
        return {b, want};
      }
    }
  }
  BufferPtr buf = realize(v);
  if (!buf->layout().is_fixed()) buf->mutable_layout().freeze();
  return {buf, buf->layout()};
}

void GraphLowering::finalize(LoweredGraph& out) {
  // 1. freeze flexible layouts (§6.4), 2. record every body with final layouts, then drop the
  //    closures (Loops::release_inner_fn).
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
  for (const BufferPtr& b : buffers_)
    if (b->kind() == IRKind::ComputedBuffer)
      static_cast<ComputedBuffer&>(*b).data()->release_inner_fn();
  // 3. producers before consumers (stable: among the buffers whose producers are placed, the
  //    earliest registered comes first; Kahn's algorithm with a priority queue, O(E log B)).
  //    A buffer's registration index is its graph_id for now (LoweredGraph::index renumbers);
  //    loads carry the buffer they read (LoopOp::source), a name map is built only for loads
  //    without one.
  for (size_t i = 0; i < buffers_.size(); ++i) buffers_[i]->set_graph_id(static_cast<int64_t>(i));
  auto registered = [&](const Buffer* d) -> int64_t {
    int64_t k = d ? d->graph_id() : -1;
    return k >= 0 && static_cast<size_t>(k) < buffers_.size() && buffers_[static_cast<size_t>(k)].get() == d
               ? k
               : -1;
  };
  std::optional<std::unordered_map<std::string_view, size_t>> position;  // by name, if needed
  auto by_name = [&](std::string_view name) -> int64_t {
    if (!position) {
      position.emplace();
      position->reserve(buffers_.size());
      for (size_t i = 0; i < buffers_.size(); ++i) position->emplace(buffers_[i]->name(), i);
    }
    auto it = position->find(name);
    return it == position->end() ? -1 : static_cast<int64_t>(it->second);
  };
  std::vector<std::vector<size_t>> consumers(buffers_.size());
  std::vector<size_t> waiting(buffers_.size(), 0);
  std::vector<size_t> producers;
  for (size_t i = 0; i < buffers_.size(); ++i) {
    const Buffer& b = *buffers_[i];
    producers.clear();
    for (const Buffer* d : kernel_inputs(b))
      if (int64_t k = registered(d); k >= 0) producers.push_back(static_cast<size_t>(k));
    if (b.kind() == IRKind::ComputedBuffer)
      for (const LoopOp& op : static_cast<const ComputedBuffer&>(b).body().ops) {
        if (op.opcode != Opcode::load && op.opcode != Opcode::masked_load) continue;
        int64_t k = op.source && op.source->name() == op.buffer
                        ? (op.source->kind() == IRKind::InputBuffer ? -1 : registered(op.source))
                        : by_name(op.buffer);
        if (k < 0 && op.source && op.source->kind() != IRKind::InputBuffer) k = by_name(op.buffer);
        if (k >= 0) producers.push_back(static_cast<size_t>(k));
      }
    // distinct, ascending, without i itself
    std::sort(producers.begin(), producers.end());
    producers.erase(std::unique(producers.begin(), producers.end()), producers.end());
    producers.erase(std::remove(producers.begin(), producers.end(), i), producers.end());
    for (size_t p : producers) consumers[p].push_back(i);
    waiting[i] = producers.size();
  }
  out.buffers.reserve(buffers_.size());
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < buffers_.size(); ++i)
    if (waiting[i] == 0) ready.push(i);
  while (!ready.empty()) {
    size_t i = ready.top();
    ready.pop();
    out.buffers.push_back(std::move(buffers_[i]));
    for (size_t c : consumers[i])
      if (--waiting[c] == 0) ready.push(c);
  }
  assert(out.buffers.size() == buffers_.size() && "cyclic buffer dependencies");
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
  out.index();
  // Loads and stores name their buffer by id from now on (LoopOp::buffer_id); the sources are
  // dropped, as the bodies may outlive the buffers.
  for (const BufferPtr& b : out.buffers) {
    if (b->kind() != IRKind::ComputedBuffer) continue;
    for (LoopOp& op : static_cast<ComputedBuffer&>(*b).mutable_body().ops) {
      const bool is_load = op.opcode == Opcode::load || op.opcode == Opcode::masked_load;
      if (!is_load && op.opcode != Opcode::store && op.opcode != Opcode::store_reduction) continue;
      if (is_load && op.source && op.source->name() == op.buffer)
        op.buffer_id = out.id_of(op.source);
      else if (!is_load && op.buffer == b->name())
        op.buffer_id = b->graph_id();
      else
        op.buffer_id = out.id_of(std::string_view(op.buffer));
      op.source = nullptr;
    }
  }
  return out;
}

LoweredGraph lower_graph(const Graph& g, const LoweringOptions& options,
                         const LoweringTable& table) {
  GraphLowering lowering(g, options, table);
  return lowering.run();
}

// ---------------------------------------------------------------------------------------------

void LoweredGraph::index() {
  by_name.clear();
  by_name.reserve(inputs.size() + buffers.size());
  for (const auto& b : inputs) by_name.emplace(b->name(), b.get());
  for (const auto& b : buffers) by_name.emplace(b->name(), b.get());
  for (size_t k = 0; k < buffers.size(); ++k) buffers[k]->set_graph_id(static_cast<int64_t>(k));
  for (size_t j = 0; j < inputs.size(); ++j)
    inputs[j]->set_graph_id(static_cast<int64_t>(buffers.size() + j));
}

const Buffer* LoweredGraph::by_id(int64_t id) const {
  if (id < 0) return nullptr;
  auto k = static_cast<size_t>(id);
  if (k < buffers.size()) return buffers[k].get();
  if (k - buffers.size() < inputs.size()) return inputs[k - buffers.size()].get();
  return nullptr;
}

int64_t LoweredGraph::id_of(const Buffer* b) const {
  if (!b) return -1;
  if (by_id(b->graph_id()) == b) return b->graph_id();
  const Buffer* named = find(b->name());
  return named == b ? named->graph_id() : -1;
}

int64_t LoweredGraph::id_of(std::string_view name) const {
  const Buffer* b = find(name);
  return b && by_id(b->graph_id()) == b ? b->graph_id() : -1;
}

int64_t LoweredGraph::id_of_op(const LoopOp& op) const {
  if (const Buffer* b = by_id(op.buffer_id); b && b->name() == op.buffer) return op.buffer_id;
  return id_of(std::string_view(op.buffer));
}

const Buffer* LoweredGraph::find(std::string_view name) const {
  if (by_name.size() == inputs.size() + buffers.size() && !by_name.empty()) {
    auto it = by_name.find(name);
    return it == by_name.end() ? nullptr : it->second;
  }
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
