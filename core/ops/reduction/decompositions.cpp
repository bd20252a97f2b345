// Decompositions of mean and var into sums (seed §4.8).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "core/graph/decompositions.h"
#include "core/graph/op_registry.h"
#include "core/ops/common/decomposition_helpers.h"
#include "core/ops/common/diagonal.h"
#include "core/ops/nn/params.h"
#include "core/ops/reduction/derivatives.h"
#include "core/ops/registration.h"
#include "core/support/error.h"

namespace stax {
namespace {

using namespace diagonal_formula;  // NOLINT
using namespace reduction_derivatives;  // NOLINT
using Ints = std::vector<int64_t>;
using decomp::cast;
using decomp::opt_arg;

Node* mean_decomp(Graph& g, const Node& n) {
  Node* x = n.input(0);
  const Arg& dt = opt_arg(n, "dtype");
  if (dt.is_dtype()) x = cast(g, x, dt.dtype());
  Arg dim = opt_arg(n, "dim");
  Ints dims = reduced_dims(*x, dim);
  Node* s = n.op()->schema.index_of("dim") >= 0
                ? g.call("sum.dim_IntList", {x, dim, n.arg("keepdim").to_bool()})
                : g.call("sum.default", {x});
  return g.call("div.Scalar", {s, reduced_count(*x, dims)});
}

Node* var_decomp(Graph& g, const Node& n) {
  Node* x = n.input(0);
  Arg dim = opt_arg(n, "dim");
  Ints dims = reduced_dims(*x, dim);
  double correction = 1;
  if (Arg c = opt_arg(n, "correction"); !c.is_absent()) correction = c.to_double();
  if (Arg u = opt_arg(n, "unbiased"); !u.is_absent()) correction = u.to_bool() ? 1 : 0;
  Arg keepdim = opt_arg(n, "keepdim");
  Node* mean = g.call("mean.dim", {x, dims, true});
  Node* xc = g.call("sub.Tensor", {x, mean});
  Node* s = g.call("sum.dim_IntList", {g.call("mul.Tensor", {xc, xc}), dims,
                                       !keepdim.is_absent() && keepdim.to_bool()});
  double denom = std::max(0.0, static_cast<double>(reduced_count(*x, dims)) - correction);
  return g.call("div.Scalar", {s, denom});
}

constexpr double kInf = std::numeric_limits<double>::infinity();
bool has_param(const Node& n, const char* p) { return n.op()->schema.index_of(p) >= 0; }
Arg opt(const Node& n, const char* p) { return has_param(n, p) ? n.arg(p) : Arg(); }

bool keepdim_of(const Node& n) { return has_param(n, "keepdim") && n.arg("keepdim").to_bool(); }

// ---- reductions

// var.correction's decomposition (core/graph/decompositions.cpp) with the same op sequence.
Node* var_of(Graph& g, Node* x, const Ints& dims, double correction, bool keepdim) {
  Node* mean = g.call("mean.dim", {x, dims, true});
  Node* xc = g.call("sub.Tensor", {x, mean});
  Node* s = g.call("sum.dim_IntList", {g.call("mul.Tensor", {xc, xc}), dims, keepdim});
  double denom = std::max(0.0, static_cast<double>(reduced_count(*x, dims)) - correction);
  return g.call("div.Scalar", {s, denom});
}

Node* var_std(Graph& g, const Node& n, bool sqrt) {
  Node* x = n.input(0);
  Ints dims = reduced_dims(*x, opt(n, "dim"));
  double correction = 1;
  if (Arg c = opt(n, "correction"); !c.is_absent()) correction = c.to_double();
  if (Arg u = opt(n, "unbiased"); !u.is_absent()) correction = u.to_bool() ? 1 : 0;
  Node* v = var_of(g, x, dims, correction, keepdim_of(n));
  return sqrt ? g.call("sqrt", {v}) : v;
}

Node* logsumexp(Graph& g, const Node& n) {
  Node* x = cast(g, n.input(0), n.dtype());
  Ints dims = reduced_dims(*x, n.arg("dim"));
  bool keepdim = n.arg("keepdim").to_bool();
  // An empty reduction: log(0) = -inf, as torch (amax has no identity to shift by).
  if (reduced_count(*x, dims) == 0)
    return g.call("log", {g.call("sum.dim_IntList", {g.call("exp", {x}), dims, keepdim})});
  Node* m = g.call("amax", {x, dims, true});
  Node* m0 = g.call("where.ScalarSelf", {g.call("eq.Scalar", {g.call("abs", {m}), kInf}), 0.0, m});
  Node* e = g.call("exp", {g.call("sub.Tensor", {x, m0})});
  Node* l = g.call("log", {g.call("sum.dim_IntList", {e, dims, keepdim})});
  Node* mo = keepdim || dims.empty() || x->meta().dim() == 0 ? m0
                                                             : g.call("squeeze.dims", {m0, dims});
  if (!keepdim && x->meta().dim() > 0 && mo->meta().dim() != l->meta().dim())
    mo = g.call("reshape", {mo, l->shape()});
  return g.call("add.Tensor", {l, mo});
}

Node* norm(Graph& g, const Node& n) {
  Node* x = n.input(0);
  if (Arg d = opt(n, "dtype"); d.is_dtype()) x = cast(g, x, d.dtype());
  double p = 2;
  if (Arg a = opt(n, has_param(n, "ord") ? "ord" : "p"); !a.is_absent()) p = a.to_double();
  Ints dims = reduced_dims(*x, opt(n, "dim"));
  bool keepdim = keepdim_of(n);
  if (p == kInf || p == -kInf)
    return g.call(p > 0 ? "amax" : "amin", {g.call("abs", {x}), dims, keepdim});
  if (p == 0) {
    Node* nz = cast(g, g.call("ne.Scalar", {x, 0}), x->dtype());
    return g.call("sum.dim_IntList", {nz, dims, keepdim});
  }
  // float16 / bfloat16 accumulate in float32 and round once, as torch (x*x of a float16 value
  // above 256 would overflow).
  const DType out = n.dtype();
  if (x->dtype() == DType::Float16 || x->dtype() == DType::BFloat16) x = cast(g, x, DType::Float32);
  Node* r;
  if (p == 1) {
    r = g.call("sum.dim_IntList", {g.call("abs", {x}), dims, keepdim});
  } else if (p == 2) {
    r = g.call("sqrt", {g.call("sum.dim_IntList", {g.call("mul.Tensor", {x, x}), dims, keepdim})});
  } else {
    Node* a = g.call(pow_tensor_scalar(), {g.call("abs", {x}), p});
    r = g.call(pow_tensor_scalar(), {g.call("sum.dim_IntList", {a, dims, keepdim}), 1.0 / p});
  }
  return cast(g, r, out);
}

std::string where(const Node& n) { return "%" + n.name(); }
int64_t dim_of(const Node& n, const char* p, int64_t rank) {
  return wrap_dim(n.arg(p).to_int(), std::max<int64_t>(rank, 1), where(n));
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
  // float16 / bfloat16 in float32 (torch's opmath type): exp(x - max) of a half would underflow
  // to 0 within ~17 of the maximum, and log(0) make the prefix -inf and its gradient NaN
  DType io = x->dtype();
  if (io == DType::Float16 || io == DType::BFloat16) x = cast(g, x, DType::Float32);
  Node* m = g.call("amax", {x, Ints{d}, true});
  m = g.call("where.ScalarSelf", {g.call("isinf", {m}), 0.0, m});
  Node* e = g.call("exp", {g.call("sub.Tensor", {x, m})});
  Node* c = g.call("cumsum", {e, d});
  return cast(g, g.call("add.Tensor", {g.call("log", {c}), m}), io);
}

Node* trace(Graph& g, const Node& n) {
  Node* d = diagonal_of(g, n.input(0), 0, 0, 1, where(n));
  return cast(g, g.call("sum.default", {d}), n.dtype());
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

// any.dims / all.dims: None -> the whole-tensor reduction; [] -> (x != 0) elementwise; else one
// any.dim / all.dim per dim, the highest first (so the lower dims keep their positions).
Node* logical_dims(Graph& g, const Node& n, bool all) {
  Node* x = n.input(0);
  std::string base = all ? "all" : "any";
  bool keepdim = n.arg("keepdim").to_bool();
  const Arg& dim = n.arg("dim");
  if (dim.is_absent()) {
    Node* r = g.call(base, {x});
    return keepdim ? g.call("reshape", {r, Arg(n.shape())}) : r;
  }
  Ints dims = dim.to_int_list();
  if (dims.empty()) return cast(g, g.call("ne.Scalar", {x, 0}), n.dtype());
  int64_t rank = std::max<int64_t>(x->meta().dim(), 1);
  for (int64_t& d : dims) d = wrap_dim(d, rank, "%" + n.name());
  std::sort(dims.rbegin(), dims.rend());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  Node* r = x;
  for (int64_t d : dims) r = g.call(base + ".dim", {r, d, keepdim});
  return r;
}

}  // namespace

void register_reduction_decompositions(DecompositionTable& t) {
  t.add("any.dims", [](Graph& g, const Node& n) { return logical_dims(g, n, false); });
  t.add("all.dims", [](Graph& g, const Node& n) { return logical_dims(g, n, true); });
  t.add("mean.dim", mean_decomp);
  t.add("mean.default", mean_decomp);
  t.add("var.correction", var_decomp);
  for (const char* o : {"std.correction", "std.dim", "std.default"})
    t.add(o, [](Graph& g, const Node& n) { return var_std(g, n, true); });

  for (const char* o : {"var.dim", "var.default"})
    t.add(o, [](Graph& g, const Node& n) { return var_std(g, n, false); });

  t.add("logsumexp.default", logsumexp);

  t.add("norm.ScalarOpt_dim", norm);

  t.add("norm.Scalar", norm);

  t.add("linalg_vector_norm.default", norm);

  t.add("max.default", [](Graph& g, const Node& n) { return g.call("amax", {n.input(0)}); });

  t.add("min.default", [](Graph& g, const Node& n) { return g.call("amin", {n.input(0)}); });
  t.add("nansum.default", nansum);

  t.add("count_nonzero.dim_IntList", count_nonzero);

  t.add("count_nonzero.default", count_nonzero);

  t.add("logcumsumexp.default", logcumsumexp);

  t.add("trace.default", trace);

  t.add("median.default", [](Graph& g, const Node& n) { return median(g, n, false); });

  t.add("nanmedian.default", [](Graph& g, const Node& n) { return median(g, n, true); });
}

}  // namespace stax
