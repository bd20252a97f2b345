// Ops whose result size depends on the data (docs/core_aten.md, "Data-dependent sizes"), with
// nonzero's fallback: the result's meta holds a bound (the input's element count) with dim 0
// marked runtime_sized, the interpreter kernel (a counted fallback in compiled graphs) makes a
// result of the size it finds, and the value can be returned by the graph, never read as a
// static shape.
//   masked_select(self, mask)                      self's elements where mask (broadcast) is true
//   _unique2(self, sorted, return_inverse, return_counts)       torch.unique (dim=None): values
//                                                  ascending, the inverse index of each element,
//                                                  the count of each value
//   unique_consecutive(self, return_inverse, return_counts, dim=None)   runs of equal elements
//   unique_dim(self, dim, sorted, ...), unique_dim_consecutive, unique_consecutive with dim:
//                                                  the same on the slices along dim
// The tuple-valued ones expand to one element op per result,
// _stax_unique(self, bool consecutive, int output) (_stax_unique_dim(self, dim, ...) for slices). An inverse or counts not asked for is an
// empty (0,) tensor, as torch's. unique is not differentiable (as torch); torch differentiates
// masked_select, Stax refuses to (a cotangent of a run-time size cannot enter a static graph):
// its VJP rule is a clear error, never a zero gradient.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <numeric>
#include <string>
#include <vector>

#include "core/autodiff/vjp.h"
#include "core/graph/multi_output.h"
#include "core/interpreter/interpreter.h"
#include "core/ops/common/kernel_utils.h"
#include "core/ops/registration.h"

namespace stax {

namespace {

using P = Promotion;

TensorMeta runtime_sized(int64_t bound, DType t, const TensorMeta& like) {
  TensorMeta m = TensorMeta::contiguous({bound}, t, like.device);
  m.runtime_sized_dims = 1u;
  return m;
}

TensorMeta masked_select_rule(const CallArgs& c) {
  const TensorMeta& self = c.tensor("self");
  const TensorMeta& mask = c.tensor("mask");
  if (mask.dtype != DType::Bool)
    c.fail("masked_select: expected BoolTensor for mask");
  Shape s = broadcast_shapes(self.sizes, mask.sizes, c.where());
  return runtime_sized(shape_numel(s), self.dtype, self);
}

enum UniquePart : int64_t { kValues = 0, kInverse = 1, kCounts = 2 };

TensorMeta unique_rule(const CallArgs& c) {
  const TensorMeta& self = c.tensor("self");
  switch (c.get("output").to_int()) {
    case kValues: return runtime_sized(self.numel(), self.dtype, self);
    case kInverse: return TensorMeta::contiguous(self.sizes, DType::Int64, self.device);
    case kCounts: return runtime_sized(self.numel(), DType::Int64, self);
  }
  c.fail("output must be 0 (values), 1 (inverse) or 2 (counts)");
}

// t's elements in row-major order, broadcast to `s`, as a contiguous tensor.
Tensor broadcast(const Tensor& t, const Shape& s) { return kernels::broadcast_to(t, s).contiguous(); }

Tensor masked_select_kernel(const KernelContext& c) {
  Shape s = broadcast_shapes(c.tensor("self").sizes(), c.tensor("mask").sizes(), "masked_select");
  Tensor self = broadcast(c.tensor("self"), s);
  Tensor mask = broadcast(c.tensor("mask"), s);
  const bool* m = mask.data<bool>();
  int64_t count = std::count(m, m + mask.numel(), true);
  Tensor out = Tensor::empty({count}, self.dtype());
  const int64_t size = self.itemsize();
  std::byte* dst = out.data_ptr();
  for (int64_t i = 0; i < self.numel(); ++i)
    if (m[i]) {
      std::memcpy(dst, self.data_ptr() + i * size, static_cast<size_t>(size));
      dst += size;
    }
  return out;
}

// The order of elements of x (contiguous), compared as computation type C: ascending, ties in
// index order; NaN last (torch sorts NaN above every number).
// uint64 (held as int64 bits) compares as unsigned: the top bit flipped.
template <class C>
std::vector<int64_t> ascending(const Tensor& x) {
  kernels::Reader<C> read(x);
  std::vector<int64_t> order(static_cast<size_t>(x.numel()));
  std::iota(order.begin(), order.end(), 0);
  const bool u64 = x.dtype() == DType::UInt64;
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    C va = read(a), vb = read(b);
    if constexpr (std::is_same_v<C, kernels::i64>)
      if (u64) return static_cast<uint64_t>(va) < static_cast<uint64_t>(vb);
    if (va != va) return false;  // NaN: never before another
    if (vb != vb) return true;
    return va < vb;
  });
  return order;
}

