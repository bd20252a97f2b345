// Decompositions of the model ops of core/graph/ops/model_ops.cpp (issue 14 part C). Each follows
// the element formula of PyTorch's CPU kernel (operand order included), so results agree with
// torch to rounding of the same operations:
//
//   leaky_relu        where(x > 0, x, x * slope)
//   elu               where(x <= 0, expm1(x * input_scale) * (alpha * scale), x * scale)
//   hardtanh / relu6  clamp(x, min_val, max_val) / clamp(x, 0, 6)
//   hardswish         (x * clamp(x + 3, 0, 6)) / 6;   hardsigmoid  clamp(x + 3, 0, 6) / 6
//   softplus          where(x * beta > threshold, x, log1p(exp(x * beta)) / beta)
//   mish              x * tanh(log1p(exp(x)))
//   *_backward        torch's derivative formulas (derivatives.yaml / the CPU backward kernels)
//   std / var         var.correction's decomposition (mean, sub, mul, sum, div), then sqrt
//   logsumexp         m = amax (inf -> 0); log(sum(exp(x - m))) + m
//   norm              p = 0, 1, 2, inf, -inf and general p (abs, pow, sum, pow 1/p)
//   max / min         amax / amin over every dim; max.other / min.other: maximum / minimum
//   stack             cat of unsqueezed tensors;  repeat: reshape, expand, reshape
//   flip              index_select with a reversed arange per dim
//   roll              cat of two slices per dim (flattened when dims is empty)
//   tril / triu       where(col - row <= k (>= k), x, 0)
//   masked_fill       where(mask, value, self)
//   baddbmm           beta * self + alpha * bmm (like addmm);  addcmul / addcdiv
//   lerp              torch's two-sided formula (|w| < 0.5 picks self + w (end - self))
//   div rounding_mode floor: floor_divide; trunc: trunc(a / b) (floating), exact integer quotient
//   clamp.Tensor      minimum(maximum(x, min), max);  clamp_min / clamp_max
//   isinf / isfinite / isposinf / isneginf / logical_xor / nan_to_num: comparisons and where
#include <cmath>
#include <limits>

#include "core/graph/decompositions.h"
#include "core/graph/op_registry.h"
#include "core/support/error.h"
#include "core/ops/registration.h"

