// View ops: no data movement; the result aliases its input and its TensorMeta carries the view's
// own strides (computed by view_layout(), shared with the interpreter's view kernels).
// reshape is a view when the new shape fits the input's strides and a contiguous copy otherwise.
// clone / contiguous are copies (registered here because they sit next to the views they undo).
// All of them move elements without reading them, so they take complex tensors too (OpDef::complex;
// docs/complex.md): torch traces slice spectra and clone conjugates.
#include <algorithm>
#include <limits>
#include <map>

#include "core/graph/functionalize.h"
#include "core/graph/graph.h"
#include "core/ops/common/infer_helpers.h"
#include "core/ops/registration.h"
#include "core/ops/view/layout.h"
#include "core/support/error.h"

namespace stax {

namespace {

[[noreturn]] void fail_view(const ViewCall& c, const std::string& message) {
  c.fail(message);
  throw Error("shape", "", message);  // fail() always throws; this keeps the compiler informed
}

int64_t wrap(int64_t dim, int64_t rank, const ViewCall& c) {
  int64_t r = std::max<int64_t>(rank, 1);  // a 0-d tensor accepts dims 0 and -1
  if (dim < -r || dim >= r)
    fail_view(c, "dimension " + std::to_string(dim) + " out of range for a tensor of rank " +
                     std::to_string(rank) + " (expected in [" + std::to_string(-r) + ", " +
                     std::to_string(r - 1) + "])");
  return dim < 0 ? dim + r : dim;
}

std::string size_desc(const StridedLayout& in) {
  return shape_str(in.sizes) + " (" + std::to_string(shape_numel(in.sizes)) + " elements)";
}

// Resolves one -1 in `shape` so that it has `numel` elements (torch's infer_size).
Shape infer_size(const std::vector<int64_t>& shape, const StridedLayout& in, const ViewCall& c) {
  int64_t numel = shape_numel(in.sizes);
  Shape out(shape.begin(), shape.end());
  int64_t known = 1;
  int infer_at = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer_at >= 0)
        fail_view(c, "only one dimension can be inferred in " + shape_list_str(shape));
      infer_at = static_cast<int>(i);
    } else if (shape[i] < 0) {
      fail_view(c, "invalid shape dimension " + std::to_string(shape[i]) + " in " +
                       shape_list_str(shape));
    } else {
      known *= shape[i];
    }
  }
  if (infer_at >= 0) {
    if (known == 0 || numel % known != 0)
      fail_view(c, "shape " + shape_list_str(shape) + " is invalid for an input of shape " +
                       size_desc(in));
    out[infer_at] = numel / known;
  } else if (known != numel) {
    fail_view(
        c, "shape " + shape_list_str(shape) + " is invalid for an input of shape " + size_desc(in));
  }
  return out;
}

using LayoutFn = StridedLayout (*)(const StridedLayout&, const ViewCall&);

StridedLayout do_view(const StridedLayout& in, const ViewCall& c, const char* param, bool reshape) {
  Shape sizes = infer_size(c.arg(param).to_int_list(), in, c);
  auto strides = view_strides(in.sizes, in.strides, sizes);
  if (strides) return {sizes, *strides, in.offset, false};
  if (reshape) return {sizes, contiguous_strides(sizes), 0, true};
  fail_view(c, "view shape " + shape_list_str(sizes) +
                   " is not compatible with the input's shape " + shape_str(in.sizes) +
                   " and strides " + shape_str(in.strides) +
                   " (the view would span non-contiguous dims); use reshape instead");
}

StridedLayout view_fn(const StridedLayout& in, const ViewCall& c) {
  return do_view(in, c, "size", false);
}
StridedLayout reshape_fn(const StridedLayout& in, const ViewCall& c) {
  return do_view(in, c, "shape", true);
}
// make_fx (torch 1.13) records a reshape that is a view as _reshape_alias(self, size, stride):
// the stride is the one reshape computes, so it is reshape to `size`.
StridedLayout reshape_alias_fn(const StridedLayout& in, const ViewCall& c) {
  size_t n = c.arg("size").to_int_list().size(), m = c.arg("stride").to_int_list().size();
  if (n != m)
    fail_view(c, "dimensionality of sizes (" + std::to_string(n) +
                     ") must match dimensionality of strides (" + std::to_string(m) + ")");
  // The sizes are the reshape's result (no -1 left to infer), as torch takes them.
  for (int64_t v : c.arg("size").to_int_list())
    if (v < 0) fail_view(c, "size " + shape_list_str(c.arg("size").to_int_list()) +
                                " has a negative entry");
  return do_view(in, c, "size", true);
}