template <class C>
bool same(const kernels::Reader<C>& read, int64_t a, int64_t b) {
  return read(a) == read(b);  // NaNs are each their own value, as in torch
}

// Groups of equal elements of x, in the order `order` visits them: each group's first element
// (in that order), the group of every element, and each group's size.
struct Groups {
  std::vector<int64_t> first, group_of, size;
};

template <class C>
Groups group(const Tensor& x, const std::vector<int64_t>& order) {
  kernels::Reader<C> read(x);
  Groups g;
  g.group_of.assign(order.size(), 0);
  for (size_t k = 0; k < order.size(); ++k) {
    if (k == 0 || !same(read, order[k - 1], order[k])) {
      g.first.push_back(order[k]);
      g.size.push_back(0);
    }
    g.group_of[static_cast<size_t>(order[k])] = static_cast<int64_t>(g.first.size()) - 1;
    ++g.size.back();
  }
  return g;
}

Tensor unique_kernel(const KernelContext& c) {
  Tensor x = c.tensor("self").contiguous();
  bool consecutive = c.arg("consecutive").to_bool();
  bool integral = !is_floating(x.dtype()) && !is_complex(x.dtype());
  std::vector<int64_t> order(static_cast<size_t>(x.numel()));
  std::iota(order.begin(), order.end(), 0);
  if (!consecutive) order = integral ? ascending<kernels::i64>(x) : ascending<double>(x);
  Groups g = integral ? group<kernels::i64>(x, order) : group<double>(x, order);
  switch (c.arg("output").to_int()) {
    case kValues: {
      Tensor out = Tensor::empty({static_cast<int64_t>(g.first.size())}, x.dtype());
      const int64_t size = x.itemsize();
      for (size_t k = 0; k < g.first.size(); ++k)
        std::memcpy(out.data_ptr() + static_cast<int64_t>(k) * size,
                    x.data_ptr() + g.first[k] * size, static_cast<size_t>(size));
      return out;
    }
    case kInverse: return Tensor::from_vector(x.sizes(), g.group_of);
    default: return Tensor::from_vector({static_cast<int64_t>(g.size.size())}, g.size);
  }
}

// ---- unique slices (torch.unique / unique_consecutive with dim=): the slices of x along `dim`
// (each read in the row-major order of the other dims, as torch's moveaxis + reshape) compared
// lexicographically (unique_dim sorts them ascending, std::sort's order for ties does not matter:
// equal slices group together); consecutive: runs of equal neighbours. Values: x with the
// distinct slices along dim (a run-time size, bound x.size(dim)); inverse: (x.size(dim),) the
// group of every slice; counts: the size of every group.
struct Slices {
  int64_t outer = 1, n = 0, inner = 1;
  int64_t at(int64_t slice, int64_t k) const {  // element k of slice `slice`
    return (k / inner) * n * inner + slice * inner + k % inner;
  }
  int64_t length() const { return outer * inner; }
};

Slices slices_of(const Shape& s, int64_t dim) {
  Slices sl;
  sl.n = s[static_cast<size_t>(dim)];
  for (int64_t d = 0; d < dim; ++d) sl.outer *= s[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(dim) + 1; d < s.size(); ++d) sl.inner *= s[d];
  return sl;
}

