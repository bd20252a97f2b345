// The reduction argument of the losses' decompositions (0 none, 1 mean, 2 sum).
#pragma once

#include "core/graph/graph.h"
#include "core/ops/nn/params.h"

namespace stax::losses {

// ---- losses --------------------------------------------------------------------------------

inline Node* reduce_loss(Graph& g, Node* l, int64_t reduction) {
  if (reduction == nn::kReductionSum) return g.call("sum.default", {l});
  if (reduction == nn::kReductionMean) return g.call("mean.default", {l});
  return l;
}

}  // namespace stax::losses
