// Decompositions of the activation ops.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/graph/decompositions.h"
#include "core/graph/op_registry.h"
#include "core/ops/common/decomposition_helpers.h"
#include "core/ops/nn/params.h"
#include "core/ops/registration.h"
#include "core/support/error.h"

namespace stax {
namespace {

using decomp::cast;
bool is_one(const Arg& a) { return a.is_number() && a.to_double() == 1.0; }
Node* scale(Graph& g, Node* x, const Arg& s) { return is_one(s) ? x : g.call("mul.Scalar", {x, s}); }

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

// Integer inputs: clamp promotes to float with the float bounds; torch's kernel writes the result
// in the input's integer dtype (truncated), so the value is cast back.
Node* hardtanh(Graph& g, const Node& n) {
  Node* y = g.call("clamp", {n.input(0), n.arg("min_val"), n.arg("max_val")});
  return y->dtype() == n.dtype() ? y : g.call("to.dtype", {y, n.dtype()});
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

std::string where(const Node& n) { return "%" + n.name(); }
int64_t dim_of(const Node& n, const char* p, int64_t rank) {
  return wrap_dim(n.arg(p).to_int(), std::max<int64_t>(rank, 1), where(n));
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

}  // namespace

void register_activation_decompositions(DecompositionTable& t) {
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
  t.add("celu.default", celu);

  t.add("hardshrink.default", hardshrink);

  t.add("softshrink.default", softshrink);

  t.add("threshold.default", threshold);

  t.add("glu.default", glu);

  t.add("prelu.default", prelu);
}

}  // namespace stax