template <class C>
Groups group_slices(const Tensor& x, const Slices& sl, bool consecutive) {
  kernels::Reader<C> read(x);
  const bool u64 = x.dtype() == DType::UInt64;  // unsigned order: the top bit flipped
  auto less = [&](int64_t a, int64_t b) {  // lexicographic, elements compared with <
    for (int64_t k = 0; k < sl.length(); ++k) {
      C va = read(sl.at(a, k)), vb = read(sl.at(b, k));
      if constexpr (std::is_same_v<C, kernels::i64>)
        if (u64) {
          va ^= std::numeric_limits<kernels::i64>::min();
          vb ^= std::numeric_limits<kernels::i64>::min();
        }
      if (va < vb) return true;
      if (vb < va) return false;
    }
    return false;
  };
  auto equal = [&](int64_t a, int64_t b) {  // NaN is unequal to itself, as torch's
    for (int64_t k = 0; k < sl.length(); ++k)
      if (!(read(sl.at(a, k)) == read(sl.at(b, k)))) return false;
    return true;
  };
  std::vector<int64_t> order(static_cast<size_t>(sl.n));
  std::iota(order.begin(), order.end(), 0);
  if (!consecutive) std::stable_sort(order.begin(), order.end(), less);
  Groups g;
  g.group_of.assign(order.size(), 0);
  for (size_t k = 0; k < order.size(); ++k) {
    if (k == 0 || !equal(order[k - 1], order[k])) {
      g.first.push_back(order[k]);
      g.size.push_back(0);
    }
    g.group_of[static_cast<size_t>(order[k])] = static_cast<int64_t>(g.first.size()) - 1;
    ++g.size.back();
  }
  return g;
}

TensorMeta unique_dim_rule(const CallArgs& c) {
  const TensorMeta& self = c.tensor("self");
  if (self.dim() == 0) c.fail("unique with dim= needs a tensor of at least one dimension");
  int64_t dim = wrap_dim(c.get("dim").to_int(), self.dim(), c.where());
  int64_t n = self.sizes[static_cast<size_t>(dim)];
  if (self.numel() == 0) {  // torch's checks
    if (std::count(self.sizes.begin(), self.sizes.end(), int64_t{0}) != 1)
      c.fail("Number of zero sized dimensions is more than one, so unique cannot be applied");
    if (n != 0)
      c.fail("There are 0 sized dimensions, and they aren't selected, so unique cannot be applied");
  }
  switch (c.get("output").to_int()) {
    case kValues: {
      TensorMeta m = TensorMeta::contiguous(self.sizes, self.dtype, self.device);
      m.runtime_sized_dims = 1u << dim;
      return m;
    }
    case kInverse: return TensorMeta::contiguous({n}, DType::Int64, self.device);
    case kCounts: return runtime_sized(n, DType::Int64, self);
  }
  c.fail("output must be 0 (values), 1 (inverse) or 2 (counts)");
}

Tensor unique_dim_kernel(const KernelContext& c) {
  Tensor x = c.tensor("self").contiguous();
  int64_t dim = wrap_dim(c.arg("dim").to_int(), x.dim(), "%" + c.node().name());
  bool consecutive = c.arg("consecutive").to_bool();
  Slices sl = slices_of(x.sizes(), dim);
  bool integral = !is_floating(x.dtype()) && !is_complex(x.dtype());
  Groups g = integral ? group_slices<kernels::i64>(x, sl, consecutive)
                      : group_slices<double>(x, sl, consecutive);
  switch (c.arg("output").to_int()) {
    case kValues: {
      Shape s = x.sizes();
      s[static_cast<size_t>(dim)] = static_cast<int64_t>(g.first.size());
      Tensor out = Tensor::empty(s, x.dtype());
      Slices so = slices_of(s, dim);
      const int64_t size = x.itemsize();
      for (size_t k = 0; k < g.first.size(); ++k)
        for (int64_t e = 0; e < sl.length(); ++e)
          std::memcpy(out.data_ptr() + so.at(static_cast<int64_t>(k), e) * size,
                      x.data_ptr() + sl.at(g.first[k], e) * size, static_cast<size_t>(size));
      return out;
    }
    case kInverse: return Tensor::from_vector({sl.n}, g.group_of);
    default: return Tensor::from_vector({static_cast<int64_t>(g.size.size())}, g.size);
  }
}

std::vector<Node*> unique_dim_results(Graph& g, Node* self, int64_t dim, bool consecutive,
                                      bool inverse, bool counts) {
  auto part = [&](int64_t p) { return g.call("_stax_unique_dim", {self, dim, consecutive, p}); };
  auto none = [&] { return g.call("zeros", {Arg(Shape{0})}, {{"dtype", DType::Int64}}); };
  return {part(kValues), inverse ? part(kInverse) : none(), counts ? part(kCounts) : none()};
}

