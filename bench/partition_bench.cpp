// bench_partition: the min-cut rematerialization partitioner (core/partition/partitioner.h) on
// generated joint graphs of about 1k, 10k and 100k nodes, with Dinic next to Edmonds-Karp (the
// seed's algorithm), in one run; both must agree on the max flow and the saved set.
//
//   bench_partition [reps=3] [ek_max_nodes=200000]
//
// Graphs (built with the Graph builder, then build_joint_graph; small tensors, since only the
// structure matters):
//   mlp          x -> L x [mm(., W_i) -> add bias -> gelu] -> sum; gradients of every W_i, b_i
//   transformer  x -> L x [x + gelu(mm(x, W_i) + b_i) -> layer_norm] -> sum (a residual block)
// L is chosen so that the joint graph has about the target node count.
//
// Columns: joint nodes, network vertices / edges, the max flow value, saved / recomputed counts,
// then per algorithm the median partition_min_cut time (analysis + network + max flow + the two
// graphs) and the max-flow part alone, in milliseconds; last, the time build_joint_graph took
// (once). EK is skipped (shown as "-") on graphs larger than ek_max_nodes.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/autodiff/joint_graph.h"
#include "core/ops/install.h"
#include "core/partition/partitioner.h"

namespace {

using namespace stax;
using namespace stax::partition;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

Graph mlp(int layers) {
  Graph g;
  Node* x = g.placeholder("x", {4, 8});
  for (int i = 0; i < layers; ++i) {
    Node* w = g.placeholder("w" + std::to_string(i), {8, 8});
    Node* b = g.placeholder("b" + std::to_string(i), {8});
    x = g.call("gelu", {g.call("add.Tensor", {g.call("mm", {x, w}), b})});
  }
  g.output({g.call("sum", {x})});
  return g;
}

Graph transformer(int layers) {
  Graph g;
  Node* x = g.placeholder("x", {4, 8});
  for (int i = 0; i < layers; ++i) {
    Node* w = g.placeholder("w" + std::to_string(i), {8, 8});
    Node* b = g.placeholder("b" + std::to_string(i), {8});
    Node* h = g.call("gelu", {g.call("add.Tensor", {g.call("mm", {x, w}), b})});
    x = g.call("layer_norm", {g.call("add.Tensor", {x, h}), std::vector<int64_t>{8}});
  }
  g.output({g.call("sum", {x})});
  return g;
}

std::vector<std::string> params(const Graph& g) {
  std::vector<std::string> wrt;
  for (const Node* p : g.placeholders())
    if (p->name() != "x") wrt.push_back(p->name());
  return wrt;
}

struct Timing {
  double total_ms = -1;
  double flow_ms = -1;
  int64_t max_flow = 0;
  std::vector<std::string> saved;
  int vertices = 0;
  int edges = 0;
};

Timing time_algorithm(const JointGraph& j, FlowAlgorithm algo, int reps, size_t* recomputed) {
  Timing t;
  std::vector<double> totals, flows;
  PartitionOptions o;
  o.algorithm = algo;
  for (int r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    PartitionResult res = partition_min_cut(j, o);
    totals.push_back(ms_since(t0));
    t.max_flow = res.max_flow;
    t.saved = res.saved;
    t.vertices = res.network.network.num_vertices();
    t.edges = res.network.network.num_edges();
    *recomputed = res.recomputed.size();
    // The max-flow part alone, on the same network.
    auto t1 = Clock::now();
    MinCut cut = max_flow_min_cut(res.network.network, res.network.source, res.network.sink, algo);
    flows.push_back(ms_since(t1));
    if (cut.max_flow != res.max_flow) std::fprintf(stderr, "max flow mismatch\n");
  }
  t.total_ms = median(totals);
  t.flow_ms = median(flows);
  return t;
}

std::string fmt(double ms) {
  if (ms < 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, ms < 10 ? "%.2f" : ms < 1000 ? "%.1f" : "%.0f", ms);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  stax::install_ops();  // the engines' op tables (core/ops/install.h)
  const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
  const size_t ek_max_nodes = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 200000;

  std::printf("%-12s %7s %8s %8s %12s %6s %6s | %10s %9s | %10s %9s | %9s\n", "graph", "nodes",
              "verts", "edges", "max flow", "saved", "recomp", "dinic ms", "flow ms", "EK ms",
              "flow ms", "joint ms");
  bool ok = true;
  for (const char* family : {"mlp", "transformer"}) {
    const bool is_mlp = std::string(family) == "mlp";
    const int per_layer = is_mlp ? 11 : 29;  // joint nodes per layer, about
    for (int target : {1000, 10000, 100000}) {
      const int layers = std::max(1, target / per_layer);
      Graph f = is_mlp ? mlp(layers) : transformer(layers);
      auto t0 = Clock::now();
      JointGraph j = build_joint_graph(f, params(f));
      const double joint_ms = ms_since(t0);
      size_t recomputed = 0;
      Timing d = time_algorithm(j, FlowAlgorithm::kDinic, reps, &recomputed);
      Timing e;
      if (j.graph.size() <= ek_max_nodes) {
        size_t ignored = 0;
        e = time_algorithm(j, FlowAlgorithm::kEdmondsKarp, reps, &ignored);
        if (e.max_flow != d.max_flow || e.saved != d.saved) {
          std::fprintf(stderr, "%s %d: EK and Dinic disagree\n", family, target);
          ok = false;
        }
      }
      std::printf("%-12s %7zu %8d %8d %12lld %6zu %6zu | %10s %9s | %10s %9s | %9s\n", family,
                  j.graph.size(), d.vertices, d.edges, static_cast<long long>(d.max_flow),
                  d.saved.size(), recomputed, fmt(d.total_ms).c_str(), fmt(d.flow_ms).c_str(),
                  fmt(e.total_ms).c_str(), fmt(e.flow_ms).c_str(), fmt(joint_ms).c_str());
      std::fflush(stdout);
    }
  }
  return ok ? 0 : 1;
}
