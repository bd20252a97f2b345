// cpu_cpp's extern "convolution" (core/ops/nn/lowering.cpp describes the scalars; the design is
// in docs/convolution.md): the inputs as contiguous float / double values (the tensors' own
// memory when they already are), then
//   * non-transposed: conv::correlate (conv_gemm.h): gathers on the pool, matrix products on the
//     `blas:` library, batched over samples and groups (one output channel per group: the direct
//     form of conv_direct.h, no GEMM);
//   * transposed with stride 1: the same, with the weight's channel dims swapped, its taps
//     reversed and the padding d*(k-1) - p;
//   * transposed with a stride: col (Cog*K x I) = W_gᵀ @ X_bg, one batched product per chunk of
//     samples, then col2im adds col[(co, k), i] into out[co, i*s - p + k*d], a plane per task;
//   * bias added last. float16 / bfloat16 are widened to float and rounded once at the end.
// Results agree with the interpreter's direct loop (which sums in double) within the gemm bound:
// every output is one GEMM chain over (ci, k).
#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include "plugins/cpu_cpp/conv_gemm.h"
#include "plugins/cpu_cpp/extern_kernels.h"
#include "stax/sdk/half_bits.hpp"

namespace stax::cpu {

namespace {

using sdk::DType;
using sdk::PluginError;
using sdk::TensorView;

[[noreturn]] void bad(const std::string& what) {
  throw PluginError(STAX_ERROR_INVALID_ARGUMENT, "cpu_cpp extern kernel 'convolution': " + what);
}

int64_t numel(const TensorView& t) {
  int64_t n = 1;
  for (int64_t s : t.sizes) n *= s;
  return n;
}

// Row-major element offsets of a strided view, visited in order.
template <class F>
void for_each(const TensorView& t, F&& f) {
  size_t r = t.sizes.size();
  int64_t n = numel(t);
  if (n == 0) return;
  std::vector<int64_t> idx(r, 0);
  int64_t off = t.offset;
  for (int64_t e = 0; e < n; ++e) {
    f(e, off);
    for (size_t d = r; d-- > 0;) {
      off += t.strides[d];
      if (++idx[d] < t.sizes[d]) break;
      off -= t.strides[d] * t.sizes[d];
      idx[d] = 0;
    }
  }
}

// The runs of a strided view: the trailing dims that are contiguous make one run of `len`
// elements (a permuted tensor is copied plane by plane, not element by element), numbered
// row-major by the leading `dims` dims; run q starts at run_offset(t, dims, q).
int64_t run_length(const TensorView& t, size_t* dims) {
  size_t d = t.sizes.size();
  int64_t len = 1;
  while (d > 0 && (t.sizes[d - 1] == 1 || t.strides[d - 1] == len)) len *= t.sizes[--d];
  *dims = d;
  return len;
}

int64_t run_offset(const TensorView& t, size_t dims, int64_t q) {
  int64_t off = t.offset;
  for (size_t k = dims; k-- > 0;) {
    off += q % t.sizes[k] * t.strides[k];
    q /= t.sizes[k];
  }
  return off;
}

// A strided (or other-dtype) input as contiguous C values, written into v (numel(t) of them):
// the runs are copied on the pool, ~64K elements a task. The VJP's weight gradient reads both of
// its operands as permuted views (a ResNet block: 2 x 2 MB per call); copied on the calling
// thread alone, they were serial work in every 2-thread step.
template <class C>
void load_into(const TensorView& t, C* v, ThreadPool* pool) {
  const int64_t n = numel(t);
  if (n == 0) return;
  size_t dims = 0;
  const int64_t len = run_length(t, &dims), runs = n / len;
  const int64_t per_task = std::max<int64_t>(1, (int64_t{1} << 16) / len);
  const int64_t tasks = (runs + per_task - 1) / per_task;
  auto copy = [&](auto convert) {
    conv::parallel(pool, tasks, [&](int64_t k) {
      const int64_t q1 = std::min(runs, (k + 1) * per_task);
      for (int64_t q = k * per_task; q < q1; ++q) {
        const int64_t off = run_offset(t, dims, q);
        C* dst = v + q * len;
        for (int64_t i = 0; i < len; ++i) dst[i] = convert(off + i);
      }
    });
  };
  switch (t.dtype) {
    case DType::Float32: {
      const float* p = static_cast<const float*>(t.data);
      copy([p](int64_t e) { return static_cast<C>(p[e]); });
      break;
    }
    case DType::Float64: {
      const double* p = static_cast<const double*>(t.data);
      copy([p](int64_t e) { return static_cast<C>(p[e]); });
      break;
    }
    case DType::Float16:
    case DType::BFloat16: {
      const uint16_t* p = static_cast<const uint16_t*>(t.data);
      if (t.dtype == DType::Float16)
        copy([p](int64_t e) { return static_cast<C>(stax_f16::half_to_float(p[e])); });
      else
        copy([p](int64_t e) { return static_cast<C>(stax_f16::bf16_to_float(p[e])); });
      break;
    }
    default: bad("only floating dtypes are supported");
  }
}

template <class C>
void store(const TensorView& t, const std::vector<C>& v) {
  switch (t.dtype) {
    case DType::Float32: {
      float* p = static_cast<float*>(t.data);
      for_each(t, [&](int64_t e, int64_t off) { p[off] = static_cast<float>(v[e]); });
      break;
    }
    case DType::Float64: {
      double* p = static_cast<double*>(t.data);
      for_each(t, [&](int64_t e, int64_t off) { p[off] = static_cast<double>(v[e]); });
      break;
    }
    default: {
      uint16_t* p = static_cast<uint16_t*>(t.data);
      bool h = t.dtype == DType::Float16;
      for_each(t, [&](int64_t e, int64_t off) {
        float f = static_cast<float>(v[e]);
        p[off] = h ? stax_f16::float_to_half(f) : stax_f16::float_to_bf16(f);
      });
    }
  }
}

template <class C>
void multiply(const conv::Exec& ex, const sdk::gemm::Problem<C>& p) {
  try {
    ex.gemm->multiply(p, {});
  } catch (const sdk::gemm::OutOfMemory& e) {
    throw PluginError(STAX_ERROR_RUNTIME, std::string("cpu_cpp extern kernel 'convolution': ") +
                                              e.what() + " (" + ex.gemm->describe() + ")");
  }
}

// For every kernel tap kf and input position a the output position b = a*s - p + k*d, when in
// range: f(kf, a_flat, b_flat) (a transposed convolution's scatter).
template <class F>
void for_each_tap(const conv::Geometry& g, const int64_t* a_ext, const int64_t* b_ext, F&& f) {
  for (int64_t k0 = 0; k0 < g.k[0]; ++k0)
    for (int64_t k1 = 0; k1 < g.k[1]; ++k1)
      for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
        int64_t kf = (k0 * g.k[1] + k1) * g.k[2] + k2;
        for (int64_t a0 = 0; a0 < a_ext[0]; ++a0) {
          int64_t b0 = a0 * g.s[0] - g.p[0] + k0 * g.d[0];
          if (b0 < 0 || b0 >= b_ext[0]) continue;
          for (int64_t a1 = 0; a1 < a_ext[1]; ++a1) {
            int64_t b1 = a1 * g.s[1] - g.p[1] + k1 * g.d[1];
            if (b1 < 0 || b1 >= b_ext[1]) continue;
            for (int64_t a2 = 0; a2 < a_ext[2]; ++a2) {
              int64_t b2 = a2 * g.s[2] - g.p[2] + k2 * g.d[2];
              if (b2 < 0 || b2 >= b_ext[2]) continue;
              f(kf, (a0 * a_ext[1] + a1) * a_ext[2] + a2, (b0 * b_ext[1] + b1) * b_ext[2] + b2);
            }
          }
        }
      }
}

bool contiguous(const TensorView& t) {
  int64_t want = 1;
  for (size_t d = t.sizes.size(); d-- > 0;) {
    if (t.sizes[d] != 1 && t.strides[d] != want) return false;
    want *= t.sizes[d];
  }
  return true;
}

template <class C>
bool native(const TensorView& t) {
  return t.dtype == (std::is_same_v<C, double> ? DType::Float64 : DType::Float32) && contiguous(t);
}

// Room for n values: the calling thread's scratch `slot` (0-2: the operands' copies, 3: the
// flipped weight), kept between calls as conv_gemm.h's is (no allocation, no page faults per
// call), or, over kKeptBytes, `own`, freed with it.
constexpr int64_t kKeptBytes = int64_t{16} << 20;

template <class C>
C* scratch(int slot, int64_t n, std::unique_ptr<C[]>& own, const char* what) {
  auto oom = [&] {
    throw PluginError(STAX_ERROR_RUNTIME, "cpu_cpp extern kernel 'convolution': out of memory: " +
                                              std::to_string(n * sizeof(C)) + " bytes for " + what);
  };
  if (n * static_cast<int64_t>(sizeof(C)) > kKeptBytes) {
    own.reset(new (std::nothrow) C[static_cast<size_t>(n)]);
    if (!own) oom();
    return own.get();
  }
  thread_local std::vector<C> keep[4];
  std::vector<C>& v = keep[slot];
  if (static_cast<int64_t>(v.size()) < n) {
    std::vector<C>().swap(v);
    try {
      v.resize(static_cast<size_t>(n));
    } catch (const std::bad_alloc&) {
      oom();
    }
  }
  return v.data();
}

// An input as contiguous C values: the tensor's own memory when it already is, else a copy into
// scratch `slot`.
template <class C>
struct Operand {
  const C* p = nullptr;
  Operand(const TensorView& t, int slot, ThreadPool* pool) {
    if (native<C>(t)) {
      p = static_cast<const C*>(t.data) + t.offset;
      return;
    }
    C* v = scratch<C>(slot, numel(t), own, "a strided operand's copy");
    load_into<C>(t, v, pool);
    p = v;
  }
  std::unique_ptr<C[]> own;
};

// The output as contiguous C values: written in place when it is, else stored at the end.
template <class C>
struct Result {
  const TensorView& t;
  std::vector<C> buffer;
  C* p = nullptr;
  explicit Result(const TensorView& v) : t(v) {
    if (native<C>(t)) {
      p = static_cast<C*>(t.data) + t.offset;
    } else {
      buffer.assign(static_cast<size_t>(numel(t)), C(0));
      p = buffer.data();
    }
  }
  void finish() {
    if (!buffer.empty()) store<C>(t, buffer);
  }
};

bool unit_strides(const conv::Geometry& g) { return g.s[0] == 1 && g.s[1] == 1 && g.s[2] == 1; }

// A transposed convolution with stride 1 is a convolution with the weight's two channel dims
// swapped and its taps reversed, padded by d*(k-1) - p:
//     out[o] = sum_i,k x[i] w[k] over o = i - p + k*d  <=>  i = o - (d*(k-1) - p) + (k-1-k)*d.
template <class C>
void transposed_unit_stride(const C* x, const C* w, C* out, int64_t N, int64_t Cin, int64_t Cout,
                            conv::Geometry g, const conv::Exec& ex) {
  const int64_t G = g.groups, Cig = Cin / G, Cog = Cout / G, K = g.k_n();
  std::unique_ptr<C[]> own;
  C* flipped = scratch<C>(3, Cout * Cig * K, own, "the flipped weight");
  conv::parallel(ex.pool, G * Cog, [&](int64_t t) {  // an input gradient's weight, every step
    const int64_t gr = t / Cog, co = t % Cog;
    for (int64_t ci = 0; ci < Cig; ++ci) {
      const C* src = w + ((gr * Cig + ci) * Cog + co) * K;  // w: (Cin, Cog, k...)
      C* dst = flipped + ((gr * Cog + co) * Cig + ci) * K;
      for (int64_t k = 0; k < K; ++k) dst[k] = src[K - 1 - k];
    }
  });
  for (int i = 0; i < 3; ++i) g.p[i] = g.d[i] * (g.k[i] - 1) - g.p[i];
  conv::correlate(x, flipped, out, N, Cin, Cout, g, ex);
}

// Any other transposed convolution: per (sample, group) col (Cog*K x I) = W_gᵀ @ X_bg (one
// batched product), then each output plane gathers its col rows (col2im), one plane per task.
template <class C>
void transposed_strided(const C* x, const C* w, C* out, int64_t N, int64_t Cin, int64_t Cout,
                        const conv::Geometry& g, const conv::Exec& ex) {
  const int64_t G = g.groups, Cig = Cin / G, Cog = Cout / G, K = g.k_n(), I = g.in_n();
  const int64_t O = g.out_n(), entries = N * G, per_entry = Cog * K * I;
  const int64_t chunk = std::max<int64_t>(1, (int64_t{16} << 20) / std::max<int64_t>(1, per_entry * sizeof(C)));
  std::vector<C> col(static_cast<size_t>(std::min(chunk, entries) * per_entry));
  std::vector<int64_t> a_off(static_cast<size_t>(std::min(chunk, entries)));
  for (int64_t e0 = 0; e0 < entries; e0 += chunk) {
    const int64_t ne = std::min(chunk, entries - e0);
    for (int64_t i = 0; i < ne; ++i) a_off[static_cast<size_t>(i)] = (e0 + i) % G * Cig * Cog * K;
    sdk::gemm::Problem<C> p;
    p.batch = ne;
    p.m = Cog * K;
    p.n = I;
    p.k = Cig;
    p.a = w;  // W_gᵀ through W_g's (Cig x Cog*K) rows
    p.a_offsets = a_off.data();
    p.a_rs = 1;
    p.a_cs = Cog * K;
    p.b = x + e0 * Cig * I;
    p.b_bs = Cig * I;
    p.b_rs = I;
    p.b_cs = 1;
    p.c = col.data();
    p.c_bs = per_entry;
    p.c_rs = I;
    p.c_cs = 1;
    multiply(ex, p);
    conv::parallel(ex.pool, ne * Cog, [&](int64_t t) {
      const int64_t e = e0 + t / Cog, co = t % Cog, b = e / G, gr = e % G;
      C* op = out + (b * Cout + gr * Cog + co) * O;
      const C* cp = col.data() + (t / Cog) * per_entry + co * K * I;
      std::fill(op, op + O, C(0));
      for_each_tap(g, g.in, g.out, [&](int64_t kf, int64_t inf, int64_t of) {
        op[of] += cp[kf * I + inf];
      });
    });
  }
}

// t's planes (conv_gemm.h's Planes) when its spatial dims are contiguous in C's own dtype.
template <class C>
bool planes_of(const TensorView& t, conv::Planes* p) {
  if (t.dtype != (std::is_same_v<C, double> ? DType::Float64 : DType::Float32)) return false;
  int64_t want = 1;
  for (size_t d = t.sizes.size(); d-- > 2;) {
    if (t.sizes[d] != 1 && t.strides[d] != want) return false;
    want *= t.sizes[d];
  }
  p->s0 = t.strides[0];
  p->s1 = t.strides[1];
  return true;
}

template <class C>
void convolve(const std::vector<TensorView>& t, size_t num_inputs, const conv::Geometry& g,
              bool transposed, const conv::Exec& ex) {
  const TensorView &x = t[0], &w = t[1];
  Result<C> ov(t[num_inputs]);
  const int64_t N = x.sizes[0], Cin = x.sizes[1], Cout = ov.t.sizes[1], O = g.out_n();
  // A weight gradient's permuted operands read plane by plane where they lie (no copies).
  conv::Planes xp, wp;
  bool done = false;
  if (!transposed && !(native<C>(x) && native<C>(w)) && planes_of<C>(x, &xp) &&
      planes_of<C>(w, &wp))
    done = conv::correlate_planes(static_cast<const C*>(x.data) + x.offset, xp,
                                  static_cast<const C*>(w.data) + w.offset, wp, ov.p, N, Cin,
                                  Cout, g, ex);
  if (!done) {
    Operand<C> xv(x, 0, ex.pool), wv(w, 1, ex.pool);
    if (!transposed)
      conv::correlate(xv.p, wv.p, ov.p, N, Cin, Cout, g, ex);
    else if (unit_strides(g))
      transposed_unit_stride(xv.p, wv.p, ov.p, N, Cin, Cout, g, ex);
    else
      transposed_strided(xv.p, wv.p, ov.p, N, Cin, Cout, g, ex);
  }
  if (num_inputs == 3) {
    Operand<C> bv(t[2], 2, ex.pool);
    conv::parallel(ex.pool, N * Cout, [&](int64_t r) {
      C* op = ov.p + r * O;
      const C bias = bv.p[r % Cout];
      for (int64_t e = 0; e < O; ++e) op[e] += bias;
    });
  }
  ov.finish();
}

}  // namespace

