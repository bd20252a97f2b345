// cpu_cpp's accumulating writes, the externs "scatter_add" and "index_put" (core/ops/indexing/
// lowering.cpp lowers scatter_add.default and index_put.default to them for float32 / float64 /
// int32 / int64 values and int64 indices: the embedding's gradient, nearest upsampling's):
//   scatter_add: tensors self, index, src, the output; scalars {dim}:
//     out = self;  out[i with i[dim] replaced by index[i]] += src[i]  for every position i of
//     index in row-major order;
//   index_put: tensors self, the index tensors, values, the output; scalars {accumulate, L, L
//     flags}: out = self; out[the indexed position of r] (+)= values[r] for every position r of
//     the indexed result (torch's advanced indexing: the index tensors broadcast together) in
//     row-major order, negative indices wrapped.
// Each addition is in the value's own type (integers wrap around), exactly as the interpreter's
// kernels (core/ops/indexing/kernels.cpp) add them. Two positions write the same element only
// when they differ in `dim` (scatter_add) or in the indexed dims (index_put) alone, and every task
// below walks a slice of another dim whole, in row-major order, so each element receives its
// terms (or its last write) in the interpreter's order: bit for bit the interpreter's result, on
// any thread count. The tasks split the widest such dim (the embedding's feature columns, the
// upsampled tensor's channels) on cpu_cpp's pool.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "plugins/cpu_cpp/conv_gemm.h"
#include "plugins/cpu_cpp/extern_kernels.h"

