// The diagonal of two dims of a tensor as a decomposition (diagonal, diag, trace): the two dims
// moved last, flattened, sliced with step cols + 1.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "core/graph/graph.h"

namespace stax::diagonal_formula {

using Ints = std::vector<int64_t>;

// ---- shape and indexing

inline Node* diagonal_of(Graph& g, Node* x, int64_t off, int64_t d1, int64_t d2, const std::string& w) {
  int64_t rank = x->meta().dim();
  d1 = wrap_dim(d1, rank, w);
  d2 = wrap_dim(d2, rank, w);
  Ints perm;
  Shape batch;
  for (int64_t d = 0; d < rank; ++d)
    if (d != d1 && d != d2) {
      perm.push_back(d);
      batch.push_back(x->shape()[d]);
    }
  perm.push_back(d1);
  perm.push_back(d2);
  int64_t rows = x->shape()[d1], cols = x->shape()[d2];
  int64_t len = std::max<int64_t>(off >= 0 ? std::min(rows, cols - off) : std::min(rows + off, cols), 0);
  Node* y = g.call("clone", {g.call("permute", {x, perm})});
  Shape flat = batch;
  flat.push_back(rows * cols);
  y = g.call("reshape", {y, flat});
  int64_t start = len == 0 ? 0 : (off >= 0 ? off : -off * cols);
  int64_t end = len == 0 ? 0 : start + (len - 1) * (cols + 1) + 1;
  return g.call("slice.Tensor", {y, static_cast<int64_t>(batch.size()), start, end, cols + 1});
}

}  // namespace stax::diagonal_formula