// The results of one unique call; an inverse or counts not asked for is an empty (0,) tensor.
std::vector<Node*> unique_results(Graph& g, Node* self, bool consecutive, bool inverse,
                                  bool counts) {
  auto part = [&](int64_t p) { return g.call("_stax_unique", {self, consecutive, p}); };
  auto none = [&] { return g.call("zeros", {Arg(Shape{0})}, {{"dtype", DType::Int64}}); };
  return {part(kValues), inverse ? part(kInverse) : none(), counts ? part(kCounts) : none()};
}

std::vector<Node*> unique2(Graph& g, const ExpandCall& c) {
  // torch's CPU kernel sorts whether or not `sorted` asks it to
  return unique_results(g, c.tensor("self"), false, c.get("return_inverse").to_bool(),
                        c.get("return_counts").to_bool());
}

std::vector<Node*> unique_consecutive(Graph& g, const ExpandCall& c) {
  if (c.has("dim"))
    return unique_dim_results(g, c.tensor("self"), c.get("dim").to_int(), true,
                              c.get("return_inverse").to_bool(), c.get("return_counts").to_bool());
  return unique_results(g, c.tensor("self"), true, c.get("return_inverse").to_bool(),
                        c.get("return_counts").to_bool());
}

struct Multi {
  const char* schema;
  ExpandFn fn;
};

std::vector<Multi> multi_ops() {
  return {
      {"_unique2(Tensor self, bool sorted=True, bool return_inverse=False, bool "
       "return_counts=False) -> (Tensor, Tensor, Tensor)", unique2},
      {"unique_consecutive(Tensor self, bool return_inverse=False, bool return_counts=False, "
       "int? dim=None) -> (Tensor, Tensor, Tensor)", unique_consecutive},
      // torch's unique_dim sorts whether or not `sorted` asks it to, as _unique2
      {"unique_dim(Tensor self, int dim, bool sorted=True, bool return_inverse=False, bool "
       "return_counts=False) -> (Tensor, Tensor, Tensor)",
       [](Graph& g, const ExpandCall& c) {
         return unique_dim_results(g, c.tensor("self"), c.get("dim").to_int(), false,
                                   c.get("return_inverse").to_bool(),
                                   c.get("return_counts").to_bool());
       }},
      {"unique_dim_consecutive(Tensor self, int dim, bool return_inverse=False, bool "
       "return_counts=False) -> (Tensor, Tensor, Tensor)",
       [](Graph& g, const ExpandCall& c) {
         return unique_dim_results(g, c.tensor("self"), c.get("dim").to_int(), true,
                                   c.get("return_inverse").to_bool(),
                                   c.get("return_counts").to_bool());
       }},
  };
}

}  // namespace

void register_runtime_sized_ops(OpRegistry& r) {
  r.add("masked_select(Tensor self, Tensor mask) -> Tensor", OpCategory::Indexing, P::None,
        masked_select_rule);
  r.add("_stax_unique(Tensor self, bool consecutive, int output) -> Tensor", OpCategory::Indexing,
        P::None, unique_rule)
      .differentiable = false;
  r.add("_stax_unique_dim(Tensor self, int dim, bool consecutive, int output) -> Tensor",
        OpCategory::Indexing, P::None, unique_dim_rule)
      .differentiable = false;
  for (const Multi& m : multi_ops())
    r.add_multi(m.schema, OpCategory::Composite, infer_by_expansion(parse_schema(m.schema).name))
        .differentiable = false;
}

void register_runtime_sized_expansions(ExpansionTable& t) {
  for (const Multi& m : multi_ops()) t.add(parse_schema(m.schema).name, m.fn);
}

void register_runtime_sized_vjps(VjpTable& t) {
  t.add("masked_select.default", [](VjpContext& c) {
    if (c.needs("self"))
      throw Error("autodiff", "%" + c.node()->name(),
                  "the derivative of masked_select (a result whose size is known only at run "
                  "time) is not implemented in Stax");
  });
}

void register_runtime_sized_kernels(InterpreterTable& t) {
  t.add("masked_select.default", masked_select_kernel);
  t.add("_stax_unique.default", unique_kernel);
  t.add("_stax_unique_dim.default", unique_dim_kernel);
}

}  // namespace stax
