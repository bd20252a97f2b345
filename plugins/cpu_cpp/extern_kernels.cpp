#include "plugins/cpu_cpp/extern_kernels.h"

#include <cblas.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "stax/sdk/half_bits.hpp"

namespace stax::cpu {

namespace {

using sdk::DType;
using sdk::PluginError;
using sdk::TensorView;

[[noreturn]] void bad(const std::string& kernel, const std::string& what) {
  throw PluginError(STAX_ERROR_INVALID_ARGUMENT, "cpu_cpp extern kernel '" + kernel + "': " + what);
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// ---- element types ---------------------------------------------------------------------------

struct Half {
  uint16_t bits;
};
struct BF16 {
  uint16_t bits;
};

template <class T>
float to_float(T v) {
  if constexpr (std::is_same_v<T, Half>)
    return stax_f16::half_to_float(v.bits);
  else if constexpr (std::is_same_v<T, BF16>)
    return stax_f16::bf16_to_float(v.bits);
  else
    return static_cast<float>(v);
}
template <class T>
T from_float(float f) {
  if constexpr (std::is_same_v<T, Half>)
    return Half{stax_f16::float_to_half(f)};
  else if constexpr (std::is_same_v<T, BF16>)
    return BF16{stax_f16::float_to_bf16(f)};
  else
    return static_cast<T>(f);
}

template <class F>
void dispatch(DType d, F&& f) {
  switch (d) {
    case DType::Float32: return f(float{});
    case DType::Float64: return f(double{});
    case DType::Float16: return f(Half{});
    case DType::BFloat16: return f(BF16{});
    case DType::Int64: return f(int64_t{});
    case DType::Int32: return f(int32_t{});
    case DType::Int8: return f(int8_t{});
    case DType::UInt8: return f(uint8_t{});
    case DType::Bool: return f(bool{});
  }
}

// ---- operands ----------------------------------------------------------------------------------

// A tensor seen as (batch..., rows, cols) with strides in elements; a 1-D operand is a row or a
// column, a missing matrix dimension has extent 1 and stride 0.
struct Mat {
  const TensorView* t = nullptr;
  std::vector<int64_t> batch, batch_strides;
  int64_t rows = 1, cols = 1, rs = 0, cs = 0;
};

Mat operand(const TensorView& t, bool as_row) {
  Mat m;
  m.t = &t;
  size_t r = t.sizes.size();
  if (r == 1) {
    if (as_row) {
      m.cols = t.sizes[0];
      m.cs = t.strides[0];
    } else {
      m.rows = t.sizes[0];
      m.rs = t.strides[0];
    }
    return m;
  }
  m.batch.assign(t.sizes.begin(), t.sizes.end() - 2);
  m.batch_strides.assign(t.strides.begin(), t.strides.end() - 2);
  m.rows = t.sizes[r - 2];
  m.cols = t.sizes[r - 1];
  m.rs = t.strides[r - 2];
  m.cs = t.strides[r - 1];
  return m;
}

// The result of a @ b as a Mat over the output tensor (its unit dims dropped where an operand was
// 1-D), with the batch dims it must have.
Mat result(const TensorView& out, const TensorView& a, const TensorView& b) {
  Mat m;
  m.t = &out;
  size_t r = out.sizes.size();
  size_t mat_dims = (a.sizes.size() >= 2 ? 1 : 0) + (b.sizes.size() >= 2 ? 1 : 0);
  if (r < mat_dims) return m;
  m.batch.assign(out.sizes.begin(), out.sizes.end() - static_cast<long>(mat_dims));
  m.batch_strides.assign(out.strides.begin(), out.strides.end() - static_cast<long>(mat_dims));
  size_t d = r - mat_dims;
  if (a.sizes.size() >= 2) {
    m.rows = out.sizes[d];
    m.rs = out.strides[d];
    ++d;
  }
  if (b.sizes.size() >= 2) {
    m.cols = out.sizes[d];
    m.cs = out.strides[d];
  }
  return m;
}

// m's batch strides when broadcast to `batch` (0 on broadcast dims).
std::vector<int64_t> broadcast_strides(const Mat& m, const std::vector<int64_t>& batch) {
  std::vector<int64_t> s(batch.size(), 0);
  size_t off = batch.size() - m.batch.size();
  for (size_t i = 0; i < m.batch.size(); ++i)
    if (m.batch[i] != 1) s[off + i] = m.batch_strides[i];
  return s;
}

// ---- one product -------------------------------------------------------------------------------

// How BLAS reads a strided matrix in place: row-major (NoTrans) or column-major (Trans).
struct BlasView {
  bool ok = false;
  CBLAS_TRANSPOSE trans = CblasNoTrans;
  int ld = 1;
};

BlasView blas_view(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  BlasView v;
  if ((cs == 1 || cols <= 1) && (rows <= 1 || rs >= std::max<int64_t>(1, cols))) {
    v.ok = true;
    v.ld = static_cast<int>(rows <= 1 ? std::max<int64_t>(1, cols) : rs);
  } else if ((rs == 1 || rows <= 1) && (cols <= 1 || cs >= std::max<int64_t>(1, rows))) {
    v.ok = true;
    v.trans = CblasTrans;
    v.ld = static_cast<int>(cols <= 1 ? std::max<int64_t>(1, rows) : cs);
  }
  return v;
}

template <class T>
void gather(const T* src, int64_t rows, int64_t cols, int64_t rs, int64_t cs, std::vector<T>& dst) {
  dst.resize(static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) dst[i * cols + j] = src[i * rs + j * cs];
}

// c[i*crs + j*ccs] = sum_p a[i*ars + p*acs] * b[p*brs + j*bcs] for an n x k by k x m product.
template <class T>
void gemm(const T* a, int64_t ars, int64_t acs, const T* b, int64_t brs, int64_t bcs, T* c,
          int64_t crs, int64_t ccs, int64_t n, int64_t k, int64_t m) {
  if (n == 0 || m == 0) return;
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    // BLAS writes C row-major with leading dimension ldc; other layouts go through a copy.
    bool direct = (ccs == 1 || m <= 1) && (n <= 1 || crs >= std::max<int64_t>(1, m));
    int64_t ldc = n <= 1 ? std::max<int64_t>(1, m) : crs;
    std::vector<T> c_tmp;
    T* cp = c;
    if (!direct) {
      c_tmp.assign(static_cast<size_t>(n * m), T(0));
      cp = c_tmp.data();
      ldc = m;
    }
    if (k == 0) {
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < m; ++j) cp[i * ldc + j] = T(0);
    } else {
      std::vector<T> a_copy, b_copy;
      BlasView av = blas_view(n, k, ars, acs), bv = blas_view(k, m, brs, bcs);
      if (!av.ok) {
        gather(a, n, k, ars, acs, a_copy);
        a = a_copy.data();
        av = blas_view(n, k, k, 1);
      }
      if (!bv.ok) {
        gather(b, k, m, brs, bcs, b_copy);
        b = b_copy.data();
        bv = blas_view(k, m, m, 1);
      }
      const int N = static_cast<int>(n), M = static_cast<int>(m), K = static_cast<int>(k);
      const int LDC = static_cast<int>(ldc);
      if constexpr (std::is_same_v<T, float>)
        cblas_sgemm(CblasRowMajor, av.trans, bv.trans, N, M, K, 1.0f, a, av.ld, b, bv.ld, 0.0f, cp,
                    LDC);
      else
        cblas_dgemm(CblasRowMajor, av.trans, bv.trans, N, M, K, 1.0, a, av.ld, b, bv.ld, 0.0, cp,
                    LDC);
    }
    if (cp != c)
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < m; ++j) c[i * crs + j * ccs] = cp[i * ldc + j];
  } else {
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j) {
        T* out = c + i * crs + j * ccs;
        if constexpr (std::is_same_v<T, bool>) {
          bool acc = false;
          for (int64_t p = 0; p < k && !acc; ++p)
            acc = a[i * ars + p * acs] && b[p * brs + j * bcs];
          *out = acc;
        } else if constexpr (std::is_integral_v<T>) {
          uint64_t acc = 0;
          for (int64_t p = 0; p < k; ++p)
            acc += static_cast<uint64_t>(static_cast<int64_t>(a[i * ars + p * acs])) *
                   static_cast<uint64_t>(static_cast<int64_t>(b[p * brs + j * bcs]));
          *out = static_cast<T>(acc);
        } else {
          double acc = 0;
          for (int64_t p = 0; p < k; ++p)
            acc += static_cast<double>(to_float(a[i * ars + p * acs])) *
                   static_cast<double>(to_float(b[p * brs + j * bcs]));
          *out = from_float<T>(static_cast<float>(acc));
        }
      }
  }
}

