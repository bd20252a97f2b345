// Forward-mode rules of the linear-algebra ops: torch's formulas (FunctionsManual.cpp:
// linalg_det_jvp, slogdet_jvp, linalg_solve_jvp, linalg_lu_jvp (square, tall, wide),
// linalg_lu_solve_jvp, cholesky_jvp, linalg_eig_jvp (Hermitian), linalg_svd_jvp, linalg_qr_jvp,
// linalg_solve_triangular_forward_AD, the matrix exponential's block formula; householder_product
// and ormqr by the product rule over the reflectors), real case. Each element op's rule gives its own result's tangent; the factors
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

// torch's linalg_lu_jvp, A = P L U (m x n, k = min(m, n)); B = P^T dA:
//   square  X = L^-1 B U^-1, dL = L tril(X, -1), dU = triu(X) U
//   tall    (m > n) the same on the top n rows (L1, B1); dL2 = (B2 - L2 dU) U^-1 below
//   wide    (m < n) the same on the first m columns (U1, B1); dU2 = L^-1 (B2 - dL U2) right
// The packed LU's tangent is dL (strictly lower) + dU (upper). Pivots and info have none.
Node* lu_jvp(JvpContext& c) {
  Node* da = c.tangent("A");
  if (!da || output(c) != kLU) return nullptr;
  Node* a = c.in("A");
  int64_t m = rows(a->shape()), n = cols(a->shape()), k = std::min(m, n);
  DType t = a->dtype();
  Node* lu = c.out();
  auto part = [&](Node* x, int64_t dim, int64_t start, int64_t end) {
    return c.call("slice.Tensor", {x, dim, start, end});
  };
  // L (m x k, unit lower), U (k x n, upper)
  Node* l = c.add(tri(c, "tril", part(lu, -1, 0, k), -1), c.call("eye.m", {m, k}, {{"dtype", t}}));
  Node* u = tri(c, "triu", part(lu, -2, 0, k), 0);
  Node* p = c.call("_stax_lu_permutation", {lu, element(c, {a}, kPivots, factors_of(c, {a}))});
  Node* b = mm(c, c.mT(p), da);
  Node* l1 = m > k ? part(l, -2, 0, k) : l;  // k x k
  Node* u1 = n > k ? part(u, -1, 0, k) : u;  // k x k
  Node* b1 = part(part(b, -2, 0, k), -1, 0, k);
  Node* x = solve_tri(c, l1, b1, false, true, true);
  x = solve_tri(c, u1, x, true, false);
  Node* dl1 = mm(c, l1, tri(c, "tril", x, -1));
  Node* du1 = mm(c, tri(c, "triu", x, 0), u1);
  Node* top = c.add(dl1, du1);  // k x k
  if (m > k) {  // tall: dL2 = (B2 - L2 dU) U^-1
    Node* rhs = c.sub(part(b, -2, k, m), mm(c, part(l, -2, k, m), du1));
    Node* dl2 = solve_tri(c, u1, rhs, true, false);
    return c.call("cat", {std::vector<Node*>{top, dl2}, int64_t{-2}});
  }
  if (n > k) {  // wide: dU2 = L^-1 (B2 - dL U2)
    Node* rhs = c.sub(part(b, -1, k, n), mm(c, dl1, part(u, -1, k, n)));
    Node* du2 = solve_tri(c, l1, rhs, false, true, true);
    return c.call("cat", {std::vector<Node*>{top, du2}, int64_t{-1}});
  }
  return top;
}

// linalg_lu_solve: X = A^-1 B (left), A^-T B (adjoint), B A^-1 (right), B A^-T (right,
// adjoint), A = P L U from the packed LU. dA = P (dL U + L dU), dL = tril(dLU, -1),
// dU = triu(dLU); the tangent is the same solve of dB - dA' X (left) or dB - X dA' (right),
// dA' = dA, or dA^T when adjoint (torch's linalg_lu_solve_jvp, through A itself).
Node* lu_solve_jvp(JvpContext& c) {
  Node* dlu = c.tangent("LU");
  Node* db = c.tangent("B");
  if (!dlu && !db) return nullptr;
  bool left = c.arg("left").to_bool(), adjoint = c.arg("adjoint").to_bool();
  Node* lu = c.in("LU");
  Node* x = c.out();
  Node* rhs = db ? c.expand_to(db, x->shape()) : nullptr;
  if (dlu) {
    int64_t n = rows(lu->shape());
    Node* l = c.add(tri(c, "tril", lu, -1), eye(c, n, lu->dtype()));
    Node* u = tri(c, "triu", lu, 0);
    Node* p = c.call("_stax_lu_permutation", {lu, c.in("pivots")});
    Node* da = mm(c, p, c.add(mm(c, tri(c, "tril", dlu, -1), u), mm(c, l, tri(c, "triu", dlu, 0))));
    if (adjoint) da = c.mT(da);
    Node* prod = left ? mm(c, da, x) : mm(c, x, da);
    if (prod->shape() != x->shape()) prod = c.expand_to(prod, x->shape());
    rhs = rhs ? c.sub(rhs, prod) : c.neg(prod);
  }
  return c.call("linalg_lu_solve", {lu, c.in("pivots"), rhs}, {{"left", left}, {"adjoint", adjoint}});
}

