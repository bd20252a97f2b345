// Emitter: the small vocabulary derivative rules (VJP and JVP) write graph nodes with. Every node
// it creates goes through the Graph builder (schema binding, defaults, TensorMeta inference) and
// gets the emitter's Phase ([BW] in joint graphs).
//
// The helpers spell the ops PyTorch's derivative formulas use: sum-to-shape for broadcasting
// (sum.dim_IntList over the broadcast dims + view), restoring reduced dims (unsqueeze + expand),
// zero tensors (zeros with the dtype kwarg), dtype conversion (to.dtype).
#pragma once

#include <string_view>
#include <vector>

#include "core/graph/graph.h"

namespace stax {

class Emitter {
 public:
  Emitter(Graph& g, Phase phase) : g_(g), phase_(phase) {}

  Graph& graph() const { return g_; }
  Phase phase() const { return phase_; }

  // g.call(target, args, kwargs) with the emitter's phase set on the new node.
  Node* call(std::string_view target, std::vector<Arg> args, Kwargs kwargs = {}) const;

  // ---- arithmetic (each is one node) ----
  Node* add(Node* a, Node* b) const;            // add.Tensor
  Node* sub(Node* a, Node* b) const;            // sub.Tensor
  Node* mul(Node* a, Node* b) const;            // mul.Tensor
  Node* mul(Node* a, const Arg& scalar) const;  // mul.Scalar
  Node* div(Node* a, Node* b) const;            // div.Tensor
  Node* div(Node* a, const Arg& scalar) const;  // div.Scalar
  Node* add(Node* a, const Arg& scalar) const;  // add.Scalar
  Node* neg(Node* a) const;                     // neg

  // ---- shapes ----
  // Sums `x` down to `shape` (the inverse of broadcasting `shape` to x's shape): sum.dim_IntList
  // over the leading extra dims and the dims where `shape` has 1 (keepdim=True), then a view when
  // the rank differs. Returns x when the shapes are equal.
  Node* sum_to_shape(Node* x, const Shape& shape) const;
  // Broadcasts x to `shape` with expand (x unchanged when it already has that shape).
  Node* expand_to(Node* x, const Shape& shape) const;
  // A reduction's result `x` (reduced over `dims` of a tensor of shape `in`, keepdim as given)
  // with the reduced dims restored as size-1 dims (unsqueeze, ascending); x itself when keepdim
  // or when x is 0-d (every dim reduced: a 0-d tensor broadcasts and expands as it is, which is
  // how Listing 5.2 expands %tangents_1 directly).
  Node* restore_reduced_dims(Node* x, const Shape& in, const std::vector<int64_t>& dims,
                             bool keepdim) const;
  Node* reshape(Node* x, const Shape& shape) const;  // x when it already has that shape
  // Swaps the last two dims: t for 2-D tensors (Listing 5.2 spells it t), transpose.int else.
  Node* mT(Node* x) const;

  // ---- values ----
  Node* zeros(const Shape& shape, DType dtype, const std::string& device = "cpu") const;
  Node* zeros_like(const Node* x) const;   // zeros of x's shape / dtype / device
  Node* cast(Node* x, DType dtype) const;  // to.dtype, or x when it already has that dtype

 private:
  Graph& g_;
  Phase phase_;
};

// The dims a reduction reduces, wrapped and sorted: the `dim` list (or int) of the call, all dims
// when it is absent or empty.
std::vector<int64_t> reduced_dims(const Arg& dim, int64_t rank);
// The number of elements a reduction over `dims` of `shape` combines.
int64_t reduced_numel(const Shape& shape, const std::vector<int64_t>& dims);

}  // namespace stax
