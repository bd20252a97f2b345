// Decompositions of the creation ops.
#include "core/graph/decompositions.h"
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/graph/op_registry.h"
#include "core/ops/common/decomposition_helpers.h"
#include "core/ops/nn/params.h"
#include "core/ops/registration.h"
#include "core/support/error.h"

namespace stax {
namespace {

using decomp::cast;

Node* new_filled(Graph& g, const Node& n, const Arg& value) {
  return g.call("full", {n.arg("size"), value}, {{"dtype", n.dtype()}});
}

// ---- the second group

Node* zeros_of(Graph& g, const Shape& s, DType t) {
  return g.call("zeros", {s}, {{"dtype", t}});
}

Node* eye(Graph& g, const Node& n) {
  Shape s = n.shape();
  Node* r = g.call("unsqueeze", {g.call("arange", {s[0]}), 1});
  Node* c = g.call("arange", {s[1]});
  return cast(g, g.call("eq.Tensor", {r, c}), n.dtype());
}

// torch's linspace: step = (end - start) / (steps - 1) in the result type; the first half counts
// up from start, the second half down from end.
Node* linspace_values(Graph& g, const Node& n, double start, double end, int64_t steps) {
  DType t = n.dtype();
  if (steps == 0) return zeros_of(g, Shape{0}, t);
  if (steps == 1) return g.call("full", {Shape{1}, start}, {{"dtype", t}});
  double step;
  if (t == DType::Float64) {
    step = (end - start) / static_cast<double>(steps - 1);
  } else {
    float fs = static_cast<float>(start), fe = static_cast<float>(end);
    step = static_cast<double>((fe - fs) / static_cast<float>(steps - 1));
    start = fs;
    end = fe;
  }
  Node* i = g.call("arange", {steps});
  Node* fi = cast(g, i, t);
  Node* lo = g.call("add.Scalar", {g.call("mul.Scalar", {fi, step}), start});
  Node* back = cast(g, g.call("add.Scalar", {g.call("neg", {i}), steps - 1}), t);
  Node* hi = g.call("add.Scalar", {g.call("neg", {g.call("mul.Scalar", {back, step})}), end});
  return g.call("where.self", {g.call("lt.Scalar", {i, steps / 2}), lo, hi});
}

Node* linspace(Graph& g, const Node& n) {
  return linspace_values(g, n, n.arg("start").to_double(), n.arg("end").to_double(),
                         n.arg("steps").to_int());
}

Node* logspace(Graph& g, const Node& n) {
  Node* e = linspace_values(g, n, n.arg("start").to_double(), n.arg("end").to_double(),
                            n.arg("steps").to_int());
  return cast(g, g.call("pow.Scalar", {n.arg("base"), e}), n.dtype());
}

// linspace / logspace with 0-d tensor bounds: the same arithmetic on the bounds' values, each
// first converted to the result type (as torch's start.item() then scalar_t).
Node* bound_of(Graph& g, const Arg& a, DType t) {
  if (a.is_node()) return cast(g, a.node(), t);
  return g.call("full", {Shape{}, a}, {{"dtype", t}});
}

Node* linspace_tensor_values(Graph& g, const Node& n) {
  DType t = n.dtype();
  int64_t steps = n.arg("steps").to_int();
  Node* s = bound_of(g, n.arg("start"), t);
  Node* e = bound_of(g, n.arg("end"), t);
  if (steps == 0) return zeros_of(g, Shape{0}, t);
  if (steps == 1) return g.call("reshape", {s, Shape{1}});
  Node* step = g.call("div.Scalar", {g.call("sub.Tensor", {e, s}), steps - 1});
  Node* i = g.call("arange", {steps});
  Node* lo = g.call("add.Tensor", {g.call("mul.Tensor", {cast(g, i, t), step}), s});
  Node* back = cast(g, g.call("add.Scalar", {g.call("neg", {i}), steps - 1}), t);
  Node* hi = g.call("sub.Tensor", {e, g.call("mul.Tensor", {back, step})});
  return g.call("where.self", {g.call("lt.Scalar", {i, steps / 2}), lo, hi});
}

Node* logspace_tensor(Graph& g, const Node& n) {
  return cast(g, g.call("pow.Scalar", {n.arg("base"), linspace_tensor_values(g, n)}), n.dtype());
}

// tril_indices / triu_indices: per row r, rows r and the column range, concatenated.
Node* tri_indices(Graph& g, const Node& n, bool lower) {
  int64_t row = n.arg("row").to_int(), col = n.arg("col").to_int(), off = n.arg("offset").to_int();
  DType t = n.dtype();
  std::vector<Node*> parts;
  for (int64_t r = 0; r < row; ++r) {
    int64_t lo = lower ? 0 : std::max<int64_t>(0, r + off);
    int64_t hi = lower ? std::min(col, r + off + 1) : col;
    if (hi <= lo) continue;
    Node* rs = g.call("full", {Shape{1, hi - lo}, r}, {{"dtype", t}});
    Node* cs = g.call("reshape", {g.call("arange.start", {lo, hi}, {{"dtype", t}}), Shape{1, hi - lo}});
    parts.push_back(g.call("cat", {Arg(std::vector<Node*>{rs, cs}), 0}));
  }
  if (parts.empty()) return zeros_of(g, Shape{2, 0}, t);
  return parts.size() == 1 ? parts[0] : g.call("cat", {Arg(parts), 1});
}

}  // namespace

void register_creation_decompositions(DecompositionTable& t) {
  t.add("new_full.default", [](Graph& g, const Node& n) { return new_filled(g, n, n.arg("fill_value")); });

  t.add("new_zeros.default", [](Graph& g, const Node& n) { return new_filled(g, n, Arg(0)); });

  t.add("new_ones.default", [](Graph& g, const Node& n) { return new_filled(g, n, Arg(1)); });

  for (const char* op : {"new_empty.default", "new_empty_strided.default"})
    t.add(op, [](Graph& g, const Node& n) { return new_filled(g, n, Arg(0)); });

  t.add("fill.Scalar", [](Graph& g, const Node& n) {
    return g.call("full", {Arg(n.shape()), n.arg("value")}, {{"dtype", n.dtype()}});
  });

  // fill.Tensor / copy: the value converted to the result's dtype, broadcast, then copied (the
  // result is a value of its own, not a view of the source).
  t.add("fill.Tensor", [](Graph& g, const Node& n) {
    Node* v = cast(g, n.arg("value").node(), n.dtype());
    return g.call("clone", {g.call("expand", {v, Arg(n.shape())})});
  });

  t.add("copy.default", [](Graph& g, const Node& n) {
    Node* v = cast(g, n.arg("src").node(), n.dtype());
    return g.call("clone", {g.call("expand", {v, Arg(n.shape())})});
  });

  t.add("eye.default", eye);

  t.add("eye.m", eye);

  t.add("linspace.default", linspace);

  t.add("logspace.default", logspace);

  for (const char* o : {"Tensor_Tensor", "Tensor_Scalar", "Scalar_Tensor"}) {
    t.add(std::string("linspace.") + o, linspace_tensor_values);
    t.add(std::string("logspace.") + o, logspace_tensor);
  }

  t.add("tril_indices.default", [](Graph& g, const Node& n) { return tri_indices(g, n, true); });

  t.add("triu_indices.default", [](Graph& g, const Node& n) { return tri_indices(g, n, false); });
}

}  // namespace stax
