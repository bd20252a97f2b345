// Indexing ops: cat, gather, index (advanced indexing), index_put, scatter, scatter_add,
// index_select. All are functional: they return new tensors and never write their inputs.
// Index tensors must be int64 or int32; boolean / uint8 masks are rejected because their result
// shapes depend on the data (a compiler needs static shapes), except as index_put's single index:
// x[mask] = v keeps x's shape (the kernel checks that v fits the count of True entries).
#include <algorithm>
#include <optional>

#include "core/ops/common/infer_helpers.h"
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
  check_index_dtype(c, index, "index");
  int64_t dim = wrap_dim(c.get("dim").to_int(), self.dim(), c.where());
  // As torch: an empty index gives an empty result whatever its rank (no shape checks).
  if (index.numel() > 0) check_no_larger(c, index, self, "input", dim);
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
  check_index_dtype(c, index, "index");
  int64_t dim = wrap_dim(c.get("dim").to_int(), self.dim(), c.where());
  check_no_larger(c, index, self, "self", dim);
  if (c.op().schema.index_of("src") >= 0) {
    const TensorMeta& src = c.tensor("src");
    if (src.dtype != self.dtype)
      c.fail("src (" + dt(src.dtype) + ") must have the dtype of self (" + dt(self.dtype) + ")");
    check_no_larger(c, index, src, "src", -1);
  }
  return TensorMeta::contiguous(self.sizes, self.dtype, self.device);
}

TensorMeta index_select_rule(const CallArgs& c) {
  const TensorMeta& self = c.tensor("self");
  const TensorMeta& index = c.tensor("index");
  check_index_dtype(c, index, "index");
  if (index.dim() > 1) c.fail("index must be 0-d or 1-d, got shape " + shape_str(index.sizes));
  int64_t dim = wrap_dim(c.get("dim").to_int(), self.dim(), c.where());
  Shape out = self.sizes;
  if (!out.empty()) out[dim] = index.numel();
  return TensorMeta::contiguous(out, self.dtype, self.device);
}

}  // namespace

void register_indexing_ops(OpRegistry& r) {
  using P = Promotion;
  const auto I = OpCategory::Indexing;
  r.add("cat(Tensor[] tensors, int dim=0) -> Tensor", I, P::Default, cat_rule);
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

}  // namespace stax
