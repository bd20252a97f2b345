// VJP rules of the view ops (and the copies clone / contiguous / alias): each undoes the view on
// the upstream gradient. Slices and selects put the gradient into a zero tensor of the input's
// shape: a cat with zero blocks for unit steps, an index_put at arange positions for larger steps.
// as_strided has no rule (its inputs may overlap; torch's as_strided_backward is not mirrored).
#include "core/autodiff/vjp.h"
#include "core/graph/ops/view_layout.h"

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

void to_input_shape(VjpContext& c) {
  if (c.needs("self")) c.give("self", c.reshape(c.grad(), c.in("self")->shape()));
}

}  // namespace

void register_view_vjps(VjpTable& t) {
  for (const char* op : {"view.default", "_unsafe_view.default", "reshape.default",
                         "squeeze.default", "squeeze.dim", "squeeze.dims"})
    t.add(op, to_input_shape);
  for (const char* op : {"alias.default", "clone.default", "contiguous.default"})
    t.add(op, identity);
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
