// VJP and JVP rules of the ops of core/graph/ops/more_ops.cpp (issue 14).
//
// * Base math ops: torch's derivative formulas (derivatives.yaml), written once as dy/dx (and
//   dy/da, dy/db for atan2, hypot, copysign) and used by both modes: x̄ = ḡ dy/dx, ẏ = ẋ dy/dx.
// * Composite ops: differentiated through their decomposition (via_decomposition.h), so the
//   gradient follows the formula the forward runs.
#include <cmath>
#include <functional>

#include "core/autodiff/jvp.h"
#include "core/ops/common/via_decomposition.h"
#include "core/autodiff/vjp.h"
#include "core/ops/registration.h"

namespace stax {
namespace {

constexpr double kPi = 3.14159265358979323846;
const double kTwoOverSqrtPi = 2 / std::sqrt(kPi);

// dy/dx of a unary op at input x (already in the output's dtype) and output y.
using Deriv = std::function<Node*(const Emitter& e, const Node& n, Node* x, Node* y)>;

Node* sq(const Emitter& e, Node* x) { return e.mul(x, x); }
Node* one_minus(const Emitter& e, Node* v) { return e.add(e.neg(v), Arg(1)); }
Node* where_zero(const Emitter& e, Node* x, double at_zero, Node* v) {
  return e.call("where.ScalarSelf", {e.call("eq.Scalar", {x, 0}), at_zero, v});
}
Node* safe(const Emitter& e, Node* x) {  // x with 1 where x == 0
  return e.call("where.ScalarSelf", {e.call("eq.Scalar", {x, 0}), 1.0, x});
}

const std::vector<std::pair<const char*, Deriv>>& unary_rules() {
  static const std::vector<std::pair<const char*, Deriv>> rules = {
      {"asin.default",
       [](const Emitter& e, const Node&, Node* x, Node*) {
         return e.call("rsqrt", {one_minus(e, sq(e, x))});
       }},
      {"acos.default",
       [](const Emitter& e, const Node&, Node* x, Node*) {
         return e.neg(e.call("rsqrt", {one_minus(e, sq(e, x))}));
       }},
      {"atan.default",
       [](const Emitter& e, const Node&, Node* x, Node*) {
         return e.call("reciprocal", {e.add(sq(e, x), Arg(1))});
       }},
      {"sinh.default",
       [](const Emitter& e, const Node&, Node* x, Node*) { return e.call("cosh", {x}); }},
      {"cosh.default",
       [](const Emitter& e, const Node&, Node* x, Node*) { return e.call("sinh", {x}); }},
      {"asinh.default",
       [](const Emitter& e, const Node&, Node* x, Node*) {
         return e.call("rsqrt", {e.add(sq(e, x), Arg(1))});
       }},
      {"acosh.default",
       [](const Emitter& e, const Node&, Node* x, Node*) {
         return e.call("rsqrt", {e.add(sq(e, x), Arg(-1))});
       }},
      {"atanh.default",
       [](const Emitter& e, const Node&, Node* x, Node*) {
         return e.call("reciprocal", {one_minus(e, sq(e, x))});
       }},
      {"erfc.default",
       [](const Emitter& e, const Node&, Node* x, Node*) {
         return e.mul(e.call("exp", {e.neg(sq(e, x))}), Arg(-kTwoOverSqrtPi));
       }},
      {"erfinv.default",
       [](const Emitter& e, const Node&, Node*, Node* y) {
         return e.mul(e.call("exp", {sq(e, y)}), Arg(std::sqrt(kPi) / 2));
       }},
      {"lgamma.default",
       [](const Emitter& e, const Node&, Node* x, Node*) { return e.call("digamma", {x}); }},
      {"digamma.default",
       [](const Emitter& e, const Node&, Node* x, Node*) {
         return e.call("polygamma", {Arg(1), x});
       }},
      {"polygamma.default",
       [](const Emitter& e, const Node& n, Node* x, Node*) {
         return e.call("polygamma", {Arg(n.arg("n").to_int() + 1), x});
       }},
      {"i0.default",
       [](const Emitter& e, const Node&, Node* x, Node*) { return e.call("special_i1", {x}); }},
      {"special_i0e.default",
       [](const Emitter& e, const Node&, Node* x, Node* y) {
         return e.sub(e.call("special_i1e", {x}), e.mul(e.call("sign", {x}), y));
       }},
      {"special_i1.default",
       [](const Emitter& e, const Node&, Node* x, Node* y) {
         Node* v = e.sub(e.call("i0", {x}), e.div(y, safe(e, x)));
         return where_zero(e, x, 0.5, v);
       }},
      {"special_i1e.default",
       [](const Emitter& e, const Node&, Node* x, Node* y) {
         Node* s = e.add(e.call("sign", {x}), e.call("reciprocal", {safe(e, x)}));
         Node* v = e.sub(e.call("special_i0e", {x}), e.mul(y, s));
         return where_zero(e, x, 0.5, v);
       }},
      {"special_ndtri.default",
       [](const Emitter& e, const Node&, Node*, Node* y) {
         return e.mul(e.call("exp", {e.mul(sq(e, y), Arg(0.5))}), Arg(std::sqrt(2 * kPi)));
       }},
      {"special_log_ndtr.default",
       [](const Emitter& e, const Node&, Node* x, Node* y) {
         Node* a = e.neg(e.add(y, e.mul(sq(e, x), Arg(0.5))));
         return e.mul(e.call("exp", {a}), Arg(1 / std::sqrt(2 * kPi)));
       }},
      // torch: -(1 + log x) everywhere (NaN for x < 0, inf at 0), not the where-branches'
      {"special_entr.default",
       [](const Emitter& e, const Node&, Node* x, Node*) {
         return e.neg(e.add(e.call("log", {x}), Arg(1)));
       }},
      {"special_erfcx.default",
       [](const Emitter& e, const Node&, Node* x, Node* y) {
         return e.add(e.mul(e.mul(x, y), Arg(2.0)), Arg(-kTwoOverSqrtPi));
       }},
  };
  return rules;
}

// Partial derivatives (d/da, d/db) of a binary op; null: no contribution.
using Partials = std::function<std::pair<Node*, Node*>(const Emitter& e, Node* a, Node* b,
                                                       Node* y)>;

const std::vector<std::pair<const char*, Partials>>& binary_rules() {
  static const std::vector<std::pair<const char*, Partials>> rules = {
      {"atan2.default",
       [](const Emitter& e, Node* a, Node* b, Node*) {
         Node* r = e.add(sq(e, a), sq(e, b));
         return std::make_pair(e.div(b, r), e.neg(e.div(a, r)));
       }},
      {"hypot.default",
       [](const Emitter& e, Node* a, Node* b, Node* y) {
         return std::make_pair(e.div(a, y), e.div(b, y));
       }},
      {"copysign.Tensor",
       [](const Emitter& e, Node* a, Node*, Node* y) {
         return std::make_pair(where_zero(e, a, 0.0, e.div(y, safe(e, a))),
                               static_cast<Node*>(nullptr));
       }},
      {"copysign.Scalar",
       [](const Emitter& e, Node* a, Node*, Node* y) {
         return std::make_pair(where_zero(e, a, 0.0, e.div(y, safe(e, a))),
                               static_cast<Node*>(nullptr));
       }},
  };
  return rules;
}

Node* first_input(const Node& n) { return n.input_nodes().back(); }

// ---- the Composite ops differentiated through their decomposition
const char* const kViaDecomposition[] = {
    "rsub.Tensor", "rsub.Scalar", "deg2rad.default", "rad2deg.default", "frac.default",
    "sgn.default", "sinc.default", "logit.default", "logaddexp.default",
    "logaddexp2.default", "xlogy.Tensor", "special_xlog1py.default", "fmax.default",
    "fmin.default", "round.decimals", "mvlgamma.default", "celu.default", "hardshrink.default",
    "softshrink.default", "threshold.default", "glu.default", "prelu.default",
    "huber_loss.default", "soft_margin_loss.default", "binary_cross_entropy.default",
    "dot.default", "vdot.default", "mv.default", "addmv.default", "addr.default",
    "addbmm.default", "dist.default", "nansum.default", "logcumsumexp.default", "trace.default",
    "diagonal.default", "diag.default", "diag_embed.default", "take.default",
    "index_fill.int_Scalar", "index_fill.int_Tensor", "rot90.default", "pixel_shuffle.default",
    "pixel_unshuffle.default", "narrow_copy.default", "_adaptive_avg_pool2d.default",
    "_adaptive_avg_pool3d.default", "max_unpool2d.default", "max_unpool3d.default",
    "upsample_bilinear2d.vec", "upsample_nearest2d.vec", "upsample_nearest1d.vec",
    "linalg_cross.default", "median.default", "nanmedian.default", "index_copy.default",
    "put.default", "masked_scatter.default", "renorm.default", "unfold.default",
    "_cdist_forward.default", "_pdist_forward.default", "block_diag.default",
    "slice_scatter.default", "select_scatter.default", "index_reduce.default",
    "multi_margin_loss.default"};

}  // namespace

void register_more_vjps(VjpTable& t) {
  for (const auto& [op, d] : unary_rules()) {
    Deriv deriv = d;
    t.add(op, [deriv](VjpContext& c) {
      Node* x0 = first_input(*c.node());
      if (!c.needs(x0)) return;
      Node* x = c.cast(x0, c.out()->dtype());
      c.give(x0, c.cast(c.mul(c.grad(), deriv(c, *c.node(), x, c.out())), x0->dtype()));
    });
  }
  for (const auto& [op, p] : binary_rules()) {
    Partials partials = p;
    t.add(op, [partials](VjpContext& c) {
      Node* a0 = c.in("self");
      const Arg& other = c.arg("other");
      Node* b0 = other.is_node() ? other.node() : nullptr;
      bool na = c.needs(a0), nb = b0 && c.needs(b0);
      if (!na && !nb) return;
      DType dt = c.out()->dtype();
      Node* a = c.cast(a0, dt);
      Node* b = b0 ? c.cast(b0, dt) : c.call("full_like", {c.out(), other});
      auto [da, db] = partials(c, a, b, c.out());
      if (na && da) c.give(a0, c.cast(c.sum_to_shape(c.mul(c.grad(), da), a0->shape()), a0->dtype()));
      if (nb && db) c.give(b0, c.cast(c.sum_to_shape(c.mul(c.grad(), db), b0->shape()), b0->dtype()));
    });
  }
  for (const char* op : kViaDecomposition) t.add(op, vjp_via_decomposition);
}

void register_more_jvps(JvpTable& t) {
  for (const auto& [op, d] : unary_rules()) {
    Deriv deriv = d;
    t.add(op, [deriv](JvpContext& c) -> Node* {
      Node* x0 = first_input(*c.node());
      Node* tx = c.tangent(x0);
      if (!tx) return nullptr;
      DType dt = c.out()->dtype();
      return c.mul(c.cast(tx, dt), deriv(c, *c.node(), c.cast(x0, dt), c.out()));
    });
  }
  for (const auto& [op, p] : binary_rules()) {
    Partials partials = p;
    t.add(op, [partials](JvpContext& c) -> Node* {
      Node* a0 = c.in("self");
      const Arg& other = c.arg("other");
      Node* b0 = other.is_node() ? other.node() : nullptr;
      Node* ta = c.tangent(a0);
      Node* tb = b0 ? c.tangent(b0) : nullptr;
      if (!ta && !tb) return nullptr;
      DType dt = c.out()->dtype();
      Node* a = c.cast(a0, dt);
      Node* b = b0 ? c.cast(b0, dt) : c.call("full_like", {c.out(), other});
      auto [da, db] = partials(c, a, b, c.out());
      Node* r = nullptr;
      if (ta && da) r = c.mul(c.cast(ta, dt), da);
      if (tb && db) {
        Node* v = c.mul(c.cast(tb, dt), db);
        r = r ? c.add(r, v) : v;
      }
      return r ? c.expand_to(r, c.out()->shape()) : c.zeros_like(c.out());
    });
  }
  for (const char* op : kViaDecomposition) t.add(op, jvp_via_decomposition);
}

}  // namespace stax
