#include "core/partition/partitioner.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/partition/partition_split.h"
#include "core/support/error.h"

namespace stax::partition {

std::string_view algorithm_name(FlowAlgorithm a) {
  return a == FlowAlgorithm::kEdmondsKarp ? "edmonds-karp" : "dinic";
}

std::string_view budget_outcome_name(BudgetOutcome o) {
  switch (o) {
    case BudgetOutcome::kFits: return "fits";
    case BudgetOutcome::kRecomputeMore: return "recompute-more";
    case BudgetOutcome::kRelaxedForcedSaves: return "relaxed-forced-saves";
  }
  return "";
}

RematNetwork build_remat_network(const RematAnalysis& a, const std::vector<int64_t>* capacities,
                                 bool include_heuristic_forced) {
  RematNetwork r;
  r.heuristic_forced = include_heuristic_forced;
  FlowNetwork& net = r.network;
  r.source = net.add_vertex("s");
  r.sink = net.add_vertex("t");
  const size_t nv = a.values.size();
  r.in_vertex.resize(nv);
  r.split_edge.resize(nv);
  for (size_t i = 0; i < nv; ++i) {
    const std::string& name = a.values[i].node->name();
    r.in_vertex[i] = net.add_vertex(name + "_in");
    net.add_vertex(name + "_out");
  }
  for (size_t i = 0; i < nv; ++i) {
    const ValueInfo& v = a.values[i];
    const int in = r.in_vertex[i];
    const bool heuristic = v.forced == ForceReason::kNearFar || v.forced == ForceReason::kLongChain;
    if (v.in_u() || v.forced == ForceReason::kUser || (heuristic && include_heuristic_forced))
      net.add_edge(r.source, in, kInfinite);
    r.split_edge[i] = net.add_edge(in, in + 1, capacities ? (*capacities)[i] : v.capacity);
    for (int u : v.inputs) net.add_edge(r.in_vertex[static_cast<size_t>(u)] + 1, in, kInfinite);
    if (v.in_b) net.add_edge(in + 1, r.sink, kInfinite);
  }
  return r;
}

namespace {

struct Choice {
  MinCut cut;
  std::vector<bool> save;  // per value
  int64_t bytes = 0;
  int64_t cost = 0;  // sum c(v)
};

Choice solve(const RematAnalysis& a, const RematNetwork& net, FlowAlgorithm algo) {
  Choice c;
  c.cut = max_flow_min_cut(net.network, net.source, net.sink, algo);
  c.save.assign(a.values.size(), false);
  if (!c.cut.finite) return c;
  for (size_t i = 0; i < a.values.size(); ++i) {
    const int v_in = net.in_vertex[i];
    if (c.cut.in_source_side(v_in) && !c.cut.in_source_side(v_in + 1)) {
      c.save[i] = true;
      c.bytes += a.values[i].bytes;
      c.cost = std::min(kInfinite, c.cost + a.values[i].capacity);
    }
  }
  return c;
}

// The cut of a save set found in another network with the same edges, restated in `net`.
MinCut restate(const RematNetwork& net, const Choice& c) {
  MinCut m;
  m.source_side = c.cut.source_side;
  m.max_flow = cut_capacity(net.network, m.source_side);
  for (int e = 0; e < net.network.num_edges(); ++e) {
    const FlowEdge& fe = net.network.edge(e);
    if (m.in_source_side(fe.from) && !m.in_source_side(fe.to)) m.cut_edges.push_back(e);
  }
  m.augmentations = c.cut.augmentations;
  m.phases = c.cut.phases;
  return m;
}

std::string names_of(const RematAnalysis& a, const std::vector<bool>& save) {
  std::string s;
  for (size_t i = 0; i < save.size(); ++i)
    if (save[i]) s += (s.empty() ? "" : ", ") + ("%" + a.values[i].node->name());
  return s.empty() ? "nothing" : s;
}

// Capacities of the parametric cut: (1 - alpha) c / c_max + alpha b / b_max, scaled so that the
// sum over all values stays below kInfinite. must_recompute values stay infinite.
std::vector<int64_t> parametric_capacities(const RematAnalysis& a, double alpha) {
  int64_t c_max = 1, b_max = 1;
  for (const ValueInfo& v : a.values) {
    if (v.must_recompute) continue;
    c_max = std::max(c_max, v.capacity);
    b_max = std::max(b_max, v.bytes);
  }
  const double scale =
      std::min(1e12, static_cast<double>(kInfinite / 4) / static_cast<double>(a.values.size() + 1));
  std::vector<int64_t> caps(a.values.size());
  for (size_t i = 0; i < a.values.size(); ++i) {
    const ValueInfo& v = a.values[i];
    if (v.must_recompute) {
      caps[i] = kInfinite;
      continue;
    }
    if (alpha >= 1.0) {
      caps[i] = v.bytes;  // exactly the bytes: the fewest-bytes cut
      continue;
    }
    const double w = (1.0 - alpha) * static_cast<double>(v.capacity) / static_cast<double>(c_max) +
                     alpha * static_cast<double>(v.bytes) / static_cast<double>(b_max);
    caps[i] = static_cast<int64_t>(std::floor(w * scale));
  }
  return caps;
}

// Finds a save set within the budget (see the header). `base` is the unconstrained min cut of
// net_full; returns the choice and fills the report; throws when infeasible.
Choice fit_budget(const RematAnalysis& a, const PartitionOptions& o, const Choice& base,
                  RematNetwork& net, BudgetReport& rep) {
  const int64_t budget = *o.memory_budget;
  rep.budget = budget;
  rep.min_cut_bytes = base.bytes;
  if (base.bytes <= budget) {
    rep.outcome = BudgetOutcome::kFits;
    rep.chosen_bytes = base.bytes;
    rep.chosen_cost = base.cost;
    return base;
  }
  int64_t fewest = -1;
  std::string fewest_names;
  for (bool heuristic_forced : {true, false}) {
    auto solve_at = [&](double alpha) {
      std::vector<int64_t> caps = parametric_capacities(a, alpha);
      RematNetwork pn = build_remat_network(a, &caps, heuristic_forced);
      ++rep.solves;
      return solve(a, pn, o.algorithm);
    };
    Choice lo_bytes = solve_at(1.0);
    if (!lo_bytes.cut.finite) continue;
    if (fewest < 0 || lo_bytes.bytes < fewest) {
      fewest = lo_bytes.bytes;
      fewest_names = names_of(a, lo_bytes.save);
    }
    if (lo_bytes.bytes > budget) continue;
    // Bisection on alpha: lo does not fit, hi fits.
    double lo = 0.0, hi = 1.0, best_alpha = 1.0;
    Choice best = std::move(lo_bytes);
    for (int step = 0; step < o.budget_search_steps && hi - lo > 1e-12; ++step) {
      const double mid = 0.5 * (lo + hi);
      Choice c = solve_at(mid);
      if (c.cut.finite && c.bytes <= budget) {
        hi = mid;
        if (c.cost < best.cost || (c.cost == best.cost && c.bytes < best.bytes)) {
          best = std::move(c);
          best_alpha = mid;
        }
      } else {
        lo = mid;
      }
    }
    rep.outcome =
        heuristic_forced ? BudgetOutcome::kRecomputeMore : BudgetOutcome::kRelaxedForcedSaves;
    rep.min_bytes = fewest;
    rep.chosen_bytes = best.bytes;
    rep.chosen_cost = best.cost;
    rep.alpha = best_alpha;
    if (!heuristic_forced) net = build_remat_network(a, nullptr, false);
    return best;
  }
  throw Error("partition", "memory_budget",
              "memory budget of " + std::to_string(budget) +
                  " bytes is infeasible: the min cut saves " + std::to_string(base.bytes) +
                  " bytes and the fewest bytes any feasible save set needs is " +
                  (fewest < 0 ? std::string("unknown (no finite cut)")
                              : std::to_string(fewest) + " (saving " + fewest_names + ")") +
                  "; values in U are never recomputed");
}

}  // namespace

PartitionResult partition_min_cut(const JointGraph& joint, const PartitionOptions& options) {
  if (options.memory_budget)
    check(*options.memory_budget >= 0, "partition", "memory_budget",
          "memory budget must be >= 0 bytes, got " + std::to_string(*options.memory_budget));
  PartitionResult r;
  r.algorithm = options.algorithm;
  r.analysis = analyze_remat(joint, options.policy);
  const RematAnalysis& a = r.analysis;
  r.network = build_remat_network(a);
  r.num_forward_outputs = joint.num_forward_outputs;
  for (const Node* t : a.tangents) r.tangents.push_back(t->name());

  Choice chosen = solve(a, r.network, options.algorithm);
  r.max_flow = chosen.cut.max_flow;
  if (!chosen.cut.finite) {
    // No finite cut: save every computed value the backward reads.
    r.save_all_fallback = true;
    std::string culprits;
    for (size_t i = 0; i < a.values.size(); ++i) {
      const ValueInfo& v = a.values[i];
      chosen.save[i] = v.in_b && !v.is_primal;
      if (chosen.save[i]) chosen.bytes += v.bytes;
      if (v.must_recompute && v.from_source())
        culprits += (culprits.empty() ? "%" : ", %") + v.node->name();
    }
    r.fallback_reason =
        "no finite cut: a value the backward needs can be neither saved nor recomputed" +
        (culprits.empty() ? std::string()
                          : " (must_recompute and not recomputable: " + culprits + ")") +
        "; saving all of B";
    r.cut = chosen.cut;
    if (options.memory_budget) {
      check(chosen.bytes <= *options.memory_budget, "partition", "memory_budget",
            "memory budget of " + std::to_string(*options.memory_budget) +
                " bytes is infeasible: there is no finite cut and saving all of B takes " +
                std::to_string(chosen.bytes) + " bytes");
      r.budget = BudgetReport{*options.memory_budget,
                              BudgetOutcome::kFits,
                              chosen.bytes,
                              chosen.bytes,
                              chosen.bytes,
                              0,
                              1.0,
                              0};
    }
  } else if (options.memory_budget) {
    BudgetReport rep;
    Choice fitted = fit_budget(a, options, chosen, r.network, rep);
    r.budget = rep;
    if (rep.outcome == BudgetOutcome::kFits) {
      r.cut = std::move(chosen.cut);
    } else {
      r.cut = restate(r.network, fitted);
      if (rep.outcome == BudgetOutcome::kRelaxedForcedSaves)  // the network lost s-edges
        r.max_flow = solve(a, r.network, options.algorithm).cut.max_flow;
      chosen = std::move(fitted);
    }
  } else {
    r.cut = chosen.cut;
  }

  SplitGraphs split = split_joint_graph(joint, a, chosen.save, r.network.heuristic_forced);
  r.forward = std::move(split.forward);
  r.backward = std::move(split.backward);
  r.saved = std::move(split.saved);
  r.saved_primals = std::move(split.saved_primals);
  r.recomputed = std::move(split.recomputed);
  for (const std::string& name : r.saved) {
    const ValueInfo* v = a.find(joint.graph.find(name));
    r.saved_bytes += v->bytes;
    r.saved_cost = std::min(kInfinite, r.saved_cost + v->capacity);
  }
  for (const std::string& name : r.saved_primals)
    r.saved_primal_bytes += a.find(joint.graph.find(name))->bytes;
  return r;
}

}  // namespace stax::partition
