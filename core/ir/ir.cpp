#include "core/ir/ir.h"

#include <algorithm>
#include <unordered_set>

#include "core/ir/eliminate_dead_ops.h"
#include "core/support/error.h"

namespace stax {

namespace {

// `n` as a Buffer when it is one (InputBuffer, ComputedBuffer, ExternKernel, FallbackKernel:
// the Buffer subclasses of ir.h), else null. What dynamic_pointer_cast<Buffer> gives, by kind().
BufferPtr as_buffer(const IRPtr& n) {
  if (!n) return nullptr;
  switch (n->kind()) {
    case IRKind::InputBuffer:
    case IRKind::ComputedBuffer:
    case IRKind::ExternKernel:
    case IRKind::FallbackKernel:
      return std::static_pointer_cast<Buffer>(n);
    default:
      return nullptr;
  }
}

}  // namespace

void OriginSet::add(const Origins& nodes) {
  if (nodes.empty()) return;
  if (nodes.size() == 1) return add(nodes[0]);
  auto part = std::make_shared<Part>();
  part->nodes = nodes;
  part->a = root_;
  root_ = std::move(part);
}

void OriginSet::add(const Node* node) {
  auto part = std::make_shared<Part>();
  part->node = node;
  part->a = std::move(root_);
  root_ = std::move(part);
}

void OriginSet::add(const OriginSet& other) {
  if (!other.root_ || other.root_ == root_) return;
  if (!root_) {
    root_ = other.root_;
    return;
  }
  auto part = std::make_shared<Part>();
  part->a = std::move(root_);
  part->b = other.root_;
  root_ = std::move(part);
}

Origins OriginSet::flatten() const {
  Origins out;
  std::unordered_set<const Part*> seen_parts;
  std::unordered_set<const Node*> seen_nodes;
  std::vector<const Part*> todo;
  if (root_) todo.push_back(root_.get());
  while (!todo.empty()) {  // iterative: a long fused chain is a deep DAG
    const Part* p = todo.back();
    todo.pop_back();
    if (!seen_parts.insert(p).second) continue;
    if (p->node && seen_nodes.insert(p->node).second) out.push_back(p->node);
    for (const Node* n : p->nodes)
      if (seen_nodes.insert(n).second) out.push_back(n);
    if (p->a) todo.push_back(p->a.get());
    if (p->b) todo.push_back(p->b.get());
  }
  std::sort(out.begin(), out.end(),
            [](const Node* a, const Node* b) { return a->index() < b->index(); });
  return out;
}

Index iter_index(const Shape& ranges) {
  Index v;
  v.reserve(ranges.size());
  for (size_t k = 0; k < ranges.size(); ++k)
    v.push_back(Expr::iter(static_cast<int32_t>(k), ranges[k]));
  return v;
}

Index reduce_index(const Shape& reduction_ranges) {
  Index v;
  v.reserve(reduction_ranges.size());
  for (size_t k = 0; k < reduction_ranges.size(); ++k)
    v.push_back(Expr::reduce(static_cast<int32_t>(k), reduction_ranges[k]));
  return v;
}

Loader Reduction::make_loader() const {
  throw Error("lowering", "", "internal: a Reduction is read before being realized");
}

Loader Buffer::make_loader() const {
  auto self = std::static_pointer_cast<const Buffer>(shared_from_this());
  return [self](OpsBuilder& b, const Index& index) {
    return b.load(self->name(), self->dtype(), self->layout().index(index), self.get());
  };
}

namespace {

struct Recorded {
  OpsBuilder builder;
  Index index;
  Val value;
};

Recorded record(const Loops& data) {
  const auto* red =
      data.kind() == IRKind::Reduction ? static_cast<const Reduction*>(&data) : nullptr;
  Recorded r{OpsBuilder(data.ranges(), red ? red->reduction_ranges() : Shape{}),
             iter_index(data.ranges()), Val{}};
  if (red) {
    Val v = red->inner_fn()(r.builder, r.index, reduce_index(red->reduction_ranges()));
    r.value = r.builder.reduction(red->reduction_type(), red->acc_dtype(), v);
  } else {
    r.value = static_cast<const Pointwise&>(data).inner_fn()(r.builder, r.index);
  }
  return r;
}

}  // namespace

LoopBody ComputedBuffer::record_inner() const { return record(*data_).builder.take(); }

LoopBody ComputedBuffer::record_body() const {
  Recorded r = record(*data_);
  Expr out = layout().index(r.index);
  if (data_->kind() == IRKind::Reduction)
    r.builder.store_reduction(name(), out, r.value);
  else
    r.builder.store(name(), out, r.value);
  return eliminate_dead_ops(r.builder.take());
}

namespace {

// What n.make_loader()(b, index) records, without building a Loader (a heap-allocated
// std::function) per call: boxes and views load through their base on every replay of every
// body that reads them.
Val load_from(const IRNode& n, OpsBuilder& b, const Index& index) {
  switch (n.kind()) {
    case IRKind::InputBuffer:
    case IRKind::ComputedBuffer:
    case IRKind::ExternKernel:
    case IRKind::FallbackKernel: {
      const auto& buf = static_cast<const Buffer&>(n);
      return b.load(buf.name(), buf.dtype(), buf.layout().index(index), &buf);
    }
    case IRKind::StorageBox:
      return load_from(*static_cast<const StorageBox&>(n).data(), b, index);
    case IRKind::View: {
      const auto& v = static_cast<const View&>(n);
      return load_from(*v.base(), b, v.reindex()(index));
    }
    case IRKind::ReinterpretView: {
      const auto& rv = static_cast<const ReinterpretView&>(n);
      return b.load(rv.base()->name(), rv.dtype(), rv.layout().index(index), rv.base().get());
    }
    case IRKind::Pointwise:
      return static_cast<const Pointwise&>(n).inner_fn()(b, index);
    default:
      return n.make_loader()(b, index);
  }
}

}  // namespace

Loader StorageBox::make_loader() const {
  auto self = std::static_pointer_cast<const StorageBox>(shared_from_this());
  return [self](OpsBuilder& b, const Index& index) { return load_from(*self->data(), b, index); };
}

bool StorageBox::is_realized() const { return buffer() != nullptr; }

BufferPtr StorageBox::buffer() const { return as_buffer(data_); }

Loader View::make_loader() const {
  auto self = std::static_pointer_cast<const View>(shared_from_this());
  return [self](OpsBuilder& b, const Index& index) {
    return load_from(*self->base(), b, self->reindex()(index));
  };
}

Loader ReinterpretView::make_loader() const {
  auto self = std::static_pointer_cast<const ReinterpretView>(shared_from_this());
  return [self](OpsBuilder& b, const Index& index) {
    return b.load(self->base()->name(), self->dtype(), self->layout().index(index),
                  self->base().get());
  };
}

std::optional<KernelInput> as_fixed_storage(const IRPtr& node) {
  if (!node) return std::nullopt;
  // By kind() (IRKind is closed: every IR class is in ir.h), not dynamic_pointer_cast: lowering
  // asks this for every kernel input and view.
  if (node->kind() == IRKind::ReinterpretView) {
    const auto& rv = static_cast<const ReinterpretView&>(*node);
    return KernelInput{rv.base(), rv.layout()};
  }
  BufferPtr buf = as_buffer(node);
  if (node->kind() == IRKind::StorageBox) buf = static_cast<const StorageBox&>(*node).buffer();
  if (buf && buf->layout().is_fixed()) return KernelInput{buf, buf->layout()};
  return std::nullopt;
}

IRPtr make_view(const IRPtr& base, Shape size, Reindex reindex) {
  if (auto fs = as_fixed_storage(base)) {
    Index vars = iter_index(size);
    Expr e = fs->layout.index(reindex(vars));
    Shape strides(size.size(), 0);
    // The common case read off the canonical sum: every term one of `vars` (the loop below
    // gives the same strides and offset, through expression arithmetic).
    auto var_pos = [&](const Expr& a) -> int {
      for (size_t k = 0; k < vars.size(); ++k)
        if (a == vars[k]) return static_cast<int>(k);
      return -1;
    };
    bool direct = e.is_const() || e.is_var() || e.kind() == ExprKind::Add;
    int64_t direct_offset = 0;
    if (e.is_const()) {
      direct_offset = e.value();
    } else if (e.is_var()) {
      int k = var_pos(e);
      if (k < 0) direct = false;
      else strides[static_cast<size_t>(k)] = 1;
    } else if (direct) {
      for (size_t i = 0; i < e.args().size() && direct; ++i) {
        int k = var_pos(e.args()[i]);
        if (k < 0) direct = false;
        else strides[static_cast<size_t>(k)] += e.coeffs()[i];
      }
      direct_offset = e.value();
    }
    if (direct) {
      Layout l = Layout::fixed(fs->layout.device, fs->layout.dtype, size, strides, direct_offset);
      return std::make_shared<ReinterpretView>(fs->buffer, std::move(l));
    }
    std::fill(strides.begin(), strides.end(), 0);
    Expr rest = e;
    bool affine = true;
    for (size_t k = 0; k < vars.size() && affine; ++k) {
      auto c = linear_coeff(e, vars[k]);
      if (!c)
        affine = false;
      else {
        strides[k] = *c;
        rest = rest - vars[k] * Expr(*c);
      }
    }
    if (affine && rest.is_const()) {
      Layout l = Layout::fixed(fs->layout.device, fs->layout.dtype, size, strides, rest.value());
      return std::make_shared<ReinterpretView>(fs->buffer, std::move(l));
    }
  }
  return std::make_shared<View>(base, std::move(size), std::move(reindex));
}

// ---------------------------------------------------------------------------------------------
// Printing

namespace {

std::string origins_str(const Origins& o) {
  std::string s = "OrderedSet([";
  for (size_t i = 0; i < o.size(); ++i) s += (i ? ", " : "") + o[i]->name();
  return s + "])";
}

std::string kernel_inputs_str(const std::vector<KernelInput>& inputs) {
  std::string s = "[";
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i) s += ", ";
    const KernelInput& in = inputs[i];
    if (in.layout == in.buffer->layout())
      s += "'" + in.buffer->name() + "'";
    else
      s += "ReinterpretView('" + in.buffer->name() + "', " + in.layout.str() + ")";
  }
  return s + "]";
}

