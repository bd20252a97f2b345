// Helpers of the linalg tests (tests/ops/linalg): tuple elements, well-conditioned and symmetric
// inputs, and the central-difference check of a graph's derivatives.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/interpreter/interpreter.h"
#include "core/tensor/tensor.h"

namespace stax::test::linalg {

// Element i of a tuple-valued node.
inline Node* elem(Graph& g, Node* t, int64_t i) { return g.call("getitem", {t, i}); }

inline Tensor randn(const Shape& s, DType t, uint64_t seed) { return Tensor::randn(s, t, seed); }

// A well-conditioned random matrix batch: randn + n I.
inline Tensor well_conditioned(const Shape& s, DType t, uint64_t seed) {
  Tensor a = randn(s, DType::Float64, seed);
  int64_t n = s.back();
  for (int64_t i = 0; i < a.numel(); ++i)
    if ((i % (n * n)) / n == i % n) a.set_double(i, a.get_double(i) + double(n));
  return a.to(t);
}

// X + X^T + shift I (float64): the symmetric input of eigh / cholesky, as torch's gradcheck
// wrappers make it (the ops read one triangle only).
inline Node* symmetric(Graph& g, Node* x, double shift) {
  Node* s = g.call("add.Tensor", {x, g.call("transpose.int", {x, int64_t{-2}, int64_t{-1}})});
  Node* e = g.call("eye", {x->shape().back()}, {{"dtype", DType::Float64}});
  return g.call("add.Tensor", {s, g.call("mul.Scalar", {e, shift})});
}

// The inputs of a derivative check: square shapes well-conditioned, others randn (float64).
inline std::vector<Tensor> check_inputs(const std::vector<Shape>& shapes) {
  std::vector<Tensor> vals;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& s = shapes[i];
    bool square = s.size() >= 2 && s[s.size() - 1] == s[s.size() - 2];
    vals.push_back(square ? well_conditioned(s, DType::Float64, 10 + i)
                          : randn(s, DType::Float64, 10 + i));
  }
  return vals;
}

// Output `out` of g at vals with input v's element i moved by +h and by -h.
inline std::pair<Tensor, Tensor> nudged(const Graph& g, const std::vector<Tensor>& vals, size_t v,
                                        int64_t i, double h, size_t out = 0) {
  std::vector<Tensor> p = vals, m = vals;
  p[v] = vals[v].clone();
  m[v] = vals[v].clone();
  p[v].set_double(i, vals[v].get_double(i) + h);
  m[v].set_double(i, vals[v].get_double(i) - h);
  return {interpret(g, p)[out], interpret(g, m)[out]};
}

}  // namespace stax::test::linalg
