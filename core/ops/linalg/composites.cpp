// The linalg ops torch computes from a factorization, as decompositions onto the element ops
// (their gradients flow through those ops' rules): linalg_pinv (torch's SVD / eigh formula and
// default tolerances), linalg_matrix_sqrth (eigh) and linalg_polar (SVD, tuple-valued).
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "core/graph/decompositions.h"
#include "core/graph/multi_output.h"
#include "core/ops/common/infer_by_building.h"
#include "core/ops/common/via_decomposition.h"
#include "core/interpreter/interpreter.h"
#include "core/ops/common/kernel_utils.h"
#include "core/ops/linalg/linalg_args.h"
#include "core/ops/registration.h"

namespace stax {

namespace {

using namespace linalg;

Node* mT(Graph& g, Node* x) { return g.call("transpose.int", {x, int64_t{-2}, int64_t{-1}}); }
Node* unsq(Graph& g, Node* x, int64_t d) { return g.call("unsqueeze", {x, d}); }

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
    Node* u = g.call("_stax_linalg_svd", {a, false, kU});
    sv = g.call("_stax_linalg_svd", {a, false, kS});
    Node* vh = g.call("_stax_linalg_svd", {a, false, kVh});
    big = g.call("slice.Tensor", {sv, int64_t{-1}, int64_t{0}, int64_t{1}});
    left = mT(g, vh);
    right = mT(g, u);
  } else {
    Node* l = g.call("_stax_linalg_eigh", {a, std::string("L"), int64_t{0}});
    Node* v = g.call("_stax_linalg_eigh", {a, std::string("L"), int64_t{1}});
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
  Node* l = g.call("_stax_linalg_eigh", {a, std::string("L"), int64_t{0}});
  Node* v = g.call("_stax_linalg_eigh", {a, std::string("L"), int64_t{1}});
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
  Node* w = g.call("_stax_linalg_svd", {a, false, kU});
  Node* sv = g.call("_stax_linalg_svd", {a, false, kS});
  Node* vh = g.call("_stax_linalg_svd", {a, false, kVh});
  Node* h = g.call("matmul", {g.call("mul.Tensor", {mT(g, vh), unsq(g, sv, -2)}), vh});
  return {g.call("matmul", {w, vh}), h};
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
  return TensorMeta::contiguous(with_matrix(batch_of(a.sizes), cols(a.sizes), rows(a.sizes)),
                                a.dtype, a.device);
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

}  // namespace

void register_linalg_composite_ops(OpRegistry& r) {
  r.add(kPinv, OpCategory::Composite, Promotion::None, pinv_rule);
  r.add(kSqrth, OpCategory::Composite, Promotion::None, sqrth_rule);
  r.add_multi(kPolar, OpCategory::Composite, infer_by_expansion(parse_schema(kPolar).name));
}

void register_linalg_composite_expansions(ExpansionTable& t) {
  t.add(parse_schema(kPolar).name, polar);
}

void register_linalg_composite_decompositions(DecompositionTable& t) {
  t.add(parse_schema(kPinv).name, pinv);
  t.add(parse_schema(kSqrth).name, matrix_sqrth);
}

void register_linalg_composite_kernels(InterpreterTable& t) {
  for (const char* s : {kPinv, kSqrth}) t.add(parse_schema(s).name, kernels::run_decomposition);
}

void register_linalg_composite_vjps(VjpTable& t) {
  for (const char* s : {kPinv, kSqrth}) t.add(parse_schema(s).name, vjp_via_decomposition);
}

}  // namespace stax
