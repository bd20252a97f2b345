// Reverse-mode rules of the linear-algebra ops: torch's formulas (FunctionsManual.cpp:
// linalg_solve, linalg_det / slogdet, cholesky_backward, linalg_qr_backward, linalg_eig_backward
// (Hermitian), svd_backward, linalg_solve_triangular), real case. A tuple-valued aten op is
// expanded to one element op per result (expansions.cpp), and torch's formulas are linear in the
// results' cotangents, so each element's rule is torch's formula with the other cotangents zero;
// the factors a rule needs besides its own result are the element ops of the same call (the same
// arguments), recomputed in the backward graph. Like torch, the rules assume distinct eigen- /
// singular values and invertible matrices.
#include <algorithm>
#include <string>
#include <vector>

#include "core/autodiff/vjp.h"
#include "core/graph/decompositions.h"
#include "core/ops/common/via_decomposition.h"
#include "core/ops/linalg/error_checks.h"
#include "core/ops/linalg/linalg_args.h"
#include "core/ops/linalg/matrix_exp.h"
#include "core/ops/linalg/packed_factors.h"
#include "core/ops/registration.h"
#include "core/support/error.h"

namespace stax {

namespace {

using namespace linalg;

Node* mm(VjpContext& c, Node* a, Node* b) { return c.call("matmul", {a, b}); }
Node* eye(VjpContext& c, int64_t n, DType t) { return c.call("eye", {n}, {{"dtype", t}}); }
Node* last(VjpContext& c, Node* x, int64_t d) { return c.call("unsqueeze", {x, d}); }
Node* tri(VjpContext& c, const char* op, Node* x, int64_t k) { return c.call(op, {x, k}); }
Node* solve_tri(VjpContext& c, Node* a, Node* b, bool upper, bool left, bool unit = false) {
  return c.call("linalg_solve_triangular", {a, b},
                {{"upper", upper}, {"left", left}, {"unitriangular", unit}});
}
// The packed factors of the node's call: the node's own `factors` argument (computed in the
// forward), else one packed node made here, so that a rule reading several results of the
// factorization runs it once (packed_factors.h).
Node* factors_of(VjpContext& c, std::vector<Arg> args) {
  const Arg& f = c.node()->arg("factors");
  if (!f.is_absent()) return f.node();
  args.emplace_back(kAllParts);
  return c.call(c.node()->op()->schema.base, std::move(args));
}
// Result `output` of the node's factorization, read from `factors`.
Node* element(VjpContext& c, std::vector<Arg> args, int64_t output, Node* factors) {
  args.emplace_back(output);
  args.emplace_back(factors);
  return c.call(c.node()->op()->schema.base, std::move(args));
}
// A packed node (output = kAllParts) has no cotangent of its own: the elements read it.
bool is_packed(VjpContext& c) { return c.arg("output").to_int() == kAllParts; }
[[noreturn]] void refuse(VjpContext& c, const std::string& why) {
  throw Error("autodiff", "%" + c.node()->name(), why);
}

// X = A^-1 B (left) or B A^-1: gB = A^-T g (or g A^-T), gA = -gB X^T (or -X^T gB).
void solve_vjp(VjpContext& c) {
  Node* a = c.in("A");
  Node* b = c.in("B");
  bool left = c.arg("left").to_bool();
  Node* gb = c.call("_stax_linalg_solve", {c.mT(a), c.grad(), left});
  if (c.needs(b)) c.give(b, c.sum_to_shape(gb, b->shape()));
  if (c.needs(a)) {
    Node* ga = c.neg(left ? mm(c, gb, c.mT(c.out())) : mm(c, c.mT(c.out()), gb));
    c.give(a, c.sum_to_shape(ga, a->shape()));
  }
}

// d det = det tr(A^-1 dA), d log|det| = tr(A^-1 dA): gA = (g det) A^-T, g A^-T.
void det_vjp(VjpContext& c) {
  Node* a = c.in("A");
  int64_t part = c.arg("output").to_int();
  if (!c.needs(a) || part == kSign) return;  // the sign is piecewise constant
  Node* s = part == kDet ? c.mul(c.grad(), c.out()) : c.grad();
  Node* rhs = c.mul(last(c, last(c, s, -1), -1), eye(c, a->shape().back(), a->dtype()));
  c.give(a, c.call("_stax_linalg_solve", {c.mT(a), rhs, true}));
}

// torch's cholesky_backward: gA = L^-T Φ(L^T gL) L^-1, Φ(X) = sym(tril(X)) with the diagonal
// halved (the result is symmetric).
void cholesky_vjp(VjpContext& c) {
  Node* a = c.in("A");
  if (!c.needs(a) || c.arg("output").to_int() != 0) return;
  bool upper = c.arg("upper").to_bool();
  Node* l = upper ? c.mT(c.out()) : c.out();
  Node* gl = upper ? c.mT(c.grad()) : c.grad();
  Node* phi = tri(c, "tril", mm(c, c.mT(l), gl), 0);
  phi = c.mul(c.add(phi, c.mT(tri(c, "tril", phi, -1))), Arg(0.5));
  Node* ga = solve_tri(c, c.mT(l), phi, true, true);
  c.give(a, solve_tri(c, l, ga, false, false));
}

// torch's linalg_qr_backward, with M = gR R^T - Q^T gQ.
void qr_vjp(VjpContext& c) {
  Node* a = c.in("A");
  if (!c.needs(a)) return;
  const std::string mode = c.arg("mode").str();
  if (mode == "r")
    refuse(c, "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
              "Please use linalg.qr(A, mode='reduced') if you are going to differentiate "
              "through linalg.qr.");
  int64_t m = rows(a->shape()), n = cols(a->shape());
  if (mode == "complete" && m > n)
    refuse(c, "The QR decomposition is not differentiable when mode='complete' and nrows > ncols.");
  if (is_packed(c)) return;
  bool is_q = c.arg("output").to_int() == 0;
  Node* f = factors_of(c, {a, mode});
  Node* q = element(c, {a, mode}, 0, f);
  Node* r = element(c, {a, mode}, 1, f);
  Node* g = c.grad();
  Node* mat = is_q ? c.neg(mm(c, c.mT(q), g)) : mm(c, g, c.mT(r));
  if (m >= n) {
    Node* up = tri(c, "triu", mat, 0);
    Node* ga = mm(c, q, c.add(up, c.mT(tri(c, "triu", mat, 1))));
    if (is_q) ga = c.add(ga, g);
    c.give(a, solve_tri(c, c.mT(r), ga, false, false));
    return;
  }
  Node* skew = tri(c, "tril", c.sub(c.mT(mat), mat), 0);  // tril(X - X^T), X = -M
  Node* r1 = c.call("slice.Tensor", {r, int64_t{-1}, int64_t{0}, m});
  Node* ga = solve_tri(c, c.mT(r1), mm(c, q, skew), false, false);
  Shape pad = a->shape();
  pad.back() = n - m;
  ga = c.call("cat", {std::vector<Node*>{ga, c.zeros(pad, a->dtype())}, int64_t{-1}});
  if (!is_q) ga = c.add(ga, mm(c, q, g));
  c.give(a, ga);
}

// torch's linalg_eig_backward for Hermitian input: gA = V (diag(gL) + skew(V^T gV)/2 / E) V^T,
// E_ij = L_j - L_i (1 on the diagonal).
void eigh_vjp(VjpContext& c) {
  Node* a = c.in("A");
  if (!c.needs(a) || is_packed(c)) return;
  const Arg uplo = c.arg("UPLO");
  Node* f = factors_of(c, {a, uplo});
  Node* v = element(c, {a, uplo}, 1, f);
  if (c.arg("output").to_int() == 0) {
    c.give(a, mm(c, c.mul(v, last(c, c.grad(), -2)), c.mT(v)));
    return;
  }
  Node* l = element(c, {a, uplo}, 0, f);
  Node* vg = mm(c, c.mT(v), c.grad());
  vg = c.mul(c.sub(vg, c.mT(vg)), Arg(0.5));
  Node* e = c.sub(last(c, l, -2), last(c, l, -1));
  e = c.add(e, eye(c, a->shape().back(), a->dtype()));
  c.give(a, mm(c, v, mm(c, c.div(vg, e), c.mT(v))));
}

// torch's svd_backward (real case), the factors narrowed to k = min(m, n) columns / rows for
// full_matrices as torch's derivatives.yaml does.
void svd_vjp(VjpContext& c) {
  Node* a = c.in("A");
  if (!c.needs(a) || is_packed(c)) return;
  bool full = c.arg("full_matrices").to_bool();
  int64_t part = c.arg("output").to_int();
  int64_t m = rows(a->shape()), n = cols(a->shape()), k = std::min(m, n);
  auto narrow = [&](Node* x, int64_t dim) {
    return full ? c.call("slice.Tensor", {x, dim, int64_t{0}, k}) : x;
  };
  Node* f = factors_of(c, {a, full});
  Node* u = narrow(element(c, {a, full}, kU, f), -1);
  Node* s = element(c, {a, full}, kS, f);
  Node* vh = narrow(element(c, {a, full}, kVh, f), -2);
  Node* g = c.grad();
  if (part == kS) {
    c.give(a, m >= n ? mm(c, u, c.mul(last(c, g, -1), vh)) : mm(c, c.mul(u, last(c, g, -2)), vh));
    return;
  }
  Node* s2 = c.mul(s, s);
  Node* e = c.add(c.sub(last(c, s2, -2), last(c, s2, -1)), eye(c, k, a->dtype()));
  if (part == kU) {
    Node* gu = narrow(g, -1);
    Node* uhgu = mm(c, c.mT(u), gu);
    Node* ret = c.mul(c.div(c.sub(uhgu, c.mT(uhgu)), e), last(c, s, -2));
    if (m > n) {
      Node* gus = c.div(gu, last(c, s, -2));
      Node* ga = c.add(mm(c, u, ret), c.sub(gus, mm(c, u, mm(c, c.mT(u), gus))));
      c.give(a, mm(c, ga, vh));
    } else {
      c.give(a, mm(c, mm(c, u, ret), vh));
    }
    return;
  }
  Node* gvh = narrow(g, -2);
  Node* vhgv = mm(c, vh, c.mT(gvh));
  Node* ret = c.mul(last(c, s, -1), c.div(c.sub(vhgv, c.mT(vhgv)), e));
  if (m < n) {
    Node* sgvh = c.div(gvh, last(c, s, -1));
    Node* ga = c.add(mm(c, ret, vh), c.sub(sgvh, mm(c, mm(c, sgvh, c.mT(vh)), vh)));
    c.give(a, mm(c, u, ga));
  } else {
    c.give(a, mm(c, u, mm(c, ret, vh)));
  }
}

// X = op^-1 B with A triangular: gB = A^-T g (or g A^-T), gA = -gB X^T (or -X^T gB) on A's
// triangle.
void solve_triangular_vjp(VjpContext& c) {
  Node* a = c.in("self");
  Node* b = c.in("B");
  bool upper = c.arg("upper").to_bool(), left = c.arg("left").to_bool();
  bool unit = c.arg("unitriangular").to_bool();
  Node* gb = solve_tri(c, c.mT(a), c.grad(), !upper, left, unit);
  if (c.needs(b)) c.give(b, c.sum_to_shape(gb, b->shape()));
  if (c.needs(a)) {
    Node* ga = c.neg(left ? mm(c, gb, c.mT(c.out())) : mm(c, c.mT(c.out()), gb));
    ga = upper ? tri(c, "triu", ga, unit ? 1 : 0) : tri(c, "tril", ga, unit ? -1 : 0);
    c.give(a, c.sum_to_shape(ga, a->shape()));
  }
}

// The packed LU factors as P, L (unit lower, m x k) and U (k x n), in the backward graph.
struct Plu {
  Node *p, *l, *u;
};
Plu unpack(VjpContext& c, Node* lu, Node* piv) {
  const Shape& s = lu->shape();
  int64_t m = rows(s), n = cols(s), k = std::min(m, n);
  Node* l = tri(c, "tril", c.call("slice.Tensor", {lu, int64_t{-1}, int64_t{0}, k}), -1);
  l = c.add(l, c.call("eye.m", {m, k}, {{"dtype", lu->dtype()}}));
  Node* u = tri(c, "triu", c.call("slice.Tensor", {lu, int64_t{-2}, int64_t{0}, k}), 0);
  return {c.call("_stax_lu_permutation", {lu, piv}), l, u};
}

// X = A^-1 B with A = P L U, through the two triangular solves (left, not adjoint):
// Y = U X, gY = U^-T gX, gU = -triu(gY X^T), gZ = L^-T gY, gL = -tril(gZ Y^T, -1), gB = P gZ.
// Adjoint (A^T X = B): X = P V, V = L^-T W, W = U^-T B: gW = L^-1 P^T gX,
// gL = -tril(V gW^T, -1), gB = U^-1 gW, gU = -triu(W gB^T). Right-sided solves are these on
// the transposes (X A = B is A^T X^T = B^T).
void lu_solve_vjp(VjpContext& c) {
  Node* lu = c.in("LU");
  Node* b = c.in("B");
  bool left = c.arg("left").to_bool(), adjoint = c.arg("adjoint").to_bool();
  bool need_lu = c.needs(lu), need_b = c.needs(b);
  if (!need_lu && !need_b) return;
  Plu f = unpack(c, lu, c.in("pivots"));
  Node* x = left ? c.out() : c.mT(c.out());
  Node* gx = left ? c.grad() : c.mT(c.grad());
  bool adj = left ? adjoint : !adjoint;  // the left-sided problem solved
  Node *gb, *gl, *gu;
  if (!adj) {
    Node* gy = solve_tri(c, c.mT(f.u), gx, false, true);
    Node* gz = solve_tri(c, c.mT(f.l), gy, true, true, true);
    gb = mm(c, f.p, gz);
    gu = c.neg(tri(c, "triu", mm(c, gy, c.mT(x)), 0));
    gl = c.neg(tri(c, "tril", mm(c, gz, c.mT(mm(c, f.u, x))), -1));
  } else {
    Node* v = mm(c, c.mT(f.p), x);
    Node* w = mm(c, c.mT(f.l), v);
    Node* gw = solve_tri(c, f.l, mm(c, c.mT(f.p), gx), false, true, true);
    gb = solve_tri(c, f.u, gw, true, true);
    gl = c.neg(tri(c, "tril", mm(c, v, c.mT(gw)), -1));
    gu = c.neg(tri(c, "triu", mm(c, w, c.mT(gb)), 0));
  }
  if (need_b) c.give(b, c.sum_to_shape(left ? gb : c.mT(gb), b->shape()));
  if (need_lu) c.give(lu, c.sum_to_shape(c.add(gl, gu), lu->shape()));
}

// torch's lu_factor_ex_backward / linalg_lu_backward (square, wide and tall), with the packed
// cotangent as both L's (its first k columns) and U's (its first k rows).
void lu_vjp(VjpContext& c) {
  Node* a = c.in("A");
  if (!c.needs(a) || c.arg("output").to_int() != kLU) return;
  Node* lu = c.out();
  Plu f = unpack(c, lu, element(c, {a}, kPivots, factors_of(c, {a})));
  const Shape& s = lu->shape();
  int64_t m = rows(s), n = cols(s), k = std::min(m, n);
  Node* g = c.grad();
  Node* gl = c.call("slice.Tensor", {g, int64_t{-1}, int64_t{0}, k});
  Node* gu = c.call("slice.Tensor", {g, int64_t{-2}, int64_t{0}, k});
  Node* ga;
  if (m == n) {
    ga = c.add(tri(c, "tril", mm(c, c.mT(f.l), gl), -1), tri(c, "triu", mm(c, gu, c.mT(f.u)), 0));
    ga = solve_tri(c, c.mT(f.u), ga, false, false);
    ga = solve_tri(c, c.mT(f.l), ga, true, true, true);
  } else if (m < n) {
    Node* u1 = c.call("slice.Tensor", {f.u, int64_t{-1}, int64_t{0}, k});
    ga = c.sub(mm(c, c.mT(f.l), gl), mm(c, tri(c, "triu", gu, 0), c.mT(f.u)));
    ga = solve_tri(c, c.mT(u1), tri(c, "tril", ga, -1), false, false);
    Node* gu1 = tri(c, "triu", c.call("slice.Tensor", {gu, int64_t{-1}, int64_t{0}, k}), 0);
    Node* gu2 = c.call("slice.Tensor", {gu, int64_t{-1}, k, n});
    ga = c.call("cat", {std::vector<Node*>{c.add(ga, gu1), gu2}, int64_t{-1}});
    ga = solve_tri(c, c.mT(f.l), ga, true, true, true);
  } else {
    Node* l1 = c.call("slice.Tensor", {f.l, int64_t{-2}, int64_t{0}, k});
    ga = c.sub(mm(c, gu, c.mT(f.u)), mm(c, c.mT(f.l), tri(c, "tril", gl, -1)));
    ga = solve_tri(c, c.mT(l1), tri(c, "triu", ga, 0), true, true, true);
    Node* gl1 = tri(c, "tril", c.call("slice.Tensor", {gl, int64_t{-2}, int64_t{0}, k}), -1);
    Node* gl2 = c.call("slice.Tensor", {gl, int64_t{-2}, k, m});
    ga = c.call("cat", {std::vector<Node*>{c.add(ga, gl1), gl2}, int64_t{-2}});
    ga = solve_tri(c, c.mT(f.u), ga, false, false);
  }
  c.give(a, mm(c, f.p, ga));
}

void not_differentiable(VjpContext& c, const char* what) {
  for (const char* p : {"input", "tau", "self", "input2", "input3"})
    if (c.node()->op()->schema.index_of(p) >= 0 && c.needs(p))
      refuse(c, std::string("the derivative of ") + what + " is not implemented in Stax");
}

// ---- decompositions (cholesky_solve, cholesky_inverse: two triangular solves)

// X with A X = B, A = L L^T (or U^T U).
Node* cholesky_solve_with(Graph& g, Node* b, Node* f, bool upper) {
  Node* ft = g.call("transpose.int", {f, int64_t{-2}, int64_t{-1}});
  Node* lower = upper ? ft : f;
  Node* up = upper ? f : ft;
  Node* y = g.call("linalg_solve_triangular", {lower, b}, {{"upper", false}});
  return g.call("linalg_solve_triangular", {up, y}, {{"upper", true}});
}

Node* cholesky_solve(Graph& g, const Node& n) {
  return cholesky_solve_with(g, n.arg("self").node(), n.arg("input2").node(),
                             n.arg("upper").to_bool());
}

Node* cholesky_inverse(Graph& g, const Node& n) {
  Node* f = n.arg("self").node();
  Node* eye = g.call("eye", {f->shape().back()}, {{"dtype", f->dtype()}});
  return cholesky_solve_with(g, eye, f, n.arg("upper").to_bool());
}

}  // namespace

void register_linalg_decompositions(DecompositionTable& t) {
  t.add("cholesky_solve.default", cholesky_solve);
  t.add("cholesky_inverse.default", cholesky_inverse);
}

void register_linalg_vjps(VjpTable& t) {
  linalg::register_check_vjp(t);
  t.add("_stax_linalg_solve.default", solve_vjp);
  t.add("_stax_linalg_det.default", det_vjp);
  t.add("_stax_linalg_cholesky.default", cholesky_vjp);
  t.add("_stax_linalg_qr.default", qr_vjp);
  t.add("_stax_linalg_eigh.default", eigh_vjp);
  t.add("_stax_linalg_svd.default", svd_vjp);
  t.add("_stax_linalg_lu.default", lu_vjp);
  t.add("linalg_solve_triangular.default", solve_triangular_vjp);
  t.add("linalg_lu_solve.default", lu_solve_vjp);
  t.add("linalg_matrix_exp.default", matrix_exp_vjp);
  t.add("linalg_householder_product.default",
        [](VjpContext& c) { not_differentiable(c, "linalg_householder_product"); });
  t.add("ormqr.default", [](VjpContext& c) { not_differentiable(c, "ormqr"); });
  t.add("cholesky_solve.default", vjp_via_decomposition);
  t.add("cholesky_inverse.default", vjp_via_decomposition);
}

}  // namespace stax
