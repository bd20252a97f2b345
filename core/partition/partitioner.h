// The min-cut rematerialization partitioner (seed §5.4-5.6, §5.8's memory_budget): splits a joint
// graph (core/autodiff/joint_graph.h) into a forward graph and a backward graph, choosing which
// forward values the forward saves and which the backward recomputes.
//
//   1. analyze_remat (remat_analysis.h): B, U, d, beta, c(v), forced saves, per forward value.
//   2. build_remat_network: Definition 5.2. Vertices s, t, then v_in, v_out per forward value in
//      graph order (named "<value>_in" / "<value>_out"). Edges per value, in graph order:
//        s -> v_in          kInfinite   v in U or forced
//        v_in -> v_out      c(v)        the split edge: cutting it saves v
//        u_out -> v_in      kInfinite   each forward input u of v
//        v_out -> t         kInfinite   v in B
//   3. max flow / min cut (maxflow.h; Dinic by default, Edmonds-Karp as the seed names). The saved
//      set is the values whose split edge crosses the cut. Both solvers return the minimal source
//      side (vertices reachable from s in the residual network), which does not depend on the
//      maximum flow found, so they agree on the saved set, not only on the cut value.
//   4. No finite cut (a value in B that can be neither saved nor recomputed: a must_recompute
//      value in U, or one reachable from U only through must_recompute values): save all of B
//      (save_all_fallback, with the reason).
//   5. memory_budget (bytes of saved values; primals excluded, the caller holds them anyway).
//      When the min cut saves more, a parametric (Lagrangian) min cut trades cost for bytes:
//      capacities w_a(v) = (1 - a) c(v) / c_max + a b(v) / b_max (scaled to int64), a in [0, 1].
//      Each a gives an exact minimizer of cost + lambda * bytes, so every cut found is
//      Pareto-optimal in (sum c, bytes); the saved bytes fall monotonically as a grows. a = 1
//      (capacities b(v)) gives the fewest bytes any feasible set needs; if even that exceeds the
//      budget, the heuristic forced saves (near-far, long-chain) are dropped and the search is
//      repeated; if it still does not fit, stax::Error names the minimum achievable bytes.
//      Otherwise a bisection on a finds the smallest a whose cut fits, and of all fitting cuts seen
//      the one of least sum c(v) is taken. U stays a hard constraint (U values are never
//      recomputed). The problem with a hard byte bound is NP-hard in general (§5.8; a knapsack
//      hides in it): a fitting set between two Pareto points of the hull can be missed.
//   6. The graphs (partition_split.h): the forward graph computes the forward outputs and returns
//      them followed by the saved values; the backward graph takes the saved primals, the saved
//      values and all tangents, recomputes what it needs of the rest (copies of the forward
//      nodes, each placed right before its first backward user) and returns the gradients.
//
// Example 5.1 (Table 5.1): c(matmul) = 9011, c(gelu) = trunc(2 * 8192 * 1.1^100); one s-t path
// s -> matmul_in -> matmul_out -> t; max flow 9011; saved = {matmul}, saved primals = {primals_1};
// the forward returns (sum_0, matmul); the backward is
// (primals_1, matmul, tangents_1) -> expand, gelu_backward, t, matmul_0 -> (matmul_0,):
// gelu's derivative GELU'(h) (erf and exp) is recomputed from h inside gelu_backward.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/autodiff/joint_graph.h"
#include "core/partition/maxflow.h"
#include "core/partition/remat_analysis.h"

