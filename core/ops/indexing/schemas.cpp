// Indexing ops: cat, gather, index (advanced indexing), index_put, scatter, scatter_add,
// index_select. All are functional: they return new tensors and never write their inputs.
// Index tensors must be int64 or int32; boolean / uint8 masks are rejected because their result
// shapes depend on the data (a compiler needs static shapes), except as index_put's single index:
// x[mask] = v keeps x's shape (the kernel checks that v fits the count of True entries).
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "core/ops/common/infer_helpers.h"
#include "core/ops/nn/params.h"
#include "core/ops/registration.h"

namespace stax {

namespace {

std::string dt(DType t) { return std::string(dtype_name(t)); }

void check_index_dtype(const CallArgs& c, const TensorMeta& index, const std::string& what) {
  if (index.dtype == DType::Int64 || index.dtype == DType::Int32) return;
  if (index.dtype == DType::Bool || index.dtype == DType::UInt8)
    c.fail(what + " is a " + dt(index.dtype) +
           " mask; masks give data-dependent shapes, which Stax does not support (index with "
           "int64 positions instead)");
  c.fail(what + " must be an int64 or int32 tensor, got " + dt(index.dtype));
}

TensorMeta cat_rule(const CallArgs& c) {
  std::vector<Node*> ts = c.get("tensors").to_node_list();
  if (ts.empty()) c.fail("expected a non-empty list of tensors");
  for (size_t i = 0; i < ts.size(); ++i)
    if (!ts[i]) c.fail("tensor " + std::to_string(i) + " of the list is None");
  // torch's legacy rule: 1-d empty tensors (shape (0,)) are skipped when others have another rank.
  auto legacy_empty = [](const Node* n) { return n->shape() == Shape{0}; };
  const Node* ref = nullptr;
  for (Node* n : ts)
    if (!legacy_empty(n)) {
      ref = n;
      break;
    }
  DType dtype = result_type(c, {"tensors"}, Promotion::Default);
  std::string device = ts[0]->meta().device;
  if (!ref) return TensorMeta::contiguous({0}, dtype, device);
  const Shape& rs = ref->shape();
  int64_t rank = static_cast<int64_t>(rs.size());
  if (rank == 0) c.fail("zero-dimensional tensor %" + ref->name() + " cannot be concatenated");
  int64_t dim = wrap_dim(c.get("dim").to_int(), rank, c.where());
  Shape out = rs;
  out[dim] = 0;
  for (Node* n : ts) {
    if (legacy_empty(n) && n->shape() != rs) continue;
    const Shape& s = n->shape();
    bool ok = s.size() == rs.size();
    for (int64_t d = 0; ok && d < rank; ++d) ok = d == dim || s[d] == rs[d];
    if (!ok)
      c.fail("tensors must have the same shape except in dimension " + std::to_string(dim) +
             ": got " + shape_str(rs) + " (%" + ref->name() + ") and " + shape_str(s) + " (%" +
             n->name() + ")");
    out[dim] += s[dim];
  }
  return TensorMeta::contiguous(out, dtype, device);
}

// gather / scatter see a 0-d tensor as shape (1,), like torch.
Shape as_1d_if_scalar(const Shape& s) { return s.empty() ? Shape{1} : s; }

// The shape checks gather and scatter share: index has self's rank and is no larger than `other`
// (self, or src) in every dim except `skip` (-1: none).
void check_no_larger(const CallArgs& c, const TensorMeta& index, const TensorMeta& other,
                     const char* other_name, int64_t skip) {
  Shape is = as_1d_if_scalar(index.sizes), os = as_1d_if_scalar(other.sizes);
  if (is.size() != os.size())
    c.fail("index " + shape_str(index.sizes) + " and " + other_name + " " + shape_str(other.sizes) +
           " must have the same number of dimensions");
  for (size_t d = 0; d < is.size(); ++d)
    if (static_cast<int64_t>(d) != skip && is[d] > os[d])
      c.fail("index " + shape_str(index.sizes) + " is larger than " + other_name + " " +
             shape_str(other.sizes) + " in dimension " + std::to_string(d));
}

TensorMeta gather_rule(const CallArgs& c) {
  const TensorMeta& self = c.tensor("self");
  const TensorMeta& index = c.tensor("index");
  int64_t dim = wrap_dim(c.get("dim").to_int(), self.dim(), c.where());
  // As torch: an empty index gives an empty result whatever its rank and dtype (no checks).
  if (index.numel() > 0) {
    check_index_dtype(c, index, "index");
    check_no_larger(c, index, self, "input", dim);
  }
  return TensorMeta::contiguous(index.sizes, self.dtype, self.device);
}

// Shape of self[indices] (numpy advanced indexing): the index tensors broadcast to B; when the
// indexed dims are adjacent B replaces them in place, otherwise B comes first.
Shape index_result_shape(const CallArgs& c, const TensorMeta& self, const std::vector<Node*>& idx) {
  int64_t rank = self.dim();
  if (static_cast<int64_t>(idx.size()) > rank)
    c.fail("too many indices (" + std::to_string(idx.size()) + ") for a tensor of shape " +
           shape_str(self.sizes));
  Shape b;
  bool any = false;
  int64_t first = -1, last = -1;
  for (size_t i = 0; i < idx.size(); ++i) {
    if (!idx[i]) continue;
    check_index_dtype(c, idx[i]->meta(),
                      "index " + std::to_string(i) + " (%" + idx[i]->name() + ")");
    b = any ? broadcast_shapes(b, idx[i]->shape(), c.where()) : idx[i]->shape();
    any = true;
    if (first < 0) first = static_cast<int64_t>(i);
    last = static_cast<int64_t>(i);
  }
  if (!any) c.fail("expected at least one index tensor that is not None");
  bool adjacent = true;
  for (int64_t i = first; i <= last; ++i) adjacent = adjacent && idx[i] != nullptr;
  Shape out;
  if (!adjacent) out = b;
  for (int64_t d = 0; d < rank; ++d) {
    if (adjacent && d == first) out.insert(out.end(), b.begin(), b.end());
    bool indexed = d < static_cast<int64_t>(idx.size()) && idx[d];
    if (!indexed) out.push_back(self.sizes[d]);
  }
  return out;
}

TensorMeta index_rule(const CallArgs& c) {
  const TensorMeta& self = c.tensor("self");
  Shape out = index_result_shape(c, self, c.get("indices").to_node_list());
  return TensorMeta::contiguous(out, self.dtype, self.device);
}

// index_put's mask form: the one index that is not None is a bool / uint8 mask over self's dims
// [p, p + mask.dim()); the indexed shape is self[:p] + [K] + self[p + mask.dim():], K the count of
// True entries (known at run time). Returns that shape with K = 1 (so values broadcast-checks
// against it with a size-1 dim that any count matches), or nullopt when there is no mask.
std::optional<Shape> mask_target(const CallArgs& c, const TensorMeta& self,
                                 const std::vector<Node*>& idx) {
  int64_t at = -1, count = 0;
  for (size_t i = 0; i < idx.size(); ++i) {
    if (!idx[i]) continue;
    ++count;
    DType t = idx[i]->dtype();
    if (t == DType::Bool || t == DType::UInt8) at = static_cast<int64_t>(i);
  }
  if (at < 0) return std::nullopt;
  if (count != 1)
    c.fail("a bool mask index must be the only index that is not None (got " +
           std::to_string(count) + " indices)");
  const Shape& m = idx[at]->shape();
  int64_t end = at + static_cast<int64_t>(m.size());
  bool ok = end <= self.dim();
  for (size_t k = 0; ok && k < m.size(); ++k) ok = m[k] == self.sizes[at + k];
  if (!ok)
    c.fail("the mask of shape " + shape_str(m) + " does not match the shape " +
           shape_str(self.sizes) + " of self at dimension " + std::to_string(at));
  Shape target(self.sizes.begin(), self.sizes.begin() + at);
  target.push_back(1);
  target.insert(target.end(), self.sizes.begin() + end, self.sizes.end());
  return target;
}

TensorMeta index_put_rule(const CallArgs& c) {
  const TensorMeta& self = c.tensor("self");
  const TensorMeta& values = c.tensor("values");
  auto idx = c.get("indices").to_node_list();
  auto masked = mask_target(c, self, idx);
  Shape target = masked ? *masked : index_result_shape(c, self, idx);
  if (values.dtype != self.dtype)
    c.fail("values (" + dt(values.dtype) + ") must have the dtype of self (" + dt(self.dtype) +
           ")");
  if (masked) {  // values broadcast to target, whose dim `at` (the mask's) has any size
    int64_t at = std::find_if(idx.begin(), idx.end(), [](Node* n) { return n; }) - idx.begin();
    bool ok = values.sizes.size() <= target.size();
    for (size_t i = 0; ok && i < values.sizes.size(); ++i) {
      size_t td = target.size() - 1 - i;
      int64_t v = values.sizes[values.sizes.size() - 1 - i];
      ok = v == 1 || v == target[td] || static_cast<int64_t>(td) == at;
    }
    if (!ok)
      c.fail("values of shape " + shape_str(values.sizes) +
             " cannot be broadcast to the masked shape of self " + shape_str(self.sizes));
    return TensorMeta::contiguous(self.sizes, self.dtype, self.device);
  }
  bool ok = values.sizes.size() <= target.size();
  for (size_t i = 0; ok && i < values.sizes.size(); ++i) {
    int64_t v = values.sizes[values.sizes.size() - 1 - i], t = target[target.size() - 1 - i];
    ok = v == 1 || v == t;
  }
  if (!ok)
    c.fail("values of shape " + shape_str(values.sizes) +
           " cannot be broadcast to the indexed shape " + shape_str(target) + " of self " +
           shape_str(self.sizes));
  return TensorMeta::contiguous(self.sizes, self.dtype, self.device);
}

TensorMeta scatter_rule(const CallArgs& c) {
  const TensorMeta& self = c.tensor("self");
  const TensorMeta& index = c.tensor("index");
  int64_t dim = wrap_dim(c.get("dim").to_int(), self.dim(), c.where());
  // As torch: an empty index writes nothing, whatever its rank and dtype (no checks).
  if (index.numel() > 0) {
    check_index_dtype(c, index, "index");
    check_no_larger(c, index, self, "self", dim);
  }
  if (c.op().schema.index_of("src") >= 0) {
    const TensorMeta& src = c.tensor("src");
    if (src.dtype != self.dtype)
      c.fail("src (" + dt(src.dtype) + ") must have the dtype of self (" + dt(self.dtype) + ")");
    if (index.numel() > 0) check_no_larger(c, index, src, "src", -1);
  }
  if (c.op().schema.index_of("value") >= 0) infer::check_scalar_fits(c, "value", self.dtype);
  return TensorMeta::contiguous(self.sizes, self.dtype, self.device);
}

TensorMeta index_select_rule(const CallArgs& c) {
  const TensorMeta& self = c.tensor("self");
  const TensorMeta& index = c.tensor("index");
  check_index_dtype(c, index, "index");
  if (index.dim() > 1) c.fail("index must be 0-d or 1-d, got shape " + shape_str(index.sizes));
  if (self.dim() == 0 && index.numel() != 1)
    c.fail("index_select(): the index into a 0-d tensor can have only 1 value, got " +
           std::to_string(index.numel()));
  int64_t dim = wrap_dim(c.get("dim").to_int(), self.dim(), c.where());
  if (self.dim() > 0 && self.sizes[dim] == 0 && index.numel() > 0)
    c.fail("index_select(): " + std::to_string(index.numel()) + " indices into dim " +
           std::to_string(dim) + " of self " + shape_str(self.sizes) + ", which is empty: every "
           "index is out of range");
  Shape out = self.sizes;
  if (!out.empty()) out[dim] = index.numel();
  return TensorMeta::contiguous(out, self.dtype, self.device);
}

using P = Promotion;
using C = OpCategory;

TensorMeta stack_rule(const CallArgs& c) {
  std::vector<Node*> ts = c.get("tensors").to_node_list();
  if (ts.empty()) c.fail("stack expects a non-empty TensorList");
  const TensorMeta& first = ts[0]->meta();
  for (size_t i = 1; i < ts.size(); ++i)
    if (!ts[i] || ts[i]->meta().sizes != first.sizes)
      c.fail("stack expects each tensor to be equal size, but got " + shape_str(first.sizes) +
             " at entry 0 and " + (ts[i] ? shape_str(ts[i]->meta().sizes) : "None") +
             " at entry " + std::to_string(i));
  int64_t d = wrap_dim(c.get("dim").to_int(), first.dim() + 1, c.where());
  DType t = ts[0]->meta().dtype;
  for (Node* n : ts) t = promote_types(t, n->meta().dtype);
  Shape s = first.sizes;
  s.insert(s.begin() + d, static_cast<int64_t>(ts.size()));
  return TensorMeta::contiguous(s, t, first.device);
}

TensorMeta repeat_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  std::vector<int64_t> r = c.get("repeats").to_int_list();
  if (static_cast<int64_t>(r.size()) < in.dim())
    c.fail("Number of dimensions of repeat dims (" + std::to_string(r.size()) +
           ") can not be smaller than number of dimensions of tensor (" +
           std::to_string(in.dim()) + ")");
  Shape s(r.size());
  size_t pad = r.size() - in.sizes.size();
  for (size_t i = 0; i < r.size(); ++i) {
    if (r[i] < 0) c.fail("repeats must be non-negative, got " + std::to_string(r[i]));
    s[i] = r[i] * (i < pad ? 1 : in.sizes[i - pad]);
  }
  return TensorMeta::contiguous(s, in.dtype, in.device);
}

TensorMeta same_as_self(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  return TensorMeta::contiguous(in.sizes, in.dtype, in.device);
}

TensorMeta flip_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  std::vector<bool> seen(std::max<int64_t>(in.dim(), 1));
  for (int64_t d : c.get("dims").to_int_list()) {
    int64_t w = wrap_dim(d, std::max<int64_t>(in.dim(), 1), c.where());
    if (seen[w]) c.fail("dim " + std::to_string(w) + " appears multiple times in dims");
    seen[w] = true;
  }
  return same_as_self(c);
}

