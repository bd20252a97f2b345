// IR nodes of the loop-level representation (seed §6.1–§6.6).
//
// A tensor is a function of its index (Def. 6.1). Every node offers make_loader(): a function
// (OpsBuilder&, index) -> value that records how one element is computed. Lowering rules compose
// loaders (Property 6.1: pointwise fusion is function composition); nothing is allocated until a
// value is realized into a buffer.
//
//   Pointwise        ranges + inner_fn(index)                      (Def. 6.1)
//   Reduction        ranges + reduction_ranges + type + inner_fn(index, rindex)
//   InputBuffer      a graph input (FixedLayout)                   (§6.1 item 1)
//   ComputedBuffer   a realized Pointwise/Reduction: name, layout, data, and its LoopBody
//   ExternKernel     matmul family: realized inputs, FixedLayout output (§6.1 item 2)
//   FallbackKernel   an op without a lowering rule, run by the reference interpreter
//   StorageBox       the mutable cell a lowered value lives in: unrealized Loops, or a Buffer once
//                    realized; loaders read through it, so realizing later redirects every user
//   View             an index transform π over any node (Prop. 6.2, base not fixed)
//   ReinterpretView  new strides/offset over a fixed-layout buffer's storage (Prop. 6.2)
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/ir/layout.h"
#include "core/ir/loop_body.h"
#include "core/ir/ops_builder.h"

namespace stax {

using Index = std::vector<Expr>;
using Loader = std::function<Val(OpsBuilder&, const Index&)>;
using ReductionFn = std::function<Val(OpsBuilder&, const Index& index, const Index& rindex)>;
using Reindex = std::function<Index(const Index&)>;
// The graph nodes an IR node was lowered from, in graph order (Listing 6.3's `origins`).
using Origins = std::vector<const Node*>;

// The origins of an IR node as a DAG of shared, immutable parts: a node built from its inputs
// takes their origins in O(1) (a fused chain of n nodes costs O(n), not O(n^2) copies), and
// flatten() computes the sorted list when a dump asks for it.
class OriginSet {
 public:
  void add(const Origins& nodes);
  void add(const Node* node);  // add(Origins{node}) without the list
  void add(const OriginSet& other);
  bool empty() const { return !root_; }
  // Every node once, sorted by graph position.
  Origins flatten() const;

 private:
  // One allocation per add: a part holds one node inline (or a list) and at most two earlier
  // parts (what it extends, and a second set merged in).
  struct Part {
    const Node* node = nullptr;
    Origins nodes;
    std::shared_ptr<const Part> a, b;
  };
  std::shared_ptr<const Part> root_;
};

enum class IRKind {
  Pointwise,
  Reduction,
  InputBuffer,
  ComputedBuffer,
  ExternKernel,
  FallbackKernel,
  StorageBox,
  View,
  ReinterpretView,
};

class IRNode : public std::enable_shared_from_this<IRNode> {
 public:
  virtual ~IRNode() = default;
  virtual IRKind kind() const = 0;
  virtual Shape size() const = 0;
  virtual DType dtype() const = 0;
  virtual std::string device() const = 0;
  virtual Loader make_loader() const = 0;

  int64_t numel() const { return shape_numel(size()); }
  // Sorted by graph position, without duplicates (flattened on every call).
  Origins origins() const { return origins_.flatten(); }
  const OriginSet& origin_set() const { return origins_; }
  void add_origins(const Origins& more) { origins_.add(more); }
  void add_origins(const OriginSet& more) { origins_.add(more); }
  // How many nodes deep the loader of this value inlines unrealized producers (0 for storage):
  // reading it recurses that deep, so lowering realizes a value before the depth gets large.
  int inline_depth() const { return inline_depth_; }
  void set_inline_depth(int depth) { inline_depth_ = depth; }

 private:
  OriginSet origins_;
  int inline_depth_ = 0;
};
using IRPtr = std::shared_ptr<IRNode>;

// Index variables i0..i<n-1> / r0_0..r0_<n-1> with the given extents.
Index iter_index(const Shape& ranges);
Index reduce_index(const Shape& reduction_ranges);

// ---- Loops (Def. 6.1) ------------------------------------------------------------------------

class Loops : public IRNode {
 public:
  Loops(std::string device, DType dtype, Shape ranges)
      : device_(std::move(device)), dtype_(dtype), ranges_(std::move(ranges)) {}
  Shape size() const override { return ranges_; }
  DType dtype() const override { return dtype_; }
  std::string device() const override { return device_; }
  const Shape& ranges() const { return ranges_; }
  // Drops inner_fn once the owning buffer's body is recorded: the closures hold their inputs'
  // IR nodes, so keeping them would chain every buffer of a long fused chain to the one before
  // (one recursive destructor call per node at teardown). Nothing may be recorded afterwards.
  virtual void release_inner_fn() = 0;

