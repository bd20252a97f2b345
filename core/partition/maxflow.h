// Maximum flow / minimum s-t cut on a directed network with int64 capacities (seed §5.4).
//
// The rematerialization partitioner (§5.4-5.5) builds a FlowNetwork whose split edges
// v_in -> v_out carry c(v) = remat_capacity(...) and whose other edges are kInfinite; the minimum
// cut is the cheapest feasible save set (Proposition 5.1). Two solvers return the same cut value:
//   edmonds_karp  the algorithm the seed names: BFS shortest augmenting path, push the bottleneck;
//                 O(|V| |E|^2).
//   dinic         BFS level graph + blocking flow with a current-arc pointer; O(|V|^2 |E|), much
//                 faster in practice on the layered networks the partitioner builds.
// Both report the source side S of the minimum cut (vertices reachable from s in the residual
// network, Theorem 5.2) and the edges from S to its complement, in edge insertion order.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace stax::partition {

// The "infinite" capacity. Capacities >= kInfinite are stored as kInfinite. A flow that reaches
// kInfinite means no finite cut exists; both solvers stop there, so sums never overflow
// (INT64_MAX / 4 leaves room for adding two of them).
inline constexpr int64_t kInfinite = INT64_MAX / 4;

// c(v) = trunc(beta * b * 1.1^d), d clamped to [1, 100], beta = 1 if v is written to memory in the
// forward pass anyway, else 2 (seed §5.4). E.g. (8192, 1, true) -> 9011. The result is capped at
// kInfinite - 1 so that a split edge always stays cuttable. Throws stax::Error for bytes < 0.
int64_t remat_capacity(int64_t bytes, int distance, bool written_anyway);

struct FlowEdge {
  int from = 0;
  int to = 0;
  int64_t capacity = 0;  // in [0, kInfinite]
};

// A directed multigraph; vertices and edges are numbered in insertion order. Parallel edges and
// self-loops are allowed (a self-loop never carries flow).
class FlowNetwork {
 public:
  FlowNetwork() = default;
  explicit FlowNetwork(int num_vertices) { add_vertices(num_vertices); }

  // Returns the new vertex's index. Names are for printing and find_vertex only.
  int add_vertex(std::string name = "");
  // Adds n unnamed vertices; returns the index of the first.
  int add_vertices(int n);
  // Returns the new edge's index. Throws stax::Error for an unknown vertex or capacity < 0.
  int add_edge(int from, int to, int64_t capacity);

  int num_vertices() const { return static_cast<int>(names_.size()); }
  int num_edges() const { return static_cast<int>(edges_.size()); }
  const FlowEdge& edge(int e) const { return edges_[static_cast<size_t>(e)]; }
  const std::vector<FlowEdge>& edges() const { return edges_; }
  const std::string& name(int v) const { return names_[static_cast<size_t>(v)]; }
  // The name if one was given, else "v<index>".
  std::string display_name(int v) const;
  // The first vertex with this name, or -1.
  int find_vertex(std::string_view name) const;

 private:
  std::vector<std::string> names_;
  std::vector<FlowEdge> edges_;
};

struct MinCut {
  // False when the maximum flow reaches kInfinite: every s-t cut crosses an infinite edge (or the
  // finite capacities add up to at least kInfinite). The partitioner then saves everything.
  bool finite = true;
  int64_t max_flow = 0;  // kInfinite when !finite
  // source_side[v]: v is reachable from s in the final residual network (the S of Theorem 5.2).
  // Empty when !finite.
  std::vector<bool> source_side;
  // Indices of the edges from S to the complement (all saturated), ascending. Empty when !finite.
  std::vector<int> cut_edges;
  // Flow on each edge, by edge index (a maximum flow when finite).
  std::vector<int64_t> edge_flow;
  // Solver statistics: augmenting paths pushed, and BFS phases (EK: one per path, plus the last).
  int64_t augmentations = 0;
  int64_t phases = 0;

  bool in_source_side(int v) const {
    return v >= 0 && static_cast<size_t>(v) < source_side.size() && source_side[v];
  }
};

enum class FlowAlgorithm { kEdmondsKarp, kDinic };

// Both throw stax::Error when s or t is not a vertex or s == t.
MinCut edmonds_karp(const FlowNetwork& network, int s, int t);
MinCut dinic(const FlowNetwork& network, int s, int t);
MinCut max_flow_min_cut(const FlowNetwork& network, int s, int t,
                        FlowAlgorithm algorithm = FlowAlgorithm::kDinic);

// Sum of the capacities of the edges from {v : source_side[v]} to the rest, saturating at
// kInfinite. Used to check a cut independently of the solver.
int64_t cut_capacity(const FlowNetwork& network, const std::vector<bool>& source_side);

// Graphviz text of the network: S-side vertices filled, cut edges red and bold, edges labelled
// "flow/capacity" ("inf" for kInfinite). Pass an empty MinCut (or a !finite one) for no highlight.
std::string to_dot(const FlowNetwork& network, const MinCut& cut, std::string_view title);

}  // namespace stax::partition
