// Decompositions of the pointwise composites silu and gelu (seed §4.8).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "core/graph/decompositions.h"
#include "core/graph/op_registry.h"
#include "core/graph/op_traits.h"
#include "core/ops/common/decomposition_helpers.h"
#include "core/ops/common/xlogy.h"
#include "core/ops/nn/params.h"
#include "core/ops/registration.h"
#include "core/support/error.h"

namespace stax {
namespace {

using namespace xlogy_formula;  // NOLINT
using decomp::cast;
using decomp::is_half_like;

// Half types compute in float32 and round once at the end, as the silu kernel does (x * sigmoid(x)
// on float16 / bfloat16 values would round sigmoid's result to the half type first).
Node* silu_decomp(Graph& g, const Node& n) {
  Node* x = n.input(0);
  DType in = x->dtype();
  bool up = is_half_like(in);
  if (up) x = cast(g, x, DType::Float32);
  Node* y = g.call("mul.Tensor", {x, g.call("sigmoid", {x})});
  return up ? cast(g, y, in) : y;
}

Node* gelu_decomp(Graph& g, const Node& n) {
  Node* x = n.input(0);
  Node* half_x = g.call("mul.Scalar", {x, 0.5});
  if (n.arg("approximate").str() == "tanh") {
    // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    Node* x3 = g.call("mul.Tensor", {g.call("mul.Tensor", {x, x}), x});
    Node* inner = g.call("add.Tensor", {x, g.call("mul.Scalar", {x3, 0.044715})});
    Node* t = g.call("tanh", {g.call("mul.Scalar", {inner, std::sqrt(2.0 / std::numbers::pi)})});
    return g.call("mul.Tensor", {half_x, g.call("add.Scalar", {t, 1})});
  }
  // 0.5 x (1 + erf(x / sqrt 2))
  Node* e = g.call("erf", {g.call("mul.Scalar", {x, 1.0 / std::numbers::sqrt2})});
  return g.call("mul.Tensor", {half_x, g.call("add.Scalar", {e, 1})});
}

constexpr double kInf = std::numeric_limits<double>::infinity();
bool is_one(const Arg& a) { return a.is_number() && a.to_double() == 1.0; }
Node* scale(Graph& g, Node* x, const Arg& s) { return is_one(s) ? x : g.call("mul.Scalar", {x, s}); }
const char* floor_divide_tensor() {
  return default_registry().find("floor_divide.Tensor") ? "floor_divide.Tensor"
                                                         : "floor_divide.default";
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

constexpr double kPi = 3.14159265358979323846;

// The tensor inputs cast to the node's dtype (torch computes in the promoted type).
Node* in(Graph& g, const Node& n, const char* p) { return cast(g, n.arg(p).node(), n.dtype()); }

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

Node* sgn(Graph& g, const Node& n) {
  if (n.input(0)->dtype() == DType::Bool) return g.call("clone", {n.input(0)});
  return g.call("sign", {n.input(0)});
}

Node* sinc(Graph& g, const Node& n) {
  Node* x = in(g, n, "self");
  Node* zero = g.call("eq.Scalar", {x, 0});
  Node* p = g.call("mul.Scalar", {x, kPi});
  Node* safe = g.call("where.ScalarSelf", {zero, 1.0, p});
  Node* v = g.call("div.Tensor", {g.call("sin", {safe}), safe});
  return g.call("where.ScalarSelf", {zero, 1.0, v});
}

// angle of a real x: NaN ? x : (x < 0 ? pi : 0), as torch's real kernel
Node* angle(Graph& g, const Node& n) {
  Node* x = in(g, n, "self");
  Node* v = g.call("mul.Scalar", {cast(g, g.call("lt.Scalar", {x, 0}), n.dtype()), kPi});
  return g.call("where.self", {g.call("isnan", {x}), x, v});
}

Node* ldexp(Graph& g, const Node& n) {
  Node* p = g.call("pow.Scalar", {2.0, n.arg("other").node()});
  return cast(g, g.call("mul.Tensor", {n.arg("self").node(), p}), n.dtype());
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

}  // namespace

// bitwise_*.Scalar_Tensor(number, tensor): the .Tensor op on a full tensor of the result dtype.
Node* bitwise_scalar_tensor(Graph& g, const Node& n, const std::string& base) {
  Node* other = n.arg("other").node();
  Node* self = g.call("full_like", {other, n.arg("self")}, {{"dtype", Arg(n.dtype())}});
  return g.call(base + ".Tensor", {self, other});
}

// Python's operators __and__ / __or__ / __xor__ / __lshift__ / __rshift__: the bitwise op.
Node* bitwise_operator(Graph& g, const Node& n, const std::string& op) {
  bool scalar = !n.arg("other").is_node();
  bool shift = op.find("shift") != std::string::npos;
  return g.call(op + (scalar ? (shift ? ".Tensor_Scalar" : ".Scalar") : ".Tensor"),
                {n.input(0), n.arg("other")});
}

void register_pointwise_decompositions(DecompositionTable& t) {
  for (const char* b : {"bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
                        "bitwise_right_shift"}) {
    std::string base = b;
    t.add(base + ".Scalar_Tensor",
          [base](Graph& g, const Node& n) { return bitwise_scalar_tensor(g, n, base); });
  }
  const std::pair<const char*, const char*> operators[] = {
      {"__and__", "bitwise_and"}, {"__or__", "bitwise_or"}, {"__xor__", "bitwise_xor"},
      {"__lshift__", "bitwise_left_shift"}, {"__rshift__", "bitwise_right_shift"}};
  for (const auto& [dunder, op] : operators)
    for (const char* ov : {".Tensor", ".Scalar"}) {
      std::string target = op;
      t.add(std::string(dunder) + ov,
            [target](Graph& g, const Node& n) { return bitwise_operator(g, n, target); });
    }
  t.add("silu.default", silu_decomp);
  t.add("atan2.out", [](Graph& g, const Node& n) {
    return cast(g, g.call("atan2", {n.input(0), n.arg("other").node()}), n.dtype());
  });
  t.add("gelu.default", gelu_decomp);
  t.add("max.other", [](Graph& g, const Node& n) {
    return g.call("maximum", {n.input(0), n.arg("other").node()});
  });

  t.add("min.other", [](Graph& g, const Node& n) {
    return g.call("minimum", {n.input(0), n.arg("other").node()});
  });

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
  t.add("rsub.Tensor", rsub_tensor);

  t.add("rsub.Scalar", rsub_scalar);

  t.add("deg2rad.default", [](Graph& g, const Node& n) { return scale_by(g, n, kPi / 180); });

  t.add("rad2deg.default", [](Graph& g, const Node& n) { return scale_by(g, n, 180 / kPi); });

  t.add("frac.default", frac);

  t.add("sgn.default", sgn);

  t.add("sinc.default", sinc);

  t.add("angle.default", angle);

  t.add("ldexp.Tensor", ldexp);

  t.add("logit.default", logit);

  t.add("heaviside.default", heaviside);

  t.add("logaddexp.default", [](Graph& g, const Node& n) { return logaddexp(g, n, false); });

  t.add("logaddexp2.default", [](Graph& g, const Node& n) { return logaddexp(g, n, true); });

  t.add("xlogy.Tensor", [](Graph& g, const Node& n) { return xlogy(g, n, "log"); });

  t.add("fmax.default", [](Graph& g, const Node& n) { return fmax_fmin(g, n, true); });

  t.add("fmin.default", [](Graph& g, const Node& n) { return fmax_fmin(g, n, false); });

  t.add("round.decimals", round_decimals);
}

// silu decomposes into sigmoid and mul, all pointwise: the partitioner recomputes and fuses it as
// any pointwise op (core/graph/op_traits.h).
void register_pointwise_traits(OpTraitTable& t) { t.add_traits("silu", kTraitPointwiseComposite); }

}  // namespace stax
