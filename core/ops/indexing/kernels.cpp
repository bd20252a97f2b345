// Interpreter kernels of the indexing ops. All return new row-major tensors.
//
// Index semantics (as torch): index.Tensor and index_put wrap negative indices (Python style);
// gather, scatter, scatter_add and index_select do not. An index outside its dimension is an
// Error naming the node, the index, the dimension and its size. index_put without accumulate and
// scatter.src with repeated targets keep the last write in row-major order of the index (torch
// leaves this unspecified). Accumulation (index_put accumulate=True, scatter_add) adds in the
// element's computation type (float for float16/bfloat16, wrapping for integers, `or` for bool).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "core/graph/op_registry.h"
#include "core/interpreter/interpreter.h"
#include "core/ops/common/kernel_utils.h"
#include "core/ops/pointwise/formulas.h"
#include "core/ops/registration.h"
#include "core/ops/special/functions.h"

namespace stax {

namespace {

using kernels::i64;

// Calls f(idx) for every multi-index of `sizes` in row-major order (once for rank 0; never when
// some size is 0).
template <class F>
void for_each_index(const Shape& sizes, F&& f) {
  for (int64_t s : sizes)
    if (s == 0) return;
  std::vector<int64_t> idx(sizes.size(), 0);
  for (;;) {
    f(static_cast<const std::vector<int64_t>&>(idx));
    size_t d = sizes.size();
    for (;;) {
      if (d == 0) return;
      --d;
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
}

int64_t dot(const std::vector<int64_t>& idx, const Shape& strides) {
  int64_t o = 0;
  for (size_t d = 0; d < idx.size(); ++d) o += idx[d] * strides[d];
  return o;
}

// Calls f(o) for every multi-index i of `sizes` in row-major order, o[k] = sum_d i[d] *
// strides[k][d] (each strides[k] of sizes' rank), moving the offsets along as the index moves:
// no index vector per element (the gradients of index / gather run here, ~10^6 elements).
template <size_t K, class F>
void for_each_offset(const Shape& sizes, const std::array<Shape, K>& strides, F&& f) {
  for (int64_t s : sizes)
    if (s == 0) return;
  std::array<int64_t, K> o{};
  const size_t r = sizes.size();
  if (r == 0) return f(o);
  std::vector<int64_t> idx(r, 0);
  const int64_t inner = sizes[r - 1];
  std::array<int64_t, K> step{};
  for (size_t k = 0; k < K; ++k) step[k] = strides[k][r - 1];
  for (;;) {
    std::array<int64_t, K> at = o;
    for (int64_t j = 0; j < inner; ++j) {
      f(static_cast<const std::array<int64_t, K>&>(at));
      for (size_t k = 0; k < K; ++k) at[k] += step[k];
    }
    size_t d = r - 1;
    for (;;) {
      if (d == 0) return;
      --d;
      for (size_t k = 0; k < K; ++k) o[k] += strides[k][d];
      if (++idx[d] < sizes[d]) break;
      for (size_t k = 0; k < K; ++k) o[k] -= strides[k][d] * sizes[d];
      idx[d] = 0;
    }
  }
}

template <class T>
T add_values(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return a || b;
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  } else {
    return kernels::narrow<T>(kernels::widen(a) + kernels::widen(b));
  }
}

// A tensor's (sizes, strides), with a 0-d tensor seen as one element of shape (1,).
struct Dims {
  Shape sizes, strides;
};
Dims as_1d_if_scalar(const Tensor& t) {
  if (t.dim() == 0) return {{1}, {1}};
  return {t.sizes(), t.strides()};
}

[[noreturn]] void out_of_bounds(const KernelContext& ctx, int64_t v, int64_t dim, int64_t size) {
  ctx.fail("index " + std::to_string(v) + " is out of bounds for dimension " + std::to_string(dim) +
           " with size " + std::to_string(size));
}

// ---- cat
// -------------------------------------------------------------------------------------------

Tensor cat_kernel(const KernelContext& ctx) {
  std::vector<Tensor> ts = ctx.tensor_list("tensors");
  Tensor out = Tensor::empty(ctx.out_meta().sizes, ctx.out_meta().dtype);
  if (out.dim() == 0) return out;
  int64_t rank = out.dim();
  int64_t dim = wrap_dim(ctx.arg("dim").to_int(), rank, "%" + ctx.node().name());
  int64_t pos = 0;
  for (const Tensor& t : ts) {
    if (t.dim() != rank) continue;  // a legacy empty (0,) tensor next to higher-rank ones
    if (t.numel() == 0) {
      pos += t.sizes()[dim];
      continue;
    }
    out.as_strided(t.sizes(), out.strides(), pos * out.strides()[dim]).copy_from(t);
    pos += t.sizes()[dim];
  }
  return out;
}

// ---- gather / scatter
// ------------------------------------------------------------------------------

Tensor gather_kernel(const KernelContext& ctx) {
  const Tensor& self = ctx.tensor("self");
  const Tensor& index = ctx.tensor("index");
  int64_t dim = wrap_dim(ctx.arg("dim").to_int(), self.dim(), "%" + ctx.node().name());
  Dims s = as_1d_if_scalar(self), ix = as_1d_if_scalar(index);
  Tensor out = Tensor::empty(ctx.out_meta().sizes, self.dtype());
  kernels::Reader<i64> read_index(index);
  dispatch(self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = self.data<T>();
    T* dst = out.data<T>();
    int64_t k = 0;
    for_each_index(ix.sizes, [&](const std::vector<int64_t>& i) {
      int64_t v = read_index(dot(i, ix.strides));
      if (v < 0 || v >= s.sizes[dim]) out_of_bounds(ctx, v, dim, s.sizes[dim]);
      dst[k++] = src[dot(i, s.strides) + (v - i[dim]) * s.strides[dim]];
    });
  });
  return out;
}

// scatter.src / scatter.value / scatter_add: out = self; out[i with i[dim] = index[i]] = src[i].
Tensor scatter_kernel(const KernelContext& ctx, bool accumulate) {
  const Tensor& self = ctx.tensor("self");
  const Tensor& index = ctx.tensor("index");
  bool has_src = ctx.node().op()->schema.index_of("src") >= 0;
  int64_t dim = wrap_dim(ctx.arg("dim").to_int(), self.dim(), "%" + ctx.node().name());
  Tensor out = self.clone();
  Dims o = as_1d_if_scalar(out), ix = as_1d_if_scalar(index);
  kernels::Reader<i64> read_index(index);
  dispatch(self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* dst = out.data<T>();
    const T* src = nullptr;
    Dims sd;
    T value{};
    if (has_src) {
      const Tensor& s = ctx.tensor("src");
      src = s.data<T>();
      sd = as_1d_if_scalar(s);
    } else {
      value = kernels::store_as<T>(kernels::scalar_as<kernels::compute_t<T>>(ctx.arg("value")));
    }
    // The output's offset without dim (the index's value replaces i[dim] there).
    Shape out_strides = o.strides;
    out_strides[static_cast<size_t>(dim)] = 0;
    Shape src_strides = src ? sd.strides : Shape(ix.sizes.size(), 0);
    const int64_t dim_stride = o.strides[static_cast<size_t>(dim)], dim_size = o.sizes[dim];
    const std::array<Shape, 3> walk{ix.strides, src_strides, out_strides};
    for_each_offset(ix.sizes, walk, [&](const std::array<int64_t, 3>& at) {
      int64_t v = read_index(at[0]);
      if (v < 0 || v >= dim_size) out_of_bounds(ctx, v, dim, dim_size);
      T x = src ? src[at[1]] : value;
      T& d = dst[at[2] + v * dim_stride];
      d = accumulate ? add_values(d, x) : x;
    });
  });
  return out;
}

Tensor index_select_kernel(const KernelContext& ctx) {
  const Tensor& self = ctx.tensor("self");
  const Tensor& index = ctx.tensor("index");
  int64_t dim = wrap_dim(ctx.arg("dim").to_int(), self.dim(), "%" + ctx.node().name());
  std::vector<int64_t> idx = index.contiguous().to_vector<int64_t>();
  Dims s = as_1d_if_scalar(self);
  for (int64_t v : idx)
    if (v < 0 || v >= s.sizes[dim]) out_of_bounds(ctx, v, dim, s.sizes[dim]);
  Tensor out = Tensor::empty(ctx.out_meta().sizes, self.dtype());
  Shape walk = s.sizes;
  walk[dim] = static_cast<int64_t>(idx.size());
  dispatch(self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = self.data<T>();
    T* dst = out.data<T>();
    int64_t k = 0;
    for_each_index(walk, [&](const std::vector<int64_t>& i) {
      dst[k++] = src[dot(i, s.strides) + (idx[i[dim]] - i[dim]) * s.strides[dim]];
    });
  });
  return out;
}

