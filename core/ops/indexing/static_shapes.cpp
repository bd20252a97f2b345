// Selections whose result size comes from the arguments although which elements land where is
// data-dependent, so they fit Stax's static shapes (unlike nonzero, docs/core_aten.md):
//   nonzero_static(self, size, fill_value)   nonzero's (count, rank) indices, cut or padded with
//                      fill_value to `size` rows: each nonzero element's row is its rank among
//                      the nonzero elements (a cumulative sum); elements past `size` are sent to
//                      a spare row that is cut off; one scatter writes the rows
//   segment_reduce(data, reduce, lengths | offsets, axis, initial)   torch's segmented reduction
//                      (max min sum mean prod) along `axis` over consecutive segments of the
//                      given lengths (one row of lengths per index of the leading dims): every
//                      element's segment is the number of segment ends at or before it, and one
//                      scatter_reduce (include_self, the start value as self) reduces them; the
//                      start value is `initial` when given (it joins the reduction, as in torch's
//                      CPU kernel) or the reduction's identity (-inf, inf, 0, 1); mean divides the
//                      sum by the length, and an empty segment is `initial` or NaN. Elements past
//                      the last segment (lengths that sum to less than the axis, allowed with
//                      unsafe=True) go to a spare segment that is cut off. torch's run-time check
//                      that the lengths sum to the axis (unsafe=False) needs the values and is
//                      not made.
//   _segment_reduce_backward   the data's gradient: segment_reduce's VJP rule, through the
//                      decomposition (scatter_reduce's: max / min ties share evenly; prod is a
//                      clear error, as scatter_reduce's prod gradient)
//   histc(self, bins, min, max)   counts of the elements in `bins` equal bins over [min, max]
//                      (the data's own min and max when both are 0; widened by 1 either side
//                      when equal): bin = trunc((x - min) / (max - min) * bins) in the input's
//                      type, the maximum in the last bin, elements outside (and NaN) not
//                      counted; one scatter_add of ones (a spare bin takes the uncounted)
// All four are Composite (one builder each: inference and decomposition); nonzero_static is not
// differentiable.
#include <limits>
#include <string>
#include <vector>

#include "core/graph/multi_output.h"
#include "core/ops/common/built_ops.h"
#include "core/ops/common/forward_vjp.h"
#include "core/ops/registration.h"