StridedLayout permute_fn(const StridedLayout& in, const ViewCall& c) {
  auto dims = c.arg("dims").to_int_list();
  int64_t rank = static_cast<int64_t>(in.sizes.size());
  if (static_cast<int64_t>(dims.size()) != rank)
    fail_view(c, "dims " + shape_list_str(dims) + " do not match the rank of the input of shape " +
                     shape_str(in.sizes));
  StridedLayout out{Shape(rank), Shape(rank), in.offset, false};
  std::vector<bool> seen(rank, false);
  for (int64_t i = 0; i < rank; ++i) {
    int64_t d = wrap(dims[i], rank, c);
    if (seen[d])
      fail_view(c, "dim " + std::to_string(dims[i]) + " repeats in " + shape_list_str(dims));
    seen[d] = true;
    out.sizes[i] = in.sizes[d];
    out.strides[i] = in.strides[d];
  }
  return out;
}

StridedLayout t_fn(const StridedLayout& in, const ViewCall& c) {
  if (in.sizes.size() > 2)
    fail_view(c, "t() expects a tensor with <= 2 dimensions, got " + shape_str(in.sizes));
  StridedLayout out = in;
  if (in.sizes.size() == 2) {
    std::swap(out.sizes[0], out.sizes[1]);
    std::swap(out.strides[0], out.strides[1]);
  }
  return out;
}

StridedLayout transpose_fn(const StridedLayout& in, const ViewCall& c) {
  int64_t rank = static_cast<int64_t>(in.sizes.size());
  int64_t a = wrap(c.arg("dim0").to_int(), rank, c), b = wrap(c.arg("dim1").to_int(), rank, c);
  StridedLayout out = in;
  if (rank > 0) {
    std::swap(out.sizes[a], out.sizes[b]);
    std::swap(out.strides[a], out.strides[b]);
  }
  return out;
}

StridedLayout expand_fn(const StridedLayout& in, const ViewCall& c) {
  auto size = c.arg("size").to_int_list();
  if (size.size() < in.sizes.size())
    fail_view(c, "the number of sizes provided (" + std::to_string(size.size()) +
                     ") must be at least the number of dimensions of " + shape_str(in.sizes));
  size_t off = size.size() - in.sizes.size();
  StridedLayout out{Shape(size.begin(), size.end()), Shape(size.size(), 0), in.offset, false};
  for (size_t i = 0; i < size.size(); ++i) {
    if (i < off) {
      if (size[i] < 0)
        fail_view(c, "-1 is not allowed in a new leading dimension (expanding " +
                         shape_str(in.sizes) + " to " + shape_list_str(size) + ")");
      continue;
    }
    int64_t s = in.sizes[i - off];
    if (size[i] < -1)
      fail_view(c, "invalid size " + std::to_string(size[i]) + " in " + shape_list_str(size));
    if (size[i] == -1)
      out.sizes[i] = s;
    else if (s != 1 && s != size[i])
      fail_view(c, "cannot expand " + shape_str(in.sizes) + " to " + shape_list_str(size));
    out.strides[i] = s == 1 && out.sizes[i] != 1 ? 0 : in.strides[i - off];
  }
  return out;
}

StridedLayout squeeze_dims(const StridedLayout& in, const std::vector<bool>& drop) {
  StridedLayout out{{}, {}, in.offset, false};
  for (size_t i = 0; i < in.sizes.size(); ++i) {
    if (drop[i] && in.sizes[i] == 1) continue;
    out.sizes.push_back(in.sizes[i]);
    out.strides.push_back(in.strides[i]);
  }
  return out;
}

StridedLayout squeeze_fn(const StridedLayout& in, const ViewCall&) {
  return squeeze_dims(in, std::vector<bool>(in.sizes.size(), true));
}

