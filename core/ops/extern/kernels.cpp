// Interpreter kernels of the matrix products (mm, bmm, matmul, addmm).
//
// float32 / float64 use OpenBLAS (cblas_sgemm / cblas_dgemm), reading strided operands in place
// when one of their two strides is 1 (a transposed operand is passed as CblasTrans) and through a
// row-major copy otherwise. Other dtypes use a plain triple loop that accumulates in double
// (float16, bfloat16: one rounding at the end), in int64 with wrap-around (integers) or as a
// logical or of ands (bool). BLAS may sum in any order, so float results match a naive loop only
// within the usual gemm error bound (about k * eps * sum |a_ik b_kj|).
//
// addmm computes the product first and then beta * self + alpha * product elementwise in the
// computation type (float for float32, double for float64, ...); beta == 0 ignores self entirely
// (NaN and Inf in self do not propagate), as torch documents.
#include <array>
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "core/graph/op_registry.h"
#include "core/interpreter/interpreter.h"
#include "core/ops/common/kernel_utils.h"
#include "core/ops/pointwise/formulas.h"
#include "core/ops/registration.h"
#include "core/ops/special/functions.h"

namespace stax {

namespace {

using kernels::i64;

// One operand of a batched product: element (batch b, row i, col j) lives at element offset
// dot(b, batch_strides) + i * rs + j * cs from the tensor's first element.
struct MatOperand {
  const Tensor* t;
  Shape batch_sizes, batch_strides;
  int64_t rows, cols, rs, cs;
};

// `t` seen as a (batch..., rows, cols) operand; a 1-D tensor becomes a row (as_row) or a column.
MatOperand operand(const Tensor& t, bool as_row) {
  MatOperand m{&t, {}, {}, 1, 1, 0, 0};
  if (t.dim() == 1) {
    if (as_row) {
      m.cols = t.sizes()[0];
      m.cs = t.strides()[0];
    } else {
      m.rows = t.sizes()[0];
      m.rs = t.strides()[0];
    }
    return m;
  }
  int64_t r = t.dim();
  m.batch_sizes.assign(t.sizes().begin(), t.sizes().end() - 2);
  m.batch_strides.assign(t.strides().begin(), t.strides().end() - 2);
  m.rows = t.sizes()[r - 2];
  m.cols = t.sizes()[r - 1];
  m.rs = t.strides()[r - 2];
  m.cs = t.strides()[r - 1];
  return m;
}

// The strides reading operand m's batch dims broadcast to `batch` (0 where broadcast).
Shape batch_strides_for(const MatOperand& m, const Shape& batch) {
  Shape s(batch.size(), 0);
  size_t off = batch.size() - m.batch_sizes.size();
  for (size_t i = 0; i < m.batch_sizes.size(); ++i)
    if (m.batch_sizes[i] != 1) s[off + i] = m.batch_strides[i];
  return s;
}

// How BLAS can read a strided matrix without a copy: row-major (NoTrans) or column-major (Trans).
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

// C (row-major, n x m, leading dim m) = A (n x k) @ B (k x m) for one batch entry.
template <class T>
void gemm_one(const T* a, int64_t n, int64_t k, int64_t ars, int64_t acs, const T* b, int64_t m,
              int64_t brs, int64_t bcs, T* c) {
  if (n == 0 || m == 0) return;
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (k == 0) {
      std::fill(c, c + n * m, T(0));
      return;
    }
    std::vector<T> a_copy, b_copy;
    BlasView av = blas_view(n, k, ars, acs), bv = blas_view(k, m, brs, bcs);
    if (!av.ok) {  // gather into a row-major copy
      a_copy.resize(static_cast<size_t>(n * k));
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < k; ++j) a_copy[i * k + j] = a[i * ars + j * acs];
      a = a_copy.data();
      av = blas_view(n, k, k, 1);
    }
    if (!bv.ok) {
      b_copy.resize(static_cast<size_t>(k * m));
      for (int64_t i = 0; i < k; ++i)
        for (int64_t j = 0; j < m; ++j) b_copy[i * m + j] = b[i * brs + j * bcs];
      b = b_copy.data();
      bv = blas_view(k, m, m, 1);
    }
    const int N = static_cast<int>(n), M = static_cast<int>(m), K = static_cast<int>(k);
    if constexpr (std::is_same_v<T, float>)
      cblas_sgemm(CblasRowMajor, av.trans, bv.trans, N, M, K, 1.0f, a, av.ld, b, bv.ld, 0.0f, c, M);
    else
      cblas_dgemm(CblasRowMajor, av.trans, bv.trans, N, M, K, 1.0, a, av.ld, b, bv.ld, 0.0, c, M);
  } else {
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j) {
        if constexpr (std::is_same_v<T, bool>) {
          bool acc = false;
          for (int64_t p = 0; p < k && !acc; ++p)
            acc = a[i * ars + p * acs] && b[p * brs + j * bcs];
          c[i * m + j] = acc;
        } else if constexpr (std::is_integral_v<T>) {
          uint64_t acc = 0;
          for (int64_t p = 0; p < k; ++p)
            acc += static_cast<uint64_t>(static_cast<int64_t>(a[i * ars + p * acs])) *
                   static_cast<uint64_t>(static_cast<int64_t>(b[p * brs + j * bcs]));
          c[i * m + j] = static_cast<T>(acc);
        } else {
          double acc = 0;
          for (int64_t p = 0; p < k; ++p)
            acc += static_cast<double>(static_cast<float>(a[i * ars + p * acs])) *
                   static_cast<double>(static_cast<float>(b[p * brs + j * bcs]));
          c[i * m + j] = T(static_cast<float>(acc));
        }
      }
  }
}

