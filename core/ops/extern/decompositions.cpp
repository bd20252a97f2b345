// Decomposition of addmm into mm and the scaled sum (seed §4.8).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "core/graph/decompositions.h"
#include "core/graph/op_registry.h"
#include "core/ops/common/decomposition_helpers.h"
#include "core/ops/nn/params.h"
#include "core/ops/registration.h"
#include "core/support/error.h"

namespace stax {
namespace {

using Ints = std::vector<int64_t>;
using decomp::cast;

// A Scalar factor in the result's type: torch converts alpha / beta to an integer result type
// first (addmv of int64 with beta=0.2, alpha=0.6 is 0 * self + 0 * mv).
Arg factor_in(const Arg& a, DType t) {
  if (a.is_double() && !is_floating(t) && !is_complex(t) && t != DType::Bool)
    return Arg(static_cast<int64_t>(a.to_double()));
  return a;
}

Node* addmm_decomp(Graph& g, const Node& n) {
  Node* self = n.input(0);
  Node* p = g.call("mm", {n.input(1), n.input(2)});
  const Arg alpha = factor_in(n.arg("alpha"), n.dtype());
  const Arg beta = factor_in(n.arg("beta"), n.dtype());
  // addmm's kernel forms beta * self + alpha * p in the computation type: the same two roundings.
  bool alpha_one = alpha.is_int() && alpha.to_int() == 1;
  bool beta_one = beta.is_int() && beta.to_int() == 1;
  if (beta.to_double() == 0) return alpha_one ? p : g.call("mul.Scalar", {p, alpha});
  Node* ap = alpha_one ? p : g.call("mul.Scalar", {p, alpha});
  Node* bs = beta_one ? self : g.call("mul.Scalar", {self, beta});
  return cast(g, g.call("add.Tensor", {bs, ap}), n.dtype());
}

bool is_one(const Arg& a) { return a.is_number() && a.to_double() == 1.0; }
Node* scale(Graph& g, Node* x, const Arg& s) { return is_one(s) ? x : g.call("mul.Scalar", {x, s}); }

Node* baddbmm(Graph& g, const Node& n) {
  Node* self = n.input(0);
  Node* p = g.call("bmm", {n.arg("batch1").node(), n.arg("batch2").node()});
  const Arg alpha = factor_in(n.arg("alpha"), n.dtype());
  const Arg beta = factor_in(n.arg("beta"), n.dtype());
  Node* ap = scale(g, p, alpha);
  if (beta.to_double() == 0) return ap;  // torch ignores self (NaN / inf included) when beta == 0
  Node* bs = scale(g, self, beta);
  return cast(g, g.call("add.Tensor", {bs, ap}), n.dtype());
}

std::string where(const Node& n) { return "%" + n.name(); }
int64_t dim_of(const Node& n, const char* p, int64_t rank) {
  return wrap_dim(n.arg(p).to_int(), std::max<int64_t>(rank, 1), where(n));
}

// The tensor inputs cast to the node's dtype (torch computes in the promoted type).
Node* in(Graph& g, const Node& n, const char* p) { return cast(g, n.arg(p).node(), n.dtype()); }

// ---- vectors and matrices

Node* dot(Graph& g, const Node& n) {
  Node* a = n.input(0);
  Node* b = n.input(1);
  int64_t k = a->shape()[0];
  Node* p = g.call("mm", {g.call("reshape", {a, Shape{1, k}}), g.call("reshape", {b, Shape{k, 1}})});
  return g.call("reshape", {p, Shape{}});
}

Node* mv_of(Graph& g, Node* m, Node* v) {
  Node* p = g.call("mm", {m, g.call("reshape", {v, Shape{v->shape()[0], 1}})});
  return g.call("reshape", {p, Shape{m->shape()[0]}});
}

Node* mv(Graph& g, const Node& n) { return mv_of(g, n.input(0), n.input(1)); }

// beta * self + alpha * p (beta == 0: self ignored, as torch's BLAS calls do).
Node* affine(Graph& g, const Node& n, Node* self, Node* p) {
  const Arg alpha = factor_in(n.arg("alpha"), n.dtype());
  const Arg beta = factor_in(n.arg("beta"), n.dtype());
  Node* ap = is_one(alpha) ? p : g.call("mul.Scalar", {p, alpha});
  if (beta.to_double() == 0) return cast(g, ap, n.dtype());
  Node* bs = is_one(beta) ? self : g.call("mul.Scalar", {self, beta});
  return cast(g, g.call("add.Tensor", {bs, ap}), n.dtype());
}

Node* addmv(Graph& g, const Node& n) {
  return affine(g, n, n.input(0), mv_of(g, n.arg("mat").node(), n.arg("vec").node()));
}

Node* addr(Graph& g, const Node& n) {
  Node* v1 = in(g, n, "vec1");
  Node* v2 = in(g, n, "vec2");
  const Arg alpha = factor_in(n.arg("alpha"), n.dtype());
  const Arg beta = factor_in(n.arg("beta"), n.dtype());
  if (!is_one(alpha)) v1 = g.call("mul.Scalar", {v1, alpha});
  Node* outer = g.call("mul.Tensor", {g.call("unsqueeze", {v1, 1}), g.call("unsqueeze", {v2, 0})});
  if (beta.to_double() == 0) return cast(g, outer, n.dtype());
  Node* self = in(g, n, "self");
  Node* bs = is_one(beta) ? self : g.call("mul.Scalar", {self, beta});
  return g.call("add.Tensor", {bs, outer});
}

Node* addbmm(Graph& g, const Node& n) {
  Node* p = g.call("bmm", {n.arg("batch1").node(), n.arg("batch2").node()});
  Node* s = g.call("sum.dim_IntList", {p, Ints{0}});
  return affine(g, n, n.input(0), s);
}

Node* cross(Graph& g, const Node& n) {
  Node* a = in(g, n, "self");
  Node* b = in(g, n, "other");
  int64_t d = dim_of(n, "dim", a->meta().dim());
  auto part = [&](Node* x, int64_t i) { return g.call("slice.Tensor", {x, d, i, i + 1}); };
  auto term = [&](int64_t i, int64_t j) {
    return g.call("sub.Tensor", {g.call("mul.Tensor", {part(a, i), part(b, j)}),
                                 g.call("mul.Tensor", {part(a, j), part(b, i)})});
  };
  std::vector<Node*> cs{term(1, 2), term(2, 0), term(0, 1)};
  Shape s = n.shape();
  for (Node*& c : cs) {
    Shape cs_shape = s;
    cs_shape[d] = 1;
    c = g.call("expand", {c, cs_shape});
  }
  return g.call("cat", {Arg(cs), d});
}

}  // namespace

void register_extern_decompositions(DecompositionTable& t) {
  t.add("addmm.default", addmm_decomp);
  t.add("baddbmm.default", baddbmm);
  t.add("dot.default", dot);

  t.add("vdot.default", dot);

  t.add("mv.default", mv);

  t.add("addmv.default", addmv);

  t.add("addr.default", addr);

  t.add("addbmm.default", addbmm);

  t.add("linalg_cross.default", cross);
}

}  // namespace stax
