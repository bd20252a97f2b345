// cpu_cpp's extern "convolution" (core/lowering/rules_nn.cpp describes the scalars): im2col +
// a product per (batch, group) on the `blas:` GEMM library, as the matrix products do.
//   * non-transposed: col[(ci, k), o] = x[n, g*Cig + ci, o*s - p + k*d] (0 outside), then
//     out_g (Cog x O) = W_g (Cog x Cig*K) @ col;
//   * transposed: col (Cog*K x I) = W_gᵀ @ X_g (W_g: Cig x Cog*K), then col2im adds
//     col[(co, k), i] into out[co, i*s - p + k*d];
//   * bias added last. float16 / bfloat16 are widened to float and rounded once at the end.
//     Results agree with the interpreter's direct loop (which sums in double) within the gemm
//     bound.
#include <algorithm>
#include <cstring>
#include <type_traits>

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

template <class C>
std::vector<C> load(const TensorView& t) {
  std::vector<C> v(static_cast<size_t>(numel(t)));
  auto put = [&](auto tag) {
    using S = decltype(tag);
    const S* p = static_cast<const S*>(t.data);
    for_each(t, [&](int64_t e, int64_t off) { v[e] = static_cast<C>(p[off]); });
  };
  switch (t.dtype) {
    case DType::Float32: put(float{}); break;
    case DType::Float64: put(double{}); break;
    case DType::Float16:
    case DType::BFloat16: {
      const uint16_t* p = static_cast<const uint16_t*>(t.data);
      bool h = t.dtype == DType::Float16;
      for_each(t, [&](int64_t e, int64_t off) {
        v[e] = static_cast<C>(h ? stax_f16::half_to_float(p[off]) : stax_f16::bf16_to_float(p[off]));
      });
      break;
    }
    default: bad("only floating dtypes are supported");
  }
  return v;
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

// C (m x n, row-major) = op(A) (m x k) @ op(B) (k x n) on the GEMM library.
template <class C>
void gemm(GemmLibrary& lib, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const C* a,
          int64_t lda, const C* b, int64_t ldb, C* c) {
  sdk::gemm::Problem<C> p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a = a;
  p.a_rs = ta ? 1 : lda;
  p.a_cs = ta ? lda : 1;
  p.b = b;
  p.b_rs = tb ? 1 : ldb;
  p.b_cs = tb ? ldb : 1;
  p.c = c;
  p.c_rs = n;
  p.c_cs = 1;
  try {
    lib.multiply(p, {});
  } catch (const sdk::gemm::OutOfMemory& e) {
    throw PluginError(STAX_ERROR_RUNTIME, std::string("cpu_cpp extern kernel 'convolution': ") +
                                              e.what() + " (" + lib.describe() + ")");
  }
}

struct Geometry {
  size_t sp = 0;
  int64_t s[3] = {1, 1, 1}, p[3] = {0, 0, 0}, d[3] = {1, 1, 1};
  int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  bool transposed = false;
  int64_t groups = 1;
  int64_t in_n() const { return in[0] * in[1] * in[2]; }
  int64_t k_n() const { return k[0] * k[1] * k[2]; }
  int64_t out_n() const { return out[0] * out[1] * out[2]; }
};

// For every (kernel offset kk, spatial position a of the "small" side) the position on the other
// side: o*s - p + k*d (i = input index for a non-transposed conv, output index for a transposed
// one); f(k_flat, a_flat, b_flat) for positions in range.
template <class F>
void for_each_tap(const Geometry& g, const int64_t* a_ext, const int64_t* b_ext, F&& f) {
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

template <class C>
void convolve(const std::vector<TensorView>& t, size_t num_inputs, const Geometry& g,
              GemmLibrary& lib) {
  const TensorView &x = t[0], &w = t[1], &o = t[num_inputs];
  std::vector<C> xv = load<C>(x), wv = load<C>(w), out(static_cast<size_t>(numel(o)), C(0));
  int64_t N = x.sizes[0], Cin = x.sizes[1], Cout = o.sizes[1], G = g.groups;
  int64_t Cig = Cin / G, Cog = Cout / G, K = g.k_n(), I = g.in_n(), O = g.out_n();
  if (!g.transposed) {
    std::vector<C> col(static_cast<size_t>(Cig * K * O));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t gr = 0; gr < G; ++gr) {
        std::fill(col.begin(), col.end(), C(0));
        const C* xp = xv.data() + (n * Cin + gr * Cig) * I;
        for (int64_t ci = 0; ci < Cig; ++ci)
          for_each_tap(g, g.out, g.in, [&](int64_t kf, int64_t of, int64_t inf) {
            col[(ci * K + kf) * O + of] = xp[ci * I + inf];
          });
        gemm<C>(lib, false, false, Cog, O, Cig * K, wv.data() + gr * Cog * Cig * K, Cig * K,
                col.data(), O, out.data() + (n * Cout + gr * Cog) * O);
      }
  } else {
    std::vector<C> col(static_cast<size_t>(Cog * K * I));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t gr = 0; gr < G; ++gr) {
        // col (Cog*K x I) = W_gᵀ (W_g: Cig x Cog*K) @ X_g (Cig x I)
        gemm<C>(lib, true, false, Cog * K, I, Cig, wv.data() + gr * Cig * Cog * K, Cog * K,
                xv.data() + (n * Cin + gr * Cig) * I, I, col.data());
        C* op = out.data() + (n * Cout + gr * Cog) * O;
        for (int64_t co = 0; co < Cog; ++co)
          for_each_tap(g, g.in, g.out, [&](int64_t kf, int64_t inf, int64_t of) {
            op[co * O + of] += col[(co * K + kf) * I + inf];
          });
      }
  }
  if (num_inputs == 3) {
    std::vector<C> bv = load<C>(t[2]);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < Cout; ++c)
        for (int64_t e = 0; e < O; ++e) out[(n * Cout + c) * O + e] += bv[c];
  }
  store<C>(o, out);
}

}  // namespace