// The tangent of Q = H_0 ... H_{k-1} (m x m), the product of the Householder reflectors
// H_i = I - tau_i v_i v_i^T of v (..., m, *) and tau (..., k): v_i is column i of v below the
// diagonal, 1 on it and 0 above (as LAPACK's orgqr / ormqr read it).
//   dQ = sum_i H_0 .. H_{i-1} dH_i H_{i+1} .. H_{k-1},
//   dH_i = -(dtau_i v_i v_i^T + tau_i (dv_i v_i^T + v_i dv_i^T))
// (dv_i: dv's column i below the diagonal). Null when k is 0 or neither has a tangent.
Node* householder_tangent(JvpContext& c, Node* v, Node* tau, Node* dv, Node* dtau) {
  if (!dv && !dtau) return nullptr;
  int64_t m = rows(v->shape());
  int64_t k = tau->shape().empty() ? 0 : tau->shape().back();
  DType t = v->dtype();
  Node* row = c.call("arange", {m}, {{"dtype", DType::Int64}});
  Node* id = eye(c, m, t);
  auto column = [&](Node* x, int64_t i) { return c.call("select.int", {x, int64_t{-1}, i}); };
  auto scalar = [&](Node* x, int64_t i) { return last(c, last(c, column(x, i), -1), -1); };
  std::vector<Node*> h, dh;
  for (int64_t i = 0; i < k; ++i) {
    Node* below = c.call("gt.Scalar", {row, i});
    Node* unit = c.call("to.dtype", {c.call("eq.Scalar", {row, i}), t});
    Node* vi = c.add(c.call("where.ScalarOther", {below, column(v, i), 0.0}), unit);
    Node* vc = last(c, vi, -1);
    Node* vr = last(c, vi, -2);
    Node* vvt = mm(c, vc, vr);
    Node* ti = scalar(tau, i);
    h.push_back(c.sub(id, c.mul(ti, vvt)));
    Node* d = dtau ? c.mul(scalar(dtau, i), vvt) : nullptr;
    if (dv) {
      Node* dvi = c.call("where.ScalarOther", {below, column(dv, i), 0.0});
      Node* sym = c.add(mm(c, last(c, dvi, -1), vr), mm(c, vc, last(c, dvi, -2)));
      Node* term = c.mul(ti, sym);
      d = d ? c.add(d, term) : term;
    }
    dh.push_back(c.neg(d));
  }
  std::vector<Node*> suffix(static_cast<size_t>(k) + 1, nullptr);  // H_i .. H_{k-1}
  for (int64_t i = k - 1; i >= 0; --i)
    suffix[i] = suffix[i + 1] ? mm(c, h[i], suffix[i + 1]) : h[i];
  Node *prefix = nullptr, *dq = nullptr;
  for (int64_t i = 0; i < k; ++i) {
    Node* term = dh[i];
    if (prefix) term = mm(c, prefix, term);
    if (suffix[i + 1]) term = mm(c, term, suffix[i + 1]);
    dq = dq ? c.add(dq, term) : term;
    prefix = prefix ? mm(c, prefix, h[i]) : h[i];
  }
  return dq;
}

// householder_product(V, tau) is the first n columns of Q: their tangent.
Node* householder_product_jvp(JvpContext& c) {
  Node* v = c.in("input");
  Node* dq = householder_tangent(c, v, c.in("tau"), c.tangent("input"), c.tangent("tau"));
  if (!dq) return nullptr;
  return c.call("slice.Tensor", {dq, int64_t{-1}, int64_t{0}, cols(v->shape())});
}

// ormqr(A, tau, C, left, transpose) = op(Q) C (left) or C op(Q), op(Q) = Q or Q^T, Q the
// reflectors' product: the tangent is op(dQ) C (or C op(dQ)) plus ormqr of dC.
Node* ormqr_jvp(JvpContext& c) {
  bool left = c.arg("left").to_bool(), transpose = c.arg("transpose").to_bool();
  Node* a = c.in("self");
  Node* tau = c.in("input2");
  Node* other = c.in("input3");
  Node* dother = c.tangent("input3");
  Node* dq = householder_tangent(c, a, tau, c.tangent("self"), c.tangent("input2"));
  Node* r = nullptr;
  if (dq) {
    if (transpose) dq = c.mT(dq);
    r = left ? mm(c, dq, other) : mm(c, other, dq);
    if (r->shape() != c.out()->shape()) r = c.expand_to(r, c.out()->shape());
  }
  if (dother) {
    Node* t = c.call("ormqr", {a, tau, c.expand_to(dother, c.out()->shape()), left, transpose});
    r = r ? c.add(r, t) : t;
  }
  return r;
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
  t.add("linalg_lu_solve.default", lu_solve_jvp);
  t.add("linalg_householder_product.default", householder_product_jvp);
  t.add("ormqr.default", ormqr_jvp);
}

}  // namespace stax
