// More aten ops (issue 14), second group: pooling / upsampling overloads, cross, gcd / lcm,
// random ops, median, creation (eye, linspace, logspace), searches, scatters, unfold, distances.
// The first group and the conventions are in more_ops.cpp.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/ops/nn/params.h"
#include "core/ops/common/infer_helpers.h"
#include "core/ops/registration.h"

namespace stax {
namespace {

using P = Promotion;
using C = OpCategory;

std::string dt(DType t) { return std::string(dtype_name(t)); }

Shape replace_tail(const CallArgs& c, const Shape& in, const std::vector<int64_t>& tail) {
  if (in.size() < tail.size()) c.fail("expected at least " + std::to_string(tail.size()) +
                                      " dimensions, got " + shape_str(in));
  Shape s = in;
  for (size_t i = 0; i < tail.size(); ++i) {
    if (tail[i] < 0) c.fail("output size must be non-negative, got " + std::to_string(tail[i]));
    s[in.size() - tail.size() + i] = tail[i];
  }
  return s;
}

// upsample_*.vec: output_size, or floor(input size * scale_factor) per spatial dim.
std::vector<int64_t> vec_output_size(const CallArgs& c, const Shape& in, size_t spatial) {
  const Arg& os = c.get("output_size");
  const Arg& sf = c.get("scale_factors");
  if (os.is_absent() == sf.is_absent())
    c.fail("must specify exactly one of output_size and scale_factors");
  if (in.size() != spatial + 2)
    c.fail("expected a " + std::to_string(spatial + 2) + "-D input, got " + shape_str(in));
  if (!os.is_absent()) {
    auto v = os.to_int_list();
    if (v.size() != spatial) c.fail("output_size must have " + std::to_string(spatial) + " entries");
    return v;
  }
  const auto& f = sf.list();
  if (f.size() != spatial) c.fail("scale_factors must have " + std::to_string(spatial) + " entries");
  std::vector<int64_t> v;
  for (size_t i = 0; i < spatial; ++i)
    v.push_back(static_cast<int64_t>(static_cast<double>(in[2 + i]) * f[i].to_double()));
  return v;
}

TensorMeta unpool_rule(const CallArgs& c, size_t spatial) {
  const TensorMeta& x = c.tensor("self");
  const TensorMeta& idx = c.tensor("indices");
  if (idx.dtype != DType::Int64) c.fail("elements in indices should be type int64 but got: " +
                                        dt(idx.dtype));
  if (idx.sizes != x.sizes) c.fail("Expected shape of indices to be same as that of the input "
                                   "tensor (" + shape_str(x.sizes) + ") but got indices tensor "
                                   "with shape: " + shape_str(idx.sizes));
  if (x.dim() != static_cast<int64_t>(spatial) + 1 && x.dim() != static_cast<int64_t>(spatial) + 2)
    c.fail("Input to max_unpooling" + std::to_string(spatial) + "d should be a " +
           std::to_string(spatial + 1) + "d or " + std::to_string(spatial + 2) + "d Tensor, got " +
           shape_str(x.sizes));
  auto os = c.get("output_size").to_int_list();
  if (os.size() != spatial) c.fail("There should be exactly " + std::to_string(spatial) +
                                   " elements (depth, height, width) in output_size");
  return TensorMeta::contiguous(replace_tail(c, x.sizes, os), x.dtype, x.device);
}

TensorMeta cross_rule(const CallArgs& c) {
  const TensorMeta& a = c.tensor("self");
  const TensorMeta& b = c.tensor("other");
  if (a.dim() != b.dim())
    c.fail("linalg.cross: inputs must have the same number of dimensions.");
  Shape s = broadcast_shapes(a.sizes, b.sizes, c.where());
  int64_t d = wrap_dim(c.get("dim").to_int(), std::max<int64_t>(a.dim(), 1), c.where());
  if (a.sizes[d] != 3 || b.sizes[d] != 3)
    c.fail("linalg.cross: inputs dimension " + std::to_string(d) + " must have length 3. Got " +
           std::to_string(a.sizes[d]) + " and " + std::to_string(b.sizes[d]));
  return TensorMeta::contiguous(s, result_type(c, {"self", "other"}, P::Default), a.device);
}

TensorMeta int_binary(const CallArgs& c) {
  TensorMeta m = infer::elementwise(c, {"self", "other"}, P::Default);
  if (is_floating(m.dtype) || m.dtype == DType::Bool)
    c.fail("not implemented for '" + dt(m.dtype) + "' (integer tensors only, as in torch)");
  return m;
}

TensorMeta median_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  if (in.dtype == DType::Bool) c.fail("median is not implemented for 'bool'");
  return TensorMeta::contiguous({}, in.dtype, in.device);
}

DType factory_dtype(const CallArgs& c) {
  return c.get("dtype").is_dtype() ? c.get("dtype").dtype() : DType::Float32;
}

TensorMeta eye_rule(const CallArgs& c) {
  int64_t n = c.get("n").to_int();
  int64_t m = c.op().schema.index_of("m") >= 0 ? c.get("m").to_int() : n;
  if (n < 0) c.fail("n must be greater or equal to 0, got " + std::to_string(n));
  if (m < 0) c.fail("m must be greater or equal to 0, got " + std::to_string(m));
  return TensorMeta::contiguous({n, m}, factory_dtype(c), "cpu");
}

TensorMeta linspace_rule(const CallArgs& c) {
  int64_t steps = c.get("steps").to_int();
  if (steps < 0) c.fail("number of steps must be non-negative");
  DType t = factory_dtype(c);
  if (!is_floating(t)) c.fail("linspace / logspace: only floating-point dtypes are supported here, "
                              "got " + dt(t));
  return TensorMeta::contiguous({steps}, t, "cpu");
}

TensorMeta search_rule(const CallArgs& c, const char* seq_param, const char* val_param) {
  const TensorMeta& seq = c.tensor(seq_param);
  const TensorMeta& v = c.tensor(val_param);
  if (c.op().schema.index_of("sorter") >= 0 && c.has("sorter"))
    c.fail("searchsorted with a sorter is not supported");
  if (c.op().schema.index_of("side") >= 0 && c.has("side")) {
    const std::string& side = c.get("side").str();
    if (side != "left" && side != "right")
      c.fail("side can only be 'left' or 'right' but got '" + side + "'");
    if (side == "left" && c.get("right").to_bool())
      c.fail("side and right can't be set to opposites, got side of left while right was True");
  }
  if (seq.dim() != 1) {
    if (seq.dim() == 0) c.fail("boundaries tensor should be 1 dimension or the first N-1 "
                               "dimensions should match the input, got a 0-d tensor");
    Shape a(seq.sizes.begin(), seq.sizes.end() - 1), b(v.sizes.begin(), v.sizes.end() - (v.dim() ? 1 : 0));
    if (a != b) c.fail("boundaries tensor should be 1 dimension or the first N-1 dimensions of "
                       "boundaries tensor and input value tensor must match, got " +
                       shape_str(seq.sizes) + " and " + shape_str(v.sizes));
  }
  if (seq.dtype == DType::Bool || v.dtype == DType::Bool)
    c.fail("searchsorted / bucketize are not implemented for 'bool'");
  DType t = c.get("out_int32").to_bool() ? DType::Int32 : DType::Int64;
  return TensorMeta::contiguous(v.sizes, t, v.device);
}

TensorMeta index_copy_rule(const CallArgs& c) {
  const TensorMeta& self = c.tensor("self");
  const TensorMeta& idx = c.tensor("index");
  const TensorMeta& src = c.tensor("source");
  int64_t d = wrap_dim(c.get("dim").to_int(), std::max<int64_t>(self.dim(), 1), c.where());
  if (idx.dtype != DType::Int64) c.fail("index_copy_(): Expected a long tensor for index, but got " +
                                        dt(idx.dtype));
  if (idx.dim() > 1) c.fail("index_copy_(): Index should have dimension 1 or 0 (got " +
                            std::to_string(idx.dim()) + ")");
  if (src.dtype != self.dtype) c.fail("index_copy_(): self and source expected to have the same "
                                      "dtype, but got (self) " + dt(self.dtype) + " and (source) " +
                                      dt(src.dtype));
  Shape want = self.sizes;
  if (self.dim() > 0) want[d] = shape_numel(idx.sizes);
  if (self.dim() > 0 && src.sizes != want)
    c.fail("index_copy_(): source of shape " + shape_str(src.sizes) + " must have shape " +
           shape_str(want));
  return TensorMeta::contiguous(self.sizes, self.dtype, self.device);
}

TensorMeta put_rule(const CallArgs& c) {
  const TensorMeta& self = c.tensor("self");
  const TensorMeta& idx = c.tensor("index");
  const TensorMeta& src = c.tensor("source");
  if (idx.dtype != DType::Int64) c.fail("put_(): Expected a long tensor for index, but got " +
                                        dt(idx.dtype));
  if (src.dtype != self.dtype) c.fail("put_(): self and source expected to have the same dtype");
  if (shape_numel(idx.sizes) != shape_numel(src.sizes))
    c.fail("put_(): Expected source and index to have the same number of elements, but got source "
           "with " + std::to_string(shape_numel(src.sizes)) + " and index with " +
           std::to_string(shape_numel(idx.sizes)) + " elements");
  return TensorMeta::contiguous(self.sizes, self.dtype, self.device);
}

TensorMeta masked_scatter_rule(const CallArgs& c) {
  const TensorMeta& self = c.tensor("self");
  const TensorMeta& mask = c.tensor("mask");
  if (mask.dtype != DType::Bool) c.fail("masked_scatter_ only supports boolean masks, but got mask "
                                        "with dtype " + dt(mask.dtype));
  if (c.tensor("source").dtype != self.dtype)
    c.fail("masked_scatter: expected self and source to have same dtypes but got " +
           dt(self.dtype) + " and " + dt(c.tensor("source").dtype));
  Shape s = broadcast_shapes(self.sizes, mask.sizes, c.where());
  return TensorMeta::contiguous(s, self.dtype, self.device);
}

TensorMeta renorm_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  if (!is_floating(in.dtype)) c.fail("renorm: expected a floating-point input, got " + dt(in.dtype));
  wrap_dim(c.get("dim").to_int(), std::max<int64_t>(in.dim(), 1), c.where());
  if (c.get("p").to_double() <= 0) c.fail("renorm: non-positive-norm not supported");
  if (c.get("maxnorm").to_double() < 0) c.fail("renorm: expected maxnorm to be >= 0 but got " +
                                               std::to_string(c.get("maxnorm").to_double()));
  return TensorMeta::contiguous(in.sizes, in.dtype, in.device);
}

