// Forward-mode rules of the linear-algebra ops: torch's formulas (FunctionsManual.cpp:
// linalg_det_jvp, slogdet_jvp, linalg_solve_jvp, cholesky_jvp, linalg_eig_jvp (Hermitian),
// linalg_svd_jvp, linalg_qr_jvp, linalg_solve_triangular_forward_AD, the matrix exponential's
// block formula), real case. Each element op's rule gives its own result's tangent; the factors
// it needs are the other elements of the same call, read from the call's packed factors
// (packed_factors.h) so the factorization is not run again. A packed node (output = kAllParts)
// and the integer results (pivots, info) have no tangent. Like torch, the rules assume invertible
// matrices and distinct eigen- / singular values.
#include <algorithm>
#include <string>
#include <vector>

#include "core/autodiff/jvp.h"
#include "core/ops/linalg/error_checks.h"
#include "core/ops/linalg/linalg_args.h"
#include "core/ops/linalg/packed_factors.h"
#include "core/ops/registration.h"
#include "core/support/error.h"

namespace stax {

namespace {

using namespace linalg;

Node* mm(JvpContext& c, Node* a, Node* b) { return c.call("matmul", {a, b}); }
Node* eye(JvpContext& c, int64_t n, DType t) { return c.call("eye", {n}, {{"dtype", t}}); }
Node* last(JvpContext& c, Node* x, int64_t d) { return c.call("unsqueeze", {x, d}); }
Node* tri(JvpContext& c, const char* op, Node* x, int64_t k) { return c.call(op, {x, k}); }
Node* solve_tri(JvpContext& c, Node* a, Node* b, bool upper, bool left, bool unit = false) {
  return c.call("linalg_solve_triangular", {a, b},
                {{"upper", upper}, {"left", left}, {"unitriangular", unit}});
}
// The trace of every matrix of x.
Node* trace(JvpContext& c, Node* x) {
  Node* d = c.call("diagonal", {x, int64_t{0}, int64_t{-2}, int64_t{-1}});
  return c.call("sum.dim_IntList", {d, std::vector<int64_t>{-1}});
}
// X with the diagonal of every matrix zeroed.
Node* off_diagonal(JvpContext& c, Node* x) {
  return c.sub(x, c.mul(x, eye(c, x->shape().back(), x->dtype())));
}
int64_t output(JvpContext& c) { return c.arg("output").to_int(); }

// The node's packed factors (its own argument, or one packed node made here), and result
// `part` of the call read from them.
Node* factors_of(JvpContext& c, std::vector<Arg> args) {
  const Arg& f = c.node()->arg("factors");
  if (!f.is_absent()) return f.node();
  args.emplace_back(kAllParts);
  return c.call(c.node()->op()->schema.base, std::move(args));
}
Node* element(JvpContext& c, std::vector<Arg> args, int64_t part, Node* factors) {
  args.emplace_back(part);
  args.emplace_back(factors);
  return c.call(c.node()->op()->schema.base, std::move(args));
}

// X = A^-1 B: dX = A^-1 (dB - dA X) (left), X A = B: dX = (dB - X dA) A^-1; the factors of A
// are the node's.
Node* solve_jvp(JvpContext& c) {
  Node* da = c.tangent("A");
  Node* db = c.tangent("B");
  bool left = c.arg("left").to_bool();
  Node* rhs = db ? c.expand_to(db, c.out()->shape()) : nullptr;
  if (da) {
    Node* dax = left ? mm(c, da, c.out()) : mm(c, c.out(), da);
    rhs = rhs ? c.sub(rhs, dax) : c.neg(dax);
  }
  return c.call("_stax_linalg_solve", {c.in("A"), rhs, left, c.node()->arg("factors")});
}

// d det = det tr(A^-1 dA); d log|det| = tr(A^-1 dA); the sign is piecewise constant.
Node* det_jvp(JvpContext& c) {
  Node* da = c.tangent("A");
  if (!da || output(c) == kSign) return nullptr;
  Node* tr = trace(c, c.call("_stax_linalg_solve", {c.in("A"), da, true, c.node()->arg("factors")}));
  return output(c) == kDet ? c.mul(c.out(), tr) : tr;
}

// torch's linalg_lu_jvp, square A = P L U: X = L^-1 P^T dA U^-1, dL = L tril(X, -1),
// dU = triu(X) U; the packed LU's tangent is dL + dU. Pivots and info have none.
Node* lu_jvp(JvpContext& c) {
  Node* da = c.tangent("A");
  if (!da || output(c) != kLU) return nullptr;
  Node* a = c.in("A");
  if (rows(a->shape()) != cols(a->shape()))
    throw Error("autodiff", "%" + c.node()->name(),
                "forward mode through the LU factors of a non-square matrix is not implemented "
                "in Stax");
  Node* lu = c.out();
  int64_t n = rows(a->shape());
  Node* l = c.add(tri(c, "tril", lu, -1), eye(c, n, a->dtype()));
  Node* u = tri(c, "triu", lu, 0);
  Node* p = c.call("_stax_lu_permutation",
                   {lu, element(c, {a}, kPivots, factors_of(c, {a}))});
  Node* x = solve_tri(c, l, mm(c, c.mT(p), da), false, true, true);
  x = solve_tri(c, u, x, true, false);
  return c.add(mm(c, l, tri(c, "tril", x, -1)), mm(c, tri(c, "triu", x, 0), u));
}

// torch's cholesky_jvp: dL = L Φ(L^-1 dA L^-T), Φ(X) = tril(X) with the diagonal halved.
Node* cholesky_jvp(JvpContext& c) {
  Node* da = c.tangent("A");
  if (!da || output(c) != 0) return nullptr;
  bool upper = c.arg("upper").to_bool();
  Node* l = upper ? c.mT(c.out()) : c.out();
  Node* x = solve_tri(c, l, da, false, true);
  x = solve_tri(c, c.mT(l), x, true, false);
  Node* half = c.mul(c.call("diag_embed", {c.call("diagonal", {x, int64_t{0}, int64_t{-2},
                                                                int64_t{-1}})}),
                     Arg(0.5));
  Node* dl = mm(c, l, c.sub(tri(c, "tril", x, 0), half));
  return upper ? c.mT(dl) : dl;
}

// torch's linalg_eig_jvp, Hermitian: dP = V^T dA V, dL = diag(dP), dV = V (offdiag(dP) / E),
// E_ij = L_j - L_i.
Node* eigh_jvp(JvpContext& c) {
  Node* da = c.tangent("A");
  int64_t part = output(c);
  if (!da || part == kAllParts) return nullptr;
  Node* a = c.in("A");
  const Arg uplo = c.arg("UPLO");
  Node* f = factors_of(c, {a, uplo});
  Node* v = element(c, {a, uplo}, 1, f);
  Node* dp = mm(c, c.mT(v), mm(c, da, v));
  if (part == 0) return c.call("diagonal", {dp, int64_t{0}, int64_t{-2}, int64_t{-1}});
  Node* l = element(c, {a, uplo}, 0, f);
  Node* e = c.sub(last(c, l, -2), last(c, l, -1));
  e = c.add(e, eye(c, a->shape().back(), a->dtype()));
  return mm(c, v, c.div(off_diagonal(c, dp), e));
}

// The columns (dim -1) or rows (dim -2) of x past k as zeros (full_matrices: torch pads the
// tangent of the extra singular vectors with zeros).
Node* pad_zeros(JvpContext& c, Node* x, int64_t dim, int64_t to) {
  Shape s = x->shape();
  size_t d = s.size() - (dim == -1 ? 1 : 2);
  if (s[d] == to) return x;
  Shape z = s;
  z[d] = to - s[d];
  return c.call("cat", {std::vector<Node*>{x, c.zeros(z, x->dtype())}, dim});
}

// torch's linalg_svd_jvp (real): dP = U^T dA V, dS = diag(dP); with dP's diagonal removed,
// dU = U (sym(dP S) / E) (+ (I - U U^T) dA V S^-1 when m > n),
// dVh = -(sym(S dP) / E) Vh (+ S^-1 U^T dA (I - V Vh) when m < n), E_ij = S_j^2 - S_i^2.
Node* svd_jvp(JvpContext& c) {
  Node* da = c.tangent("A");
  int64_t part = output(c);
  if (!da || part == kAllParts) return nullptr;
  Node* a = c.in("A");
  bool full = c.arg("full_matrices").to_bool();
  int64_t m = rows(a->shape()), n = cols(a->shape()), k = std::min(m, n);
  Node* f = factors_of(c, {a, full});
  auto narrow = [&](Node* x, int64_t dim) {
    return full ? c.call("slice.Tensor", {x, dim, int64_t{0}, k}) : x;
  };
  Node* u = narrow(element(c, {a, full}, kU, f), -1);
  Node* s = element(c, {a, full}, kS, f);
  Node* vh = narrow(element(c, {a, full}, kVh, f), -2);
  Node* v = c.mT(vh);
  Node* dp = mm(c, c.mT(u), mm(c, da, v));
  if (part == kS) return c.call("diagonal", {dp, int64_t{0}, int64_t{-2}, int64_t{-1}});
  dp = off_diagonal(c, dp);
  Node* s2 = c.mul(s, s);
  Node* e = c.add(c.sub(last(c, s2, -2), last(c, s2, -1)), eye(c, k, a->dtype()));
  auto sym = [&](Node* x) { return c.add(x, c.mT(x)); };
  if (part == kU) {
    Node* du = mm(c, u, c.div(sym(c.mul(dp, last(c, s, -2))), e));
    if (m > n) {
      Node* dav = mm(c, da, c.div(v, last(c, s, -2)));
      du = c.add(du, c.sub(dav, mm(c, u, mm(c, c.mT(u), dav))));
    }
    return pad_zeros(c, du, -1, full ? m : k);
  }
  Node* dvh = mm(c, c.neg(c.div(sym(c.mul(last(c, s, -1), dp)), e)), vh);  // (V Ω)^T = -Ω Vh
  if (m < n) {
    Node* uda = mm(c, c.div(c.mT(u), last(c, s, -1)), da);
    dvh = c.add(dvh, c.sub(uda, mm(c, mm(c, uda, v), vh)));
  }
  return pad_zeros(c, dvh, -2, full ? n : k);
}

// torch's linalg_qr_jvp. m >= n: dB = dA R^-1, qdB = Q^T dB, dC = tril(qdB, -1) - its transpose,
// dQ = dB - Q (qdB - dC), dR = (qdB - dC) R. m < n: A = [X | Y], (dQ, dR1) of X as above,
// dR2 = Q^T (dY - dQ R2).
Node* qr_jvp(JvpContext& c) {
  Node* da = c.tangent("A");
  int64_t part = output(c);
  if (!da || part == kAllParts) return nullptr;
  Node* a = c.in("A");
  const std::string mode = c.arg("mode").str();
  int64_t m = rows(a->shape()), n = cols(a->shape());
  if (mode == "r" || (mode == "complete" && m > n))
    throw Error("autodiff", "%" + c.node()->name(),
                "The QR decomposition is not differentiable when mode='complete' and nrows > "
                "ncols, or mode='r' (forward mode, as torch)");
  Node* f = factors_of(c, {a, mode});
  Node* q = element(c, {a, mode}, 0, f);
  Node* r = element(c, {a, mode}, 1, f);
  Node* r1 = m < n ? c.call("slice.Tensor", {r, int64_t{-1}, int64_t{0}, m}) : r;
  Node* dx = m < n ? c.call("slice.Tensor", {da, int64_t{-1}, int64_t{0}, m}) : da;
  Node* db = solve_tri(c, r1, dx, true, false);
  Node* qdb = mm(c, c.mT(q), db);
  Node* low = tri(c, "tril", qdb, -1);
  Node* inner = c.sub(qdb, c.sub(low, c.mT(low)));
  Node* dq = c.sub(db, mm(c, q, inner));
  if (part == 0) return dq;
  Node* dr = mm(c, inner, r1);
  if (m >= n) return dr;
  Node* r2 = c.call("slice.Tensor", {r, int64_t{-1}, m, n});
  Node* dy = c.call("slice.Tensor", {da, int64_t{-1}, m, n});
  Node* dr2 = mm(c, c.mT(q), c.sub(dy, mm(c, dq, r2)));
  return c.call("cat", {std::vector<Node*>{dr, dr2}, int64_t{-1}});
}

// X = op(A)^-1 B, A triangular: dX = A^-1 (dB - dA X) (left) or (dB - X dA) A^-1, dA taken on
// A's triangle (without the diagonal when unitriangular).
Node* solve_triangular_jvp(JvpContext& c) {
  Node* da = c.tangent("self");
  Node* db = c.tangent("B");
  bool upper = c.arg("upper").to_bool(), left = c.arg("left").to_bool();
  bool unit = c.arg("unitriangular").to_bool();
  Node* rhs = db ? c.expand_to(db, c.out()->shape()) : nullptr;
  if (da) {
    da = upper ? tri(c, "triu", da, unit ? 1 : 0) : tri(c, "tril", da, unit ? -1 : 0);
    Node* dax = left ? mm(c, da, c.out()) : mm(c, c.out(), da);
    rhs = rhs ? c.sub(rhs, dax) : c.neg(dax);
  }
  return solve_tri(c, c.in("self"), rhs, upper, left, unit);
}

// d exp(A) is the upper-right block of exp([[A, dA], [0, A]]).
Node* matrix_exp_jvp(JvpContext& c) {
  Node* a = c.in("self");
  Node* da = c.tangent("self");
  if (!da) return nullptr;
  int64_t n = a->shape().back();
  Node* top = c.call("cat", {std::vector<Node*>{a, da}, int64_t{-1}});
  Node* bottom = c.call("cat", {std::vector<Node*>{c.zeros_like(a), a}, int64_t{-1}});
  Node* e = c.call("linalg_matrix_exp",
                   {c.call("cat", {std::vector<Node*>{top, bottom}, int64_t{-2}})});
  e = c.call("slice.Tensor", {e, int64_t{-2}, int64_t{0}, n});
  return c.call("slice.Tensor", {e, int64_t{-1}, n, 2 * n});
}

}  // namespace

void register_linalg_jvps(JvpTable& t) {
  linalg::register_check_jvp(t);
  t.add("_stax_linalg_solve.default", solve_jvp);
  t.add("_stax_linalg_det.default", det_jvp);
  t.add("_stax_linalg_lu.default", lu_jvp);
  t.add("_stax_linalg_cholesky.default", cholesky_jvp);
  t.add("_stax_linalg_eigh.default", eigh_jvp);
  t.add("_stax_linalg_svd.default", svd_jvp);
  t.add("_stax_linalg_qr.default", qr_jvp);
  t.add("linalg_solve_triangular.default", solve_triangular_jvp);
  t.add("linalg_matrix_exp.default", matrix_exp_jvp);
  // Not written yet: lu_solve, householder_product and ormqr (forward mode fails naming the op).
}

}  // namespace stax