// ---- advanced indexing
// -----------------------------------------------------------------------------

// self[indices]: the index tensors broadcast to B; the result's dims are the non-indexed dims of
// self in order, with B's dims inserted where the (adjacent) indexed dims were, or first.
class IndexPlan {
 public:
  IndexPlan(const KernelContext& ctx, const Tensor& self, const std::vector<Tensor>& indices)
      : ctx_(ctx), self_(self) {
    int64_t first = -1, last = -1;
    for (size_t j = 0; j < indices.size(); ++j) {
      if (!indices[j].defined()) continue;
      b_ = first < 0 ? indices[j].sizes()
                     : broadcast_shapes(b_, indices[j].sizes(), "%" + ctx.node().name());
      if (first < 0) first = static_cast<int64_t>(j);
      last = static_cast<int64_t>(j);
    }
    if (first < 0) ctx.fail("expected at least one index tensor that is not None");
    bool adjacent = true;
    for (int64_t j = first; j <= last; ++j) adjacent = adjacent && indices[j].defined();
    int64_t b_at = adjacent ? first : 0;
    for (int64_t d = 0; d < self.dim(); ++d) {
      bool indexed = d < static_cast<int64_t>(indices.size()) && indices[d].defined();
      if (d == b_at && adjacent) append_b();
      if (!indexed) {
        result_.push_back(self.sizes()[d]);
        self_dim_of_.push_back(d);
      }
    }
    if (!adjacent) {  // B goes first
      Shape r = b_;
      r.insert(r.end(), result_.begin(), result_.end());
      result_ = r;
      std::vector<int64_t> m(b_.size(), -1);
      m.insert(m.end(), self_dim_of_.begin(), self_dim_of_.end());
      self_dim_of_ = m;
      b_start_ = 0;
    }
    for (size_t j = 0; j < indices.size(); ++j) {
      if (!indices[j].defined()) continue;
      Entry e{static_cast<int64_t>(j), kernels::broadcast_strides(indices[j], b_),
              kernels::Reader<i64>(indices[j])};
      entries_.push_back(std::move(e));
    }
  }

