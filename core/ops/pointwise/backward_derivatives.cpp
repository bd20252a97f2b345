// JVP and VJP rules of the backward ops VJP rules emit, so that a joint graph can itself be
// pushed forward (forward-over-reverse Hessian-vector products, §5.7) or differentiated again
// (double backward: the VJP of glu_backward, say, meets sigmoid_backward). Each backward op is
// linear in the gradient g: its tangent is the op applied to ġ plus g times the derivative of
// the factor with respect to the saved value (second derivatives of gelu, silu, sigmoid, tanh);
// its cotangent w.r.t. g is the op applied to the upstream ḡ (the pointwise ones and softmax's
// are self-adjoint), and w.r.t. the saved value ḡ g times that same derivative.
#include <functional>
#include <vector>

#include "core/autodiff/jvp.h"
#include "core/autodiff/vjp.h"
#include "core/graph/op_registry.h"
#include "core/ops/pointwise/derivatives.h"
#include "core/ops/registration.h"

namespace stax {
namespace {

using namespace pointwise_derivatives;  // NOLINT

constexpr double kInvSqrt2Pi = 0.3989422804014327;   // 1 / sqrt(2 pi)
constexpr double kSqrt2OverPi = 0.7978845608028654;  // sqrt(2 / pi)
constexpr double kGeluC = 0.044715;

// 1 - v
Node* one_minus(const Emitter& e, Node* v) { return e.add(e.neg(v), Arg(1)); }

// gelu''(x): exact: φ(x) (2 - x²). tanh approximation, with u = k (x + c x³), T = tanh(u):
// (1 - T²) (u' + x/2 (u'' - 2 T u'²)), u' = k (1 + 3 c x²), u'' = 6 k c x.
Node* gelu_second_derivative(const Emitter& e, Node* x, const std::string& approximate) {
  Node* x2 = e.mul(x, x);
  if (approximate == "tanh") {
    Node* u = e.mul(e.add(x, e.mul(e.mul(x, x2), Arg(kGeluC))), Arg(kSqrt2OverPi));
    Node* th = e.call("tanh", {u});
    Node* du = e.mul(e.add(e.mul(x2, Arg(3 * kGeluC)), Arg(1)), Arg(kSqrt2OverPi));
    Node* ddu = e.mul(x, Arg(6 * kSqrt2OverPi * kGeluC));
    Node* inner = e.sub(ddu, e.mul(e.mul(th, e.mul(du, du)), Arg(2)));
    Node* bracket = e.add(du, e.mul(e.mul(x, inner), Arg(0.5)));
    return e.mul(one_minus(e, e.mul(th, th)), bracket);
  }
  Node* pdf = e.mul(e.call("exp", {e.mul(x2, Arg(-0.5))}), Arg(kInvSqrt2Pi));
  return e.mul(pdf, e.add(e.neg(x2), Arg(2)));
}

// op(ġ, saved, extra...) for a backward op linear in its first argument.
Node* grad_term(JvpContext& c, const char* grad_param) {
  Node* gd = c.tangent(grad_param);
  if (!gd) return nullptr;
  std::vector<Arg> args = c.node()->args();
  args[0] = Arg(gd);
  return c.call(c.node()->op()->name(), std::move(args), c.node()->kwargs());
}

// silu''(x) = s (1 - s) (2 + x (1 - 2 s)), s = sigmoid(x)
Node* silu_second_derivative(const Emitter& e, Node* x) {
  Node* s = e.call("sigmoid", {x});
  Node* ds = e.mul(s, one_minus(e, s));
  return e.mul(ds, e.add(e.mul(x, one_minus(e, e.mul(s, Arg(2)))), Arg(2)));
}

// The VJP of a pointwise backward op op(g, v, extra...) = g f'(v): ḡ -> g as op(ḡ, v, extra...);
// ḡ -> v as ḡ g f''(v) (`second` gives f''(v); null: piecewise constant in v).
VjpFn pointwise_backward_vjp(const char* grad_param, const char* saved,
                             std::function<Node*(VjpContext&, Node*)> second) {
  return [=](VjpContext& c) {
    if (c.needs(grad_param)) {
      std::vector<Arg> args = c.node()->args();
      args[0] = Arg(c.grad());
      c.give(grad_param, c.call(c.node()->op()->name(), std::move(args), c.node()->kwargs()));
    }
    if (second && c.needs(saved))
      c.give(saved, c.mul(c.mul(c.grad(), c.in(grad_param)), second(c, c.in(saved))));
  };
}

}  // namespace

void register_backward_vjps(VjpTable& t) {
  t.add("gelu_backward.default", pointwise_backward_vjp("grad_output", "self", [](VjpContext& c, Node* x) {
          return gelu_second_derivative(c, x, c.arg("approximate").str());
        }));
  t.add("threshold_backward.default", pointwise_backward_vjp("grad_output", "self", nullptr));
  t.add("sigmoid_backward.default", pointwise_backward_vjp("grad_output", "output", [](VjpContext& c, Node* y) {
          return one_minus(c, c.mul(y, Arg(2)));  // d/dy y (1 - y)
        }));
  t.add("tanh_backward.default", pointwise_backward_vjp("grad_output", "output", [](VjpContext& c, Node* y) {
          return c.mul(y, Arg(-2));  // d/dy (1 - y²)
        }));
  t.add("silu_backward.default", pointwise_backward_vjp("grad_output", "self", [](VjpContext& c, Node* x) {
          return silu_second_derivative(c, x);
        }));
  // y (g - Σ g y): ḡ -> g: y (ḡ - Σ ḡ y) (the op itself); ḡ -> y: ḡ (g - Σ g y) - g Σ ḡ y
  t.add("_softmax_backward_data.default", [](VjpContext& c) {
    Node* g = c.in("grad_output");
    Node* y = c.in("output");
    Arg dims(std::vector<int64_t>{c.arg("dim").to_int()});
    Node* gb = c.grad();
    if (c.needs("grad_output")) {
      std::vector<Arg> args = c.node()->args();
      args[0] = Arg(gb);
      c.give("grad_output", c.call("_softmax_backward_data", std::move(args), c.node()->kwargs()));
    }
    if (c.needs("output")) {
      Node* gy = c.call("sum.dim_IntList", {c.mul(g, y), dims, true});
      Node* gby = c.call("sum.dim_IntList", {c.mul(gb, y), dims, true});
      c.give("output", c.sub(c.mul(gb, c.sub(g, gy)), c.mul(g, gby)));
    }
  });
  // g - exp(y) Σ g: ḡ -> g: ḡ - Σ ḡ exp(y); ḡ -> y: -ḡ exp(y) Σ g
  t.add("_log_softmax_backward_data.default", [](VjpContext& c) {
    Node* g = c.in("grad_output");
    Node* ey = c.call("exp", {c.in("output")});
    Arg dims(std::vector<int64_t>{c.arg("dim").to_int()});
    Node* gb = c.grad();
    if (c.needs("grad_output"))
      c.give("grad_output", c.sub(gb, c.call("sum.dim_IntList", {c.mul(gb, ey), dims, true})));
    if (c.needs("output"))
      c.give("output", c.neg(c.mul(c.mul(gb, ey), c.call("sum.dim_IntList", {g, dims, true}))));
  });
}

void register_backward_jvps(JvpTable& t) {
  // g gelu'(x): ġ gelu'(x) + g ẋ gelu''(x)
  t.add("gelu_backward.default", [](JvpContext& c) {
    Node* xd = c.tangent("self");
    Node* tx = nullptr;
    if (xd) {
      Node* f2 = gelu_second_derivative(c, c.in("self"), c.arg("approximate").str());
      tx = c.mul(c.mul(c.in("grad_output"), xd), f2);
    }
    return sum_terms(c, {grad_term(c, "grad_output"), tx});
  });
  // g [x > threshold]: piecewise constant in x
  t.add("threshold_backward.default", [](JvpContext& c) { return grad_term(c, "grad_output"); });
  // g y (1 - y): ġ y (1 - y) + g ẏ (1 - 2 y)
  t.add("sigmoid_backward.default", [](JvpContext& c) {
    Node* yd = c.tangent("output");
    Node* ty = nullptr;
    if (yd) {
      Node* f = one_minus(c, c.mul(c.in("output"), Arg(2)));
      ty = c.mul(c.mul(c.in("grad_output"), yd), f);
    }
    return sum_terms(c, {grad_term(c, "grad_output"), ty});
  });
  // g (1 - y²): ġ (1 - y²) - 2 g ẏ y
  t.add("tanh_backward.default", [](JvpContext& c) {
    Node* yd = c.tangent("output");
    Node* ty = nullptr;
    if (yd) ty = c.mul(c.mul(c.in("grad_output"), yd), c.mul(c.in("output"), Arg(-2)));
    return sum_terms(c, {grad_term(c, "grad_output"), ty});
  });
  // g s (1 + x (1 - s)), s = sigmoid(x): its x-derivative is s (1 - s) (2 + x (1 - 2 s))
  t.add("silu_backward.default", [](JvpContext& c) {
    Node* xd = c.tangent("self");
    Node* tx = nullptr;
    if (xd) tx = c.mul(c.mul(c.in("grad_output"), xd), silu_second_derivative(c, c.in("self")));
    return sum_terms(c, {grad_term(c, "grad_output"), tx});
  });
  // y (g - Σ g y): ġ-term, plus ẏ (g - Σ g y) - y Σ g ẏ
  t.add("_softmax_backward_data.default", [](JvpContext& c) {
    Node* yd = c.tangent("output");
    Node* ty = nullptr;
    if (yd) {
      Node* g = c.in("grad_output");
      Node* y = c.in("output");
      Arg dims(std::vector<int64_t>{c.arg("dim").to_int()});
      Node* gy = c.call("sum.dim_IntList", {c.mul(g, y), dims, true});
      Node* gyd = c.call("sum.dim_IntList", {c.mul(g, yd), dims, true});
      ty = c.sub(c.mul(yd, c.sub(g, gy)), c.mul(y, gyd));
    }
    return sum_terms(c, {grad_term(c, "grad_output"), ty});
  });
  // g - exp(y) Σ g: ġ-term, plus -exp(y) ẏ Σ g
  t.add("_log_softmax_backward_data.default", [](JvpContext& c) {
    Node* yd = c.tangent("output");
    Node* ty = nullptr;
    if (yd) {
      Node* g = c.in("grad_output");
      Arg dims(std::vector<int64_t>{c.arg("dim").to_int()});
      Node* sg = c.call("sum.dim_IntList", {g, dims, true});
      ty = c.neg(c.mul(c.mul(c.call("exp", {c.in("output")}), yd), sg));
    }
    return sum_terms(c, {grad_term(c, "grad_output"), ty});
  });
}

}  // namespace stax