TensorMeta unfold_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  int64_t rank = std::max<int64_t>(in.dim(), 1);
  int64_t d = wrap_dim(c.get("dimension").to_int(), rank, c.where());
  int64_t len = in.dim() == 0 ? 1 : in.sizes[d];
  int64_t size = c.get("size").to_int(), step = c.get("step").to_int();
  if (size > len) c.fail("maximum size for tensor at dimension " + std::to_string(d) + " is " +
                         std::to_string(len) + " but size is " + std::to_string(size));
  if (size < 0) c.fail("size is " + std::to_string(size) + " but must be >= 0");
  if (step <= 0) c.fail("step is " + std::to_string(step) + " but must be > 0");
  Shape s = in.sizes;
  if (in.dim() == 0) return TensorMeta::contiguous({size}, in.dtype, in.device);
  s[d] = (len - size) / step + 1;
  s.push_back(size);
  return TensorMeta::contiguous(s, in.dtype, in.device);
}

TensorMeta cdist_rule(const CallArgs& c) {
  const TensorMeta& a = c.tensor("x1");
  const TensorMeta& b = c.tensor("x2");
  if (a.dim() < 2 || b.dim() < 2) c.fail("cdist only supports at least 2D tensors, X1 got: " +
                                         std::to_string(a.dim()) + "D");
  if (a.sizes.back() != b.sizes.back())
    c.fail("X1 and X2 must have the same number of columns. X1: " + std::to_string(a.sizes.back()) +
           " X2: " + std::to_string(b.sizes.back()));
  if (!is_floating(a.dtype) || a.dtype != b.dtype)
    c.fail("cdist only supports floating-point dtypes of equal type, got " + dt(a.dtype) + " and " +
           dt(b.dtype));
  if (c.get("p").to_double() < 0) c.fail("cdist only supports non-negative p values");
  Shape ba(a.sizes.begin(), a.sizes.end() - 2), bb(b.sizes.begin(), b.sizes.end() - 2);
  Shape s = broadcast_shapes(ba, bb, c.where());
  s.push_back(a.sizes[a.dim() - 2]);
  s.push_back(b.sizes[b.dim() - 2]);
  return TensorMeta::contiguous(s, a.dtype, a.device);
}

