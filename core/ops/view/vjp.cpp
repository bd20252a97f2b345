// VJP rules of the view ops (and the copies clone / contiguous / alias): each undoes the view on
// the upstream gradient. Slices and selects put the gradient into a zero tensor of the input's
// shape: a cat with zero blocks for unit steps, an index_put at arange positions for larger steps.
// as_strided of a contiguous input scatters the gradient back to the storage positions it read
// (accumulating where the view reads a position more than once, as torch's as_strided_backward).
#include "core/autodiff/vjp.h"
#include "core/ops/view/layout.h"
#include "core/support/error.h"
#include "core/ops/registration.h"

namespace stax {
namespace {

// The gradient of a slice [start, end) step `step` along `dim` of a tensor of shape `full`, where
// g has the slice's shape: g placed into zeros.
Node* embed_slice(VjpContext& c, Node* g, const Shape& full, int64_t dim, int64_t start,
                  int64_t end, int64_t step) {
  if (step == 1) {
    std::vector<Node*> parts;
    Shape before = full, after = full;
    before[dim] = start;
    after[dim] = full[dim] - end;
    if (start > 0) parts.push_back(c.zeros(before, g->dtype(), g->meta().device));
    parts.push_back(g);
    if (end < full[dim]) parts.push_back(c.zeros(after, g->dtype(), g->meta().device));
    if (parts.size() == 1) return g;
    return c.call("cat", {Arg(parts), dim});
  }
  Node* positions = c.call("arange.start_step", {start, end, step});
  Arg::List indices(static_cast<size_t>(dim), Arg());
  indices.emplace_back(positions);
  Node* zeros = c.zeros(full, g->dtype(), g->meta().device);
  return c.call("index_put", {zeros, Arg(std::move(indices)), g, false});
}

void identity(VjpContext& c) { c.give("self", c.grad()); }

// y = as_strided(x, size, stride, offset) reads x's row-major storage at
// P[i] = offset + Σ_k i_k stride_k, so x̄ = zeros(numel).index_put([P], ḡ, accumulate=True).
void as_strided_vjp(VjpContext& c) {
  if (!c.needs("self")) return;
  Node* x = c.in("self");
  const TensorMeta& m = x->meta();
  if (m.strides != contiguous_strides(m.sizes))
    throw Error("autodiff", "%" + c.node()->name(),
                "as_strided's gradient needs a contiguous input (its storage positions are "
                "row-major); make the input contiguous first");
  auto size = c.arg("size").to_int_list();
  auto stride = c.arg("stride").to_int_list();
  const Arg& off = c.arg("storage_offset");
  int64_t offset = off.is_absent() ? 0 : off.to_int();
  Node* g = c.grad();
  Node* zeros = c.zeros({m.numel()}, g->dtype(), m.device);
  if (size.empty()) {  // a 0-d view reads one position
    Node* v = c.reshape(g, {1});
    Node* p = c.call("arange.start", {offset, offset + 1});
    Node* flat = c.call("index_put", {zeros, Arg(Arg::List{Arg(p)}), v, true});
    c.give("self", c.reshape(flat, m.sizes));
    return;
  }
  Node* pos = nullptr;
  for (size_t k = 0; k < size.size(); ++k) {
    Node* a = c.call("arange", {size[k]});
    if (stride[k] != 1) a = c.call("mul.Scalar", {a, stride[k]});
    std::vector<int64_t> shape(size.size(), 1);
    shape[k] = size[k];
    a = c.reshape(a, Shape(shape.begin(), shape.end()));
    pos = pos ? c.call("add.Tensor", {pos, a}) : a;
  }
  if (offset != 0) pos = c.call("add.Scalar", {pos, offset});
  pos = c.call("expand", {pos, Arg(size)});
  Node* flat = c.call("index_put", {zeros, Arg(Arg::List{Arg(pos)}), g, true});
  c.give("self", c.reshape(flat, m.sizes));
}

void to_input_shape(VjpContext& c) {
  if (c.needs("self")) c.give("self", c.reshape(c.grad(), c.in("self")->shape()));
}

}  // namespace

void register_view_vjps(VjpTable& t) {
  for (const char* op : {"view.default", "_unsafe_view.default", "reshape.default",
                         "_reshape_alias.default",
                         "squeeze.default", "squeeze.dim", "squeeze.dims"})
    t.add(op, to_input_shape);
  for (const char* op :
       {"alias.default", "clone.default", "contiguous.default", "lift_fresh_copy.default"})
    t.add(op, identity);
  t.add("as_strided.default", as_strided_vjp);
  t.add("unsqueeze.default", [](VjpContext& c) {
    if (c.needs("self")) c.give("self", c.call("squeeze.dim", {c.grad(), c.arg("dim")}));
  });
  t.add("permute.default", [](VjpContext& c) {
    if (!c.needs("self")) return;
    auto dims = c.arg("dims").to_int_list();
    int64_t rank = static_cast<int64_t>(dims.size());
    std::vector<int64_t> inverse(dims.size());
    for (int64_t i = 0; i < rank; ++i) inverse[wrap_dim(dims[i], rank, "permute")] = i;
    c.give("self", c.call("permute", {c.grad(), Arg(inverse)}));
  });
  t.add("t.default", [](VjpContext& c) {
    if (c.needs("self")) c.give("self", c.call("t", {c.grad()}));
  });
  t.add("transpose.int", [](VjpContext& c) {
    if (c.needs("self"))
      c.give("self", c.call("transpose.int", {c.grad(), c.arg("dim0"), c.arg("dim1")}));
  });
  // expand broadcasts: its gradient sums over the expanded dims.
  t.add("expand.default", [](VjpContext& c) {
    if (c.needs("self")) c.give("self", c.sum_to_shape(c.grad(), c.in("self")->shape()));
  });
  t.add("slice.Tensor", [](VjpContext& c) {
    if (!c.needs("self")) return;
    const Shape& full = c.in("self")->shape();
    int64_t dim = wrap_dim(c.arg("dim").to_int(), static_cast<int64_t>(full.size()), "slice");
    int64_t size = full[dim];
    // Python slice clamping, shared with the view's layout rule.
    auto [start, end] = clamp_slice_bounds(c.arg("start"), c.arg("end"), size);
    if (start == end) return;  // an empty slice: zero gradient
    int64_t step = c.arg("step").to_int();
    c.give("self", embed_slice(c, c.grad(), full, dim, start, end, step));
  });
  t.add("select.int", [](VjpContext& c) {
    if (!c.needs("self")) return;
    const Shape& full = c.in("self")->shape();
    int64_t dim = wrap_dim(c.arg("dim").to_int(), static_cast<int64_t>(full.size()), "select");
    int64_t index = c.arg("index").to_int();
    if (index < 0) index += full[dim];
    Node* g = c.call("unsqueeze", {c.grad(), dim});
    c.give("self", embed_slice(c, g, full, dim, index, index + 1, 1));
  });
}

}  // namespace stax