StridedLayout squeeze_dim_fn(const StridedLayout& in, const ViewCall& c) {
  std::vector<bool> drop(in.sizes.size(), false);
  int64_t d = wrap(c.arg("dim").to_int(), static_cast<int64_t>(in.sizes.size()), c);
  if (!in.sizes.empty()) drop[d] = true;
  return squeeze_dims(in, drop);
}

StridedLayout squeeze_dims_fn(const StridedLayout& in, const ViewCall& c) {
  std::vector<bool> drop(in.sizes.size(), false);
  std::vector<bool> seen(std::max<size_t>(in.sizes.size(), 1), false);
  for (int64_t d : c.arg("dim").to_int_list()) {
    int64_t w = wrap(d, static_cast<int64_t>(in.sizes.size()), c);
    if (seen[w]) fail_view(c, "dim " + std::to_string(w) + " appears multiple times in the list of dims");
    seen[w] = true;
    if (!in.sizes.empty()) drop[w] = true;
  }
  return squeeze_dims(in, drop);
}

StridedLayout unsqueeze_fn(const StridedLayout& in, const ViewCall& c) {
  int64_t rank = static_cast<int64_t>(in.sizes.size());
  int64_t d = wrap(c.arg("dim").to_int(), rank + 1, c);
  StridedLayout out = in;
  int64_t stride = d >= rank ? 1 : in.sizes[d] * in.strides[d];
  out.sizes.insert(out.sizes.begin() + d, 1);
  out.strides.insert(out.strides.begin() + d, stride);
  return out;
}

StridedLayout slice_fn(const StridedLayout& in, const ViewCall& c) {
  int64_t rank = static_cast<int64_t>(in.sizes.size());
  if (rank == 0) fail_view(c, "slice() cannot be applied to a 0-d tensor");
  int64_t d = wrap(c.arg("dim").to_int(), rank, c);
  int64_t size = in.sizes[d];
  int64_t step = c.arg("step").to_int();
  if (step <= 0) fail_view(c, "slice step must be positive, got " + std::to_string(step));
  auto [start, end] = clamp_slice_bounds(c.arg("start"), c.arg("end"), size);
  StridedLayout out = in;
  out.sizes[d] = (end - start + step - 1) / step;
  out.offset += start * in.strides[d];
  out.strides[d] = in.strides[d] * step;
  return out;
}

StridedLayout select_fn(const StridedLayout& in, const ViewCall& c) {
  int64_t rank = static_cast<int64_t>(in.sizes.size());
  if (rank == 0) fail_view(c, "select() cannot be applied to a 0-d tensor");
  int64_t d = wrap(c.arg("dim").to_int(), rank, c);
  int64_t index = c.arg("index").to_int(), size = in.sizes[d];
  if (index < -size || index >= size)
    fail_view(c, "index " + std::to_string(index) + " is out of range for dimension " +
                     std::to_string(d) + " of size " + std::to_string(size) + " (input shape " +
                     shape_str(in.sizes) + ")");
  if (index < 0) index += size;
  StridedLayout out = in;
  out.offset += index * in.strides[d];
  out.sizes.erase(out.sizes.begin() + d);
  out.strides.erase(out.strides.begin() + d);
  return out;
}

StridedLayout as_strided_fn(const StridedLayout& in, const ViewCall& c) {
  auto size = c.arg("size").to_int_list();
  auto stride = c.arg("stride").to_int_list();
  if (size.size() != stride.size())
    fail_view(c, "size " + shape_list_str(size) + " and stride " + shape_list_str(stride) +
                     " differ in length");
  for (size_t i = 0; i < size.size(); ++i)
    if (size[i] < 0 || stride[i] < 0)
      fail_view(c, "negative size or stride in size " + shape_list_str(size) + ", stride " +
                       shape_list_str(stride));
  const Arg& off = c.arg("storage_offset");
  int64_t offset = off.is_absent() ? in.offset : off.to_int();
  if (offset < 0) fail_view(c, "negative storage offset " + std::to_string(offset));
  return {Shape(size.begin(), size.end()), Shape(stride.begin(), stride.end()), offset, false};
}