namespace stax {
namespace {

using Ints = std::vector<int64_t>;
constexpr double kInf = std::numeric_limits<double>::infinity();

Node* cast(Graph& g, Node* x, DType t) { return x->dtype() == t ? x : g.call("to.dtype", {x, t}); }
bool has_param(const Node& n, const char* p) { return n.op()->schema.index_of(p) >= 0; }
Arg opt(const Node& n, const char* p) { return has_param(n, p) ? n.arg(p) : Arg(); }
bool is_one(const Arg& a) { return a.is_number() && a.to_double() == 1.0; }
Node* scale(Graph& g, Node* x, const Arg& s) { return is_one(s) ? x : g.call("mul.Scalar", {x, s}); }


// The overload names of pow(Tensor, Scalar) and floor_divide(Tensor, Tensor) change when the
// registry adopts aten's names (issue 14: pow.Scalar -> pow.Tensor_Scalar, floor_divide.Tensor ->
// floor_divide.default); aten's name wins when it is registered.
const char* pow_tensor_scalar() {
  return default_registry().find("pow.Tensor_Scalar") ? "pow.Tensor_Scalar" : "pow.Scalar";
}
const char* floor_divide_tensor() {
  return default_registry().find("floor_divide.Tensor") ? "floor_divide.Tensor"
                                                         : "floor_divide.default";
}

bool keepdim_of(const Node& n) { return has_param(n, "keepdim") && n.arg("keepdim").to_bool(); }

// ---- activations

Node* leaky_relu(Graph& g, const Node& n) {
  Node* x = n.input(0);
  Node* pos = g.call("gt.Scalar", {x, 0});
  Node* neg = g.call("mul.Scalar", {x, n.arg("negative_slope")});
  return g.call("where.self", {pos, x, neg});
}

Node* elu(Graph& g, const Node& n) {
  Node* x = n.input(0);
  double negcoef = n.arg("alpha").to_double() * n.arg("scale").to_double();
  Node* xs = scale(g, x, n.arg("input_scale"));
  Node* neg = scale(g, g.call("expm1", {xs}), Arg(negcoef));
  Node* pos = scale(g, x, n.arg("scale"));
  return g.call("where.self", {g.call("le.Scalar", {x, 0}), neg, pos});
}

Node* hardtanh(Graph& g, const Node& n) {
  return g.call("clamp", {n.input(0), n.arg("min_val"), n.arg("max_val")});
}

Node* relu6(Graph& g, const Node& n) { return g.call("clamp", {n.input(0), 0, 6}); }

Node* hardsigmoid_core(Graph& g, Node* x) {
  return g.call("clamp", {g.call("add.Scalar", {x, 3}), 0, 6});
}

Node* hardswish(Graph& g, const Node& n) {
  Node* x = n.input(0);
  return g.call("div.Scalar", {g.call("mul.Tensor", {x, hardsigmoid_core(g, x)}), 6});
}

Node* hardsigmoid(Graph& g, const Node& n) {
  return g.call("div.Scalar", {hardsigmoid_core(g, n.input(0)), 6});
}

Node* softplus(Graph& g, const Node& n) {
  Node* x = n.input(0);
  const Arg& beta = n.arg("beta");
  Node* xb = scale(g, x, beta);
  Node* sp = g.call("log1p", {g.call("exp", {xb})});
  if (!is_one(beta)) sp = g.call("div.Scalar", {sp, beta});
  return g.call("where.self", {g.call("gt.Scalar", {xb, n.arg("threshold")}), x, sp});
}

Node* mish(Graph& g, const Node& n) {
  Node* x = n.input(0);
  Node* sp = g.call("log1p", {g.call("exp", {x})});
  return g.call("mul.Tensor", {x, g.call("tanh", {sp})});
}

Node* leaky_relu_backward(Graph& g, const Node& n) {
  Node* gr = cast(g, n.input(0), n.dtype());
  Node* pos = g.call("gt.Scalar", {n.arg("self").node(), 0});
  return g.call("where.self", {pos, gr, g.call("mul.Scalar", {gr, n.arg("negative_slope")})});
}

Node* elu_backward(Graph& g, const Node& n) {
  Node* gr = cast(g, n.arg("grad_output").node(), n.dtype());
  Node* s = n.arg("self_or_result").node();
  double negcoef = n.arg("alpha").to_double() * n.arg("scale").to_double();
  const Arg& negipt = n.arg("input_scale");
  Node* gi = g.call("mul.Scalar", {gr, negipt});
  Node* neg;
  if (n.arg("is_result").to_bool()) {
    neg = g.call("mul.Tensor", {gi, g.call("add.Scalar", {s, negcoef})});
  } else {
    Node* e = g.call("exp", {g.call("mul.Scalar", {s, negipt})});
    neg = g.call("mul.Tensor", {g.call("mul.Scalar", {gi, negcoef}), e});
  }
  Node* pos = g.call("mul.Scalar", {gr, n.arg("scale")});
  return g.call("where.self", {g.call("le.Scalar", {s, 0}), neg, pos});
}

Node* hardtanh_backward(Graph& g, const Node& n) {
  Node* gr = cast(g, n.input(0), n.dtype());
  Node* x = n.arg("self").node();
  Node* out = g.call("logical_or", {g.call("le.Scalar", {x, n.arg("min_val")}),
                                    g.call("ge.Scalar", {x, n.arg("max_val")})});
  return g.call("where.ScalarSelf", {out, 0.0, gr});
}

Node* hardswish_backward(Graph& g, const Node& n) {
  Node* gr = cast(g, n.input(0), n.dtype());
  Node* x = n.arg("self").node();
  Node* slope = g.call("add.Scalar", {g.call("div.Scalar", {x, 3}), 0.5});
  Node* mid = g.call("where.self", {g.call("le.Scalar", {x, 3}), g.call("mul.Tensor", {gr, slope}),
                                    gr});
  return g.call("where.ScalarSelf", {g.call("lt.Scalar", {x, -3}), 0.0, mid});
}

Node* hardsigmoid_backward(Graph& g, const Node& n) {
  Node* gr = cast(g, n.input(0), n.dtype());
  Node* x = n.arg("self").node();
  Node* in = g.call("logical_and", {g.call("gt.Scalar", {x, -3}), g.call("lt.Scalar", {x, 3})});
  return g.call("where.ScalarOther", {in, g.call("div.Scalar", {gr, 6}), 0.0});
}

Node* softplus_backward(Graph& g, const Node& n) {
  Node* gr = cast(g, n.input(0), n.dtype());
  Node* x = n.arg("self").node();
  Node* xb = scale(g, x, n.arg("beta"));
  Node* z = g.call("exp", {xb});
  Node* d = g.call("div.Tensor", {g.call("mul.Tensor", {gr, z}), g.call("add.Scalar", {z, 1})});
  return g.call("where.self", {g.call("gt.Scalar", {xb, n.arg("threshold")}), gr, d});
}

Node* mish_backward(Graph& g, const Node& n) {
  Node* gr = cast(g, n.input(0), n.dtype());
  Node* x = n.arg("self").node();
  Node* t = g.call("tanh", {g.call("log1p", {g.call("exp", {x})})});
  Node* s = g.call("sigmoid", {x});
  Node* one_m = g.call("add.Scalar", {g.call("neg", {g.call("mul.Tensor", {t, t})}), 1});
  Node* xs = g.call("mul.Tensor", {g.call("mul.Tensor", {x, s}), one_m});
  return g.call("mul.Tensor", {gr, g.call("add.Tensor", {t, xs})});
}

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
  if (p == 1) return g.call("sum.dim_IntList", {g.call("abs", {x}), dims, keepdim});
  if (p == 2)
    return g.call("sqrt", {g.call("sum.dim_IntList", {g.call("mul.Tensor", {x, x}), dims, keepdim})});
  Node* a = g.call(pow_tensor_scalar(), {g.call("abs", {x}), p});
  return g.call(pow_tensor_scalar(), {g.call("sum.dim_IntList", {a, dims, keepdim}), 1.0 / p});
}

// ---- shape ops

Node* stack(Graph& g, const Node& n) {
  std::vector<Node*> ts = n.arg("tensors").to_node_list();
  int64_t d = wrap_dim(n.arg("dim").to_int(), ts[0]->meta().dim() + 1, "%" + n.name());
  std::vector<Node*> us;
  for (Node* t : ts) us.push_back(g.call("unsqueeze", {t, d}));
  return g.call("cat", {Arg(us), d});
}

Node* repeat(Graph& g, const Node& n) {
  Node* x = n.input(0);
  Ints r = n.arg("repeats").to_int_list();
  size_t pad = r.size() - x->shape().size();
  Shape pairs, expanded, out;
  for (size_t i = 0; i < r.size(); ++i) {
    int64_t s = i < pad ? 1 : x->shape()[i - pad];
    pairs.insert(pairs.end(), {1, s});
    expanded.insert(expanded.end(), {r[i], s});
    out.push_back(r[i] * s);
  }
  if (r.empty()) return g.call("clone", {x});
  Node* v = g.call("reshape", {x, pairs});
  Node* e = g.call("expand", {v, expanded});
  return g.call("reshape", {g.call("clone", {e}), out});
}

Node* flip(Graph& g, const Node& n) {
  Node* x = n.input(0);
  Node* y = x;
  int64_t rank = x->meta().dim();
  for (int64_t d : n.arg("dims").to_int_list()) {
    if (rank == 0) break;
    d = wrap_dim(d, rank, "%" + n.name());
    int64_t len = x->shape()[d];
    if (len <= 1) continue;
    Node* idx = g.call("arange.start_step", {len - 1, -1, -1});
    y = g.call("index_select", {y, d, idx});
  }
  return y == x ? g.call("clone", {x}) : y;
}

Node* roll_dim(Graph& g, Node* x, int64_t shift, int64_t d) {
  int64_t len = x->shape()[d];
  if (len == 0) return x;
  int64_t s = ((shift % len) + len) % len;
  if (s == 0) return x;
  Node* tail = g.call("slice.Tensor", {x, d, len - s, len});
  Node* head = g.call("slice.Tensor", {x, d, 0, len - s});
  return g.call("cat", {Arg(std::vector<Node*>{tail, head}), d});
}

Node* roll(Graph& g, const Node& n) {
  Node* x = n.input(0);
  Ints shifts = n.arg("shifts").to_int_list();
  Ints dims = n.arg("dims").to_int_list();
  Node* y = x;
  if (dims.empty()) {
    Node* flat = g.call("reshape", {x, Shape{shape_numel(x->shape())}});
    y = g.call("reshape", {roll_dim(g, flat, shifts[0], 0), x->shape()});
  } else {
    for (size_t i = 0; i < dims.size(); ++i)
      y = roll_dim(g, y, shifts[i], wrap_dim(dims[i], x->meta().dim(), "%" + n.name()));
  }
  return y == x ? g.call("clone", {x}) : y;
}

Node* tri(Graph& g, const Node& n, bool lower) {
  Node* x = n.input(0);
  int64_t rows = x->shape()[x->shape().size() - 2], cols = x->shape().back();
  Node* r = g.call("unsqueeze", {g.call("arange", {rows}), 1});
  Node* c = g.call("arange", {cols});
  Node* diff = g.call("sub.Tensor", {c, r});
  Node* mask = g.call(lower ? "le.Scalar" : "ge.Scalar", {diff, n.arg("diagonal")});
  return g.call("where.self", {mask, x, g.call("zeros_like", {x})});
}

// ---- masked writes and fused arithmetic

Node* masked_fill(Graph& g, const Node& n) {
  Node* self = n.input(0);
  const Arg& v = n.arg("value");
  Node* fill = v.is_node() ? cast(g, v.node(), self->dtype()) : g.call("full_like", {self, v});
  return g.call("where.self", {n.arg("mask").node(), fill, self});
}

Node* baddbmm(Graph& g, const Node& n) {
  Node* self = n.input(0);
  Node* p = g.call("bmm", {n.arg("batch1").node(), n.arg("batch2").node()});
  const Arg& alpha = n.arg("alpha");
  const Arg& beta = n.arg("beta");
  Node* ap = scale(g, p, alpha);
  if (beta.to_double() == 0) return ap;  // torch ignores self (NaN / inf included) when beta == 0
  Node* bs = scale(g, self, beta);
  return cast(g, g.call("add.Tensor", {bs, ap}), n.dtype());
}

Node* addc(Graph& g, const Node& n, bool div) {
  Node* self = n.input(0);
  Node* t1 = scale(g, n.arg("tensor1").node(), n.arg("value"));
  Node* t = g.call(div ? "div.Tensor" : "mul.Tensor", {t1, n.arg("tensor2").node()});
  return cast(g, g.call("add.Tensor", {self, t}), n.dtype());
}

Node* lerp(Graph& g, const Node& n) {
  Node* self = cast(g, n.input(0), n.dtype());
  Node* end = cast(g, n.arg("end").node(), n.dtype());
  Node* diff = g.call("sub.Tensor", {end, self});
  const Arg& w = n.arg("weight");
  if (!w.is_node()) {
    double wv = w.to_double();
    if (std::abs(wv) < 0.5) return g.call("add.Tensor", {self, g.call("mul.Scalar", {diff, wv})});
    // 1 - w in the computation dtype, as torch's kernel forms it
    double one_m = n.dtype() == DType::Float64
                       ? 1.0 - wv
                       : static_cast<double>(1.0f - static_cast<float>(wv));
    return g.call("sub.Tensor", {end, g.call("mul.Scalar", {diff, one_m})});
  }
  Node* wt = w.node();
  Node* lo = g.call("add.Tensor", {self, g.call("mul.Tensor", {wt, diff})});
  Node* one_m = g.call("add.Scalar", {g.call("neg", {wt}), 1});
  Node* hi = g.call("sub.Tensor", {end, g.call("mul.Tensor", {diff, one_m})});
  Node* small = g.call("lt.Scalar", {g.call("abs", {wt}), 0.5});
  return cast(g, g.call("where.self", {small, lo, hi}), n.dtype());
}

Node* div_mode(Graph& g, const Node& n) {
  Node* a = n.input(0);
  const Arg& b = n.arg("other");
  bool scalar = !b.is_node();
  const Arg& mode = n.arg("rounding_mode");
  if (mode.is_absent()) return g.call(scalar ? "div.Scalar" : "div.Tensor", {a, b});
  if (mode.str() == "floor")
    return cast(g, g.call(scalar ? "floor_divide.Scalar" : floor_divide_tensor(), {a, b}),
                n.dtype());
  if (is_floating(n.dtype()))
    return g.call("trunc", {cast(g, g.call(scalar ? "div.Scalar" : "div.Tensor", {a, b}),
                                 n.dtype())});
  // Integers: the floor quotient, plus one where the remainder is non-zero and the signs differ.
  Node* q = g.call(scalar ? "floor_divide.Scalar" : floor_divide_tensor(), {a, b});
  Node* r = g.call(scalar ? "remainder.Scalar" : "remainder.Tensor", {a, b});
  Node* sign_differs;
  if (scalar)
    sign_differs = g.call(b.to_double() < 0 ? "ge.Scalar" : "lt.Scalar", {a, 0});
  else
    sign_differs = g.call("ne.Tensor", {g.call("lt.Scalar", {a, 0}), g.call("lt.Scalar", {b, 0})});
  Node* fix = g.call("logical_and", {g.call("ne.Scalar", {r, 0}), sign_differs});
  return cast(g, g.call("add.Tensor", {q, fix}), n.dtype());
}

Node* clamp_tensor(Graph& g, const Node& n) {
  Node* x = cast(g, n.input(0), n.dtype());
  if (Arg lo = n.arg("min"); lo.is_node()) x = g.call("maximum", {x, lo});
  if (Arg hi = n.arg("max"); hi.is_node()) x = g.call("minimum", {x, hi});
  return cast(g, x, n.dtype());
}

Node* clamp_one(Graph& g, const Node& n, bool min) {
  Node* x = n.input(0);
  const Arg& b = n.arg(min ? "min" : "max");
  if (b.is_node())
    return cast(g, g.call(min ? "maximum" : "minimum", {cast(g, x, n.dtype()), b}), n.dtype());
  return min ? g.call("clamp", {x, b}) : g.call("clamp", {x, Arg(), b});
}

// ---- predicates

Node* bools_like(Graph& g, Node* x, bool value) {
  return g.call("full_like", {x, value}, {{"dtype", Arg(DType::Bool)}});
}

Node* isinf(Graph& g, const Node& n) {
  Node* x = n.input(0);
  if (!is_floating(x->dtype())) return bools_like(g, x, false);
  return g.call("eq.Scalar", {g.call("abs", {x}), kInf});
}

Node* is_signed_inf(Graph& g, const Node& n, double inf) {
  Node* x = n.input(0);
  if (!is_floating(x->dtype())) return bools_like(g, x, false);
  return g.call("eq.Scalar", {x, inf});
}

Node* isfinite(Graph& g, const Node& n) {
  Node* x = n.input(0);
  if (!is_floating(x->dtype())) return bools_like(g, x, true);
  return g.call("logical_and",
                {g.call("eq.Tensor", {x, x}), g.call("ne.Scalar", {g.call("abs", {x}), kInf})});
}

Node* logical_xor(Graph& g, const Node& n) {
  Node* a = g.call("ne.Scalar", {n.input(0), 0});
  Node* b = g.call("ne.Scalar", {n.arg("other").node(), 0});
  return g.call("ne.Tensor", {a, b});
}

double max_finite(DType t) {
  switch (t) {
    case DType::Float16: return 65504.0;
    case DType::BFloat16: return 3.3895313892515355e38;
    case DType::Float32: return std::numeric_limits<float>::max();
    default: return std::numeric_limits<double>::max();
  }
}

Node* nan_to_num(Graph& g, const Node& n) {
  Node* x = n.input(0);
  if (!is_floating(x->dtype())) return g.call("clone", {x});
  auto value = [&](const char* p, double dflt) {
    const Arg& a = n.arg(p);
    return a.is_absent() ? dflt : a.to_double();
  };
  double big = max_finite(x->dtype());
  Node* y = g.call("where.ScalarSelf", {g.call("isnan", {x}), value("nan", 0.0), x});
  y = g.call("where.ScalarSelf", {g.call("eq.Scalar", {x, kInf}), value("posinf", big), y});
  return g.call("where.ScalarSelf", {g.call("eq.Scalar", {x, -kInf}), value("neginf", -big), y});
}

}  // namespace