TensorMeta pdist_rule(const CallArgs& c) {
  const TensorMeta& a = c.tensor("self");
  if (a.dim() != 2) c.fail("pdist only supports 2D tensors, got: " + std::to_string(a.dim()) + "D");
  if (!is_floating(a.dtype)) c.fail("pdist only supports floating-point dtypes");
  if (c.get("p").to_double() < 0) c.fail("pdist only supports non-negative p values");
  int64_t n = a.sizes[0];
  return TensorMeta::contiguous({n * (n - 1) / 2}, a.dtype, a.device);
}

TensorMeta block_diag_rule(const CallArgs& c) {
  std::vector<Node*> ts = c.get("tensors").to_node_list();
  int64_t rows = 0, cols = 0;
  DType t = ts.empty() ? DType::Float32 : ts[0]->meta().dtype;
  for (size_t i = 0; i < ts.size(); ++i) {
    const TensorMeta& m = ts[i]->meta();
    if (m.dim() > 2) c.fail("torch.block_diag: Input tensors must have 2 or fewer dimensions. "
                            "Input " + std::to_string(i) + " has " + std::to_string(m.dim()) +
                            " dimensions");
    t = promote_types(t, m.dtype);
    rows += m.dim() == 2 ? m.sizes[0] : 1;
    cols += m.dim() == 0 ? 1 : m.sizes.back();
  }
  return TensorMeta::contiguous({rows, cols}, t, "cpu");
}