std::string format_computed(const ComputedBuffer& buf, FormatStyle style) {
  const Loops& data = *buf.data();
  bool reduction = data.kind() == IRKind::Reduction;
  bool tuple = !reduction;
  std::string s = "ComputedBuffer(name='" + buf.name() + "', layout=" + buf.layout().str(tuple) +
                  ", data=" + (reduction ? "Reduction(" : "Pointwise(") + "\n";
  if (style == FormatStyle::Full) {
    s += "  '" + device_type(data.device()) + "',\n";
    s += "  tensorplay." + std::string(dtype_name(buf.dtype())) + ",\n";
  }
  s += format_inner_fn(buf.body(), "  ");
  s += "  ,\n";
  std::string ranges = tuple ? shape_str(data.ranges()) : shape_list_str(data.ranges());
  std::vector<std::string> fields{"ranges=" + ranges};
  if (reduction) {
    const auto& red = static_cast<const Reduction&>(data);
    fields.push_back("reduction_ranges=" + shape_list_str(red.reduction_ranges()));
    fields.push_back("reduction_type=" + std::string(reduction_type_name(red.reduction_type())));
  }
  if (style == FormatStyle::Full) {
    fields.push_back("origins=" + origins_str(buf.origins()));
    for (size_t i = 0; i < fields.size(); ++i)
      s += "  " + fields[i] + (i + 1 < fields.size() ? ",\n" : "\n");
  } else {
    s += "  ";
    for (size_t i = 0; i < fields.size(); ++i) s += (i ? " " : "") + fields[i] + ",";
    s += "\n";
  }
  return s + "))";
}

}  // namespace

std::string format_buffer(const Buffer& buffer, FormatStyle style) {
  std::string head = "(name='" + buffer.name() + "', layout=" + buffer.layout().str();
  switch (buffer.kind()) {
    case IRKind::InputBuffer:
      return "InputBuffer" + head + ")";
    case IRKind::ComputedBuffer:
      return format_computed(static_cast<const ComputedBuffer&>(buffer), style);
    case IRKind::ExternKernel: {
      const auto& k = static_cast<const ExternKernel&>(buffer);
      return "ExternKernel" + head + ", kernel='" + k.kernel() +
             "', inputs=" + kernel_inputs_str(k.inputs()) + ")";
    }
    case IRKind::FallbackKernel: {
      const auto& k = static_cast<const FallbackKernel&>(buffer);
      return "FallbackKernel" + head + ", op='" + k.node()->target() +
             "', inputs=" + kernel_inputs_str(k.inputs()) + ")";
    }
    default:
      return "Buffer" + head + ")";
  }
}

}  // namespace stax
