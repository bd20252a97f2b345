// VJP and JVP rules of the model ops (core/graph/ops/model_ops.cpp, issue 14 part C).
//
// * Activations: their VJP calls aten's backward op (leaky_relu_backward, elu_backward,
//   hardtanh_backward, hardswish_backward, hardsigmoid_backward, softplus_backward,
//   mish_backward), so joint graphs read like aten's.
// * Every other Composite op, the backward ops included, is differentiated through its
//   decomposition (core/graph/decompositions_model.cpp): the rule builds a small graph of the node
//   over placeholders, decomposes it, builds its joint (VJP) or tangent (JVP) graph with the rules
//   of the base ops, and replays that graph's nodes into the graph being built. Gradients
//   therefore follow the same formula the compiled forward runs (the forward recomputation the
//   replay emits is dropped when nothing reads it).
// * std and p-norms (p not 0, 1, ±inf): torch's formulas, masked to zero where the std / norm
//   is zero (the decomposition would give NaN there).
// * cumsum, cumprod (exact with zeros in the input), index_add, scatter_reduce (sum, mean, amax,
//   amin), fmod:
//   explicit rules. argsort and the bitwise ops are not differentiable.
#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "core/autodiff/joint_graph.h"
#include "core/autodiff/jvp.h"
#include "core/autodiff/vjp.h"
#include "core/ops/common/via_decomposition.h"
#include "core/graph/decompositions.h"
#include "core/graph/op_registry.h"
#include "core/support/error.h"
#include "core/ops/registration.h"