namespace stax::cpu {

namespace {

using sdk::DType;
using sdk::PluginError;
using sdk::TensorView;

[[noreturn]] void bad(const std::string& what) {
  throw PluginError(STAX_ERROR_INVALID_ARGUMENT, "cpu_cpp extern kernel 'scatter_add': " + what);
}

[[noreturn]] void bad_put(const std::string& what) {
  throw PluginError(STAX_ERROR_INVALID_ARGUMENT, "cpu_cpp extern kernel 'index_put': " + what);
}

// Below this many index positions the walk stays on the calling thread.
constexpr int64_t kParallelPositions = int64_t{1} << 14;

// Calls f(o) for every multi-index i of `sizes` in row-major order, o[k] = base[k] + sum_d i[d] *
// strides[k][d], the offsets moved along as the index moves.
template <class F>
void walk(const std::vector<int64_t>& sizes, const std::array<std::vector<int64_t>, 3>& strides,
          std::array<int64_t, 3> o, F&& f) {
  for (int64_t s : sizes)
    if (s <= 0) return;
  const size_t r = sizes.size();
  std::vector<int64_t> idx(r, 0);
  const int64_t inner = sizes[r - 1];
  for (;;) {
    std::array<int64_t, 3> at = o;
    for (int64_t j = 0; j < inner; ++j) {
      f(at);
      for (size_t k = 0; k < 3; ++k) at[k] += strides[k][r - 1];
    }
    size_t d = r - 1;
    for (;;) {
      if (d == 0) return;
      --d;
      for (size_t k = 0; k < 3; ++k) o[k] += strides[k][d];
      if (++idx[d] < sizes[d]) break;
      for (size_t k = 0; k < 3; ++k) o[k] -= strides[k][d] * sizes[d];
      idx[d] = 0;
    }
  }
}

template <class T>
T add(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  else
    return a + b;
}

// A 0-d tensor as one element of shape (1,).
std::vector<int64_t> sizes_of(const TensorView& t) {
  return t.sizes.empty() ? std::vector<int64_t>{1} : t.sizes;
}
std::vector<int64_t> strides_of(const TensorView& t) {
  return t.sizes.empty() ? std::vector<int64_t>{1} : t.strides;
}

bool row_major(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  int64_t want = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    if (sizes[d] != 1 && strides[d] != want) return false;
    want *= sizes[d];
  }
  return true;
}

// out = self (one memcpy when both are row-major, else element by element).
template <class T>
void copy_self(const TensorView& self, const TensorView& out) {
  const T* sp = static_cast<const T*>(self.data) + self.offset;
  T* op = static_cast<T*>(out.data) + out.offset;
  const std::vector<int64_t> osz = sizes_of(out), ost = strides_of(out), sst = strides_of(self);
  if (row_major(osz, ost) && row_major(osz, sst)) {
    int64_t n = 1;
    for (int64_t s : osz) n *= s;
    if (n > 0) std::memcpy(op, sp, static_cast<size_t>(n) * sizeof(T));
    return;
  }
  walk(osz, {ost, sst, std::vector<int64_t>(osz.size(), 0)}, {0, 0, 0},
       [&](const std::array<int64_t, 3>& at) { op[at[0]] = sp[at[1]]; });
}

template <class T>
void scatter_add(const TensorView& self, const TensorView& index, const TensorView& src,
                 const TensorView& out, int64_t dim, ThreadPool* pool) {
  const T* vp = static_cast<const T*>(src.data) + src.offset;
  const int64_t* ip = static_cast<const int64_t*>(index.data) + index.offset;
  T* op = static_cast<T*>(out.data) + out.offset;
  const std::vector<int64_t> osz = sizes_of(out), ost = strides_of(out);
  copy_self<T>(self, out);
  const std::vector<int64_t> isz = sizes_of(index);
  std::vector<int64_t> place = ost;
  place[static_cast<size_t>(dim)] = 0;  // the index's value replaces i[dim]
  const std::array<std::vector<int64_t>, 3> st{strides_of(index), strides_of(src), place};
  const int64_t dim_stride = ost[static_cast<size_t>(dim)], dim_size = osz[static_cast<size_t>(dim)];
  int64_t positions = 1;
  for (int64_t s : isz) positions *= s;
  // The split: the widest dim other than `dim` (none: one task).
  int64_t split = -1;
  for (size_t d = 0; d < isz.size(); ++d)
    if (static_cast<int64_t>(d) != dim && (split < 0 || isz[d] > isz[static_cast<size_t>(split)]))
      split = static_cast<int64_t>(d);
  const int64_t extent = split < 0 ? 1 : isz[static_cast<size_t>(split)];
  const int64_t tasks = positions < kParallelPositions || !pool || pool->threads() <= 1
                            ? 1
                            : std::min<int64_t>(extent, 4 * static_cast<int64_t>(pool->threads()));
  std::atomic<int64_t> wrong{INT64_MIN};
  conv::parallel(tasks > 1 ? pool : nullptr, tasks, [&](int64_t t) {
    std::vector<int64_t> part = isz;
    std::array<int64_t, 3> base{0, 0, 0};
    if (split >= 0) {
      const int64_t lo = extent * t / tasks, hi = extent * (t + 1) / tasks;
      part[static_cast<size_t>(split)] = hi - lo;
      for (size_t k = 0; k < 3; ++k) base[k] = lo * st[k][static_cast<size_t>(split)];
    }
    walk(part, st, base, [&](const std::array<int64_t, 3>& at) {
      const int64_t v = ip[at[0]];
      if (v < 0 || v >= dim_size) {
        wrong.store(v, std::memory_order_relaxed);
        return;
      }
      T& d = op[at[2] + v * dim_stride];
      d = add(d, vp[at[1]]);
    });
  });
  const int64_t v = wrong.load();
  if (v != INT64_MIN)
    bad("index " + std::to_string(v) + " is out of bounds for dimension " + std::to_string(dim) +
        " with size " + std::to_string(dim_size));
}

// index_put's plan (the interpreter's IndexPlan, core/ops/indexing/kernels.cpp): the index tensors
// broadcast to B; the result's dims are self's non-indexed dims in order with B's dims where the
// (adjacent) indexed dims were, or first. Per result dim: its stride in out (0 for a B dim), its
// stride in B's flat positions (0 for a self dim), its stride in values (broadcast).
struct IndexPlan {
  std::vector<int64_t> result, out_st, b_st, v_st;
  std::vector<int64_t> b_off;  // per B position: the sum of index * out's stride of its dim
  int64_t split = -1;          // the widest result dim that walks a dim of self (none: -1)
};

std::vector<int64_t> broadcast(const std::vector<std::vector<int64_t>>& shapes) {
  size_t r = 0;
  for (const auto& s : shapes) r = std::max(r, s.size());
  std::vector<int64_t> b(r, 1);
  for (const auto& s : shapes)
    for (size_t k = 0; k < s.size(); ++k) {
      int64_t& d = b[r - s.size() + k];
      if (s[k] != 1 && d != 1 && s[k] != d) bad_put("index tensors do not broadcast together");
      if (s[k] != 1) d = s[k];
    }
  return b;
}

// Strides of t read broadcast to `to` (right-aligned; 0 along broadcast dims).
std::vector<int64_t> broadcast_strides(const TensorView& t, const std::vector<int64_t>& to) {
  std::vector<int64_t> st(to.size(), 0);
  const size_t r = t.sizes.size();
  if (r > to.size()) bad_put("values have more dims than the indexed result");
  for (size_t k = 0; k < r; ++k) {
    const size_t at = to.size() - r + k;
    if (t.sizes[k] != 1 && t.sizes[k] != to[at]) bad_put("values do not broadcast to the indexed result");
    st[at] = t.sizes[k] == 1 ? 0 : t.strides[k];
  }
  return st;
}

IndexPlan plan_index_put(const TensorView& out, const std::vector<const TensorView*>& index,
                         const TensorView& values) {
  const std::vector<int64_t> osz = sizes_of(out), ost = strides_of(out);
  std::vector<std::vector<int64_t>> shapes;
  int64_t first = -1, last = -1;
  for (size_t j = 0; j < index.size(); ++j) {
    if (!index[j]) continue;
    shapes.push_back(index[j]->sizes);
    if (first < 0) first = static_cast<int64_t>(j);
    last = static_cast<int64_t>(j);
  }
  const std::vector<int64_t> B = broadcast(shapes);
  bool adjacent = true;
  for (int64_t j = first; j <= last; ++j) adjacent = adjacent && index[static_cast<size_t>(j)];
  IndexPlan p;
  auto append_b = [&] {
    int64_t flat = 1;
    const size_t at = p.result.size();
    p.result.insert(p.result.end(), B.begin(), B.end());
    p.out_st.insert(p.out_st.end(), B.size(), 0);
    p.b_st.insert(p.b_st.end(), B.size(), 0);
    for (size_t k = B.size(); k-- > 0;) {
      p.b_st[at + k] = flat;
      flat *= B[k];
    }
  };
  if (!adjacent) append_b();
  for (size_t d = 0; d < osz.size(); ++d) {
    if (adjacent && static_cast<int64_t>(d) == first) append_b();
    if (d < index.size() && index[d]) continue;
    p.result.push_back(osz[d]);
    p.out_st.push_back(ost[d]);
    p.b_st.push_back(0);
  }
  p.v_st = broadcast_strides(values, p.result);
  for (size_t k = 0; k < p.result.size(); ++k)
    if (p.out_st[k] != 0 && (p.split < 0 || p.result[k] > p.result[static_cast<size_t>(p.split)]))
      p.split = static_cast<int64_t>(k);
  // The B offsets, each index checked against its dim (negative ones wrapped).
  int64_t nb = 1;
  for (int64_t s : B) nb *= s;
  p.b_off.assign(static_cast<size_t>(nb), 0);
  for (size_t j = 0; j < index.size(); ++j) {
    if (!index[j]) continue;
    const TensorView& ix = *index[j];
    const int64_t* ip = static_cast<const int64_t*>(ix.data) + ix.offset;
    std::vector<int64_t> st(B.size(), 0);
    for (size_t k = 0; k < ix.sizes.size(); ++k)
      st[B.size() - ix.sizes.size() + k] = ix.sizes[k] == 1 ? 0 : ix.strides[k];
    const int64_t size = osz[j];
    int64_t e = 0;
    walk(B.empty() ? std::vector<int64_t>{1} : B,
         {B.empty() ? std::vector<int64_t>{0} : st, std::vector<int64_t>(std::max<size_t>(B.size(), 1), 0),
          std::vector<int64_t>(std::max<size_t>(B.size(), 1), 0)},
         {0, 0, 0}, [&](const std::array<int64_t, 3>& at) {
           int64_t v = ip[at[0]];
           if (v < -size || v >= size)
             bad_put("index " + std::to_string(v) + " is out of bounds for dimension " +
                     std::to_string(j) + " with size " + std::to_string(size));
           if (v < 0) v += size;
           p.b_off[static_cast<size_t>(e++)] += v * ost[j];
         });
  }
  return p;
}

template <class T>
void index_put(const TensorView& self, const std::vector<const TensorView*>& index,
               const TensorView& values, const TensorView& out, bool accumulate, ThreadPool* pool) {
  const T* vp = static_cast<const T*>(values.data) + values.offset;
  T* op = static_cast<T*>(out.data) + out.offset;
  copy_self<T>(self, out);
  const IndexPlan p = plan_index_put(out, index, values);
  int64_t positions = 1;
  for (int64_t s : p.result) positions *= s;
  if (positions == 0) return;
  const int64_t extent = p.split < 0 ? 1 : p.result[static_cast<size_t>(p.split)];
  const int64_t tasks = positions < kParallelPositions || !pool || pool->threads() <= 1
                            ? 1
                            : std::min<int64_t>(extent, 4 * static_cast<int64_t>(pool->threads()));
  const std::array<std::vector<int64_t>, 3> st{p.out_st, p.b_st, p.v_st};
  conv::parallel(tasks > 1 ? pool : nullptr, tasks, [&](int64_t t) {
    std::vector<int64_t> part = p.result;
    std::array<int64_t, 3> base{0, 0, 0};
    if (p.split >= 0) {
      const int64_t lo = extent * t / tasks, hi = extent * (t + 1) / tasks;
      part[static_cast<size_t>(p.split)] = hi - lo;
      for (size_t k = 0; k < 3; ++k) base[k] = lo * st[k][static_cast<size_t>(p.split)];
    }
    walk(part, st, base, [&](const std::array<int64_t, 3>& at) {
      T& d = op[at[0] + p.b_off[static_cast<size_t>(at[1])]];
      d = accumulate ? add(d, vp[at[2]]) : vp[at[2]];
    });
  });
}

}  // namespace

