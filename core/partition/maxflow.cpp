#include "core/partition/maxflow.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <sstream>

#include "core/support/error.h"

namespace stax::partition {

int64_t remat_capacity(int64_t bytes, int distance, bool written_anyway) {
  check(bytes >= 0, "partition", "",
        "remat_capacity: negative byte count " + std::to_string(bytes));
  const int d = std::clamp(distance, 1, 100);
  const double beta = written_anyway ? 1.0 : 2.0;
  const double value = beta * static_cast<double>(bytes) * std::pow(1.1, d);
  if (value >= static_cast<double>(kInfinite - 1)) return kInfinite - 1;
  return static_cast<int64_t>(value);  // truncation toward zero, as the seed's 9011.2 -> 9011
}

// ---------------------------------------------------------------------------------------------
// FlowNetwork

int FlowNetwork::add_vertex(std::string name) {
  names_.push_back(std::move(name));
  return num_vertices() - 1;
}

int FlowNetwork::add_vertices(int n) {
  assert(n >= 0);
  const int first = num_vertices();
  names_.resize(names_.size() + static_cast<size_t>(n));
  return first;
}

int FlowNetwork::add_edge(int from, int to, int64_t capacity) {
  check(from >= 0 && from < num_vertices() && to >= 0 && to < num_vertices(), "partition", "",
        "flow network: edge " + std::to_string(from) + " -> " + std::to_string(to) +
            " names a vertex outside [0, " + std::to_string(num_vertices()) + ")");
  check(capacity >= 0, "partition", "",
        "flow network: negative capacity " + std::to_string(capacity) + " on edge " +
            display_name(from) + " -> " + display_name(to));
  edges_.push_back({from, to, std::min(capacity, kInfinite)});
  return num_edges() - 1;
}

std::string FlowNetwork::display_name(int v) const {
  const std::string& n = name(v);
  return n.empty() ? "v" + std::to_string(v) : n;
}

int FlowNetwork::find_vertex(std::string_view name) const {
  for (int v = 0; v < num_vertices(); ++v)
    if (names_[static_cast<size_t>(v)] == name) return v;
  return -1;
}

// ---------------------------------------------------------------------------------------------
// Residual network. Edge e becomes a forward arc (residual = capacity) and a reverse arc
// (residual 0). Arcs are stored grouped by tail vertex (CSR), so scanning a vertex's arcs reads
// memory sequentially; within a vertex they follow edge insertion order (for edge e, the forward
// arc before the reverse one), so every search is deterministic.

namespace {

struct Arc {
  int to = 0;
  int rev = 0;  // index of the paired arc
  int64_t residual = 0;
};

struct Residual {
  int n = 0;
  std::vector<int> first;        // vertex -> first arc index (size n + 1)
  std::vector<Arc> arcs;         // grouped by tail vertex
  std::vector<int> forward_arc;  // edge -> index of its forward arc

  explicit Residual(const FlowNetwork& net) : n(net.num_vertices()) {
    const size_t m = static_cast<size_t>(net.num_edges());
    first.assign(static_cast<size_t>(n) + 1, 0);
    for (const FlowEdge& fe : net.edges()) {
      ++first[static_cast<size_t>(fe.from) + 1];
      ++first[static_cast<size_t>(fe.to) + 1];
    }
    for (int v = 0; v < n; ++v) first[v + 1] += first[v];
    arcs.resize(2 * m);
    forward_arc.resize(m);
    std::vector<int> pos(first.begin(), first.end() - 1);
    for (size_t e = 0; e < m; ++e) {
      const FlowEdge& fe = net.edges()[e];
      const int a = pos[fe.from]++;
      const int b = pos[fe.to]++;
      arcs[static_cast<size_t>(a)] = {fe.to, b, fe.capacity};
      arcs[static_cast<size_t>(b)] = {fe.from, a, 0};
      forward_arc[e] = a;
    }
  }

  int tail(int arc) const { return arcs[static_cast<size_t>(arcs[arc].rev)].to; }
  int64_t residual(int arc) const { return arcs[static_cast<size_t>(arc)].residual; }

  void push(int arc, int64_t f) {
    Arc& a = arcs[static_cast<size_t>(arc)];
    a.residual -= f;
    arcs[static_cast<size_t>(a.rev)].residual += f;
  }

