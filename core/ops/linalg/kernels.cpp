// Interpreter kernels of the linear-algebra ops (docs/linalg.md): each copies a batch of
// matrices to LAPACK's column-major layout, calls the LAPACK routine torch's CPU kernels call
// (getrf, getrs, potrf, geqrf + orgqr, syevd, gesdd, trsm, ormqr) and copies the result back.
// The compiled path runs these same kernels as counted interpreter fallbacks (no lowering rule).
#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/interpreter/interpreter.h"
#include "core/ops/common/kernel_utils.h"
#include "core/ops/linalg/error_checks.h"
#include "core/ops/linalg/lapack.h"
#include "core/ops/linalg/linalg_args.h"
#include "core/ops/linalg/matrix_exp.h"
#include "core/ops/linalg/packed_factors.h"
#include "core/ops/linalg/matrices.h"
#include "core/ops/registration.h"

namespace stax {

namespace {

using namespace linalg;

std::string where(const KernelContext& c) { return "%" + c.node().name(); }

Tensor output(const KernelContext& c) {
  return Tensor::empty(c.out_meta().sizes, c.out_meta().dtype);
}

// LU factorization of every matrix of A: (LU column-major per matrix, pivots, info).
template <class T>
struct LuBatch {
  std::vector<std::vector<T>> lu;
  std::vector<std::vector<int>> pivots;
  std::vector<int> info;
};

template <class T>
LuBatch<T> factor_lu(const Tensor& a_in, const std::string& w) {
  Tensor a = a_in.contiguous();
  int m = lapack_int(a.size(-2), w), n = lapack_int(a.size(-1), w);
  int64_t count = batch_count(a.sizes());
  LuBatch<T> r;
  for (int64_t b = 0; b < count; ++b) {
    std::vector<T> buf = load<T>(a, b);
    std::vector<int> piv(static_cast<size_t>(std::max(1, std::min(m, n))));
    r.info.push_back(m == 0 || n == 0 ? 0 : lapack::getrf<T>(m, n, buf.data(), ld(m), piv.data()));
    piv.resize(static_cast<size_t>(std::min(m, n)));
    r.lu.push_back(std::move(buf));
    r.pivots.push_back(std::move(piv));
  }
  return r;
}

// The batch shape with the matrix dims replaced by `tail`.
Shape batch_plus(const Shape& a, std::initializer_list<int64_t> tail) {
  Shape s = batch_of(a);
  s.insert(s.end(), tail);
  return s;
}

// The packed results of the factorization of `c`'s node (packed_factors.h) for its A.
std::vector<int64_t> numels_of(const KernelContext& c, const Tensor& a) {
  const Node& n = c.node();
  const OpSchema& s = n.op()->schema;
  std::string mode = s.index_of("mode") >= 0 ? c.arg("mode").str() : std::string();
  bool full = s.index_of("full_matrices") >= 0 && c.arg("full_matrices").to_bool();
  return part_numels(s.base, a.sizes(), mode, full);
}

// An element op's kernel (_stax_linalg_lu ...): output = kAllParts packs every result of the
// factorization (`all`); with a `factors` argument the result is read from it; else `one`
// computes it.
using PartsFn = std::function<std::vector<Tensor>(const KernelContext&)>;
KernelFn element_kernel(KernelFn one, PartsFn all) {
  return [one, all](const KernelContext& c) -> Tensor {
    const Tensor& a = c.tensor("A");
    int64_t part = c.arg("output").to_int();
    if (part == kAllParts)
      return pack_parts(all(c), batch_of(a.sizes()), a.dtype(), numels_of(c, a));
    if (!c.arg("factors").is_absent())
      return unpack_part(c.tensor("factors"), numels_of(c, a), static_cast<size_t>(part),
                         c.out_meta());
    return one(c);
  };
}

// A kernel computing one result as `all` computes it with the others (one LAPACK call yields
// them all).
KernelFn element_kernel(PartsFn all) {
  return element_kernel(
      [all](const KernelContext& c) { return all(c).at(c.arg("output").to_int()); }, all);
}

std::vector<Tensor> lu_parts(const KernelContext& c) {
  const Tensor& a = c.tensor("A");
  int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n);
  std::vector<Tensor> out{Tensor::empty(a.sizes(), a.dtype()),
                          Tensor::empty(batch_plus(a.sizes(), {k}), DType::Int32),
                          Tensor::empty(batch_of(a.sizes()), DType::Int32)};
  by_float_type(a.dtype(), where(c), [&](auto tag) {
    using T = decltype(tag);
    LuBatch<T> f = factor_lu<T>(a, where(c));
    for (size_t b = 0; b < f.lu.size(); ++b) {
      from_colmajor(f.lu[b].data(), ld(m), m, n, out[kLU].data<T>() + b * m * n);
      for (int64_t i = 0; i < k; ++i) out[kPivots].data<int32_t>()[b * k + i] = f.pivots[b][i];
      out[kInfo].data<int32_t>()[b] = f.info[b];
    }
  });
  return out;
}

// The LU factors of `a` (contiguous, its batch that of `c`'s `factors` when given): read from
// the packed factors when the node has them, else computed.
template <class T>
LuBatch<T> lu_of(const KernelContext& c, const Tensor& a) {
  if (c.arg("factors").is_absent()) return factor_lu<T>(a, where(c));
  const Tensor& f = c.tensor("factors");
  Shape fb = batch_of(a.sizes());
  fb.push_back(f.size(-1));
  Tensor packed = broadcast_contiguous(f, fb);
  std::vector<int64_t> numels = part_numels("_stax_linalg_lu", a.sizes());
  int64_t k = std::min(a.size(-2), a.size(-1));
  Tensor lu = unpack_part(packed, numels, kLU, TensorMeta::contiguous(a.sizes(), a.dtype()));
  Tensor piv = unpack_part(packed, numels, kPivots,
                           TensorMeta::contiguous(batch_plus(a.sizes(), {k}), DType::Int32));
  LuBatch<T> r;
  for (int64_t b = 0; b < batch_count(a.sizes()); ++b) {
    r.lu.push_back(load<T>(lu, b));
    const int32_t* p = piv.data<int32_t>() + b * k;
    r.pivots.emplace_back(p, p + k);
    r.info.push_back(0);
  }
  return r;
}

// det, sign or log|det| from the LU factors, as torch's: the product of U's diagonal (in order)
// times the permutation's sign.
Tensor det_kernel(const KernelContext& c) {
  const Tensor& a = c.tensor("A");
  Tensor out = output(c);
  int64_t part = c.arg("output").to_int();
  by_float_type(a.dtype(), where(c), [&](auto tag) {
    using T = decltype(tag);
    LuBatch<T> f = lu_of<T>(c, a.contiguous());
    int64_t n = a.size(-1);
    for (size_t b = 0; b < f.lu.size(); ++b) {
      T prod = 1, sign = 1, logabs = 0;
      for (int64_t i = 0; i < n; ++i) {
        T d = f.lu[b][i + i * n];
        bool swapped = f.pivots[b][i] != i + 1;
        prod *= d;
        if (swapped) prod = -prod;
        sign *= (d > 0 ? T(1) : d < 0 ? T(-1) : T(0)) * (swapped ? T(-1) : T(1));
        logabs += std::log(std::abs(d));
      }
      out.data<T>()[b] = part == kDet ? prod : part == kSign ? sign : logabs;
    }
  });
  return out;
}

// Solves op(A) X = B with A given by its LU factors (row-major LU, pivots), B's matrices
// replaced by X in place. left=false solves X op(A) = B, i.e. op(A)^T X^T = B^T: B's row-major
// buffer is B^T column-major.
template <class T>
void lu_solve_batch(const std::vector<T>& lu_cm, const int* piv, int n, T* b_rowmajor, int64_t r,
                    int64_t s, bool left, bool adjoint) {
  if (n == 0 || r == 0 || s == 0) return;
  if (left) {
    std::vector<T> bc(static_cast<size_t>(r * s));
    to_colmajor(b_rowmajor, r, s, bc.data(), r);
    lapack::getrs<T>(adjoint ? 'T' : 'N', n, static_cast<int>(s), lu_cm.data(), ld(n), piv,
                     bc.data(), ld(r));
    from_colmajor(bc.data(), r, r, s, b_rowmajor);
  } else {
    lapack::getrs<T>(adjoint ? 'N' : 'T', n, static_cast<int>(r), lu_cm.data(), ld(n), piv,
                     b_rowmajor, ld(n));
  }
}

Tensor solve_kernel(const KernelContext& c) {
  const Tensor& a = c.tensor("A");
  Tensor out = output(c);
  bool left = c.arg("left").to_bool();
  Shape batch = batch_of(out.sizes());
  Tensor ab = broadcast_contiguous(a, with_matrix(batch, a.size(-2), a.size(-1)));
  out.copy_from(broadcast_contiguous(c.tensor("B"), out.sizes()));
  by_float_type(a.dtype(), where(c), [&](auto tag) {
    using T = decltype(tag);
    LuBatch<T> f = lu_of<T>(c, ab);
    int64_t r = out.size(-2), s = out.size(-1);
    int n = lapack_int(a.size(-1), where(c));
    for (size_t b = 0; b < f.lu.size(); ++b)
      lu_solve_batch<T>(f.lu[b], f.pivots[b].data(), n, out.data<T>() + b * r * s, r, s, left,
                        false);
  });
  return out;
}

// A solve from a factorization: the factor (n x n) and its pivots broadcast over out's batch,
// contiguous, and B copied into out (solved in place).
std::pair<Tensor, Tensor> factor_operands(const KernelContext& c, const char* factor, Tensor& out) {
  Shape batch = batch_of(out.sizes());
  const Tensor& f = c.tensor(factor);
  int64_t n = f.size(-1);
  Shape pb = batch;
  pb.push_back(n);
  std::pair<Tensor, Tensor> r{broadcast_contiguous(f, with_matrix(batch, n, n)),
                              broadcast_contiguous(c.tensor("pivots"), pb)};
  out.copy_from(broadcast_contiguous(c.tensor("B"), out.sizes()));
  return r;
}

Tensor lu_solve_kernel(const KernelContext& c) {
  Tensor out = output(c);
  bool left = c.arg("left").to_bool(), adjoint = c.arg("adjoint").to_bool();
  auto [lu, piv] = factor_operands(c, "LU", out);
  int64_t n = lu.size(-1);
  by_float_type(lu.dtype(), where(c), [&](auto tag) {
    using T = decltype(tag);
    int64_t r = out.size(-2), s = out.size(-1);
    for (int64_t b = 0; b < batch_count(out.sizes()); ++b)
      lu_solve_batch<T>(load<T>(lu, b), piv.data<int32_t>() + b * n, lapack_int(n, where(c)),
                        out.data<T>() + b * r * s, r, s, left, adjoint);
  });
  return out;
}

Tensor solve_triangular_kernel(const KernelContext& c) {
  const Tensor& a = c.tensor("self");
  Tensor out = output(c);
  bool left = c.arg("left").to_bool();
  char uplo = c.arg("upper").to_bool() ? 'U' : 'L';
  char diag = c.arg("unitriangular").to_bool() ? 'U' : 'N';
  Shape batch = batch_of(out.sizes());
  int64_t n = a.size(-1);
  Tensor ab = broadcast_contiguous(a, with_matrix(batch, n, n));
  out.copy_from(broadcast_contiguous(c.tensor("B"), out.sizes()));
  by_float_type(a.dtype(), where(c), [&](auto tag) {
    using T = decltype(tag);
    int64_t r = out.size(-2), s = out.size(-1);
    if (n == 0 || r == 0 || s == 0) return;
    for (int64_t b = 0; b < batch_count(out.sizes()); ++b) {
      std::vector<T> ac = load<T>(ab, b);
      std::vector<T> bc(static_cast<size_t>(r * s));
      T* x = out.data<T>() + b * r * s;
      to_colmajor(x, r, s, bc.data(), r);
      lapack::trsm<T>(left ? 'L' : 'R', uplo, 'N', diag, lapack_int(r, where(c)),
                      lapack_int(s, where(c)), ac.data(), ld(n), bc.data(), ld(r));
      from_colmajor(bc.data(), r, r, s, x);
    }
  });
  return out;
}

std::vector<Tensor> cholesky_parts(const KernelContext& c) {
  const Tensor a = c.tensor("A").contiguous();
  std::vector<Tensor> out{Tensor::empty(a.sizes(), a.dtype()),
                          Tensor::empty(batch_of(a.sizes()), DType::Int32)};
  bool upper = c.arg("upper").to_bool();
  by_float_type(a.dtype(), where(c), [&](auto tag) {
    using T = decltype(tag);
    int64_t n = a.size(-1);
    for (int64_t b = 0; b < batch_count(a.sizes()); ++b) {
      std::vector<T> buf = load<T>(a, b);
      int info = n == 0 ? 0 : lapack::potrf<T>(upper ? 'U' : 'L', lapack_int(n, where(c)),
                                               buf.data(), ld(n));
      out[1].data<int32_t>()[b] = info;
      T* l = out[0].data<T>() + b * n * n;
      from_colmajor(buf.data(), ld(n), n, n, l);
      for (int64_t i = 0; i < n; ++i)  // potrf leaves the other triangle as it was: zero it
        for (int64_t j = 0; j < n; ++j)
          if (upper ? j < i : j > i) l[i * n + j] = 0;
    }
  });
  return out;
}

// geqrf of every matrix: (a column-major with R above and the reflectors below, tau).
template <class T>
std::pair<std::vector<T>, std::vector<T>> qr_factor(const Tensor& a, int64_t b, const std::string& w) {
  int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n);
  std::vector<T> buf = load<T>(a, b);
  std::vector<T> tau(static_cast<size_t>(std::max<int64_t>(1, k)));
  if (k > 0) lapack::geqrf<T>(lapack_int(m, w), lapack_int(n, w), buf.data(), ld(m), tau.data());
  return {std::move(buf), std::move(tau)};
}