  const Shape& result_shape() const { return result_; }

  // Calls f(element offset in self, aux) for every element of the result in row-major order,
  // aux = sum_p oi[p] * aux_strides[p] (e.g. the element's offset in index_put's values). The
  // index tensors are read once per element of B (their offsets in self summed per B position),
  // not once per element of the result.
  template <class F>
  void visit(const Shape& aux_strides, F&& f) const {
    for (int64_t s : result_)
      if (s == 0) return;
    const std::vector<int64_t> b_off = b_offsets();
    // Per result dim: its stride in self (or 0), in B's flat positions (or 0), in aux.
    const size_t r = result_.size();
    Shape self_st(r, 0), b_st(r, 0), aux_st = aux_strides.empty() ? Shape(r, 0) : aux_strides;
    int64_t flat = 1;
    for (size_t k = b_.size(); k-- > 0;) {
      b_st[static_cast<size_t>(b_start_) + k] = flat;
      flat *= b_[k];
    }
    for (size_t p = 0; p < r; ++p)
      if (self_dim_of_[p] >= 0) self_st[p] = self_.strides()[self_dim_of_[p]];
    const std::array<Shape, 3> walk{self_st, b_st, aux_st};
    for_each_offset(result_, walk, [&](const std::array<int64_t, 3>& at) {
      f(at[0] + b_off[static_cast<size_t>(at[1])], at[2]);
    });
  }

 private:
  // Per position of B (row-major): the sum over the index tensors of index * self's stride of
  // its dim, each index checked against its dim (negative ones wrapped).
  std::vector<int64_t> b_offsets() const {
    std::vector<int64_t> out;
    out.reserve(static_cast<size_t>(shape_numel(b_)));
    for_each_index(b_, [&](const std::vector<int64_t>& bidx) {
      int64_t off = 0;
      for (const Entry& e : entries_) {
        int64_t v = e.read(dot(bidx, e.strides));
        int64_t size = self_.sizes()[e.dim];
        if (v < -size || v >= size) out_of_bounds(ctx_, v, e.dim, size);
        if (v < 0) v += size;
        off += v * self_.strides()[e.dim];
      }
      out.push_back(off);
    });
    return out;
  }

