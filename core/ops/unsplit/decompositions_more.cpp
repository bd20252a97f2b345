// Decompositions of the Composite ops of core/graph/ops/more_ops.cpp (issue 14). Each follows the
// element formula of PyTorch's CPU kernel (operand order included), so results agree with torch to
// the rounding of the same operations:
//
//   rsub              other - alpha * self
//   deg2rad / rad2deg x * (pi / 180) / x * (180 / pi);  frac: x - trunc(x);  sgn: sign (real)
//   sinc              x == 0 ? 1 : sin(pi x) / (pi x)   (the division guarded, so the gradient at 0
//                     is 0, not NaN)
//   logit             log(z / (1 - z)), z = clamp(x, eps, 1 - eps) when eps is given
//   special_entr      NaN -> NaN, x > 0 -> -x log x, 0 -> 0, x < 0 -> -inf
//   heaviside         x == 0 ? values : x > 0
//   logaddexp(2)      both inf and equal ? a : max + log1p(exp(-|a - b|))   (exp2, / ln 2)
//   xlogy / xlog1py   y NaN ? NaN : x == 0 ? 0 : x * log(y) (log1p(y))
//   fmax / fmin       NaN-ignoring maximum / minimum
//   round.decimals    round(x * 10^d) / 10^d  (d < 0: round(x / 10^-d) * 10^-d)
//   mvlgamma          sum_j lgamma(x - j / 2) + p (p - 1) / 4 log(pi)
//   celu              elu(x, alpha, 1, 1 / alpha);  hardshrink / softshrink / threshold: where
//   glu               a * sigmoid(b), the halves of dim;  prelu: x > 0 ? x : w x (w per channel)
//   huber / soft margin / binary cross-entropy losses: torch's formulas, then mean / sum
//   dot / vdot / mv   mm of reshaped operands;  addmv / addr / addbmm: beta self + alpha (...)
//   dist              linalg_vector_norm(a - b, p)
//   cdist / pdist     (sum |a_i - b_j|^p)^(1/p), the root guarded at 0 (coincident points)
//   nansum            sum(where(isnan(x), 0, x));  count_nonzero: sum(x != 0)
//   logcumsumexp      log(cumsum(exp(x - m))) + m, m = max along dim (inf -> 0)
//   diagonal          permute the two dims last, flatten them, slice with step cols + 1
//   diag / diag_embed where(col - row == offset, x padded and broadcast, 0), permuted
//   trace             sum(diagonal);  take: index_select on the flattened input
//   index_fill        where(dim index in index, value, self)
//   rot90             flip + transpose;  pixel_(un)shuffle: reshape, permute, reshape
//   narrow_copy       slice + clone;  new_full / new_zeros / new_ones: full with self's dtype
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/graph/decompositions.h"
#include "core/ops/nn/params.h"
#include "core/graph/op_registry.h"
#include "core/support/error.h"
#include "core/ops/registration.h"