std::vector<Tensor> geqrf_parts(const KernelContext& c) {
  const Tensor a = c.tensor("A").contiguous();
  int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n);
  std::vector<Tensor> out{Tensor::empty(a.sizes(), a.dtype()),
                          Tensor::empty(batch_plus(a.sizes(), {k}), a.dtype())};
  by_float_type(a.dtype(), where(c), [&](auto tag) {
    using T = decltype(tag);
    for (int64_t b = 0; b < batch_count(a.sizes()); ++b) {
      auto [f, tau] = qr_factor<T>(a, b, where(c));
      from_colmajor(f.data(), ld(m), m, n, out[0].data<T>() + b * m * n);
      for (int64_t i = 0; i < k; ++i) out[1].data<T>()[b * k + i] = tau[i];
    }
  });
  return out;
}

// Q (*, m, qc) and R (*, rr, n) of every matrix, each only where its tensor is given (a Q of
// mode 'r' has no elements).
void qr_fill(const KernelContext& c, const Tensor& a, Tensor* q_out, Tensor* r_out) {
  if (q_out && q_out->numel() == 0) q_out = nullptr;
  by_float_type(a.dtype(), where(c), [&](auto tag) {
    using T = decltype(tag);
    int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n);
    for (int64_t b = 0; b < batch_count(a.sizes()); ++b) {
      auto [f, tau] = qr_factor<T>(a, b, where(c));
      if (r_out) {  // R: the upper triangle of the first rows (zeros below row k)
        int64_t rr = r_out->size(-2);
        T* dst = r_out->data<T>() + b * rr * n;
        for (int64_t i = 0; i < rr; ++i)
          for (int64_t j = 0; j < n; ++j) dst[i * n + j] = j >= i ? f[i + j * m] : T(0);
      }
      if (!q_out) continue;
      int64_t qc = q_out->size(-1);
      std::vector<T> q(static_cast<size_t>(std::max<int64_t>(1, m * qc)), T(0));
      for (int64_t j = 0; j < std::min(n, qc); ++j)
        for (int64_t i = 0; i < m; ++i) q[i + j * m] = f[i + j * m];
      if (m > 0 && qc > 0)
        lapack::orgqr<T>(lapack_int(m, where(c)), lapack_int(qc, where(c)),
                         lapack_int(k, where(c)), q.data(), ld(m), tau.data());
      from_colmajor(q.data(), ld(m), m, qc, q_out->data<T>() + b * m * qc);
    }
  });
}