TensorMeta slice_scatter_rule(const CallArgs& c) {
  const TensorMeta& self = c.tensor("self");
  const TensorMeta& src = c.tensor("src");
  if (self.dim() == 0) c.fail("slice_scatter() cannot be applied to a 0-dim tensor.");
  int64_t d = wrap_dim(c.get("dim").to_int(), self.dim(), c.where());
  int64_t n = self.sizes[d];
  int64_t step = c.get("step").to_int();
  if (step <= 0) c.fail("slice step must be positive");
  int64_t start = c.has("start") ? c.get("start").to_int() : 0;
  int64_t end = c.has("end") ? c.get("end").to_int() : n;
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  Shape want = self.sizes;
  want[d] = (end - start + step - 1) / step;
  if (src.sizes != want) c.fail("Expected src to have a size equal to the slice of self. src size "
                                "= " + shape_str(src.sizes) + ", slice size = " + shape_str(want));
  if (src.dtype != self.dtype) c.fail("slice_scatter: src must have self's dtype");
  return TensorMeta::contiguous(self.sizes, self.dtype, self.device);
}

TensorMeta select_scatter_rule(const CallArgs& c) {
  const TensorMeta& self = c.tensor("self");
  const TensorMeta& src = c.tensor("src");
  if (self.dim() == 0) c.fail("select_scatter() cannot be applied to a 0-dim tensor.");
  int64_t d = wrap_dim(c.get("dim").to_int(), self.dim(), c.where());
  int64_t i = c.get("index").to_int(), n = self.sizes[d];
  if (i < -n || i >= n) c.fail("select_scatter(): index " + std::to_string(i) +
                               " out of range for tensor of size " + shape_str(self.sizes) +
                               " at dimension " + std::to_string(d));
  Shape want = self.sizes;
  want.erase(want.begin() + d);
  if (src.sizes != want) c.fail("Expected src to have a size equal to the slice of self. src size "
                                "= " + shape_str(src.sizes) + ", slice size = " + shape_str(want));
  if (src.dtype != self.dtype) c.fail("select_scatter: src must have self's dtype");
  return TensorMeta::contiguous(self.sizes, self.dtype, self.device);
}