TensorMeta roll_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  auto shifts = c.get("shifts").to_int_list();
  auto dims = c.get("dims").to_int_list();
  if (dims.empty() && shifts.size() != 1)
    c.fail("shifts must have one element when dims is empty, got " +
           std::to_string(shifts.size()));
  if (!dims.empty() && shifts.size() != dims.size())
    c.fail("shifts and dimensions must align: shifts has " + std::to_string(shifts.size()) +
           " elements, dims " + std::to_string(dims.size()));
  if (!dims.empty() && in.dim() == 0)  // as torch: a 0-d tensor has no dim to roll along
    c.fail("dimension specified as " + std::to_string(dims[0]) + " but tensor has no dimensions");
  for (int64_t d : dims) wrap_dim(d, std::max<int64_t>(in.dim(), 1), c.where());
  return same_as_self(c);
}

TensorMeta tri_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  if (in.dim() < 2) c.fail("tril/triu: input tensor must have at least 2 dimensions");
  return same_as_self(c);
}

TensorMeta masked_fill_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  const TensorMeta& mask = c.tensor("mask");
  if (mask.dtype != DType::Bool)
    c.fail("masked_fill only supports boolean masks, but got mask with dtype " + dt(mask.dtype));
  // As torch's out-of-place masked_fill: self and mask broadcast together (the in-place form's
  // write back then needs self's shape, which Graph::call checks).
  Shape b = broadcast_shapes(in.sizes, mask.sizes, c.where());
  if (c.get("value").is_node()) {
    const TensorMeta& v = c.tensor("value");
    if (v.dim() != 0)
      c.fail("masked_fill only supports a 0-dimensional value tensor, but got tensor with " +
             std::to_string(v.dim()) + " dimension(s)");
  }
  infer::check_scalar_fits(c, "value", in.dtype);
  return TensorMeta::contiguous(b, in.dtype, in.device);
}

