// Text and Graphviz forms of a partition (declared in partitioner.h).
#include <algorithm>
#include <sstream>

#include "core/partition/partitioner.h"

namespace stax::partition {
namespace {

std::string cap_str(int64_t c) { return c >= kInfinite ? "inf" : std::to_string(c); }

std::string join(const std::vector<std::string>& names) {
  if (names.empty()) return "(none)";
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

std::string pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

std::string decision(const PartitionResult& r, const ValueInfo& v) {
  const std::string& name = v.node->name();
  auto has = [&](const std::vector<std::string>& list) {
    return std::find(list.begin(), list.end(), name) != list.end();
  };
  if (v.is_primal) return has(r.saved_primals) ? "primal, passed to bw" : "primal";
  if (has(r.saved)) return "saved";
  if (has(r.recomputed)) return "recomputed";
  return "not needed";
}

std::string forced_str(const PartitionResult& r, const ValueInfo& v) {
  if (v.forced == ForceReason::kNone) return "-";
  std::string s(force_reason_name(v.forced));
  if (!r.network.heuristic_forced && v.forced != ForceReason::kUser) s += " (relaxed)";
  return s;
}

}  // namespace

std::string format_partition_report(const PartitionResult& r) {
  const RematAnalysis& a = r.analysis;
  const FlowNetwork& net = r.network.network;
  std::ostringstream os;
  os << "rematerialization network (Definition 5.2): " << net.num_vertices() << " vertices, "
     << net.num_edges() << " edges; max flow by " << algorithm_name(r.algorithm) << "\n";

  // One row per forward value (Table 5.1's columns plus the classification).
  size_t wname = 5;
  for (const ValueInfo& v : a.values) wname = std::max(wname, v.node->name().size());
  const std::vector<std::string> head = {"value", "bytes",  "d", "beta",    "c(v)",
                                         "U",     "forced", "B", "decision"};
  std::vector<std::vector<std::string>> rows;
  for (const ValueInfo& v : a.values)
    rows.push_back({v.node->name(), std::to_string(v.bytes), std::to_string(v.distance),
                    std::to_string(v.beta()), cap_str(v.capacity),
                    v.is_primal ? "-" : u_rules_str(v.u_rules), forced_str(r, v),
                    v.in_b ? "B" : "-", decision(r, v)});
  std::vector<size_t> width(head.size());
  for (size_t c = 0; c < head.size(); ++c) {
    width[c] = head[c].size();
    for (const auto& row : rows) width[c] = std::max(width[c], row[c].size());
  }
  auto print_row = [&](const std::vector<std::string>& row) {
    std::string line = "  ";
    for (size_t c = 0; c < row.size(); ++c)
      line += c + 1 < row.size() ? pad(row[c], width[c] + 2) : row[c];
    os << line << "\n";
  };
  print_row(head);
  for (const auto& row : rows) print_row(row);

  // Every edge with its capacity (and flow when the solver's flow is at hand).
  const bool flows = r.cut.edge_flow.size() == static_cast<size_t>(net.num_edges());
  std::vector<bool> is_cut(static_cast<size_t>(net.num_edges()), false);
  for (int e : r.cut.cut_edges) is_cut[static_cast<size_t>(e)] = true;
  size_t wedge = 0, wcap = 0;
  for (const FlowEdge& e : net.edges()) {
    wedge = std::max(wedge, net.display_name(e.from).size() + net.display_name(e.to).size() + 4);
    wcap = std::max(wcap, cap_str(e.capacity).size());
  }
  os << "edges (capacity" << (flows ? ", flow" : "") << "):\n";
  for (int e = 0; e < net.num_edges(); ++e) {
    const FlowEdge& fe = net.edge(e);
    std::string line =
        "  " + pad(net.display_name(fe.from) + " -> " + net.display_name(fe.to), wedge + 2) +
        pad(cap_str(fe.capacity), wcap);
    if (flows) line += "  flow " + cap_str(r.cut.edge_flow[static_cast<size_t>(e)]);
    if (is_cut[static_cast<size_t>(e)]) line += "  [cut]";
    while (!line.empty() && line.back() == ' ') line.pop_back();
    os << line << "\n";
  }

  if (r.save_all_fallback) {
    os << "max flow = inf: " << r.fallback_reason << "\n";
  } else {
    os << "max flow = min cut = " << r.max_flow << "\n";
    std::string cuts;
    for (int e : r.cut.cut_edges) {
      const FlowEdge& fe = net.edge(e);
      cuts +=
          (cuts.empty() ? "" : ", ") + net.display_name(fe.from) + " -> " + net.display_name(fe.to);
    }
    os << "cut edges: " << (cuts.empty() ? "(none)" : cuts) << "\n";
  }
  if (r.budget) {
    const BudgetReport& b = *r.budget;
    os << "memory budget: " << b.budget << " bytes: " << budget_outcome_name(b.outcome)
       << " (min cut saves " << b.min_cut_bytes << " bytes";
    if (b.outcome != BudgetOutcome::kFits)
      os << "; fewest possible " << b.min_bytes << "; chosen " << b.chosen_bytes
         << " bytes at cost " << cap_str(b.chosen_cost) << ", alpha " << b.alpha << ", " << b.solves
         << " solves";
    os << ")\n";
  }
  os << "saved (" << r.saved_bytes << " bytes, cost " << cap_str(r.saved_cost)
     << "): " << join(r.saved) << "\n";
  os << "saved primals (" << r.saved_primal_bytes << " bytes): " << join(r.saved_primals) << "\n";
  os << "recomputed in the backward: " << join(r.recomputed) << "\n";
  return os.str();
}

std::string partition_to_dot(const PartitionResult& r) {
  std::string title = "rematerialization network (Definition 5.2)";
  if (r.save_all_fallback) title += "\nsave-all fallback";
  if (r.budget && r.budget->outcome != BudgetOutcome::kFits)
    title += "\nmemory budget " + std::to_string(r.budget->budget) + " bytes: cut of cost " +
             cap_str(r.saved_cost) + " (unconstrained min cut " + cap_str(r.max_flow) + ")";
  return to_dot(r.network.network, r.cut, title);
}

}  // namespace stax::partition
