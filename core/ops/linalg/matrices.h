// Moving batches of matrices between Stax's row-major tensors and LAPACK's column-major buffers
// (the linalg kernels, kernels.cpp).
#pragma once

#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "core/support/error.h"
#include "core/tensor/tensor.h"

namespace stax::linalg {

// A matrix dimension as LAPACK's int (LP64): larger ones are an error, not a wrap.
inline int lapack_int(int64_t v, const std::string& where) {
  if (v > INT_MAX)
    throw Error("runtime", where,
                "a matrix dimension of " + std::to_string(v) + " exceeds LAPACK's 32-bit sizes");
  return static_cast<int>(v);
}
inline int ld(int64_t v) { return v < 1 ? 1 : static_cast<int>(v); }

// t broadcast to `sizes` (zero strides over the broadcast dims), as a contiguous copy.
inline Tensor broadcast_contiguous(const Tensor& t, const Shape& sizes) {
  if (t.sizes() == sizes) return t.contiguous();
  Shape st(sizes.size(), 0);
  size_t lead = sizes.size() - t.sizes().size();
  for (size_t i = 0; i < t.sizes().size(); ++i)
    st[lead + i] = t.sizes()[i] == 1 && sizes[lead + i] != 1 ? 0 : t.strides()[i];
  return t.as_strided(sizes, st, t.storage_offset()).contiguous();
}

// The number of matrices of a (*, m, n) shape.
inline int64_t batch_count(const Shape& s) {
  int64_t b = 1;
  for (size_t i = 0; i + 2 < s.size(); ++i) b *= s[i];
  return b;
}

// Row-major m x n at `src` into column-major with leading dimension `ldd` at `dst`.
template <class T>
void to_colmajor(const T* src, int64_t m, int64_t n, T* dst, int64_t ldd) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) dst[i + j * ldd] = src[i * n + j];
}

// Column-major (leading dimension `lds`) at `src` into row-major m x n at `dst`.
template <class T>
void from_colmajor(const T* src, int64_t lds, int64_t m, int64_t n, T* dst) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) dst[i * n + j] = src[i + j * lds];
}

// Matrix `k` of a contiguous (*, m, n) tensor as a column-major buffer (leading dimension m).
template <class T>
std::vector<T> load(const Tensor& t, int64_t k) {
  int64_t m = t.size(-2), n = t.size(-1);
  std::vector<T> buf(static_cast<size_t>(std::max<int64_t>(1, m * n)));
  to_colmajor(t.data<T>() + k * m * n, m, n, buf.data(), std::max<int64_t>(1, m));
  return buf;
}

// Calls f(float{}) or f(double{}) by dtype; the linalg ops take no other.
template <class F>
decltype(auto) by_float_type(DType t, const std::string& where, F&& f) {
  if (t == DType::Float32) return f(float{});
  if (t == DType::Float64) return f(double{});
  throw Error("runtime", where,
              "the linalg kernels take float32 or float64, got " + std::string(dtype_name(t)));
}

}  // namespace stax::linalg