// Q and R metadata of mode `mode` for a (*, m, n) input.
std::pair<Shape, Shape> qr_shapes(const Shape& a, const std::string& mode) {
  int64_t m = rows(a), n = cols(a), k = std::min(m, n);
  bool complete = mode == "complete";
  Shape q = mode == "r" ? Shape{0} : with_matrix(batch_of(a), m, complete ? m : k);
  return {q, with_matrix(batch_of(a), complete ? m : k, n)};
}

std::vector<Tensor> qr_parts(const KernelContext& c) {
  const Tensor a = c.tensor("A").contiguous();
  auto [qs, rs] = qr_shapes(a.sizes(), c.arg("mode").str());
  std::vector<Tensor> out{Tensor::empty(qs, a.dtype()), Tensor::empty(rs, a.dtype())};
  qr_fill(c, a, &out[0], &out[1]);
  return out;
}

Tensor qr_kernel(const KernelContext& c) {
  Tensor out = output(c);
  bool want_q = c.arg("output").to_int() == 0;
  qr_fill(c, c.tensor("A").contiguous(), want_q ? &out : nullptr, want_q ? nullptr : &out);
  return out;
}

// Eigenvalues (*, n) and, where `vectors` is given, eigenvectors (*, n, n) of every matrix.
void eigh_fill(const KernelContext& c, const Tensor& a, Tensor* values, Tensor* vectors) {
  char uplo = c.arg("UPLO").str() == "U" ? 'U' : 'L';
  by_float_type(a.dtype(), where(c), [&](auto tag) {
    using T = decltype(tag);
    int64_t n = a.size(-1);
    if (n == 0) return;
    for (int64_t b = 0; b < batch_count(a.sizes()); ++b) {
      std::vector<T> buf = load<T>(a, b);
      std::vector<T> w(static_cast<size_t>(n));
      int info = lapack::syevd<T>(vectors ? 'V' : 'N', uplo, lapack_int(n, where(c)), buf.data(),
                                  ld(n), w.data());
      if (info > 0)
        c.fail("linalg.eigh: The algorithm failed to converge because the input matrix is "
               "ill-conditioned or has too many repeated eigenvalues (error code: " +
               std::to_string(info) + ").");
      if (vectors) from_colmajor(buf.data(), ld(n), n, n, vectors->data<T>() + b * n * n);
      if (values) std::copy(w.begin(), w.end(), values->data<T>() + b * n);
    }
  });
}