void run_index_put(const std::vector<TensorView>& t, size_t num_inputs,
                   const std::vector<double>& scalars, ThreadPool* pool) {
  // scalars: accumulate, the indices list's length L, then L flags (1: an index tensor there)
  if (scalars.size() < 2 || scalars.size() != 2 + static_cast<size_t>(scalars[1]))
    bad_put("expected accumulate, the indices' count and one flag per index");
  const size_t L = static_cast<size_t>(scalars[1]);
  size_t defined = 0;
  for (size_t k = 0; k < L; ++k) defined += scalars[2 + k] != 0 ? 1 : 0;
  if (defined == 0 || num_inputs != 2 + defined || t.size() != num_inputs + 1)
    bad_put("takes self, the index tensors, values and one output");
  const TensorView &self = t[0], &values = t[num_inputs - 1], &out = t[num_inputs];
  for (const TensorView& v : t)
    if (v.strides.size() != v.sizes.size()) bad_put("sizes and strides differ in rank");
  if (self.sizes != out.sizes || self.dtype != out.dtype || values.dtype != out.dtype)
    bad_put("self, values and the output must share one shape and dtype");
  if (L > std::max<size_t>(out.sizes.size(), 1)) bad_put("too many indices");
  std::vector<const TensorView*> index(L, nullptr);
  for (size_t k = 0, at = 1; k < L; ++k) {
    if (scalars[2 + k] == 0) continue;
    if (t[at].dtype != DType::Int64) bad_put("index tensors must be int64");
    index[k] = &t[at++];
  }
  const bool acc = scalars[0] != 0;
  switch (out.dtype) {
    case DType::Float32: return index_put<float>(self, index, values, out, acc, pool);
    case DType::Float64: return index_put<double>(self, index, values, out, acc, pool);
    case DType::Int32: return index_put<int32_t>(self, index, values, out, acc, pool);
    case DType::Int64: return index_put<int64_t>(self, index, values, out, acc, pool);
    default: bad_put("only float32, float64, int32 and int64 values are supported");
  }
}

