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
