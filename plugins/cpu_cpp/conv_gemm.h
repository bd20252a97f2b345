// A convolution as matrix products on the `blas:` library, with every step on cpu_cpp's pool
// (conv_gemm.cpp; the extern "convolution" of conv_kernel.cpp calls it, docs/convolution.md).
//
// correlate() computes, for contiguous row-major x (N, Cin, in...), w (Cout, Cig, k...) and out
// (N, Cout, out...), spatial dims padded to 3 with leading extents of 1:
//     out[b, g*Cog + co, o] = sum over (ci < Cig, k) in order of
//                             w[g*Cog + co, ci, k] * x[b, g*Cig + ci, o*s - p + k*d]
// with the terms outside x reading 0: one GEMM chain per output over q = ci*K + k (Stax's GEMM:
// fma in that order from +0), whichever of the two forms below runs, so both give the same bits.
//   * "columns" (many output positions): per (b, g), out_bg (Cog x O) = W_g (Cog x Cig*K) @
//     Q_bg (Cig*K x O), Q_bg[(ci, k), o] = x[.., o*s - p + k*d]: rows of Q are shifted copies of
//     the input rows; a 1x1 kernel with stride 1 and no padding reads x itself. One batched call
//     per chunk of samples.
//   * "patches" (few output positions, long reductions: a weight gradient, which the VJP writes
//     as a convolution whose kernel is the output gradient): C_g[(b, o), co] = P_g[(b, o), q] @
//     W_gᵀ, P_g's rows the input patches, read in place by the GEMM (never packed), then C moved
//     into out.
//   * "direct" (conv_direct.h): one output channel per group (depthwise convolutions and both
//     of their gradients): register tiles over zero-padded input planes, no GEMM.
//   * "blocked" (conv_direct.h: 4+ output channels per group, e.g. 3x3 convolutions and their
//     input gradients): register blocks of 4 channels x rows x a vector over padded planes, the
//     same chains, no im2col matrix (STAX_CPU_CONV_BLOCKED=0: the forms above instead).
// The gathers run on the pool, the products on the library (itself on the pool); the scratch
// (at most ~16 MB a chunk, more only for one sample or row that needs it) is kept by the calling
// thread between calls.
#pragma once

#include <cstdint>

#include "plugins/cpu_cpp/gemm_library.h"
#include "plugins/cpu_cpp/thread_pool.h"

namespace stax::cpu::conv {

struct Geometry {
  int64_t s[3] = {1, 1, 1}, p[3] = {0, 0, 0}, d[3] = {1, 1, 1};
  int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  int64_t groups = 1;
  int64_t in_n() const { return in[0] * in[1] * in[2]; }
  int64_t k_n() const { return k[0] * k[1] * k[2]; }
  int64_t out_n() const { return out[0] * out[1] * out[2]; }
};

struct Exec {
  GemmLibrary* gemm = nullptr;
  ThreadPool* pool = nullptr;  // nullptr: everything on the calling thread
};

// Where the planes of an operand lie when it is a strided view whose spatial dims are contiguous
// (the VJP's permuted operands of a weight gradient): plane (a, b) (sample and channel of an
// input; output and input channel of a weight) starts at a * s0 + b * s1 elements.
struct Planes {
  int64_t s0 = 0, s1 = 0;
};

// Calls f(t) for t in [0, tasks) on the pool (or the calling thread); f must not throw.
void parallel(ThreadPool* pool, int64_t tasks, const std::function<void(int64_t)>& f);

// The forms above; T = float or double. Throws sdk::PluginError for a failed scratch allocation.
template <class T>
void correlate(const T* x, const T* w, T* out, int64_t N, int64_t Cin, int64_t Cout,
               const Geometry& g, const Exec& ex);

// correlate() for x and w laid out as `xp` and `wp` say, when the form that correlate() picks
// reads them plane by plane (the direct patches form: weight gradients), without copying them
// contiguous first; false (nothing done) for any other form.
template <class T>
bool correlate_planes(const T* x, const Planes& xp, const T* w, const Planes& wp, T* out,
                      int64_t N, int64_t Cin, int64_t Cout, const Geometry& g, const Exec& ex);

}  // namespace stax::cpu::conv