 private:
  std::string device_;
  DType dtype_;
  Shape ranges_;
};

class Pointwise : public Loops {
 public:
  Pointwise(std::string device, DType dtype, Shape ranges, Loader inner_fn)
      : Loops(std::move(device), dtype, std::move(ranges)), inner_fn_(std::move(inner_fn)) {}
  IRKind kind() const override { return IRKind::Pointwise; }
  Loader make_loader() const override { return inner_fn_; }
  const Loader& inner_fn() const { return inner_fn_; }
  void release_inner_fn() override { inner_fn_ = nullptr; }

 private:
  Loader inner_fn_;
};

// y(i) = ⊕_{r ∈ reduction_ranges} inner_fn(i, r). inner_fn's values are combined in
// `acc_dtype` (the reduction op's dtype: int64 for argmax/argmin, bool for any/all); dtype() is
// the dtype of the realized buffer (the store converts).
class Reduction : public Loops {
 public:
  Reduction(std::string device, DType dtype, DType acc_dtype, Shape ranges, Shape reduction_ranges,
            ReductionType type, ReductionFn inner_fn)
      : Loops(std::move(device), dtype, std::move(ranges)),
        acc_dtype_(acc_dtype),
        reduction_ranges_(std::move(reduction_ranges)),
        type_(type),
        inner_fn_(std::move(inner_fn)) {}
  IRKind kind() const override { return IRKind::Reduction; }
  // A reduction is never inlined into its users: it must be realized first.
  Loader make_loader() const override;
  DType acc_dtype() const { return acc_dtype_; }
  const Shape& reduction_ranges() const { return reduction_ranges_; }
  ReductionType reduction_type() const { return type_; }
  const ReductionFn& inner_fn() const { return inner_fn_; }
  void release_inner_fn() override { inner_fn_ = nullptr; }

 private:
  DType acc_dtype_;
  Shape reduction_ranges_;
  ReductionType type_;
  ReductionFn inner_fn_;
};

// ---- Buffers ---------------------------------------------------------------------------------

class Buffer : public IRNode {
 public:
  Buffer(std::string name, Layout layout) : name_(std::move(name)), layout_(std::move(layout)) {}
  const std::string& name() const { return name_; }
  const Layout& layout() const { return layout_; }
  Layout& mutable_layout() { return layout_; }
  Shape size() const override { return layout_.size; }
  DType dtype() const override { return layout_.dtype; }
  std::string device() const override { return layout_.device; }
  // ops.load(name, layout.index(index)); the layout is read when the loader runs, so a flexible
  // layout frozen later is honoured.
  Loader make_loader() const override;
  // The buffer's id in the LoweredGraph that indexed it last (LoweredGraph::index): a position
  // for vectors instead of maps keyed by name; -1 before. A hint: LoweredGraph::id_of checks it.
  int64_t graph_id() const { return graph_id_; }
  void set_graph_id(int64_t id) { graph_id_ = id; }

 private:
  std::string name_;
  Layout layout_;
  int64_t graph_id_ = -1;
};
using BufferPtr = std::shared_ptr<Buffer>;

class InputBuffer : public Buffer {
 public:
  using Buffer::Buffer;
  IRKind kind() const override { return IRKind::InputBuffer; }
};

class ComputedBuffer : public Buffer {
 public:
  ComputedBuffer(std::string name, Layout layout, std::shared_ptr<Loops> data)
      : Buffer(std::move(name), std::move(layout)), data_(std::move(data)) {}
  IRKind kind() const override { return IRKind::ComputedBuffer; }
  const std::shared_ptr<Loops>& data() const { return data_; }
  // The recorded loop body (set by GraphLowering once layouts are final; empty before).
  const LoopBody& body() const { return body_; }
  void set_body(LoopBody body) { body_ = std::move(body); }
  LoopBody& mutable_body() { return body_; }
  // Records data's inner_fn followed by its store (or reduction + store_reduction) into this
  // buffer at layout().index(i); ops no store needs are eliminated.
  LoopBody record_body() const;
  // Records only data's inner_fn (and the reduction op): what a heuristic needs before the
  // buffer's own layout is decided.
  LoopBody record_inner() const;

 private:
  std::shared_ptr<Loops> data_;
  LoopBody body_;
};

// A tensor argument of an extern or fallback kernel: the buffer and the layout it is read with
// (a view of the buffer's storage when the argument was a view).
struct KernelInput {
  BufferPtr buffer;
  Layout layout;
};

// matmul family (seed §6.1 item 2, §9.8): library calls or templates, never fused.
class ExternKernel : public Buffer {
 public:
  ExternKernel(std::string name, Layout layout, std::string kernel, std::vector<KernelInput> inputs,
               std::vector<double> scalars, const Node* node)
      : Buffer(std::move(name), std::move(layout)),
        kernel_(std::move(kernel)),
        inputs_(std::move(inputs)),
        scalars_(std::move(scalars)),
        node_(node) {}
  IRKind kind() const override { return IRKind::ExternKernel; }
  const std::string& kernel() const { return kernel_; }  // "mm", "bmm", "addmm", "matmul"
  const std::vector<KernelInput>& inputs() const { return inputs_; }
  const std::vector<double>& scalars() const { return scalars_; }  // addmm: beta, alpha
  const Node* node() const { return node_; }