// out = a @ b with batch broadcasting; out's batch dims must equal the broadcast batch.
void matmul(const std::string& kernel, const TensorView& ta, const TensorView& tb,
            const TensorView& tout) {
  if (ta.sizes.empty() || tb.sizes.empty()) bad(kernel, "operands must be at least 1-D");
  if (ta.dtype != tb.dtype || tout.dtype != ta.dtype)
    bad(kernel, "operands and result must share one dtype");
  Mat a = operand(ta, true), b = operand(tb, false), c = result(tout, ta, tb);
  if (a.cols != b.rows)
    bad(kernel, "shapes cannot be multiplied (" + shape_str(ta.sizes) + " and " +
                    shape_str(tb.sizes) + ")");
  std::vector<int64_t> batch(std::max(a.batch.size(), b.batch.size()), 1);
  for (const Mat* m : {&a, &b}) {
    size_t off = batch.size() - m->batch.size();
    for (size_t i = 0; i < m->batch.size(); ++i) {
      int64_t s = m->batch[i];
      if (s == 1) continue;
      if (batch[off + i] != 1 && batch[off + i] != s)
        bad(kernel, "batch dimensions do not broadcast (" + shape_str(ta.sizes) + " and " +
                        shape_str(tb.sizes) + ")");
      batch[off + i] = s;
    }
  }
  if (c.batch != batch || c.rows != a.rows || c.cols != b.cols)
    bad(kernel, "result shape " + shape_str(tout.sizes) + " does not match operands " +
                    shape_str(ta.sizes) + " and " + shape_str(tb.sizes));
  std::vector<int64_t> as = broadcast_strides(a, batch), bs = broadcast_strides(b, batch);
  const std::vector<int64_t>& cs = c.batch_strides;
  int64_t count = 1;
  for (int64_t s : batch) count *= s;
  dispatch(ta.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* pa = static_cast<const T*>(ta.data) + ta.offset;
    const T* pb = static_cast<const T*>(tb.data) + tb.offset;
    T* pc = static_cast<T*>(tout.data) + tout.offset;
    std::vector<int64_t> idx(batch.size(), 0);
    for (int64_t e = 0; e < count; ++e) {
      int64_t oa = 0, ob = 0, oc = 0;
      for (size_t d = 0; d < batch.size(); ++d) {
        oa += idx[d] * as[d];
        ob += idx[d] * bs[d];
        oc += idx[d] * cs[d];
      }
      gemm<T>(pa + oa, a.rs, a.cs, pb + ob, b.rs, b.cs, pc + oc, c.rs, c.cs, a.rows, a.cols,
              b.cols);
      for (size_t d = batch.size(); d-- > 0;) {
        if (++idx[d] < batch[d]) break;
        idx[d] = 0;
      }
    }
  });
}