  void append_b() {
    b_start_ = static_cast<int64_t>(result_.size());
    result_.insert(result_.end(), b_.begin(), b_.end());
    self_dim_of_.insert(self_dim_of_.end(), b_.size(), -1);
  }
  struct Entry {
    int64_t dim;
    Shape strides;  // the index tensor read broadcast to B
    kernels::Reader<i64> read;
  };
  const KernelContext& ctx_;
  const Tensor& self_;
  Shape b_, result_;
  std::vector<int64_t> self_dim_of_;  // per result dim: the self dim it walks, or -1 (a B dim)
  int64_t b_start_ = 0;
  std::vector<Entry> entries_;
};

Tensor index_kernel(const KernelContext& ctx) {
  const Tensor& self = ctx.tensor("self");
  std::vector<Tensor> indices = ctx.tensor_list("indices");
  if (static_cast<int64_t>(indices.size()) > self.dim())
    ctx.fail("too many indices for a tensor of shape " + shape_str(self.sizes()));
  IndexPlan plan(ctx, self, indices);
  Tensor out = Tensor::empty(plan.result_shape(), self.dtype());
  dispatch(self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = self.data<T>();
    T* dst = out.data<T>();
    int64_t k = 0;
    plan.visit({}, [&](int64_t off, int64_t) { dst[k++] = src[off]; });
  });
  return out;
}

// index_put's mask form (indexing_ops.cpp): the mask at index position `at` becomes one int64
// index tensor per mask dim holding the coordinates of its True entries, in row-major order.
void masks_to_positions(std::vector<Tensor>& indices) {
  for (size_t at = 0; at < indices.size(); ++at) {
    const Tensor& m0 = indices[at];
    if (!m0.defined() || (m0.dtype() != DType::Bool && m0.dtype() != DType::UInt8)) continue;
    Tensor m = m0.contiguous();
    int64_t dims = m.dim();
    std::vector<std::vector<int64_t>> coords(static_cast<size_t>(dims));
    const uint8_t* bits = reinterpret_cast<const uint8_t*>(m.data_ptr());
    int64_t k = 0;
    for_each_index(m.sizes(), [&](const std::vector<int64_t>& i) {
      if (bits[k++] != 0)
        for (int64_t d = 0; d < dims; ++d) coords[d].push_back(i[d]);
    });
    std::vector<Tensor> out(indices.begin(), indices.begin() + at);
    for (int64_t d = 0; d < dims; ++d) {
      Tensor t = Tensor::empty({static_cast<int64_t>(coords[d].size())}, DType::Int64);
      std::copy(coords[d].begin(), coords[d].end(), t.data<int64_t>());
      out.push_back(t);
    }
    indices = std::move(out);
    return;
  }
}

Tensor index_put_kernel(const KernelContext& ctx) {
  const Tensor& self = ctx.tensor("self");
  const Tensor& values = ctx.tensor("values");
  std::vector<Tensor> indices = ctx.tensor_list("indices");
  masks_to_positions(indices);
  bool accumulate = ctx.arg("accumulate").to_bool();
  if (static_cast<int64_t>(indices.size()) > self.dim())
    ctx.fail("too many indices for a tensor of shape " + shape_str(self.sizes()));
  Tensor out = self.clone();  // row-major: the plan's offsets apply to it as to self's layout
  IndexPlan plan(ctx, out, indices);
  Shape vstrides = kernels::broadcast_strides(values, plan.result_shape());
  dispatch(self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = values.data<T>();
    T* dst = out.data<T>();
    plan.visit(vstrides, [&](int64_t off, int64_t at) {
      T x = src[at];
      dst[off] = accumulate ? add_values(dst[off], x) : x;
    });
  });
  return out;
}

using namespace kernels;

// Multi-index helpers over contiguous row-major shapes.
Shape row_major_strides(const Shape& s) {
  Shape st(s.size(), 1);
  for (int64_t d = static_cast<int64_t>(s.size()) - 2; d >= 0; --d) st[d] = st[d + 1] * s[d + 1];
  return st;
}

