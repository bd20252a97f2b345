// The direct form of cpu_cpp's convolution (conv_direct.cpp; docs/convolution.md): a
// convolution with one output channel per group (depthwise: ConvNeXt's 7x7, and both of its
// gradients, which the VJP writes as convolutions with one output channel per group too) computed
// without an im2col matrix and without a GEMM, whose tiles would waste all but one row (Cog = 1).
//
// Per output plane (sample, channel) the group's input channels are copied into a zero-padded
// scratch, then register tiles of up to 8 output rows x one vector of output columns run the
// chain of conv_gemm.h, term by term in (ci, k) order from +0, the padding's zeros included: every
// output gets the bits of the GEMM forms (and of conv_extern_test's definition). Vectors are
// AVX-512 or AVX2 + FMA where the CPU has them (picked at run time), else std::fma one column at
// a time; the planes are the pool's tasks.
#pragma once

#include <cstdint>

#include "plugins/cpu_cpp/conv_gemm.h"

namespace stax::cpu::conv {

// Whether the direct form takes the convolution: one output channel per group, spatial rank at
// most 2 (the leading padded extent is 1) and output columns at stride 1 (vector loads).
bool direct_applies(const Geometry& g, int64_t Cin, int64_t Cout);

// As correlate() (conv_gemm.h), for a convolution direct_applies() takes; T = float or double.
template <class T>
void correlate_direct(const T* x, const T* w, T* out, int64_t N, int64_t Cin, int64_t Cout,
                      const Geometry& g, const Exec& ex);

// The blocked form (Cog >= 4 output channels per group, e.g. ResNet's and a UNet's 3x3
// convolutions and their input gradients): the input padded once per call, then blocks of 4
// output channels x up to 6 rows x one vector of columns, each output the same chain over
// (ci, k) in order from +0 as the GEMM forms compute: the same bits, without the im2col matrix.
// Taken for spatial rank <= 2, output columns at stride 1, a kernel larger than 1x1, at least
// kBlockedMinOutputs output positions and kBlockedMinColumns output columns (a narrower plane
// wastes most of a vector's lanes: the GEMM forms run it).
constexpr int64_t kBlockedMinOutputs = 64;
constexpr int64_t kBlockedMinColumns = 8;
bool blocked_applies(const Geometry& g, int64_t Cin, int64_t Cout);
// False while STAX_CPU_CONV_BLOCKED=0 (read per call): the GEMM forms run instead (A/B
// measurements, and the test that both forms give the same bits).
bool blocked_enabled();

template <class T>
void correlate_blocked(const T* x, const T* w, T* out, int64_t N, int64_t Cin, int64_t Cout,
                       const Geometry& g, const Exec& ex);

// The patches form without its matrices (few output positions: weight gradients, which the VJP
// writes as convolutions whose kernel is the output gradient; AVX-512, output channels per group
// a multiple of a vector, spatial rank <= 2): the input padded once, W_gᵀ transposed once, then
// tiles of 6 rows (sample, output position) x 4 vectors of output channels read each row's patch
// straight from the padded planes, over the chain q = (ci, k) in blocks of ~512 terms (each
// partial stored exactly and continued): the GEMM patches form's bits, without writing and
// re-reading the patch matrix (N * O rows of Cig * K terms).
template <class T>
bool patches_direct_applies(const Geometry& g, int64_t Cin, int64_t Cout);
// x's and w's planes where `xp` and `wp` say (conv_gemm.h's Planes; contiguous operands:
// {Cin * in_n, in_n} and {Cig * k_n, k_n}).
template <class T>
void correlate_patches_direct(const T* x, const Planes& xp, const T* w, const Planes& wp, T* out,
                              int64_t N, int64_t Cin, int64_t Cout, const Geometry& g,
                              const Exec& ex);

}  // namespace stax::cpu::conv
