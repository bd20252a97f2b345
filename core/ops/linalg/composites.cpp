// The linalg ops torch computes from a factorization, as decompositions onto the element ops
// (their gradients flow through those ops' rules): linalg_pinv (torch's SVD / eigh formula and
// default tolerances), linalg_matrix_sqrth (eigh) and linalg_polar (SVD, tuple-valued) and
// linalg_lstsq (pinv).
#include <algorithm>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/autodiff/vjp.h"
#include "core/graph/decompositions.h"
#include "core/graph/multi_output.h"
#include "core/ops/common/infer_by_building.h"
#include "core/ops/common/via_decomposition.h"
#include "core/interpreter/interpreter.h"
#include "core/ops/common/kernel_utils.h"
#include "core/ops/linalg/linalg_args.h"
#include "core/ops/linalg/packed_factors.h"
#include "core/ops/registration.h"

namespace stax {

namespace {

using namespace linalg;

Node* mT(Graph& g, Node* x) { return g.call("transpose.int", {x, int64_t{-2}, int64_t{-1}}); }
Node* unsq(Graph& g, Node* x, int64_t d) { return g.call("unsqueeze", {x, d}); }

// U, S, Vh (reduced) and the eigenvalues and vectors (lower triangle) of A, from one LAPACK call
// each (packed_factors.h).
std::tuple<Node*, Node*, Node*> svd_once(Graph& g, Node* a) {
  Node* f = g.call("_stax_linalg_svd", {a, false, kAllParts});
  auto part = [&](int64_t p) { return g.call("_stax_linalg_svd", {a, false, p, f}); };
  return {part(kU), part(kS), part(kVh)};
}
std::pair<Node*, Node*> eigh_once(Graph& g, Node* a) {
  Node* f = g.call("_stax_linalg_eigh", {a, std::string("L"), kAllParts});
  auto part = [&](int64_t p) { return g.call("_stax_linalg_eigh", {a, std::string("L"), p, f}); };
  return {part(0), part(1)};
}

double epsilon(DType t) {
  return t == DType::Float32 ? double(std::numeric_limits<float>::epsilon())
                             : std::numeric_limits<double>::epsilon();
}

// torch's linalg_pinv: singular values (|eigenvalues| when hermitian) at most
// max(atol, rtol * largest) count as zero; rtol defaults to eps * max(m, n), or 0 when atol is
// given and positive.
Node* pinv(Graph& g, const Node& n) {
  Node* a = n.arg("self").node();
  DType t = a->dtype();
  const Shape& s = a->shape();
  if (n.meta().numel() == 0 || a->meta().numel() == 0)  // torch returns early: nothing to invert
    return g.call("zeros", {Arg(n.shape())}, {{"dtype", t}});
  Node* atol = n.arg("atol").is_absent() ? g.call("full", {Shape{}, 0.0}, {{"dtype", t}})
                                         : n.arg("atol").node();
  Node* rtol;
  Node* default_rtol =
      g.call("full", {Shape{}, epsilon(t) * double(std::max(rows(s), cols(s)))}, {{"dtype", t}});
  if (!n.arg("rtol").is_absent())
    rtol = n.arg("rtol").node();
  else if (!n.arg("atol").is_absent())
    rtol = g.call("where.ScalarSelf", {g.call("gt.Scalar", {atol, 0.0}), 0.0, default_rtol});
  else
    rtol = default_rtol;
  bool hermitian = n.arg("hermitian").to_bool();
  Node* sv;
  Node* big;
  Node* left;
  Node* right;
  if (!hermitian) {
    auto [u, values, vh] = svd_once(g, a);
    sv = values;
    big = g.call("slice.Tensor", {sv, int64_t{-1}, int64_t{0}, int64_t{1}});
    left = mT(g, vh);
    right = mT(g, u);
  } else {
    auto [l, v] = eigh_once(g, a);
    sv = l;
    big = g.call("amax", {g.call("abs", {l}), std::vector<int64_t>{-1}, true});
    left = v;
    right = mT(g, v);
  }
  Node* tol = g.call("maximum", {unsq(g, atol, -1), g.call("mul.Tensor", {unsq(g, rtol, -1), big})});
  Node* mag = hermitian ? g.call("abs", {sv}) : sv;
  Node* inv = g.call("where.ScalarOther",
                     {g.call("gt.Tensor", {mag, tol}), g.call("reciprocal", {sv}), 0.0});
  inv = g.call("to.dtype", {inv, t});
  return g.call("matmul", {g.call("mul.Tensor", {left, unsq(g, inv, -2)}), right});
}

// The principal square root of a symmetric positive-definite A: V diag(sqrt(L)) V^T.
Node* matrix_sqrth(Graph& g, const Node& n) {
  Node* a = n.arg("self").node();
  auto [l, v] = eigh_once(g, a);
  return g.call("matmul", {g.call("mul.Tensor", {v, unsq(g, g.call("sqrt", {l}), -2)}), mT(g, v)});
}

// A = U H with U = W Vh and H = Vh^T diag(S) Vh from A = W diag(S) Vh (m >= n).
std::vector<Node*> polar(Graph& g, const ExpandCall& c) {
  Node* a = c.tensor("A");
  const Shape& s = a->shape();
  if (s.size() < 2) c.fail("linalg.polar: The input tensor A must have at least 2 dimensions.");
  if (rows(s) < cols(s))
    c.fail("linalg.polar: input must have at least as many rows as columns, but got " +
           std::to_string(rows(s)) + " by " + std::to_string(cols(s)) + " matrices");
  auto [w, sv, vh] = svd_once(g, a);
  Node* h = g.call("matmul", {g.call("mul.Tensor", {mT(g, vh), unsq(g, sv, -2)}), vh});
  return {g.call("matmul", {w, vh}), h};
}

// linalg_lstsq as torch's results of each driver: the solution pinv(A) B (the minimum-norm
// least-squares solution every driver returns for a full-rank A; gelsy's for rank-deficient ones
// too, with its default rcond eps * max(m, n)), the squared residuals (m > n, drivers other than
// gelsy), the rank (gelsy, gelsd, gelss) and the singular values (gelsd, gelss); the others are
// empty, as torch's. Its gradient is pinv's (torch's linalg_lstsq_backward also goes through
// pinv).
std::vector<Node*> lstsq(Graph& g, const ExpandCall& c) {
  Node* a = c.tensor("self");
  Node* b = c.tensor("b");
  const Shape& s = a->shape();
  if (s.size() < 2) c.fail("torch.linalg.lstsq: input must have at least 2 dimensions.");
  if (b->dtype() != a->dtype())
    c.fail("torch.linalg.lstsq: Expected input and other to have the same dtype, but got input's "
           "dtype " + std::string(dtype_name(a->dtype())) + " and other's dtype " +
           std::string(dtype_name(b->dtype())));
  std::string driver = c.has("driver") ? c.get("driver").str() : "gelsy";
  if (driver != "gels" && driver != "gelsy" && driver != "gelsd" && driver != "gelss")
    c.fail("torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)");
  bool vector = b->shape().size() + 1 == s.size();
  Node* bm = vector ? unsq(g, b, -1) : b;
  if (bm->shape().size() < 2 || rows(bm->shape()) != rows(s))
    c.fail("torch.linalg.lstsq: input.size(-2) should match other.size(-2)");
  DType t = a->dtype();
  int64_t m = rows(s), n = cols(s);
  double rcond = c.has("rcond") ? c.get("rcond").to_double() : epsilon(t) * double(std::max(m, n));
  if (rcond < 0) rcond = epsilon(t);  // LAPACK's convention: a negative rcond is machine precision
  Node* rtol = g.call("full", {Shape{}, rcond}, {{"dtype", t}});
  Node* pinv = g.call("linalg_pinv.atol_rtol_tensor", {a}, {{"rtol", rtol}});
  Node* x = g.call("matmul", {pinv, bm});
  auto empty = [&](DType d) { return g.call("zeros", {Arg(Shape{0})}, {{"dtype", d}}); };
  Node* residuals = empty(t);
  if (m > n && driver != "gelsy") {
    Node* r = g.call("sub.Tensor", {g.call("matmul", {a, x}), bm});
    residuals = g.call("sum.dim_IntList", {g.call("mul.Tensor", {r, r}), std::vector<int64_t>{-2}});
    if (vector) residuals = g.call("squeeze.dim", {residuals, int64_t{-1}});
  }
  Node* sv = g.call("_stax_linalg_svd", {a, false, kS});
  Node* rank = empty(DType::Int64);
  if (driver != "gels") {
    Node* tol = g.call("mul.Scalar",
                       {g.call("slice.Tensor", {sv, int64_t{-1}, int64_t{0}, int64_t{1}}), rcond});
    Node* above = g.call("to.dtype", {g.call("gt.Tensor", {sv, tol}), DType::Int64});
    rank = g.call("sum.dim_IntList", {above, std::vector<int64_t>{-1}});
  }
  Node* values = driver == "gelsd" || driver == "gelss" ? sv : empty(t);
  if (vector) x = g.call("squeeze.dim", {x, int64_t{-1}});
  return {x, residuals, rank, values};
}

TensorMeta pinv_rule(const CallArgs& c) {
  const TensorMeta& a = c.tensor("self");
  if ((a.dtype != DType::Float32 && a.dtype != DType::Float64) || a.dim() < 2)
    c.fail("linalg.pinv(" + std::string(dtype_name(a.dtype)) + shape_str(a.sizes) +
           "): expected a tensor with 2 or more dimensions of float, double, cfloat or cdouble "
           "types");
  for (const char* p : {"atol", "rtol"})
    if (c.has(p) && !is_floating(c.tensor(p).dtype))
      c.fail(std::string("linalg.pinv: ") + p + " tensor of type " +
             std::string(dtype_name(c.tensor(p).dtype)) + " is not supported");
  if (c.get("hermitian").to_bool() && rows(a.sizes) != cols(a.sizes))
    c.fail("linalg.eigh: A must be batches of square matrices, but they are " +
           std::to_string(rows(a.sizes)) + " by " + std::to_string(cols(a.sizes)) + " matrices");
  // The tolerances broadcast against the batch (torch's result takes their batch too).
  Shape batch = batch_of(a.sizes);
  for (const char* p : {"atol", "rtol"})
    if (c.has(p)) batch = broadcast_shapes(batch, c.tensor(p).sizes, c.where());
  return TensorMeta::contiguous(with_matrix(batch, cols(a.sizes), rows(a.sizes)), a.dtype,
                                a.device);
}

TensorMeta sqrth_rule(const CallArgs& c) {
  const TensorMeta& a = c.tensor("self");
  need_float(c, a, "linalg.matrix_sqrth");
  need_square(c, a, "linalg.matrix_sqrth");
  return TensorMeta::contiguous(a.sizes, a.dtype, a.device);
}

constexpr const char* kPinv =
    "linalg_pinv.atol_rtol_tensor(Tensor self, *, Tensor? atol=None, Tensor? rtol=None, bool "
    "hermitian=False) -> Tensor";
constexpr const char* kSqrth = "linalg_matrix_sqrth(Tensor self) -> Tensor";
constexpr const char* kPolar = "linalg_polar(Tensor A) -> (Tensor U, Tensor H)";
constexpr const char* kLstsq =
    "linalg_lstsq(Tensor self, Tensor b, float? rcond=None, *, str? driver=None) -> (Tensor "
    "solution, Tensor residuals, Tensor rank, Tensor singular_values)";

}  // namespace

void register_linalg_composite_ops(OpRegistry& r) {
  r.add(kPinv, OpCategory::Composite, Promotion::None, pinv_rule);
  r.add(kSqrth, OpCategory::Composite, Promotion::None, sqrth_rule);
  for (const char* m : {kPolar, kLstsq})
    r.add_multi(m, OpCategory::Composite, infer_by_expansion(parse_schema(m).name));
}

void register_linalg_composite_expansions(ExpansionTable& t) {
  t.add(parse_schema(kPolar).name, polar);
  t.add(parse_schema(kLstsq).name, lstsq);
}

void register_linalg_composite_decompositions(DecompositionTable& t) {
  t.add(parse_schema(kPinv).name, pinv);
  t.add(parse_schema(kSqrth).name, matrix_sqrth);
}

void register_linalg_composite_kernels(InterpreterTable& t) {
  for (const char* s : {kPinv, kSqrth}) t.add(parse_schema(s).name, kernels::run_decomposition);
}

// torch's pinv_backward (the gradient of the pseudo-inverse as a function of the whole matrix, for
// hermitian=True too, and defined at rank-deficient inputs where the SVD's rule is not).
void pinv_vjp(VjpContext& c) {
  Node* a = c.in("self");
  if (!c.needs(a)) return;
  auto mm = [&](Node* x, Node* y) { return c.call("matmul", {x, y}); };
  Node* p = c.out();
  Node* ph = c.mT(p);
  Node* gh = c.mT(c.grad());
  int64_t m = rows(a->shape()), n = cols(a->shape());
  Node* ga;
  if (m <= n) {
    Node* k = mm(gh, p);
    Node* kph = mm(k, ph);
    ga = c.add(c.sub(c.neg(c.mT(mm(p, k))), mm(mm(a, p), kph)), kph);
    ga = c.add(ga, mm(mm(ph, p), c.sub(gh, mm(k, a))));
  } else {
    Node* k = mm(p, gh);
    Node* phk = mm(ph, k);
    ga = c.add(c.neg(c.mT(mm(k, p))), mm(mm(c.sub(gh, mm(a, k)), p), ph));
    ga = c.add(ga, c.sub(phk, mm(mm(phk, p), a)));
  }
  c.give(a, ga);
}

void register_linalg_composite_vjps(VjpTable& t) {
  t.add(parse_schema(kPinv).name, pinv_vjp);
  t.add(parse_schema(kSqrth).name, vjp_via_decomposition);
}

}  // namespace stax