StridedLayout alias_fn(const StridedLayout& in, const ViewCall&) { return in; }

const std::map<std::string, LayoutFn, std::less<>>& layout_table() {
  static const std::map<std::string, LayoutFn, std::less<>> table = {
      {"view.default", view_fn},
      {"_unsafe_view.default", view_fn},
      {"reshape.default", reshape_fn},
      {"permute.default", permute_fn},
      {"t.default", t_fn},
      {"transpose.int", transpose_fn},
      {"expand.default", expand_fn},
      {"squeeze.default", squeeze_fn},
      {"squeeze.dim", squeeze_dim_fn},
      {"squeeze.dims", squeeze_dims_fn},
      {"unsqueeze.default", unsqueeze_fn},
      {"slice.Tensor", slice_fn},
      {"select.int", select_fn},
      {"as_strided.default", as_strided_fn},
      {"_reshape_alias.default", reshape_alias_fn},
      {"alias.default", alias_fn},
      {"detach.default", alias_fn},
  };
  return table;
}

}  // namespace

std::pair<int64_t, int64_t> clamp_slice_bounds(const Arg& start, const Arg& end, int64_t size) {
  int64_t b = start.is_absent() ? 0 : start.to_int();
  int64_t e = end.is_absent() ? std::numeric_limits<int64_t>::max() : end.to_int();
  if (b < 0) b += size;
  if (e < 0) e += size;
  b = std::clamp<int64_t>(b, 0, size);
  e = std::clamp<int64_t>(e, b, size);
  return {b, e};
}

bool is_view_layout_op(std::string_view op) { return layout_table().count(op) > 0; }

StridedLayout view_layout(std::string_view op, const StridedLayout& in, const ViewCall& call) {
  auto it = layout_table().find(op);
  if (it == layout_table().end()) fail_view(call, "no view layout rule for " + std::string(op));
  return it->second(in, call);
}

std::optional<Shape> view_strides(const Shape& old_sizes, const Shape& old_strides,
                                  const Shape& sizes) {
  Shape strides(sizes.size(), 0);
  if (shape_numel(old_sizes) == 0) {
    if (old_sizes == sizes) return old_strides;
    return contiguous_strides(sizes);
  }
  if (old_sizes.empty()) return contiguous_strides(sizes);  // a 0-d tensor: all new dims are 1
  // Walk the old dims from the innermost out, grouping dims that are contiguous with each other
  // into chunks; each chunk of old dims must be covered exactly by a run of new dims.
  int64_t new_d = static_cast<int64_t>(sizes.size()) - 1;
  int64_t chunk_stride = old_strides.back();
  int64_t old_numel = 1, new_numel = 1;
  for (int64_t d = static_cast<int64_t>(old_sizes.size()) - 1; d >= 0; --d) {
    old_numel *= old_sizes[d];
    bool chunk_ends =
        d == 0 || (old_sizes[d - 1] != 1 && old_strides[d - 1] != old_numel * chunk_stride);
    if (!chunk_ends) continue;
    while (new_d >= 0 && (new_numel < old_numel || sizes[new_d] == 1)) {
      strides[new_d] = new_numel * chunk_stride;
      new_numel *= sizes[new_d];
      --new_d;
    }
    if (new_numel != old_numel) return std::nullopt;
    if (d > 0) {
      chunk_stride = old_strides[d - 1];
      old_numel = new_numel = 1;
    }
  }
  if (new_d != -1) return std::nullopt;
  return strides;
}

