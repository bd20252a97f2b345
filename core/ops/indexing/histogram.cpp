// torch.histogram: (hist, bin_edges) of the flattened input, both of static sizes (bins, bins + 1),
// as torch's CPU kernel (aten's histogramdd for one dim) computes them:
//   histogram.bin_ct(self, bins, range=None, weight=None, density=False)   the edges are
//       linspace(lo, hi, bins + 1) in the input's type (torch's symmetric formula: start + i·step
//       for the first half, end - (n - 1 - i)·step for the rest), [lo, hi] the range or the data's
//       min and max ([0, 1] for an empty input; a zero width widened by 0.5 either side); an
//       element's bin is the linear estimate trunc((x - lo)·bins / (hi - lo)) corrected by a local
//       search among the neighbouring edges;
//   histogram.bins_tensor(self, bins, weight=None, density=False)   the given edges, a binary
//       search (the returned bin_edges are a copy of them).
// Elements outside [first edge, last edge] (and NaN) are not counted; the last bin includes its
// right edge; counts or weights accumulate in the input's type in element order; density divides
// by the total and by each bin's width. The tuple ops expand to one element op per result:
// _stax_histogram_edges(self, bins, range) and _stax_histogram(self, edges, weight, density,
// linear), interpreter kernels (counted fallbacks in compiled graphs). Not differentiable (as
// torch).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/graph/multi_output.h"
#include "core/graph/op_registry.h"
#include "core/interpreter/interpreter.h"
#include "core/ops/common/kernel_utils.h"
#include "core/ops/registration.h"

