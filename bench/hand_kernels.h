// Hand-written C++ baselines of bench_cpu (cpu_bench.cpp): the workloads of issue 9 written the
// way a performance engineer would, compiled at bench build time with the host compiler at
// -O3 -march=native -ffast-math -fopenmp (vectorised, reassociated reductions, libmvec expf), one
// parallel loop over rows on `threads` OpenMP threads. Row-major float32 arrays of rows x cols.
#pragma once

#include <cstdint>

namespace stax::bench {

// W1: out[i] = Σ_j max(x_ij + y_ij, 0) * 2
void hand_w1(const float* x, const float* y, float* out, int64_t rows, int64_t cols, int threads);
// W3: out_ij = exp(x_ij - max_j x_ij) / Σ_j exp(x_ij - max_j x_ij)
void hand_softmax(const float* x, float* out, int64_t rows, int64_t cols, int threads);
// W4: out[i] = Σ_j x_ij²
void hand_w4(const float* x, float* out, int64_t rows, int64_t cols, int threads);
// W5: out_ij = (x_ij - mean_i) * rsqrt(var_i + 1e-5) * w_j + b_j (biased variance, two passes)
void hand_layer_norm(const float* x, const float* w, const float* b, float* out, int64_t rows,
                     int64_t cols, int threads);

// The read-bandwidth probe: Σ a_i over n int32 (the sum, so that the reads are not dropped).
int64_t hand_read_sum(const int32_t* a, int64_t n, int threads);

}  // namespace stax::bench
