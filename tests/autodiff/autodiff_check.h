// Shared helpers of the autodiff tests (header-only: each test file is its own executable):
// random inputs, central differences in float64, random (broadcast) shapes.
//   random_input(in, rng)        a tensor for one input spec
//   central_difference(f, ...)   (f(x + h e_k) - f(x - h e_k)) / 2h for input i, coordinate k
//   missing_kernel(g)            the first op of g the interpreter has no kernel for, or ""
//   random_shape / broadcast_partner: rank in [min, max], sizes in [1, 4]; a shape that
//                                broadcasts to the given one (dims dropped / set to 1)
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/graph/op_registry.h"
#include "core/interpreter/interpreter.h"
#include "core/tensor/tensor.h"

namespace stax::testing {

// One input of a test function.
struct In {
  Shape shape;
  DType dtype = DType::Float64;
  double lo = -2, hi = 2;       // floats: uniform in [lo, hi] ...
  bool away_from_zero = false;  // ... or in ±[lo, hi]
  int64_t bound = 0;            // int64 indices: uniform in [0, bound) ...
  int64_t distinct_dim = -1;    // ... distinct along this dim (scatter / index_put targets)
  std::vector<double> values;   // fixed values (row-major), if given
  bool diff = true;             // differentiate with respect to it (floating inputs only)
};

inline In U(Shape s, double lo = -2, double hi = 2) {
  In i;
  i.shape = std::move(s);
  i.lo = lo;
  i.hi = hi;
  return i;
}
inline In P(Shape s, double lo = 0.5, double hi = 2) { return U(std::move(s), lo, hi); }
inline In NZ(Shape s, double lo = 0.3, double hi = 2) {
  In i = U(std::move(s), lo, hi);
  i.away_from_zero = true;
  return i;
}
inline In Idx(Shape s, int64_t bound, int64_t distinct_dim = -1) {
  In i;
  i.shape = std::move(s);
  i.dtype = DType::Int64;
  i.bound = bound;
  i.distinct_dim = distinct_dim;
  i.diff = false;
  return i;
}
inline In Fixed(Shape s, std::vector<double> v) {
  In i = U(std::move(s));
  i.values = std::move(v);
  return i;
}
inline In Const(In i) {
  i.diff = false;
  return i;
}

inline Tensor random_input(const In& in, std::mt19937_64& rng) {
  Tensor t = Tensor::empty(in.shape, in.dtype);
  int64_t n = t.numel();
  if (!in.values.empty()) {
    for (int64_t k = 0; k < n; ++k) t.set_double(k, in.values.at(static_cast<size_t>(k)));
    return t;
  }
  if (in.dtype == DType::Int64) {
    std::uniform_int_distribution<int64_t> pick(0, in.bound - 1);
    if (in.distinct_dim < 0) {
      for (int64_t k = 0; k < n; ++k) t.set_int(k, pick(rng));
      return t;
    }
    // Distinct values along distinct_dim: each line is a prefix of a random permutation.
    Shape s = in.shape;
    int64_t d = in.distinct_dim, len = s[d];
    int64_t inner = 1;
    for (size_t j = static_cast<size_t>(d) + 1; j < s.size(); ++j) inner *= s[j];
    int64_t outer = n / std::max<int64_t>(len * inner, 1);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        std::vector<int64_t> perm(static_cast<size_t>(in.bound));
        for (int64_t v = 0; v < in.bound; ++v) perm[v] = v;
        std::shuffle(perm.begin(), perm.end(), rng);
        for (int64_t l = 0; l < len; ++l) t.set_int((o * len + l) * inner + i, perm[l]);
      }
    return t;
  }
  std::uniform_real_distribution<double> u(in.lo, in.hi);
  std::bernoulli_distribution sign(0.5);
  for (int64_t k = 0; k < n; ++k) {
    double v = u(rng);
    if (in.away_from_zero && sign(rng)) v = -v;
    t.set_double(k, v);
  }
  return t;
}

inline std::string input_name(size_t i) { return "in" + std::to_string(i); }

inline double central_difference(const std::function<double(const std::vector<Tensor>&)>& f,
                                 std::vector<Tensor> inputs, size_t i, int64_t k, double h) {
  Tensor base = inputs[i];
  double x = base.get_double(k);
  Tensor plus = base.clone(), minus = base.clone();
  plus.set_double(k, x + h);
  minus.set_double(k, x - h);
  inputs[i] = plus;
  double fp = f(inputs);
  inputs[i] = minus;
  double fm = f(inputs);
  return (fp - fm) / (2 * h);
}

inline std::string missing_kernel(const Graph& g) {
  const InterpreterTable& table = default_interpreter_table();
  for (const Node* n : g.nodes())
    if (n->is_call() && !table.find(n->op()->name())) return n->op()->name();
  return "";
}

inline Shape random_shape(std::mt19937_64& rng, int min_rank, int max_rank) {
  std::uniform_int_distribution<int> rank(min_rank, max_rank);
  std::uniform_int_distribution<int64_t> size(1, 4);
  Shape s(static_cast<size_t>(rank(rng)));
  for (auto& d : s) d = size(rng);
  return s;
}

inline Shape broadcast_partner(std::mt19937_64& rng, const Shape& s) {
  std::uniform_int_distribution<size_t> drop(0, s.size());
  std::bernoulli_distribution one(0.5);
  Shape r(s.begin() + static_cast<std::ptrdiff_t>(drop(rng)), s.end());
  for (auto& d : r)
    if (one(rng)) d = 1;
  return r;
}

}  // namespace stax::testing