namespace stax {
namespace {

using Ints = std::vector<int64_t>;
constexpr double kPi = 3.14159265358979323846;
constexpr double kInf = std::numeric_limits<double>::infinity();

Node* cast(Graph& g, Node* x, DType t) { return x->dtype() == t ? x : g.call("to.dtype", {x, t}); }
bool is_one(const Arg& a) { return a.is_number() && a.to_double() == 1.0; }
std::string where(const Node& n) { return "%" + n.name(); }
int64_t dim_of(const Node& n, const char* p, int64_t rank) {
  return wrap_dim(n.arg(p).to_int(), std::max<int64_t>(rank, 1), where(n));
}

// The tensor inputs cast to the node's dtype (torch computes in the promoted type).
Node* in(Graph& g, const Node& n, const char* p) { return cast(g, n.arg(p).node(), n.dtype()); }

Node* reduce_loss(Graph& g, Node* l, int64_t reduction) {
  if (reduction == nn::kReductionSum) return g.call("sum.default", {l});
  if (reduction == nn::kReductionMean) return g.call("mean.default", {l});
  return l;
}

// ---- pointwise formulas

Node* rsub_tensor(Graph& g, const Node& n) {
  return g.call("sub.Tensor", {n.input(1), n.input(0)}, {{"alpha", n.arg("alpha")}});
}

Node* rsub_scalar(Graph& g, const Node& n) {
  Node* x = n.input(0);
  Node* ax = is_one(n.arg("alpha")) ? x : g.call("mul.Scalar", {x, n.arg("alpha")});
  return cast(g, g.call("add.Scalar", {g.call("neg", {ax}), n.arg("other")}), n.dtype());
}

Node* scale_by(Graph& g, const Node& n, double f) {
  return g.call("mul.Scalar", {in(g, n, "self"), f});
}

Node* frac(Graph& g, const Node& n) {
  Node* x = n.input(0);
  return g.call("sub.Tensor", {x, g.call("trunc", {x})});
}

Node* sgn(Graph& g, const Node& n) { return g.call("sign", {n.input(0)}); }

Node* sinc(Graph& g, const Node& n) {
  Node* x = in(g, n, "self");
  Node* zero = g.call("eq.Scalar", {x, 0});
  Node* p = g.call("mul.Scalar", {x, kPi});
  Node* safe = g.call("where.ScalarSelf", {zero, 1.0, p});
  Node* v = g.call("div.Tensor", {g.call("sin", {safe}), safe});
  return g.call("where.ScalarSelf", {zero, 1.0, v});
}

Node* logit(Graph& g, const Node& n) {
  Node* z = in(g, n, "self");
  if (!n.arg("eps").is_absent()) {
    double eps = n.arg("eps").to_double();
    z = g.call("clamp", {z, eps, 1.0 - eps});
  }
  Node* one_minus = g.call("add.Scalar", {g.call("neg", {z}), 1});
  return g.call("log", {g.call("div.Tensor", {z, one_minus})});
}

Node* entr(Graph& g, const Node& n) {
  Node* x = in(g, n, "self");
  Node* pos = g.call("gt.Scalar", {x, 0});
  Node* safe = g.call("where.ScalarOther", {pos, x, 1.0});  // log's argument, 1 where unused
  Node* v = g.call("mul.Tensor", {g.call("neg", {x}), g.call("log", {safe})});
  Node* rest = g.call("where.ScalarSelf",
                      {g.call("eq.Scalar", {x, 0}), 0.0, g.call("full_like", {x, -kInf})});
  Node* r = g.call("where.self", {pos, v, rest});
  return g.call("where.self", {g.call("isnan", {x}), x, r});
}

Node* heaviside(Graph& g, const Node& n) {
  Node* x = n.input(0);
  Node* pos = cast(g, g.call("gt.Scalar", {x, 0}), n.dtype());
  return g.call("where.self", {g.call("eq.Scalar", {x, 0}), n.input(1), pos});
}

Node* logaddexp(Graph& g, const Node& n, bool base2) {
  Node* a = in(g, n, "self");
  Node* b = in(g, n, "other");
  Node* m = g.call("maximum", {a, b});
  Node* d = g.call("neg", {g.call("abs", {g.call("sub.Tensor", {a, b})})});
  Node* l = g.call("log1p", {g.call(base2 ? "exp2" : "exp", {d})});
  if (base2) l = g.call("mul.Scalar", {l, 1.4426950408889634});  // 1 / ln 2
  Node* r = g.call("add.Tensor", {m, l});
  Node* same_inf = g.call("logical_and", {g.call("isinf", {a}), g.call("eq.Tensor", {a, b})});
  return g.call("where.self", {same_inf, a, r});
}

Node* xlogy(Graph& g, const Node& n, const char* log_op) {
  Node* x = in(g, n, "self");
  Node* y = in(g, n, "other");
  Node* v = g.call("mul.Tensor", {x, g.call(log_op, {y})});
  v = g.call("where.ScalarSelf", {g.call("eq.Scalar", {x, 0}), 0.0, v});
  return g.call("where.self", {g.call("isnan", {y}), y, v});
}

Node* fmax_fmin(Graph& g, const Node& n, bool max) {
  Node* a = in(g, n, "self");
  Node* b = in(g, n, "other");
  Node* m = g.call(max ? "maximum" : "minimum", {a, b});
  if (!is_floating(n.dtype())) return m;
  Node* r = g.call("where.self", {g.call("isnan", {b}), a, m});
  return g.call("where.self", {g.call("isnan", {a}), b, r});
}

Node* round_decimals(Graph& g, const Node& n) {
  Node* x = n.input(0);
  int64_t d = n.arg("decimals").to_int();
  if (d == 0) return g.call("round", {x});
  double p = std::pow(10.0, static_cast<double>(d > 0 ? d : -d));
  if (d > 0) return g.call("div.Scalar", {g.call("round", {g.call("mul.Scalar", {x, p})}), p});
  return g.call("mul.Scalar", {g.call("round", {g.call("div.Scalar", {x, p})}), p});
}

Node* mvlgamma(Graph& g, const Node& n) {
  Node* x = in(g, n, "self");
  int64_t p = n.arg("p").to_int();
  Node* s = nullptr;
  for (int64_t j = 0; j < p; ++j) {
    double off = -0.5 * static_cast<double>(p - 1 - j);
    Node* xj = off == 0 ? x : g.call("add.Scalar", {x, off});
    Node* l = g.call("lgamma", {xj});
    s = s ? g.call("add.Tensor", {s, l}) : l;
  }
  double c = static_cast<double>(p) * static_cast<double>(p - 1) * std::log(kPi) * 0.25;
  return c == 0 ? s : g.call("add.Scalar", {s, c});
}

// ---- activations and losses

Node* celu(Graph& g, const Node& n) {
  double a = n.arg("alpha").to_double();
  return g.call("elu", {n.input(0), n.arg("alpha"), 1.0, 1.0 / a});
}

Node* hardshrink(Graph& g, const Node& n) {
  Node* x = n.input(0);
  double l = n.arg("lambd").to_double();
  Node* inside = g.call("logical_and", {g.call("ge.Scalar", {x, -l}), g.call("le.Scalar", {x, l})});
  return g.call("where.ScalarSelf", {inside, 0.0, x});
}

Node* softshrink(Graph& g, const Node& n) {
  Node* x = n.input(0);
  double l = n.arg("lambd").to_double();
  Node* lo = g.call("where.ScalarOther",
                    {g.call("lt.Scalar", {x, -l}), g.call("add.Scalar", {x, l}), 0.0});
  return g.call("where.self", {g.call("gt.Scalar", {x, l}), g.call("sub.Scalar", {x, l}), lo});
}

Node* threshold(Graph& g, const Node& n) {
  Node* x = n.input(0);
  Node* r = g.call("where.ScalarSelf",
                   {g.call("le.Scalar", {x, n.arg("threshold")}), n.arg("value"), x});
  return cast(g, r, n.dtype());
}

Node* glu(Graph& g, const Node& n) {
  Node* x = n.input(0);
  int64_t d = dim_of(n, "dim", x->meta().dim());
  int64_t h = x->shape()[d] / 2;
  Node* a = g.call("slice.Tensor", {x, d, 0, h});
  Node* b = g.call("slice.Tensor", {x, d, h, 2 * h});
  return g.call("mul.Tensor", {a, g.call("sigmoid", {b})});
}

Node* prelu(Graph& g, const Node& n) {
  Node* x = n.input(0);
  Node* w = n.input(1);
  int64_t nw = shape_numel(w->shape());
  if (nw == 1) {
    w = g.call("reshape", {w, Shape{}});
  } else {
    Shape s(std::max<int64_t>(x->meta().dim() - 1, 1), 1);
    s[0] = nw;
    w = g.call("reshape", {w, s});
  }
  Node* neg = g.call("mul.Tensor", {w, x});
  return g.call("where.self", {g.call("gt.Scalar", {x, 0}), x, neg});
}

Node* huber(Graph& g, const Node& n) {
  double delta = n.arg("delta").to_double();
  Node* z = g.call("abs", {g.call("sub.Tensor", {in(g, n, "self"), in(g, n, "target")})});
  Node* quad = g.call("mul.Tensor", {g.call("mul.Scalar", {z, 0.5}), z});
  Node* lin = g.call("mul.Scalar", {g.call("sub.Scalar", {z, 0.5 * delta}), delta});
  Node* l = g.call("where.self", {g.call("lt.Scalar", {z, delta}), quad, lin});
  return reduce_loss(g, l, n.arg("reduction").to_int());
}

Node* soft_margin(Graph& g, const Node& n) {
  Node* e = g.call("mul.Tensor", {g.call("neg", {in(g, n, "self")}), in(g, n, "target")});
  Node* l = g.call("log1p", {g.call("exp", {e})});
  return reduce_loss(g, l, n.arg("reduction").to_int());
}

// (y - 1) max(log1p(-x), -100) - y max(log(x), -100), times weight.
Node* bce(Graph& g, const Node& n) {
  Node* x = n.input(0);
  Node* y = cast(g, n.input(1), x->dtype());
  Node* l1 = g.call("clamp_min", {g.call("log1p", {g.call("neg", {x})}), -100});
  Node* l0 = g.call("clamp_min", {g.call("log", {x}), -100});
  Node* l = g.call("sub.Tensor", {g.call("mul.Tensor", {g.call("sub.Scalar", {y, 1}), l1}),
                                  g.call("mul.Tensor", {y, l0})});
  if (!n.arg("weight").is_absent())
    l = g.call("mul.Tensor", {l, cast(g, n.arg("weight").node(), x->dtype())});
  return reduce_loss(g, l, n.arg("reduction").to_int());
}

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
  const Arg& alpha = n.arg("alpha");
  const Arg& beta = n.arg("beta");
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
  if (!is_one(n.arg("alpha"))) v1 = g.call("mul.Scalar", {v1, n.arg("alpha")});
  Node* outer = g.call("mul.Tensor", {g.call("unsqueeze", {v1, 1}), g.call("unsqueeze", {v2, 0})});
  if (n.arg("beta").to_double() == 0) return outer;
  Node* self = in(g, n, "self");
  Node* bs = is_one(n.arg("beta")) ? self : g.call("mul.Scalar", {self, n.arg("beta")});
  return g.call("add.Tensor", {bs, outer});
}

Node* addbmm(Graph& g, const Node& n) {
  Node* p = g.call("bmm", {n.arg("batch1").node(), n.arg("batch2").node()});
  Node* s = g.call("sum.dim_IntList", {p, Ints{0}});
  return affine(g, n, n.input(0), s);
}

Node* dist(Graph& g, const Node& n) {
  Node* d = g.call("sub.Tensor", {n.input(0), n.input(1)});
  return g.call("linalg_vector_norm", {d, n.arg("p")});
}

// ---- reductions and scans

Ints all_dims(const Node* x) {
  Ints d;
  for (int64_t i = 0; i < x->meta().dim(); ++i) d.push_back(i);
  return d;
}

Node* nansum(Graph& g, const Node& n) {
  Node* x = n.input(0);
  if (is_floating(x->dtype())) x = g.call("where.ScalarSelf", {g.call("isnan", {x}), 0, x});
  Arg dims = n.arg("dim");
  if (dims.is_absent() || dims.to_int_list().empty()) dims = Arg(all_dims(x));
  return cast(g, g.call("sum.dim_IntList", {x, dims, n.arg("keepdim")}, {{"dtype", n.arg("dtype")}}),
              n.dtype());
}

Node* count_nonzero(Graph& g, const Node& n) {
  Node* x = n.input(0);
  Arg dims = n.arg("dim");
  if (dims.is_absent()) dims = Arg(all_dims(x));
  else if (dims.is_int()) dims = Arg(Ints{dims.to_int()});
  Node* s = g.call("sum.dim_IntList", {g.call("ne.Scalar", {x, 0}), dims});
  return cast(g, s, DType::Int64);
}

Node* logcumsumexp(Graph& g, const Node& n) {
  Node* x = n.input(0);
  if (x->meta().dim() == 0 || shape_numel(x->shape()) == 0) return g.call("clone", {x});
  int64_t d = dim_of(n, "dim", x->meta().dim());
  Node* m = g.call("amax", {x, Ints{d}, true});
  m = g.call("where.ScalarSelf", {g.call("isinf", {m}), 0.0, m});
  Node* e = g.call("exp", {g.call("sub.Tensor", {x, m})});
  Node* c = g.call("cumsum", {e, d});
  return g.call("add.Tensor", {g.call("log", {c}), m});
}

// ---- shape and indexing

Node* diagonal_of(Graph& g, Node* x, int64_t off, int64_t d1, int64_t d2, const std::string& w) {
  int64_t rank = x->meta().dim();
  d1 = wrap_dim(d1, rank, w);
  d2 = wrap_dim(d2, rank, w);
  Ints perm;
  Shape batch;
  for (int64_t d = 0; d < rank; ++d)
    if (d != d1 && d != d2) {
      perm.push_back(d);
      batch.push_back(x->shape()[d]);
    }
  perm.push_back(d1);
  perm.push_back(d2);
  int64_t rows = x->shape()[d1], cols = x->shape()[d2];
  int64_t len = std::max<int64_t>(off >= 0 ? std::min(rows, cols - off) : std::min(rows + off, cols), 0);
  Node* y = g.call("clone", {g.call("permute", {x, perm})});
  Shape flat = batch;
  flat.push_back(rows * cols);
  y = g.call("reshape", {y, flat});
  int64_t start = len == 0 ? 0 : (off >= 0 ? off : -off * cols);
  int64_t end = len == 0 ? 0 : start + (len - 1) * (cols + 1) + 1;
  return g.call("slice.Tensor", {y, static_cast<int64_t>(batch.size()), start, end, cols + 1});
}

Node* diagonal(Graph& g, const Node& n) {
  return diagonal_of(g, n.input(0), n.arg("offset").to_int(), n.arg("dim1").to_int(),
                     n.arg("dim2").to_int(), where(n));
}

Node* diag_embed_of(Graph& g, Node* x, int64_t off, int64_t d1, int64_t d2, const std::string& w) {
  int64_t rank = x->meta().dim() + 1;
  d1 = wrap_dim(d1, rank, w);
  d2 = wrap_dim(d2, rank, w);
  int64_t k = std::abs(off);
  int64_t len = x->shape().back(), n = len + k;
  Node* xp = k == 0 ? x : g.call("constant_pad_nd", {x, Ints{0, k}});
  Node* r = g.call("unsqueeze", {g.call("arange", {n}), 1});
  Node* c = g.call("arange", {n});
  Node* mask = g.call("eq.Scalar", {g.call("sub.Tensor", {c, r}), off});
  Node* vals = g.call("unsqueeze", {xp, off >= 0 ? -1 : -2});
  Node* y = g.call("where.self", {mask, vals, g.call("zeros", {Shape{}}, {{"dtype", x->dtype()}})});
  Ints perm(rank);
  int64_t b = 0;
  for (int64_t p = 0; p < rank; ++p) perm[p] = p == d1 ? rank - 2 : p == d2 ? rank - 1 : b++;
  return g.call("clone", {g.call("permute", {y, perm})});
}

Node* diag_embed(Graph& g, const Node& n) {
  return diag_embed_of(g, n.input(0), n.arg("offset").to_int(), n.arg("dim1").to_int(),
                       n.arg("dim2").to_int(), where(n));
}

Node* diag(Graph& g, const Node& n) {
  Node* x = n.input(0);
  int64_t k = n.arg("diagonal").to_int();
  if (x->meta().dim() == 1) return diag_embed_of(g, x, k, 0, 1, where(n));
  return g.call("clone", {diagonal_of(g, x, k, 0, 1, where(n))});
}

Node* trace(Graph& g, const Node& n) {
  Node* d = diagonal_of(g, n.input(0), 0, 0, 1, where(n));
  return cast(g, g.call("sum.default", {d}), n.dtype());
}

Node* take(Graph& g, const Node& n) {
  Node* x = n.input(0);
  Node* idx = n.input(1);
  int64_t numel = shape_numel(x->shape());
  Node* flat = g.call("reshape", {x, Shape{numel}});
  Node* i = g.call("reshape", {idx, Shape{shape_numel(idx->shape())}});
  i = g.call("where.self", {g.call("lt.Scalar", {i, 0}), g.call("add.Scalar", {i, numel}), i});
  return g.call("reshape", {g.call("index_select", {flat, 0, i}), idx->shape()});
}

Node* index_fill(Graph& g, const Node& n) {
  Node* x = n.input(0);
  int64_t rank = x->meta().dim();
  int64_t d = dim_of(n, "dim", rank);
  int64_t len = rank == 0 ? 1 : x->shape()[d];
  Node* idx = n.arg("index").node();
  int64_t k = shape_numel(idx->shape());
  if (k == 0) return g.call("clone", {x});
  Node* i = g.call("reshape", {idx, Shape{1, k}});
  i = g.call("where.self", {g.call("lt.Scalar", {i, 0}), g.call("add.Scalar", {i, len}), i});
  Node* ar = g.call("unsqueeze", {g.call("arange", {len}), 1});
  Node* hit = g.call("any.dim", {g.call("eq.Tensor", {ar, i}), 1});
  Shape s(std::max<int64_t>(rank, 1), 1);
  s[d] = len;
  if (rank == 0) s = Shape{};
  Node* mask = g.call("reshape", {hit, s});
  const Arg& v = n.arg("value");
  Node* r = v.is_node() ? g.call("where.self", {mask, cast(g, v.node(), x->dtype()), x})
                        : g.call("where.ScalarSelf", {mask, v, x});
  return cast(g, r, n.dtype());
}

Node* rot90(Graph& g, const Node& n) {
  Node* x = n.input(0);
  int64_t rank = x->meta().dim();
  Ints dims = n.arg("dims").to_int_list();
  int64_t a = wrap_dim(dims[0], rank, where(n)), b = wrap_dim(dims[1], rank, where(n));
  int64_t k = ((n.arg("k").to_int() % 4) + 4) % 4;
  if (k == 0) return g.call("clone", {x});
  if (k == 2) return g.call("flip", {x, Ints{a, b}});
  Node* f = g.call("flip", {x, Ints{k == 1 ? b : a}});
  return g.call("clone", {g.call("transpose.int", {f, a, b})});
}

Node* pixel_shuffle(Graph& g, const Node& n, bool up) {
  Node* x = n.input(0);
  int64_t r = n.arg(up ? "upscale_factor" : "downscale_factor").to_int();
  Shape s = x->shape();
  size_t b = s.size() - 3;
  Shape batch(s.begin(), s.begin() + b);
  int64_t c = s[b], h = s[b + 1], w = s[b + 2];
  Shape mid = batch, out = batch;
  Ints perm;
  for (size_t i = 0; i < b; ++i) perm.push_back(static_cast<int64_t>(i));
  int64_t B = static_cast<int64_t>(b);
  if (up) {
    mid.insert(mid.end(), {c / (r * r), r, r, h, w});
    perm.insert(perm.end(), {B, B + 3, B + 1, B + 4, B + 2});
    out.insert(out.end(), {c / (r * r), h * r, w * r});
  } else {
    mid.insert(mid.end(), {c, h / r, r, w / r, r});
    perm.insert(perm.end(), {B, B + 2, B + 4, B + 1, B + 3});
    out.insert(out.end(), {c * r * r, h / r, w / r});
  }
  Node* y = g.call("permute", {g.call("reshape", {x, mid}), perm});
  return g.call("reshape", {g.call("clone", {y}), out});
}

Node* narrow_copy(Graph& g, const Node& n) {
  Node* x = n.input(0);
  int64_t d = dim_of(n, "dim", x->meta().dim());
  int64_t start = n.arg("start").to_int();
  if (start < 0) start += x->shape()[d];
  int64_t len = n.arg("length").to_int();
  return g.call("clone", {g.call("slice.Tensor", {x, d, start, start + len})});
}

Node* new_filled(Graph& g, const Node& n, const Arg& value) {
  return g.call("full", {n.arg("size"), value}, {{"dtype", n.dtype()}});
}


// ---- the second group

Node* zeros_of(Graph& g, const Shape& s, DType t) {
  return g.call("zeros", {s}, {{"dtype", t}});
}

Node* max_unpool(Graph& g, const Node& n, size_t k) {
  Node* x = n.input(0);
  Node* idx = n.input(1);
  Shape s = x->shape();
  Shape lead(s.begin(), s.end() - k);
  int64_t in = 1;
  for (size_t i = s.size() - k; i < s.size(); ++i) in *= s[i];
  Ints os = n.arg("output_size").to_int_list();
  int64_t out = 1;
  for (int64_t v : os) out *= v;
  Shape flat_in = lead, flat_out = lead, final = lead;
  flat_in.push_back(in);
  flat_out.push_back(out);
  final.insert(final.end(), os.begin(), os.end());
  Node* xs = g.call("reshape", {x, flat_in});
  Node* is = g.call("reshape", {idx, flat_in});
  Node* r = g.call("scatter.src", {zeros_of(g, flat_out, x->dtype()),
                                   static_cast<int64_t>(lead.size()), is, xs});
  return g.call("reshape", {r, final});
}

// upsample_*.vec -> the fixed-size overload: the output size, and the scales when given.
Node* upsample_vec(Graph& g, const Node& n, const char* target, size_t spatial, bool corners) {
  Node* x = n.input(0);
  const Arg& sf = n.arg("scale_factors");
  Shape osize = n.shape();
  Ints size(osize.end() - spatial, osize.end());
  std::vector<Arg> args{x, size};
  if (corners) args.push_back(n.arg("align_corners"));
  Kwargs kw;
  if (!sf.is_absent()) {
    const char* names[] = {"scales_h", "scales_w"};
    for (size_t i = 0; i < spatial; ++i)
      kw.emplace_back(spatial == 1 ? "scales" : names[i], Arg(sf.list()[i].to_double()));
  }
  return g.call(target, std::move(args), std::move(kw));
}

Node* upsample_nearest1d_vec(Graph& g, const Node& n) {
  Node* x = g.call("unsqueeze", {n.input(0), 2});
  Kwargs kw;
  if (!n.arg("scale_factors").is_absent())
    kw.emplace_back("scales_w", Arg(n.arg("scale_factors").list()[0].to_double()));
  Node* y = g.call("upsample_nearest2d", {x, Ints{1, n.shape().back()}}, std::move(kw));
  return g.call("squeeze.dim", {y, 2});
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

Node* median(Graph& g, const Node& n, bool ignore_nan) {
  Node* x = n.input(0);
  int64_t len = shape_numel(x->shape());
  Node* flat = g.call("reshape", {x, Shape{len}});
  Node* sorted = g.call("index_select", {flat, 0, g.call("argsort", {flat})});
  bool fl = is_floating(x->dtype());
  Node* pos;
  if (ignore_nan && fl) {
    Node* k = g.call("sum.default", {g.call("logical_not", {g.call("isnan", {flat})})});
    Node* h = g.call("floor_divide.Scalar", {g.call("sub.Scalar", {k, 1}), 2});
    pos = g.call("reshape", {g.call("clamp_min", {h, 0}), Shape{1}});
  } else {
    pos = g.call("full", {Shape{1}, (len - 1) / 2}, {{"dtype", DType::Int64}});
  }
  Node* m = g.call("reshape", {g.call("index_select", {sorted, 0, pos}), Shape{}});
  if (ignore_nan || !fl) return m;
  Node* last = g.call("reshape", {g.call("slice.Tensor", {sorted, 0, len - 1, len}), Shape{}});
  return g.call("where.self", {g.call("isnan", {last}), last, m});
}

Node* eye(Graph& g, const Node& n) {
  Shape s = n.shape();
  Node* r = g.call("unsqueeze", {g.call("arange", {s[0]}), 1});
  Node* c = g.call("arange", {s[1]});
  return cast(g, g.call("eq.Tensor", {r, c}), n.dtype());
}

// torch's linspace: step = (end - start) / (steps - 1) in the result type; the first half counts
// up from start, the second half down from end.
Node* linspace_values(Graph& g, const Node& n, double start, double end, int64_t steps) {
  DType t = n.dtype();
  if (steps == 0) return zeros_of(g, Shape{0}, t);
  if (steps == 1) return g.call("full", {Shape{1}, start}, {{"dtype", t}});
  double step;
  if (t == DType::Float64) {
    step = (end - start) / static_cast<double>(steps - 1);
  } else {
    float fs = static_cast<float>(start), fe = static_cast<float>(end);
    step = static_cast<double>((fe - fs) / static_cast<float>(steps - 1));
    start = fs;
    end = fe;
  }
  Node* i = g.call("arange", {steps});
  Node* fi = cast(g, i, t);
  Node* lo = g.call("add.Scalar", {g.call("mul.Scalar", {fi, step}), start});
  Node* back = cast(g, g.call("add.Scalar", {g.call("neg", {i}), steps - 1}), t);
  Node* hi = g.call("add.Scalar", {g.call("neg", {g.call("mul.Scalar", {back, step})}), end});
  return g.call("where.self", {g.call("lt.Scalar", {i, steps / 2}), lo, hi});
}

Node* linspace(Graph& g, const Node& n) {
  return linspace_values(g, n, n.arg("start").to_double(), n.arg("end").to_double(),
                         n.arg("steps").to_int());
}

Node* logspace(Graph& g, const Node& n) {
  Node* e = linspace_values(g, n, n.arg("start").to_double(), n.arg("end").to_double(),
                            n.arg("steps").to_int());
  return cast(g, g.call("pow.Scalar", {n.arg("base"), e}), n.dtype());
}

Node* isin(Graph& g, const Node& n) {
  Node* e = n.input(0);
  Node* t = n.input(1);
  Node* flat = g.call("reshape", {t, Shape{shape_numel(t->shape())}});
  Node* hit = g.call("any.dim", {g.call("eq.Tensor", {g.call("unsqueeze", {e, -1}), flat}), -1});
  return n.arg("invert").to_bool() ? g.call("logical_not", {hit}) : hit;
}

// The count of sequence entries before each value: !(s >= v) (right: !(s > v)), as torch's
// binary search compares, so NaN values go last.
Node* search(Graph& g, const Node& n, Node* seq, Node* v, bool right) {
  Node* vs = g.call("unsqueeze", {v, -1});
  Node* ss = seq->meta().dim() == 1 ? seq : g.call("unsqueeze", {seq, -2});
  Node* before = g.call("logical_not", {g.call(right ? "gt.Tensor" : "ge.Tensor", {ss, vs})});
  Node* c = g.call("sum.dim_IntList", {before, Ints{-1}});
  return cast(g, c, n.dtype());
}

Node* bucketize(Graph& g, const Node& n) {
  return search(g, n, n.arg("boundaries").node(), n.input(0), n.arg("right").to_bool());
}

Node* searchsorted(Graph& g, const Node& n) {
  bool right = n.arg("right").to_bool() ||
               (!n.arg("side").is_absent() && n.arg("side").str() == "right");
  return search(g, n, n.arg("sorted_sequence").node(), n.arg("self").node(), right);
}

// An index along `d` holding `positions` (int64 [k]) broadcast to `like`'s shape.
Node* along(Graph& g, Node* positions, int64_t d, const Shape& like) {
  Shape s(like.size(), 1);
  s[d] = like[d];
  return g.call("expand", {g.call("reshape", {positions, s}), like});
}

Node* index_copy(Graph& g, const Node& n) {
  Node* self = n.input(0);
  Node* src = n.arg("source").node();
  Node* idx = n.arg("index").node();
  if (self->meta().dim() == 0) return g.call("reshape", {src, Shape{}});
  int64_t d = dim_of(n, "dim", self->meta().dim());
  Node* flat = g.call("reshape", {idx, Shape{shape_numel(idx->shape())}});
  return g.call("scatter.src", {self, d, along(g, flat, d, src->shape()), src});
}

Node* put(Graph& g, const Node& n) {
  Node* self = n.input(0);
  int64_t len = shape_numel(self->shape());
  int64_t k = shape_numel(n.arg("index").node()->shape());
  Node* flat = g.call("reshape", {self, Shape{len}});
  Node* i = g.call("reshape", {n.arg("index").node(), Shape{k}});
  i = g.call("where.self", {g.call("lt.Scalar", {i, 0}), g.call("add.Scalar", {i, len}), i});
  Node* s = g.call("reshape", {n.arg("source").node(), Shape{k}});
  Node* r = g.call(n.arg("accumulate").to_bool() ? "scatter_add" : "scatter.src", {flat, 0, i, s});
  return g.call("reshape", {r, self->shape()});
}

Node* masked_scatter(Graph& g, const Node& n) {
  Shape s = n.shape();
  Node* self = g.call("expand", {n.input(0), s});
  Node* mask = g.call("expand", {n.arg("mask").node(), s});
  Node* src = n.arg("source").node();
  int64_t m = shape_numel(src->shape()), len = shape_numel(s);
  if (m == 0 || len == 0) return g.call("clone", {self});
  Node* mi = cast(g, g.call("reshape", {mask, Shape{len}}), DType::Int64);
  Node* pos = g.call("clamp_min", {g.call("sub.Scalar", {g.call("cumsum", {mi, 0}), 1}), 0});
  Node* vals = g.call("index_select", {g.call("reshape", {src, Shape{m}}), 0, pos});
  return g.call("where.self", {mask, g.call("reshape", {vals, s}), self});
}

Node* renorm(Graph& g, const Node& n) {
  Node* x = n.input(0);
  int64_t rank = x->meta().dim();
  int64_t d = dim_of(n, "dim", rank);
  Ints dims;
  for (int64_t i = 0; i < rank; ++i)
    if (i != d) dims.push_back(i);
  Node* nrm = g.call("linalg_vector_norm", {x, n.arg("p"), dims, true});
  Node* big = g.call("gt.Scalar", {nrm, n.arg("maxnorm")});
  Node* f = g.call("div.Tensor", {g.call("full_like", {nrm, n.arg("maxnorm")}),
                                  g.call("add.Scalar", {nrm, 1e-7})});
  return g.call("mul.Tensor", {x, g.call("where.ScalarOther", {big, f, 1.0})});
}

Node* unfold(Graph& g, const Node& n) {
  Node* x = n.input(0);
  int64_t size = n.arg("size").to_int(), step = n.arg("step").to_int();
  if (x->meta().dim() == 0) return g.call("expand", {g.call("reshape", {x, Shape{1}}), Shape{size}});
  int64_t d = dim_of(n, "dimension", x->meta().dim());
  Shape s = x->shape();
  int64_t windows = (s[d] - size) / step + 1;
  Node* starts = g.call("mul.Scalar", {g.call("unsqueeze", {g.call("arange", {windows}), 1}), step});
  Node* idx = g.call("add.Tensor", {starts, g.call("arange", {size})});
  Node* y = g.call("index_select", {x, d, g.call("reshape", {idx, Shape{windows * size}})});
  Shape split = s;
  split[d] = windows;
  split.insert(split.begin() + d + 1, size);
  y = g.call("reshape", {y, split});
  Ints perm;
  for (int64_t i = 0; i < static_cast<int64_t>(split.size()); ++i)
    if (i != d + 1) perm.push_back(i);
  perm.push_back(d + 1);
  return g.call("clone", {g.call("permute", {y, perm})});
}

// ||a_i - b_j||_p over the last dim. For p other than 0, 1 and inf the root is guarded where the
// sum is 0 (coincident points): the distance is 0 there and so is its gradient, as torch's
// cdist backward gives, instead of sqrt'(0) * 0 = NaN.
Node* pnorm_last(Graph& g, Node* diff, const Arg& p) {
  double pv = p.to_double();
  if (pv == 0 || pv == 1 || std::isinf(pv)) return g.call("linalg_vector_norm", {diff, p, Ints{-1}});
  Node* pw = pv == 2 ? g.call("mul.Tensor", {diff, diff})
                     : g.call("pow.Tensor_Scalar", {g.call("abs", {diff}), pv});
  Node* s = g.call("sum.dim_IntList", {pw, Ints{-1}});
  Node* zero = g.call("eq.Scalar", {s, 0});
  Node* safe = g.call("where.ScalarSelf", {zero, 1.0, s});
  Node* root = pv == 2 ? g.call("sqrt", {safe}) : g.call("pow.Tensor_Scalar", {safe, 1.0 / pv});
  return g.call("where.ScalarSelf", {zero, 0.0, root});
}

Node* cdist_of(Graph& g, Node* a, Node* b, const Arg& p) {
  Node* diff = g.call("sub.Tensor", {g.call("unsqueeze", {a, -2}), g.call("unsqueeze", {b, -3})});
  return pnorm_last(g, diff, p);
}

Node* cdist(Graph& g, const Node& n) {
  return cdist_of(g, n.arg("x1").node(), n.arg("x2").node(), n.arg("p"));
}

// The distances of the pairs i < j only (triu_indices(n, n, 1)), so the zero distances of the
// diagonal never enter the gradient.
Node* pdist(Graph& g, const Node& n) {
  Node* x = n.input(0);
  int64_t rows = x->shape()[0];
  if (rows < 2) return zeros_of(g, Shape{0}, x->dtype());
  Node* pairs = g.call("triu_indices", {rows, rows, 1});
  Node* i = g.call("select.int", {pairs, 0, 0});
  Node* j = g.call("select.int", {pairs, 0, 1});
  Node* diff = g.call("sub.Tensor", {g.call("index_select", {x, 0, i}),
                                     g.call("index_select", {x, 0, j})});
  return pnorm_last(g, diff, n.arg("p"));
}

Node* block_diag(Graph& g, const Node& n) {
  std::vector<Node*> ts = n.arg("tensors").to_node_list();
  Shape s = n.shape();
  std::vector<Node*> rows;
  int64_t col = 0;
  for (Node* t : ts) {
    Node* m = cast(g, t, n.dtype());
    if (t->meta().dim() == 0) m = g.call("reshape", {m, Shape{1, 1}});
    else if (t->meta().dim() == 1) m = g.call("reshape", {m, Shape{1, t->shape()[0]}});
    int64_t w = m->shape()[1];
    rows.push_back(g.call("constant_pad_nd", {m, Ints{col, s[1] - col - w}}));
    col += w;
  }
  if (rows.empty()) return zeros_of(g, s, n.dtype());
  return rows.size() == 1 ? g.call("clone", {rows[0]}) : g.call("cat", {Arg(rows), 0});
}

Node* slice_scatter(Graph& g, const Node& n) {
  Node* self = n.input(0);
  Node* src = n.arg("src").node();
  int64_t d = dim_of(n, "dim", self->meta().dim());
  int64_t len = self->shape()[d];
  int64_t start = n.arg("start").is_absent() ? 0 : n.arg("start").to_int();
  if (start < 0) start += len;
  start = std::clamp<int64_t>(start, 0, len);
  int64_t k = src->shape()[d];
  if (k == 0) return g.call("clone", {self});
  Node* pos = g.call("add.Scalar", {g.call("mul.Scalar", {g.call("arange", {k}), n.arg("step")}),
                                    start});
  return g.call("scatter.src", {self, d, along(g, pos, d, src->shape()), src});
}

Node* select_scatter(Graph& g, const Node& n) {
  Node* self = n.input(0);
  int64_t d = dim_of(n, "dim", self->meta().dim());
  int64_t i = n.arg("index").to_int();
  if (i < 0) i += self->shape()[d];
  Node* src = g.call("unsqueeze", {n.arg("src").node(), d});
  Node* idx = g.call("full", {src->shape(), i}, {{"dtype", DType::Int64}});
  return g.call("scatter.src", {self, d, idx, src});
}

// tril_indices / triu_indices: per row r, rows r and the column range, concatenated.
Node* tri_indices(Graph& g, const Node& n, bool lower) {
  int64_t row = n.arg("row").to_int(), col = n.arg("col").to_int(), off = n.arg("offset").to_int();
  DType t = n.dtype();
  std::vector<Node*> parts;
  for (int64_t r = 0; r < row; ++r) {
    int64_t lo = lower ? 0 : std::max<int64_t>(0, r + off);
    int64_t hi = lower ? std::min(col, r + off + 1) : col;
    if (hi <= lo) continue;
    Node* rs = g.call("full", {Shape{1, hi - lo}, r}, {{"dtype", t}});
    Node* cs = g.call("reshape", {g.call("arange.start", {lo, hi}, {{"dtype", t}}), Shape{1, hi - lo}});
    parts.push_back(g.call("cat", {Arg(std::vector<Node*>{rs, cs}), 0}));
  }
  if (parts.empty()) return zeros_of(g, Shape{2, 0}, t);
  return parts.size() == 1 ? parts[0] : g.call("cat", {Arg(parts), 1});
}

Node* index_reduce(Graph& g, const Node& n) {
  Node* self = n.input(0);
  Node* src = n.arg("source").node();
  Node* idx = cast(g, n.arg("index").node(), DType::Int64);
  if (self->meta().dim() == 0) {
    self = g.call("reshape", {self, Shape{1}});
    src = g.call("reshape", {src, Shape{1}});
  }
  int64_t d = dim_of(n, "dim", n.input(0)->meta().dim());
  Node* flat = g.call("reshape", {idx, Shape{shape_numel(idx->shape())}});
  Node* r = g.call("scatter_reduce.two", {self, d, along(g, flat, d, src->shape()), src,
                                          n.arg("reduce")},
                   {{"include_self", n.arg("include_self")}});
  return g.call("reshape", {r, n.shape()});
}

Node* multi_margin(Graph& g, const Node& n) {
  Node* x = n.input(0);
  int64_t classes = x->meta().dim() == 0 ? 1 : x->shape().back();
  int64_t rows = x->meta().dim() == 2 ? x->shape()[0] : 1;
  Node* x2 = g.call("reshape", {x, Shape{rows, classes}});
  Node* t = g.call("reshape", {n.arg("target").node(), Shape{rows, 1}});
  Node* xy = g.call("gather", {x2, 1, t});
  Node* z = g.call("add.Tensor", {g.call("add.Scalar", {g.call("neg", {xy}), n.arg("margin")}), x2});
  Node* h = g.call("relu", {z});
  if (n.arg("p").to_double() == 2) h = g.call("mul.Tensor", {h, h});
  if (!n.arg("weight").is_absent())
    h = g.call("mul.Tensor", {h, g.call("reshape", {g.call("index_select",
                                                           {n.arg("weight").node(), 0,
                                                            g.call("reshape", {t, Shape{rows}})}),
                                                    Shape{rows, 1}})});
  Node* own = g.call("eq.Tensor", {g.call("arange", {classes}), t});
  h = g.call("where.ScalarSelf", {own, 0.0, h});
  Node* l = g.call("div.Scalar", {g.call("sum.dim_IntList", {h, Ints{1}}), classes});
  int64_t red = n.arg("reduction").to_int();
  if (red == nn::kReductionNone) return g.call("reshape", {l, n.shape()});
  return reduce_loss(g, l, red);
}

}  // namespace

void register_more_decompositions(DecompositionTable& t) {
  t.add("rsub.Tensor", rsub_tensor);
  t.add("rsub.Scalar", rsub_scalar);
  t.add("deg2rad.default", [](Graph& g, const Node& n) { return scale_by(g, n, kPi / 180); });
  t.add("rad2deg.default", [](Graph& g, const Node& n) { return scale_by(g, n, 180 / kPi); });
  t.add("frac.default", frac);
  t.add("sgn.default", sgn);
  t.add("sinc.default", sinc);
  t.add("logit.default", logit);
  t.add("special_entr.default", entr);
  t.add("heaviside.default", heaviside);
  t.add("logaddexp.default", [](Graph& g, const Node& n) { return logaddexp(g, n, false); });
  t.add("logaddexp2.default", [](Graph& g, const Node& n) { return logaddexp(g, n, true); });
  t.add("xlogy.Tensor", [](Graph& g, const Node& n) { return xlogy(g, n, "log"); });
  t.add("special_xlog1py.default", [](Graph& g, const Node& n) { return xlogy(g, n, "log1p"); });
  t.add("fmax.default", [](Graph& g, const Node& n) { return fmax_fmin(g, n, true); });
  t.add("fmin.default", [](Graph& g, const Node& n) { return fmax_fmin(g, n, false); });
  t.add("round.decimals", round_decimals);
  t.add("mvlgamma.default", mvlgamma);
  t.add("celu.default", celu);
  t.add("hardshrink.default", hardshrink);
  t.add("softshrink.default", softshrink);
  t.add("threshold.default", threshold);
  t.add("glu.default", glu);
  t.add("prelu.default", prelu);
  t.add("huber_loss.default", huber);
  t.add("soft_margin_loss.default", soft_margin);
  t.add("binary_cross_entropy.default", bce);
  t.add("dot.default", dot);
  t.add("vdot.default", dot);
  t.add("mv.default", mv);
  t.add("addmv.default", addmv);
  t.add("addr.default", addr);
  t.add("addbmm.default", addbmm);
  t.add("dist.default", dist);
  t.add("nansum.default", nansum);
  t.add("count_nonzero.dim_IntList", count_nonzero);
  t.add("count_nonzero.default", count_nonzero);
  t.add("logcumsumexp.default", logcumsumexp);
  t.add("diagonal.default", diagonal);
  t.add("diag.default", diag);
  t.add("diag_embed.default", diag_embed);
  t.add("trace.default", trace);
  t.add("take.default", take);
  t.add("index_fill.int_Scalar", index_fill);
  t.add("index_fill.int_Tensor", index_fill);
  t.add("rot90.default", rot90);
  t.add("pixel_shuffle.default", [](Graph& g, const Node& n) { return pixel_shuffle(g, n, true); });
  t.add("pixel_unshuffle.default",
        [](Graph& g, const Node& n) { return pixel_shuffle(g, n, false); });
  t.add("narrow_copy.default", narrow_copy);
  t.add("new_full.default", [](Graph& g, const Node& n) { return new_filled(g, n, n.arg("fill_value")); });
  t.add("new_zeros.default", [](Graph& g, const Node& n) { return new_filled(g, n, Arg(0)); });
  t.add("new_ones.default", [](Graph& g, const Node& n) { return new_filled(g, n, Arg(1)); });
  for (const char* op : {"_adaptive_avg_pool2d.default", "_adaptive_avg_pool3d.default"})
    t.add(op, [](Graph& g, const Node& n) {
      return g.call(n.op()->schema.base.substr(1), {n.input(0), n.arg("output_size")});
    });
  t.add("max_unpool2d.default", [](Graph& g, const Node& n) { return max_unpool(g, n, 2); });
  t.add("max_unpool3d.default", [](Graph& g, const Node& n) { return max_unpool(g, n, 3); });
  t.add("upsample_bilinear2d.vec", [](Graph& g, const Node& n) {
    return upsample_vec(g, n, "upsample_bilinear2d", 2, true);
  });
  t.add("upsample_nearest2d.vec", [](Graph& g, const Node& n) {
    return upsample_vec(g, n, "upsample_nearest2d", 2, false);
  });
  t.add("upsample_nearest1d.vec", upsample_nearest1d_vec);
  t.add("linalg_cross.default", cross);
  t.add("median.default", [](Graph& g, const Node& n) { return median(g, n, false); });
  t.add("nanmedian.default", [](Graph& g, const Node& n) { return median(g, n, true); });
  t.add("eye.default", eye);
  t.add("eye.m", eye);
  t.add("linspace.default", linspace);
  t.add("logspace.default", logspace);
  t.add("isin.Tensor_Tensor", isin);
  t.add("bucketize.Tensor", bucketize);
  t.add("searchsorted.Tensor", searchsorted);
  t.add("index_copy.default", index_copy);
  t.add("put.default", put);
  t.add("masked_scatter.default", masked_scatter);
  t.add("renorm.default", renorm);
  t.add("unfold.default", unfold);
  t.add("_cdist_forward.default", cdist);
  t.add("_pdist_forward.default", pdist);
  t.add("block_diag.default", block_diag);
  t.add("slice_scatter.default", slice_scatter);
  t.add("select_scatter.default", select_scatter);
  t.add("tril_indices.default", [](Graph& g, const Node& n) { return tri_indices(g, n, true); });
  t.add("triu_indices.default", [](Graph& g, const Node& n) { return tri_indices(g, n, false); });
  t.add("index_reduce.default", index_reduce);
  t.add("multi_margin_loss.default", multi_margin);
}

}  // namespace stax