void register_model_decompositions(DecompositionTable& t) {
  t.add("leaky_relu.default", leaky_relu);
  t.add("elu.default", elu);
  t.add("hardtanh.default", hardtanh);
  t.add("relu6.default", relu6);
  t.add("hardswish.default", hardswish);
  t.add("hardsigmoid.default", hardsigmoid);
  t.add("softplus.default", softplus);
  t.add("mish.default", mish);
  t.add("leaky_relu_backward.default", leaky_relu_backward);
  t.add("elu_backward.default", elu_backward);
  t.add("hardtanh_backward.default", hardtanh_backward);
  t.add("hardswish_backward.default", hardswish_backward);
  t.add("hardsigmoid_backward.default", hardsigmoid_backward);
  t.add("softplus_backward.default", softplus_backward);
  t.add("mish_backward.default", mish_backward);
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
  t.add("max.other", [](Graph& g, const Node& n) {
    return g.call("maximum", {n.input(0), n.arg("other").node()});
  });
  t.add("min.other", [](Graph& g, const Node& n) {
    return g.call("minimum", {n.input(0), n.arg("other").node()});
  });
  t.add("stack.default", stack);
  t.add("repeat.default", repeat);
  t.add("flip.default", flip);
  t.add("roll.default", roll);
  t.add("tril.default", [](Graph& g, const Node& n) { return tri(g, n, true); });
  t.add("triu.default", [](Graph& g, const Node& n) { return tri(g, n, false); });
  t.add("masked_fill.Scalar", masked_fill);
  t.add("masked_fill.Tensor", masked_fill);
  t.add("baddbmm.default", baddbmm);
  t.add("addcmul.default", [](Graph& g, const Node& n) { return addc(g, n, false); });
  t.add("addcdiv.default", [](Graph& g, const Node& n) { return addc(g, n, true); });
  t.add("lerp.Scalar", lerp);
  t.add("lerp.Tensor", lerp);
  t.add("div.Tensor_mode", div_mode);
  t.add("div.Scalar_mode", div_mode);
  t.add("clamp.Tensor", clamp_tensor);
  t.add("clamp_min.default", [](Graph& g, const Node& n) { return clamp_one(g, n, true); });
  t.add("clamp_max.default", [](Graph& g, const Node& n) { return clamp_one(g, n, false); });
  t.add("clamp_min.Tensor", [](Graph& g, const Node& n) { return clamp_one(g, n, true); });
  t.add("clamp_max.Tensor", [](Graph& g, const Node& n) { return clamp_one(g, n, false); });
  t.add("isinf.default", isinf);
  t.add("isposinf.default", [](Graph& g, const Node& n) { return is_signed_inf(g, n, kInf); });
  t.add("isneginf.default", [](Graph& g, const Node& n) { return is_signed_inf(g, n, -kInf); });
  t.add("isfinite.default", isfinite);
  t.add("logical_xor.default", logical_xor);
  t.add("nan_to_num.default", nan_to_num);
}

}  // namespace stax
