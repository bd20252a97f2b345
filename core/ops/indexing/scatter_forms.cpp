// Functional writes into a view, and the masked index forms of torch 2.x's decompositions:
//   diagonal_scatter(self, src, offset, dim1, dim2)     self with its diagonal replaced by src
//   as_strided_scatter(self, src, size, stride, offset) self with the as_strided view replaced
//                      (positions the view reads more than once get the sum of their values)
//     Both place src where the view reads: the view's VJP rule applied to src (the rule that
//     puts a gradient back into the input's shape, so one formula serves both), and a mask of
//     those positions (the same rule applied to ones); where(mask, placed, self).
//   _unsafe_masked_index(self, mask, indices, fill)     self[indices] where mask, else fill, the
//                      indices clamped into range first (Inductor's padding decomposition)
//   _unsafe_masked_index_put_accumulate(self, mask, indices, values)   its adjoint: self with
//                      values (0 where not mask) added at the clamped indices
// All Composite (core/ops/common/built_ops.h): the interpreter runs the decomposition, gradients
// go through it.
#include <algorithm>
#include <string>
#include <vector>

#include "core/graph/multi_output.h"
#include "core/ops/common/built_ops.h"
#include "core/ops/common/forward_vjp.h"
#include "core/ops/registration.h"

namespace stax {

namespace {

Node* as_dtype(Graph& g, Node* x, DType t) {
  return x->dtype() == t ? x : g.call("to.dtype", {x, t});
}

// self with the elements that `view`(self, view_args...) reads replaced by src.
Node* scatter_into_view(Graph& g, const ExpandCall& c, const char* view, std::vector<Arg> view_args) {
  Node* self = c.tensor("self");
  Node* src = c.tensor("src");
  std::vector<Arg> args{Arg(self)};
  args.insert(args.end(), view_args.begin(), view_args.end());
  Node* v = g.call(view, args);
  if (v->shape() != src->shape())
    c.fail("expected src to have a size equal to the slice of self. src size = " +
           shape_str(src->shape()) + ", slice size = " + shape_str(v->shape()));
  // Placed in a floating type: the VJP rules build their zeros and sums in the gradient's dtype.
  DType t = is_floating(self->dtype()) ? self->dtype() : DType::Float64;
  auto place = [&](Node* values) {
    Node* x = as_dtype(g, self, t);
    std::vector<Arg> a{Arg(x)};
    a.insert(a.end(), view_args.begin(), view_args.end());
    Node* r = gradients_by_vjp(g, view, a, {}, values, {x}).at(0);
    return or_zeros(g, r, x);
  };
  Node* placed = place(as_dtype(g, src, t));
  Node* mask = g.call("ne.Scalar", {place(g.call("ones_like", {v}, {{"dtype", Arg(t)}})), 0});
  return g.call("where.self", {mask, as_dtype(g, placed, self->dtype()), self});
}

Node* diagonal_scatter(Graph& g, const ExpandCall& c) {
  return scatter_into_view(g, c, "diagonal.default",
                           {c.get("offset"), c.get("dim1"), c.get("dim2")});
}

Node* as_strided_scatter(Graph& g, const ExpandCall& c) {
  return scatter_into_view(g, c, "as_strided.default",
                           {c.get("size"), c.get("stride"), c.get("storage_offset")});
}

// The indices clamped into [0, size - 1] of the dim each indexes (None entries kept).
Arg clamped_indices(Graph& g, const ExpandCall& c, Node* self) {
  Arg::List out;
  const Arg::List& in = c.get("indices").list();
  if (in.size() > self->shape().size())
    c.fail("too many indices for tensor of dimension " + std::to_string(self->shape().size()) +
           " (got " + std::to_string(in.size()) + ")");
  for (size_t d = 0; d < in.size(); ++d) {
    if (!in[d].is_node()) {
      out.emplace_back();
      continue;
    }
    Node* idx = in[d].node();
    if (idx->dtype() != DType::Int64 && idx->dtype() != DType::Int32)
      c.fail("_unsafe_masked_index found unexpected index type " +
             std::string(dtype_name(idx->dtype())));
    out.emplace_back(g.call("clamp", {idx, int64_t{0}, self->shape()[d] - 1}));
  }
  return Arg(std::move(out));
}

void check_mask(const ExpandCall& c) {
  if (c.tensor("mask")->dtype() != DType::Bool)
    c.fail("_unsafe_masked_index found unexpected mask type " +
           std::string(dtype_name(c.tensor("mask")->dtype())) + "; expected bool");
}

Node* unsafe_masked_index(Graph& g, const ExpandCall& c) {
  check_mask(c);
  Node* self = c.tensor("self");
  const Arg::List& indices = c.get("indices").list();
  if (std::none_of(indices.begin(), indices.end(), [](const Arg& a) { return a.is_node(); })) {
    // every index None: torch's kernel fails an internal assert unless there is nothing to read
    if (shape_numel(self->shape()) == 0) return g.call("full_like", {self, c.get("fill")});
    c.fail("_unsafe_masked_index: expected at least one index tensor that is not None");
  }
  if (shape_numel(self->shape()) == 0) {
    // no element to read: fill, in the shape indexing gives (the indexed dims' sizes do not
    // enter it, so a stand-in with size 1 there is indexed instead)
    Shape one = self->shape();
    const Arg::List& in = c.get("indices").list();
    for (size_t d = 0; d < in.size() && d < one.size(); ++d)
      if (in[d].is_node()) one[d] = 1;
    Node* stand_in = g.call("zeros", {Arg(one)}, {{"dtype", Arg(self->dtype())}});
    Node* shape = g.call("index.Tensor", {stand_in, clamped_indices(g, c, stand_in)});
    return g.call("full_like", {shape, c.get("fill")});
  }
  Node* v = g.call("index.Tensor", {self, clamped_indices(g, c, self)});
  return as_dtype(g, g.call("where.ScalarOther", {c.tensor("mask"), v, c.get("fill")}), self->dtype());
}

Node* unsafe_masked_index_put_accumulate(Graph& g, const ExpandCall& c) {
  check_mask(c);
  Node* self = c.tensor("self");
  if (c.tensor("values")->dtype() != self->dtype())
    c.fail("Index put requires the source and destination dtypes match, got " +
           std::string(dtype_name(self->dtype())) + " for the destination and " +
           std::string(dtype_name(c.tensor("values")->dtype())) + " for the source.");
  Node* values = g.call("where.ScalarOther", {c.tensor("mask"), c.tensor("values"), 0});
  values = as_dtype(g, values, self->dtype());
  return g.call("index_put", {self, clamped_indices(g, c, self), values, true});
}

const std::vector<BuiltOp>& scatter_forms() {
  static const std::vector<BuiltOp> table = {
      {"diagonal_scatter(Tensor self, Tensor src, int offset=0, int dim1=0, int dim2=1) -> Tensor",
       diagonal_scatter},
      {"as_strided_scatter(Tensor self, Tensor src, SymInt[] size, SymInt[] stride, "
       "SymInt? storage_offset=None) -> Tensor",
       as_strided_scatter},
      {"_unsafe_masked_index(Tensor self, Tensor mask, Tensor?[] indices, Scalar fill) -> Tensor",
       unsafe_masked_index},
      {"_unsafe_masked_index_put_accumulate(Tensor self, Tensor mask, Tensor?[] indices, "
       "Tensor values) -> Tensor",
       unsafe_masked_index_put_accumulate},
  };
  return table;
}

}  // namespace

void register_scatter_form_ops(OpRegistry& r) { add_built_ops(r, scatter_forms()); }

void register_scatter_form_decompositions(DecompositionTable& t) {
  add_built_decompositions(t, scatter_forms());
}

void register_scatter_form_kernels(InterpreterTable& t) { add_built_kernels(t, scatter_forms()); }

void register_scatter_form_vjps(VjpTable& t) { add_built_vjps(t, scatter_forms()); }

void register_scatter_form_jvps(JvpTable& t) { add_built_jvps(t, scatter_forms()); }

}  // namespace stax