namespace stax {

namespace {

Node* full_of(Graph& g, const Shape& s, Arg value, DType t) {
  return g.call("full", {Arg(s), std::move(value)}, {{"dtype", Arg(t)}});
}

Node* nonzero_static(Graph& g, const ExpandCall& c) {
  Node* x = c.tensor("self");
  int64_t size = c.get("size").to_int();
  if (size < 0)
    c.fail("nonzero_static: 'size' must be an non-negative integer, but got size: " +
           std::to_string(size));
  Arg fill = c.get("fill_value");
  const Shape& s = x->shape();
  int64_t rank = static_cast<int64_t>(s.size()), n = shape_numel(s);
  if (n == 0 || rank == 0) {
    // torch: a 0-d input gives (size, 0); an empty one only fill values
    return full_of(g, {size, rank}, fill, DType::Int64);
  }
  Node* nonzero = g.call("ne.Scalar", {g.call("reshape", {x, Shape{n}}), 0});
  Node* rank_of = g.call("sub.Scalar", {g.call("cumsum", {nonzero, 0}, {{"dtype", Arg(DType::Int64)}}), 1});
  Node* keep = g.call("logical_and", {nonzero, g.call("lt.Scalar", {rank_of, size})});
  Node* row = g.call("where.self", {keep, rank_of, full_of(g, {n}, size, DType::Int64)});
  // The multi-index of every element, (n, rank), row-major.
  Node* flat = g.call("arange", {n}, {{"dtype", Arg(DType::Int64)}});
  Shape strides = contiguous_strides(s);
  std::vector<Node*> coords;
  for (int64_t k = 0; k < rank; ++k) {
    Node* q = strides[k] == 1 ? flat : g.call("floor_divide.Scalar", {flat, strides[k]});
    coords.push_back(g.call("remainder.Scalar", {q, s[k]}));
  }
  Node* index = g.call("stack", {Arg(coords), 1});
  Node* rows = g.call("expand", {g.call("unsqueeze", {row, 1}), Arg(Shape{n, rank})});
  Node* out = g.call("scatter.src", {full_of(g, {size + 1, rank}, fill, DType::Int64), 0, rows, index});
  return g.call("slice.Tensor", {out, 0, 0, size});
}

// The segment lengths, int64 (leading dims of data..., segments).
Node* segment_lengths(Graph& g, const ExpandCall& c, Node* data, int64_t axis) {
  if (c.has("indices")) c.fail("segment_reduce(): indices based reduction is not supported yet.");
  Node* lengths = nullptr;
  if (c.has("lengths")) {
    lengths = c.tensor("lengths");
  } else if (c.has("offsets")) {
    Node* off = c.tensor("offsets");
    int64_t last = off->meta().dim() - 1;
    if (last < 0 || off->shape()[last] < 1) c.fail("segment_reduce(): offsets must have an entry");
    lengths = g.call("sub.Tensor", {g.call("slice.Tensor", {off, last, 1, Arg(), 1}),
                                    g.call("slice.Tensor", {off, last, 0, -1, 1})});
  } else {
    c.fail("segment_reduce(): Either lengths or offsets must be defined");
  }
  if (is_floating(lengths->dtype()) || lengths->dtype() == DType::Bool)
    c.fail("segment_reduce(): lengths / offsets must be an integer tensor, got " +
           std::string(dtype_name(lengths->dtype())));
  const Shape& ls = lengths->shape();
  if (static_cast<int64_t>(ls.size()) != axis + 1)
    c.fail("segment_reduce(): Expected axis " + std::to_string(axis) +
           " to be the last dimension of lengths (of shape " + shape_str(ls) + ")");
  for (int64_t d = 0; d < axis; ++d)
    if (ls[d] != data->shape()[d])
      c.fail("segment_reduce(): lengths " + shape_str(ls) + " and data " +
             shape_str(data->shape()) + " differ in the dims before axis " + std::to_string(axis));
  return lengths->dtype() == DType::Int64 ? lengths : g.call("to.dtype", {lengths, DType::Int64});
}

Node* segment_reduce(Graph& g, const ExpandCall& c) {
  Node* data = c.tensor("data");
  // torch's names: amax / amin are max / min (its get_reduction_enum).
  const std::string& given = c.get("reduce").str();
  const std::string reduce = given == "amax" ? "max" : given == "amin" ? "min" : given;
  if (reduce != "max" && reduce != "min" && reduce != "sum" && reduce != "mean" && reduce != "prod")
    c.fail("segment_reduce(): unsupported reduction " + given +
           " (expected max, min, sum, mean or prod; amax and amin as max and min)");
  DType t = data->dtype();
  if (!is_floating(t))
    c.fail("\"segment_reduce\" not implemented for '" + std::string(dtype_name(t)) +
           "' (floating-point data only, as torch's CPU kernel)");
  int64_t rank = data->meta().dim();
  if (rank == 0) c.fail("segment_reduce(): data must have at least one dimension");
  int64_t axis = wrap_dim(c.get("axis").to_int(), rank, c.where());
  Node* lengths = segment_lengths(g, c, data, axis);
  const Shape& ds = data->shape();
  int64_t segments = lengths->shape()[axis], n = ds[axis];
  // segment of position p = the count of segment ends <= p: (leading..., segments, n) -> sum
  Node* ends = g.call("unsqueeze", {g.call("cumsum", {lengths, axis}), -1});
  Shape ps(static_cast<size_t>(axis + 2), 1);
  ps.back() = n;
  Node* pos = g.call("reshape", {g.call("arange", {n}, {{"dtype", Arg(DType::Int64)}}), ps});
  Node* seg = g.call("sum.dim_IntList", {g.call("le.Tensor", {ends, pos}), Arg(std::vector<int64_t>{axis})});
  Shape is(seg->shape());
  is.resize(ds.size(), 1);
  Node* index = g.call("expand", {g.call("reshape", {seg, is}), Arg(ds)});
  bool has_initial = c.has("initial");
  double identity = reduce == "max"   ? -std::numeric_limits<double>::infinity()
                    : reduce == "min" ? std::numeric_limits<double>::infinity()
                    : reduce == "prod" ? 1.0
                                       : 0.0;
  Arg start = has_initial ? c.get("initial") : Arg(identity);
  Shape rs = ds;
  rs[axis] = segments + 1;  // the spare segment of elements past the last one
  const char* how = reduce == "max" ? "amax" : reduce == "min" ? "amin" : reduce == "mean" ? "sum"
                                                                                          : reduce.c_str();
  Node* out = g.call("scatter_reduce.two", {full_of(g, rs, start, t), axis, index, data, std::string(how)},
                     {{"include_self", Arg(true)}});
  out = g.call("slice.Tensor", {out, axis, 0, segments, 1});
  if (reduce != "mean") return out;
  Shape lb(lengths->shape());
  lb.resize(ds.size(), 1);
  Node* len = g.call("reshape", {lengths, lb});
  Node* mean = g.call("div.Tensor", {out, g.call("to.dtype", {len, t})});
  Node* empty_value = has_initial ? out : full_of(g, out->shape(), std::numeric_limits<double>::quiet_NaN(), t);
  return g.call("where.self", {g.call("gt.Scalar", {len, 0}), mean, empty_value});
}

Node* segment_reduce_backward(Graph& g, const ExpandCall& c) {
  Node* data = c.tensor("data");
  Kwargs kwargs;
  for (const char* p : {"lengths", "offsets", "axis", "initial"}) kwargs.emplace_back(p, c.get(p));
  std::vector<Node*> grads = gradients_by_vjp(g, "segment_reduce.default", {Arg(data), c.get("reduce")},
                                              std::move(kwargs), c.tensor("grad"), {data});
  return or_zeros(g, grads.at(0), data);
}

Node* histc(Graph& g, const ExpandCall& c) {
  Node* x = c.tensor("self");
  DType t = x->dtype();
  if (!is_floating(t))
    c.fail("\"histogram_cpu\" not implemented for '" + std::string(dtype_name(t)) + "'");
  int64_t bins = c.get("bins").to_int();
  if (bins <= 0) c.fail("torch.histc(): bins must be > 0, but got " + std::to_string(bins) + " for dimension 0");
  double lo = c.get("min").to_double(), hi = c.get("max").to_double();
  if (lo > hi) c.fail("torch.histc(): max must be larger than min");
  int64_t n = shape_numel(x->shape());
  Node* flat = g.call("reshape", {x, Shape{n}});
  auto scalar = [&](double v) { return full_of(g, {}, v, t); };
  Node* left = scalar(lo);
  Node* right = scalar(hi);
  if (lo == hi && n > 0) {
    left = g.call("amin", {flat, Arg(std::vector<int64_t>{0})});
    right = g.call("amax", {flat, Arg(std::vector<int64_t>{0})});
  }
  Node* same = g.call("eq.Tensor", {left, right});
  left = g.call("where.self", {same, g.call("sub.Scalar", {left, 1}), left});
  right = g.call("where.self", {same, g.call("add.Scalar", {right, 1}), right});
  Node* inside = g.call("logical_and", {g.call("ge.Tensor", {flat, left}), g.call("le.Tensor", {flat, right})});
  Node* safe = g.call("where.self", {inside, flat, left});
  Node* scaled = g.call("mul.Scalar", {g.call("div.Tensor", {g.call("sub.Tensor", {safe, left}),
                                                              g.call("sub.Tensor", {right, left})}), bins});
  Node* bin = g.call("clamp_max", {g.call("to.dtype", {g.call("trunc", {scaled}), DType::Int64}), bins - 1});
  bin = g.call("where.self", {inside, bin, full_of(g, {n}, bins, DType::Int64)});
  Node* counts = g.call("scatter_add", {full_of(g, {bins + 1}, 0, t), 0, bin, full_of(g, {n}, 1, t)});
  return g.call("slice.Tensor", {counts, 0, 0, bins, 1});
}

const std::vector<BuiltOp>& static_shape_ops() {
  static const std::vector<BuiltOp> table = {
      {"nonzero_static(Tensor self, *, SymInt size, int fill_value=-1) -> Tensor", nonzero_static,
       false},
      {"segment_reduce(Tensor data, str reduce, *, Tensor? lengths=None, Tensor? indices=None, "
       "Tensor? offsets=None, int axis=0, bool unsafe=False, Scalar? initial=None) -> Tensor",
       segment_reduce},
      {"_segment_reduce_backward(Tensor grad, Tensor output, Tensor data, str reduce, *, "
       "Tensor? lengths=None, Tensor? offsets=None, int axis=0, Scalar? initial=None) -> Tensor",
       segment_reduce_backward},
      {"histc(Tensor self, int bins=100, Scalar min=0, Scalar max=0) -> Tensor", histc, false},
  };
  return table;
}

}  // namespace

void register_static_shape_ops(OpRegistry& r) { add_built_ops(r, static_shape_ops()); }

void register_static_shape_decompositions(DecompositionTable& t) {
  add_built_decompositions(t, static_shape_ops());
}

void register_static_shape_kernels(InterpreterTable& t) { add_built_kernels(t, static_shape_ops()); }

void register_static_shape_vjps(VjpTable& t) { add_built_vjps(t, static_shape_ops()); }

void register_static_shape_jvps(JvpTable& t) { add_built_jvps(t, static_shape_ops()); }

}  // namespace stax