namespace stax {
namespace {

// A one-call graph of `n` over one placeholder per distinct tensor input, decomposed.
struct Mini {
  Graph g{default_registry()};
  std::vector<Node*> outer;         // the outer graph's input nodes
  std::vector<std::string> names;   // the placeholder standing for each
};

std::unique_ptr<Mini> mini_graph(const Node& n) {
  auto m = std::make_unique<Mini>();
  std::unordered_map<const Node*, Node*> ph;
  for (Node* in : n.input_nodes()) {
    if (ph.count(in)) continue;
    std::string name = "in" + std::to_string(m->outer.size());
    ph[in] = m->g.placeholder(name, in->meta());
    m->outer.push_back(in);
    m->names.push_back(name);
  }
  auto remap = [&](const Arg& a) { return map_nodes(a, [&](Node* x) { return ph.at(x); }); };
  std::vector<Arg> args;
  for (const Arg& a : n.args()) args.push_back(remap(a));
  Kwargs kwargs;
  for (const auto& [k, v] : n.kwargs()) kwargs.emplace_back(k, remap(v));
  Node* call = m->g.call(n.target(), std::move(args), std::move(kwargs), n.name());
  call->attrs = n.attrs;
  m->g.output({call});
  decompose(m->g);
  return m;
}

// Replays the call nodes of `g` through `e` (placeholders and `fixed` nodes come from `map`).
void replay(const Graph& g, const Emitter& e, std::unordered_map<const Node*, Node*>& map,
            const Node* forward_out, Node* outer_out) {
  auto remap = [&](const Arg& a) { return map_nodes(a, [&](Node* x) { return map.at(x); }); };
  for (const Node* n : g.nodes()) {
    if (!n->is_call()) continue;
    if (n == forward_out) {
      map[n] = outer_out;
      continue;
    }
    std::vector<Arg> args;
    for (const Arg& a : n->args()) args.push_back(remap(a));
    Kwargs kwargs;
    for (const auto& [k, v] : n->kwargs()) kwargs.emplace_back(k, remap(v));
    Node* r = e.call(n->target(), std::move(args), std::move(kwargs));
    for (const auto& [k, v] : n->attrs) r->attrs.emplace(k, v);
    map[n] = r;
  }
}

}  // namespace

void vjp_via_decomposition(VjpContext& c) {
  auto m = mini_graph(*c.node());
  std::vector<std::string> wrt;
  std::vector<Node*> wrt_outer;
  for (size_t i = 0; i < m->outer.size(); ++i)
    if (c.needs(m->outer[i]) && is_floating(m->outer[i]->dtype())) {
      wrt.push_back(m->names[i]);
      wrt_outer.push_back(m->outer[i]);
    }
  if (wrt.empty()) return;
  JointGraph j = build_joint_graph(m->g, wrt);
  if (j.output_tangent.empty() || j.output_tangent[0] < 0) return;
  std::unordered_map<const Node*, Node*> map;
  for (size_t i = 0; i < m->names.size(); ++i) map[j.graph.find(m->names[i])] = m->outer[i];
  map[j.graph.find(j.tangents[j.output_tangent[0]])] = c.grad();
  std::vector<Node*> outs = j.graph.outputs();
  replay(j.graph, c, map, outs[0], c.out());
  for (size_t i = 0; i < wrt.size(); ++i) c.give(wrt_outer[i], map.at(outs[j.num_forward_outputs + i]));
}

Node* jvp_via_decomposition(JvpContext& c) {
  auto m = mini_graph(*c.node());
  std::vector<std::string> wrt;
  std::vector<Node*> wrt_outer;
  for (size_t i = 0; i < m->outer.size(); ++i)
    if (c.tangent(m->outer[i]) && is_floating(m->outer[i]->dtype())) {
      wrt.push_back(m->names[i]);
      wrt_outer.push_back(m->outer[i]);
    }
  if (wrt.empty()) return nullptr;
  JvpGraph j = build_jvp_graph(m->g, wrt);
  std::unordered_map<const Node*, Node*> map;
  for (size_t i = 0; i < m->names.size(); ++i) map[j.graph.find(m->names[i])] = m->outer[i];
  for (size_t i = 0; i < wrt.size(); ++i)
    map[j.graph.find(j.tangents[i])] = c.tangent(wrt_outer[i]);
  std::vector<Node*> outs = j.graph.outputs();
  replay(j.graph, c, map, outs[0], c.out());
  return map.at(outs[j.num_outputs]);
}

namespace {

// ---- explicit rules

VjpFn activation_vjp(std::string backward, std::vector<std::string> params) {
  return [backward, params](VjpContext& c) {
    if (!c.needs("self")) return;
    std::vector<Arg> args{c.grad()};
    for (const std::string& p : params) {
      if (p == "self") args.emplace_back(c.in("self"));
      else if (p == "False") args.emplace_back(false);
      else if (p == "0") args.emplace_back(0);
      else if (p == "6") args.emplace_back(6);
      else args.push_back(c.arg(p));
    }
    c.give("self", c.call(backward, std::move(args)));
  };
}

int64_t dim_arg(const Node* x, const Arg& d) {
  return wrap_dim(d.to_int(), std::max<int64_t>(x->meta().dim(), 1), "%" + x->name());
}

void cumsum_vjp(VjpContext& c) {
  Node* x = c.in("self");
  if (!c.needs(x)) return;
  if (x->meta().dim() == 0) {
    c.give(x, c.grad());
    return;
  }
  std::vector<int64_t> d{dim_arg(x, c.arg("dim"))};
  Node* f = c.call("flip", {c.grad(), d});
  Node* s = c.call("cumsum", {f, d[0]});
  c.give(x, c.call("flip", {s, d}));
}

Node* cumsum_jvp(JvpContext& c) {
  Node* t = c.tangent("self");
  if (!t) return nullptr;
  return c.call("cumsum", {t, c.arg("dim")}, {{"dtype", c.arg("dtype")}});
}

// cumprod along dim d (length n), written with the dim moved last: C[..., j, k] =
// prod_{i <= k, i != j} x_i is the cumprod of x with x_j replaced by 1, so zeros in x need no
// division. x̄_j = Σ_{k >= j} ḡ_k C[j, k];  ẏ_k = Σ_{j <= k} ẋ_j C[j, k]. O(n²) memory per row.
struct CumprodTerms {
  Node* c;      // [..., n(j), n(k)]
  Node* upper;  // [n, n] bool: k >= j
  int64_t d;
};

CumprodTerms cumprod_terms(const Emitter& e, const Node& node) {
  Node* x = node.arg("self").node();
  int64_t rank = x->meta().dim();
  int64_t d = wrap_dim(node.arg("dim").to_int(), rank, "%" + node.name());
  int64_t n = x->shape()[d];
  Node* xt = e.call("transpose.int", {x, d, rank - 1});
  Node* j = e.call("unsqueeze", {e.call("arange", {n}), 1});
  Node* k = e.call("arange", {n});
  Node* eye = e.call("eq.Tensor", {j, k});
  Node* y = e.call("where.ScalarSelf", {eye, 1.0, e.call("unsqueeze", {xt, rank - 1})});
  Node* c = e.call("cumprod", {y, rank});
  return {c, e.call("ge.Tensor", {k, j}), d};
}

void cumprod_vjp(VjpContext& c) {
  Node* x = c.in("self");
  if (!c.needs(x)) return;
  int64_t rank = x->meta().dim();
  if (rank == 0 || shape_numel(x->shape()) == 0) {
    c.give(x, c.cast(c.grad(), x->dtype()));
    return;
  }
  CumprodTerms t = cumprod_terms(c, *c.node());
  Node* gt = c.call("transpose.int", {c.cast(c.grad(), x->dtype()), t.d, rank - 1});
  Node* p = c.mul(t.c, c.call("unsqueeze", {gt, rank - 1}));
  Node* m = c.call("where.ScalarOther", {t.upper, p, 0.0});
  Node* s = c.call("sum.dim_IntList", {m, std::vector<int64_t>{rank}});
  c.give(x, c.call("transpose.int", {s, t.d, rank - 1}));
}

Node* cumprod_jvp(JvpContext& c) {
  Node* x = c.in("self");
  Node* tx = c.tangent(x);
  if (!tx) return nullptr;
  int64_t rank = x->meta().dim();
  if (rank == 0 || shape_numel(x->shape()) == 0) return c.cast(tx, c.out()->dtype());
  CumprodTerms t = cumprod_terms(c, *c.node());
  Node* tt = c.call("transpose.int", {c.cast(tx, x->dtype()), t.d, rank - 1});
  Node* p = c.mul(t.c, c.call("unsqueeze", {tt, rank}));
  Node* m = c.call("where.ScalarOther", {t.upper, p, 0.0});
  Node* s = c.call("sum.dim_IntList", {m, std::vector<int64_t>{rank - 1}});
  return c.cast(c.call("transpose.int", {s, t.d, rank - 1}), c.out()->dtype());
}

void index_add_vjp(VjpContext& c) {
  if (c.needs("self")) c.give("self", c.grad());
  if (c.needs("source")) {
    Node* src = c.in("source");
    Node* g = c.grad();
    if (g->meta().dim() == 0) g = c.reshape(g, Shape{1});
    Node* sel = c.call("index_select", {g, c.node()->meta().dim() == 0 ? Arg(0) : c.arg("dim"),
                                        c.reshape(c.in("index"), Shape{shape_numel(c.in("index")->shape())})});
    if (!(c.arg("alpha").is_number() && c.arg("alpha").to_double() == 1.0))
      sel = c.mul(sel, c.arg("alpha"));
    c.give(src, c.reshape(sel, src->shape()));
  }
}

Node* index_add_jvp(JvpContext& c) {
  Node* ts = c.tangent("self");
  Node* tr = c.tangent("source");
  if (!ts && !tr) return nullptr;
  return c.call("index_add",
                {c.tangent_or_zeros(c.in("self")), c.arg("dim"), c.in("index"),
                 c.tangent_or_zeros(c.in("source"))},
                {{"alpha", c.arg("alpha")}});
}

// scatter_reduce.two (torch's formulas). With T = scatter_reduce(0, index, 1, "sum") the number of
// src elements scattered to each position:
//   sum    self: ḡ (0 where T > 0 without include_self); src: gather(ḡ)
//   mean   N = T + include_self (1 where N = 0): self ḡ / N (as sum without include_self);
//          src gather(ḡ / N)
//   amax / amin   the elements equal to the result share ḡ evenly (self counts when included,
//          or when nothing was scattered to it)
//   prod   not implemented (a clear error).
struct ScatterTerms {
  Node* touched;  // T > 0 (bool)
  Node* count;    // N for mean / the number of elements equal to the result for amax / amin
  Node* self_part = nullptr;  // amax / amin: self contributes (bool)
  Node* src_eq = nullptr;     // amax / amin: src element equals its target's result (bool)
};

ScatterTerms scatter_terms(const Emitter& e, const Node& n) {
  Node* self = n.arg("self").node();
  Node* src = n.arg("src").node();
  Node* index = n.arg("index").node();
  const Arg& dim = n.arg("dim");
  const std::string& red = n.arg("reduce").str();
  bool inc = n.arg("include_self").to_bool();
  if (src->shape() != index->shape())
    throw Error("autodiff", "%" + n.name(),
                "the gradient of scatter_reduce needs src of the index's shape " +
                    shape_str(index->shape()) + ", got " + shape_str(src->shape()));
  auto scatter_sum = [&](Node* base, Node* values) {
    return e.call("scatter_reduce.two", {base, dim, index, values, "sum"});
  };
  ScatterTerms t;
  Node* ones = e.call("ones_like", {src});
  Node* tcount = scatter_sum(e.zeros_like(self), ones);
  t.touched = e.call("gt.Scalar", {tcount, 0});
  if (red == "mean") {
    Node* nc = inc ? e.add(tcount, Arg(1)) : tcount;
    t.count = e.call("where.ScalarSelf", {e.call("eq.Scalar", {nc, 0}), 1.0, nc});
  } else if (red == "amax" || red == "amin") {
    Node* out = const_cast<Node*>(&n);
    t.self_part = inc ? e.call("eq.Tensor", {self, out}) : e.call("logical_not", {t.touched});
    t.src_eq = e.call("eq.Tensor", {src, e.call("gather", {out, dim, index})});
    t.count = scatter_sum(e.cast(t.self_part, self->dtype()), e.cast(t.src_eq, self->dtype()));
  } else if (red != "sum") {
    throw Error("autodiff", "%" + n.name(),
                "the derivative of scatter_reduce is implemented for reduce='sum', 'mean', "
                "'amax' and 'amin', got '" + red + "'");
  }
  return t;
}

void scatter_reduce_vjp(VjpContext& c) {
  if (!c.needs("self") && !c.needs("src")) return;
  const Node& n = *c.node();
  const std::string& red = c.arg("reduce").str();
  bool inc = c.arg("include_self").to_bool();
  ScatterTerms t = scatter_terms(c, n);
  Node* g = c.grad();
  auto gather = [&](Node* x) { return c.call("gather", {x, c.arg("dim"), c.in("index")}); };
  auto masked_self = [&](Node* x) {
    return inc ? x : c.call("where.ScalarSelf", {t.touched, 0.0, x});
  };
  if (red == "sum") {
    if (c.needs("self")) c.give("self", masked_self(g));
    if (c.needs("src")) c.give("src", gather(g));
  } else if (red == "mean") {
    Node* gn = c.div(g, t.count);
    if (c.needs("self")) c.give("self", inc ? gn : masked_self(g));
    if (c.needs("src")) c.give("src", gather(gn));
  } else {
    Node* gn = c.div(g, t.count);
    if (c.needs("self")) c.give("self", c.call("where.ScalarOther", {t.self_part, gn, 0.0}));
    if (c.needs("src"))
      c.give("src", c.call("where.ScalarOther", {t.src_eq, gather(gn), 0.0}));
  }
}

Node* scatter_reduce_jvp(JvpContext& c) {
  if (!c.tangent("self") && !c.tangent("src")) return nullptr;
  const std::string& red = c.arg("reduce").str();
  Node* ts = c.tangent_or_zeros(c.in("self"));
  Node* tr = c.tangent_or_zeros(c.in("src"));
  if (red == "sum" || red == "mean")  // linear (mean: for the counts of this index)
    return c.call("scatter_reduce.two", {ts, c.arg("dim"), c.in("index"), tr, c.arg("reduce")},
                  {{"include_self", c.arg("include_self")}});
  ScatterTerms t = scatter_terms(c, *c.node());
  Node* s = c.call("scatter_reduce.two",
                   {c.call("where.ScalarOther", {t.self_part, ts, 0.0}), c.arg("dim"),
                    c.in("index"), c.call("where.ScalarOther", {t.src_eq, tr, 0.0}), "sum"});
  return c.div(s, t.count);
}

// fmod(a, b) = a - trunc(a / b) * b: ∂/∂a = 1, ∂/∂b = -trunc(a / b).
Node* fmod_quotient(const Emitter& c, const Node& n) {
  const Arg& b = n.arg("other");
  Node* a = n.arg("self").node();
  Node* q = b.is_node() ? c.div(a, b.node()) : c.div(a, b);
  return c.call("trunc", {q});
}

void fmod_vjp(VjpContext& c) {
  Node* a = c.in("self");
  if (c.needs(a)) c.give(a, c.sum_to_shape(c.grad(), a->shape()));
  Node* b = c.in("other");
  if (c.needs(b)) {
    Node* q = fmod_quotient(c, *c.node());
    c.give(b, c.sum_to_shape(c.neg(c.mul(c.grad(), q)), b->shape()));
  }
}

Node* fmod_jvp(JvpContext& c) {
  Node* ta = c.tangent("self");
  Node* tb = c.tangent("other");
  if (!ta && !tb) return nullptr;
  Node* r = ta ? c.expand_to(ta, c.out()->shape()) : nullptr;
  if (tb) {
    Node* d = c.neg(c.mul(tb, fmod_quotient(c, *c.node())));
    r = r ? c.add(r, d) : d;
  }
  return r;
}

// ---- std and p-norms: torch's masked formulas (a zero std or norm gives a zero gradient, where
// the decomposition's sqrt / pow would give 0 * inf = NaN).

struct Reduced {
  std::vector<int64_t> dims;
  bool keepdim = false;
};

Reduced reduced_of(const Node& n) {
  const Node* x = n.arg("self").node();
  Reduced r;
  int64_t rank = x->meta().dim();
  Arg dims = n.op()->schema.index_of("dim") >= 0 ? n.arg("dim") : Arg();
  if (!dims.is_absent())
    for (int64_t d : dims.to_int_list())
      if (rank > 0) r.dims.push_back(wrap_dim(d, rank, "%" + n.name()));
  if (r.dims.empty())
    for (int64_t d = 0; d < rank; ++d) r.dims.push_back(d);
  r.keepdim = n.op()->schema.index_of("keepdim") >= 0 && n.arg("keepdim").to_bool();
  return r;
}

double std_denominator(const Node& n, const Reduced& r) {
  const Node* x = n.arg("self").node();
  double correction = 1;
  if (n.op()->schema.index_of("correction") >= 0 && !n.arg("correction").is_absent())
    correction = n.arg("correction").to_double();
  if (n.op()->schema.index_of("unbiased") >= 0) correction = n.arg("unbiased").to_bool() ? 1 : 0;
  double count = 1;
  for (int64_t d : r.dims) count *= static_cast<double>(x->shape()[d]);
  return std::max(0.0, count - correction);
}

// where(y == 0, 0, v)
Node* zero_where_zero(const Emitter& e, Node* y, Node* v) {
  return e.call("where.ScalarSelf", {e.call("eq.Scalar", {y, 0}), 0.0, v});
}

void std_vjp(VjpContext& c) {
  Node* x = c.in("self");
  if (!c.needs(x)) return;
  const Node& n = *c.node();
  Reduced r = reduced_of(n);
  Node* y = c.out();
  Node* gv = zero_where_zero(c, y, c.div(c.grad(), c.mul(y, Arg(2.0))));
  Node* ge = c.restore_reduced_dims(gv, x->shape(), r.dims, r.keepdim);
  Node* xc = c.sub(x, c.call("mean.dim", {x, r.dims, true}));
  c.give(x, c.mul(c.mul(xc, Arg(2.0 / std_denominator(n, r))), ge));
}

Node* std_jvp(JvpContext& c) {
  Node* x = c.in("self");
  Node* t = c.tangent(x);
  if (!t) return nullptr;
  const Node& n = *c.node();
  Reduced r = reduced_of(n);
  Node* xc = c.sub(x, c.call("mean.dim", {x, r.dims, true}));
  Node* vt = c.call("sum.dim_IntList", {c.mul(t, xc), r.dims, r.keepdim});
  vt = c.mul(vt, Arg(2.0 / std_denominator(n, r)));
  Node* y = c.out();
  return zero_where_zero(c, y, c.div(vt, c.mul(y, Arg(2.0))));
}

double norm_p(const Node& n) {
  const char* param = n.op()->schema.index_of("ord") >= 0 ? "ord" : "p";
  const Arg& a = n.arg(param);
  return a.is_absent() ? 2.0 : a.to_double();
}

bool plain_p(double p) { return p != 0 && p != 1 && !std::isinf(p); }

// aten's name of pow(Tensor, Scalar) once the registry has it (it was pow.Scalar here).
const char* pow_tensor_scalar() {
  return default_registry().find("pow.Tensor_Scalar") ? "pow.Tensor_Scalar" : "pow.Scalar";
}

// sgn(x) |x|^(p-1) (x for p = 2), zero where x == 0.
Node* norm_scaled(const Emitter& e, Node* x, double p) {
  if (p == 2) return x;
  Node* s = e.mul(e.call("sign", {x}), e.call(pow_tensor_scalar(), {e.call("abs", {x}), p - 1}));
  return zero_where_zero(e, x, s);
}

// y^(p-1) (y for p = 2)
Node* norm_power(const Emitter& e, Node* y, double p) {
  return p == 2 ? y : e.call(pow_tensor_scalar(), {y, p - 1});
}

void norm_vjp(VjpContext& c) {
  double p = norm_p(*c.node());
  if (!plain_p(p)) return vjp_via_decomposition(c);
  Node* x0 = c.in("self");
  if (!c.needs(x0)) return;
  Node* y = c.out();
  Node* x = c.cast(x0, y->dtype());
  Reduced r = reduced_of(*c.node());
  Node* ye = c.restore_reduced_dims(y, x->shape(), r.dims, r.keepdim);
  Node* ge = c.restore_reduced_dims(c.grad(), x->shape(), r.dims, r.keepdim);
  Node* v = c.div(c.mul(norm_scaled(c, x, p), ge), norm_power(c, ye, p));
  c.give(x0, zero_where_zero(c, ye, v));
}

Node* norm_jvp(JvpContext& c) {
  double p = norm_p(*c.node());
  if (!plain_p(p)) return jvp_via_decomposition(c);
  Node* x0 = c.in("self");
  Node* t = c.tangent(x0);
  if (!t) return nullptr;
  Node* y = c.out();
  Node* x = c.cast(x0, y->dtype());
  Reduced r = reduced_of(*c.node());
  Node* s = c.call("sum.dim_IntList",
                   {c.mul(norm_scaled(c, x, p), c.cast(t, y->dtype())), r.dims, r.keepdim});
  return zero_where_zero(c, y, c.div(s, norm_power(c, y, p)));
}

// flip and roll are permutations: the gradient is the inverse permutation of ḡ (flip again, roll
// back), the tangent the same permutation of ẋ.
void flip_vjp(VjpContext& c) {
  if (c.needs("self")) c.give("self", c.call("flip", {c.grad(), c.arg("dims")}));
}
Node* flip_jvp(JvpContext& c) {
  Node* t = c.tangent("self");
  return t ? c.call("flip", {t, c.arg("dims")}) : nullptr;
}
void roll_vjp(VjpContext& c) {
  if (!c.needs("self")) return;
  std::vector<int64_t> back;
  for (int64_t s : c.arg("shifts").to_int_list()) back.push_back(-s);
  c.give("self", c.call("roll", {c.grad(), back, c.arg("dims")}));
}
Node* roll_jvp(JvpContext& c) {
  Node* t = c.tangent("self");
  return t ? c.call("roll", {t, c.arg("shifts"), c.arg("dims")}) : nullptr;
}

const char* const kViaDecomposition[] = {
    "leaky_relu_backward.default", "elu_backward.default", "hardtanh_backward.default",
    "hardswish_backward.default", "hardsigmoid_backward.default", "softplus_backward.default",
    "mish_backward.default", "var.dim", "var.default", "logsumexp.default",
    "max.default", "min.default", "max.other", "min.other", "stack.default", "repeat.default",
    "tril.default", "triu.default", "masked_fill.Scalar",
    "masked_fill.Tensor", "baddbmm.default", "addcmul.default", "addcdiv.default", "lerp.Scalar",
    "lerp.Tensor", "div.Tensor_mode", "div.Scalar_mode", "clamp.Tensor", "clamp_min.default",
    "clamp_max.default", "clamp_min.Tensor", "clamp_max.Tensor", "nan_to_num.default"};

const char* const kActivations[] = {"leaky_relu.default", "elu.default",      "hardtanh.default",
                                    "relu6.default",      "hardswish.default", "hardsigmoid.default",
                                    "softplus.default",   "mish.default"};

}  // namespace

void register_model_vjps(VjpTable& t) {
  t.add("leaky_relu.default",
        activation_vjp("leaky_relu_backward", {"self", "negative_slope", "False"}));
  t.add("elu.default",
        activation_vjp("elu_backward", {"alpha", "scale", "input_scale", "False", "self"}));
  t.add("hardtanh.default", activation_vjp("hardtanh_backward", {"self", "min_val", "max_val"}));
  t.add("relu6.default", activation_vjp("hardtanh_backward", {"self", "0", "6"}));
  t.add("hardswish.default", activation_vjp("hardswish_backward", {"self"}));
  t.add("hardsigmoid.default", activation_vjp("hardsigmoid_backward", {"self"}));
  t.add("softplus.default", activation_vjp("softplus_backward", {"self", "beta", "threshold"}));
  t.add("mish.default", activation_vjp("mish_backward", {"self"}));
  for (const char* op : kViaDecomposition) t.add(op, vjp_via_decomposition);
  for (const char* op : {"std.correction", "std.dim", "std.default"}) t.add(op, std_vjp);
  for (const char* op : {"norm.ScalarOpt_dim", "norm.Scalar", "linalg_vector_norm.default"})
    t.add(op, norm_vjp);
  t.add("flip.default", flip_vjp);
  t.add("roll.default", roll_vjp);
  t.add("cumsum.default", cumsum_vjp);
  t.add("cumprod.default", cumprod_vjp);
  t.add("index_add.default", index_add_vjp);
  t.add("scatter_reduce.two", scatter_reduce_vjp);
  t.add("fmod.Tensor", fmod_vjp);
  t.add("fmod.Scalar", fmod_vjp);
}

void register_model_jvps(JvpTable& t) {
  for (const char* op : kActivations) t.add(op, jvp_via_decomposition);
  for (const char* op : kViaDecomposition) t.add(op, jvp_via_decomposition);
  for (const char* op : {"std.correction", "std.dim", "std.default"}) t.add(op, std_jvp);
  for (const char* op : {"norm.ScalarOpt_dim", "norm.Scalar", "linalg_vector_norm.default"})
    t.add(op, norm_jvp);
  t.add("flip.default", flip_jvp);
  t.add("roll.default", roll_jvp);
  t.add("cumsum.default", cumsum_jvp);
  t.add("cumprod.default", cumprod_jvp);
  t.add("index_add.default", index_add_jvp);
  t.add("scatter_reduce.two", scatter_reduce_jvp);
  t.add("fmod.Tensor", fmod_jvp);
  t.add("fmod.Scalar", fmod_jvp);
}

}  // namespace stax
