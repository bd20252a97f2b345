// The generated graphs of issue 12's scale work: bench/scale_bench.cpp times them at 1k-100k
// nodes, compile_digest_test pins what compiling them produces, lowering_scale_test counts the
// work of lowering them at two sizes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/graph/graph.h"

namespace stax::scale_graphs {

// n relu nodes in a row over a 1-D input of `width` elements (fused into one kernel).
inline Graph chain(int n, int64_t width = 64) {
  Graph g;
  Node* v = g.placeholder("x", {width});
  for (int i = 0; i < n; ++i) v = g.call("relu", {v});
  g.output({v});
  return g;
}

// n/2 scaled copies of one input summed pairwise in a balanced tree (wide levels).
inline Graph fan(int n) {
  Graph g;
  Node* x = g.placeholder("x", {64});
  std::vector<Node*> level;
  for (int i = 0; i < n / 2; ++i) level.push_back(g.call("mul.Scalar", {x, 1.0 + i * 1e-3}));
  while (level.size() > 1) {
    std::vector<Node*> next;
    for (size_t i = 0; i + 1 < level.size(); i += 2)
      next.push_back(g.call("add.Tensor", {level[i], level[i + 1]}));
    if (level.size() % 2) next.push_back(level.back());
    level = std::move(next);
  }
  g.output({level[0]});
  return g;
}

// An MLP of max(1, n/6) layers (matmul, add, tanh; 8x16 activations, 16x16 weights) and an MSE
// loss; `wrt` receives the weight and bias names to differentiate for.
inline Graph mlp(int n, std::vector<std::string>* wrt) {
  const int64_t batch = 8, width = 16;
  Graph g;
  Node* h = g.placeholder("x", {batch, width});
  Node* y = g.placeholder("y", {batch, width});
  for (int l = 0; l < std::max(1, n / 6); ++l) {
    std::string w = "W" + std::to_string(l), b = "b" + std::to_string(l);
    Node* wn = g.placeholder(w, {width, width});
    Node* bn = g.placeholder(b, {width});
    wrt->push_back(w);
    wrt->push_back(b);
    h = g.call("tanh", {g.call("add.Tensor", {g.call("matmul", {h, wn}), bn})});
  }
  Node* d = g.call("sub.Tensor", {h, y});
  g.output({g.call("mean", {g.call("mul.Tensor", {d, d})})});
  return g;
}

}  // namespace stax::scale_graphs