namespace stax::partition {

struct PartitionOptions {
  FlowAlgorithm algorithm = FlowAlgorithm::kDinic;
  // Upper bound on the bytes of the saved values (the forward's extra outputs). Unset: no bound
  // (the seed's behaviour). Primals the backward reads are not counted.
  std::optional<int64_t> memory_budget;
  // Bisection steps of the budget search (each is one max-flow solve).
  int budget_search_steps = 40;
  RematPolicy policy;
};

// The network of Definition 5.2 for an analysis (layout in the header comment).
struct RematNetwork {
  FlowNetwork network;
  int source = 0;
  int sink = 1;
  std::vector<int> split_edge;   // per value (RematAnalysis::values index): its v_in -> v_out edge
  std::vector<int> in_vertex;    // per value: v_in (v_out = v_in + 1)
  bool heuristic_forced = true;  // whether near-far / long-chain forced values got s-edges
};

// Builds the network. `capacities` (one per value) replaces c(v) on the split edges when given.
// include_heuristic_forced = false leaves out the s-edges of the near-far and long-chain forced
// saves (U values and user must_save keep theirs).
RematNetwork build_remat_network(const RematAnalysis& analysis,
                                 const std::vector<int64_t>* capacities = nullptr,
                                 bool include_heuristic_forced = true);

enum class BudgetOutcome {
  kFits,               // the min cut fits; nothing changes
  kRecomputeMore,      // a parametric cut that saves fewer bytes (recomputes more) was chosen
  kRelaxedForcedSaves  // it fits only without the heuristic forced saves
};
std::string_view budget_outcome_name(BudgetOutcome o);

struct BudgetReport {
  int64_t budget = 0;
  BudgetOutcome outcome = BudgetOutcome::kFits;
  int64_t min_cut_bytes = 0;  // bytes the unconstrained min cut saves
  int64_t min_bytes = 0;      // fewest bytes any feasible save set needs (a = 1), if computed
  int64_t chosen_bytes = 0;
  int64_t chosen_cost = 0;  // sum c(v) of the chosen set (>= the max flow)
  double alpha = 0;         // the a of the chosen cut (1 = fewest bytes)
  int solves = 0;           // max-flow solves spent on the budget
};

struct PartitionResult {
  Graph forward;
  Graph backward;
  // Points into the joint graph's nodes: valid while that JointGraph lives unchanged.
  RematAnalysis analysis;
  RematNetwork network;  // Definition 5.2 with capacities c(v)
  // The cut of the chosen save set in `network`. Without a budget it is the solver's minimum cut
  // (with edge flows); when the budget picked another set, its source side and cut edges (no
  // flows). Not finite (empty) on save-all fallback.
  MinCut cut;
  int64_t max_flow = 0;  // of `network` (kInfinite on fallback)
  FlowAlgorithm algorithm = FlowAlgorithm::kDinic;
  bool save_all_fallback = false;
  std::string fallback_reason;
  // The calling convention (names are the joint graph's):
  //   forward:  primals (all, in order) -> forward outputs..., saved...
  //   backward: saved_primals..., saved..., tangents... -> gradients (one per JointGraph::wrt)
  std::vector<std::string> saved;          // computed forward values saved, in graph order
  std::vector<std::string> saved_primals;  // primals the backward reads, in graph order
  std::vector<std::string> recomputed;     // forward values the backward recomputes, its order
  std::vector<std::string> tangents;
  size_t num_forward_outputs = 0;
  int64_t saved_bytes = 0;
  int64_t saved_primal_bytes = 0;
  int64_t saved_cost = 0;  // sum c(v) over `saved` (= max_flow without budget or fallback)
  std::optional<BudgetReport> budget;
};

// The partitioner (the seed's partition_min_cut). Throws stax::Error("partition", ...) for a
// malformed joint graph (see analyze_remat), a negative budget, or an infeasible budget (the
// message names the minimum achievable bytes).
PartitionResult partition_min_cut(const JointGraph& joint, const PartitionOptions& options = {});

std::string_view algorithm_name(FlowAlgorithm a);  // "dinic", "edmonds-karp"

// Text report: one row per forward value (bytes, d, beta, c(v), U rules, forced, B, decision, as
// Table 5.1), every edge with capacity and flow, the max flow, the cut edges, the saved set, the
// saved primals, the recomputed values, budget and fallback lines.
std::string format_partition_report(const PartitionResult& result);
// Graphviz DOT of the network with the cut highlighted (maxflow.h's to_dot; Figure 5.1).
std::string partition_to_dot(const PartitionResult& result);

}  // namespace stax::partition
