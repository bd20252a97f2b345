// VJP rules of the neural-network ops (core/ops/nn/schemas.cpp).
//   convolution  the input's gradient is a convolution of ḡ with the same weight, transposed the
//                other way (output_padding chosen so the size matches); the weight's gradient is a
//                grouped convolution of the input with ḡ (batch and channel dims swapped, stride
//                and dilation swapped), cut to the kernel size; the bias's is Σ ḡ over all dims
//                but the channels. So the backward is convolutions again (and twice
//                differentiable).
//   embedding    embedding_dense_backward (padding_idx gets no gradient, scale_grad_by_freq).
//   nll_loss     nll_loss_backward (pointwise through a one-hot mask; no gradient for weight).
//   max/avg_poolNd  the window gradients (max: to the first maximum of each window, as torch)
//                placed back with interleaved zeros and constant_pad_nd (no scatter: the compiled
//                backward fuses).
//   the others   through their decomposition (vjp_by_decomposition).
#include <cmath>
#include <functional>
#include <limits>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "core/autodiff/jvp.h"
#include "core/autodiff/vjp.h"
#include "core/ops/common/via_decomposition.h"
#include "core/ops/nn/derivatives.h"
#include "core/graph/decompositions.h"
#include "core/ops/nn/params.h"
#include "core/graph/op_registry.h"
#include "core/support/error.h"
#include "core/ops/registration.h"

