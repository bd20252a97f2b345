// The discrete Fourier transforms of the spectral ops (_fft_r2c, _fft_c2r, _fft_c2c), computed by
// FFTW 3 (float and double; docs/complex.md says why FFTW and what its GPL licence means). This
// header names no FFTW type: only fft_library.cpp includes fftw3.h.
//
// Every transform is unnormalized (the caller scales) and takes its input as any strided tensor;
// the result is a new contiguous tensor. `dims` are distinct, non-negative and in range (the
// schemas' inference checks them); their order matters only for r2c, whose last dim is the halved
// one. Plans are made with FFTW_ESTIMATE under one lock (FFTW's planner is not thread-safe) and
// executed outside it.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor/tensor.h"

namespace stax::fft {

// Real -> complex, forward (e^-2πi): the onesided spectrum, dims.back() of size n/2 + 1.
// float32 -> complex64, float64 -> complex128.
Tensor r2c(const Tensor& x, const std::vector<int64_t>& dims);

// Complex -> complex over `dims`, forward (e^-2πi) or backward (e^+2πi); same dtype.
Tensor c2c(const Tensor& x, const std::vector<int64_t>& dims, bool forward);

// Complex -> real, backward, one-dimensional along `dim`: the real signal of length n whose
// onesided spectrum is x's first n/2 + 1 entries along `dim` (the imaginary parts of the zero and
// Nyquist entries are ignored, as every FFT library does). complex64 -> float32 ...
Tensor c2r(const Tensor& x, int64_t dim, int64_t n);

// Multiplies every element (real and imaginary parts) of the contiguous tensor t by `factor`,
// rounded once to t's part type.
void scale(Tensor& t, double factor);

}  // namespace stax::fft