std::vector<Tensor> eigh_parts(const KernelContext& c) {
  const Tensor a = c.tensor("A").contiguous();
  std::vector<Tensor> out{Tensor::empty(batch_plus(a.sizes(), {a.size(-1)}), a.dtype()),
                          Tensor::empty(a.sizes(), a.dtype())};
  eigh_fill(c, a, &out[0], &out[1]);
  return out;
}

Tensor eigh_kernel(const KernelContext& c) {
  Tensor out = output(c);
  bool vectors = c.arg("output").to_int() == 1;
  eigh_fill(c, c.tensor("A").contiguous(), vectors ? nullptr : &out, vectors ? &out : nullptr);
  return out;
}

// U (*, m, ucols), S (*, k) and Vh (*, vrows, n) of every matrix (gesdd), each where given;
// without U and Vh only the singular values are computed (jobz 'N').
void svd_fill(const KernelContext& c, const Tensor& a, Tensor* u_out, Tensor* s_out,
              Tensor* vh_out) {
  bool full = c.arg("full_matrices").to_bool();
  bool vectors = u_out || vh_out;
  by_float_type(a.dtype(), where(c), [&](auto tag) {
    using T = decltype(tag);
    int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n);
    int64_t ucols = full ? m : k, vrows = full ? n : k;
    for (int64_t b = 0; b < batch_count(a.sizes()); ++b) {
      std::vector<T> buf = load<T>(a, b);
      std::vector<T> s(static_cast<size_t>(std::max<int64_t>(1, k)));
      std::vector<T> u(static_cast<size_t>(std::max<int64_t>(1, m * ucols)), T(0));
      std::vector<T> vt(static_cast<size_t>(std::max<int64_t>(1, vrows * n)), T(0));
      if (k == 0) {  // no singular values: the full factors are identities
        for (int64_t i = 0; i < ucols && i < m; ++i) u[i + i * m] = 1;
        for (int64_t i = 0; i < vrows && i < n; ++i) vt[i + i * vrows] = 1;
      } else {
        char jobz = !vectors ? 'N' : full ? 'A' : 'S';
        int info = lapack::gesdd<T>(jobz, lapack_int(m, where(c)), lapack_int(n, where(c)),
                                    buf.data(), ld(m), s.data(), u.data(), ld(m), vt.data(),
                                    ld(vrows));
        if (info > 0)
          c.fail("linalg.svd: The algorithm failed to converge because the input matrix is "
                 "ill-conditioned or has too many repeated singular values (error code: " +
                 std::to_string(info) + ").");
      }
      if (u_out) from_colmajor(u.data(), ld(m), m, ucols, u_out->data<T>() + b * m * ucols);
      if (s_out) std::copy(s.begin(), s.begin() + k, s_out->data<T>() + b * k);
      if (vh_out) from_colmajor(vt.data(), ld(vrows), vrows, n, vh_out->data<T>() + b * vrows * n);
    }
  });
}