// out (row-major, sizes = batch + [n, m] with 1-D operands' unit dims dropped) = A @ B.
void batched_matmul(const KernelContext& ctx, const MatOperand& a, const MatOperand& b,
                    const Tensor& out) {
  if (a.cols != b.rows)
    ctx.fail("mat1 and mat2 shapes cannot be multiplied (" + shape_str(a.t->sizes()) + " and " +
             shape_str(b.t->sizes()) + ")");
  if (a.t->dtype() != b.t->dtype() || out.dtype() != a.t->dtype())
    ctx.fail("operands and result must share one dtype");
  Shape batch = broadcast_shapes(a.batch_sizes, b.batch_sizes, "%" + ctx.node().name());
  Shape as = batch_strides_for(a, batch), bs = batch_strides_for(b, batch);
  int64_t n = a.rows, k = a.cols, m = b.cols;
  dispatch(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pa = a.t->data<T>();
    const T* pb = b.t->data<T>();
    T* pc = out.data<T>();
    int64_t batch_index = 0;
    kernels::for_each_offset<2>(batch, {as, bs}, [&](const std::array<int64_t, 2>& off) {
      gemm_one<T>(pa + off[0], n, k, a.rs, a.cs, pb + off[1], m, b.rs, b.cs,
                  pc + batch_index * n * m);
      ++batch_index;
    });
  });
}

Tensor mm_kernel(const KernelContext& ctx) {
  Tensor out = Tensor::empty(ctx.out_meta().sizes, ctx.out_meta().dtype);
  batched_matmul(ctx, operand(ctx.tensor("self"), true), operand(ctx.tensor("mat2"), false), out);
  return out;
}

Tensor matmul_kernel(const KernelContext& ctx) {
  const Tensor& a = ctx.tensor("self");
  const Tensor& b = ctx.tensor("other");
  if (a.dim() == 0 || b.dim() == 0)
    ctx.fail("both arguments to matmul need to be at least 1D, got " + shape_str(a.sizes()) +
             " and " + shape_str(b.sizes()));
  Tensor out = Tensor::empty(ctx.out_meta().sizes, ctx.out_meta().dtype);
  batched_matmul(ctx, operand(a, true), operand(b, false), out);
  return out;
}

Tensor addmm_kernel(const KernelContext& ctx) {
  const Tensor& self = ctx.tensor("self");
  Tensor prod = Tensor::empty(ctx.out_meta().sizes, ctx.out_meta().dtype);
  batched_matmul(ctx, operand(ctx.tensor("mat1"), true), operand(ctx.tensor("mat2"), false), prod);
  const Arg& beta = ctx.arg("beta");
  const Arg& alpha = ctx.arg("alpha");
  bool beta_zero = beta.to_double() == 0;
  if (beta_zero && alpha.is_int() && alpha.to_int() == 1) return prod;
  Tensor out = Tensor::empty(prod.sizes(), prod.dtype());
  DType compute = prod.dtype() == DType::Float64 ? DType::Float64
                  : is_floating(prod.dtype())    ? DType::Float32
                  : prod.dtype() == DType::Bool  ? DType::Bool
                                                 : DType::Int64;
  kernels::dispatch_compute(compute, [&](auto tag) {
    using C = typename decltype(tag)::type;
    C al = kernels::scalar_as<C>(alpha), be = kernels::scalar_as<C>(beta);
    if (beta_zero) {
      kernels::map_into_as<C, 1>(out, {prod}, [&](C p) -> C {
        if constexpr (std::is_same_v<C, bool>)
          return al && p;
        else
          return al * p;
      });
    } else {
      kernels::map_into_as<C, 2>(out, {self, prod}, [&](C s, C p) -> C {
        if constexpr (std::is_same_v<C, bool>)
          return (be && s) || (al && p);
        else if constexpr (std::is_same_v<C, i64>)
          return static_cast<i64>(static_cast<uint64_t>(be) * static_cast<uint64_t>(s) +
                                  static_cast<uint64_t>(al) * static_cast<uint64_t>(p));
        else
          return be * s + al * p;
      });
    }
  });
  return out;
}

using namespace kernels;

}  // namespace

void register_extern_kernels(InterpreterTable& t) {
  t.add("mm.default", mm_kernel);
  t.add("bmm.default", mm_kernel);
  t.add("matmul.default", matmul_kernel);
  t.add("addmm.default", addmm_kernel);
  // Composite ops: their decomposition, on the interpreter.
  for (const char* op : {"baddbmm.default"})
    t.add(op, kernels::run_decomposition);
  // ---- Composite ops: their decomposition
  for (const char* op :
         {"dot.default", "vdot.default", "mv.default", "addmv.default", "addr.default",
          "addbmm.default", "linalg_cross.default"})
    t.add(op, kernels::run_decomposition);
}

}  // namespace stax
