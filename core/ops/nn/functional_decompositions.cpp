// Decompositions of the nn.functional ops composed from other ops: the losses (huber,
// soft_margin, binary_cross_entropy, multi_margin), the distances (dist, cdist, pdist),
// pixel_(un)shuffle, the .vec overloads of upsampling and the pooling overloads, renorm. Their
// VJP / JVP rules differentiate these entries (via_decomposition.h); nn's own decomposition
// table (decompositions.cpp) is the list nn's decomposition-based rules cover.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/graph/decompositions.h"
#include "core/graph/op_registry.h"
#include "core/ops/common/decomposition_helpers.h"
#include "core/ops/nn/losses.h"
#include "core/ops/nn/params.h"
#include "core/ops/nn/derivatives.h"
#include "core/ops/registration.h"
#include "core/support/error.h"

namespace stax {
namespace {

using namespace losses;  // NOLINT
using Ints = std::vector<int64_t>;

using decomp::cast;
std::string where(const Node& n) { return "%" + n.name(); }
int64_t dim_of(const Node& n, const char* p, int64_t rank) {
  return wrap_dim(n.arg(p).to_int(), std::max<int64_t>(rank, 1), where(n));
}

// The tensor inputs cast to the node's dtype (torch computes in the promoted type).
Node* in(Graph& g, const Node& n, const char* p) { return cast(g, n.arg(p).node(), n.dtype()); }

Node* huber(Graph& g, const Node& n) {
  double delta = n.arg("delta").to_double();
  Node* z = g.call("abs", {g.call("sub.Tensor", {in(g, n, "self"), in(g, n, "target")})});
  Node* quad = g.call("mul.Tensor", {g.call("mul.Scalar", {z, 0.5}), z});
  Node* lin = g.call("mul.Scalar", {g.call("sub.Scalar", {z, 0.5 * delta}), delta});
  Node* l = g.call("where.self", {g.call("lt.Scalar", {z, delta}), quad, lin});
  return reduce_loss(g, l, n.arg("reduction").to_int());
}

Node* soft_margin(Graph& g, const Node& n) {
  Node* e = g.call("mul.Tensor", {g.call("neg", {in(g, n, "self")}), in(g, n, "target")});
  Node* l = g.call("log1p", {g.call("exp", {e})});
  return reduce_loss(g, l, n.arg("reduction").to_int());
}

// (y - 1) max(log1p(-x), -100) - y max(log(x), -100), times weight.
Node* bce(Graph& g, const Node& n) {
  Node* x = n.input(0);
  Node* y = cast(g, n.input(1), x->dtype());
  Node* l1 = g.call("clamp_min", {g.call("log1p", {g.call("neg", {x})}), -100});
  Node* l0 = g.call("clamp_min", {g.call("log", {x}), -100});
  Node* l = g.call("sub.Tensor", {g.call("mul.Tensor", {g.call("sub.Scalar", {y, 1}), l1}),
                                  g.call("mul.Tensor", {y, l0})});
  if (!n.arg("weight").is_absent())
    l = g.call("mul.Tensor", {l, cast(g, n.arg("weight").node(), x->dtype())});
  return reduce_loss(g, l, n.arg("reduction").to_int());
}

Node* dist(Graph& g, const Node& n) {
  Node* d = g.call("sub.Tensor", {n.input(0), n.input(1)});
  return g.call("linalg_vector_norm", {d, n.arg("p")});
}

Node* pixel_shuffle(Graph& g, const Node& n, bool up) {
  Node* x = n.input(0);
  int64_t r = n.arg(up ? "upscale_factor" : "downscale_factor").to_int();
  Shape s = x->shape();
  size_t b = s.size() - 3;
  Shape batch(s.begin(), s.begin() + b);
  int64_t c = s[b], h = s[b + 1], w = s[b + 2];
  Shape mid = batch, out = batch;
  Ints perm;
  for (size_t i = 0; i < b; ++i) perm.push_back(static_cast<int64_t>(i));
  int64_t B = static_cast<int64_t>(b);
  if (up) {
    mid.insert(mid.end(), {c / (r * r), r, r, h, w});
    perm.insert(perm.end(), {B, B + 3, B + 1, B + 4, B + 2});
    out.insert(out.end(), {c / (r * r), h * r, w * r});
  } else {
    mid.insert(mid.end(), {c, h / r, r, w / r, r});
    perm.insert(perm.end(), {B, B + 2, B + 4, B + 1, B + 3});
    out.insert(out.end(), {c * r * r, h / r, w / r});
  }
  Node* y = g.call("permute", {g.call("reshape", {x, mid}), perm});
  return g.call("reshape", {g.call("clone", {y}), out});
}

// ---- the second group

Node* zeros_of(Graph& g, const Shape& s, DType t) {
  return g.call("zeros", {s}, {{"dtype", t}});
}

Node* max_unpool(Graph& g, const Node& n, size_t k) {
  Node* x = n.input(0);
  Node* idx = n.input(1);
  Shape s = x->shape();
  Shape lead(s.begin(), s.end() - k);
  int64_t in = 1;
  for (size_t i = s.size() - k; i < s.size(); ++i) in *= s[i];
  Ints os = n.arg("output_size").to_int_list();
  int64_t out = 1;
  for (int64_t v : os) out *= v;
  Shape flat_in = lead, flat_out = lead, final = lead;
  flat_in.push_back(in);
  flat_out.push_back(out);
  final.insert(final.end(), os.begin(), os.end());
  Node* xs = g.call("reshape", {x, flat_in});
  Node* is = g.call("reshape", {idx, flat_in});
  Node* r = g.call("scatter.src", {zeros_of(g, flat_out, x->dtype()),
                                   static_cast<int64_t>(lead.size()), is, xs});
  return g.call("reshape", {r, final});
}

// upsample_*.vec -> the fixed-size overload: the output size, and the scales when given.
Node* upsample_vec(Graph& g, const Node& n, const char* target, size_t spatial, bool corners) {
  Node* x = n.input(0);
  const Arg& sf = n.arg("scale_factors");
  Shape osize = n.shape();
  Ints size(osize.end() - spatial, osize.end());
  std::vector<Arg> args{x, size};
  if (corners) args.push_back(n.arg("align_corners"));
  Kwargs kw;
  if (!sf.is_absent()) {
    const char* names[] = {"scales_h", "scales_w"};
    for (size_t i = 0; i < spatial; ++i)
      kw.emplace_back(spatial == 1 ? "scales" : names[i], Arg(sf.list()[i].to_double()));
  }
  return g.call(target, std::move(args), std::move(kw));
}

Node* upsample_nearest1d_vec(Graph& g, const Node& n) {
  Node* x = g.call("unsqueeze", {n.input(0), 2});
  Kwargs kw;
  if (!n.arg("scale_factors").is_absent())
    kw.emplace_back("scales_w", Arg(n.arg("scale_factors").list()[0].to_double()));
  Node* y = g.call("upsample_nearest2d", {x, Ints{1, n.shape().back()}}, std::move(kw));
  return g.call("squeeze.dim", {y, 2});
}

Node* renorm(Graph& g, const Node& n) {
  Node* x = n.input(0);
  int64_t rank = x->meta().dim();
  int64_t d = dim_of(n, "dim", rank);
  Ints dims;
  for (int64_t i = 0; i < rank; ++i)
    if (i != d) dims.push_back(i);
  Node* nrm = g.call("linalg_vector_norm", {x, n.arg("p"), dims, true});
  Node* big = g.call("gt.Scalar", {nrm, n.arg("maxnorm")});
  Node* f = g.call("div.Tensor", {g.call("full_like", {nrm, n.arg("maxnorm")}),
                                  g.call("add.Scalar", {nrm, 1e-7})});
  return g.call("mul.Tensor", {x, g.call("where.ScalarOther", {big, f, 1.0})});
}

// ||a_i - b_j||_p over the last dim. For p other than 0, 1 and inf the root is guarded where the
// sum is 0 (coincident points): the distance is 0 there and so is its gradient, as torch's
// cdist backward gives, instead of sqrt'(0) * 0 = NaN.
Node* pnorm_last(Graph& g, Node* diff, const Arg& p) {
  double pv = p.to_double();
  if (pv == 0 || pv == 1 || std::isinf(pv)) return g.call("linalg_vector_norm", {diff, p, Ints{-1}});
  Node* pw = pv == 2 ? g.call("mul.Tensor", {diff, diff})
                     : g.call("pow.Tensor_Scalar", {g.call("abs", {diff}), pv});
  Node* s = g.call("sum.dim_IntList", {pw, Ints{-1}});
  Node* zero = g.call("eq.Scalar", {s, 0});
  Node* safe = g.call("where.ScalarSelf", {zero, 1.0, s});
  Node* root = pv == 2 ? g.call("sqrt", {safe}) : g.call("pow.Tensor_Scalar", {safe, 1.0 / pv});
  return g.call("where.ScalarSelf", {zero, 0.0, root});
}

Node* cdist_of(Graph& g, Node* a, Node* b, const Arg& p) {
  Node* diff = g.call("sub.Tensor", {g.call("unsqueeze", {a, -2}), g.call("unsqueeze", {b, -3})});
  return pnorm_last(g, diff, p);
}

Node* cdist(Graph& g, const Node& n) {
  return cdist_of(g, n.arg("x1").node(), n.arg("x2").node(), n.arg("p"));
}

// The distances of the pairs i < j only (triu_indices(n, n, 1)), so the zero distances of the
// diagonal never enter the gradient.
Node* pdist(Graph& g, const Node& n) {
  Node* x = n.input(0);
  int64_t rows = x->shape()[0];
  if (rows < 2) return zeros_of(g, Shape{0}, x->dtype());
  Node* pairs = g.call("triu_indices", {rows, rows, 1});
  Node* i = g.call("select.int", {pairs, 0, 0});
  Node* j = g.call("select.int", {pairs, 0, 1});
  Node* diff = g.call("sub.Tensor", {g.call("index_select", {x, 0, i}),
                                     g.call("index_select", {x, 0, j})});
  return pnorm_last(g, diff, n.arg("p"));
}

Node* multi_margin(Graph& g, const Node& n) {
  Node* x = n.input(0);
  int64_t classes = x->meta().dim() == 0 ? 1 : x->shape().back();
  int64_t rows = x->meta().dim() == 2 ? x->shape()[0] : 1;
  Node* x2 = g.call("reshape", {x, Shape{rows, classes}});
  Node* t = g.call("reshape", {n.arg("target").node(), Shape{rows, 1}});
  Node* xy = g.call("gather", {x2, 1, t});
  Node* z = g.call("add.Tensor", {g.call("add.Scalar", {g.call("neg", {xy}), n.arg("margin")}), x2});
  Node* h = g.call("relu", {z});
  if (n.arg("p").to_double() == 2) h = g.call("mul.Tensor", {h, h});
  if (!n.arg("weight").is_absent())
    h = g.call("mul.Tensor", {h, g.call("reshape", {g.call("index_select",
                                                           {n.arg("weight").node(), 0,
                                                            g.call("reshape", {t, Shape{rows}})}),
                                                    Shape{rows, 1}})});
  Node* own = g.call("eq.Tensor", {g.call("arange", {classes}), t});
  h = g.call("where.ScalarSelf", {own, 0.0, h});
  Node* l = g.call("div.Scalar", {g.call("sum.dim_IntList", {h, Ints{1}}), classes});
  int64_t red = n.arg("reduction").to_int();
  if (red == nn::kReductionNone) return g.call("reshape", {l, n.shape()});
  return reduce_loss(g, l, red);
}

}  // namespace

void register_functional_decompositions(DecompositionTable& t) {
  t.add("huber_loss.default", huber);

  t.add("soft_margin_loss.default", soft_margin);

  t.add("binary_cross_entropy.default", bce);

  t.add("dist.default", dist);

  t.add("pixel_shuffle.default", [](Graph& g, const Node& n) { return pixel_shuffle(g, n, true); });

  t.add("pixel_unshuffle.default",
        [](Graph& g, const Node& n) { return pixel_shuffle(g, n, false); });

  for (const char* op : {"_adaptive_avg_pool2d.default", "_adaptive_avg_pool3d.default"})
    t.add(op, [](Graph& g, const Node& n) {
      return g.call(n.op()->schema.base.substr(1), {n.input(0), n.arg("output_size")});
    });

  t.add("max_unpool2d.default", [](Graph& g, const Node& n) { return max_unpool(g, n, 2); });

  t.add("max_unpool3d.default", [](Graph& g, const Node& n) { return max_unpool(g, n, 3); });

  t.add("upsample_bilinear2d.vec", [](Graph& g, const Node& n) {
    return upsample_vec(g, n, "upsample_bilinear2d", 2, true);
  });

  t.add("upsample_nearest2d.vec", [](Graph& g, const Node& n) {
    return upsample_vec(g, n, "upsample_nearest2d", 2, false);
  });

  t.add("upsample_nearest1d.vec", upsample_nearest1d_vec);

  t.add("renorm.default", renorm);

  t.add("_cdist_forward.default", cdist);

  t.add("_pdist_forward.default", pdist);

  t.add("multi_margin_loss.default", multi_margin);
}

std::vector<std::string> nn_functional_ops() {
  DecompositionTable t;
  register_functional_decompositions(t);
  return t.names();
}

}  // namespace stax