std::vector<Tensor> svd_parts(const KernelContext& c) {
  const Tensor a = c.tensor("A").contiguous();
  int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n);
  bool full = c.arg("full_matrices").to_bool();
  Shape batch = batch_of(a.sizes());
  std::vector<Tensor> out{Tensor::empty(with_matrix(batch, m, full ? m : k), a.dtype()),
                          Tensor::empty(batch_plus(a.sizes(), {k}), a.dtype()),
                          Tensor::empty(with_matrix(batch, full ? n : k, n), a.dtype())};
  svd_fill(c, a, &out[kU], &out[kS], &out[kVh]);
  return out;
}

Tensor svd_kernel(const KernelContext& c) {
  Tensor out = output(c);
  int64_t part = c.arg("output").to_int();
  svd_fill(c, c.tensor("A").contiguous(), part == kU ? &out : nullptr,
           part == kS ? &out : nullptr, part == kVh ? &out : nullptr);
  return out;
}

// A = P L U with P[perm[j], j] = 1, perm the rows after getrf's interchanges (1-based pivots).
Tensor permutation_kernel(const KernelContext& c) {
  const Tensor& lu = c.tensor("LU");
  Tensor out = output(c);
  out.fill(0);
  int64_t m = lu.size(-2), k = std::min(m, lu.size(-1));
  Tensor piv = c.tensor("pivots").contiguous();
  by_float_type(lu.dtype(), where(c), [&](auto tag) {
    using T = decltype(tag);
    for (int64_t b = 0; b < batch_count(out.sizes()); ++b) {
      std::vector<int64_t> perm(static_cast<size_t>(m));
      for (int64_t i = 0; i < m; ++i) perm[i] = i;
      for (int64_t i = 0; i < k; ++i) {
        int64_t p = piv.data<int32_t>()[b * k + i] - 1;
        if (p < 0 || p >= m)
          c.fail("lu_unpack: pivot " + std::to_string(p + 1) + " is out of range [1, " +
                 std::to_string(m) + "]");
        std::swap(perm[i], perm[p]);
      }
      for (int64_t j = 0; j < m; ++j) out.data<T>()[b * m * m + perm[j] * m + j] = 1;
    }
  });
  return out;
}

