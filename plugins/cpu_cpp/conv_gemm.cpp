// The convolution's two GEMM forms (conv_gemm.h): gathers on the pool, products on the library.
#include "plugins/cpu_cpp/conv_gemm.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "plugins/cpu_cpp/conv_direct.h"
#include "stax/sdk/backend.hpp"

namespace stax::cpu::conv {

namespace {

// A chunk's gather scratch stays under this (unless one sample or row alone needs more).
constexpr int64_t kChunkBytes = int64_t{16} << 20;
// Below this many output positions per sample the "patches" form runs (a GEMM tile is 16-64
// columns wide: fewer columns per product waste its lanes and repack B per sample).
constexpr int64_t kMinColumns = 64;
// Columns per panel of Q: Stax's GEMM (AVX-512, float) runs 64-column tiles and reads a row-major
// K x 64 B as its own packed form, so Q written in such panels is never packed again.
constexpr int64_t kPanel = 64;

[[noreturn]] void out_of_memory(size_t bytes, const std::string& what) {
  throw sdk::PluginError(STAX_ERROR_RUNTIME, "cpu_cpp extern kernel 'convolution': out of memory: " +
                                                 std::to_string(bytes) + " bytes for " + what);
}

// Scratch kept by the calling thread between calls (two slots), so that a train step's
// convolutions do not map and fault in fresh pages each time.
template <class T>
T* scratch(int slot, int64_t n, const char* what) {
  thread_local std::vector<T> keep[2];
  std::vector<T>& v = keep[slot];
  if (static_cast<int64_t>(v.size()) < n) {
    std::vector<T>().swap(v);
    try {
      v.resize(static_cast<size_t>(n));
    } catch (const std::bad_alloc&) {
      out_of_memory(static_cast<size_t>(n) * sizeof(T), what);
    }
  }
  return v.data();
}

template <class T>
void multiply(const Exec& ex, const sdk::gemm::Problem<T>& p) {
  try {
    ex.gemm->multiply(p, {});
  } catch (const sdk::gemm::OutOfMemory& e) {
    throw sdk::PluginError(STAX_ERROR_RUNTIME, std::string("cpu_cpp extern kernel 'convolution': ") +
                                                   e.what() + " (" + ex.gemm->describe() + ")");
  }
}

// dst[j - j0] = src[start + j*step] where 0 <= start + j*step < limit, else 0, for j0 <= j < j1.
template <class T>
void gather_line(T* dst, int64_t j0, int64_t j1, const T* src, int64_t start, int64_t step,
                 int64_t limit) {
  int64_t lo = start >= 0 ? 0 : (-start + step - 1) / step;
  int64_t hi = start >= limit ? 0 : (limit - start + step - 1) / step;
  lo = std::clamp(lo, j0, j1);
  hi = std::clamp(hi, lo, j1);
  dst -= j0;
  std::fill(dst + j0, dst + lo, T(0));
  if (step == 1) {
    if (hi > lo) std::memcpy(dst + lo, src + start + lo, static_cast<size_t>(hi - lo) * sizeof(T));
  } else {
    for (int64_t j = lo; j < hi; ++j) dst[j] = src[start + j * step];
  }
  std::fill(dst + hi, dst + j1, T(0));
}

bool in_range(int64_t i, int64_t n) { return i >= 0 && i < n; }

// Where column o of row q of Q_bg is stored: Q_bg as the GEMM reads a packed B, the columns in
// panels of kPanel, each panel's Kc rows contiguous ([panel][q][kPanel]), then the last
// O % kPanel columns as a (Kc x rest) row-major block.
struct PanelLayout {
  int64_t Kc, full, rest;
  int64_t at(int64_t q, int64_t o) const {
    const int64_t j = o / kPanel;
    return j < full ? (j * Kc + q) * kPanel + o % kPanel : full * kPanel * Kc + q * rest + o % kPanel;
  }
  // Columns from o up to the end of o's panel.
  int64_t run(int64_t o) const { return kPanel - o % kPanel; }
};

// The K rows (ci, k) of Q_bg for one input channel, starting at row q: row (k0, k1, k2) holds
// x[o*s - p + k*d] for every output position o.
template <class T>
void fill_columns(const Geometry& g, const T* xc, const PanelLayout& L, int64_t q, T* entry) {
  for (int64_t k0 = 0; k0 < g.k[0]; ++k0)
    for (int64_t k1 = 0; k1 < g.k[1]; ++k1)
      for (int64_t k2 = 0; k2 < g.k[2]; ++k2, ++q)
        for (int64_t o0 = 0; o0 < g.out[0]; ++o0) {
          const int64_t i0 = o0 * g.s[0] - g.p[0] + k0 * g.d[0];
          for (int64_t o1 = 0; o1 < g.out[1]; ++o1) {
            const int64_t i1 = o1 * g.s[1] - g.p[1] + k1 * g.d[1];
            const bool zero = !in_range(i0, g.in[0]) || !in_range(i1, g.in[1]);
            const T* src = zero ? nullptr : xc + (i0 * g.in[1] + i1) * g.in[2];
            const int64_t base = (o0 * g.out[1] + o1) * g.out[2];
            for (int64_t j = 0; j < g.out[2];) {  // the line, cut at panel ends
              const int64_t n = std::min(g.out[2] - j, L.run(base + j));
              T* dst = entry + L.at(q, base + j);
              if (zero)
                std::fill(dst, dst + n, T(0));
              else
                gather_line(dst, j, j + n, src, -g.p[2] + k2 * g.d[2], g.s[2], g.in[2]);
              j += n;
            }
          }
        }
}

// One row of P_g: the patch of output position o (flat) over the group's Cig channels.
template <class T>
void fill_patch(const Geometry& g, const T* xg, int64_t Cig, int64_t o, T* dst) {
  const int64_t o2 = o % g.out[2], o1 = o / g.out[2] % g.out[1], o0 = o / g.out[2] / g.out[1];
  const int64_t I = g.in_n();
  for (int64_t ci = 0; ci < Cig; ++ci) {
    const T* xc = xg + ci * I;
    for (int64_t k0 = 0; k0 < g.k[0]; ++k0) {
      const int64_t i0 = o0 * g.s[0] - g.p[0] + k0 * g.d[0];
      for (int64_t k1 = 0; k1 < g.k[1]; ++k1, dst += g.k[2]) {
        const int64_t i1 = o1 * g.s[1] - g.p[1] + k1 * g.d[1];
        if (!in_range(i0, g.in[0]) || !in_range(i1, g.in[1]))
          std::fill(dst, dst + g.k[2], T(0));
        else
          gather_line(dst, 0, g.k[2], xc + (i0 * g.in[1] + i1) * g.in[2], o2 * g.s[2] - g.p[2],
                      g.d[2], g.in[2]);
      }
    }
  }
}

// Chunk of `count` items of `bytes_each` bytes under kChunkBytes (at least one item).
int64_t chunk_of(int64_t count, int64_t bytes_each) {
  if (bytes_each <= 0) return count;
  const int64_t chunks = std::max<int64_t>(1, (count * bytes_each + kChunkBytes - 1) / kChunkBytes);
  return std::max<int64_t>(1, (count + chunks - 1) / chunks);
}

// The products of a chunk of entries [e0, e0 + ne) over Q in panels: every full panel of every
// entry is one entry of a batched product (B already in packed form), the rest columns another.
template <class T>
void columns_products(const T* w, T* out, const T* q, int64_t e0, int64_t ne, int64_t G,
                      int64_t Cog, int64_t Kc, int64_t O, const Exec& ex) {
  const int64_t full = O / kPanel, rest = O - full * kPanel;
  std::vector<int64_t> a_off, b_off, c_off;
  auto product = [&](int64_t n, int64_t b_rs) {
    sdk::gemm::Problem<T> p;
    p.batch = static_cast<int64_t>(a_off.size());
    p.m = Cog;
    p.n = n;
    p.k = Kc;
    p.a = w;
    p.a_rs = Kc;
    p.a_cs = 1;
    p.b = q;
    p.b_rs = b_rs;
    p.b_cs = 1;
    p.c = out;
    p.c_rs = O;
    p.c_cs = 1;
    p.a_offsets = a_off.data();
    p.b_offsets = b_off.data();
    p.c_offsets = c_off.data();
    multiply(ex, p);
  };
  for (int64_t i = 0; i < ne; ++i)
    for (int64_t j = 0; j < full; ++j) {
      a_off.push_back((e0 + i) % G * Cog * Kc);
      b_off.push_back(i * Kc * O + j * Kc * kPanel);
      c_off.push_back((e0 + i) * Cog * O + j * kPanel);
    }
  if (full) product(kPanel, kPanel);
  if (!rest) return;
  a_off.clear();
  b_off.clear();
  c_off.clear();
  for (int64_t i = 0; i < ne; ++i) {
    a_off.push_back((e0 + i) % G * Cog * Kc);
    b_off.push_back(i * Kc * O + full * kPanel * Kc);
    c_off.push_back((e0 + i) * Cog * O + full * kPanel);
  }
  product(rest, rest);
}

template <class T>
void columns_form(const T* x, const T* w, T* out, int64_t N, int64_t Cin, int64_t Cout,
                  const Geometry& g, const Exec& ex) {
  const int64_t G = g.groups, Cig = Cin / G, Cog = Cout / G, K = g.k_n(), I = g.in_n();
  const int64_t O = g.out_n(), Kc = Cig * K, entries = N * G;
  bool direct = K == 1;  // a 1x1 kernel, stride 1, no padding: Q_bg is x's channels themselves
  for (int i = 0; i < 3; ++i) direct = direct && g.s[i] == 1 && g.p[i] == 0 && g.in[i] == g.out[i];
  if (direct) {
    sdk::gemm::Problem<T> p;
    std::vector<int64_t> a_off(static_cast<size_t>(entries));
    for (int64_t e = 0; e < entries; ++e) a_off[static_cast<size_t>(e)] = e % G * Cog * Kc;
    p.batch = entries;
    p.m = Cog;
    p.n = O;
    p.k = Kc;
    p.a = w;
    p.a_offsets = a_off.data();
    p.a_rs = Kc;
    p.a_cs = 1;
    p.b = x;
    p.b_bs = Cig * I;
    p.b_rs = I;
    p.b_cs = 1;
    p.c = out;
    p.c_bs = Cog * O;
    p.c_rs = O;
    p.c_cs = 1;
    return multiply(ex, p);
  }
  const int64_t per_entry = Kc * O;
  const int64_t chunk = chunk_of(entries, per_entry * static_cast<int64_t>(sizeof(T)));
  T* q = scratch<T>(0, chunk * per_entry, "convolution: im2col columns");
  for (int64_t e0 = 0; e0 < entries; e0 += chunk) {
    const int64_t ne = std::min(chunk, entries - e0);
    const PanelLayout layout{Kc, O / kPanel, O % kPanel};
    parallel(ex.pool, ne * Cig, [&](int64_t t) {
      const int64_t e = e0 + t / Cig, ci = t % Cig, b = e / G, gr = e % G;
      fill_columns(g, x + (b * Cin + gr * Cig + ci) * I, layout, ci * K, q + (t / Cig) * per_entry);
    });
    columns_products(w, out, q, e0, ne, G, Cog, Kc, O, ex);
  }
}

template <class T>
void patches_form(const T* x, const T* w, T* out, int64_t N, int64_t Cin, int64_t Cout,
                  const Geometry& g, const Exec& ex) {
  const int64_t G = g.groups, Cig = Cin / G, Cog = Cout / G, K = g.k_n(), I = g.in_n();
  const int64_t O = g.out_n(), Kc = Cig * K, rows = N * O;
  const int64_t chunk = chunk_of(rows, G * Kc * static_cast<int64_t>(sizeof(T)));
  T* pm = scratch<T>(0, G * chunk * Kc, "convolution: input patches");
  T* cm = scratch<T>(1, G * chunk * Cog, "convolution: product of the patches");
  for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
    const int64_t nr = std::min(chunk, rows - r0);
    parallel(ex.pool, G * nr, [&](int64_t t) {
      const int64_t gr = t / nr, r = r0 + t % nr, b = r / O;
      fill_patch(g, x + (b * Cin + gr * Cig) * I, Cig, r % O, pm + (gr * chunk + t % nr) * Kc);
    });
    sdk::gemm::Problem<T> p;
    p.batch = G;
    p.m = nr;
    p.n = Cog;
    p.k = Kc;
    p.a = pm;
    p.a_bs = chunk * Kc;
    p.a_rs = Kc;
    p.a_cs = 1;
    p.b = w;  // W_gᵀ: (Kc x Cog) through W_g's (Cog x Kc) rows
    p.b_bs = Cog * Kc;
    p.b_rs = 1;
    p.b_cs = Kc;
    p.c = cm;
    p.c_bs = chunk * Cog;
    p.c_rs = Cog;
    p.c_cs = 1;
    multiply(ex, p);
    parallel(ex.pool, G * nr, [&](int64_t t) {
      const int64_t gr = t / nr, r = r0 + t % nr, b = r / O, o = r % O;
      const T* src = cm + (gr * chunk + t % nr) * Cog;
      T* dst = out + (b * Cout + gr * Cog) * O + o;
      for (int64_t co = 0; co < Cog; ++co) dst[co * O] = src[co];
    });
  }
}

}  // namespace