namespace {

// Whether `n`'s value may share its storage with its first input's: a view, an element of an op
// whose elements are views (split, unbind ...), or an op whose kernel may return its input as it
// is (contiguous of a contiguous tensor, a cast to the same dtype).
bool may_alias_input(const Node& n) {
  if (!n.is_call() || n.args().empty() || !n.args()[0].is_node()) return false;
  const std::string& t = n.target();
  if (t == "getitem") return may_alias_input(*n.input(0));
  if (default_functionalization_table().view(t).first) return true;
  if (n.op() && n.op()->category == OpCategory::View) return true;
  return t == "contiguous.default" || t.rfind("to.", 0) == 0 || t == "type_as.default";
}

// as_strided reaches elements [offset, offset + 1 + Σ (size - 1) * stride) of its input's
// storage (torch checks this when the view is made: setStorage). The storage is known when the
// graph says it: through the ops that may alias their input, a value no op aliases (a
// placeholder, whose storage is its declared shape, or an op's fresh result). Without an explicit
// storage_offset the view keeps its input's own offset, known only for such a value itself.
void check_as_strided_storage(const CallArgs& c, const StridedLayout& l) {
  const Arg& self = c.get("self");
  if (!self.is_node() || shape_numel(l.sizes) == 0) return;
  const Node* base = self.node();
  while (may_alias_input(*base)) base = base->input(0);
  if (base != self.node() && c.get("storage_offset").is_absent()) return;
  int64_t need = l.offset + 1;
  for (size_t d = 0; d < l.sizes.size(); ++d) need += (l.sizes[d] - 1) * l.strides[d];
  int64_t have = base->meta().numel();
  if (need > have)
    c.fail("setStorage: sizes " + shape_str(l.sizes) + ", strides " + shape_str(l.strides) +
           ", storage offset " + std::to_string(l.offset) + " require a storage of " +
           std::to_string(need) + " elements, out of bounds for the storage of %" + base->name() +
           " (" + std::to_string(have) + " elements)");
}

}  // namespace

void register_view_ops(OpRegistry& r) {
  using P = Promotion;
  auto view_rule = [](const CallArgs& c) {
    const TensorMeta& in = c.tensor("self");
    ViewCall call{[&c](std::string_view p) -> const Arg& { return c.get(p); },
                  [&c](const std::string& m) { c.fail(m); }};
    StridedLayout l = view_layout(c.op().name(), {in.sizes, in.strides, 0, false}, call);
    if (c.op().name() == "as_strided.default") check_as_strided_storage(c, l);
    return TensorMeta{l.sizes, l.strides, in.dtype, in.device};
  };
  for (const char* schema : {
           "view(Tensor(a) self, SymInt[] size) -> Tensor(a)",
           "_unsafe_view(Tensor self, SymInt[] size) -> Tensor",
           "reshape(Tensor self, SymInt[] shape) -> Tensor",
           "permute(Tensor(a) self, int[] dims) -> Tensor(a)",
           "t(Tensor self) -> Tensor",
           "transpose.int(Tensor self, int dim0, int dim1) -> Tensor",
           "expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)",
           "squeeze(Tensor self) -> Tensor",
           "squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)",
           "squeeze.dims(Tensor(a) self, int[] dim) -> Tensor(a)",
           "unsqueeze(Tensor(a) self, int dim) -> Tensor(a)",
           "slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, "
           "SymInt step=1) -> Tensor(a)",
           "select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)",
           "as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) "
           "-> Tensor(a)",
           "alias(Tensor(a) self) -> Tensor(a)",
           "_reshape_alias(Tensor self, SymInt[] size, SymInt[] stride) -> Tensor",
       })
    r.add(schema, OpCategory::View, P::None, view_rule).complex = true;

  // detach: the same values, cut from the gradient (make_fx records it for autograd's saved values).
  OpDef& detach = r.add("detach(Tensor self) -> Tensor", OpCategory::View, P::None, view_rule);
  detach.differentiable = false;
  detach.complex = true;

  // Copies into a fresh row-major tensor (memory_format is accepted and ignored).
  auto copy_rule = [](const CallArgs& c) {
    const TensorMeta& in = c.tensor("self");
    return TensorMeta::contiguous(in.sizes, in.dtype, in.device);
  };
  r.add("clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor", OpCategory::Pointwise,
        P::None, copy_rule).complex = true;
  r.add("contiguous(Tensor self, *, MemoryFormat memory_format=contiguous_format) -> Tensor",
        OpCategory::Pointwise, P::None, copy_rule).complex = true;
  // make_fx records a tensor constant as get_attr + lift_fresh_copy (a copy).
  r.add("lift_fresh_copy(Tensor self) -> Tensor", OpCategory::Pointwise, P::None, copy_rule)
      .complex = true;
}

}  // namespace stax
