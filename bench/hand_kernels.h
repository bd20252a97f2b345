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

// The kernel set the BLAS library (OpenBLAS: the hand GEMMs', and cpu_cpp's extern GEMMs') chose
// for this CPU, e.g. "SkylakeX"; "Prescott" (SSE3) where it does not know the CPU.
const char* hand_blas_core();

}  // namespace stax::bench

namespace stax::bench {

// W2, seed Example 5.1 at scale: f(x, W) = gelu(x @ W).sum() (exact gelu, erf) with its gradients,
// the way a performance engineer writes it: one sgemm and one fused pass forward (h = x @ W kept
// for the backward, Σ gelu(h) summed in the same pass), one fused pass (dh = gelu'(h)) and two
// sgemms backward (dx = dh @ Wᵀ, dW = xᵀ @ dh). x: n x k, W: k x m, h / dh: n x m (scratch).
// OpenBLAS and OpenMP both run on `threads` threads.
float hand_w2_forward(const float* x, const float* w, float* h, int64_t n, int64_t k, int64_t m,
                      int threads);
void hand_w2_backward(const float* x, const float* w, const float* h, float* dh, float* dx,
                      float* dw, int64_t n, int64_t k, int64_t m, int threads);

// One training step of a 2-layer MLP (the shape of examples/train_mlp, scaled up):
//   a = gelu(x @ W1 + b1); pred = a @ W2 + b2; loss = mean((pred - y)^2)
// and the gradients of W1, b1, W2, b2: 2 sgemms forward, 3 backward, fused passes between them
// (x: B x D, W1: D x H,
// W2: H x O). Scratch: hpre, a (B x H), pred (B x O), da (B x H). Returns the loss.
struct MlpScratch {
  float *pre, *act, *pred, *dpred, *dact;
};
float hand_mlp_step(const float* x, const float* w1, const float* b1, const float* w2,
                    const float* b2, const float* y, float* dw1, float* db1, float* dw2,
                    float* db2, MlpScratch s, int64_t batch, int64_t in, int64_t hidden,
                    int64_t out, int threads);

}  // namespace stax::bench