// out = beta * self + alpha * out (out holds the product), self broadcast to out's 2-D shape.
void addmm_epilogue(const TensorView& self, const TensorView& out, double beta, double alpha) {
  if (out.sizes.size() != 2) bad("addmm", "the result must be 2-D");
  if (self.sizes.size() > 2) bad("addmm", "self must have at most 2 dims");
  int64_t n = out.sizes[0], m = out.sizes[1];
  int64_t srs = 0, scs = 0;
  size_t sr = self.sizes.size();
  if (sr >= 1) {
    int64_t last = self.sizes[sr - 1];
    if (last != 1 && last != m)
      bad("addmm", "self " + shape_str(self.sizes) + " does not broadcast");
    scs = last == 1 ? 0 : self.strides[sr - 1];
  }
  if (sr == 2) {
    int64_t first = self.sizes[0];
    if (first != 1 && first != n)
      bad("addmm", "self " + shape_str(self.sizes) + " does not broadcast");
    srs = first == 1 ? 0 : self.strides[0];
  }
  bool beta_zero = beta == 0;
  if (beta_zero && alpha == 1) return;
  if (self.dtype != out.dtype) bad("addmm", "self and the result must share one dtype");
  dispatch(out.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* ps = static_cast<const T*>(self.data) + self.offset;
    T* po = static_cast<T*>(out.data) + out.offset;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j) {
        T& o = po[i * out.strides[0] + j * out.strides[1]];
        const T& s = ps[i * srs + j * scs];
        if constexpr (std::is_same_v<T, bool>) {
          bool al = alpha != 0, be = beta != 0;
          o = beta_zero ? (al && o) : ((be && s) || (al && o));
        } else if constexpr (std::is_integral_v<T>) {
          uint64_t al = static_cast<uint64_t>(static_cast<int64_t>(alpha));
          uint64_t be = static_cast<uint64_t>(static_cast<int64_t>(beta));
          uint64_t p = static_cast<uint64_t>(static_cast<int64_t>(o));
          uint64_t sv = static_cast<uint64_t>(static_cast<int64_t>(s));
          o = static_cast<T>(static_cast<int64_t>(beta_zero ? al * p : be * sv + al * p));
        } else if constexpr (std::is_same_v<T, double>) {
          o = beta_zero ? alpha * o : beta * s + alpha * o;
        } else {
          float al = static_cast<float>(alpha), be = static_cast<float>(beta);
          float p = to_float(o), sv = to_float(s);
          o = from_float<T>(beta_zero ? al * p : be * sv + al * p);
        }
      }
  });
}