Tensor index_add(const KernelContext& ctx) {
  Tensor out = ctx.tensor("self").contiguous().clone();
  Tensor idx = ctx.tensor("index").contiguous();
  Tensor src = ctx.tensor("source").contiguous();
  if (out.numel() == 0) return out;
  int64_t rank = out.dim();
  int64_t dim = rank == 0 ? 0 : wrap_dim(ctx.arg("dim").to_int(), rank, "%" + ctx.node().name());
  Shape osz = rank == 0 ? Shape{1} : out.sizes();
  int64_t n = idx.numel();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= osz[d];
  for (size_t d = dim + 1; d < osz.size(); ++d) inner *= osz[d];
  std::vector<int64_t> ix(n);
  Reader<i64> ri(idx);
  for (int64_t i = 0; i < n; ++i) {
    ix[i] = ri(i);
    if (ix[i] < 0 || ix[i] >= osz[dim])
      ctx.fail("index_add: index " + std::to_string(ix[i]) + " is out of bounds for dimension " +
               std::to_string(dim) + " with size " + std::to_string(osz[dim]));
  }
  const Arg& alpha = ctx.arg("alpha");
  dispatch_compute(computation_dtype(out.dtype()), [&](auto tag) {
    using C = typename decltype(tag)::type;
    Reader<C> rs(src), ro(out);
    Writer<C> wo(out);
    C a = scalar_as<C>(alpha);
    bool unit = alpha.to_double() == 1.0;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < n; ++i)
        for (int64_t k = 0; k < inner; ++k) {
          int64_t to = o * (osz[dim] * inner) + ix[i] * inner + k;
          int64_t from = o * (n * inner) + i * inner + k;
          C v = rs(from);
          if constexpr (std::is_same_v<C, bool>) wo(to, ro(to) || (a && v));
          else wo(to, stax_scalar::add(ro(to), unit ? v : stax_scalar::mul(a, v)));
        }
  });
  return out;
}

Tensor scatter_reduce(const KernelContext& ctx) {
  Tensor out = ctx.tensor("self").contiguous().clone();
  Tensor idx = ctx.tensor("index").contiguous();
  Tensor src = ctx.tensor("src");
  const std::string red = ctx.arg("reduce").str();
  bool include_self = ctx.arg("include_self").to_bool();
  int64_t rank = out.dim();
  if (idx.numel() == 0) return out;
  int64_t dim = rank == 0 ? 0 : wrap_dim(ctx.arg("dim").to_int(), rank, "%" + ctx.node().name());
  // A 0-d self, index or src counts as 1-d (the rule checked the ranks that way).
  Shape osz = rank == 0 ? Shape{1} : out.sizes();
  Shape isz = idx.dim() == 0 ? Shape{1} : idx.sizes();
  Shape ost = row_major_strides(osz);
  Shape sst = src.dim() == 0 ? Shape{0} : src.strides();
  Shape ist = row_major_strides(isz);
  std::vector<int64_t> target(idx.numel()), source(idx.numel());
  Reader<i64> ri(idx);
  for (int64_t e = 0; e < idx.numel(); ++e) {
    int64_t rem = e, to = 0, from = 0;
    for (size_t d = 0; d < isz.size(); ++d) {
      int64_t i_d = rem / ist[d];
      rem %= ist[d];
      int64_t v = i_d;
      if (static_cast<int64_t>(d) == dim) {
        v = ri(e);
        if (v < 0) v += osz[d];
        if (v < 0 || v >= osz[d])
          ctx.fail("scatter_reduce: index " + std::to_string(ri(e)) +
                   " is out of bounds for dimension " + std::to_string(d) + " with size " +
                   std::to_string(osz[d]));
      } else if (i_d >= osz[d]) {
        ctx.fail("scatter_reduce: index tensor is larger than self in dimension " +
                 std::to_string(d));
      }
      to += v * ost[d];
      from += i_d * sst[d];
    }
    target[e] = to;
    source[e] = from;
  }
  std::vector<int64_t> counts(out.numel(), include_self ? 1 : 0);
  std::vector<bool> touched(out.numel(), false);
  dispatch_compute(computation_dtype(out.dtype()), [&](auto tag) {
    using C = typename decltype(tag)::type;
    if constexpr (std::is_same_v<C, bool>) {
      // As torch: sum and amax are `or`, prod and amin `and`; mean has no bool form.
      if (red == "mean") ctx.fail("scatter_reduce: mean is not implemented for bool tensors");
      const bool is_or = red == "sum" || red == "amax";
      Reader<bool> rs(src), ro(out);
      Writer<bool> wo(out);
      std::vector<char> acc(static_cast<size_t>(out.numel()));
      for (int64_t i = 0; i < out.numel(); ++i) acc[i] = ro(i);
      for (size_t e = 0; e < target.size(); ++e) {
        int64_t t = target[e];
        bool v = rs(source[e]);
        bool first = !include_self && !touched[t];
        touched[t] = true;
        acc[t] = first ? v : is_or ? (acc[t] || v) : (acc[t] && v);
      }
      for (int64_t i = 0; i < out.numel(); ++i) wo(i, acc[i] != 0);
    } else {
      Reader<C> rs(src), ro(out);
      Writer<C> wo(out);
      std::vector<C> acc(out.numel());
      for (int64_t i = 0; i < out.numel(); ++i) acc[i] = ro(i);
      for (size_t e = 0; e < target.size(); ++e) {
        int64_t t = target[e];
        C v = rs(source[e]);
        if (!include_self && !touched[t]) {
          touched[t] = true;
          acc[t] = v;
          counts[t] = 1;
          continue;
        }
        touched[t] = true;
        if (red == "sum" || red == "mean") acc[t] = stax_scalar::add(acc[t], v);
        else if (red == "prod") acc[t] = stax_scalar::mul(acc[t], v);
        else if (red == "amax") acc[t] = stax_scalar::maximum(acc[t], v);
        else acc[t] = stax_scalar::minimum(acc[t], v);
        if (red == "mean") ++counts[t];
      }
      for (int64_t i = 0; i < out.numel(); ++i) {
        C r = acc[i];
        if (red == "mean" && counts[i] > 1) {
          C c = static_cast<C>(counts[i]);
          r = std::is_floating_point_v<C> ? stax_scalar::truediv(r, c)
                                          : stax_scalar::floordiv(r, c);
        }
        wo(i, r);
      }
    }
  });
  return out;
}

}  // namespace