// index_add / scatter_reduce: self's shape and dtype; index int64 of the stated rank.
TensorMeta index_add_rule(const CallArgs& c) {
  const TensorMeta& self = c.tensor("self");
  const TensorMeta& idx = c.tensor("index");
  const TensorMeta& src = c.tensor("source");
  int64_t d = wrap_dim(c.get("dim").to_int(), std::max<int64_t>(self.dim(), 1), c.where());
  if (idx.dtype != DType::Int64 && idx.dtype != DType::Int32)
    c.fail("index_add_(): Expected dtype int32/int64 for index, got " + dt(idx.dtype));
  if (idx.dim() > 1) c.fail("index_add_(): Index is supposed to be a vector");
  if (src.dtype != self.dtype)
    c.fail("index_add_(): self (" + dt(self.dtype) + ") and source (" + dt(src.dtype) +
           ") must have the same scalar type");
  int64_t n = idx.dim() == 0 ? 1 : idx.sizes[0];
  if (self.dim() == 0 && n != 1)
    c.fail("index_add_(): the number of indices (" + std::to_string(n) +
           ") should be equal to self.size(dim) (1) for a 0-d self");
  if (self.dim() == 0 && src.dim() > 0)  // torch's kernel: a 0-d self takes a 0-d source only
    c.fail("index_add_(): source of shape " + shape_str(src.sizes) + " must match the shape () "
           "of self");
  if (self.dim() > 0) {
    Shape want = self.sizes;
    want[d] = n;
    if (src.sizes != want)  // torch: a 0-d source fits a 0-d self only
      c.fail("index_add_(): source of shape " + shape_str(src.sizes) + " must have shape " +
             shape_str(want) + " (self's with dim " + std::to_string(d) + " of the index's length)");
  }
  if (c.get("alpha").is_double() && !is_floating(self.dtype))
    c.fail("for integral input tensors, argument alpha must not be a floating point number");
  return same_as_self(c);
}