TensorMeta normal_rule(const CallArgs& c) {
  bool mt = c.get("mean").is_node(), st = c.get("std").is_node();
  Shape s = mt && st ? broadcast_shapes(c.tensor("mean").sizes, c.tensor("std").sizes, c.where())
                     : mt ? c.tensor("mean").sizes : c.tensor("std").sizes;
  DType t = mt ? c.tensor("mean").dtype : c.tensor("std").dtype;
  if (mt && st) t = promote_types(t, c.tensor("std").dtype);
  if (!is_floating(t)) c.fail("normal expects floating-point mean and std, got " + dt(t));
  return TensorMeta::contiguous(s, t, "cpu");
}

}  // namespace

void register_more_ops_2(OpRegistry& r) {
  auto comp = [&](const std::string& schema, InferFn f) -> OpDef& {
    return r.add(schema, C::Composite, P::None, std::move(f));
  };
  for (const char* n : {"adaptive_avg_pool2d", "adaptive_avg_pool3d"}) {
    const OpDef* base = r.find(n);
    if (!base) continue;
    InferFn f = base->infer;
    comp(std::string("_") + base->schema.text, [f](const CallArgs& c) { return f(c); });
  }
  comp("max_unpool2d(Tensor self, Tensor indices, int[2] output_size) -> Tensor",
       [](const CallArgs& c) { return unpool_rule(c, 2); });
  comp("max_unpool3d(Tensor self, Tensor indices, int[3] output_size, int[3] stride, "
       "int[3] padding) -> Tensor",
       [](const CallArgs& c) { return unpool_rule(c, 3); });
  comp("upsample_bilinear2d.vec(Tensor input, SymInt[]? output_size, bool align_corners, "
       "float[]? scale_factors) -> Tensor",
       [](const CallArgs& c) {
         const TensorMeta& in = c.tensor("input");
         if (!is_floating(in.dtype)) c.fail("upsample_bilinear2d: expected a floating-point input");
         return TensorMeta::contiguous(replace_tail(c, in.sizes, vec_output_size(c, in.sizes, 2)),
                                       in.dtype, in.device);
       });
  for (int k : {1, 2})
    comp("upsample_nearest" + std::to_string(k) + "d.vec(Tensor input, SymInt[]? output_size, "
         "float[]? scale_factors) -> Tensor",
         [k](const CallArgs& c) {
           const TensorMeta& in = c.tensor("input");
           return TensorMeta::contiguous(
               replace_tail(c, in.sizes, vec_output_size(c, in.sizes, static_cast<size_t>(k))),
               in.dtype, in.device);
         });
  comp("linalg_cross(Tensor self, Tensor other, *, int dim=-1) -> Tensor", cross_rule);
  for (const char* n : {"gcd", "lcm"})
    r.add(std::string(n) + "(Tensor self, Tensor other) -> Tensor", C::Pointwise, P::Default,
          int_binary)
        .differentiable = false;
  comp("median(Tensor self) -> Tensor", median_rule);
  comp("nanmedian(Tensor self) -> Tensor", median_rule);
  const std::string fk =
      "*, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None";
  comp("eye(int n, " + fk + ") -> Tensor", eye_rule).differentiable = false;
  comp("eye.m(int n, int m, " + fk + ") -> Tensor", eye_rule).differentiable = false;
  comp("linspace(Scalar start, Scalar end, int steps, " + fk + ") -> Tensor", linspace_rule)
      .differentiable = false;
  comp("logspace(Scalar start, Scalar end, int steps, float base=10., " + fk + ") -> Tensor",
       linspace_rule)
      .differentiable = false;
  comp("isin.Tensor_Tensor(Tensor elements, Tensor test_elements, *, bool assume_unique=False, "
       "bool invert=False) -> Tensor",
       [](const CallArgs& c) {
         const TensorMeta& e = c.tensor("elements");
         return TensorMeta::contiguous(e.sizes, DType::Bool, e.device);
       })
      .differentiable = false;
  comp("bucketize.Tensor(Tensor self, Tensor boundaries, *, bool out_int32=False, "
       "bool right=False) -> Tensor",
       [](const CallArgs& c) {
         if (c.tensor("boundaries").dim() != 1)
           c.fail("boundaries tensor must be 1 dimension, but got dim(" +
                  std::to_string(c.tensor("boundaries").dim()) + ")");
         return search_rule(c, "boundaries", "self");
       })
      .differentiable = false;
  comp("searchsorted.Tensor(Tensor sorted_sequence, Tensor self, *, bool out_int32=False, "
       "bool right=False, str? side=None, Tensor? sorter=None) -> Tensor",
       [](const CallArgs& c) { return search_rule(c, "sorted_sequence", "self"); })
      .differentiable = false;
  comp("index_copy(Tensor self, int dim, Tensor index, Tensor source) -> Tensor", index_copy_rule);
  comp("put(Tensor self, Tensor index, Tensor source, bool accumulate=False) -> Tensor", put_rule);
  comp("masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor", masked_scatter_rule);
  comp("renorm(Tensor self, Scalar p, int dim, Scalar maxnorm) -> Tensor", renorm_rule);
  comp("unfold(Tensor self, int dimension, int size, int step) -> Tensor", unfold_rule);
  comp("_cdist_forward(Tensor x1, Tensor x2, float p, int? compute_mode) -> Tensor", cdist_rule);
  comp("_pdist_forward(Tensor self, float p=2.) -> Tensor", pdist_rule);
  comp("block_diag(Tensor[] tensors) -> Tensor", block_diag_rule);
  comp("slice_scatter(Tensor self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None, "
       "SymInt step=1) -> Tensor",
       slice_scatter_rule);
  comp("select_scatter(Tensor self, Tensor src, int dim, int index) -> Tensor",
       select_scatter_rule);
  auto tri_indices = [](const CallArgs& c) {
    int64_t row = c.get("row").to_int(), col = c.get("col").to_int(), off = c.get("offset").to_int();
    if (row < 0) c.fail("row must be non-negative, got" + std::to_string(row));
    if (col < 0) c.fail("col must be non-negative, got" + std::to_string(col));
    bool lower = c.op().schema.base == "tril_indices";
    int64_t n = 0;
    for (int64_t r = 0; r < row; ++r) {
      int64_t lo = lower ? 0 : std::max<int64_t>(0, r + off);
      int64_t hi = lower ? std::min(col, r + off + 1) : col;
      n += std::max<int64_t>(0, hi - lo);
    }
    DType t = c.get("dtype").is_dtype() ? c.get("dtype").dtype() : DType::Int64;
    if (t != DType::Int64 && t != DType::Int32) c.fail("tril/triu_indices: dtype must be int32 or int64");
    return TensorMeta::contiguous({2, n}, t, "cpu");
  };
  for (const char* n : {"tril_indices", "triu_indices"})
    comp(std::string(n) + "(int row, int col, int offset=0, *, ScalarType? dtype=long, "
         "Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
         tri_indices)
        .differentiable = false;
  comp("index_reduce(Tensor self, int dim, Tensor index, Tensor source, str reduce, *, "
       "bool include_self=True) -> Tensor",
       [](const CallArgs& c) {
         const std::string& red = c.get("reduce").str();
         if (red != "prod" && red != "mean" && red != "amax" && red != "amin")
           c.fail("index_reduce(): Expected reduce to be one of prod, mean, amax or amin, got " +
                  red);
         const TensorMeta& self = c.tensor("self");
         const TensorMeta& idx = c.tensor("index");
         const TensorMeta& src = c.tensor("source");
         int64_t d = wrap_dim(c.get("dim").to_int(), std::max<int64_t>(self.dim(), 1), c.where());
         if (idx.dtype != DType::Int64 && idx.dtype != DType::Int32)
           c.fail("index_reduce_(): Expected dtype int32/int64 for index");
         if (idx.dim() > 1) c.fail("index_reduce_(): Index is supposed to be a vector");
         if (src.dtype != self.dtype)
           c.fail("index_reduce_(): self and source must have the same scalar type");
         Shape want = self.sizes;
         if (self.dim() > 0) want[d] = shape_numel(idx.sizes);
         if (self.dim() > 0 && src.sizes != want)
           c.fail("index_reduce_(): source of shape " + shape_str(src.sizes) + " must have shape " +
                  shape_str(want));
         return TensorMeta::contiguous(self.sizes, self.dtype, self.device);
       });
  comp("multi_margin_loss(Tensor self, Tensor target, Scalar p=1, Scalar margin=1, "
       "Tensor? weight=None, int reduction=1) -> Tensor",
       [](const CallArgs& c) {
         const TensorMeta& x = c.tensor("self");
         const TensorMeta& t = c.tensor("target");
         if (!is_floating(x.dtype)) c.fail("multi_margin_loss: expected a floating-point input");
         if (x.dim() > 2)
           c.fail("Expected non-empty vector or matrix with optional 0-dim batch size, but got: " +
                  shape_str(x.sizes));
         int64_t n = x.dim() == 2 ? x.sizes[0] : 1;
         if (t.dtype != DType::Int64) c.fail("multi_margin_loss: expected an int64 target");
         if (shape_numel(t.sizes) != n || t.dim() > 1)
           c.fail("inconsistent target size: " + shape_str(t.sizes) + " for input of size: " +
                  shape_str(x.sizes));
         double p = c.get("p").to_double();
         if (p != 1 && p != 2) c.fail("only p == 1 and p == 2 supported");
         int64_t classes = x.dim() == 0 ? 1 : x.sizes.back();
         if (c.has("weight") && (c.tensor("weight").dim() != 1 ||
                                 c.tensor("weight").sizes[0] != classes))
           c.fail("inconsistent weight size, expected " + std::to_string(classes) +
                  " but got " + shape_str(c.tensor("weight").sizes));
         int64_t red = c.get("reduction").to_int();
         Shape s = red == nn::kReductionNone ? t.sizes : Shape{};
         return TensorMeta::contiguous(s, x.dtype, x.device);
       });
  // Random ops (interpreter kernels drawing from the run's seed; compared by shape and dtype).
  auto random = [&](const std::string& schema, InferFn f) {
    r.add(schema, C::Random, P::None, std::move(f)).differentiable = false;
  };
  random("normal.Tensor_Tensor(Tensor mean, Tensor std, *, Generator? generator=None) -> Tensor",
         normal_rule);
  random("normal.Tensor_float(Tensor mean, float std=1., *, Generator? generator=None) -> Tensor",
         normal_rule);
  random("normal.float_Tensor(float mean, Tensor std, *, Generator? generator=None) -> Tensor",
         normal_rule);
  random("bernoulli(Tensor self, *, Generator? generator=None) -> Tensor", [](const CallArgs& c) {
    const TensorMeta& in = c.tensor("self");
    if (!is_floating(in.dtype)) c.fail("bernoulli expects a floating-point tensor of "
                                       "probabilities, got " + dt(in.dtype));
    return TensorMeta::contiguous(in.sizes, in.dtype, in.device);
  });
  auto randint_like = [](const CallArgs& c) {
    const TensorMeta& in = c.tensor("self");
    int64_t lo = c.op().schema.index_of("low") >= 0 ? c.get("low").to_int() : 0;
    if (c.get("high").to_int() <= lo)
      c.fail("random_ expects 'from' to be less than 'to', but got from=" + std::to_string(lo) +
             " >= to=" + std::to_string(c.get("high").to_int()));
    DType t = c.get("dtype").is_dtype() ? c.get("dtype").dtype() : in.dtype;
    return TensorMeta::contiguous(in.sizes, t, in.device);
  };
  const std::string lk = fk + ", MemoryFormat? memory_format=None";
  random("randint_like(Tensor self, int high, " + lk + ") -> Tensor", randint_like);
  random("randint_like.low_dtype(Tensor self, int low, int high, " + lk + ") -> Tensor",
         randint_like);
}

}  // namespace stax
