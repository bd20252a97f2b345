// VJP rules of the pointwise ops (unary math, binary arithmetic with broadcasting, where, clamp,
// casts), after PyTorch's derivatives.yaml. g is the upstream gradient, x / a / b the inputs,
// y the forward output. Broadcast inputs get sum_to_shape(contribution, input shape).
#include <algorithm>
#include <cmath>
#include <functional>
#include <unordered_map>

#include "core/autodiff/joint_graph.h"
#include "core/autodiff/jvp.h"
#include "core/autodiff/vjp.h"
#include "core/graph/decompositions.h"
#include "core/graph/op_registry.h"
#include "core/ops/common/via_decomposition.h"
#include "core/ops/pointwise/derivatives.h"
#include "core/ops/registration.h"
#include "core/support/error.h"

namespace stax {
namespace {

using namespace pointwise_derivatives;  // NOLINT

constexpr double kLn2 = 0.6931471805599453;
constexpr double kLn10 = 2.302585092994046;
constexpr double kTwoOverSqrtPi = 1.1283791670955126;

bool is_one(const Arg& a) { return a.is_number() && a.to_double() == 1.0; }

// A unary rule: contribution = f(ctx, g, x, y).
template <class F>
VjpFn unary(F f) {
  return [f](VjpContext& c) {
    if (!c.needs("self")) return;
    c.give("self", f(c, c.grad(), c.in("self"), c.out()));
  };
}

// Gives `grad` (of the output's broadcast shape) to the tensor input `param`, summed to its shape.
void give_reduced(VjpContext& c, std::string_view param, Node* grad) {
  Node* x = c.in(param);
  if (!c.needs(x) || !grad) return;
  c.give(x, c.sum_to_shape(grad, x->shape()));
}

void register_unary(VjpTable& t) {
  t.add("exp.default", unary([](VjpContext& c, Node* g, Node*, Node* y) { return c.mul(g, y); }));
  t.add("exp2.default", unary([](VjpContext& c, Node* g, Node*, Node* y) {
          return c.mul(c.mul(g, y), Arg(kLn2));
        }));
  t.add("expm1.default",
        unary([](VjpContext& c, Node* g, Node*, Node* y) { return c.mul(g, c.add(y, Arg(1))); }));
  t.add("log.default", unary([](VjpContext& c, Node* g, Node* x, Node*) { return c.div(g, x); }));
  t.add("log2.default", unary([](VjpContext& c, Node* g, Node* x, Node*) {
          return c.div(g, c.mul(x, Arg(kLn2)));
        }));
  t.add("log10.default", unary([](VjpContext& c, Node* g, Node* x, Node*) {
          return c.div(g, c.mul(x, Arg(kLn10)));
        }));
  t.add("log1p.default",
        unary([](VjpContext& c, Node* g, Node* x, Node*) { return c.div(g, c.add(x, Arg(1))); }));
  t.add("sqrt.default",
        unary([](VjpContext& c, Node* g, Node*, Node* y) { return c.div(g, c.mul(y, Arg(2))); }));
  // d/dx x^(-1/2) = -1/2 y^3
  t.add("rsqrt.default", unary([](VjpContext& c, Node* g, Node*, Node* y) {
          return c.mul(c.mul(g, c.call("pow.Tensor_Scalar", {y, 3})), Arg(-0.5));
        }));
  t.add("sin.default",
        unary([](VjpContext& c, Node* g, Node* x, Node*) { return c.mul(g, c.call("cos", {x})); }));
  t.add("cos.default", unary([](VjpContext& c, Node* g, Node* x, Node*) {
          return c.mul(g, c.neg(c.call("sin", {x})));
        }));
  // d/dx tan x = 1 + tan^2 x
  t.add("tan.default", unary([](VjpContext& c, Node* g, Node*, Node* y) {
          return c.mul(g, c.add(c.mul(y, y), Arg(1)));
        }));
  t.add("tanh.default", unary([](VjpContext& c, Node* g, Node*, Node* y) {
          return c.call("tanh_backward", {g, y});
        }));
  t.add("sigmoid.default", unary([](VjpContext& c, Node* g, Node*, Node* y) {
          return c.call("sigmoid_backward", {g, y});
        }));
  // d/dx erf x = 2/sqrt(pi) exp(-x^2)
  t.add("erf.default", unary([](VjpContext& c, Node* g, Node* x, Node*) {
          Node* e = c.call("exp", {c.neg(c.mul(x, x))});
          return c.mul(g, c.mul(e, Arg(kTwoOverSqrtPi)));
        }));
  t.add("reciprocal.default",
        unary([](VjpContext& c, Node* g, Node*, Node* y) { return c.mul(c.neg(g), c.mul(y, y)); }));
  t.add("abs.default", unary([](VjpContext& c, Node* g, Node* x, Node*) {
          return c.mul(g, c.call("sign", {x}));
        }));
  t.add("neg.default", unary([](VjpContext& c, Node* g, Node*, Node*) { return c.neg(g); }));
  // torch: threshold_backward(grad, result, 0)
  t.add("relu.default", unary([](VjpContext& c, Node* g, Node*, Node* y) {
          return c.call("threshold_backward", {g, y, 0});
        }));
  t.add("gelu.default", unary([](VjpContext& c, Node* g, Node* x, Node*) {
          return c.call("gelu_backward", {g, x, c.arg("approximate")});
        }));
  t.add("silu.default", unary([](VjpContext& c, Node* g, Node* x, Node*) {
          return c.call("silu_backward", {g, x});
        }));
  // Piecewise constant: zero gradient almost everywhere (torch: zeros_like(grad)); no node.
  for (const char* op :
       {"sign.default", "floor.default", "ceil.default", "round.default", "trunc.default"})
    t.add(op, [](VjpContext&) {});
}

void register_binary(VjpTable& t) {
  auto add_rule = [](bool subtract) {
    return [subtract](VjpContext& c) {
      Node* g = c.grad();
      give_reduced(c, "self", g);
      if (!c.needs("other")) return;
      const Arg& alpha = c.arg("alpha");
      Node* go;
      if (is_one(alpha))
        go = subtract ? c.neg(g) : g;
      else if (!subtract)
        go = c.mul(g, alpha);
      else
        go = c.mul(g, alpha.is_double() ? Arg(-alpha.to_double()) : Arg(-alpha.to_int()));
      give_reduced(c, "other", go);
    };
  };
  t.add("add.Tensor", add_rule(false));
  t.add("sub.Tensor", add_rule(true));
  t.add("add.Scalar", [](VjpContext& c) { c.give("self", c.grad()); });
  t.add("sub.Scalar", [](VjpContext& c) { c.give("self", c.grad()); });

  t.add("mul.Tensor", [](VjpContext& c) {
    Node* g = c.grad();
    if (c.needs("self")) give_reduced(c, "self", c.mul(g, c.in("other")));
    if (c.needs("other")) give_reduced(c, "other", c.mul(g, c.in("self")));
  });
  t.add("mul.Scalar", [](VjpContext& c) {
    if (c.needs("self")) c.give("self", c.mul(c.grad(), c.arg("other")));
  });
  // a / b: ā = g / b, b̄ = -(g / b) * y
  t.add("div.Tensor", [](VjpContext& c) {
    if (!c.needs("self") && !c.needs("other")) return;
    Node* q = c.div(c.grad(), c.in("other"));
    give_reduced(c, "self", q);
    if (c.needs("other")) give_reduced(c, "other", c.neg(c.mul(q, c.out())));
  });
  t.add("div.Scalar", [](VjpContext& c) {
    if (c.needs("self")) c.give("self", c.div(c.grad(), c.arg("other")));
  });
}

// pow, remainder, maximum / minimum.
void register_power_and_extremum(VjpTable& t) {
  // a ^ b: ā = g b a^(b-1); b̄ = g y log(a), 0 where a == 0 and b >= 0 (torch's masking)
  t.add("pow.Tensor_Tensor", [](VjpContext& c) {
    Node* g = c.grad();
    Node* a = c.in("self");
    Node* b = c.in("exponent");
    if (c.needs(a)) {
      Node* p = c.call("pow.Tensor_Tensor", {a, c.call("sub.Scalar", {b, 1})});
      give_reduced(c, "self", c.mul(c.mul(g, b), p));
    }
    if (c.needs(b)) {
      Node* v = c.mul(c.mul(g, c.out()), c.call("log", {a}));
      Node* mask =
          c.call("logical_and", {c.call("eq.Scalar", {a, 0}), c.call("ge.Scalar", {b, 0})});
      give_reduced(c, "exponent", c.call("where.ScalarSelf", {mask, 0.0, v}));
    }
  });
  // a ^ s: ā = g s a^(s-1) (zero when s == 0)
  t.add("pow.Tensor_Scalar", [](VjpContext& c) {
    const Arg& s = c.arg("exponent");
    if (!c.needs("self") || s.to_double() == 0.0) return;
    Node* x = c.in("self");
    Node* p = s.is_double() ? c.call("pow.Tensor_Scalar", {x, s.to_double() - 1})
                            : c.call("pow.Tensor_Scalar", {x, s.to_int() - 1});
    c.give("self", c.mul(c.mul(c.grad(), p), s));
  });
  // s ** x: x̄ = g y log s, 0 where s == 0 and x >= 0 (torch's masking)
  t.add("pow.Scalar", [](VjpContext& c) {
    if (!c.needs("exponent")) return;
    double s = c.arg("self").to_double();
    Node* x = c.in("exponent");
    Node* v = c.mul(c.mul(c.grad(), c.out()), Arg(std::log(s)));
    if (s == 0.0) v = c.call("where.ScalarSelf", {c.call("ge.Scalar", {x, 0}), 0.0, v});
    c.give("exponent", v);
  });
  // a - floor(a / b) * b: ā = g, b̄ = -g floor(a / b)
  t.add("remainder.Tensor", [](VjpContext& c) {
    give_reduced(c, "self", c.grad());
    if (c.needs("other")) {
      Node* q = c.call("floor_divide", {c.in("self"), c.in("other")});
      give_reduced(c, "other", c.neg(c.mul(c.grad(), q)));
    }
  });
  t.add("remainder.Scalar", [](VjpContext& c) { c.give("self", c.grad()); });

  // torch: where(a == b, g / 2, g), masked to 0 where the other input wins.
  auto extremum = [](bool is_max) {
    return [is_max](VjpContext& c) {
      if (!c.needs("self") && !c.needs("other")) return;
      Node* a = c.in("self");
      Node* b = c.in("other");
      Node* g = c.grad();
      Node* h = c.call("where.self", {c.call("eq.Tensor", {a, b}), c.mul(g, Arg(0.5)), g});
      const char* a_loses = is_max ? "lt.Tensor" : "gt.Tensor";
      const char* b_loses = is_max ? "gt.Tensor" : "lt.Tensor";
      if (c.needs(a))
        give_reduced(c, "self", c.call("where.ScalarSelf", {c.call(a_loses, {a, b}), 0.0, h}));
      if (c.needs(b))
        give_reduced(c, "other", c.call("where.ScalarSelf", {c.call(b_loses, {a, b}), 0.0, h}));
    };
  };
  t.add("maximum.default", extremum(true));
  t.add("minimum.default", extremum(false));
}

void register_select(VjpTable& t) {
  // where(c, a, b): ā = where(c, g, 0), b̄ = where(c, 0, g)
  auto branch_self = [](VjpContext& c) {
    if (c.needs("self"))
      give_reduced(c, "self", c.call("where.ScalarOther", {c.in("condition"), c.grad(), 0.0}));
  };
  auto branch_other = [](VjpContext& c) {
    if (c.needs("other"))
      give_reduced(c, "other", c.call("where.ScalarSelf", {c.in("condition"), 0.0, c.grad()}));
  };
  t.add("where.self", [=](VjpContext& c) {
    branch_self(c);
    branch_other(c);
  });
  t.add("where.ScalarOther", branch_self);
  t.add("where.ScalarSelf", branch_other);
  // The gradient passes where min <= x <= max (torch's clamp_backward).
  t.add("clamp.default", [](VjpContext& c) {
    if (!c.needs("self")) return;
    Node* x = c.in("self");
    Node* mask = nullptr;
    if (!c.arg("min").is_absent()) mask = c.call("ge.Scalar", {x, c.arg("min")});
    if (!c.arg("max").is_absent()) {
      Node* le = c.call("le.Scalar", {x, c.arg("max")});
      mask = mask ? c.call("logical_and", {mask, le}) : le;
    }
    c.give(x, c.call("where.ScalarOther", {mask, c.grad(), 0.0}));
  });
  for (const char* op : {"to.dtype", "_to_copy.default"})
    t.add(op, [](VjpContext& c) {
      if (c.needs("self")) c.give("self", c.cast(c.grad(), c.in("self")->dtype()));
    });
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

}  // namespace

void register_pointwise_vjps(VjpTable& t) {
  register_unary(t);
  register_binary(t);
  register_power_and_extremum(t);
  register_select(t);
  for (const char* op :
         {"max.other", "min.other", "addcmul.default", "addcdiv.default", "lerp.Scalar",
          "lerp.Tensor", "div.Tensor_mode", "div.Scalar_mode", "clamp.Tensor", "clamp_min.default",
          "clamp_max.default", "clamp_min.Tensor", "clamp_max.Tensor", "nan_to_num.default"}) t.add(op, vjp_via_decomposition);

  t.add("fmod.Tensor", fmod_vjp);

  t.add("fmod.Scalar", fmod_vjp);
  for (const char* op :
         {"rsub.Tensor", "rsub.Scalar", "deg2rad.default", "rad2deg.default", "frac.default",
          "sgn.default", "sinc.default", "angle.default", "ldexp.Tensor", "logit.default", "logaddexp.default", "logaddexp2.default",
          "xlogy.Tensor", "fmax.default", "fmin.default", "round.decimals", "atan2.out"})
    t.add(op, vjp_via_decomposition);
}

}  // namespace stax
