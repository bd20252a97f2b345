// Splitting a joint graph into the forward and backward graphs for a given save set (the last step
// of partitioner.h). Both results are ordinary graphs (Phase::None), keeping the joint graph's
// node names and metadata (and attrs: a random node keeps its rng_seed).
//
// forward:  every primal as a placeholder (in order), the [FW] call nodes that the forward
//           outputs or the saved values depend on (dead ones dropped), returning the forward
//           outputs followed by the saved values the backward actually reads.
// backward: placeholders = the primals it reads, the saved values it reads (each in graph order),
//           then every tangent (in order, used or not: a fixed calling convention); then the [BW]
//           nodes in graph order, each preceded by the copies of the not-saved forward values it
//           needs (recomputed, inputs first, each once); returning the gradients.
#pragma once

#include <string>
#include <vector>

#include "core/autodiff/joint_graph.h"
#include "core/partition/remat_analysis.h"

namespace stax::partition {

struct SplitGraphs {
  Graph forward;
  Graph backward;
  std::vector<std::string> saved;          // graph order
  std::vector<std::string> saved_primals;  // graph order
  std::vector<std::string> recomputed;     // backward order
};

// save[i] says whether analysis.values[i] is saved (ignored for primals). Throws
// stax::Error("partition", ...) when the backward would have to recompute a value in U or a
// forced value (the save set is not feasible, Definition 5.1); near-far and long-chain forced
// values may be recomputed when heuristic_forced is false (the budget relaxed them).
SplitGraphs split_joint_graph(const JointGraph& joint, const RematAnalysis& analysis,
                              const std::vector<bool>& save, bool heuristic_forced = true);

}  // namespace stax::partition