void run_convolution(const std::vector<TensorView>& t, size_t num_inputs,
                     const std::vector<double>& scalars, GemmLibrary& gemm, ThreadPool* pool) {
  if ((num_inputs != 2 && num_inputs != 3) || t.size() != num_inputs + 1)
    bad("takes input, weight (, bias) and one output");
  const TensorView &x = t[0], &w = t[1], &o = t[num_inputs];
  for (const TensorView& v : t) {
    if (v.strides.size() != v.sizes.size()) bad("sizes and strides differ in rank");
    if (!v.data && numel(v) > 0) bad("null data pointer");
    if (v.dtype != x.dtype) bad("input, weight, bias and output must share one dtype");
  }
  size_t r = x.sizes.size();
  if (r < 3 || r > 5 || w.sizes.size() != r || o.sizes.size() != r)
    bad("input, weight and output must be 3-D to 5-D of one rank");
  conv::Geometry g;
  const size_t sp = r - 2;
  size_t need = 1 + 4 * sp + 2;
  if (scalars.size() != need)
    bad("expected " + std::to_string(need) + " scalars, got " + std::to_string(scalars.size()));
  size_t at = 1, off = 3 - sp;
  for (size_t i = 0; i < sp; ++i) g.s[off + i] = static_cast<int64_t>(scalars[at + i]);
  at += sp;
  for (size_t i = 0; i < sp; ++i) g.p[off + i] = static_cast<int64_t>(scalars[at + i]);
  at += sp;
  for (size_t i = 0; i < sp; ++i) g.d[off + i] = static_cast<int64_t>(scalars[at + i]);
  at += sp;
  const bool transposed = scalars[at++] != 0;
  at += sp;  // output_padding: implied by the output's shape
  g.groups = static_cast<int64_t>(scalars[at]);
  for (size_t i = 0; i < sp; ++i) {
    g.in[off + i] = x.sizes[2 + i];
    g.k[off + i] = w.sizes[2 + i];
    g.out[off + i] = o.sizes[2 + i];
  }
  int64_t Cin = x.sizes[1], Cout = o.sizes[1];
  if (g.groups < 1 || Cin % g.groups || Cout % g.groups) bad("channels not divisible by groups");
  if (!transposed && (w.sizes[0] != Cout || w.sizes[1] * g.groups != Cin))
    bad("weight does not match the input and output channels");
  if (transposed && (w.sizes[0] != Cin || w.sizes[1] * g.groups != Cout))
    bad("weight does not match the input and output channels");
  if (num_inputs == 3 && (t[2].sizes.size() != 1 || t[2].sizes[0] != Cout))
    bad("bias must have one entry per output channel");
  for (int i = 0; i < 3; ++i)
    if (g.s[i] < 1 || g.d[i] < 1) bad("stride and dilation must be positive");
  const conv::Exec ex{&gemm, pool};
  if (x.dtype == DType::Float64)
    convolve<double>(t, num_inputs, g, transposed, ex);
  else
    convolve<float>(t, num_inputs, g, transposed, ex);
}

}  // namespace stax::cpu
