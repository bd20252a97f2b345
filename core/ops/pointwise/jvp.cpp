// JVP rules of the pointwise ops. ȧ, ḃ, ẋ are input tangents (null = zero), y the primal output.
//
// The unary math ops have a diagonal Jacobian, so J ẋ = Jᵀ ẋ: their JVP is their VJP rule applied
// to the tangent (one formula per op, written once in vjp.cpp). The binary ops
// are written out; the builder broadcasts a tangent that is smaller than the output.
#include <algorithm>
#include <cmath>
#include <functional>
#include <unordered_map>

#include "core/autodiff/joint_graph.h"
#include "core/autodiff/jvp.h"
#include "core/autodiff/vjp.h"
#include "core/graph/decompositions.h"
#include "core/graph/op_registry.h"
#include "core/ops/common/linear_jvp.h"
#include "core/ops/common/via_decomposition.h"
#include "core/ops/pointwise/derivatives.h"
#include "core/ops/registration.h"
#include "core/support/error.h"

namespace stax {

namespace {

using namespace pointwise_derivatives;  // NOLINT
using namespace linear_jvp;  // NOLINT

bool is_one(const Arg& a) { return a.is_number() && a.to_double() == 1.0; }

// ȧ ± alpha ḃ
JvpFn add_jvp(bool subtract) {
  return [subtract](JvpContext& c) -> Node* {
    Node* ad = c.tangent("self");
    Node* bd = c.tangent("other");
    const Arg& alpha = c.arg("alpha");
    if (ad && bd)
      return c.call(subtract ? "sub.Tensor" : "add.Tensor", {ad, bd}, {{"alpha", alpha}});
    if (ad) return ad;
    Node* r = is_one(alpha) ? bd : c.mul(bd, alpha);
    return subtract ? c.neg(r) : r;
  };
}

void register_binary(JvpTable& t) {
  t.add("add.Tensor", add_jvp(false));
  t.add("sub.Tensor", add_jvp(true));
  auto first = [](JvpContext& c) { return c.tangent("self"); };
  t.add("add.Scalar", first);
  t.add("sub.Scalar", first);
  t.add("remainder.Scalar", first);
  t.add("mul.Scalar", [](JvpContext& c) { return c.mul(c.tangent("self"), c.arg("other")); });
  t.add("div.Scalar", [](JvpContext& c) { return c.div(c.tangent("self"), c.arg("other")); });
  // ȧ b + a ḃ
  t.add("mul.Tensor", [](JvpContext& c) {
    Node* ad = c.tangent("self");
    Node* bd = c.tangent("other");
    return sum_terms(
        c, {ad ? c.mul(ad, c.in("other")) : nullptr, bd ? c.mul(c.in("self"), bd) : nullptr});
  });
  // (ȧ - y ḃ) / b
  t.add("div.Tensor", [](JvpContext& c) {
    Node* ad = c.tangent("self");
    Node* bd = c.tangent("other");
    Node* b = c.in("other");
    Node* num = bd ? c.mul(c.out(), bd) : nullptr;
    if (ad)
      num = num ? c.sub(ad, num) : ad;
    else
      num = c.neg(num);
    return c.div(num, b);
  });
  // ȧ b a^(b-1) + ḃ y log a (0 where a == 0 and b >= 0, as the VJP)
  t.add("pow.Tensor_Tensor", [](JvpContext& c) {
    Node* a = c.in("self");
    Node* b = c.in("exponent");
    Node* ad = c.tangent(a);
    Node* bd = c.tangent(b);
    Node* ta = nullptr;
    Node* tb = nullptr;
    if (ad) ta = c.mul(c.mul(ad, b), c.call("pow.Tensor_Tensor", {a, c.call("sub.Scalar", {b, 1})}));
    if (bd) {
      Node* v = c.mul(c.mul(bd, c.out()), c.call("log", {a}));
      Node* mask =
          c.call("logical_and", {c.call("eq.Scalar", {a, 0}), c.call("ge.Scalar", {b, 0})});
      tb = c.call("where.ScalarSelf", {mask, 0.0, v});
    }
    return sum_terms(c, {ta, tb});
  });
  // ẋ s x^(s-1)
  t.add("pow.Tensor_Scalar", [](JvpContext& c) -> Node* {
    const Arg& s = c.arg("exponent");
    if (s.to_double() == 0.0) return nullptr;
    Node* x = c.in("self");
    Node* p = s.is_double() ? c.call("pow.Tensor_Scalar", {x, s.to_double() - 1})
                            : c.call("pow.Tensor_Scalar", {x, s.to_int() - 1});
    return c.mul(c.mul(c.tangent(x), p), s);
  });
  // s ** x: ẋ y log s (0 where s == 0 and x >= 0, as the VJP)
  t.add("pow.Scalar", [](JvpContext& c) -> Node* {
    double s = c.arg("self").to_double();
    Node* x = c.in("exponent");
    Node* v = c.mul(c.mul(c.tangent(x), c.out()), Arg(std::log(s)));
    if (s != 0.0) return v;
    return c.call("where.ScalarSelf", {c.call("ge.Scalar", {x, 0}), 0.0, v});
  });
  // ȧ - ḃ floor(a / b)
  t.add("remainder.Tensor", [](JvpContext& c) {
    Node* ad = c.tangent("self");
    Node* bd = c.tangent("other");
    Node* tb = nullptr;
    if (bd) {
      Node* q = c.call("floor_divide", {c.in("self"), c.in("other")});
      tb = c.neg(c.mul(bd, q));
    }
    return sum_terms(c, {ad, tb});
  });
  // The winner's tangent; ties take the mean of both (torch's convention, as the VJP).
  auto extremum = [](bool is_max) {
    return [is_max](JvpContext& c) {
      Node* a = c.in("self");
      Node* b = c.in("other");
      Node* ad = c.tangent_or_zeros(a);
      Node* bd = c.tangent_or_zeros(b);
      Node* mean = c.mul(c.add(ad, bd), Arg(0.5));
      Node* a_wins = c.call(is_max ? "gt.Tensor" : "lt.Tensor", {a, b});
      Node* b_wins = c.call(is_max ? "lt.Tensor" : "gt.Tensor", {a, b});
      return c.call("where.self", {a_wins, ad, c.call("where.self", {b_wins, bd, mean})});
    };
  };
  t.add("maximum.default", extremum(true));
  t.add("minimum.default", extremum(false));
}

void register_select(JvpTable& t) {
  t.add("where.self", [](JvpContext& c) {
    return c.call("where.self", {c.in("condition"), c.tangent_or_zeros(c.in("self")),
                                 c.tangent_or_zeros(c.in("other"))});
  });
  t.add("where.ScalarSelf", [](JvpContext& c) {
    return c.call("where.ScalarSelf", {c.in("condition"), 0.0, c.tangent("other")});
  });
  t.add("where.ScalarOther", [](JvpContext& c) {
    return c.call("where.ScalarOther", {c.in("condition"), c.tangent("self"), 0.0});
  });
  t.add("clamp.default", jvp_via_symmetric_vjp("clamp.default", "self"));
  for (const char* op : {"to.dtype", "_to_copy.default"})
    t.add(op, [](JvpContext& c) { return c.cast(c.tangent("self"), c.out()->dtype()); });
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

}  // namespace

void register_pointwise_jvps(JvpTable& t) {
  for (const char* op : {"exp",  "exp2",       "expm1", "log", "log2", "log10", "log1p",
                         "sqrt", "rsqrt",      "sin",   "cos", "tan",  "tanh",  "sigmoid",
                         "erf",  "reciprocal", "abs",   "neg", "relu", "gelu",  "silu"}) {
    std::string name = std::string(op) + ".default";
    t.add(name, jvp_via_symmetric_vjp(name, "self"));
  }
  // Piecewise constant: zero tangent.
  for (const char* op :
       {"sign.default", "floor.default", "ceil.default", "round.default", "trunc.default"})
    t.add(op, [](JvpContext&) -> Node* { return nullptr; });
  register_binary(t);
  register_select(t);
  for (const char* op : {"clone.default", "contiguous.default", "lift_fresh_copy.default"})
    t.add(op, linear());
  for (const char* op :
         {"max.other", "min.other", "addcmul.default", "addcdiv.default", "lerp.Scalar",
          "lerp.Tensor", "div.Tensor_mode", "div.Scalar_mode", "clamp.Tensor", "clamp_min.default",
          "clamp_max.default", "clamp_min.Tensor", "clamp_max.Tensor", "nan_to_num.default"}) t.add(op, jvp_via_decomposition);

  t.add("fmod.Tensor", fmod_jvp);

  t.add("fmod.Scalar", fmod_jvp);
  for (const char* op :
         {"rsub.Tensor", "rsub.Scalar", "deg2rad.default", "rad2deg.default", "frac.default",
          "sgn.default", "sinc.default", "angle.default", "ldexp.Tensor", "logit.default", "logaddexp.default", "logaddexp2.default",
          "xlogy.Tensor", "fmax.default", "fmin.default", "round.decimals", "atan2.out"})
    t.add(op, jvp_via_decomposition);
}

}  // namespace stax
