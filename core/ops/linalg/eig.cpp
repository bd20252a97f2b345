// linalg.eig / linalg.eigvals (docs/linalg.md, docs/complex.md): LAPACK's geev, as torch's CPU
// kernel calls it (right eigenvectors only), with complex results. Real matrices (sgeev / dgeev):
// a complex eigenvalue pair's vectors come packed as two real columns (v ± i w) and are unpacked
// into complex columns; complex matrices (cgeev / zgeev) give complex columns directly. Either way
// each vector has unit norm and its largest component real, as LAPACK normalizes them.
//   linalg_eig(self) -> (eigenvalues, eigenvectors)  expands to _stax_linalg_eig(A, output)
//   linalg_eigvals(self)                             _stax_linalg_eig's eigenvalues
// The VJPs are torch's linalg_eig_backward (non-Hermitian): with E_ij = L_j - L_i (1 on the
// diagonal),
//   gA = V^-H (diag(gL) + (V^H gV - V^H V diag(Re diag(V^H gV))) / conj(E)) V^H
// (a real A receives the real part, torch's handle_r_to_c). V^-H comes from
// _stax_complex_solve (getrf + getrs on complex matrices, this file).
#include <complex>
#include <string>
#include <vector>

#include "core/autodiff/vjp.h"
#include "core/graph/multi_output.h"
#include "core/interpreter/interpreter.h"
#include "core/ops/linalg/lapack.h"
#include "core/ops/linalg/linalg_args.h"
#include "core/ops/linalg/matrices.h"
#include "core/ops/registration.h"

namespace stax {
namespace {

using namespace linalg;

// output 0: the eigenvalues (*, n); 1: the eigenvectors (*, n, n); complex of A's precision.
TensorMeta eig_meta(const CallArgs& c, const TensorMeta& a, int64_t output, const char* api) {
  if (!is_complex(a.dtype)) need_float(c, a, api);
  need_square(c, a, api, "A");
  if (output != 0 && output != 1)
    c.fail(std::string(api) + ": output must be 0 (eigenvalues) or 1 (eigenvectors), got " +
           std::to_string(output));
  Shape s = output == 1 ? a.sizes : Shape(a.sizes.begin(), a.sizes.end() - 1);
  return TensorMeta::contiguous(std::move(s), is_complex(a.dtype) ? a.dtype
                                                                   : real_to_complex(a.dtype),
                                a.device);
}

[[noreturn]] void no_convergence(int info, const std::string& where) {
  throw Error("runtime", where,
              "linalg.eig: The algorithm failed to converge because the input matrix is "
              "ill-conditioned or has too many repeated eigenvalues (error code: " +
                  std::to_string(info) + ").");
}

// Matrix b's eigenvalues (and right eigenvectors when `vectors`) into out (row-major).
template <class T>
void eig_one(const Tensor& a, int64_t b, bool vectors, std::complex<T>* out,
             const std::string& where) {
  int64_t n = a.size(-1);
  std::vector<T> buf = load<T>(a, b);
  std::vector<T> wr(static_cast<size_t>(n)), wi(static_cast<size_t>(n));
  std::vector<T> vr(static_cast<size_t>(vectors ? n * n : 1));
  int info = lapack::geev<T>(vectors ? 'V' : 'N', lapack_int(n, where), buf.data(), ld(n),
                             wr.data(), wi.data(), vr.data(), vectors ? ld(n) : 1);
  if (info > 0) no_convergence(info, where);
  if (!vectors) {
    for (int64_t j = 0; j < n; ++j) out[j] = {wr[j], wi[j]};
    return;
  }
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = 0; i < n; ++i) {
      T re = vr[i + j * n];
      if (wi[j] == T(0)) {
        out[i * n + j] = {re, T(0)};
      } else if (wi[j] > T(0)) {  // columns j, j+1: v + i w and v - i w
        T im = vr[i + (j + 1) * n];
        out[i * n + j] = {re, im};
        out[i * n + j + 1] = {re, -im};
      }
    }
    if (wi[j] > T(0)) ++j;
  }
}

// The same for a complex matrix: cgeev / zgeev's columns, transposed to row-major.
template <class T>
void eig_one_complex(const Tensor& a, int64_t b, bool vectors, std::complex<T>* out,
                     const std::string& where) {
  using C = std::complex<T>;
  int64_t n = a.size(-1);
  std::vector<C> buf = load<C>(a, b);
  std::vector<C> w(static_cast<size_t>(n));
  std::vector<C> vr(static_cast<size_t>(vectors ? n * n : 1));
  int info = lapack::geev<T>(vectors ? 'V' : 'N', lapack_int(n, where), buf.data(), ld(n),
                             w.data(), vr.data(), vectors ? ld(n) : 1);
  if (info > 0) no_convergence(info, where);
  if (vectors)
    from_colmajor(vr.data(), n, n, n, out);
  else
    std::copy(w.begin(), w.end(), out);
}

