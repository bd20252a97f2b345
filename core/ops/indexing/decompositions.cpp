// Decompositions of the indexing ops.
#include "core/graph/decompositions.h"
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/graph/op_registry.h"
#include "core/ops/common/decomposition_helpers.h"
#include "core/ops/common/diagonal.h"
#include "core/ops/nn/params.h"
#include "core/ops/registration.h"
#include "core/support/error.h"

namespace stax {
namespace {

using namespace diagonal_formula;  // NOLINT
using Ints = std::vector<int64_t>;

using decomp::cast;

// ---- shape ops

Node* stack(Graph& g, const Node& n) {
  std::vector<Node*> ts = n.arg("tensors").to_node_list();
  int64_t d = wrap_dim(n.arg("dim").to_int(), ts[0]->meta().dim() + 1, "%" + n.name());
  std::vector<Node*> us;
  for (Node* t : ts) us.push_back(g.call("unsqueeze", {t, d}));
  return g.call("cat", {Arg(us), d});
}

Node* repeat(Graph& g, const Node& n) {
  Node* x = n.input(0);
  Ints r = n.arg("repeats").to_int_list();
  size_t pad = r.size() - x->shape().size();
  Shape pairs, expanded, out;
  for (size_t i = 0; i < r.size(); ++i) {
    int64_t s = i < pad ? 1 : x->shape()[i - pad];
    pairs.insert(pairs.end(), {1, s});
    expanded.insert(expanded.end(), {r[i], s});
    out.push_back(r[i] * s);
  }
  if (r.empty()) return g.call("clone", {x});
  Node* v = g.call("reshape", {x, pairs});
  Node* e = g.call("expand", {v, expanded});
  return g.call("reshape", {g.call("clone", {e}), out});
}

Node* flip(Graph& g, const Node& n) {
  Node* x = n.input(0);
  Node* y = x;
  int64_t rank = x->meta().dim();
  for (int64_t d : n.arg("dims").to_int_list()) {
    if (rank == 0) break;
    d = wrap_dim(d, rank, "%" + n.name());
    int64_t len = x->shape()[d];
    if (len <= 1) continue;
    Node* idx = g.call("arange.start_step", {len - 1, -1, -1});
    y = g.call("index_select", {y, d, idx});
  }
  return y == x ? g.call("clone", {x}) : y;
}

Node* roll_dim(Graph& g, Node* x, int64_t shift, int64_t d) {
  int64_t len = x->shape()[d];
  if (len == 0) return x;
  int64_t s = ((shift % len) + len) % len;
  if (s == 0) return x;
  Node* tail = g.call("slice.Tensor", {x, d, len - s, len});
  Node* head = g.call("slice.Tensor", {x, d, 0, len - s});
  return g.call("cat", {Arg(std::vector<Node*>{tail, head}), d});
}

Node* roll(Graph& g, const Node& n) {
  Node* x = n.input(0);
  Ints shifts = n.arg("shifts").to_int_list();
  Ints dims = n.arg("dims").to_int_list();
  Node* y = x;
  if (dims.empty()) {
    Node* flat = g.call("reshape", {x, Shape{shape_numel(x->shape())}});
    y = g.call("reshape", {roll_dim(g, flat, shifts[0], 0), x->shape()});
  } else {
    for (size_t i = 0; i < dims.size(); ++i)
      y = roll_dim(g, y, shifts[i], wrap_dim(dims[i], x->meta().dim(), "%" + n.name()));
  }
  return y == x ? g.call("clone", {x}) : y;
}

Node* tri(Graph& g, const Node& n, bool lower) {
  Node* x = n.input(0);
  int64_t rows = x->shape()[x->shape().size() - 2], cols = x->shape().back();
  Node* r = g.call("unsqueeze", {g.call("arange", {rows}), 1});
  Node* c = g.call("arange", {cols});
  Node* diff = g.call("sub.Tensor", {c, r});
  Node* mask = g.call(lower ? "le.Scalar" : "ge.Scalar", {diff, n.arg("diagonal")});
  return g.call("where.self", {mask, x, g.call("zeros_like", {x})});
}

// ---- masked writes and fused arithmetic

Node* masked_fill(Graph& g, const Node& n) {
  Node* self = n.input(0);
  const Arg& v = n.arg("value");
  Node* fill = v.is_node() ? cast(g, v.node(), self->dtype()) : g.call("full_like", {self, v});
  return g.call("where.self", {n.arg("mask").node(), fill, self});
}

std::string where(const Node& n) { return "%" + n.name(); }
int64_t dim_of(const Node& n, const char* p, int64_t rank) {
  return wrap_dim(n.arg(p).to_int(), std::max<int64_t>(rank, 1), where(n));
}

Node* diagonal(Graph& g, const Node& n) {
  return diagonal_of(g, n.input(0), n.arg("offset").to_int(), n.arg("dim1").to_int(),
                     n.arg("dim2").to_int(), where(n));
}

Node* diag_embed_of(Graph& g, Node* x, int64_t off, int64_t d1, int64_t d2, const std::string& w) {
  int64_t rank = x->meta().dim() + 1;
  d1 = wrap_dim(d1, rank, w);
  d2 = wrap_dim(d2, rank, w);
  int64_t k = std::abs(off);
  int64_t len = x->shape().back(), n = len + k;
  Node* xp = k == 0 ? x : g.call("constant_pad_nd", {x, Ints{0, k}});
  Node* r = g.call("unsqueeze", {g.call("arange", {n}), 1});
  Node* c = g.call("arange", {n});
  Node* mask = g.call("eq.Scalar", {g.call("sub.Tensor", {c, r}), off});
  Node* vals = g.call("unsqueeze", {xp, off >= 0 ? -1 : -2});
  Node* y = g.call("where.self", {mask, vals, g.call("zeros", {Shape{}}, {{"dtype", x->dtype()}})});
  Ints perm(rank);
  int64_t b = 0;
  for (int64_t p = 0; p < rank; ++p) perm[p] = p == d1 ? rank - 2 : p == d2 ? rank - 1 : b++;
  return g.call("clone", {g.call("permute", {y, perm})});
}

Node* diag_embed(Graph& g, const Node& n) {
  return diag_embed_of(g, n.input(0), n.arg("offset").to_int(), n.arg("dim1").to_int(),
                       n.arg("dim2").to_int(), where(n));
}

Node* diag(Graph& g, const Node& n) {
  Node* x = n.input(0);
  int64_t k = n.arg("diagonal").to_int();
  if (x->meta().dim() == 1) return diag_embed_of(g, x, k, 0, 1, where(n));
  return g.call("clone", {diagonal_of(g, x, k, 0, 1, where(n))});
}

Node* take(Graph& g, const Node& n) {
  Node* x = n.input(0);
  Node* idx = n.input(1);
  int64_t numel = shape_numel(x->shape());
  Node* flat = g.call("reshape", {x, Shape{numel}});
  Node* i = g.call("reshape", {idx, Shape{shape_numel(idx->shape())}});
  i = g.call("where.self", {g.call("lt.Scalar", {i, 0}), g.call("add.Scalar", {i, numel}), i});
  return g.call("reshape", {g.call("index_select", {flat, 0, i}), idx->shape()});
}

Node* index_fill(Graph& g, const Node& n) {
  Node* x = n.input(0);
  int64_t rank = x->meta().dim();
  int64_t d = dim_of(n, "dim", rank);
  int64_t len = rank == 0 ? 1 : x->shape()[d];
  Node* idx = n.arg("index").node();
  int64_t k = shape_numel(idx->shape());
  if (k == 0) return g.call("clone", {x});
  Node* i = g.call("reshape", {idx, Shape{1, k}});
  i = g.call("where.self", {g.call("lt.Scalar", {i, 0}), g.call("add.Scalar", {i, len}), i});
  Node* ar = g.call("unsqueeze", {g.call("arange", {len}), 1});
  Node* hit = g.call("any.dim", {g.call("eq.Tensor", {ar, i}), 1});
  Shape s(std::max<int64_t>(rank, 1), 1);
  s[d] = len;
  if (rank == 0) s = Shape{};
  Node* mask = g.call("reshape", {hit, s});
  const Arg& v = n.arg("value");
  Node* r = v.is_node() ? g.call("where.self", {mask, cast(g, v.node(), x->dtype()), x})
                        : g.call("where.ScalarSelf", {mask, v, x});
  return cast(g, r, n.dtype());
}

Node* rot90(Graph& g, const Node& n) {
  Node* x = n.input(0);
  int64_t rank = x->meta().dim();
  Ints dims = n.arg("dims").to_int_list();
  int64_t a = wrap_dim(dims[0], rank, where(n)), b = wrap_dim(dims[1], rank, where(n));
  int64_t k = ((n.arg("k").to_int() % 4) + 4) % 4;
  if (k == 0) return g.call("clone", {x});
  if (k == 2) return g.call("flip", {x, Ints{a, b}});
  Node* f = g.call("flip", {x, Ints{k == 1 ? b : a}});
  return g.call("clone", {g.call("transpose.int", {f, a, b})});
}

Node* narrow_copy(Graph& g, const Node& n) {
  Node* x = n.input(0);
  int64_t d = dim_of(n, "dim", x->meta().dim());
  int64_t start = n.arg("start").to_int();
  if (start < 0) start += x->shape()[d];
  int64_t len = n.arg("length").to_int();
  return g.call("clone", {g.call("slice.Tensor", {x, d, start, start + len})});
}

// ---- the second group

Node* zeros_of(Graph& g, const Shape& s, DType t) {
  return g.call("zeros", {s}, {{"dtype", t}});
}

Node* isin(Graph& g, const Node& n) {
  Node* e = n.input(0);
  Node* t = n.input(1);
  Node* flat = g.call("reshape", {t, Shape{shape_numel(t->shape())}});
  Node* hit = g.call("any.dim", {g.call("eq.Tensor", {g.call("unsqueeze", {e, -1}), flat}), -1});
  return n.arg("invert").to_bool() ? g.call("logical_not", {hit}) : hit;
}

// The count of sequence entries before each value: !(s >= v) (right: !(s > v)), as torch's
// binary search compares, so NaN values go last.
Node* search(Graph& g, const Node& n, Node* seq, Node* v, bool right) {
  Node* vs = g.call("unsqueeze", {v, -1});
  Node* ss = seq->meta().dim() == 1 ? seq : g.call("unsqueeze", {seq, -2});
  Node* before = g.call("logical_not", {g.call(right ? "gt.Tensor" : "ge.Tensor", {ss, vs})});
  Node* c = g.call("sum.dim_IntList", {before, Ints{-1}});
  return cast(g, c, n.dtype());
}

Node* bucketize(Graph& g, const Node& n) {
  return search(g, n, n.arg("boundaries").node(), n.input(0), n.arg("right").to_bool());
}

Node* searchsorted(Graph& g, const Node& n) {
  bool right = n.arg("right").to_bool() ||
               (!n.arg("side").is_absent() && n.arg("side").str() == "right");
  // sorter (the permutation that sorts each row of the sequence; checked by the schema rule)
  // needs no gather: the count of entries before a value does not depend on their order.
  return search(g, n, n.arg("sorted_sequence").node(), n.arg("self").node(), right);
}

// An index along `d` holding `positions` (int64 [k]) broadcast to `like`'s shape.
Node* along(Graph& g, Node* positions, int64_t d, const Shape& like) {
  Shape s(like.size(), 1);
  s[d] = like[d];
  return g.call("expand", {g.call("reshape", {positions, s}), like});
}

Node* index_copy(Graph& g, const Node& n) {
  Node* self = n.input(0);
  Node* src = n.arg("source").node();
  Node* idx = n.arg("index").node();
  if (self->meta().dim() == 0) return g.call("reshape", {src, Shape{}});
  int64_t d = dim_of(n, "dim", self->meta().dim());
  Node* flat = g.call("reshape", {idx, Shape{shape_numel(idx->shape())}});
  return g.call("scatter.src", {self, d, along(g, flat, d, src->shape()), src});
}

Node* put(Graph& g, const Node& n) {
  Node* self = n.input(0);
  int64_t len = shape_numel(self->shape());
  int64_t k = shape_numel(n.arg("index").node()->shape());
  Node* flat = g.call("reshape", {self, Shape{len}});
  Node* i = g.call("reshape", {n.arg("index").node(), Shape{k}});
  i = g.call("where.self", {g.call("lt.Scalar", {i, 0}), g.call("add.Scalar", {i, len}), i});
  Node* s = g.call("reshape", {n.arg("source").node(), Shape{k}});
  Node* r = g.call(n.arg("accumulate").to_bool() ? "scatter_add" : "scatter.src", {flat, 0, i, s});
  return g.call("reshape", {r, self->shape()});
}

Node* masked_scatter(Graph& g, const Node& n) {
  Shape s = n.shape();
  Node* self = g.call("expand", {n.input(0), s});
  Node* mask = g.call("expand", {n.arg("mask").node(), s});
  Node* src = n.arg("source").node();
  int64_t m = shape_numel(src->shape()), len = shape_numel(s);
  if (m == 0 || len == 0) return g.call("clone", {self});
  Node* mi = cast(g, g.call("reshape", {mask, Shape{len}}), DType::Int64);
  Node* pos = g.call("clamp_min", {g.call("sub.Scalar", {g.call("cumsum", {mi, 0}), 1}), 0});
  Node* vals = g.call("index_select", {g.call("reshape", {src, Shape{m}}), 0, pos});
  return g.call("where.self", {mask, g.call("reshape", {vals, s}), self});
}

Node* unfold(Graph& g, const Node& n) {
  Node* x = n.input(0);
  int64_t size = n.arg("size").to_int(), step = n.arg("step").to_int();
  if (x->meta().dim() == 0) return g.call("expand", {g.call("reshape", {x, Shape{1}}), Shape{size}});
  int64_t d = dim_of(n, "dimension", x->meta().dim());
  Shape s = x->shape();
  int64_t windows = (s[d] - size) / step + 1;
  Node* starts = g.call("mul.Scalar", {g.call("unsqueeze", {g.call("arange", {windows}), 1}), step});
  Node* idx = g.call("add.Tensor", {starts, g.call("arange", {size})});
  Node* y = g.call("index_select", {x, d, g.call("reshape", {idx, Shape{windows * size}})});
  Shape split = s;
  split[d] = windows;
  split.insert(split.begin() + d + 1, size);
  y = g.call("reshape", {y, split});
  Ints perm;
  for (int64_t i = 0; i < static_cast<int64_t>(split.size()); ++i)
    if (i != d + 1) perm.push_back(i);
  perm.push_back(d + 1);
  return g.call("clone", {g.call("permute", {y, perm})});
}

Node* block_diag(Graph& g, const Node& n) {
  std::vector<Node*> ts = n.arg("tensors").to_node_list();
  Shape s = n.shape();
  std::vector<Node*> rows;
  int64_t col = 0;
  for (Node* t : ts) {
    Node* m = cast(g, t, n.dtype());
    if (t->meta().dim() == 0) m = g.call("reshape", {m, Shape{1, 1}});
    else if (t->meta().dim() == 1) m = g.call("reshape", {m, Shape{1, t->shape()[0]}});
    int64_t w = m->shape()[1];
    rows.push_back(g.call("constant_pad_nd", {m, Ints{col, s[1] - col - w}}));
    col += w;
  }
  if (rows.empty()) return zeros_of(g, s, n.dtype());
  return rows.size() == 1 ? g.call("clone", {rows[0]}) : g.call("cat", {Arg(rows), 0});
}

Node* slice_scatter(Graph& g, const Node& n) {
  Node* self = n.input(0);
  Node* src = n.arg("src").node();
  int64_t d = dim_of(n, "dim", self->meta().dim());
  int64_t len = self->shape()[d];
  int64_t start = n.arg("start").is_absent() ? 0 : n.arg("start").to_int();
  if (start < 0) start += len;
  start = std::clamp<int64_t>(start, 0, len);
  int64_t k = src->shape()[d];
  if (k == 0) return g.call("clone", {self});
  Node* pos = g.call("add.Scalar", {g.call("mul.Scalar", {g.call("arange", {k}), n.arg("step")}),
                                    start});
  return g.call("scatter.src", {self, d, along(g, pos, d, src->shape()), src});
}

Node* select_scatter(Graph& g, const Node& n) {
  Node* self = n.input(0);
  int64_t d = dim_of(n, "dim", self->meta().dim());
  int64_t i = n.arg("index").to_int();
  if (i < 0) i += self->shape()[d];
  Node* src = g.call("unsqueeze", {n.arg("src").node(), d});
  Node* idx = g.call("full", {src->shape(), i}, {{"dtype", DType::Int64}});
  return g.call("scatter.src", {self, d, idx, src});
}

Node* index_reduce(Graph& g, const Node& n) {
  Node* self = n.input(0);
  Node* src = n.arg("source").node();
  Node* idx = cast(g, n.arg("index").node(), DType::Int64);
  if (self->meta().dim() == 0) {
    self = g.call("reshape", {self, Shape{1}});
    src = g.call("reshape", {src, Shape{1}});
  }
  int64_t d = dim_of(n, "dim", n.input(0)->meta().dim());
  Node* flat = g.call("reshape", {idx, Shape{shape_numel(idx->shape())}});
  Node* r = g.call("scatter_reduce.two", {self, d, along(g, flat, d, src->shape()), src,
                                          n.arg("reduce")},
                   {{"include_self", n.arg("include_self")}});
  return g.call("reshape", {r, n.shape()});
}

// scatter.reduce / scatter.value_reduce: scatter_reduce.two with include_self ("add" -> sum,
// "multiply" -> prod); the value form's src is the value in self's dtype, in index's shape.
Node* scatter_with_reduce(Graph& g, const Node& n) {
  Node* self = n.input(0);
  Node* idx = n.arg("index").node();
  Node* src = n.op()->schema.index_of("src") >= 0
                  ? n.arg("src").node()
                  : g.call("full", {Arg(idx->shape()), n.arg("value")}, {{"dtype", self->dtype()}});
  const char* red = n.arg("reduce").str() == "add" ? "sum" : "prod";
  return g.call("scatter_reduce.two", {self, n.arg("dim"), idx, src, red},
                {{"include_self", true}});
}

}  // namespace

void register_indexing_decompositions(DecompositionTable& t) {
  t.add("_local_scalar_dense.default", [](Graph& g, const Node& n) {
    return g.call("clone", {g.call("reshape", {n.input(0), Arg(Shape{})})});
  });
  t.add("stack.default", stack);

  t.add("repeat.default", repeat);

  t.add("flip.default", flip);

  t.add("roll.default", roll);

  t.add("tril.default", [](Graph& g, const Node& n) { return tri(g, n, true); });

  t.add("triu.default", [](Graph& g, const Node& n) { return tri(g, n, false); });

  t.add("masked_fill.Scalar", masked_fill);

  t.add("masked_fill.Tensor", masked_fill);
  t.add("diagonal.default", diagonal);

  t.add("diag.default", diag);

  t.add("diag_embed.default", diag_embed);

  t.add("take.default", take);

  t.add("index_fill.int_Scalar", index_fill);

  t.add("index_fill.int_Tensor", index_fill);

  t.add("rot90.default", rot90);

  t.add("narrow_copy.default", narrow_copy);

  t.add("isin.Tensor_Tensor", isin);

  t.add("bucketize.Tensor", bucketize);

  t.add("searchsorted.Tensor", searchsorted);

  t.add("index_copy.default", index_copy);

  t.add("put.default", put);

  t.add("masked_scatter.default", masked_scatter);

  t.add("unfold.default", unfold);

  t.add("block_diag.default", block_diag);

  t.add("slice_scatter.default", slice_scatter);

  t.add("select_scatter.default", select_scatter);

  t.add("index_reduce.default", index_reduce);

  t.add("scatter.reduce", scatter_with_reduce);

  t.add("scatter.value_reduce", scatter_with_reduce);
}

}  // namespace stax
