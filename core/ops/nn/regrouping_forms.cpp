// Small ops that torch 2.x's traces and decompositions emit, each a regrouping or a guarded
// form of an op Stax has (Composite, one builder each: core/ops/common/built_ops.h):
//   channel_shuffle(self, groups)     (N, C, *) -> view (N, g, C/g, *), swap dims 1 and 2, back to
//                                     (N, C, *), as torch's CPU kernel (nn.ChannelShuffle)
//   _chunk_cat(tensors, dim, num_chunks)  every tensor zero-padded along dim to a multiple of
//                                     num_chunks, viewed as (shape[:dim], num_chunks, -1), and
//                                     concatenated along dim + 1 (FSDP2's reduce-scatter input)
//   _safe_softmax(self, dim, dtype)   softmax with rows that are all -inf giving zeros, not NaN
//                                     (scaled_dot_product_attention's fully masked rows)
//   empty_permuted(size, physical_layout)  empty with a memory order: Stax's tensors are
//                                     row-major, so it is empty's zeros (docs/core_aten.md);
//                                     physical_layout is checked to be a permutation
//   _trilinear(i1, i2, i3, expand1..3, sumdim)  F.bilinear's product: each input unsqueezed at
//                                     its expand dims, the three multiplied (broadcast) and
//                                     summed over sumdim, as torch's CPU kernel
#include <limits>
#include <string>
#include <vector>

#include "core/graph/multi_output.h"
#include "core/ops/common/built_ops.h"
#include "core/ops/registration.h"