TensorMeta scatter_reduce_rule(const CallArgs& c) {
  const TensorMeta& self = c.tensor("self");
  const TensorMeta& idx = c.tensor("index");
  const TensorMeta& src = c.tensor("src");
  int64_t d = wrap_dim(c.get("dim").to_int(), std::max<int64_t>(self.dim(), 1), c.where());
  const std::string& red = c.get("reduce").str();
  if (red != "sum" && red != "prod" && red != "mean" && red != "amax" && red != "amin")
    c.fail("reduce argument must be either sum, prod, mean, amax or amin, got " + red);
  if (src.dtype != self.dtype)
    c.fail("scatter_reduce(): Expected self.dtype to be equal to src.dtype");
  // torch's scatter shape check, as scatter's: a 0-d tensor counts as 1-d; the index no larger
  // than self apart from dim, nor than src; an empty index writes nothing and is not checked.
  if (idx.numel() > 0) {
    check_index_dtype(c, idx, "index");  // int64 or int32, as torch's scatter ops
    check_no_larger(c, idx, self, "self", d);
    check_no_larger(c, idx, src, "src", -1);
  }
  return same_as_self(c);
}

int64_t wrap(const CallArgs& c, int64_t d, int64_t rank) {
  return wrap_dim(d, std::max<int64_t>(rank, 1), c.where());
}

