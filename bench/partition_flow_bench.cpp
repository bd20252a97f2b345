// bench_partition_flow: Edmonds-Karp (the seed's algorithm, §5.4) next to Dinic on generated
// networks of 1k, 10k and 100k vertices, in one run; both must find the same max-flow value.
//
//   bench_partition_flow [reps=3] [ek_max_vertices=20000]
//
// Edmonds-Karp is skipped above ek_max_vertices: on the 100k-vertex layered network it runs for
// more than 10 minutes, where Dinic takes about 3 seconds.
//
// layered: `layers` layers of `width` vertices; s feeds layer 0 and the last layer feeds t with
//          infinite edges; every vertex has 3 edges to random vertices of the next layer with
//          capacities in [1, 1000].
// remat:   the shape the partitioner builds (Definition 5.2): values in a DAG, each split into
//          in -> out with capacity remat_capacity(bytes, d, beta), infinite dependence edges to
//          2 earlier values nearby, 1/4 of the values in U (s -> in), 1/3 in B (out -> t).
// Times are the median of `reps` runs, in milliseconds.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "core/partition/maxflow.h"

namespace {

using stax::partition::FlowNetwork;
using stax::partition::kInfinite;
using stax::partition::MinCut;
using Clock = std::chrono::steady_clock;

struct Case {
  std::string name;
  FlowNetwork net;
  int s = 0, t = 0;
};

Case layered(int layers, int width, uint32_t seed) {
  std::mt19937 rng(seed);
  Case c;
  c.name = "layered " + std::to_string(layers) + "x" + std::to_string(width);
  c.s = c.net.add_vertex("s");
  c.t = c.net.add_vertex("t");
  const int first = c.net.add_vertices(layers * width);
  auto id = [&](int layer, int i) { return first + layer * width + i; };
  for (int i = 0; i < width; ++i) {
    c.net.add_edge(c.s, id(0, i), kInfinite);
    c.net.add_edge(id(layers - 1, i), c.t, kInfinite);
  }
  for (int layer = 0; layer + 1 < layers; ++layer)
    for (int i = 0; i < width; ++i)
      for (int k = 0; k < 3; ++k)
        c.net.add_edge(id(layer, i), id(layer + 1, static_cast<int>(rng() % width)),
                       1 + static_cast<int64_t>(rng() % 1000));
  return c;
}

Case remat(int values, uint32_t seed) {
  std::mt19937 rng(seed);
  Case c;
  c.name = "remat " + std::to_string(values) + " values";
  c.s = c.net.add_vertex("s");
  c.t = c.net.add_vertex("t");
  for (int v = 0; v < values; ++v) {
    const int in = c.net.add_vertex(), out = c.net.add_vertex();
    const int64_t bytes = 4 * (1 + static_cast<int64_t>(rng() % 65536));
    c.net.add_edge(
        in, out,
        stax::partition::remat_capacity(bytes, 1 + static_cast<int>(rng() % 120), rng() % 2 == 0));
    for (int k = 0; k < 2 && v > 0; ++k) {
      const int back = 1 + static_cast<int>(rng() % std::min(v, 64));
      c.net.add_edge(3 + 2 * (v - back), in, kInfinite);  // out of an earlier value
    }
    if (rng() % 4 == 0) c.net.add_edge(c.s, in, kInfinite);
    if (rng() % 3 == 0) c.net.add_edge(out, c.t, kInfinite);
  }
  return c;
}

template <typename F>
double median_ms(int reps, F&& f, MinCut* out) {
  std::vector<double> times;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    *out = f();
    times.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
  const int ek_max = argc > 2 ? std::atoi(argv[2]) : 20000;
  std::vector<Case> cases;
  cases.push_back(layered(20, 50, 1));    // 1k vertices
  cases.push_back(layered(100, 100, 2));  // 10k
  cases.push_back(layered(200, 500, 3));  // 100k
  cases.push_back(remat(500, 4));         // 1k
  cases.push_back(remat(5000, 5));        // 10k
  cases.push_back(remat(50000, 6));       // 100k
  std::printf("%-24s %8s %8s %14s %10s %8s %10s %8s %8s\n", "network", "|V|", "|E|", "max flow",
              "EK ms", "EK aug", "Dinic ms", "phases", "EK/Dinic");
  int status = 0;
  for (const Case& c : cases) {
    MinCut dn, ek;
    const double t_dn = median_ms(
        reps, [&] { return stax::partition::dinic(c.net, c.s, c.t); }, &dn);
    const bool run_ek = c.net.num_vertices() <= ek_max;
    const double t_ek =
        run_ek ? median_ms(
                     reps, [&] { return stax::partition::edmonds_karp(c.net, c.s, c.t); }, &ek)
               : 0.0;
    if (run_ek && (ek.max_flow != dn.max_flow || ek.cut_edges != dn.cut_edges)) {
      std::printf("MISMATCH on %s: EK %lld, Dinic %lld\n", c.name.c_str(),
                  static_cast<long long>(ek.max_flow), static_cast<long long>(dn.max_flow));
      status = 1;
    }
    if (run_ek) {
      std::printf("%-24s %8d %8d %14lld %10.2f %8lld %10.2f %8lld %7.1fx\n", c.name.c_str(),
                  c.net.num_vertices(), c.net.num_edges(), static_cast<long long>(dn.max_flow),
                  t_ek, static_cast<long long>(ek.augmentations), t_dn,
                  static_cast<long long>(dn.phases), t_ek / std::max(t_dn, 1e-3));
    } else {
      std::printf("%-24s %8d %8d %14lld %10s %8s %10.2f %8lld %8s\n", c.name.c_str(),
                  c.net.num_vertices(), c.net.num_edges(), static_cast<long long>(dn.max_flow),
                  "skipped", "-", t_dn, static_cast<long long>(dn.phases), "-");
    }
    std::fflush(stdout);
  }
  return status;
}
