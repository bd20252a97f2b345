// Ops defined by one builder function: the builder emits the op's computation from base ops, and
// both its shape / dtype inference and its decomposition come from it, so they cannot disagree
// (the single-output counterpart of infer_by_expansion, core/graph/multi_output.h). Inference runs
// the builder in a scratch graph over placeholders with the call's tensor metadata, so every check
// of the ops it emits (the forward op of a *_backward op, the gradient's shape) is made when the
// node is created, and reported there.
#pragma once

#include <functional>

#include "core/graph/decompositions.h"
#include "core/graph/multi_output.h"
#include "core/graph/op_registry.h"

namespace stax {

// Emits the op's computation with g.call (at the graph's insert point) and returns its result.
using BuildFn = std::function<Node*(Graph& g, const ExpandCall& c)>;

InferFn infer_by_building(BuildFn fn);
DecompositionFn decomposition_by_building(BuildFn fn);

}  // namespace stax