void check_arity(const std::string& name, const std::vector<TensorView>& t, size_t num_inputs,
                 size_t want_inputs) {
  if (num_inputs != want_inputs || t.size() != want_inputs + 1)
    bad(name, "takes " + std::to_string(want_inputs) + " inputs and 1 output, got " +
                  std::to_string(num_inputs) + " inputs and " +
                  std::to_string(t.size() - std::min(t.size(), num_inputs)) + " outputs");
  for (const TensorView& v : t) {
    int64_t numel = 1;
    for (int64_t d : v.sizes) numel *= d;
    if (!v.data && numel > 0) bad(name, "null data pointer");
    if (v.strides.size() != v.sizes.size()) bad(name, "sizes and strides differ in rank");
  }
}

}  // namespace

void set_blas_threads(int threads) {
#ifdef OPENBLAS_VERSION
  if (openblas_get_num_threads() != threads) openblas_set_num_threads(threads);
#else
  (void)threads;
#endif
}

const std::vector<std::string>& extern_kernel_names() {
  static const std::vector<std::string> names = {"mm", "bmm", "addmm", "matmul", "convolution"};
  return names;
}

void run_extern_kernel(const std::string& name, const std::vector<TensorView>& t, size_t num_inputs,
                       const std::vector<double>& scalars) {
  if (name == "mm" || name == "bmm") {
    check_arity(name, t, num_inputs, 2);
    size_t rank = name == "mm" ? 2 : 3;
    if (t[0].sizes.size() != rank || t[1].sizes.size() != rank)
      bad(name, "operands must be " + std::to_string(rank) + "-D, got " + shape_str(t[0].sizes) +
                    " and " + shape_str(t[1].sizes));
    matmul(name, t[0], t[1], t[2]);
  } else if (name == "matmul") {
    check_arity(name, t, num_inputs, 2);
    matmul(name, t[0], t[1], t[2]);
  } else if (name == "addmm") {
    check_arity(name, t, num_inputs, 3);
    if (t[1].sizes.size() != 2 || t[2].sizes.size() != 2)
      bad(name, "mat1 and mat2 must be 2-D, got " + shape_str(t[1].sizes) + " and " +
                    shape_str(t[2].sizes));
    double beta = scalars.size() > 0 ? scalars[0] : 1.0;
    double alpha = scalars.size() > 1 ? scalars[1] : 1.0;
    matmul(name, t[1], t[2], t[3]);
    addmm_epilogue(t[0], t[3], beta, alpha);
  } else if (name == "convolution") {
    run_convolution(t, num_inputs, scalars);
  } else {
    throw PluginError(STAX_ERROR_UNSUPPORTED, "cpu_cpp has no extern kernel '" + name + "'");
  }
}

}  // namespace stax::cpu