namespace stax {

namespace {

std::string torch_name(DType t) {
  switch (t) {
    case DType::Bool: return "Bool";
    case DType::Float16: return "Half";
    case DType::BFloat16: return "BFloat16";
    case DType::Int64: return "Long";
    case DType::Int32: return "Int";
    case DType::Int16: return "Short";
    case DType::Int8: return "Char";
    case DType::UInt8: return "Byte";
    default: return std::string(dtype_name(t));
  }
}

template <class C>
void check_input(const C& c, DType t) {
  if (t != DType::Float32 && t != DType::Float64)
    c.fail("\"histogramdd\" not implemented for '" + torch_name(t) + "'");
}

// The [lo, hi] of bin_ct's edges from `range` (known at build time) or the data (run time).
std::optional<std::pair<double, double>> given_range(const Arg& range) {
  if (range.is_absent() || range.is_none()) return std::nullopt;
  std::vector<double> r;
  for (const Arg& a : range.list()) r.push_back(a.to_double());
  return std::make_pair(r.at(0), r.at(1));
}

// ---- element ops

TensorMeta edges_rule(const CallArgs& c) {
  const TensorMeta& x = c.tensor("self");
  check_input(c, x.dtype);
  const int64_t bins = c.get("bins").to_int();
  if (bins <= 0) c.fail("torch.histogramdd(): bins must be > 0, but got " + std::to_string(bins) +
                        " for dimension 0");
  if (auto r = given_range(c.get("range"))) {
    if (c.get("range").list().size() != 2)
      c.fail("torch.histogramdd: for a 1-dimensional histogram, range should have 2 elements");
    if (!std::isfinite(r->first) || !std::isfinite(r->second))
      c.fail("torch.histogramdd: range of [" + double_repr(r->first) + ", " +
             double_repr(r->second) + "] is not finite");
    if (r->first > r->second)
      c.fail("torch.histogramdd: min should not exceed max, but got min " +
             double_repr(r->first) + " max " + double_repr(r->second) + " for dimension 0");
  }
  return TensorMeta::contiguous({bins + 1}, x.dtype, x.device);
}

TensorMeta hist_rule(const CallArgs& c) {
  const TensorMeta& x = c.tensor("self");
  const TensorMeta& e = c.tensor("edges");
  check_input(c, x.dtype);
  if (e.dim() != 1) c.fail("torch.histogramdd: bins tensor should have one dimension, but got " +
                           std::to_string(e.dim()) + " dimensions in the bins tensor for dimension 0");
  if (e.dtype != x.dtype)
    c.fail("torch.histogramdd: input tensor and bins tensors should have the same dtype, but got "
           "input " + std::string(dtype_name(x.dtype)) + " and bins for dimension 0 " +
           std::string(dtype_name(e.dtype)));
  if (e.sizes[0] < 1)
    c.fail("torch.histogramdd: bins tensor should have at least 1 element, but got 0 elements "
           "for dimension 0");
  if (c.has("weight") && !c.get("weight").is_none()) {
    const TensorMeta& w = c.tensor("weight");
    if (w.dtype != x.dtype)
      c.fail("torch.histogramdd: if weight tensor is provided, it should have the same dtype as "
             "the input tensor");
    if (w.sizes != x.sizes)
      c.fail("torch.histogramdd: if weight tensor is provided it should have the same shape as "
             "the input tensor");
  }
  return TensorMeta::contiguous({e.sizes[0] - 1}, x.dtype, x.device);
}

template <class T>
Tensor edges_of(const Tensor& x, int64_t bins, std::optional<std::pair<double, double>> range,
                DType dt) {
  double lo = 0, hi = 1;
  if (range) {
    lo = range->first;
    hi = range->second;
  } else if (x.numel() > 0) {
    Tensor xc = x.contiguous();
    const T* p = xc.data<T>();
    T mn = p[0], mx = p[0];
    for (int64_t i = 0; i < x.numel(); ++i) {
      if (p[i] != p[i]) { mn = mx = p[i]; break; }  // NaN: torch's aminmax gives NaN
      mn = std::min(mn, p[i]);
      mx = std::max(mx, p[i]);
    }
    lo = static_cast<double>(mn);
    hi = static_cast<double>(mx);
  }
  if (!std::isfinite(lo) || !std::isfinite(hi))
    throw Error("interpreter", "", "torch.histogramdd: range of [" + double_repr(lo) + ", " +
                                       double_repr(hi) + "] is not finite");
  if (lo == hi) {
    lo -= 0.5;
    hi += 0.5;
  }
  // torch's CPU linspace in T: step in T, the first half from the start, the rest from the end.
  const int64_t n = bins + 1;
  const T start = static_cast<T>(lo), end = static_cast<T>(hi);
  const T step = (end - start) / static_cast<T>(n - 1);
  const int64_t halfway = n / 2;
  std::vector<T> e(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    e[static_cast<size_t>(i)] = i < halfway ? start + step * static_cast<T>(i)
                                            : end - step * static_cast<T>(n - i - 1);
  return Tensor::from_vector({n}, e, dt);
}

Tensor edges_kernel(const KernelContext& c) {
  const Tensor& x = c.tensor("self");
  const int64_t bins = c.arg("bins").to_int();
  auto range = given_range(c.arg("range"));
  return x.dtype() == DType::Float32 ? edges_of<float>(x, bins, range, x.dtype())
                                     : edges_of<double>(x, bins, range, x.dtype());
}

template <class T>
Tensor hist_of(const Tensor& x, const Tensor& edges, const Tensor* weight, bool density,
               bool linear) {
  Tensor xc = x.contiguous(), ec = edges.contiguous();
  const T* p = xc.data<T>();
  const T* e = ec.data<T>();
  const int64_t ne = ec.numel(), nb = ne - 1;
  Tensor wc;
  const T* w = nullptr;
  if (weight) {
    wc = weight->contiguous();
    w = wc.data<T>();
  }
  std::vector<T> h(static_cast<size_t>(nb), T(0));
  const T left = e[0], right = e[ne - 1];
  for (int64_t i = 0; i < xc.numel() && nb > 0; ++i) {
    const T v = p[i];
    if (!(v >= left && v <= right)) continue;
    int64_t pos;
    if (linear) {
      pos = static_cast<int64_t>((v - left) * static_cast<T>(ne - 1) / (right - left));
      const int64_t lo = std::max<int64_t>(0, pos - 1), hi = std::min<int64_t>(pos + 2, ne);
      pos = std::upper_bound(e + lo, e + hi, v) - e - 1;
    } else {
      pos = std::upper_bound(e, e + ne, v) - e - 1;
    }
    if (pos == ne - 1) pos -= 1;
    h[static_cast<size_t>(pos)] += w ? w[i] : T(1);
  }
  if (density) {
    T total = 0;
    for (T v : h) total += v;
    for (int64_t b = 0; b < nb; ++b) {
      h[static_cast<size_t>(b)] /= total;
      h[static_cast<size_t>(b)] /= (e[b + 1] - e[b]);
    }
  }
  return Tensor::from_vector({nb}, h, x.dtype());
}

Tensor hist_kernel(const KernelContext& c) {
  const Tensor& x = c.tensor("self");
  const Tensor& edges = c.tensor("edges");
  const Arg& wa = c.arg("weight");
  const Tensor* w = (wa.is_absent() || wa.is_none()) ? nullptr : &c.tensor("weight");
  const bool density = c.arg("density").to_bool(), linear = c.arg("linear").to_bool();
  return x.dtype() == DType::Float32 ? hist_of<float>(x, edges, w, density, linear)
                                     : hist_of<double>(x, edges, w, density, linear);
}

// ---- the tuple ops

std::vector<Node*> histogram_bin_ct(Graph& g, const ExpandCall& c) {
  Node* x = c.tensor("self");
  Node* edges = g.call("_stax_histogram_edges", {x, c.get("bins"), c.get("range")});
  Arg weight = c.has("weight") ? c.get("weight") : Arg();
  Node* hist = g.call("_stax_histogram", {x, edges, weight, c.get("density"), true});
  return {hist, edges};
}

std::vector<Node*> histogram_bins_tensor(Graph& g, const ExpandCall& c) {
  Node* x = c.tensor("self");
  Node* edges = c.tensor("bins");
  Arg weight = c.has("weight") ? c.get("weight") : Arg();
  Node* hist = g.call("_stax_histogram", {x, edges, weight, c.get("density"), false});
  return {hist, g.call("clone", {edges})};
}

struct Multi {
  const char* schema;
  ExpandFn fn;
};

std::vector<Multi> multi_ops() {
  return {
      {"histogram.bin_ct(Tensor self, int bins=100, *, float[]? range=None, Tensor? weight=None, "
       "bool density=False) -> (Tensor hist, Tensor bin_edges)",
       histogram_bin_ct},
      {"histogram.bins_tensor(Tensor self, Tensor bins, *, Tensor? weight=None, bool "
       "density=False) -> (Tensor hist, Tensor bin_edges)",
       histogram_bins_tensor},
  };
}

}  // namespace

void register_histogram_ops(OpRegistry& r) {
  r.add("_stax_histogram_edges(Tensor self, int bins, float[]? range) -> Tensor",
        OpCategory::Indexing, Promotion::None, edges_rule)
      .differentiable = false;
  r.add("_stax_histogram(Tensor self, Tensor edges, Tensor? weight, bool density, bool linear) "
        "-> Tensor",
        OpCategory::Indexing, Promotion::None, hist_rule)
      .differentiable = false;
  for (const Multi& m : multi_ops())
    r.add_multi(m.schema, OpCategory::Composite, infer_by_expansion(parse_schema(m.schema).name))
        .differentiable = false;
}

void register_histogram_expansions(ExpansionTable& t) {
  for (const Multi& m : multi_ops()) t.add(parse_schema(m.schema).name, m.fn);
}

void register_histogram_kernels(InterpreterTable& t) {
  t.add("_stax_histogram_edges.default", edges_kernel);
  t.add("_stax_histogram.default", hist_kernel);
}

}  // namespace stax
