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
// The tuple-valued ones expand to one element op per result,
// _stax_unique(self, bool consecutive, int output). An inverse or counts not asked for is an
// empty (0,) tensor, as torch's. unique is not differentiable (as torch); torch differentiates
// masked_select, Stax refuses to (a cotangent of a run-time size cannot enter a static graph):
// its VJP rule is a clear error, never a zero gradient.
#include <algorithm>
#include <cstring>
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
template <class C>
std::vector<int64_t> ascending(const Tensor& x) {
  kernels::Reader<C> read(x);
  std::vector<int64_t> order(static_cast<size_t>(x.numel()));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    C va = read(a), vb = read(b);
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
    c.fail("unique_consecutive with dim= (unique slices) is not implemented in Stax");
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
  };
}

}  // namespace

void register_runtime_sized_ops(OpRegistry& r) {
  r.add("masked_select(Tensor self, Tensor mask) -> Tensor", OpCategory::Indexing, P::None,
        masked_select_rule);
  r.add("_stax_unique(Tensor self, bool consecutive, int output) -> Tensor", OpCategory::Indexing,
        P::None, unique_rule)
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
}

}  // namespace stax