// Calls f(float{}) or f(double{}), the part type of a complex dtype or the real dtype itself.
template <class F>
void by_part_type(DType t, const std::string& where, F&& f) {
  if (t == DType::Complex64) return f(float{});
  if (t == DType::Complex128) return f(double{});
  by_float_type(t, where, std::forward<F>(f));
}

Tensor eig_kernel(const KernelContext& c, int64_t output) {
  const Tensor a = c.tensor(c.node().op()->schema.params[0].name).contiguous();
  Tensor out = Tensor::empty(c.out_meta().sizes, c.out_meta().dtype);
  std::string where = "%" + c.node().name();
  int64_t n = a.size(-1);
  if (n == 0) return out;
  by_part_type(a.dtype(), where, [&](auto tag) {
    using T = decltype(tag);
    auto* o = out.data<std::complex<T>>();
    int64_t per = output == 1 ? n * n : n;
    for (int64_t b = 0; b < batch_count(a.sizes()); ++b) {
      if (is_complex(a.dtype()))
        eig_one_complex<T>(a, b, output == 1, o + b * per, where);
      else
        eig_one<T>(a, b, output == 1, o + b * per, where);
    }
  });
  return out;
}

// ---- _stax_complex_solve(A, B, adjoint): X with op(A) X = B, op(A) = A or A^H

TensorMeta complex_solve_meta(const CallArgs& c) {
  const TensorMeta& a = c.tensor("A");
  const TensorMeta& b = c.tensor("B");
  const char* api = "_stax_complex_solve";
  if (!is_complex(a.dtype) || a.dtype != b.dtype)
    c.fail(std::string(api) + ": A and B must be complex tensors of one dtype, got " +
           std::string(dtype_name(a.dtype)) + " and " + std::string(dtype_name(b.dtype)));
  need_square(c, a, api, "A");
  need_matrix(c, b, api, "B");
  if (batch_of(a.sizes) != batch_of(b.sizes) || rows(b.sizes) != rows(a.sizes))
    c.fail(std::string(api) + ": B must be " + std::to_string(rows(a.sizes)) +
           "-row matrices of A's batch");
  return TensorMeta::contiguous(b.sizes, b.dtype, b.device);
}

Tensor complex_solve_kernel(const KernelContext& c) {
  const Tensor a = c.tensor("A").contiguous();
  const Tensor b = c.tensor("B").contiguous();
  bool adjoint = c.arg("adjoint").to_bool();
  std::string where = "%" + c.node().name();
  Tensor out = Tensor::empty(b.sizes(), b.dtype());
  int64_t n = a.size(-1), k = b.size(-1);
  if (n == 0 || k == 0) return out;
  by_part_type(a.dtype(), where, [&](auto tag) {
    using C = std::complex<decltype(tag)>;
    int ni = lapack_int(n, where), ki = lapack_int(k, where);
    std::vector<int> piv(static_cast<size_t>(n));
    for (int64_t m = 0; m < batch_count(a.sizes()); ++m) {
      std::vector<C> lu = load<C>(a, m), x = load<C>(b, m);
      int info = lapack::getrf<C>(ni, ni, lu.data(), ld(n), piv.data());
      if (info > 0)
        throw Error("runtime", where,
                    "linalg.eig backward: the eigenvector matrix is singular (U[" +
                        std::to_string(info) + "," + std::to_string(info) +
                        "] is zero): the gradient of a defective matrix's eigen-decomposition "
                        "is not defined");
      lapack::getrs<C>(adjoint ? 'C' : 'N', ni, ki, lu.data(), ld(n), piv.data(), x.data(),
                       ld(n));
      from_colmajor(x.data(), n, n, k, out.data<C>() + m * n * k);
    }
  });
  return out;
}

// ---- derivatives

// a b for (*, m, k) and (*, k, p) of one batch: mm, or bmm over the flattened batch (the complex
// products; matmul takes no complex values).
Node* cmatmul(VjpContext& c, Node* a, Node* b) {
  const Shape& sa = a->shape();
  const Shape& sb = b->shape();
  if (sa.size() == 2) return c.call("mm", {a, b});
  Shape batch = batch_of(sa);
  int64_t nb = 1;
  for (int64_t d : batch) nb *= d;
  Node* p = c.call("bmm", {c.reshape(a, {nb, rows(sa), cols(sa)}),
                           c.reshape(b, {nb, rows(sb), cols(sb)})});
  return c.reshape(p, with_matrix(batch, rows(sa), cols(sb)));
}
Node* conj(VjpContext& c, Node* x) { return c.call("conj_physical", {x}); }
Node* mH(VjpContext& c, Node* x) { return conj(c, c.mT(x)); }
Node* eye_of(VjpContext& c, const Node* a) {
  return c.call("eye", {a->shape().back()}, {{"dtype", complex_to_real(a->dtype())}});
}