// diagonal(self, offset, dim1, dim2): the other dims, then the diagonal's length.
TensorMeta diagonal_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  if (in.dim() < 2) c.fail("diagonal expects a tensor of at least 2 dimensions, got " +
                           std::to_string(in.dim()));
  int64_t d1 = wrap(c, c.get("dim1").to_int(), in.dim());
  int64_t d2 = wrap(c, c.get("dim2").to_int(), in.dim());
  if (d1 == d2) c.fail("diagonal dimensions cannot be identical " + std::to_string(d1) + ", " +
                       std::to_string(d2));
  int64_t off = c.get("offset").to_int();
  int64_t n = in.sizes[d1], m = in.sizes[d2];
  int64_t len = off >= 0 ? std::min(n, m - off) : std::min(n + off, m);
  Shape s;
  for (int64_t d = 0; d < in.dim(); ++d)
    if (d != d1 && d != d2) s.push_back(in.sizes[d]);
  s.push_back(std::max<int64_t>(len, 0));
  return TensorMeta::contiguous(s, in.dtype, in.device);
}

TensorMeta diag_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  int64_t k = c.get("diagonal").to_int();
  if (in.dim() == 1) {
    int64_t n = in.sizes[0] + std::abs(k);
    return TensorMeta::contiguous({n, n}, in.dtype, in.device);
  }
  if (in.dim() != 2) c.fail("diag(): Supports 1D or 2D tensors. Got " + std::to_string(in.dim()) +
                            "D");
  int64_t n = in.sizes[0], m = in.sizes[1];
  int64_t len = k >= 0 ? std::min(n, m - k) : std::min(n + k, m);
  return TensorMeta::contiguous({std::max<int64_t>(len, 0)}, in.dtype, in.device);
}

TensorMeta diag_embed_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  int64_t rank = in.dim() + 1;
  int64_t d1 = wrap_dim(c.get("dim1").to_int(), rank, c.where());
  int64_t d2 = wrap_dim(c.get("dim2").to_int(), rank, c.where());
  if (d1 == d2) c.fail("diagonal dimensions cannot be identical " + std::to_string(d1) + ", " +
                       std::to_string(d2));
  if (in.dim() < 1) c.fail("diag_embed expects a tensor of at least 1 dimension");
  int64_t n = in.sizes.back() + std::abs(c.get("offset").to_int());
  Shape s(in.sizes.begin(), in.sizes.end() - 1);
  int64_t lo = std::min(d1, d2), hi = std::max(d1, d2);
  s.insert(s.begin() + lo, n);
  s.insert(s.begin() + hi, n);
  return TensorMeta::contiguous(s, in.dtype, in.device);
}