void run_scatter_add(const std::vector<TensorView>& t, size_t num_inputs,
                     const std::vector<double>& scalars, ThreadPool* pool) {
  if (num_inputs != 3 || t.size() != 4) bad("takes self, index, src and one output");
  if (scalars.size() != 1) bad("expected 1 scalar (dim), got " + std::to_string(scalars.size()));
  const TensorView &self = t[0], &index = t[1], &src = t[2], &out = t[3];
  for (const TensorView& v : t) {
    if (v.strides.size() != v.sizes.size()) bad("sizes and strides differ in rank");
    int64_t n = 1;
    for (int64_t s : v.sizes) n *= s;
    if (!v.data && n > 0) bad("null data pointer");
  }
  if (index.dtype != DType::Int64) bad("index must be int64");
  if (self.dtype != out.dtype || src.dtype != out.dtype) bad("self, src and the output must share one dtype");
  if (self.sizes != out.sizes) bad("the output must have self's shape");
  const std::vector<int64_t> osz = sizes_of(out), isz = sizes_of(index), ssz = sizes_of(src);
  if (isz.size() != osz.size() || ssz.size() != osz.size())
    bad("index, src and self must have the same number of dimensions");
  const int64_t rank = static_cast<int64_t>(osz.size());
  int64_t dim = static_cast<int64_t>(scalars[0]);
  if (dim < 0) dim += rank;
  if (dim < 0 || dim >= rank) bad("dim " + std::to_string(dim) + " out of range");
  for (int64_t d = 0; d < rank; ++d) {
    const size_t k = static_cast<size_t>(d);
    if (isz[k] > ssz[k] || (d != dim && isz[k] > osz[k]))
      bad("index is larger than src or self in dimension " + std::to_string(d));
  }
  switch (out.dtype) {
    case DType::Float32: return scatter_add<float>(self, index, src, out, dim, pool);
    case DType::Float64: return scatter_add<double>(self, index, src, out, dim, pool);
    case DType::Int32: return scatter_add<int32_t>(self, index, src, out, dim, pool);
    case DType::Int64: return scatter_add<int64_t>(self, index, src, out, dim, pool);
    default: bad("only float32, float64, int32 and int64 values are supported");
  }
}

}  // namespace stax::cpu
