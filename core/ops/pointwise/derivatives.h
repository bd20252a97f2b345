// Derivative pieces shared by the pointwise ops' VJP and JVP rules (vjp.cpp, jvp.cpp,
// backward_jvp.cpp).
#pragma once

#include <vector>

#include "core/autodiff/emitter.h"

namespace stax::pointwise_derivatives {

// fmod(a, b) = a - trunc(a / b) * b: ∂/∂a = 1, ∂/∂b = -trunc(a / b).
inline Node* fmod_quotient(const Emitter& c, const Node& n) {
  const Arg& b = n.arg("other");
  Node* a = n.arg("self").node();
  Node* q = b.is_node() ? c.div(a, b.node()) : c.div(a, b);
  return c.call("trunc", {q});
}

// Sums the non-null terms (null when all are null).
inline Node* sum_terms(const Emitter& e, std::initializer_list<Node*> terms) {
  Node* r = nullptr;
  for (Node* t : terms)
    if (t) r = r ? e.add(r, t) : t;
  return r;
}

}  // namespace stax::pointwise_derivatives
