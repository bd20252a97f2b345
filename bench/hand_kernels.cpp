#include "bench/hand_kernels.h"

#include <cmath>

namespace stax::bench {

void hand_w1(const float* x, const float* y, float* out, int64_t rows, int64_t cols, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < rows; ++i) {
    const float* a = x + i * cols;
    const float* b = y + i * cols;
    float s = 0;
#pragma omp simd reduction(+ : s)
    for (int64_t j = 0; j < cols; ++j) s += std::fmax(a[j] + b[j], 0.0f) * 2.0f;
    out[i] = s;
  }
}

void hand_softmax(const float* x, float* out, int64_t rows, int64_t cols, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < rows; ++i) {
    const float* a = x + i * cols;
    float* o = out + i * cols;
    float m = -INFINITY;
#pragma omp simd reduction(max : m)
    for (int64_t j = 0; j < cols; ++j) m = std::fmax(m, a[j]);
    float s = 0;
#pragma omp simd reduction(+ : s)
    for (int64_t j = 0; j < cols; ++j) {
      o[j] = std::exp(a[j] - m);
      s += o[j];
    }
    const float inv = 1.0f / s;
#pragma omp simd
    for (int64_t j = 0; j < cols; ++j) o[j] *= inv;
  }
}

void hand_w4(const float* x, float* out, int64_t rows, int64_t cols, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < rows; ++i) {
    const float* a = x + i * cols;
    float s = 0;
#pragma omp simd reduction(+ : s)
    for (int64_t j = 0; j < cols; ++j) s += a[j] * a[j];
    out[i] = s;
  }
}

void hand_layer_norm(const float* x, const float* w, const float* b, float* out, int64_t rows,
                     int64_t cols, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < rows; ++i) {
    const float* a = x + i * cols;
    float* o = out + i * cols;
    float s = 0;
#pragma omp simd reduction(+ : s)
    for (int64_t j = 0; j < cols; ++j) s += a[j];
    const float mean = s / static_cast<float>(cols);
    float v = 0;
#pragma omp simd reduction(+ : v)
    for (int64_t j = 0; j < cols; ++j) v += (a[j] - mean) * (a[j] - mean);
    const float rstd = 1.0f / std::sqrt(v / static_cast<float>(cols) + 1e-5f);
#pragma omp simd
    for (int64_t j = 0; j < cols; ++j) o[j] = (a[j] - mean) * rstd * w[j] + b[j];
  }
}

int64_t hand_read_sum(const int32_t* a, int64_t n, int threads) {
  int64_t s = 0;
#pragma omp parallel for simd num_threads(threads) schedule(static) reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += a[i];
  return s;
}

}  // namespace stax::bench

// ---- W2 and the MLP step: OpenBLAS sgemm + fused OpenMP passes

#include <cblas.h>

namespace stax::bench {

namespace {

void blas_threads(int threads) {
#ifdef OPENBLAS_VERSION
  if (openblas_get_num_threads() != threads) openblas_set_num_threads(threads);
#else
  (void)threads;
#endif
}

}  // namespace

const char* hand_blas_core() {
#ifdef OPENBLAS_VERSION
  return openblas_get_corename();
#else
  return "not OpenBLAS";
#endif
}

namespace {

inline float gelu(float v) { return 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752f)); }
inline float gelu_grad(float v) {
  return 0.5f * (1.0f + std::erf(v * 0.70710678118654752f)) +
         v * 0.39894228040143268f * std::exp(-0.5f * v * v);
}

}  // namespace

float hand_w2_forward(const float* x, const float* w, float* h, int64_t n, int64_t k, int64_t m,
                      int threads) {
  blas_threads(threads);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(n), static_cast<int>(m),
              static_cast<int>(k), 1.0f, x, static_cast<int>(k), w, static_cast<int>(m), 0.0f, h,
              static_cast<int>(m));
  const int64_t total = n * m;
  float s = 0;
#pragma omp parallel for simd num_threads(threads) schedule(static) reduction(+ : s)
  for (int64_t i = 0; i < total; ++i) s += gelu(h[i]);
  return s;
}

void hand_w2_backward(const float* x, const float* w, const float* h, float* dh, float* dx,
                      float* dw, int64_t n, int64_t k, int64_t m, int threads) {
  blas_threads(threads);
  const int64_t total = n * m;
#pragma omp parallel for simd num_threads(threads) schedule(static)
  for (int64_t i = 0; i < total; ++i) dh[i] = gelu_grad(h[i]);
  const int N = static_cast<int>(n), K = static_cast<int>(k), M = static_cast<int>(m);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, K, M, 1.0f, dh, M, w, M, 0.0f, dx, K);
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, K, M, N, 1.0f, x, K, dh, M, 0.0f, dw, M);
}

float hand_mlp_step(const float* x, const float* w1, const float* b1, const float* w2,
                    const float* b2, const float* y, float* dw1, float* db1, float* dw2,
                    float* db2, MlpScratch s, int64_t batch, int64_t in, int64_t hidden,
                    int64_t out, int threads) {
  blas_threads(threads);
  const int B = static_cast<int>(batch), D = static_cast<int>(in), H = static_cast<int>(hidden),
            O = static_cast<int>(out);
  // forward: pre = x @ W1; act = gelu(pre + b1) (pre keeps the biased value for the backward)
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, H, D, 1.0f, x, D, w1, H, 0.0f, s.pre,
              H);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < batch; ++i)
#pragma omp simd
    for (int64_t j = 0; j < hidden; ++j) {
      float v = s.pre[i * hidden + j] + b1[j];
      s.pre[i * hidden + j] = v;
      s.act[i * hidden + j] = gelu(v);
    }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, O, H, 1.0f, s.act, H, w2, O, 0.0f,
              s.pred, O);
  // loss and dpred = 2 (pred + b2 - y) / (B·O) in one pass
  const float scale = 2.0f / static_cast<float>(batch * out);
  float loss = 0;
  for (int64_t j = 0; j < out; ++j) db2[j] = 0;
  for (int64_t i = 0; i < batch; ++i)
    for (int64_t j = 0; j < out; ++j) {
      float d = s.pred[i * out + j] + b2[j] - y[i * out + j];
      loss += d * d;
      s.dpred[i * out + j] = scale * d;
      db2[j] += scale * d;
    }
  loss /= static_cast<float>(batch * out);
  // backward: dW2 = actᵀ dpred; dact = dpred W2ᵀ; dpre = dact * gelu'(pre); db1 = Σ_rows dpre;
  // dW1 = xᵀ dpre
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, H, O, B, 1.0f, s.act, H, s.dpred, O, 0.0f,
              dw2, O);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, H, O, 1.0f, s.dpred, O, w2, O, 0.0f,
              s.dact, H);
  for (int64_t j = 0; j < hidden; ++j) db1[j] = 0;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < batch; ++i)
#pragma omp simd
    for (int64_t j = 0; j < hidden; ++j)
      s.dact[i * hidden + j] *= gelu_grad(s.pre[i * hidden + j]);
  for (int64_t i = 0; i < batch; ++i)
#pragma omp simd
    for (int64_t j = 0; j < hidden; ++j) db1[j] += s.dact[i * hidden + j];
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, D, H, B, 1.0f, x, D, s.dact, H, 0.0f, dw1,
              H);
  return loss;
}

}  // namespace stax::bench