// X = op(A)^-1 B is holomorphic in A and B: gB = op(A)^-H g; gA = -gB X^H (op(A) = A), or its
// conjugate transpose -X gB^H (op(A) = A^H).
void complex_solve_vjp(VjpContext& c) {
  Node* a = c.in("A");
  Node* b = c.in("B");
  bool adjoint = c.arg("adjoint").to_bool();
  if (!c.needs(a) && !c.needs(b)) return;
  Node* gb = c.call("_stax_complex_solve", {a, c.grad(), !adjoint});
  if (c.needs(b)) c.give(b, gb);
  if (c.needs(a))
    c.give(a, c.neg(adjoint ? cmatmul(c, c.out(), mH(c, gb)) : cmatmul(c, gb, mH(c, c.out()))));
}

// torch's linalg_eig_backward with the other result's cotangent zero (the formula is linear in
// both): eigenvalues gA = V^-H diag(gL) V^H; eigenvectors gA = V^-H ((V^H gV - V^H V diag(Re
// diag(V^H gV))) / conj(E)) V^H. torch also checks that the loss does not depend on the vectors'
// phases (Im diag(V^H gV) = 0); Stax does not (such a loss gets the projected gradient).
void eig_vjp(VjpContext& c, int64_t output) {
  Node* a = c.in(c.node()->op()->schema.params[0].name);
  if (!c.needs(a)) return;
  Node* v = output == 1 ? c.out() : c.call("_stax_linalg_eig", {a, int64_t{1}});
  Node* vh = mH(c, v);
  Node* inner;
  if (output == 0) {
    inner = c.mul(c.call("unsqueeze", {c.grad(), int64_t{-1}}), vh);  // diag(gL) V^H
  } else {
    Node* l = c.call("_stax_linalg_eig", {a, int64_t{0}});
    Node* eye = eye_of(c, v);
    Node* vhgv = cmatmul(c, vh, c.grad());
    Node* d = c.call("real", {c.call("sum.dim_IntList", {c.mul(vhgv, eye),
                                                         std::vector<int64_t>{-2}})});
    Node* p = c.sub(vhgv, cmatmul(c, vh, c.mul(v, c.call("unsqueeze", {d, int64_t{-2}}))));
    Node* lc = conj(c, l);
    Node* e = c.add(c.sub(c.call("unsqueeze", {lc, int64_t{-2}}),
                          c.call("unsqueeze", {lc, int64_t{-1}})),
                    eye);
    inner = cmatmul(c, c.div(p, e), vh);
  }
  c.give(a, c.call("_stax_complex_solve", {v, inner, true}));
}

std::vector<Node*> eig_expansion(Graph& g, const ExpandCall& c) {
  Node* a = c.tensor("self");
  return {g.call("_stax_linalg_eig", {a, int64_t{0}}), g.call("_stax_linalg_eig", {a, int64_t{1}})};
}

constexpr const char* kEig =
    "linalg_eig(Tensor self) -> (Tensor eigenvalues, Tensor eigenvectors)";

}  // namespace

void register_linalg_eig_ops(OpRegistry& r) {
  r.add("_stax_complex_solve(Tensor A, Tensor B, bool adjoint=False) -> Tensor",
        OpCategory::Extern, Promotion::None, complex_solve_meta)
      .complex = true;
  r.add("_stax_linalg_eig(Tensor A, int output) -> Tensor", OpCategory::Extern, Promotion::None,
        [](const CallArgs& c) {
          return eig_meta(c, c.tensor("A"), c.get("output").to_int(), "linalg.eig");
        })
      .complex = true;
  r.add("linalg_eigvals(Tensor self) -> Tensor", OpCategory::Extern, Promotion::None,
        [](const CallArgs& c) { return eig_meta(c, c.tensor("self"), 0, "linalg.eigvals"); })
      .complex = true;
  r.add_multi(kEig, OpCategory::Composite, infer_by_expansion(parse_schema(kEig).name)).complex =
      true;
}

void register_linalg_eig_expansions(ExpansionTable& t) {
  t.add(parse_schema(kEig).name, eig_expansion);
}

void register_linalg_eig_vjps(VjpTable& t) {
  t.add("_stax_linalg_eig.default",
        [](VjpContext& c) { eig_vjp(c, c.arg("output").to_int()); });
  t.add("linalg_eigvals.default", [](VjpContext& c) { eig_vjp(c, 0); });
  t.add("_stax_complex_solve.default", complex_solve_vjp);
}

void register_linalg_eig_kernels(InterpreterTable& t) {
  t.add("_stax_linalg_eig.default",
        [](const KernelContext& c) { return eig_kernel(c, c.arg("output").to_int()); });
  t.add("linalg_eigvals.default", [](const KernelContext& c) { return eig_kernel(c, 0); });
  t.add("_stax_complex_solve.default", complex_solve_kernel);
}

}  // namespace stax