void run_convolution(const std::vector<TensorView>& t, size_t num_inputs,
                     const std::vector<double>& scalars, GemmLibrary& gemm) {
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
  Geometry g;
  g.sp = r - 2;
  size_t need = 1 + 4 * g.sp + 2;
  if (scalars.size() != need)
    bad("expected " + std::to_string(need) + " scalars, got " + std::to_string(scalars.size()));
  size_t at = 1, off = 3 - g.sp;
  for (size_t i = 0; i < g.sp; ++i) g.s[off + i] = static_cast<int64_t>(scalars[at + i]);
  at += g.sp;
  for (size_t i = 0; i < g.sp; ++i) g.p[off + i] = static_cast<int64_t>(scalars[at + i]);
  at += g.sp;
  for (size_t i = 0; i < g.sp; ++i) g.d[off + i] = static_cast<int64_t>(scalars[at + i]);
  at += g.sp;
  g.transposed = scalars[at++] != 0;
  at += g.sp;  // output_padding: implied by the output's shape
  g.groups = static_cast<int64_t>(scalars[at]);
  for (size_t i = 0; i < g.sp; ++i) {
    g.in[off + i] = x.sizes[2 + i];
    g.k[off + i] = w.sizes[2 + i];
    g.out[off + i] = o.sizes[2 + i];
  }
  int64_t Cin = x.sizes[1], Cout = o.sizes[1];
  if (g.groups < 1 || Cin % g.groups || Cout % g.groups) bad("channels not divisible by groups");
  if (!g.transposed && (w.sizes[0] != Cout || w.sizes[1] * g.groups != Cin))
    bad("weight does not match the input and output channels");
  if (g.transposed && (w.sizes[0] != Cin || w.sizes[1] * g.groups != Cout))
    bad("weight does not match the input and output channels");
  if (num_inputs == 3 && (t[2].sizes.size() != 1 || t[2].sizes[0] != Cout))
    bad("bias must have one entry per output channel");
  if (x.dtype == DType::Float64)
    convolve<double>(t, num_inputs, g, gemm);
  else
    convolve<float>(t, num_inputs, g, gemm);
}

}  // namespace stax::cpu