void parallel(ThreadPool* pool, int64_t tasks, const std::function<void(int64_t)>& f) {
  if (tasks <= 0) return;
  if (!pool || pool->threads() <= 1 || tasks == 1) {
    for (int64_t t = 0; t < tasks; ++t) f(t);
    return;
  }
  const int64_t parts = std::min<int64_t>(tasks, 8 * static_cast<int64_t>(pool->threads()));
  pool->parallel_for(parts, [&](int64_t i) {
    for (int64_t t = tasks * i / parts; t < tasks * (i + 1) / parts; ++t) f(t);
  });
}

template <class T>
void correlate(const T* x, const T* w, T* out, int64_t N, int64_t Cin, int64_t Cout,
               const Geometry& g, const Exec& ex) {
  if (N <= 0 || Cout <= 0 || g.out_n() <= 0) return;
  if (Cin <= 0 || g.k_n() <= 0) {  // no terms: every chain is +0
    std::fill(out, out + N * Cout * g.out_n(), T(0));
    return;
  }
  if (direct_applies(g, Cin, Cout))
    correlate_direct(x, w, out, N, Cin, Cout, g, ex);
  else if (blocked_enabled() && blocked_applies(g, Cin, Cout))
    correlate_blocked(x, w, out, N, Cin, Cout, g, ex);
  else if (g.out_n() >= kMinColumns || (g.k_n() == 1 && g.in_n() == g.out_n()))
    columns_form(x, w, out, N, Cin, Cout, g, ex);
  else if (blocked_enabled() && patches_direct_applies<T>(g, Cin, Cout))
    correlate_patches_direct(x, Planes{Cin * g.in_n(), g.in_n()}, w,
                             Planes{Cin / g.groups * g.k_n(), g.k_n()}, out, N, Cin, Cout, g, ex);
  else
    patches_form(x, w, out, N, Cin, Cout, g, ex);
}

