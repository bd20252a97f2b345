// The joint graph (seed §5.3, Algorithm 5.1): one graph holding the forward computation and its
// reverse-mode backward, which reads the forward's values directly. The partitioner (§5.4) later
// splits it into a forward and a backward graph.
//
//   placeholders  the forward's placeholders (the primals: parameters are placeholders already),
//                 then one tangents_i per differentiable output ([BW]), in output order
//   [FW] nodes    the forward's nodes, unchanged (names, args, metadata)
//   [BW] nodes    the VJP rules' nodes (core/autodiff/vjp.h), emitted visiting the forward nodes in
//                 reverse topological order; a value with several users sums its adjoint
//                 contributions with add.Tensor, in the order the users are visited
//   return        [FW]: the forward's outputs, then the gradient of each `wrt` placeholder
//
// A differentiable output is a floating-point output that depends on a `wrt` placeholder through
// differentiable ops and is no input's new value (Graph::output_updates: batch norm's running
// statistics, an add_ on an input; they are forward outputs without a tangent, and the joint
// graph's return does not mark them). Only values on such paths get adjoints, and rules emit nodes only for inputs
// that need a gradient, so nothing computes a gradient nobody asked for (Listing 5.2 has no node
// for x̄); backward nodes left without users are removed at the end. A `wrt` placeholder the
// outputs do not depend on gets a zeros node as its gradient.
//
// Random ops (category Random) get Node::attrs["rng_seed"] (their name, unless set already): the
// interpreter seeds them from it, so a recomputation of such a node elsewhere (the partitioner's
// backward graph) draws the same numbers as the forward did (Algorithm 5.1, line 5). dropout's
// backward is a dropout of the gradient carrying the forward node's rng_seed.
#pragma once

#include <string>
#include <vector>

#include "core/autodiff/vjp.h"
#include "core/graph/graph.h"

namespace stax {

struct JointGraph {
  Graph graph;
  std::vector<std::string> primals;   // the forward's placeholders, in order
  std::vector<std::string> tangents;  // tangents_1, tangents_2, ... in order
  // Per forward output: the index into `tangents` of its tangent, or -1 when the output is not
  // differentiable (it then has no tangent placeholder).
  std::vector<int> output_tangent;
  size_t num_forward_outputs = 0;
  // The gradient outputs follow the forward outputs, one per entry of `wrt`, in this order.
  std::vector<std::string> wrt;
};

// Builds the joint graph of `forward` with the gradients of the placeholders named in `wrt`
// (each must be a floating-point placeholder, named once). Throws stax::Error("autodiff", ...)
// naming the node when an op on a differentiable path has no VJP rule, when a rule's gradient has
// the wrong shape, or when `wrt` names something else than a floating-point placeholder.
JointGraph build_joint_graph(const Graph& forward, const std::vector<std::string>& wrt,
                             const VjpTable& rules = default_vjp_table());

}  // namespace stax
