// Derivative rules shared by the nn ops' VJP and JVP tables (vjp.cpp, jvp.cpp):
// differentiation of a Composite op through its decomposition (core/graph/decompositions.h).
#pragma once

#include <string>
#include <vector>

#include "core/autodiff/jvp.h"
#include "core/autodiff/vjp.h"

namespace stax {

// VJP of a Composite node: emits its decomposition (a recomputation, in the rule's phase) and
// runs the VJP rules of the emitted nodes in reverse order, seeded with the node's gradient; the
// contributions that reach the node's inputs are given to them. Throws stax::Error("autodiff",
// "%node", ...) when an emitted op has no VJP rule.
void vjp_by_decomposition(VjpContext& c);

// Gives each random op among `fresh` (nodes a decomposition of `n` emitted) the rng_seed key
// decompose() would: n's rng_seed attr, else n's name. So the recomputed decomposition in a
// derivative draws the numbers of n's forward (sdpa's dropout mask), not a stream of its own.
void key_random_nodes(const Node& n, const std::vector<Node*>& fresh);

// JVP of a Composite node: emits its decomposition after the node and propagates tangents through
// the emitted nodes with the JVP rules; returns the tangent of the decomposition's result.
Node* jvp_by_decomposition(JvpContext& c);

// The ops of register_nn_decompositions (the nn ops differentiated through their decomposition).
std::vector<std::string> nn_decomposed_ops();

// The nn.functional ops composed from other ops (functional_decompositions.cpp): their kernels
// run and their VJP / JVP rules differentiate their decomposition.
std::vector<std::string> nn_functional_ops();

}  // namespace stax
