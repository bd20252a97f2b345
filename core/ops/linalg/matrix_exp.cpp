// The matrix exponential: Higham's scaling and squaring with the [13/13] Padé approximant
// (N. J. Higham, "The scaling and squaring method for the matrix exponential revisited", SIAM J.
// Matrix Anal. Appl. 26 (2005)), computed in double for every floating dtype (float16 / bfloat16 too, as torch's kernel takes them); its one linear
// solve is LAPACK's getrf + getrs. torch's CPU kernel uses a Taylor-based variant: the values
// agree to rounding. The VJP is torch's: exp of the block matrix [[A^T, G], [0, A^T]], whose
// upper-right block is the adjoint of the differential.
#include "core/ops/linalg/matrix_exp.h"

#include <cmath>
#include <string>
#include <vector>

#include "core/ops/linalg/lapack.h"
#include "core/ops/linalg/linalg_args.h"
#include "core/ops/linalg/matrices.h"

namespace stax::linalg {

namespace {

using Mat = std::vector<double>;  // n x n, row-major

Mat product(const Mat& a, const Mat& b, int64_t n) {
  Mat c(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < n; ++k) {
      double x = a[i * n + k];
      for (int64_t j = 0; j < n; ++j) c[i * n + j] += x * b[k * n + j];
    }
  return c;
}

// sum_i w_i M_i (+ w_eye I).
Mat combine(const std::vector<std::pair<double, const Mat*>>& terms, double w_eye, int64_t n) {
  Mat c(static_cast<size_t>(n * n), 0.0);
  for (const auto& [w, m] : terms)
    for (size_t i = 0; i < c.size(); ++i) c[i] += w * (*m)[i];
  for (int64_t i = 0; i < n; ++i) c[i * n + i] += w_eye;
  return c;
}

Mat expm(Mat a, int64_t n, const std::string& where) {
  static const double b[] = {64764752532480000.0, 32382376266240000.0, 7771770303897600.0,
                             1187353796428800.0,  129060195264000.0,   10559470521600.0,
                             670442572800.0,      33522128640.0,       1323241920.0,
                             40840800.0,          960960.0,            16380.0,
                             182.0,               1.0};
  const double theta13 = 5.371920351148152;
  double norm1 = 0;  // the largest column sum of |A|
  for (int64_t j = 0; j < n; ++j) {
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += std::fabs(a[i * n + j]);
    norm1 = std::max(norm1, s);
  }
  int squarings = 0;
  if (std::isfinite(norm1) && norm1 > theta13)
    squarings = static_cast<int>(std::ceil(std::log2(norm1 / theta13)));
  double scale = std::ldexp(1.0, -squarings);
  for (double& x : a) x *= scale;
  Mat a2 = product(a, a, n), a4 = product(a2, a2, n), a6 = product(a4, a2, n);
  Mat u_in = combine({{b[13], &a6}, {b[11], &a4}, {b[9], &a2}}, 0.0, n);
  Mat u_out = combine({{b[7], &a6}, {b[5], &a4}, {b[3], &a2}}, b[1], n);
  Mat t = product(a6, u_in, n);
  for (size_t i = 0; i < t.size(); ++i) t[i] += u_out[i];
  Mat u = product(a, t, n);
  Mat v_in = combine({{b[12], &a6}, {b[10], &a4}, {b[8], &a2}}, 0.0, n);
  Mat v = product(a6, v_in, n);
  Mat v_out = combine({{b[6], &a6}, {b[4], &a4}, {b[2], &a2}}, b[0], n);
  // (V - U) X = V + U, in column-major for LAPACK.
  std::vector<double> lhs(static_cast<size_t>(n * n)), rhs(static_cast<size_t>(n * n));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double vv = v[i * n + j] + v_out[i * n + j], uu = u[i * n + j];
      lhs[i + j * n] = vv - uu;
      rhs[i + j * n] = vv + uu;
    }
  std::vector<int> piv(static_cast<size_t>(n));
  int ni = lapack_int(n, where);
  lapack::getrf<double>(ni, ni, lhs.data(), ld(n), piv.data());
  lapack::getrs<double>('N', ni, ni, lhs.data(), ld(n), piv.data(), rhs.data(), ld(n));
  Mat x(static_cast<size_t>(n * n));
  from_colmajor(rhs.data(), n, n, n, x.data());
  for (int s = 0; s < squarings; ++s) x = product(x, x, n);
  return x;
}

}  // namespace

Tensor matrix_exp_kernel(const KernelContext& c) {
  const Tensor a = c.tensor("self").to(DType::Float64).contiguous();
  Tensor out = Tensor::empty(c.out_meta().sizes, DType::Float64);
  int64_t n = a.size(-1);
  std::string where = "%" + c.node().name();
  for (int64_t b = 0; b < batch_count(a.sizes()) && n > 0; ++b) {
    Mat m(a.data<double>() + b * n * n, a.data<double>() + (b + 1) * n * n);
    Mat e = expm(std::move(m), n, where);
    std::copy(e.begin(), e.end(), out.data<double>() + b * n * n);
  }
  return out.to(c.out_meta().dtype);
}

void matrix_exp_vjp(VjpContext& c) {
  Node* a = c.in("self");
  if (!c.needs(a)) return;
  Node* at = c.mT(a);
  int64_t n = a->shape().back();
  Node* top = c.call("cat", {std::vector<Node*>{at, c.grad()}, int64_t{-1}});
  Node* bottom = c.call("cat", {std::vector<Node*>{c.zeros_like(at), at}, int64_t{-1}});
  Node* e = c.call("linalg_matrix_exp", {c.call("cat", {std::vector<Node*>{top, bottom}, int64_t{-2}})});
  e = c.call("slice.Tensor", {e, int64_t{-2}, int64_t{0}, n});
  c.give(a, c.call("slice.Tensor", {e, int64_t{-1}, n, 2 * n}));
}

}  // namespace stax::linalg