 private:
  std::string kernel_;
  std::vector<KernelInput> inputs_;
  std::vector<double> scalars_;
  const Node* node_;
};

// An op with no lowering rule (§6.1 item 2): handed back to the framework, i.e. run by the
// reference interpreter at run time. `inputs` binds each tensor argument node of `node` (in
// Node::input_nodes() order) to a realized buffer.
class FallbackKernel : public Buffer {
 public:
  FallbackKernel(std::string name, Layout layout, const Node* node,
                 std::vector<const Node*> arg_nodes, std::vector<KernelInput> inputs)
      : Buffer(std::move(name), std::move(layout)),
        node_(node),
        arg_nodes_(std::move(arg_nodes)),
        inputs_(std::move(inputs)) {}
  IRKind kind() const override { return IRKind::FallbackKernel; }
  const Node* node() const { return node_; }
  const std::vector<const Node*>& arg_nodes() const { return arg_nodes_; }
  const std::vector<KernelInput>& inputs() const { return inputs_; }

 private:
  const Node* node_;
  std::vector<const Node*> arg_nodes_;
  std::vector<KernelInput> inputs_;
};

// ---- Storage and views -----------------------------------------------------------------------

class StorageBox : public IRNode {
 public:
  explicit StorageBox(IRPtr data) : data_(std::move(data)) {}
  IRKind kind() const override { return IRKind::StorageBox; }
  Shape size() const override { return data_->size(); }
  DType dtype() const override { return data_->dtype(); }
  std::string device() const override { return data_->device(); }
  // Reads through the box at call time: after realization, users load the buffer.
  Loader make_loader() const override;
  const IRPtr& data() const { return data_; }
  void set_data(IRPtr data) { data_ = std::move(data); }
  bool is_realized() const;  // data is a Buffer
  BufferPtr buffer() const;  // the Buffer, or null
  bool is_pointwise() const { return data_->kind() == IRKind::Pointwise; }

 private:
  IRPtr data_;
};

class View : public IRNode {
 public:
  View(IRPtr base, Shape size, Reindex reindex)
      : base_(std::move(base)), size_(std::move(size)), reindex_(std::move(reindex)) {}
  IRKind kind() const override { return IRKind::View; }
  Shape size() const override { return size_; }
  DType dtype() const override { return base_->dtype(); }
  std::string device() const override { return base_->device(); }
  Loader make_loader() const override;
  const IRPtr& base() const { return base_; }
  const Reindex& reindex() const { return reindex_; }

 private:
  IRPtr base_;
  Shape size_;
  Reindex reindex_;
};

class ReinterpretView : public IRNode {
 public:
  ReinterpretView(BufferPtr base, Layout layout)
      : base_(std::move(base)), layout_(std::move(layout)) {}
  IRKind kind() const override { return IRKind::ReinterpretView; }
  Shape size() const override { return layout_.size; }
  DType dtype() const override { return layout_.dtype; }
  std::string device() const override { return layout_.device; }
  Loader make_loader() const override;
  const BufferPtr& base() const { return base_; }
  const Layout& layout() const { return layout_; }

 private:
  BufferPtr base_;
  Layout layout_;
};

// The fixed-layout buffer and layout `node` reads, when it is one (an InputBuffer or other fixed
// buffer, a realized StorageBox over one, or a ReinterpretView); otherwise nullopt.
std::optional<KernelInput> as_fixed_storage(const IRPtr& node);

// A view of `base` with `size` whose element i is base's element reindex(i) (Prop. 6.2). Over
// fixed storage whose address stays affine, the result is a ReinterpretView (new strides and
// offset, Listing 6.3's `i0 + 256*i1`); otherwise a View storing π.
IRPtr make_view(const IRPtr& base, Shape size, Reindex reindex);

// ---- Printing (Listings 6.2-6.4) -------------------------------------------------------------

enum class FormatStyle {
  Full,   // Listings 6.2 / 6.3: device, dtype, inner_fn, one field per line, origins
  Brief,  // Listing 6.4: inner_fn and `ranges=..., reduction_ranges=..., reduction_type=...,`
};
// Pointwise ranges and their buffer's size print as Python tuples, Reduction ones as lists, as
// the listings do.
std::string format_buffer(const Buffer& buffer, FormatStyle style = FormatStyle::Full);

}  // namespace stax
