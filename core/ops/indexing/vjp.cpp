// VJP rules of the indexing ops. Reading at positions (gather, index, index_select) has the
// transposed gradient "accumulate at those positions" (scatter_add / index_put accumulate=True
// into zeros); writing (index_put, scatter) passes the gradient through except where it was
// overwritten. Index tensors get no gradient. cat hands each input its slice of the gradient.
#include "core/autodiff/joint_graph.h"
#include "core/autodiff/jvp.h"
#include "core/autodiff/vjp.h"
#include <algorithm>
#include <cmath>
#include <functional>
#include <unordered_map>

#include "core/graph/decompositions.h"
#include "core/graph/op_registry.h"
#include "core/ops/common/via_decomposition.h"
#include "core/ops/indexing/derivatives.h"
#include "core/support/error.h"
#include "core/ops/registration.h"

namespace stax {
namespace {

using namespace indexing_derivatives;  // NOLINT

// x zero-padded at the end of each dim up to `shape` (x is no larger than shape in any dim).
Node* pad_to(VjpContext& c, Node* x, const Shape& shape) {
  Node* r = x;
  for (size_t d = 0; d < shape.size(); ++d) {
    int64_t have = r->shape()[d];
    if (have == shape[d]) continue;
    Shape zs = r->shape();
    zs[d] = shape[d] - have;
    Node* z = c.zeros(zs, r->dtype(), r->meta().device);
    r = c.call("cat", {Arg(std::vector<Node*>{r, z}), static_cast<int64_t>(d)});
  }
  return r;
}

// The gradient of a scatter's src: the upstream gradient read at the scattered positions.
void give_src(VjpContext& c) {
  if (!c.needs("src")) return;
  Node* g = c.call("gather", {c.grad(), c.arg("dim"), c.in("index")});
  Node* src = c.in("src");
  if (src->meta().dim() > 0) g = pad_to(c, g, src->shape());
  c.give(src, c.reshape(g, src->shape()));
}

void index_add_vjp(VjpContext& c) {
  if (c.needs("self")) c.give("self", c.grad());
  if (c.needs("source")) {
    Node* src = c.in("source");
    Node* g = c.grad();
    if (g->meta().dim() == 0) g = c.reshape(g, Shape{1});
    Node* sel = c.call("index_select", {g, c.node()->meta().dim() == 0 ? Arg(0) : c.arg("dim"),
                                        c.reshape(c.in("index"), Shape{shape_numel(c.in("index")->shape())})});
    if (!(c.arg("alpha").is_number() && c.arg("alpha").to_double() == 1.0))
      sel = c.mul(sel, c.arg("alpha"));
    c.give(src, c.reshape(sel, src->shape()));
  }
}

void scatter_reduce_vjp(VjpContext& c) {
  if (!c.needs("self") && !c.needs("src")) return;
  const Node& n = *c.node();
  const std::string& red = c.arg("reduce").str();
  bool inc = c.arg("include_self").to_bool();
  ScatterTerms t = scatter_terms(c, n);
  Node* g = c.grad();
  auto gather = [&](Node* x) { return c.call("gather", {x, c.arg("dim"), c.in("index")}); };
  auto masked_self = [&](Node* x) {
    return inc ? x : c.call("where.ScalarSelf", {t.touched, 0.0, x});
  };
  if (red == "sum") {
    if (c.needs("self")) c.give("self", masked_self(g));
    if (c.needs("src")) c.give("src", gather(g));
  } else if (red == "mean") {
    Node* gn = c.div(g, t.count);
    if (c.needs("self")) c.give("self", inc ? gn : masked_self(g));
    if (c.needs("src")) c.give("src", gather(gn));
  } else {
    Node* gn = c.div(g, t.count);
    if (c.needs("self")) c.give("self", c.call("where.ScalarOther", {t.self_part, gn, 0.0}));
    if (c.needs("src"))
      c.give("src", c.call("where.ScalarOther", {t.src_eq, gather(gn), 0.0}));
  }
}

// flip and roll are permutations: the gradient is the inverse permutation of ḡ (flip again, roll
// back), the tangent the same permutation of ẋ.
void flip_vjp(VjpContext& c) {
  if (c.needs("self")) c.give("self", c.call("flip", {c.grad(), c.arg("dims")}));
}
void roll_vjp(VjpContext& c) {
  if (!c.needs("self")) return;
  std::vector<int64_t> back;
  for (int64_t s : c.arg("shifts").to_int_list()) back.push_back(-s);
  c.give("self", c.call("roll", {c.grad(), back, c.arg("dims")}));
}

// The reads: cat, gather, index, index_select.
void register_read_vjps(VjpTable& t) {
  t.add("cat.default", [](VjpContext& c) {
    std::vector<Node*> ts = c.arg("tensors").to_node_list();
    const Node* ref = nullptr;
    for (Node* n : ts)
      if (n && n->shape() != Shape{0}) {
        ref = n;
        break;
      }
    if (!ref) return;
    int64_t dim = wrap_dim(c.arg("dim").to_int(), ref->meta().dim(), "cat");
    int64_t offset = 0;
    for (Node* n : ts) {
      if (!n || (n->shape() == Shape{0} && n->meta().dim() != ref->meta().dim())) continue;
      int64_t size = n->shape()[dim];
      if (c.needs(n)) c.give(n, c.call("slice.Tensor", {c.grad(), dim, offset, offset + size, 1}));
      offset += size;
    }
  });
  // torch: grad.new_zeros(self.sizes()).scatter_add_(dim, index, grad)
  t.add("gather.default", [](VjpContext& c) {
    if (!c.needs("self")) return;
    Node* z = c.zeros_like(c.in("self"));
    c.give("self", c.call("scatter_add", {z, c.arg("dim"), c.in("index"), c.grad()}));
  });
  // torch: zeros_like(self).index_put_(indices, grad, accumulate=True)
  t.add("index.Tensor", [](VjpContext& c) {
    if (!c.needs("self")) return;
    Node* z = c.zeros_like(c.in("self"));
    c.give("self", c.call("index_put", {z, c.arg("indices"), c.grad(), true}));
  });
  t.add("index_select.default", [](VjpContext& c) {
    if (!c.needs("self")) return;
    Node* x = c.in("self");
    int64_t dim = wrap_dim(c.arg("dim").to_int(), x->meta().dim(), "index_select");
    Node* index = c.in("index");
    if (index->meta().dim() == 0) index = c.call("view", {index, Arg(std::vector<int64_t>{1})});
    Arg::List indices(static_cast<size_t>(x->meta().dim() == 0 ? 0 : dim), Arg());
    indices.emplace_back(index);
    Node* g = c.grad();
    if (x->meta().dim() == 0) g = c.reshape(g, Shape{1});
    Node* z = c.zeros(x->meta().dim() == 0 ? Shape{1} : x->shape(), x->dtype(), x->meta().device);
    Node* r = c.call("index_put", {z, Arg(std::move(indices)), g, true});
    c.give(x, c.reshape(r, x->shape()));
  });
}

// The writes (index_put, the scatters) and the Composite ops.
void register_write_and_composite_vjps(VjpTable& t) {
  // torch: self: accumulate ? grad : grad.index_put(indices, zeros_like(values), false);
  //        values: grad.index(indices), summed to values' shape.
  t.add("index_put.default", [](VjpContext& c) {
    if (c.needs("self")) {
      if (c.arg("accumulate").to_bool()) {
        c.give("self", c.grad());
      } else {
        Node* z = c.zeros_like(c.in("values"));
        c.give("self", c.call("index_put", {c.grad(), c.arg("indices"), z, false}));
      }
    }
    if (c.needs("values")) {
      // The mask form (x[mask] = v): ḡ at the True entries, summed to v's shape. Only a v that
      // broadcasts from one element has a static-shaped gradient: sum(where(mask, ḡ, 0)).
      const Arg::List& idx = c.arg("indices").list();
      int64_t at = -1;
      for (size_t i = 0; i < idx.size(); ++i)
        if (idx[i].is_node() && (idx[i].node()->dtype() == DType::Bool ||
                                 idx[i].node()->dtype() == DType::UInt8))
          at = static_cast<int64_t>(i);
      Node* values = c.in("values");
      if (at >= 0) {
        if (values->meta().numel() != 1)
          throw Error("autodiff", "%" + c.node()->name(),
                      "the gradient of index_put's values through a bool mask needs values of "
                      "one element (else its layout depends on the count of True entries)");
        Node* mask = idx[at].node();
        if (mask->dtype() != DType::Bool) mask = c.call("ne.Scalar", {mask, 0});
        const Shape& full = c.grad()->shape();
        Shape ms(full.size(), 1);
        for (int64_t k = 0; k < mask->meta().dim(); ++k) ms[at + k] = full[at + k];
        mask = c.reshape(mask, ms);
        Node* picked = c.call("where.ScalarOther", {mask, c.grad(), 0.0});
        c.give(values, c.reshape(c.call("sum", {picked}), values->shape()));
      } else {
        Node* v = c.call("index.Tensor", {c.grad(), c.arg("indices")});
        c.give("values", c.sum_to_shape(v, values->shape()));
      }
    }
  });
  t.add("scatter_add.default", [](VjpContext& c) {
    c.give("self", c.grad());
    give_src(c);
  });
  t.add("scatter.src", [](VjpContext& c) {
    if (c.needs("self"))
      c.give("self", c.call("scatter.value", {c.grad(), c.arg("dim"), c.in("index"), 0}));
    give_src(c);
  });
  t.add("scatter.value", [](VjpContext& c) {
    if (c.needs("self"))
      c.give("self", c.call("scatter.value", {c.grad(), c.arg("dim"), c.in("index"), 0}));
  });
  for (const char* op :
         {"stack.default", "repeat.default", "tril.default", "triu.default", "masked_fill.Scalar",
          "masked_fill.Tensor"}) t.add(op, vjp_via_decomposition);

  t.add("flip.default", flip_vjp);

  t.add("roll.default", roll_vjp);

  t.add("index_add.default", index_add_vjp);

  t.add("scatter_reduce.two", scatter_reduce_vjp);
  for (const char* op :
         {"diagonal.default", "diag.default", "diag_embed.default", "take.default",
          "index_fill.int_Scalar", "index_fill.int_Tensor", "rot90.default", "narrow_copy.default",
          "index_copy.default", "put.default", "masked_scatter.default", "unfold.default",
          "block_diag.default", "slice_scatter.default", "select_scatter.default",
          "index_reduce.default", "scatter.reduce", "scatter.value_reduce"})
    t.add(op, vjp_via_decomposition);
}

}  // namespace

void register_indexing_vjps(VjpTable& t) {
  register_read_vjps(t);
  register_write_and_composite_vjps(t);
}

}  // namespace stax