namespace stax {

namespace {

Node* channel_shuffle(Graph& g, const ExpandCall& c) {
  Node* x = c.tensor("self");
  int64_t groups = c.get("groups").to_int();
  const Shape& s = x->shape();
  if (s.size() < 3)
    c.fail("channel_shuffle expects input to have at least 3 dimensions, but got input with " +
           std::to_string(s.size()) + " dimension(s)");
  if (groups <= 0)
    c.fail("Number of groups to divide channels in must be positive. Value of groups:" +
           std::to_string(groups));
  if (s[1] % groups != 0)
    c.fail("Number of channels must be divisible by groups. Got " + std::to_string(s[1]) +
           " channels and " + std::to_string(groups) + " groups.");
  Node* v = g.call("reshape", {x, Arg(Shape{s[0], groups, s[1] / groups, -1})});
  Node* t = g.call("clone", {g.call("transpose.int", {v, 1, 2})});
  return g.call("reshape", {t, Arg(s)});
}

Node* chunk_cat(Graph& g, const ExpandCall& c) {
  std::vector<Node*> ts = c.get("tensors").to_node_list();
  if (ts.empty()) c.fail("_chunk_cat expects a non-empty input tensor list");
  int64_t rank = ts[0]->meta().dim();
  if (rank == 0) c.fail("_chunk_cat expects non-scalar input tensors");
  int64_t dim = wrap_dim(c.get("dim").to_int(), rank, c.where());
  for (Node* t : ts)
    if (t->meta().dim() != rank && c.get("dim").to_int() < 0)
      c.fail("_chunk_cat expects non-negative dim when input tensors have different ndims");
  int64_t chunks = c.get("num_chunks").to_int();
  if (chunks < 1) c.fail("_chunk_cat expects a positive num_chunks");
  std::vector<Node*> parts;
  for (Node* t : ts) {
    const Shape& s = t->shape();
    if (shape_numel(s) == 0) c.fail("_chunk_cat expects non-empty tensor");
    if (static_cast<int64_t>(s.size()) <= dim)
      c.fail("_chunk_cat expects every input tensor to have more than dim (" + std::to_string(dim) +
             ") dimensions, got " + shape_str(s));
    for (int64_t d = 0; d < dim; ++d)
      if (s[d] != ts[0]->shape()[d])
        c.fail("_chunk_cat expects same sizes of 0,...,dim-1 dimensions for all tensors");
    if (t->dtype() != ts[0]->dtype()) c.fail("_chunk_cat expects all input tensors with the same dtype");
    int64_t padded = (s[dim] + chunks - 1) / chunks * chunks;
    Node* p = t;
    if (padded != s[dim]) {
      std::vector<int64_t> pad(2 * (s.size() - static_cast<size_t>(dim) - 1), 0);
      pad.push_back(0);
      pad.push_back(padded - s[dim]);
      p = g.call("constant_pad_nd", {t, Arg(pad), 0});
    }
    Shape view(s.begin(), s.begin() + dim);
    view.push_back(chunks);
    view.push_back(-1);
    parts.push_back(g.call("reshape", {p, Arg(view)}));
  }
  return g.call("cat", {Arg(parts), dim + 1});
}

// The fully masked rows are set to 0 before the softmax too, so that their (zero) gradient is not
// 0 * NaN.
Node* safe_softmax(Graph& g, const ExpandCall& c) {
  Node* x = c.tensor("self");
  Node* masked = g.call("eq.Scalar", {x, -std::numeric_limits<double>::infinity()});
  Node* rows = g.call("all.dim", {masked, c.get("dim"), true});
  Node* safe = g.call("where.ScalarSelf", {rows, 0, x});
  Node* out = g.call("softmax.int", {safe, c.get("dim"), c.get("dtype")});
  return g.call("where.ScalarSelf", {rows, 0.0, out});
}

Node* empty_permuted(Graph& g, const ExpandCall& c) {
  std::vector<int64_t> size = c.get("size").to_int_list(), layout = c.get("physical_layout").to_int_list();
  if (layout.size() != size.size())
    c.fail("Number of dimensions in size does not match the length of the physical_layout; i.e. len(size) = " +
           std::to_string(size.size()) + " is not equal to len(physical_layout) = " + std::to_string(layout.size()));
  std::vector<bool> seen(size.size(), false);
  for (int64_t d : layout) {
    if (d < 0 || d >= static_cast<int64_t>(size.size()) || seen[static_cast<size_t>(d)])
      c.fail("physical_layout " + shape_list_str(layout) + " is not a permutation of the dims");
    seen[static_cast<size_t>(d)] = true;
  }
  Kwargs kw;
  for (const char* p : {"dtype", "layout", "device", "pin_memory"}) kw.emplace_back(p, c.get(p));
  return g.call("zeros", {c.get("size")}, std::move(kw));
}

Node* trilinear(Graph& g, const ExpandCall& c) {
  const char* names[] = {"i1", "i2", "i3"};
  const char* expands[] = {"expand1", "expand2", "expand3"};
  int64_t total = c.tensor("i1")->meta().dim() + static_cast<int64_t>(c.get("expand1").to_int_list().size());
  Node* product = nullptr;
  for (int k = 0; k < 3; ++k) {
    Node* x = c.tensor(names[k]);
    if (x->dtype() != c.tensor("i1")->dtype())
      c.fail("expected scalar type " + std::string(dtype_name(c.tensor("i1")->dtype())) +
             " but found " + std::string(dtype_name(x->dtype())));
    std::vector<int64_t> dims = c.get(expands[k]).to_int_list();
    if (x->meta().dim() + static_cast<int64_t>(dims.size()) != total)
      c.fail(std::string("_trilinear: ") + names[k] + " of shape " + shape_str(x->shape()) +
             " with expand dims " + shape_list_str(dims) + " does not have " + std::to_string(total) + " dims");
    std::vector<bool> at(static_cast<size_t>(total), false);
    for (int64_t d : dims) at[static_cast<size_t>(wrap_dim(d, total, c.where()))] = true;
    for (int64_t d = 0; d < total; ++d)
      if (at[static_cast<size_t>(d)]) x = g.call("unsqueeze", {x, d});
    product = product ? g.call("mul.Tensor", {product, x}) : x;
  }
  std::vector<int64_t> sumdim = c.get("sumdim").to_int_list();
  if (sumdim.empty()) return g.call("clone", {product});
  return g.call("sum.dim_IntList", {product, Arg(sumdim), false}, {{"dtype", Arg(product->dtype())}});
}

const std::vector<BuiltOp>& regrouping_forms() {
  static const std::vector<BuiltOp> table = {
      {"channel_shuffle(Tensor self, SymInt groups) -> Tensor", channel_shuffle},
      {"_chunk_cat(Tensor[] tensors, int dim, int num_chunks) -> Tensor", chunk_cat},
      {"_safe_softmax(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", safe_softmax},
      {"empty_permuted(SymInt[] size, int[] physical_layout, *, ScalarType? dtype=None, "
       "Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
       empty_permuted, false},
      {"_trilinear(Tensor i1, Tensor i2, Tensor i3, int[] expand1, int[] expand2, int[] expand3, "
       "int[] sumdim, int unroll_dim=1) -> Tensor",
       trilinear},
  };
  return table;
}

}  // namespace

void register_regrouping_form_ops(OpRegistry& r) { add_built_ops(r, regrouping_forms()); }

void register_regrouping_form_decompositions(DecompositionTable& t) {
  add_built_decompositions(t, regrouping_forms());
}

void register_regrouping_form_kernels(InterpreterTable& t) {
  add_built_kernels(t, regrouping_forms());
}

void register_regrouping_form_vjps(VjpTable& t) { add_built_vjps(t, regrouping_forms()); }

void register_regrouping_form_jvps(JvpTable& t) { add_built_jvps(t, regrouping_forms()); }

}  // namespace stax