Tensor householder_kernel(const KernelContext& c) {
  const Tensor a = c.tensor("input").contiguous();
  Shape tb = batch_of(a.sizes());
  tb.push_back(c.tensor("tau").size(-1));
  Tensor tau = broadcast_contiguous(c.tensor("tau"), tb);
  Tensor out = output(c);
  by_float_type(a.dtype(), where(c), [&](auto tag) {
    using T = decltype(tag);
    int64_t m = a.size(-2), n = a.size(-1), k = tau.size(-1);
    for (int64_t b = 0; b < batch_count(a.sizes()); ++b) {
      std::vector<T> buf = load<T>(a, b);
      if (m > 0 && n > 0)
        lapack::orgqr<T>(lapack_int(m, where(c)), lapack_int(n, where(c)),
                         lapack_int(k, where(c)), buf.data(), ld(m), tau.data<T>() + b * k);
      from_colmajor(buf.data(), ld(m), m, n, out.data<T>() + b * m * n);
    }
  });
  return out;
}

Tensor ormqr_kernel(const KernelContext& c) {
  Tensor out = output(c);
  Shape batch = batch_of(out.sizes());
  const Tensor& a_in = c.tensor("self");
  Tensor a = broadcast_contiguous(a_in, with_matrix(batch, a_in.size(-2), a_in.size(-1)));
  Shape tb = batch;
  tb.push_back(c.tensor("input2").size(-1));
  Tensor tau = broadcast_contiguous(c.tensor("input2"), tb);
  out.copy_from(c.tensor("input3"));
  bool left = c.arg("left").to_bool(), trans = c.arg("transpose").to_bool();
  by_float_type(a.dtype(), where(c), [&](auto tag) {
    using T = decltype(tag);
    int64_t m = out.size(-2), n = out.size(-1), k = tau.size(-1), am = a.size(-2);
    for (int64_t b = 0; b < batch_count(out.sizes()); ++b) {
      std::vector<T> ac = load<T>(a, b);
      std::vector<T> cc(static_cast<size_t>(std::max<int64_t>(1, m * n)));
      T* x = out.data<T>() + b * m * n;
      to_colmajor(x, m, n, cc.data(), std::max<int64_t>(1, m));
      if (m > 0 && n > 0 && k > 0)
        lapack::ormqr<T>(left ? 'L' : 'R', trans ? 'T' : 'N', lapack_int(m, where(c)),
                         lapack_int(n, where(c)), lapack_int(k, where(c)), ac.data(), ld(am),
                         tau.data<T>() + b * k, cc.data(), ld(m));
      from_colmajor(cc.data(), ld(m), m, n, x);
    }
  });
  return out;
}