TensorMeta take_rule(const CallArgs& c) {
  const TensorMeta& idx = c.tensor("index");
  if (idx.dtype != DType::Int64) c.fail("take(): Expected a long tensor for index, but got " +
                                        dt(idx.dtype));
  const TensorMeta& in = c.tensor("self");
  if (shape_numel(in.sizes) == 0 && shape_numel(idx.sizes) != 0)
    c.fail("take(): tried to take from an empty tensor");
  return TensorMeta::contiguous(idx.sizes, in.dtype, in.device);
}

TensorMeta index_fill_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  const TensorMeta& idx = c.tensor("index");
  wrap(c, c.get("dim").to_int(), in.dim());
  if (idx.dtype != DType::Int64) c.fail("index_fill_(): Expected dtype int64 for index.");
  if (idx.dim() > 1) c.fail("index_fill_(): Index is supposed to be a vector");
  if (c.get("value").is_node() && c.tensor("value").dim() != 0)
    c.fail("index_fill_ only supports a 0-dimensional value tensor, but got tensor with " +
           std::to_string(c.tensor("value").dim()) + " dimension(s).");
  infer::check_scalar_fits(c, "value", in.dtype);
  return same_as_self(c);
}

TensorMeta rot90_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  auto dims = c.get("dims").to_int_list();
  if (dims.size() != 2) c.fail("expected total rotation dims == 2, but got dims = " +
                               std::to_string(dims.size()));
  if (in.dim() < 2) c.fail("expected total dims >= 2, but got total dims = " +
                           std::to_string(in.dim()));
  int64_t a = wrap(c, dims[0], in.dim()), b = wrap(c, dims[1], in.dim());
  if (a == b) c.fail("expected rotation dims to be different, but got dim0 = " +
                     std::to_string(a) + " and dim1 = " + std::to_string(b));
  int64_t k = ((c.get("k").to_int() % 4) + 4) % 4;
  Shape s = in.sizes;
  if (k % 2 == 1) std::swap(s[a], s[b]);
  return TensorMeta::contiguous(s, in.dtype, in.device);
}

TensorMeta narrow_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  if (in.dim() == 0) c.fail("narrow() cannot be applied to a 0-dim tensor.");
  int64_t d = wrap(c, c.get("dim").to_int(), in.dim());
  int64_t n = in.sizes[d], start = c.get("start").to_int(), len = c.get("length").to_int();
  if (start < -n || start > n)
    c.fail("start out of range (expected to be in range of [" + std::to_string(-n) + ", " +
           std::to_string(n) + "], but got " + std::to_string(start) + ")");
  if (start < 0) start += n;
  if (len < 0 || start > n - len)
    c.fail("start (" + std::to_string(start) + ") + length (" + std::to_string(len) +
           ") exceeds dimension size (" + std::to_string(n) + ").");
  Shape s = in.sizes;
  s[d] = len;
  return TensorMeta::contiguous(s, in.dtype, in.device);
}

