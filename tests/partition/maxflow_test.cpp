// Max-flow / min-cut (seed §5.4, Theorem 5.2) and the rematerialization network of Table 5.1.
#include "core/partition/maxflow.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/support/error.h"

namespace stax::partition {
namespace {

const FlowAlgorithm kBoth[] = {FlowAlgorithm::kEdmondsKarp, FlowAlgorithm::kDinic};

// Independent checks of a solver's answer: a feasible flow of the reported value, t outside S,
// S closed under residual arcs, and a cut whose recomputed capacity equals the flow.
void expect_valid_min_cut(const FlowNetwork& net, int s, int t, const MinCut& cut) {
  ASSERT_TRUE(cut.finite);
  ASSERT_EQ(cut.source_side.size(), static_cast<size_t>(net.num_vertices()));
  ASSERT_EQ(cut.edge_flow.size(), static_cast<size_t>(net.num_edges()));
  EXPECT_TRUE(cut.source_side[s]);
  EXPECT_FALSE(cut.source_side[t]);
  std::vector<int64_t> excess(static_cast<size_t>(net.num_vertices()), 0);
  for (int e = 0; e < net.num_edges(); ++e) {
    const FlowEdge& fe = net.edge(e);
    const int64_t f = cut.edge_flow[e];
    ASSERT_GE(f, 0) << "edge " << e;
    ASSERT_LE(f, fe.capacity) << "edge " << e;
    excess[fe.from] -= f;
    excess[fe.to] += f;
    // No residual arc leaves S.
    if (cut.source_side[fe.from] && !cut.source_side[fe.to]) {
      EXPECT_EQ(f, fe.capacity);
    }
    if (cut.source_side[fe.to] && !cut.source_side[fe.from]) {
      EXPECT_EQ(f, 0);
    }
  }
  for (int v = 0; v < net.num_vertices(); ++v) {
    const int64_t expected = v == s ? -cut.max_flow : v == t ? cut.max_flow : 0;
    EXPECT_EQ(excess[v], expected) << "conservation at " << v;
  }
  EXPECT_EQ(cut_capacity(net, cut.source_side), cut.max_flow);
  int64_t sum = 0;
  std::vector<int> crossing;
  for (int e = 0; e < net.num_edges(); ++e) {
    if (cut.source_side[net.edge(e).from] && !cut.source_side[net.edge(e).to]) {
      crossing.push_back(e);
      sum += net.edge(e).capacity;
    }
  }
  EXPECT_EQ(cut.cut_edges, crossing);
  EXPECT_EQ(sum, cut.max_flow);
}

TEST(RematCapacity, SeedFormula) {
  // §5.5: matmul, 8192 bytes, d = 1, written anyway: 8192 * 1.1 = 9011.2 -> 9011.
  EXPECT_EQ(remat_capacity(8192, 1, true), 9011);
  // gelu: d = 100, beta = 2: 2 * 8192 * 1.1^100 ~ 2.26e8.
  const double exact = 2.0 * 8192.0 * std::pow(1.1, 100);
  const int64_t gelu = remat_capacity(8192, 100, false);
  EXPECT_EQ(gelu, static_cast<int64_t>(exact));
  EXPECT_EQ(gelu, 225781552);  // 16384 * 13780.6123398... = 225781552.6
  EXPECT_NEAR(static_cast<double>(gelu), 2.26e8, 0.01e8);
  // Repeated multiplication in long double agrees on the truncated value.
  long double p = 1.0L;
  for (int i = 0; i < 100; ++i) p *= 1.1L;
  EXPECT_EQ(gelu, static_cast<int64_t>(2.0L * 8192.0L * p));
  // d is clamped to [1, 100].
  EXPECT_EQ(remat_capacity(8192, 0, true), 9011);
  EXPECT_EQ(remat_capacity(8192, -5, true), 9011);
  EXPECT_EQ(remat_capacity(8192, 1000, false), gelu);
  EXPECT_EQ(remat_capacity(8192, 2, true), 9912);  // 8192 * 1.21 = 9912.32
  EXPECT_EQ(remat_capacity(0, 50, false), 0);
  // Huge tensors stay finite (cuttable).
  EXPECT_EQ(remat_capacity(int64_t{1} << 60, 100, false), kInfinite - 1);
  EXPECT_THROW(remat_capacity(-1, 1, true), Error);
}

// CLRS figure 26.6: max flow 23.
TEST(MaxFlow, TextbookNetwork) {
  FlowNetwork net;
  const int s = net.add_vertex("s"), v1 = net.add_vertex("v1"), v2 = net.add_vertex("v2");
  const int v3 = net.add_vertex("v3"), v4 = net.add_vertex("v4"), t = net.add_vertex("t");
  net.add_edge(s, v1, 16);  // 0
  net.add_edge(s, v2, 13);  // 1
  net.add_edge(v2, v1, 4);  // 2
  const int e13 = net.add_edge(v1, v3, 12);
  net.add_edge(v3, v2, 9);   // 4
  net.add_edge(v2, v4, 14);  // 5
  const int e43 = net.add_edge(v4, v3, 7);
  net.add_edge(v3, t, 20);  // 7
  const int e4t = net.add_edge(v4, t, 4);
  for (FlowAlgorithm alg : kBoth) {
    const MinCut cut = max_flow_min_cut(net, s, t, alg);
    EXPECT_EQ(cut.max_flow, 23);
    expect_valid_min_cut(net, s, t, cut);
    EXPECT_EQ(cut.cut_edges, (std::vector<int>{e13, e43, e4t}));
    EXPECT_TRUE(cut.in_source_side(v1) && cut.in_source_side(v2) && cut.in_source_side(v4));
    EXPECT_FALSE(cut.in_source_side(v3));
  }
}

// The diamond where a naive DFS may take 2000 augmentations; BFS takes 2.
TEST(MaxFlow, DiamondNeedsFewAugmentations) {
  FlowNetwork net(4);
  net.add_edge(0, 1, 1000);
  net.add_edge(0, 2, 1000);
  net.add_edge(1, 2, 1);
  net.add_edge(1, 3, 1000);
  net.add_edge(2, 3, 1000);
  for (FlowAlgorithm alg : kBoth) {
    const MinCut cut = max_flow_min_cut(net, 0, 3, alg);
    EXPECT_EQ(cut.max_flow, 2000);
    EXPECT_LE(cut.augmentations, 2);
    expect_valid_min_cut(net, 0, 3, cut);
    EXPECT_EQ(cut.cut_edges, (std::vector<int>{0, 1}));  // S = {s}
  }
}

TEST(MaxFlow, SmallCases) {
  {  // No path: flow 0, S = what s reaches, no cut edge.
    FlowNetwork net(4);
    net.add_edge(0, 1, 5);
    net.add_edge(2, 3, 5);
    for (FlowAlgorithm alg : kBoth) {
      const MinCut cut = max_flow_min_cut(net, 0, 3, alg);
      EXPECT_EQ(cut.max_flow, 0);
      EXPECT_EQ(cut.source_side, (std::vector<bool>{true, true, false, false}));
      EXPECT_TRUE(cut.cut_edges.empty());
      expect_valid_min_cut(net, 0, 3, cut);
    }
  }
  {  // Zero-capacity edge crossing the cut; parallel edges; a self-loop; an edge into s.
    FlowNetwork net(3);
    net.add_edge(0, 1, 3);
    net.add_edge(0, 1, 4);
    net.add_edge(1, 1, 100);
    net.add_edge(1, 2, 5);
    net.add_edge(0, 2, 0);
    net.add_edge(2, 0, 9);
    for (FlowAlgorithm alg : kBoth) {
      const MinCut cut = max_flow_min_cut(net, 0, 2, alg);
      EXPECT_EQ(cut.max_flow, 5);
      expect_valid_min_cut(net, 0, 2, cut);
      EXPECT_EQ(cut.cut_edges, (std::vector<int>{3, 4}));
      EXPECT_EQ(cut.edge_flow[2], 0);
    }
  }
  {  // A chain: the bottleneck is the cut, and S stops just before it.
    FlowNetwork net(6);
    const int64_t caps[] = {9, 7, 3, 8, 3};
    for (int i = 0; i < 5; ++i) net.add_edge(i, i + 1, caps[i]);
    for (FlowAlgorithm alg : kBoth) {
      const MinCut cut = max_flow_min_cut(net, 0, 5, alg);
      EXPECT_EQ(cut.max_flow, 3);
      EXPECT_EQ(cut.cut_edges, (std::vector<int>{2}));  // the first bottleneck from s
    }
  }
}

TEST(MaxFlow, InfiniteCapacities) {
  {  // An all-infinite path: no finite cut.
    FlowNetwork net(4);
    net.add_edge(0, 1, kInfinite);
    net.add_edge(1, 3, kInfinite);
    net.add_edge(0, 2, 5);
    net.add_edge(2, 3, kInfinite);
    for (FlowAlgorithm alg : kBoth) {
      const MinCut cut = max_flow_min_cut(net, 0, 3, alg);
      EXPECT_FALSE(cut.finite);
      EXPECT_EQ(cut.max_flow, kInfinite);
      EXPECT_TRUE(cut.cut_edges.empty());
      EXPECT_TRUE(cut.source_side.empty());
      EXPECT_NE(to_dot(net, cut, "inf").find("no finite cut"), std::string::npos);
    }
  }
  {  // Capacities above the sentinel are clamped to it; several infinite paths do not overflow.
    FlowNetwork net(3);
    for (int i = 0; i < 8; ++i) net.add_edge(0, 1, INT64_MAX);
    net.add_edge(1, 2, INT64_MAX);
    net.add_edge(1, 2, kInfinite);
    EXPECT_EQ(net.edge(0).capacity, kInfinite);
    for (FlowAlgorithm alg : kBoth) EXPECT_FALSE(max_flow_min_cut(net, 0, 2, alg).finite);
  }
  {  // Infinite edges around a finite bottleneck: finite, and the cut avoids infinite edges.
    FlowNetwork net(4);
    net.add_edge(0, 1, kInfinite);
    net.add_edge(1, 2, 42);
    net.add_edge(2, 3, kInfinite);
    net.add_edge(1, 3, 8);
    for (FlowAlgorithm alg : kBoth) {
      const MinCut cut = max_flow_min_cut(net, 0, 3, alg);
      EXPECT_TRUE(cut.finite);
      EXPECT_EQ(cut.max_flow, 50);
      EXPECT_EQ(cut.cut_edges, (std::vector<int>{1, 3}));
      expect_valid_min_cut(net, 0, 3, cut);
    }
  }
}

TEST(MaxFlow, BadArguments) {
  FlowNetwork net(2);
  EXPECT_THROW(net.add_edge(0, 2, 1), Error);
  EXPECT_THROW(net.add_edge(-1, 1, 1), Error);
  EXPECT_THROW(net.add_edge(0, 1, -3), Error);
  net.add_edge(0, 1, 1);
  EXPECT_THROW(dinic(net, 0, 0), Error);
  EXPECT_THROW(edmonds_karp(net, 0, 7), Error);
}

// Table 5.1: the rematerialization network of Example 5.1 (Definition 5.2). Forward values:
// matmul (h, 32x64 f32 = 8192 bytes), gelu (8192 bytes), sum_0 (a 4-byte scalar).
//   U: matmul (not a cheap op), sum_0 (a reduction: 4 * 4 < 8192 input bytes).
//   B: matmul only (gelu_backward reads h; nothing in the backward reads gelu or sum_0).
//   c(matmul) = trunc(1 * 8192 * 1.1^1) = 9011 (d = 1, written to memory anyway).
//   c(gelu)   = trunc(2 * 8192 * 1.1^100) (no backward reader: d = 100; fusable: beta = 2).
//   c(sum_0)  = trunc(1 * 4 * 1.1^100) (no backward reader: d = 100; a graph output: beta = 1).
TEST(MaxFlow, Table51ExampleNetwork) {
  FlowNetwork net;
  const int s = net.add_vertex("s"), t = net.add_vertex("t");
  const int mm_in = net.add_vertex("matmul_in"), mm_out = net.add_vertex("matmul_out");
  const int ge_in = net.add_vertex("gelu_in"), ge_out = net.add_vertex("gelu_out");
  const int su_in = net.add_vertex("sum_0_in"), su_out = net.add_vertex("sum_0_out");
  const int64_t c_sum = remat_capacity(4, 100, true);
  EXPECT_EQ(c_sum, 55122);  // 4 * 13780.61... = 55122.45
  net.add_edge(s, mm_in, kInfinite);
  const int mm_split = net.add_edge(mm_in, mm_out, remat_capacity(8192, 1, true));
  net.add_edge(mm_out, t, kInfinite);
  net.add_edge(mm_out, ge_in, kInfinite);
  const int ge_split = net.add_edge(ge_in, ge_out, remat_capacity(8192, 100, false));
  net.add_edge(ge_out, su_in, kInfinite);
  net.add_edge(s, su_in, kInfinite);
  net.add_edge(su_in, su_out, c_sum);
  EXPECT_EQ(net.edge(mm_split).capacity, 9011);
  EXPECT_EQ(net.edge(ge_split).capacity, 225781552);
  for (FlowAlgorithm alg : kBoth) {
    const MinCut cut = max_flow_min_cut(net, s, t, alg);
    ASSERT_TRUE(cut.finite);
    EXPECT_EQ(cut.max_flow, 9011);
    EXPECT_EQ(cut.cut_edges, (std::vector<int>{mm_split}));  // only h is saved
    EXPECT_EQ(cut.augmentations, 1);                         // exactly one s-t path
    expect_valid_min_cut(net, s, t, cut);
    EXPECT_TRUE(cut.in_source_side(mm_in));
    EXPECT_FALSE(cut.in_source_side(mm_out));
    EXPECT_FALSE(cut.in_source_side(ge_in));
  }
  const std::string dot = to_dot(net, dinic(net, s, t), "Table 5.1");
  EXPECT_NE(dot.find("digraph \"Table 5.1\""), std::string::npos);
  EXPECT_NE(dot.find("max flow = min cut = 9011"), std::string::npos);
  EXPECT_NE(dot.find("n2 -> n3 [label=\"9011/9011\", color=red"), std::string::npos) << dot;
  EXPECT_NE(dot.find("n2 [label=\"matmul_in\", style=filled"), std::string::npos) << dot;
  EXPECT_NE(dot.find("n3 [label=\"matmul_out\"];"), std::string::npos) << dot;
  EXPECT_NE(dot.find("n0 -> n2 [label=\"9011/inf\"];"), std::string::npos) << dot;
  EXPECT_EQ(dot.find("n4 -> n5 [label=\"0/225781552\", color"), std::string::npos) << dot;
}

TEST(MaxFlow, DotEscapesAndNames) {
  FlowNetwork net;
  net.add_vertex("a \"quoted\" name");
  net.add_vertex();
  net.add_edge(0, 1, 2);
  EXPECT_EQ(net.display_name(1), "v1");
  EXPECT_EQ(net.find_vertex("v1"), -1);
  EXPECT_EQ(net.find_vertex("a \"quoted\" name"), 0);
  const std::string dot = to_dot(net, MinCut{}, "t\"i");
  EXPECT_NE(dot.find("digraph \"t\\\"i\""), std::string::npos) << dot;
  EXPECT_NE(dot.find("[label=\"a \\\"quoted\\\" name\"]"), std::string::npos) << dot;
  EXPECT_NE(dot.find("n0 -> n1 [label=\"2\"];"), std::string::npos) << dot;
}

// Is there an s-t path of infinite edges only? Then no finite cut exists.
bool infinite_path(const FlowNetwork& net, int s, int t) {
  std::vector<bool> seen(static_cast<size_t>(net.num_vertices()), false);
  std::vector<int> stack{s};
  seen[s] = true;
  while (!stack.empty()) {
    const int v = stack.back();
    stack.pop_back();
    for (const FlowEdge& e : net.edges()) {
      if (e.from == v && e.capacity >= kInfinite && !seen[e.to]) {
        seen[e.to] = true;
        stack.push_back(e.to);
      }
    }
  }
  return seen[t];
}

TEST(MaxFlow, RandomNetworksAgree) {
  int infinite_cases = 0, zero_cases = 0;
  for (uint32_t seed = 1; seed <= 400; ++seed) {
    std::mt19937 rng(seed);
    const int n = 2 + static_cast<int>(rng() % 199);  // 2..200 vertices
    const int m = static_cast<int>(rng() % (4 * n + 1));
    const int max_cap = seed % 3 == 0 ? 3 : 1000;  // small capacities force ties in the cut
    const uint32_t inf_one_in = seed % 4 == 0 ? 8 : seed % 4 == 1 ? 2 : 0;  // 0: none
    FlowNetwork net(n);
    for (int i = 0; i < m; ++i) {
      const int a = static_cast<int>(rng() % n), b = static_cast<int>(rng() % n);
      int64_t cap = static_cast<int64_t>(rng() % (max_cap + 1));
      if (inf_one_in != 0 && rng() % inf_one_in == 0) cap = kInfinite;
      net.add_edge(a, b, cap);
    }
    const int s = static_cast<int>(rng() % n);
    int t = static_cast<int>(rng() % n);
    if (t == s) t = (s + 1) % n;
    const MinCut ek = edmonds_karp(net, s, t);
    const MinCut dn = dinic(net, s, t);
    SCOPED_TRACE("seed " + std::to_string(seed));
    ASSERT_EQ(ek.finite, dn.finite);
    ASSERT_EQ(ek.max_flow, dn.max_flow);
    EXPECT_EQ(ek.finite, !infinite_path(net, s, t));
    if (!ek.finite) {
      ++infinite_cases;
      continue;
    }
    if (ek.max_flow == 0) ++zero_cases;
    expect_valid_min_cut(net, s, t, ek);
    expect_valid_min_cut(net, s, t, dn);
    // The residual-reachable side is the same for every maximum flow.
    EXPECT_EQ(ek.source_side, dn.source_side);
    EXPECT_EQ(ek.cut_edges, dn.cut_edges);
    EXPECT_LE(dn.phases, n + 1);  // each phase lengthens the shortest s-t path
  }
  // The generator covers all three kinds of answers.
  EXPECT_GT(infinite_cases, 5);
  EXPECT_GT(zero_cases, 5);
}

// Layered networks like the partitioner's (in/out split vertices, infinite dependence edges).
TEST(MaxFlow, RandomRematerializationNetworks) {
  for (uint32_t seed = 1; seed <= 100; ++seed) {
    std::mt19937 rng(seed * 7919);
    const int values = 1 + static_cast<int>(rng() % 100);
    FlowNetwork net;
    const int s = net.add_vertex("s"), t = net.add_vertex("t");
    for (int v = 0; v < values; ++v) {
      const int in = net.add_vertex(), out = net.add_vertex();
      net.add_edge(in, out,
                   remat_capacity(4 * (1 + rng() % 4096), 1 + rng() % 120, rng() % 2 == 0));
      for (int k = 0; k < 2 && v > 0; ++k) {  // forward dependences on earlier values
        const int u = static_cast<int>(rng() % v);
        net.add_edge(3 + 2 * u, in, kInfinite);
      }
      if (rng() % 4 == 0) net.add_edge(s, in, kInfinite);
      if (rng() % 3 == 0) net.add_edge(out, t, kInfinite);
    }
    const MinCut ek = edmonds_karp(net, s, t);
    const MinCut dn = dinic(net, s, t);
    SCOPED_TRACE("seed " + std::to_string(seed));
    ASSERT_TRUE(ek.finite);  // every value in U can itself be saved
    EXPECT_EQ(ek.max_flow, dn.max_flow);
    expect_valid_min_cut(net, s, t, dn);
    EXPECT_EQ(ek.cut_edges, dn.cut_edges);
    for (int e : dn.cut_edges) EXPECT_LT(net.edge(e).capacity, kInfinite);
  }
}

// Long augmenting paths: Dinic's DFS is iterative, so depth is no stack hazard.
TEST(MaxFlow, LongChain) {
  const int n = 200000;
  FlowNetwork net(n);
  for (int i = 0; i + 1 < n; ++i) net.add_edge(i, i + 1, 1000 + (i % 997));
  const MinCut cut = dinic(net, 0, n - 1);
  EXPECT_EQ(cut.max_flow, 1000);
  EXPECT_EQ(cut.cut_edges, (std::vector<int>{0}));
  EXPECT_EQ(edmonds_karp(net, 0, n - 1).max_flow, 1000);
}

}  // namespace
}  // namespace stax::partition