// LDL^T (Bunch-Kaufman, lower triangle, as torch's linalg.ldl_factor): LD with the upper triangle
// zeroed, LAPACK's pivots (negative for 2 x 2 blocks), info.
std::vector<Tensor> ldl_parts(const KernelContext& c) {
  const Tensor a = c.tensor("A").contiguous();
  int64_t n = a.size(-1);
  std::vector<Tensor> out{Tensor::empty(a.sizes(), a.dtype()),
                          Tensor::empty(batch_plus(a.sizes(), {n}), DType::Int32),
                          Tensor::empty(batch_of(a.sizes()), DType::Int32)};
  by_float_type(a.dtype(), where(c), [&](auto tag) {
    using T = decltype(tag);
    for (int64_t b = 0; b < batch_count(a.sizes()); ++b) {
      std::vector<T> buf = load<T>(a, b);
      std::vector<int> piv(static_cast<size_t>(std::max<int64_t>(1, n)));
      int info = n == 0 ? 0 : lapack::sytrf<T>('L', lapack_int(n, where(c)), buf.data(), ld(n),
                                               piv.data());
      T* dst = out[kLU].data<T>() + b * n * n;
      from_colmajor(buf.data(), ld(n), n, n, dst);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = i + 1; j < n; ++j) dst[i * n + j] = 0;
      for (int64_t i = 0; i < n; ++i) out[kPivots].data<int32_t>()[b * n + i] = piv[i];
      out[kInfo].data<int32_t>()[b] = info;
    }
  });
  return out;
}

