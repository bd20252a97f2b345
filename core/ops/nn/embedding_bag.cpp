// nn.EmbeddingBag's aten ops (issue 29 items 1 and 4):
//   _embedding_bag            a tuple-valued op (output, offset2bag, bag_size, max_indices),
//                             expanded into base ops: each index's bag is the count of offsets at
//                             or before its position, minus one; rows are gathered by
//                             index_select and reduced per bag by scatter_add (sum, mean) or
//                             scatter_reduce amax (max); padding_idx entries are left out.
//   _embedding_bag_backward   the weight's gradient from the saved bag sizes / max indices.
//   _embedding_bag_per_sample_weights_backward   the per-sample weights' gradient (mode sum):
//                             each entry's row of weight dotted with its bag's gradient.
// Neither backward is told include_last_offset: offsets with one entry more than grad has bags
// mean it was set.
// The auxiliary outputs are what torch's CPU kernel returns: mode sum gives an empty offset2bag
// and zero bag_size / max_indices; mode mean the bag ids, the bag sizes (padding excluded) and
// the bag sizes again as max_indices; mode max the weight row of every maximum (the first in its
// bag), (num_bags, D). Empty bags are zero. Indices before offsets[0] (torch requires
// offsets[0] == 0) count in bag 0. per_sample_weights only with mode sum, as torch.
#include <limits>
#include <string>
#include <vector>

#include "core/autodiff/jvp.h"
#include "core/autodiff/vjp.h"
#include "core/graph/multi_output.h"
#include "core/interpreter/interpreter.h"
#include "core/ops/common/infer_by_building.h"
#include "core/ops/common/kernel_utils.h"
#include "core/ops/common/via_decomposition.h"
#include "core/ops/registration.h"
#include "core/support/error.h"

