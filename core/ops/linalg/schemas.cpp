// The linear-algebra ops (docs/linalg.md): aten's single-result ops (linalg_solve_triangular,
// linalg_lu_solve, linalg_householder_product, ormqr, cholesky_solve, cholesky_inverse) and the
// Stax-internal element ops that the tuple-valued aten ops (linalg_lu_factor_ex, _linalg_svd ...,
// expansions.cpp) expand to: _stax_linalg_<factorization>(A, ..., int output) computes one result
// of a LAPACK factorization. float32 / float64, batched over the leading dims.
#include <algorithm>
#include <string>

#include "core/graph/op_registry.h"
#include "core/ops/linalg/error_checks.h"
#include "core/ops/linalg/linalg_args.h"
#include "core/ops/linalg/packed_factors.h"
#include "core/ops/registration.h"

namespace stax {

namespace linalg {

void need_float(const CallArgs& c, const TensorMeta& m, const std::string& api) {
  if (m.dtype != DType::Float32 && m.dtype != DType::Float64)
    c.fail(api + ": Expected a floating point or complex tensor as input. Got " +
           std::string(dtype_name(m.dtype)) +
           " (Stax's linalg ops take float32 and float64; torch's CPU kernels have no other "
           "real dtype)");
}

void need_matrix(const CallArgs& c, const TensorMeta& m, const std::string& api,
                 const std::string& name) {
  if (m.dim() < 2)
    c.fail(api + ": The input tensor " + name + " must have at least 2 dimensions.");
}

void need_square(const CallArgs& c, const TensorMeta& m, const std::string& api,
                 const std::string& name) {
  need_matrix(c, m, api, name);
  if (rows(m.sizes) != cols(m.sizes))
    c.fail(api + ": " + name + " must be batches of square matrices, but they are " +
           std::to_string(rows(m.sizes)) + " by " + std::to_string(cols(m.sizes)) +
           " matrices");
}

bool is_vector_rhs(const Shape& a, const Shape& b) {
  if (b.size() == 1) return true;
  return b.size() + 1 == a.size() && b == Shape(a.begin(), a.end() - 1);
}

void need_qr_mode(const CallArgs& c, const std::string& mode) {
  if (mode != "reduced" && mode != "complete" && mode != "r")
    c.fail("qr received unrecognized mode '" + mode +
           "' but expected one of 'reduced' (default), 'r', or 'complete'");
}

}  // namespace linalg

namespace {

using namespace linalg;
using C = OpCategory;
using P = Promotion;

TensorMeta of(Shape s, DType t, const TensorMeta& like) {
  return TensorMeta::contiguous(std::move(s), t, like.device);
}

bool all_parts(const CallArgs& c) { return c.get("output").to_int() == kAllParts; }

// The packed results of `op` on `a` (packed_factors.h), for output = kAllParts.
TensorMeta packed(const TensorMeta& a, std::string_view op, const std::string& mode = "",
                  bool full = false) {
  return packed_meta(a, part_numels(op, a.sizes, mode, full));
}

// A `factors` argument must be the packed results of `op` on `a` (batch included).
void need_factors(const CallArgs& c, const TensorMeta& a, std::string_view op,
                  const std::string& mode = "", bool full = false) {
  const Arg& f = c.get("factors");
  if (f.is_absent()) return;
  TensorMeta want = packed(a, op, mode, full);
  const TensorMeta& have = c.tensor("factors");
  if (have.sizes != want.sizes || have.dtype != want.dtype)
    c.fail("factors: expected the packed results of " + std::string(op) + " (" +
           shape_str(want.sizes) + " " + std::string(dtype_name(want.dtype)) + "), got " +
           shape_str(have.sizes) + " " + std::string(dtype_name(have.dtype)));
}

TensorMeta lu_rule(const CallArgs& c) {
  const TensorMeta& a = c.tensor("A");
  need_float(c, a, "linalg.lu_factor");
  need_matrix(c, a, "linalg.lu_factor");
  Shape b = batch_of(a.sizes);
  int64_t k = std::min(rows(a.sizes), cols(a.sizes));
  need_factors(c, a, "_stax_linalg_lu");
  switch (c.get("output").to_int()) {
    case kAllParts: return packed(a, "_stax_linalg_lu");
    case kLU: return of(a.sizes, a.dtype, a);
    case kPivots: b.push_back(k); return of(b, DType::Int32, a);
    case kInfo: return of(b, DType::Int32, a);
  }
  c.fail("output must be 0 (LU), 1 (pivots) or 2 (info)");
}

TensorMeta det_rule(const CallArgs& c) {
  const TensorMeta& a = c.tensor("A");
  need_float(c, a, "linalg.det");
  need_square(c, a, "linalg.det");
  if (c.get("output").to_int() < kDet || c.get("output").to_int() > kLogAbsDet)
    c.fail("output must be 0 (det), 1 (sign) or 2 (logabsdet)");
  need_factors(c, a, "_stax_linalg_lu");
  return of(batch_of(a.sizes), a.dtype, a);
}

// A X = B (left) or X A = B: B (*, n, k) or (*, k, n); the batch dims broadcast.
TensorMeta solve_shape(const CallArgs& c, const TensorMeta& a, const TensorMeta& b,
                       const std::string& api, bool left) {
  need_float(c, b, api);
  if (a.dtype != b.dtype)
    c.fail(api + ": Expected A and B to have the same dtype, but found A of type " +
           std::string(dtype_name(a.dtype)) + " and B of type " +
           std::string(dtype_name(b.dtype)) + " instead.");
  need_matrix(c, b, api, "B");
  int64_t n = rows(a.sizes);
  int64_t have = left ? rows(b.sizes) : cols(b.sizes);
  if (have != n)
    c.fail(api + ": Incompatible shapes of A and B for the equation " +
           (left ? std::string("AX = B") : std::string("XA = B")) + " (" +
           std::to_string(n) + "x" + std::to_string(n) + " and " +
           std::to_string(rows(b.sizes)) + "x" + std::to_string(cols(b.sizes)) + ")");
  Shape batch = broadcast_shapes(batch_of(a.sizes), batch_of(b.sizes), c.where());
  return of(with_matrix(batch, rows(b.sizes), cols(b.sizes)), a.dtype, a);
}

TensorMeta solve_rule(const CallArgs& c) {
  const TensorMeta& a = c.tensor("A");
  need_float(c, a, "linalg.solve");
  need_square(c, a, "linalg.solve");
  TensorMeta out = solve_shape(c, a, c.tensor("B"), "linalg.solve", c.get("left").to_bool());
  // the factors are of A broadcast over the solution's batch
  need_factors(c, of(with_matrix(batch_of(out.sizes), rows(a.sizes), cols(a.sizes)), a.dtype, a),
               "_stax_linalg_lu");
  return out;
}

TensorMeta solve_triangular_rule(const CallArgs& c) {
  const TensorMeta& a = c.tensor("self");
  need_float(c, a, "linalg.solve_triangular");
  need_square(c, a, "linalg.solve_triangular");
  return solve_shape(c, a, c.tensor("B"), "linalg.solve_triangular", c.get("left").to_bool());
}

TensorMeta lu_solve_rule(const CallArgs& c) {
  const TensorMeta& lu = c.tensor("LU");
  const TensorMeta& piv = c.tensor("pivots");
  need_float(c, lu, "linalg.lu_solve");
  need_square(c, lu, "linalg.lu_solve", "LU");
  if (piv.dtype != DType::Int32)
    c.fail("linalg.lu_solve: pivots should be a Tensor of scalar type int32, got " +
           std::string(dtype_name(piv.dtype)));
  if (piv.dim() + 1 != lu.dim() || piv.sizes != Shape(lu.sizes.begin(), lu.sizes.end() - 1))
    c.fail("linalg.lu_solve: Expected LU.shape[:-1] and pivots.shape to be the same, got " +
           shape_str(lu.sizes) + " and " + shape_str(piv.sizes));
  return solve_shape(c, lu, c.tensor("B"), "linalg.lu_solve", c.get("left").to_bool());
}

TensorMeta cholesky_rule(const CallArgs& c) {
  const TensorMeta& a = c.tensor("A");
  need_float(c, a, "linalg.cholesky");
  need_square(c, a, "linalg.cholesky");
  need_factors(c, a, "_stax_linalg_cholesky");
  switch (c.get("output").to_int()) {
    case kAllParts: return packed(a, "_stax_linalg_cholesky");
    case 0: return of(a.sizes, a.dtype, a);
    case 1: return of(batch_of(a.sizes), DType::Int32, a);
  }
  c.fail("output must be 0 (L) or 1 (info)");
}

TensorMeta qr_rule(const CallArgs& c) {
  const TensorMeta& a = c.tensor("A");
  need_float(c, a, "linalg.qr");
  need_matrix(c, a, "linalg.qr");
  std::string mode = c.get("mode").str();
  need_qr_mode(c, mode);
  need_factors(c, a, "_stax_linalg_qr", mode);
  if (all_parts(c)) return packed(a, "_stax_linalg_qr", mode);
  Shape b = batch_of(a.sizes);
  int64_t m = rows(a.sizes), n = cols(a.sizes), k = std::min(m, n);
  bool complete = mode == "complete";
  if (c.get("output").to_int() == 0) {
    if (mode == "r") return of(Shape{0}, a.dtype, a);
    return of(with_matrix(b, m, complete ? m : k), a.dtype, a);
  }
  return of(with_matrix(b, complete ? m : k, n), a.dtype, a);
}

TensorMeta eigh_rule(const CallArgs& c) {
  const TensorMeta& a = c.tensor("A");
  need_float(c, a, "linalg.eigh");
  need_square(c, a, "linalg.eigh");
  std::string uplo = c.get("UPLO").str();
  if (uplo != "L" && uplo != "U") c.fail("Expected UPLO argument to be 'L' or 'U', but got " + uplo);
  need_factors(c, a, "_stax_linalg_eigh");
  if (all_parts(c)) return packed(a, "_stax_linalg_eigh");
  if (c.get("output").to_int() == 1) return of(a.sizes, a.dtype, a);
  Shape b = batch_of(a.sizes);
  b.push_back(rows(a.sizes));
  return of(b, a.dtype, a);
}

TensorMeta svd_rule(const CallArgs& c) {
  const TensorMeta& a = c.tensor("A");
  need_float(c, a, "linalg.svd");
  need_matrix(c, a, "linalg.svd");
  Shape b = batch_of(a.sizes);
  int64_t m = rows(a.sizes), n = cols(a.sizes), k = std::min(m, n);
  bool full = c.get("full_matrices").to_bool();
  need_factors(c, a, "_stax_linalg_svd", "", full);
  switch (c.get("output").to_int()) {
    case kAllParts: return packed(a, "_stax_linalg_svd", "", full);
    case kU: return of(with_matrix(b, m, full ? m : k), a.dtype, a);
    case kS: b.push_back(k); return of(b, a.dtype, a);
    case kVh: return of(with_matrix(b, full ? n : k, n), a.dtype, a);
  }
  c.fail("output must be 0 (U), 1 (S) or 2 (Vh)");
}

TensorMeta geqrf_rule(const CallArgs& c) {
  const TensorMeta& a = c.tensor("A");
  need_float(c, a, "geqrf");
  need_matrix(c, a, "geqrf");
  need_factors(c, a, "_stax_linalg_geqrf");
  if (all_parts(c)) return packed(a, "_stax_linalg_geqrf");
  if (c.get("output").to_int() == 0) return of(a.sizes, a.dtype, a);
  Shape b = batch_of(a.sizes);
  b.push_back(std::min(rows(a.sizes), cols(a.sizes)));
  return of(b, a.dtype, a);
}

TensorMeta permutation_rule(const CallArgs& c) {
  const TensorMeta& lu = c.tensor("LU");
  need_matrix(c, lu, "lu_unpack", "LU_data");
  const TensorMeta& piv = c.tensor("pivots");
  if (piv.dtype != DType::Int32)
    c.fail("lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype, got " +
           std::string(dtype_name(piv.dtype)));
  int64_t m = rows(lu.sizes);
  Shape want = batch_of(lu.sizes);
  want.push_back(std::min(m, cols(lu.sizes)));
  if (piv.sizes != want)
    c.fail("lu_unpack: LU_pivots of shape " + shape_str(piv.sizes) + " does not fit LU_data of "
           "shape " + shape_str(lu.sizes) + " (expected " + shape_str(want) + ")");
  return of(with_matrix(batch_of(lu.sizes), m, m), lu.dtype, lu);
}

// Q of the Householder reflectors stored below the diagonal of `input` (*, m, n), m >= n.
TensorMeta householder_rule(const CallArgs& c) {
  const TensorMeta& a = c.tensor("input");
  const TensorMeta& tau = c.tensor("tau");
  const std::string api = "torch.linalg.householder_product";
  need_float(c, a, api);
  need_matrix(c, a, api, "input");
  if (rows(a.sizes) < cols(a.sizes))
    c.fail(api + ": input.shape[-2] must be greater than or equal to input.shape[-1]");
  if (tau.dim() != a.dim() - 1 || Shape(tau.sizes.begin(), tau.sizes.end() - 1) != batch_of(a.sizes))
    c.fail(api + ": Expected batch dimensions of tau to be equal to input.shape[:-2], got " +
           shape_str(tau.sizes) + " and " + shape_str(a.sizes));
  if (tau.sizes.back() > cols(a.sizes))
    c.fail(api + ": input.shape[-1] must be greater than or equal to tau.shape[-1]");
  if (tau.dtype != a.dtype)
    c.fail(api + ": tau dtype " + std::string(dtype_name(tau.dtype)) +
           " does not match input dtype " + std::string(dtype_name(a.dtype)));
  return of(a.sizes, a.dtype, a);
}

TensorMeta ormqr_rule(const CallArgs& c) {
  const TensorMeta& a = c.tensor("self");
  const TensorMeta& tau = c.tensor("input2");
  const TensorMeta& other = c.tensor("input3");
  need_float(c, a, "torch.ormqr");
  need_matrix(c, a, "torch.ormqr", "input");
  need_matrix(c, other, "torch.ormqr", "other");
  if (tau.dtype != a.dtype || other.dtype != a.dtype)
    c.fail("torch.ormqr: tau and other must have the input's dtype " +
           std::string(dtype_name(a.dtype)));
  if (batch_of(a.sizes) != batch_of(other.sizes) || tau.dim() != a.dim() - 1 ||
      Shape(tau.sizes.begin(), tau.sizes.end() - 1) != batch_of(a.sizes))
    c.fail("torch.ormqr: input, tau and other must have equal batch dimensions, got " +
           shape_str(a.sizes) + ", " + shape_str(tau.sizes) + " and " + shape_str(other.sizes));
  bool left = c.get("left").to_bool();
  int64_t mn = left ? rows(other.sizes) : cols(other.sizes);
  if (rows(a.sizes) != mn)
    c.fail("torch.ormqr: input.shape[-2] must be equal to other.shape[" +
           std::string(left ? "-2" : "-1") + "]");
  if (tau.sizes.empty() || tau.sizes.back() > mn)
    c.fail("torch.ormqr: tau.shape[-1] must be less than or equal to other.shape[" +
           std::string(left ? "-2" : "-1") + "]");
  return of(other.sizes, a.dtype, a);
}

TensorMeta cholesky_solve_rule(const CallArgs& c) {
  const TensorMeta& b = c.tensor("self");
  const TensorMeta& l = c.tensor("input2");
  need_float(c, l, "cholesky_solve");
  need_square(c, l, "cholesky_solve", "A");
  return solve_shape(c, l, b, "cholesky_solve", true);
}

TensorMeta cholesky_inverse_rule(const CallArgs& c) {
  const TensorMeta& l = c.tensor("self");
  need_float(c, l, "cholesky_inverse");
  need_square(c, l, "cholesky_inverse", "input");
  return of(l.sizes, l.dtype, l);
}

TensorMeta matrix_exp_rule(const CallArgs& c) {
  const TensorMeta& a = c.tensor("self");
  if (!is_floating(a.dtype))  // torch's CPU kernel also takes float16 / bfloat16 (Stax: in double)
    need_float(c, a, "linalg.matrix_exp");
  need_square(c, a, "linalg.matrix_exp");
  return of(a.sizes, a.dtype, a);
}

TensorMeta ldl_rule(const CallArgs& c) {
  const TensorMeta& a = c.tensor("A");
  need_float(c, a, "torch.linalg.ldl_factor_ex");
  need_square(c, a, "torch.linalg.ldl_factor_ex");
  need_factors(c, a, "_stax_linalg_ldl");
  Shape b = batch_of(a.sizes);
  switch (c.get("output").to_int()) {
    case kAllParts: return packed(a, "_stax_linalg_ldl");
    case kLU: return of(a.sizes, a.dtype, a);
    case kPivots: b.push_back(rows(a.sizes)); return of(b, DType::Int32, a);
    case kInfo: return of(b, DType::Int32, a);
  }
  c.fail("output must be 0 (LD), 1 (pivots) or 2 (info)");
}

TensorMeta ldl_solve_rule(const CallArgs& c) {
  const TensorMeta& ldm = c.tensor("LD");
  const TensorMeta& piv = c.tensor("pivots");
  need_float(c, ldm, "torch.linalg.ldl_solve");
  need_square(c, ldm, "torch.linalg.ldl_solve", "LD");
  if (piv.dtype != DType::Int32)
    c.fail("torch.linalg.ldl_solve: Expected pivots to be integers. Got " +
           std::string(dtype_name(piv.dtype)));
  if (piv.sizes != Shape(ldm.sizes.begin(), ldm.sizes.end() - 1))
    c.fail("torch.linalg.ldl_solve: Expected LD.shape[:-1] and pivots.shape to be the same, got " +
           shape_str(ldm.sizes) + " and " + shape_str(piv.sizes));
  return solve_shape(c, ldm, c.tensor("B"), "torch.linalg.ldl_solve", true);
}

}  // namespace

void register_linalg_ops(OpRegistry& r) {
  auto ext = [&](const char* schema, InferFn rule, bool differentiable) {
    r.add(schema, C::Extern, P::None, std::move(rule)).differentiable = differentiable;
  };
  ext("_stax_linalg_lu(Tensor A, int output, Tensor? factors=None) -> Tensor", lu_rule, true);
  ext("_stax_linalg_det(Tensor A, int output, Tensor? factors=None) -> Tensor", det_rule, true);
  ext("_stax_linalg_solve(Tensor A, Tensor B, bool left=True, Tensor? factors=None) -> "
      "Tensor", solve_rule, true);
  ext("_stax_linalg_cholesky(Tensor A, bool upper, int output, Tensor? factors=None) -> Tensor", cholesky_rule, true);
  ext("_stax_linalg_qr(Tensor A, str mode, int output, Tensor? factors=None) -> Tensor", qr_rule, true);
  ext("_stax_linalg_eigh(Tensor A, str UPLO, int output, Tensor? factors=None) -> Tensor", eigh_rule, true);
  ext("_stax_linalg_svd(Tensor A, bool full_matrices, int output, Tensor? factors=None) -> Tensor", svd_rule, true);
  ext("_stax_linalg_geqrf(Tensor A, int output, Tensor? factors=None) -> Tensor", geqrf_rule, false);
  ext("_stax_lu_permutation(Tensor LU, Tensor pivots) -> Tensor", permutation_rule, false);
  ext("_stax_linalg_ldl(Tensor A, int output, Tensor? factors=None) -> Tensor", ldl_rule, false);
  ext("linalg_matrix_exp(Tensor self) -> Tensor", matrix_exp_rule, true);
  ext("linalg_ldl_solve(Tensor LD, Tensor pivots, Tensor B, *, bool hermitian=False) -> Tensor",
      ldl_solve_rule, false);
  ext("linalg_solve_triangular(Tensor self, Tensor B, *, bool upper, bool left=True, "
      "bool unitriangular=False) -> Tensor", solve_triangular_rule, true);
  ext("linalg_lu_solve(Tensor LU, Tensor pivots, Tensor B, *, bool left=True, "
      "bool adjoint=False) -> Tensor", lu_solve_rule, true);
  ext("linalg_householder_product(Tensor input, Tensor tau) -> Tensor", householder_rule, true);
  ext("ormqr(Tensor self, Tensor input2, Tensor input3, bool left=True, bool transpose=False) "
      "-> Tensor", ormqr_rule, true);
  linalg::register_check_op(r);
  r.add("cholesky_solve(Tensor self, Tensor input2, bool upper=False) -> Tensor", C::Composite,
        P::None, cholesky_solve_rule);
  r.add("cholesky_inverse(Tensor self, bool upper=False) -> Tensor", C::Composite, P::None,
        cholesky_inverse_rule);
}

}  // namespace stax