Tensor ldl_solve_kernel(const KernelContext& c) {
  Tensor out = output(c);
  auto [ldm, piv] = factor_operands(c, "LD", out);
  int64_t n = ldm.size(-1);
  by_float_type(ldm.dtype(), where(c), [&](auto tag) {
    using T = decltype(tag);
    int64_t r = out.size(-2), s = out.size(-1);
    if (n == 0 || s == 0) return;
    for (int64_t b = 0; b < batch_count(out.sizes()); ++b) {
      std::vector<T> bc(static_cast<size_t>(r * s));
      T* x = out.data<T>() + b * r * s;
      to_colmajor(x, r, s, bc.data(), r);
      lapack::sytrs<T>('L', lapack_int(n, where(c)), lapack_int(s, where(c)),
                       load<T>(ldm, b).data(), ld(n), piv.data<int32_t>() + b * n, bc.data(),
                       ld(r));
      from_colmajor(bc.data(), r, r, s, x);
    }
  });
  return out;
}

}  // namespace

void register_linalg_kernels(InterpreterTable& t) {
  t.add("_stax_linalg_lu.default", element_kernel(lu_parts));
  t.add("_stax_linalg_det.default", det_kernel);
  t.add("_stax_linalg_solve.default", solve_kernel);
  t.add("_stax_linalg_cholesky.default", element_kernel(cholesky_parts));
  t.add("_stax_linalg_qr.default", element_kernel(qr_kernel, qr_parts));
  t.add("_stax_linalg_eigh.default", element_kernel(eigh_kernel, eigh_parts));
  t.add("_stax_linalg_svd.default", element_kernel(svd_kernel, svd_parts));
  t.add("_stax_linalg_geqrf.default", element_kernel(geqrf_parts));
  t.add("_stax_lu_permutation.default", permutation_kernel);
  t.add("linalg_solve_triangular.default", solve_triangular_kernel);
  t.add("linalg_lu_solve.default", lu_solve_kernel);
  t.add("linalg_householder_product.default", householder_kernel);
  t.add("ormqr.default", ormqr_kernel);
  t.add("_stax_linalg_ldl.default", element_kernel(ldl_parts));
  t.add("linalg_matrix_exp.default", matrix_exp_kernel);
  t.add("linalg_ldl_solve.default", ldl_solve_kernel);
  linalg::register_check_kernel(t);
  t.add("cholesky_solve.default", kernels::run_decomposition);
  t.add("cholesky_inverse.default", kernels::run_decomposition);
}

}  // namespace stax
