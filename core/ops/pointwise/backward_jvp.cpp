// JVP rules of the backward ops VJP rules emit, so that a joint graph can itself be pushed
// forward (forward-over-reverse Hessian-vector products, §5.7). Each backward op is linear in
// the gradient g; its tangent is the op applied to ġ plus g times the derivative of the factor
// with respect to the saved value (second derivatives of gelu, silu, sigmoid, tanh).
#include "core/autodiff/jvp.h"
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

}  // namespace

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
    if (xd) {
      Node* x = c.in("self");
      Node* s = c.call("sigmoid", {x});
      Node* ds = c.mul(s, one_minus(c, s));
      Node* f = c.add(c.mul(x, one_minus(c, c.mul(s, Arg(2)))), Arg(2));
      tx = c.mul(c.mul(c.in("grad_output"), xd), c.mul(ds, f));
    }
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