// nonzero: the multi-indices of the nonzero elements (NaN counts as nonzero), in row-major order.
Tensor nonzero_kernel(const KernelContext& ctx) {
  const Tensor& x = ctx.tensor("self");
  const int64_t rank = x.dim();
  std::vector<int64_t> out, idx(static_cast<size_t>(rank), 0);
  int64_t rows = 0;
  kernels::Reader<double> read(x);
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (read(x.linear_offset(i) - x.storage_offset()) != 0) {
      out.insert(out.end(), idx.begin(), idx.end());
      ++rows;
    }
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++idx[static_cast<size_t>(d)] < x.sizes()[static_cast<size_t>(d)]) break;
      idx[static_cast<size_t>(d)] = 0;
    }
  }
  return Tensor::from_vector({rows, rank}, out);
}

void register_indexing_kernels(InterpreterTable& t) {
  t.add("nonzero.default", nonzero_kernel);
  t.add("_local_scalar_dense.default", kernels::run_decomposition);
  t.add("cat.default", cat_kernel);
  t.add("gather.default", gather_kernel);
  t.add("scatter.src", [](const KernelContext& c) { return scatter_kernel(c, false); });
  t.add("scatter.value", [](const KernelContext& c) { return scatter_kernel(c, false); });
  t.add("scatter_add.default", [](const KernelContext& c) { return scatter_kernel(c, true); });
  t.add("index_select.default", index_select_kernel);
  t.add("index.Tensor", index_kernel);
  t.add("index_put.default", index_put_kernel);
  // Composite ops: their decomposition, on the interpreter.
  for (const char* op :
         {"stack.default", "repeat.default", "flip.default", "roll.default", "tril.default",
          "triu.default", "masked_fill.Scalar", "masked_fill.Tensor"})
    t.add(op, kernels::run_decomposition);

  t.add("index_add.default", index_add);

  t.add("scatter_reduce.two", scatter_reduce);
  // ---- Composite ops: their decomposition
  for (const char* op :
         {"diagonal.default", "diag.default", "diag_embed.default", "take.default",
          "index_fill.int_Scalar", "index_fill.int_Tensor", "rot90.default", "narrow_copy.default",
          "isin.Tensor_Tensor", "bucketize.Tensor", "searchsorted.Tensor", "index_copy.default",
          "put.default", "masked_scatter.default", "unfold.default", "block_diag.default",
          "slice_scatter.default", "select_scatter.default", "index_reduce.default",
          "scatter.reduce", "scatter.value_reduce"})
    t.add(op, kernels::run_decomposition);
}

}  // namespace stax