template <class T>
bool correlate_planes(const T* x, const Planes& xp, const T* w, const Planes& wp, T* out,
                      int64_t N, int64_t Cin, int64_t Cout, const Geometry& g, const Exec& ex) {
  // correlate()'s choice, for the direct patches form alone
  if (N <= 0 || Cout <= 0 || g.out_n() <= 0 || Cin <= 0 || g.k_n() <= 0) return false;
  if (direct_applies(g, Cin, Cout) || !blocked_enabled() || blocked_applies(g, Cin, Cout))
    return false;
  if (g.out_n() >= kMinColumns || (g.k_n() == 1 && g.in_n() == g.out_n())) return false;
  if (!patches_direct_applies<T>(g, Cin, Cout)) return false;
  correlate_patches_direct(x, xp, w, wp, out, N, Cin, Cout, g, ex);
  return true;
}

template void correlate<float>(const float*, const float*, float*, int64_t, int64_t, int64_t,
                               const Geometry&, const Exec&);
template void correlate<double>(const double*, const double*, double*, int64_t, int64_t, int64_t,
                                const Geometry&, const Exec&);

template bool correlate_planes<float>(const float*, const Planes&, const float*, const Planes&,
                                      float*, int64_t, int64_t, int64_t, const Geometry&,
                                      const Exec&);
template bool correlate_planes<double>(const double*, const Planes&, const double*,
                                       const Planes&, double*, int64_t, int64_t, int64_t,
                                       const Geometry&, const Exec&);

}  // namespace stax::cpu::conv