namespace stax {

namespace {

constexpr int64_t kSum = 0, kMean = 1, kMax = 2;

Node* filled(Graph& g, const Shape& s, double v, DType t) {
  return g.call("full", {Arg(s), v}, {{"dtype", Arg(t)}});
}

// What every form shares: the bags of the indices and which entries count.
struct Bags {
  int64_t n = 0, B = 0;
  Node* indices = nullptr;  // (n,) int64
  Node* bag = nullptr;      // (n,) int64: each index's bag
  Node* valid = nullptr;    // (n,) bool: not padding_idx
  Node* counts = nullptr;   // (B,) int64: the valid entries of each bag
};

Bags bags_of(Graph& g, const ExpandCall& c, Node* indices, bool include_last_offset) {
  Node* offsets = c.tensor("offsets");
  if (indices->meta().dim() != 1)
    c.fail("indices must be 1-D (F.embedding_bag flattens 2-D input), got " +
           shape_str(indices->shape()));
  if (offsets->meta().dim() != 1) c.fail("offsets must be 1-D, got " + shape_str(offsets->shape()));
  if (is_floating(indices->dtype()) || is_floating(offsets->dtype()))
    c.fail("indices and offsets must be integer tensors");
  Bags b;
  b.n = indices->shape()[0];
  b.B = offsets->shape()[0] - (include_last_offset ? 1 : 0);
  if (b.B < 0) c.fail("include_last_offset needs at least one offset");
  b.indices = g.call("to.dtype", {indices, DType::Int64});
  Node* offs = g.call("to.dtype", {g.call("slice.Tensor", {offsets, 0, 0, b.B, 1}), DType::Int64});
  Node* pos = g.call("unsqueeze", {g.call("arange", {b.n}, {{"dtype", Arg(DType::Int64)}}), 1});
  Node* before = g.call("to.dtype", {g.call("le.Tensor", {g.call("unsqueeze", {offs, 0}), pos}),
                                     DType::Int64});
  Node* bag = g.call("sub.Scalar", {g.call("sum.dim_IntList", {before, Arg(std::vector<int64_t>{1})}), 1});
  b.bag = g.call("clamp_min", {bag, 0});
  int64_t pad = c.get("padding_idx").to_int();
  b.valid = pad >= 0 ? g.call("ne.Scalar", {b.indices, pad})
                     : g.call("full", {Arg(Shape{b.n}), true}, {{"dtype", Arg(DType::Bool)}});
  b.counts = g.call("scatter_add", {filled(g, {b.B}, 0, DType::Int64), 0, b.bag,
                                    g.call("to.dtype", {b.valid, DType::Int64})});
  return b;
}

// (n,) -> (n, D) index / mask for scatters over rows.
Node* rows_of(Graph& g, Node* v, int64_t n, int64_t D) {
  return g.call("expand", {g.call("unsqueeze", {v, 1}), Arg(Shape{n, D})});
}

std::vector<Node*> embedding_bag(Graph& g, const ExpandCall& c) {
  Node* weight = c.tensor("weight");
  if (weight->meta().dim() != 2 || !is_floating(weight->dtype()))
    c.fail("weight must be a 2-D floating-point tensor, got " + shape_str(weight->shape()));
  int64_t mode = c.get("mode").to_int();
  if (mode < kSum || mode > kMax) c.fail("mode must be 0 (sum), 1 (mean) or 2 (max)");
  bool psw = c.has("per_sample_weights");
  if (psw && mode != kSum) c.fail("per_sample_weights are only supported for mode sum");
  Node* indices = c.tensor("indices");
  if (psw && shape_numel(c.tensor("per_sample_weights")->shape()) != shape_numel(indices->shape()))
    c.fail("expected per_sample_weights.numel() (" +
           std::to_string(shape_numel(c.tensor("per_sample_weights")->shape())) +
           ") to be the same as indices.numel() (" + std::to_string(shape_numel(indices->shape())) + ")");
  DType it = indices->dtype();
  Bags b = bags_of(g, c, indices, c.get("include_last_offset").to_bool());
  int64_t D = weight->shape()[1], n = b.n, B = b.B;
  DType wt = weight->dtype();
  Node* rows = g.call("index_select", {weight, 0, b.indices});
  Node* valid = rows_of(g, b.valid, n, D);
  Node* at = rows_of(g, b.bag, n, D);
  auto as_index = [&](Node* x) { return x->dtype() == it ? x : g.call("to.dtype", {x, it}); };
  Node* out;
  Node* max_indices;
  if (mode == kMax) {
    Node* masked = g.call("where.ScalarOther", {valid, rows, -std::numeric_limits<double>::infinity()});
    Node* m = g.call("scatter_reduce.two", {filled(g, {B, D}, 0, wt), 0, at, masked, "amax"},
                     {{"include_self", Arg(false)}});
    Node* empty = g.call("unsqueeze", {g.call("eq.Scalar", {b.counts, 0}), 1});
    out = g.call("where.ScalarSelf", {empty, 0.0, m});
    // The first position of each bag's maximum (n where none), then its weight row (0 for none).
    Node* is_max = g.call("logical_and", {valid, g.call("eq.Tensor", {rows, g.call("index_select", {out, 0, b.bag})})});
    Node* pos = rows_of(g, g.call("arange", {n}, {{"dtype", Arg(DType::Int64)}}), n, D);
    Node* cand = g.call("where.ScalarOther", {is_max, pos, n});
    Node* first = g.call("scatter_reduce.two", {filled(g, {B, D}, static_cast<double>(n), DType::Int64),
                                                0, at, cand, "amin"});
    Node* ext = g.call("constant_pad_nd", {b.indices, Arg(std::vector<int64_t>{0, 1}), 0});
    Node* row = g.call("index_select", {ext, 0, g.call("reshape", {first, Arg(Shape{B * D})})});
    max_indices = as_index(g.call("reshape", {row, Arg(Shape{B, D})}));
  } else {
    Node* contrib = psw ? g.call("mul.Tensor", {rows, g.call("unsqueeze", {c.tensor("per_sample_weights"), 1})})
                        : rows;
    contrib = g.call("where.ScalarOther", {valid, contrib, 0.0});
    out = g.call("scatter_add", {filled(g, {B, D}, 0, wt), 0, at, contrib});
    if (mode == kMean) {
      Node* size = g.call("to.dtype", {g.call("clamp_min", {b.counts, 1}), wt});
      out = g.call("div.Tensor", {out, g.call("unsqueeze", {size, 1})});
    }
    max_indices = mode == kMean ? as_index(b.counts) : filled(g, {B}, 0, it);
  }
  Node* offset2bag = mode == kSum ? filled(g, {0}, 0, it) : as_index(b.bag);
  Node* bag_size = mode == kSum ? filled(g, {B}, 0, it) : as_index(b.counts);
  return {out, offset2bag, bag_size, max_indices};
}

Node* embedding_bag_backward(Graph& g, const ExpandCall& c) {
  Node* grad = c.tensor("grad");
  int64_t mode = c.get("mode").to_int(), W = c.get("num_weights").to_int();
  if (c.get("sparse").to_bool()) c.fail("sparse gradients are not supported (sparse=True)");
  if (mode < kSum || mode > kMax) c.fail("mode must be 0 (sum), 1 (mean) or 2 (max)");
  if (grad->meta().dim() != 2) c.fail("grad must be 2-D (num_bags, D), got " + shape_str(grad->shape()));
  int64_t D = grad->shape()[1];
  DType wt = grad->dtype();
  Node* zeros = filled(g, {W, D}, 0, wt);
  if (mode == kMax) {
    Node* at = g.call("to.dtype", {c.tensor("maximum_indices"), DType::Int64});
    if (at->shape() != grad->shape()) c.fail("maximum_indices must have grad's shape");
    Node* bag_size = c.tensor("bag_size");
    Node* nonempty = g.call("unsqueeze", {g.call("gt.Scalar", {bag_size, 0}), 1});
    return g.call("scatter_add", {zeros, 0, at, g.call("where.ScalarOther", {nonempty, grad, 0.0})});
  }
  Node* indices = c.tensor("indices");
  // include_last_offset is not an argument: the bags are those grad has rows for.
  int64_t offsets_n = c.tensor("offsets")->shape().empty() ? 0 : c.tensor("offsets")->shape()[0];
  Bags b = bags_of(g, c, indices, offsets_n == grad->shape()[0] + 1);
  Node* rows = g.call("index_select", {grad, 0, b.bag});  // (n, D)
  Node* valid = rows_of(g, b.valid, b.n, D);
  if (c.has("per_sample_weights"))
    rows = g.call("mul.Tensor", {rows, g.call("unsqueeze", {c.tensor("per_sample_weights"), 1})});
  if (mode == kMean) {
    Node* size = g.call("to.dtype", {g.call("clamp_min", {b.counts, 1}), wt});
    rows = g.call("div.Tensor", {rows, g.call("unsqueeze", {g.call("index_select", {size, 0, b.bag}), 1})});
  }
  if (c.get("scale_grad_by_freq").to_bool()) {
    Node* freq = g.call("scatter_add", {filled(g, {W}, 0, wt), 0, b.indices,
                                        g.call("to.dtype", {b.valid, wt})});
    Node* f = g.call("clamp_min", {g.call("index_select", {freq, 0, b.indices}), 1});
    rows = g.call("div.Tensor", {rows, g.call("unsqueeze", {f, 1})});
  }
  rows = g.call("where.ScalarOther", {valid, rows, 0.0});
  return g.call("scatter_add", {zeros, 0, rows_of(g, b.indices, b.n, D), rows});
}

Node* per_sample_weights_backward(Graph& g, const ExpandCall& c) {
  Node* grad = c.tensor("grad");
  Node* weight = c.tensor("weight");
  if (c.get("mode").to_int() != kSum) c.fail("per_sample_weights are only supported for mode sum");
  if (grad->meta().dim() != 2 || weight->meta().dim() != 2)
    c.fail("grad and weight must be 2-D, got " + shape_str(grad->shape()) + " and " +
           shape_str(weight->shape()));
  const Shape& os = c.tensor("offsets")->shape();
  Bags b = bags_of(g, c, c.tensor("indices"), !os.empty() && os[0] == grad->shape()[0] + 1);
  Node* rows = g.call("index_select", {weight, 0, b.indices});
  Node* grads = g.call("index_select", {grad, 0, b.bag});
  Node* dot = g.call("sum.dim_IntList", {g.call("mul.Tensor", {rows, grads}), Arg(std::vector<int64_t>{1})});
  return g.call("where.ScalarOther", {b.valid, dot, 0.0});
}

constexpr const char* kForward =
    "_embedding_bag(Tensor weight, Tensor indices, Tensor offsets, bool scale_grad_by_freq=False, "
    "int mode=0, bool sparse=False, Tensor? per_sample_weights=None, bool include_last_offset=False, "
    "int padding_idx=-1) -> (Tensor, Tensor, Tensor, Tensor)";
// What F.embedding_bag records when no input requires a gradient: the same op and results.
constexpr const char* kForwardOnly =
    "_embedding_bag_forward_only(Tensor weight, Tensor indices, Tensor offsets, bool "
    "scale_grad_by_freq=False, int mode=0, bool sparse=False, Tensor? per_sample_weights=None, "
    "bool include_last_offset=False, int padding_idx=-1) -> (Tensor, Tensor, Tensor, Tensor)";
constexpr const char* kBackward =
    "_embedding_bag_backward(Tensor grad, Tensor indices, Tensor offsets, Tensor offset2bag, "
    "Tensor bag_size, Tensor maximum_indices, SymInt num_weights, bool scale_grad_by_freq, int "
    "mode, bool sparse, Tensor? per_sample_weights, int padding_idx=-1) -> Tensor";
constexpr const char* kPerSampleBackward =
    "_embedding_bag_per_sample_weights_backward(Tensor grad, Tensor weight, Tensor indices, "
    "Tensor offsets, Tensor offset2bag, int mode, int padding_idx=-1) -> Tensor";

struct BuiltOp {
  const char* schema;
  BuildFn build;
};
std::vector<BuiltOp> built_ops() {
  return {{kBackward, embedding_bag_backward}, {kPerSampleBackward, per_sample_weights_backward}};
}

}  // namespace

void register_embedding_bag_ops(OpRegistry& r) {
  for (const char* forward : {kForward, kForwardOnly})
    r.add_multi(forward, OpCategory::Composite, infer_by_expansion(parse_schema(forward).name));
  for (auto& op : built_ops())
    r.add(op.schema, OpCategory::Composite, Promotion::None, infer_by_building(op.build));
}

void register_embedding_bag_expansions(ExpansionTable& t) {
  t.add(parse_schema(kForward).name, embedding_bag);
  t.add(parse_schema(kForwardOnly).name, embedding_bag);
}

void register_embedding_bag_decompositions(DecompositionTable& t) {
  for (auto& op : built_ops())
    t.add(parse_schema(op.schema).name, decomposition_by_building(op.build));
}

void register_embedding_bag_kernels(InterpreterTable& t) {
  for (auto& op : built_ops()) t.add(parse_schema(op.schema).name, kernels::run_decomposition);
}

void register_embedding_bag_vjps(VjpTable& t) {
  for (auto& op : built_ops()) t.add(parse_schema(op.schema).name, vjp_via_decomposition);
}

void register_embedding_bag_jvps(JvpTable& t) {
  for (auto& op : built_ops()) t.add(parse_schema(op.schema).name, jvp_via_decomposition);
}

}  // namespace stax