namespace stax {

std::vector<std::string> nn_decomposed_ops() {
  DecompositionTable t;
  register_nn_decompositions(t);
  return t.names();
}

void key_random_nodes(const Node& n, const std::vector<Node*>& fresh) {
  auto it = n.attrs.find("rng_seed");
  const Arg key = it != n.attrs.end() ? it->second : Arg(n.name());
  for (Node* m : fresh)
    if (m->is_call() && m->op()->category == OpCategory::Random && !m->attrs.count("rng_seed"))
      m->attrs.emplace("rng_seed", key);
}

void vjp_by_decomposition(VjpContext& c) {
  Graph& g = c.graph();
  Node* n = c.node();
  const std::string where = "%" + n->name();
  const DecompositionFn* fn = default_decompositions().find(n->op()->name());
  if (!fn) throw Error("autodiff", where, "no decomposition to differentiate " + n->op()->name());
  bool any = false;
  for (Node* in : n->input_nodes()) any = any || c.needs(in);
  if (!any) return;
  std::unordered_set<const Node*> before(g.nodes().begin(), g.nodes().end());
  Node* r = (*fn)(g, *n);
  std::vector<Node*> fresh;
  for (Node* m : g.nodes())
    if (!before.count(m)) {
      m->set_phase(c.phase());
      fresh.push_back(m);
    }
  key_random_nodes(*n, fresh);
  std::unordered_set<const Node*> local;
  for (Node* m : fresh) {
    if (!m->is_call() || !m->op()->differentiable || !is_floating(m->dtype())) continue;
    for (Node* in : m->input_nodes())
      if (local.count(in) || c.needs(in)) {
        local.insert(m);
        break;
      }
  }
  if (!local.count(r)) {
    if (before.count(r)) c.give(r, c.grad());  // the decomposition returned an input
    return;
  }
  auto needs = [&](const Node* m) { return local.count(m) > 0 || c.needs(m); };
  std::unordered_map<const Node*, Node*> adjoint{{r, c.grad()}};
  const VjpTable& rules = default_vjp_table();
  for (auto it = fresh.rbegin(); it != fresh.rend(); ++it) {
    Node* m = *it;
    auto adj = adjoint.find(m);
    if (adj == adjoint.end() || !local.count(m)) continue;
    const VjpFn* rule = rules.find(m->op()->name());
    if (!rule)
      throw Error("autodiff", where,
                  "no VJP rule for " + m->op()->name() + " in the decomposition of " +
                      n->op()->name());
    VjpContext sub(g, m, adj->second, needs, c.phase());
    (*rule)(sub);
    for (auto [x, contribution] : sub.contributions()) {
      if (contribution->shape() != x->shape())
        throw Error("autodiff", where,
                    "the VJP rule of " + m->op()->name() + " gave a gradient of shape " +
                        shape_str(contribution->shape()) + " for an input of shape " +
                        shape_str(x->shape()));
      Node* cg = c.cast(contribution, x->dtype());
      if (local.count(x)) {
        auto [a, fresh_adj] = adjoint.emplace(x, cg);
        if (!fresh_adj) a->second = c.add(a->second, cg);
      } else {
        c.give(x, cg);
      }
    }
  }
}

namespace {

using nn::Ints;

// (N, C, S...) -> (C/G per group ..): a tensor's batch and channel dims regrouped for the weight
// gradient: `as_input` gives (C/G, G*N, S...), otherwise (G*C/G, N, S...).
Node* regroup(VjpContext& c, Node* t, int64_t G, bool as_input) {
  Shape s = t->shape();
  int64_t N = s[0], C = s[1];
  Shape split{N, G, C / G};
  split.insert(split.end(), s.begin() + 2, s.end());
  Node* v = c.reshape(t, split);
  int64_t r = static_cast<int64_t>(split.size());
  Ints perm = as_input ? Ints{2, 1, 0} : Ints{1, 2, 0};
  for (int64_t d = 3; d < r; ++d) perm.push_back(d);
  Node* p = c.call("permute", {v, Arg(perm)});
  Shape out = as_input ? Shape{C / G, G * N} : Shape{C, N};
  out.insert(out.end(), s.begin() + 2, s.end());
  return c.reshape(p, out);
}

void convolution_vjp(VjpContext& c) {
  Node* x = c.in("input");
  Node* w = c.in("weight");
  Node* b = c.in("bias");
  Node* gy = c.grad();
  Node* n = c.node();
  size_t sp = static_cast<size_t>(x->meta().dim() - 2);
  nn::ConvParams p = nn::conv_params([n](const char* k) -> const Arg& { return n->arg(k); }, sp,
                                     "%" + n->name());
  int64_t G = p.groups;
  auto conv = [&](Node* in, Node* wt, const Ints& s, const Ints& pad, const Ints& d, bool tr,
                  const Ints& op) {
    return c.call("convolution", {in, wt, Arg(), Arg(s), Arg(pad), Arg(d), tr, Arg(op), G});
  };
  // Cuts the spatial dims of t down to `want` (from index 0).
  auto cut = [&](Node* t, const Shape& want) {
    for (size_t i = 0; i < sp; ++i) {
      int64_t d = static_cast<int64_t>(2 + i);
      if (t->shape()[d] != want[d]) t = c.call("slice.Tensor", {t, d, 0, want[d], 1});
    }
    return t;
  };
  if (c.needs(x)) {
    Node* gx;
    if (!p.transposed) {
      Ints op(sp);
      for (size_t i = 0; i < sp; ++i) {
        int64_t L = x->shape()[2 + i], K = w->shape()[2 + i], O = gy->shape()[2 + i];
        op[i] = L - ((O - 1) * p.stride[i] - 2 * p.padding[i] + p.dilation[i] * (K - 1) + 1);
      }
      gx = conv(gy, w, p.stride, p.padding, p.dilation, true, op);
    } else {
      gx = cut(conv(gy, w, p.stride, p.padding, p.dilation, false, Ints(sp, 0)), x->shape());
    }
    c.give(x, gx);
  }
  if (c.needs(w)) {
    // stride and dilation swap roles; the result is (C_a/G, G*C_b/G, K'...) with K' >= K.
    Node* in = p.transposed ? regroup(c, gy, G, true) : regroup(c, x, G, true);
    Node* wt = p.transposed ? regroup(c, x, G, false) : regroup(c, gy, G, false);
    Node* gw = conv(in, wt, p.dilation, p.padding, p.stride, false, Ints(sp, 0));
    Shape want = gw->shape();
    for (size_t i = 0; i < sp; ++i) want[2 + i] = w->shape()[2 + i];
    gw = cut(gw, want);
    Ints perm{1, 0};
    for (size_t i = 0; i < sp; ++i) perm.push_back(static_cast<int64_t>(2 + i));
    c.give(w, c.call("permute", {gw, Arg(perm)}));
  }
  if (c.needs(b)) {
    Ints dims{0};
    for (size_t i = 0; i < sp; ++i) dims.push_back(static_cast<int64_t>(2 + i));
    c.give(b, c.call("sum.dim_IntList", {gy, Arg(dims), false}));
  }
}

// Places a window's gradient t (the output's shape) back at the input positions the window read:
// per spatial dim, zeros interleaved for the stride (cat + view), then a constant_pad_nd (negative
// pads cut) to the offset k*d - padding. All base ops with lowering rules (no scatter), so the
// compiled backward stays fused.
Node* place_window(VjpContext& c, Node* t, const Shape& xs, const nn::PoolParams& p,
                   const Ints& k) {
  size_t sp = p.kernel.size();
  int64_t rank = static_cast<int64_t>(xs.size());
  for (size_t i = 0; i < sp; ++i) {
    int64_t dim = rank - static_cast<int64_t>(sp) + static_cast<int64_t>(i);
    int64_t O = t->shape()[dim], s = p.stride[i];
    if (s > 1 && O > 0) {
      Node* u = c.call("unsqueeze", {t, dim + 1});
      Shape zs = u->shape();
      zs[dim + 1] = s - 1;
      Node* z = c.zeros(zs, t->dtype(), t->meta().device);
      Node* cat = c.call("cat", {Arg(std::vector<Node*>{u, z}), dim + 1});
      Shape merged = t->shape();
      merged[dim] = O * s;
      t = c.reshape(cat, merged);
    }
    int64_t left = k[i] * p.dilation[i] - p.padding[i];
    int64_t right = xs[dim] - (left + t->shape()[dim]);
    if (left == 0 && right == 0) continue;
    Ints pad(static_cast<size_t>(2 * (rank - dim)), 0);
    pad[pad.size() - 2] = left;
    pad[pad.size() - 1] = right;
    t = c.call("constant_pad_nd", {t, Arg(pad), 0});
  }
  return t;
}

// max_poolNd: the gradient goes to the first maximum of each window in row-major kernel order (a
// NaN counts as the maximum), as torch's kernel picks it; avg_poolNd: ḡ / divisor to every cell.
void pool_vjp(VjpContext& c, size_t sp, bool max) {
  Node* x = c.in("self");
  if (!c.needs(x)) return;
  Node* n = c.node();
  Graph& g = c.graph();
  nn::PoolParams p =
      nn::pool_params([n](const char* k) -> const Arg& { return n->arg(k); }, sp, max, "%" + n->name());
  std::unordered_set<const Node*> before(g.nodes().begin(), g.nodes().end());
  auto adopt = [&] {  // nodes emitted through the graph directly get the rule's phase
    for (Node* m : g.nodes())
      if (!before.count(m)) {
        m->set_phase(c.phase());
        before.insert(m);
      }
  };
  Node* gy = c.grad();
  std::vector<Node*> grads;
  if (max) {
    double ninf = -std::numeric_limits<double>::infinity();
    std::vector<Node*> w = nn::pool_windows(g, x, p, ninf, ninf);
    adopt();
    Node* y = c.out();
    Node* taken = nullptr;
    for (Node* wk : w) {
      Node* hit = c.call("logical_or", {c.call("eq.Tensor", {wk, y}), c.call("isnan", {wk})});
      Node* first = taken ? c.call("logical_and", {hit, c.call("logical_not", {taken})}) : hit;
      taken = taken ? c.call("logical_or", {taken, hit}) : hit;
      grads.push_back(c.call("where.ScalarOther", {first, gy, 0}));
    }
  } else {
    Node* xf = x->dtype() == DType::Float16 || x->dtype() == DType::BFloat16 ? c.cast(x, DType::Float32) : x;
    nn::AvgDivisor d = nn::avg_pool_divisor(g, *n, xf, p);
    adopt();
    Node* share = d.map ? c.div(gy, d.map) : c.div(gy, Arg(d.scalar));
    size_t count = 1;
    for (int64_t k : p.kernel) count *= static_cast<size_t>(k);
    grads.assign(count, share);
  }
  Ints k(sp, 0);
  Node* total = nullptr;
  for (Node* gk : grads) {
    Node* placed = place_window(c, gk, x->shape(), p, k);
    total = total ? c.add(total, placed) : placed;
    for (size_t i = sp; i-- > 0;) {
      if (++k[i] < p.kernel[i]) break;
      k[i] = 0;
    }
  }
  c.give(x, total);
}

// nll_loss / nll_loss2d: aten's nll_loss_backward (its decomposition writes through a one-hot
// mask, so the backward is pointwise); total_weight = Σ of the targets' class weights (mean
// reduction only). No gradient for weight (torch has none either).
void nll_loss_vjp(VjpContext& c) {
  Node* x = c.in("self");
  if (!c.needs(x)) return;
  Node* t = c.in("target");
  int64_t red = c.arg("reduction").to_int();
  Node* total = c.zeros({}, x->dtype(), x->meta().device);
  if (red == nn::kReductionMean) {
    Node* tl = c.cast(t, DType::Int64);
    Node* ignored = c.call("eq.Scalar", {tl, c.arg("ignore_index")});
    Node* keep = c.call("logical_not", {ignored});
    Node* w = c.cast(keep, x->dtype());
    if (Node* weight = c.in("weight")) {
      Node* safe = c.call("where.ScalarSelf", {ignored, 0, tl});
      Node* flat = c.reshape(safe, Shape{shape_numel(safe->shape())});
      Node* wsel = c.reshape(c.call("index_select", {weight, 0, flat}), safe->shape());
      w = c.call("where.ScalarOther", {keep, wsel, 0});
    }
    total = c.call("sum.default", {w});
  }
  c.give(x, c.call("nll_loss_backward", {c.grad(), x, t, c.arg("weight"), red,
                                         c.arg("ignore_index"), total}));
}

void embedding_vjp(VjpContext& c) {
  Node* w = c.in("weight");
  if (!c.needs(w)) return;
  c.give(w, c.call("embedding_dense_backward", {c.grad(), c.in("indices"), w->shape()[0],
                                                c.arg("padding_idx"), c.arg("scale_grad_by_freq")}));
}

}  // namespace

void register_nn_vjps(VjpTable& t) {
  t.add("convolution.default", convolution_vjp);
  t.add("embedding.default", embedding_vjp);
  t.add("nll_loss.default", nll_loss_vjp);
  t.add("nll_loss2d.default", nll_loss_vjp);
  std::set<std::string> own{"embedding.default", "nll_loss.default", "nll_loss2d.default"};
  for (size_t sp = 1; sp <= 3; ++sp) {
    std::string d = std::to_string(sp) + "d.default";
    t.add("max_pool" + d, [sp](VjpContext& c) { pool_vjp(c, sp, true); });
    t.add("avg_pool" + d, [sp](VjpContext& c) { pool_vjp(c, sp, false); });
    own.insert({"max_pool" + d, "avg_pool" + d});
  }
  for (const std::string& op : nn_decomposed_ops())
    if (!own.count(op)) t.add(op, vjp_by_decomposition);
  // The nn.functional ops composed from other ops (functional_decompositions.cpp).
  for (const std::string& op : nn_functional_ops()) t.add(op, vjp_via_decomposition);
}

}  // namespace stax