TensorMeta search_rule(const CallArgs& c, const char* seq_param, const char* val_param) {
  const TensorMeta& seq = c.tensor(seq_param);
  const TensorMeta& v = c.tensor(val_param);
  if (c.op().schema.index_of("sorter") >= 0 && c.has("sorter")) {
    // torch's checks (Bucketization.cpp): the permutation that sorts the sequence, int64, of the
    // sequence's shape (the decomposition counts, which needs no sorted order).
    const TensorMeta& sorter = c.tensor("sorter");
    if (sorter.dtype != DType::Int64)
      c.fail("sorter must be a tensor of long dtype but got dtype " +
             dt(sorter.dtype));
    if (sorter.sizes != seq.sizes)
      c.fail("boundary and sorter must have the same size, but got boundary tensor " +
             shape_str(seq.sizes) + " and got sorter tensor " + shape_str(sorter.sizes));
  }
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

// isin: bool elements (and test elements) are not supported by torch.
TensorMeta isin_rule(const CallArgs& c) {
  const TensorMeta& e = c.tensor("elements");
  for (const char* p : {"elements", "test_elements"})
    if (c.tensor(p).dtype == DType::Bool)
      c.fail(std::string("isin() does not support bool ") + p + " (as torch)");
  return TensorMeta::contiguous(e.sizes, DType::Bool, e.device);
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
  int64_t src_n = src.dim() == 0 ? 1 : src.sizes[std::min<int64_t>(d, src.dim() - 1)];
  if (shape_numel(idx.sizes) != src_n)
    c.fail("index_copy_(): the number of indices (" + std::to_string(shape_numel(idx.sizes)) +
           ") should be equal to source.size(dim) (" + std::to_string(src_n) + ")");
  Shape want = self.sizes;
  if (self.dim() > 0) want[d] = shape_numel(idx.sizes);
  if (self.dim() > 0 && self.sizes[d] == 0 && idx.numel() > 0)
    c.fail("index_copy_(): " + std::to_string(idx.numel()) + " indices into dim " +
           std::to_string(d) + " of self " + shape_str(self.sizes) + ", which is empty: every "
           "index is out of range");
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
  if (self.numel() == 0 && idx.numel() > 0)
    c.fail("put_(): tried to put " + std::to_string(idx.numel()) + " elements into an empty "
           "tensor " + shape_str(self.sizes));
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

// The base indexing ops: cat, nonzero, _local_scalar_dense, gather, index, index_put, the
// scatters, index_select.
void add_base_indexing_ops(OpRegistry& r) {
  const auto I = OpCategory::Indexing;
  r.add("cat(Tensor[] tensors, int dim=0) -> Tensor", I, P::Default, cat_rule);
  // nonzero: (number of nonzero elements, rank) int64 indices in row-major order. The row count
  // is known only when it runs: the meta holds the bound numel (runtime_sized_dims, dim 0), so
  // the value can only be returned by the graph (Graph::call), never read as a static shape.
  r.add("nonzero(Tensor self) -> Tensor", I, P::None, [](const CallArgs& c) {
     const TensorMeta& in = c.tensor("self");
     TensorMeta m = TensorMeta::contiguous({in.numel(), in.dim()}, DType::Int64, in.device);
     m.runtime_sized_dims = 1u;
     return m;
   }).differentiable = false;
  // _local_scalar_dense (Tensor.item()): the one element of self. Stax returns it as a 0-d
  // tensor; a number argument given it is an error (its value is known only at run time).
  r.add("_local_scalar_dense(Tensor self) -> Scalar", OpCategory::Composite, P::None,
        [](const CallArgs& c) {
          const TensorMeta& in = c.tensor("self");
          if (in.numel() != 1)
            c.fail("a Tensor with " + std::to_string(in.numel()) +
                   " elements cannot be converted to Scalar");
          return TensorMeta::contiguous({}, in.dtype, in.device);
        })
      .differentiable = false;
  r.add("gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor", I,
        P::None, gather_rule);
  r.add("index.Tensor(Tensor self, Tensor?[] indices) -> Tensor", I, P::None, index_rule);
  r.add("index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor",
        I, P::None, index_put_rule);
  r.add("scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor", I, P::None,
        scatter_rule);
  r.add("scatter.src(Tensor self, int dim, Tensor index, Tensor src) -> Tensor", I, P::None,
        scatter_rule);
  r.add("scatter.value(Tensor self, int dim, Tensor index, Scalar value) -> Tensor", I, P::None,
        scatter_rule);
  r.add("index_select(Tensor self, int dim, Tensor index) -> Tensor", I, P::None,
        index_select_rule);
}

// Composite shape ops (stack repeat flip roll tril triu), masked and indexed writes, and the
// diagonal / take / index_fill / rot90 / narrow_copy family.
void add_shape_and_write_composites(OpRegistry& r) {
  // ---- shape ops (Composite: cat / unsqueeze / expand / reshape / index_select / slice / where)
  r.add("stack(Tensor[] tensors, int dim=0) -> Tensor", C::Composite, P::None, stack_rule);

  r.add("repeat(Tensor self, SymInt[] repeats) -> Tensor", C::Composite, P::None, repeat_rule);

  r.add("flip(Tensor self, int[] dims) -> Tensor", C::Composite, P::None, flip_rule);

  r.add("roll(Tensor self, SymInt[1] shifts, int[1] dims=[]) -> Tensor", C::Composite, P::None,
        roll_rule);

  r.add("tril(Tensor self, int diagonal=0) -> Tensor", C::Composite, P::None, tri_rule);

  r.add("triu(Tensor self, int diagonal=0) -> Tensor", C::Composite, P::None, tri_rule);

  // ---- masked and indexed writes
  r.add("masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor", C::Composite,
        P::None, masked_fill_rule);

  r.add("masked_fill.Tensor(Tensor self, Tensor mask, Tensor value) -> Tensor", C::Composite,
        P::None, masked_fill_rule);

  r.add("index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor",
        C::Indexing, P::None, index_add_rule);

  r.add("scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, str reduce, *, "
        "bool include_self=True) -> Tensor",
        C::Indexing, P::None, scatter_reduce_rule);
  {
    // ---- pointwise formulas (Composite)
    auto comp = [&](const std::string& schema, Promotion p, InferFn f) -> OpDef& {
      return r.add(schema, C::Composite, p, std::move(f));
    };

    // ---- shape and indexing ops
    comp("diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)", P::None,
         diagonal_rule);

    comp("diag(Tensor self, int diagonal=0) -> Tensor", P::None, diag_rule);

    comp("diag_embed(Tensor self, int offset=0, int dim1=-2, int dim2=-1) -> Tensor", P::None,
         diag_embed_rule);

    comp("take(Tensor self, Tensor index) -> Tensor", P::None, take_rule);

    comp("index_fill.int_Scalar(Tensor self, int dim, Tensor index, Scalar value) -> Tensor",
         P::None, index_fill_rule);

    comp("index_fill.int_Tensor(Tensor self, int dim, Tensor index, Tensor value) -> Tensor",
         P::None, index_fill_rule);

    comp("rot90(Tensor self, int k=1, int[] dims=[0, 1]) -> Tensor", P::None, rot90_rule);

    comp("narrow_copy(Tensor self, int dim, SymInt start, SymInt length) -> Tensor", P::None,
         narrow_rule);
  }
}

// isin, bucketize / searchsorted, index_copy, put, masked_scatter, unfold, block_diag, the
// slice / select scatters, index_reduce.
void add_search_and_copy_composites(OpRegistry& r) {
  {
    auto comp = [&](const std::string& schema, InferFn f) -> OpDef& {
      return r.add(schema, C::Composite, P::None, std::move(f));
    };

    comp("isin.Tensor_Tensor(Tensor elements, Tensor test_elements, *, bool assume_unique=False, "
         "bool invert=False) -> Tensor",
         isin_rule)
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

    comp("unfold(Tensor self, int dimension, int size, int step) -> Tensor", unfold_rule);

    comp("block_diag(Tensor[] tensors) -> Tensor", block_diag_rule);

    comp("slice_scatter(Tensor self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None, "
         "SymInt step=1) -> Tensor",
         slice_scatter_rule);

    comp("select_scatter(Tensor self, Tensor src, int dim, SymInt index) -> Tensor",
         select_scatter_rule);

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
           // torch's kernel, as index_add's: a 0-d self takes one index and a 0-d source.
           if (self.dim() == 0 && (idx.numel() != 1 || src.dim() > 0))
             c.fail("index_reduce_(): a 0-d self takes one index and a 0-d source, got index " +
                    shape_str(idx.sizes) + " and source " + shape_str(src.sizes));
           Shape want = self.sizes;
           if (self.dim() > 0) want[d] = shape_numel(idx.sizes);
           if (self.dim() > 0 && src.sizes != want)
             c.fail("index_reduce_(): source of shape " + shape_str(src.sizes) + " must have shape " +
                    shape_str(want));
           return TensorMeta::contiguous(self.sizes, self.dtype, self.device);
         });

    // scatter's reduce forms (torch's older API): scatter_reduce.two with include_self and
    // "add" -> sum, "multiply" -> prod; the value form scatters a tensor of value (self's dtype).
    auto scatter_with_reduce = [](const CallArgs& c) {
      const std::string& red = c.get("reduce").str();
      if (red != "add" && red != "multiply")
        c.fail("reduce argument must be either add or multiply, got " + red);
      return scatter_rule(c);
    };
    comp("scatter.reduce(Tensor self, int dim, Tensor index, Tensor src, *, str reduce) -> Tensor",
         scatter_with_reduce);
    comp("scatter.value_reduce(Tensor self, int dim, Tensor index, Scalar value, *, str reduce) "
         "-> Tensor",
         scatter_with_reduce);
  }
}

}  // namespace

void register_indexing_ops(OpRegistry& r) {
  add_base_indexing_ops(r);
  add_shape_and_write_composites(r);
  add_search_and_copy_composites(r);
}

}  // namespace stax