  // BFS distances from s over arcs with positive residual; -1 = unreachable. When parent_arc is
  // given it receives the arc each vertex was first reached by, and the search stops at t.
  std::vector<int> bfs(int s, int t, std::vector<int>* parent_arc) const {
    std::vector<int> dist(static_cast<size_t>(n), -1);
    if (parent_arc) parent_arc->assign(static_cast<size_t>(n), -1);
    std::vector<int> queue;
    queue.reserve(static_cast<size_t>(n));
    dist[s] = 0;
    queue.push_back(s);
    for (size_t qi = 0; qi < queue.size(); ++qi) {
      const int v = queue[qi];
      if (parent_arc && v == t) break;
      for (int i = first[v]; i < first[v + 1]; ++i) {
        const Arc& a = arcs[static_cast<size_t>(i)];
        if (a.residual > 0 && dist[a.to] < 0) {
          dist[a.to] = dist[v] + 1;
          if (parent_arc) (*parent_arc)[a.to] = i;
          queue.push_back(a.to);
        }
      }
    }
    return dist;
  }
};

void check_terminals(const FlowNetwork& net, int s, int t) {
  const int n = net.num_vertices();
  check(s >= 0 && s < n && t >= 0 && t < n, "partition", "",
        "max flow: source " + std::to_string(s) + " or sink " + std::to_string(t) +
            " is not a vertex of a network with " + std::to_string(n) + " vertices");
  check(s != t, "partition", "", "max flow: source and sink are the same vertex");
}

MinCut finish(const FlowNetwork& net, const Residual& r, int s, int64_t flow, MinCut result) {
  const size_t m = static_cast<size_t>(net.num_edges());
  result.max_flow = flow;
  result.edge_flow.resize(m);
  for (size_t e = 0; e < m; ++e)
    result.edge_flow[e] = net.edges()[e].capacity - r.residual(r.forward_arc[e]);
  if (flow >= kInfinite) {
    result.finite = false;
    result.max_flow = kInfinite;
    return result;
  }
  const std::vector<int> dist = r.bfs(s, -1, nullptr);
  result.source_side.resize(static_cast<size_t>(net.num_vertices()));
  for (int v = 0; v < net.num_vertices(); ++v) result.source_side[v] = dist[v] >= 0;
  for (size_t e = 0; e < m; ++e) {
    const FlowEdge& fe = net.edges()[e];
    if (result.source_side[fe.from] && !result.source_side[fe.to]) {
      assert(r.residual(r.forward_arc[e]) == 0 && "a cut edge is saturated");
      result.cut_edges.push_back(static_cast<int>(e));
    }
  }
  assert(cut_capacity(net, result.source_side) == flow && "max-flow min-cut");
  return result;
}

}  // namespace

MinCut edmonds_karp(const FlowNetwork& network, int s, int t) {
  check_terminals(network, s, t);
  Residual r(network);
  MinCut result;
  int64_t flow = 0;
  std::vector<int> parent;
  while (flow < kInfinite) {
    ++result.phases;
    const std::vector<int> dist = r.bfs(s, t, &parent);
    if (dist[t] < 0) break;
    int64_t bottleneck = kInfinite - flow;  // never push past "infinite": sums stay bounded
    for (int v = t; v != s; v = r.tail(parent[v]))
      bottleneck = std::min(bottleneck, r.residual(parent[v]));
    assert(bottleneck > 0);
    for (int v = t; v != s; v = r.tail(parent[v])) r.push(parent[v], bottleneck);
    flow += bottleneck;
    ++result.augmentations;
  }
  return finish(network, r, s, flow, std::move(result));
}

MinCut dinic(const FlowNetwork& network, int s, int t) {
  check_terminals(network, s, t);
  Residual r(network);
  MinCut result;
  int64_t flow = 0;
  std::vector<int> it(static_cast<size_t>(r.n));
  std::vector<int> path;  // arcs from s to the current vertex in the level graph
  while (flow < kInfinite) {
    ++result.phases;
    std::vector<int> level = r.bfs(s, -1, nullptr);
    if (level[t] < 0) break;
    // Vertices at t's distance or beyond lie on no shortest s-t path.
    for (int v = 0; v < r.n; ++v)
      if (v != t && level[v] >= level[t]) level[v] = -1;
    for (int v = 0; v < r.n; ++v) it[v] = r.first[v];
    // Blocking flow by iterative DFS with current-arc pointers: a vertex with no admissible arc
    // left is removed from the level graph (level = -1) and never revisited in this phase.
    path.clear();
    while (flow < kInfinite) {
      const int v = path.empty() ? s : r.arcs[static_cast<size_t>(path.back())].to;
      if (v == t) {
        int64_t f = kInfinite - flow;
        for (int a : path) f = std::min(f, r.residual(a));
        assert(f > 0);
        size_t keep = path.size();
        for (size_t i = 0; i < path.size(); ++i) {
          r.push(path[i], f);
          if (keep == path.size() && r.residual(path[i]) == 0) keep = i;
        }
        path.resize(keep);  // retreat to the tail of the first saturated arc
        flow += f;
        ++result.augmentations;
        continue;
      }
      bool advanced = false;
      for (; it[v] < r.first[v + 1]; ++it[v]) {
        const Arc& a = r.arcs[static_cast<size_t>(it[v])];
        if (a.residual > 0 && level[a.to] == level[v] + 1) {
          path.push_back(it[v]);
          advanced = true;
          break;
        }
      }
      if (advanced) continue;
      level[v] = -1;            // dead end
      if (path.empty()) break;  // s is exhausted: the flow is blocking
      const int a = path.back();
      path.pop_back();
      ++it[r.tail(a)];
    }
  }
  return finish(network, r, s, flow, std::move(result));
}

MinCut max_flow_min_cut(const FlowNetwork& network, int s, int t, FlowAlgorithm algorithm) {
  return algorithm == FlowAlgorithm::kEdmondsKarp ? edmonds_karp(network, s, t)
                                                  : dinic(network, s, t);
}

int64_t cut_capacity(const FlowNetwork& network, const std::vector<bool>& source_side) {
  assert(source_side.size() == static_cast<size_t>(network.num_vertices()));
  int64_t total = 0;
  for (const FlowEdge& e : network.edges()) {
    if (source_side[e.from] && !source_side[e.to]) {
      total = std::min(kInfinite, total + e.capacity);  // both <= kInfinite: no overflow
    }
  }
  return total;
}

// ---------------------------------------------------------------------------------------------
// Graphviz

namespace {

std::string quoted(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string capacity_text(int64_t c) { return c >= kInfinite ? "inf" : std::to_string(c); }

}  // namespace

std::string to_dot(const FlowNetwork& network, const MinCut& cut, std::string_view title) {
  const bool highlight =
      cut.finite && cut.source_side.size() == static_cast<size_t>(network.num_vertices());
  std::vector<bool> is_cut(static_cast<size_t>(network.num_edges()), false);
  if (highlight)
    for (int e : cut.cut_edges) is_cut[static_cast<size_t>(e)] = true;
  const bool has_flow = cut.edge_flow.size() == static_cast<size_t>(network.num_edges());

  std::ostringstream os;
  os << "digraph " << quoted(title) << " {\n";
  std::string label(title);
  if (highlight) {
    label += "\nmax flow = min cut = " + capacity_text(cut.max_flow);
  } else if (!cut.finite) {
    label += "\nno finite cut";
  }
  os << "  label=" << quoted(label) << ";\n  labelloc=t;\n  rankdir=LR;\n";
  os << "  node [shape=ellipse, fontname=\"Helvetica\"];\n";
  os << "  edge [fontname=\"Helvetica\"];\n";
  for (int v = 0; v < network.num_vertices(); ++v) {
    os << "  n" << v << " [label=" << quoted(network.display_name(v));
    if (highlight && cut.source_side[v]) os << ", style=filled, fillcolor=\"lightblue\"";
    os << "];\n";
  }
  for (int e = 0; e < network.num_edges(); ++e) {
    const FlowEdge& fe = network.edge(e);
    std::string text = capacity_text(fe.capacity);
    if (has_flow) text = capacity_text(cut.edge_flow[static_cast<size_t>(e)]) + "/" + text;
    os << "  n" << fe.from << " -> n" << fe.to << " [label=" << quoted(text);
    if (is_cut[static_cast<size_t>(e)])
      os << ", color=red, fontcolor=red, style=bold, penwidth=2.5";
    os << "];\n";
  }
  os << "}\n";
  return os.str();
}

}  // namespace stax::partition
