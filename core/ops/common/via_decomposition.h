// VJP / JVP rules of a Composite op derived from its decomposition (via_decomposition.cpp): the node is
// rebuilt over placeholders in a one-call graph, decomposed, differentiated with the base ops'
// rules and replayed into the graph being built. One formula serves forward, gradient, tangent.
#pragma once

#include "core/autodiff/jvp.h"
#include "core/autodiff/vjp.h"

namespace stax {

void vjp_via_decomposition(VjpContext& c);
Node* jvp_via_decomposition(JvpContext& c);

}  // namespace stax
