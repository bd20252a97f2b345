// Decompositions of the neural-network ops (core/ops/nn/schemas.cpp) into base ops:
//
//   conv1d/2d/3d, conv_transpose*     -> convolution (unsqueeze / squeeze for an unbatched input)
//   conv1d/2d/3d.padding              -> (constant_pad_nd for an odd 'same' padding,) convolution
//   batch_norm                        -> mean, sub, mul, rsqrt (batch or running statistics), affine
//   group_norm                        -> view (N, G, -1), mean, sub, mul, rsqrt, view back, affine
//   embedding                         -> view, index_select, view
//   embedding_dense_backward          -> where, scatter_add (, index_select, div: scale_grad_by_freq)
//   max_poolNd / avg_poolNd           -> constant_pad_nd, one strided slice per kernel offset,
//                                        maximum / add chains (avg: div by a count or a count map)
//   adaptive_avg_poolNd               -> per dim: view + mean (divisible) or mean of slices + cat
//   constant_pad_nd                   -> slice (negative pads), full + cat
//   reflection_pad / replication_pad  -> arange, abs / clamp index arithmetic, index_select
//   upsample_nearest2d                -> arange, mul, floor, clamp, index_select per dim
//   upsample_bilinear2d               -> source indices and weights per dim (as torch computes
//                                        them, in float32), index_select, mul, add: W then H
//   nll_loss / nll_loss2d             -> gather, where, mul, sum / div
//   nll_loss_backward                 -> mul, div, where on the one-hot mask
//   mse_loss, smooth_l1_loss, binary_cross_entropy_with_logits -> pointwise + sum / mean
//   cross_entropy_loss                -> log_softmax + nll_loss (class indices) or mul + sum
//                                        (probabilities), label smoothing as torch
//   scaled_dot_product_attention      -> matmul, mul, where (mask / causal), softmax,
//                                        dropout (dropout_p > 0), matmul
//                                        (float16 / bfloat16: in float32, the output rounded once)
// Every entry keeps torch's order of floating-point operations where torch's CPU kernel has one
// (upsampling indices and weights); pooling windows are combined in row-major kernel order.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/graph/decompositions.h"
#include "core/ops/nn/losses.h"
#include "core/ops/nn/params.h"
#include "core/graph/op_registry.h"
#include "core/support/error.h"
#include "core/ops/registration.h"

namespace stax {

namespace {

using namespace losses;  // NOLINT
using nn::Ints;

bool half_like(DType t) { return t == DType::Float16 || t == DType::BFloat16; }
Node* cast(Graph& g, Node* x, DType t) { return x->dtype() == t ? x : g.call("to.dtype", {x, t}); }
Node* tensor_arg(const Node& n, const char* p) {
  const Arg& a = n.arg(p);
  return a.is_node() ? a.node() : nullptr;
}
std::string where_of(const Node& n) { return "%" + n.name(); }
auto getter(const Node& n) {
  return [&n](const char* p) -> const Arg& { return n.arg(p); };
}
Kwargs dtype_kw(DType t) { return {{"dtype", Arg(t)}}; }

// (C,) -> (C, 1, ..., 1) to broadcast over the channel dim 1 of a rank-`rank` tensor.
Node* channel_view(Graph& g, Node* p, int64_t rank) {
  Shape s{p->shape()[0]};
  for (int64_t i = 2; i < rank; ++i) s.push_back(1);
  return g.call("view", {p, Arg(s)});
}

// ---- convolution entry points --------------------------------------------------------------

Node* conv_entry_decomp(Graph& g, const Node& n, int sp, bool transposed) {
  Node* x = n.input(0);
  bool unbatched = x->meta().dim() == sp + 1;
  if (unbatched) x = g.call("unsqueeze", {x, 0});
  size_t usp = static_cast<size_t>(sp);
  std::string w = where_of(n);
  Ints stride = nn::expand_list(n.arg("stride"), usp, "stride", w, 1);
  Ints pad = nn::expand_list(n.arg("padding"), usp, "padding", w, 0);
  Ints dil = nn::expand_list(n.arg("dilation"), usp, "dilation", w, 1);
  Ints op = transposed ? nn::expand_list(n.arg("output_padding"), usp, "output_padding", w, 0)
                       : Ints(usp, 0);
  Node* y = g.call("convolution", {x, n.input(1), n.arg("bias"), Arg(stride), Arg(pad), Arg(dil),
                                   transposed, Arg(op), n.arg("groups")});
  return unbatched ? g.call("squeeze.dim", {y, 0}) : y;
}

// conv1d/2d/3d.padding: "valid" = no padding; "same" = d (k - 1) in total, the odd element on the
// right through constant_pad_nd.
Node* conv_padding_decomp(Graph& g, const Node& n, int sp) {
  Node* x = n.input(0);
  Node* w = n.input(1);
  bool unbatched = x->meta().dim() == sp + 1;
  if (unbatched) x = g.call("unsqueeze", {x, 0});
  size_t usp = static_cast<size_t>(sp);
  std::string where = where_of(n);
  Ints stride = nn::expand_list(n.arg("stride"), usp, "stride", where, 1);
  Ints dil = nn::expand_list(n.arg("dilation"), usp, "dilation", where, 1);
  Ints pad(usp, 0), extra;
  bool any_extra = false;
  if (n.arg("padding").str() == "same") {
    for (size_t i = 0; i < usp; ++i) {
      int64_t total = dil[i] * (w->shape()[2 + i] - 1);
      pad[i] = total / 2;
    }
    for (size_t i = usp; i-- > 0;) {  // constant_pad_nd's list starts at the last dim
      int64_t total = dil[i] * (w->shape()[2 + i] - 1);
      extra.push_back(0);
      extra.push_back(total - 2 * (total / 2));
      any_extra = any_extra || total % 2 != 0;
    }
  }
  if (any_extra) x = g.call("constant_pad_nd", {x, Arg(extra), 0});
  Node* y = g.call("convolution", {x, w, n.arg("bias"), Arg(stride), Arg(pad), Arg(dil), false,
                                   Arg(Ints(usp, 0)), n.arg("groups")});
  return unbatched ? g.call("squeeze.dim", {y, 0}) : y;
}

// ---- normalization -------------------------------------------------------------------------

Node* affine(Graph& g, const Node& n, Node* y, int64_t rank) {
  if (Node* w = tensor_arg(n, "weight")) y = g.call("mul.Tensor", {y, channel_view(g, w, rank)});
  if (Node* b = tensor_arg(n, "bias")) y = g.call("add.Tensor", {y, channel_view(g, b, rank)});
  return y;
}

Node* batch_norm_decomp(Graph& g, const Node& n) {
  Node* x = n.input(0);
  DType in = x->dtype();
  int64_t rank = x->meta().dim();
  if (half_like(in)) x = cast(g, x, DType::Float32);
  double eps = n.arg("eps").to_double();
  Node* rm = tensor_arg(n, "running_mean");
  Node* rv = tensor_arg(n, "running_var");
  Node *xc, *var;
  if (n.arg("training").to_bool() || !rm || !rv) {
    Ints dims{0};
    for (int64_t d = 2; d < rank; ++d) dims.push_back(d);
    Node* mean = g.call("mean.dim", {x, Arg(dims), true});
    xc = g.call("sub.Tensor", {x, mean});
    var = g.call("mean.dim", {g.call("mul.Tensor", {xc, xc}), Arg(dims), true});
  } else {
    xc = g.call("sub.Tensor", {x, cast(g, channel_view(g, rm, rank), x->dtype())});
    var = cast(g, channel_view(g, rv, rank), x->dtype());
  }
  Node* y = g.call("mul.Tensor", {xc, g.call("rsqrt", {g.call("add.Scalar", {var, eps})})});
  return cast(g, affine(g, n, y, rank), in);
}

Node* group_norm_decomp(Graph& g, const Node& n) {
  Node* x = n.input(0);
  DType in = x->dtype();
  Shape s = x->shape();
  int64_t rank = x->meta().dim();
  int64_t G = n.arg("num_groups").to_int();
  if (half_like(in)) x = cast(g, x, DType::Float32);
  int64_t per = shape_numel(s) / std::max<int64_t>(1, s[0] * G);
  Node* xg = g.call("view", {x, Arg(Shape{s[0], G, per})});
  Node* mean = g.call("mean.dim", {xg, Arg(Ints{2}), true});
  Node* xc = g.call("sub.Tensor", {xg, mean});
  Node* var = g.call("mean.dim", {g.call("mul.Tensor", {xc, xc}), Arg(Ints{2}), true});
  Node* y = g.call("mul.Tensor",
                   {xc, g.call("rsqrt", {g.call("add.Scalar", {var, n.arg("eps").to_double()})})});
  y = g.call("view", {y, Arg(s)});
  return cast(g, affine(g, n, y, rank), in);
}

// ---- embedding -----------------------------------------------------------------------------

Node* embedding_decomp(Graph& g, const Node& n) {
  Node* w = n.input(0);
  Node* idx = n.input(1);
  int64_t count = shape_numel(idx->shape());
  Node* flat = g.call("reshape", {idx, Arg(Shape{count})});
  Node* rows = g.call("index_select", {w, 0, flat});
  return g.call("view", {rows, Arg(n.shape())});
}

Node* embedding_dense_backward_decomp(Graph& g, const Node& n) {
  Node* grad = n.input(0);
  Node* idx = n.input(1);
  int64_t count = shape_numel(idx->shape());
  int64_t D = grad->shape().back();
  int64_t num = n.arg("num_weights").to_int();
  int64_t pad = n.arg("padding_idx").to_int();
  Node* g2 = g.call("reshape", {grad, Arg(Shape{count, D})});
  Node* flat = g.call("reshape", {idx, Arg(Shape{count})});
  if (idx->dtype() != DType::Int64) flat = cast(g, flat, DType::Int64);
  if (pad >= 0) {
    Node* keep = g.call("unsqueeze", {g.call("ne.Scalar", {flat, pad}), 1});
    g2 = g.call("where.ScalarOther", {keep, g2, 0});
  }
  if (n.arg("scale_grad_by_freq").to_bool()) {
    Node* ones = g.call("ones", {Arg(Shape{count})}, dtype_kw(grad->dtype()));
    Node* counts = g.call("scatter_add", {g.call("zeros", {Arg(Shape{num})}, dtype_kw(grad->dtype())),
                                          0, flat, ones});
    Node* per = g.call("index_select", {counts, 0, flat});
    g2 = g.call("div.Tensor", {g2, g.call("unsqueeze", {per, 1})});
  }
  Node* index = g.call("expand", {g.call("unsqueeze", {flat, 1}), Arg(Shape{count, D})});
  Node* zeros = g.call("zeros", {Arg(Shape{num, D})}, dtype_kw(grad->dtype()));
  return g.call("scatter_add", {zeros, 0, index, g2});
}

// ---- pooling -------------------------------------------------------------------------------

Node* max_pool_decomp(Graph& g, const Node& n, size_t sp) {
  nn::PoolParams p = nn::pool_params(getter(n), sp, true, where_of(n));
  double ninf = -std::numeric_limits<double>::infinity();
  std::vector<Node*> w = nn::pool_windows(g, n.input(0), p, ninf, ninf);
  Node* m = w[0];
  for (size_t i = 1; i < w.size(); ++i) m = g.call("maximum", {m, w[i]});
  return m == n.input(0) ? g.call("clone", {m}) : m;
}

Node* window_sum(Graph& g, const std::vector<Node*>& w) {
  Node* s = w[0];
  for (size_t i = 1; i < w.size(); ++i) s = g.call("add.Tensor", {s, w[i]});
  return s;
}

Node* avg_pool_decomp(Graph& g, const Node& n, size_t sp) {
  nn::PoolParams p = nn::pool_params(getter(n), sp, false, where_of(n));
  Node* x = n.input(0);
  DType in = x->dtype();
  if (half_like(in)) x = cast(g, x, DType::Float32);
  Node* sum = window_sum(g, nn::pool_windows(g, x, p, 0.0, 0.0));
  nn::AvgDivisor d = nn::avg_pool_divisor(g, n, x, p);
  if (in == DType::Int64) {  // torch's integer kernel: the int64 window sum / count, truncated
    Kwargs trunc{{"rounding_mode", std::string("trunc")}};
    return d.map ? g.call("div.Tensor_mode", {sum, d.map}, trunc)
                 : g.call("div.Scalar_mode", {sum, static_cast<int64_t>(d.scalar)}, trunc);
  }
  Node* y = d.map ? g.call("div.Tensor", {sum, d.map}) : g.call("div.Scalar", {sum, d.scalar});
  return cast(g, y, in);
}

Node* adaptive_avg_pool_decomp(Graph& g, const Node& n, size_t sp) {
  Node* x = n.input(0);
  DType in = x->dtype();
  if (half_like(in)) x = cast(g, x, DType::Float32);
  Ints os = nn::expand_list(n.arg("output_size"), sp, "output_size", where_of(n), 0);
  int64_t rank = x->meta().dim();
  if (std::find(os.begin(), os.end(), 0) != os.end())  // an output size of 0: an empty result
    return g.call("zeros", {Arg(n.shape())}, {{"dtype", Arg(in)}});
  for (size_t i = 0; i < sp; ++i) {
    int64_t d = rank - static_cast<int64_t>(sp) + static_cast<int64_t>(i);
    int64_t L = x->shape()[d], o = os[i];
    if (L == o) continue;
    if (L % o == 0) {
      Shape s = x->shape();
      s[d] = L / o;
      s.insert(s.begin() + d, o);
      x = g.call("mean.dim", {g.call("view", {x, Arg(s)}), Arg(Ints{d + 1}), false});
      continue;
    }
    std::vector<Node*> parts;
    for (int64_t j = 0; j < o; ++j) {
      int64_t start = (j * L) / o, end = ((j + 1) * L + o - 1) / o;
      Node* sl = g.call("slice.Tensor", {x, d, start, end, 1});
      parts.push_back(g.call("mean.dim", {sl, Arg(Ints{d}), true}));
    }
    x = g.call("cat", {Arg(parts), d});
  }
  if (x == n.input(0)) x = g.call("clone", {x});
  return cast(g, x, in);
}

// ---- padding -------------------------------------------------------------------------------

Node* constant_pad_decomp(Graph& g, const Node& n) {
  Node* x = n.input(0);
  Ints pad = n.arg("pad").to_int_list();
  int64_t rank = x->meta().dim();
  for (size_t i = 0; i < pad.size() / 2; ++i) {
    int64_t d = rank - 1 - static_cast<int64_t>(i);
    int64_t l = pad[2 * i], r = pad[2 * i + 1];
    if (l < 0 || r < 0) {
      int64_t L = x->shape()[d];
      x = g.call("slice.Tensor", {x, d, std::max<int64_t>(0, -l), L - std::max<int64_t>(0, -r), 1});
    }
    std::vector<Node*> parts;
    auto block = [&](int64_t size) {
      Shape s = x->shape();
      s[d] = size;
      return g.call("full", {Arg(s), n.arg("value")}, dtype_kw(x->dtype()));
    };
    if (l > 0) parts.push_back(block(l));
    parts.push_back(x);
    if (r > 0) parts.push_back(block(r));
    if (parts.size() > 1) x = g.call("cat", {Arg(parts), d});
  }
  return x == n.input(0) ? g.call("clone", {x}) : x;
}

Node* index_pad_decomp(Graph& g, const Node& n, size_t sp, bool reflect) {
  Node* x = n.input(0);
  Ints pad = nn::expand_list(n.arg("padding"), 2 * sp, "padding", where_of(n), INT64_MIN);
  int64_t rank = x->meta().dim();
  for (size_t i = 0; i < sp; ++i) {
    int64_t d = rank - 1 - static_cast<int64_t>(i);
    int64_t l = pad[2 * i], r = pad[2 * i + 1], L = x->shape()[d];
    Node* idx = g.call("arange.start", {-l, L + r}, dtype_kw(DType::Int64));
    if (reflect) {  // (L-1) - |(L-1) - |i||
      Node* a = g.call("abs", {idx});
      idx = g.call("sub.Tensor", {g.call("full", {Arg(Shape{}), L - 1}, dtype_kw(DType::Int64)),
                                  g.call("abs", {g.call("sub.Scalar", {a, L - 1})})});
    } else {
      idx = g.call("clamp", {idx, 0, L - 1});
    }
    x = g.call("index_select", {x, d, idx});
  }
  return x;
}

// ---- upsampling ----------------------------------------------------------------------------

// torch's compute_scales_value: 1 / scale when given, else input / output, rounded to float
// unless the computation is in double (bilinear on float64 inputs).
double scale_of(const Arg& s, int64_t in, int64_t out, bool in_double = false) {
  double v = !s.is_absent() && s.to_double() > 0 ? 1.0 / s.to_double()
                                                 : static_cast<double>(in) / static_cast<double>(out);
  return in_double ? v : static_cast<float>(v);
}

Node* upsample_nearest_decomp(Graph& g, const Node& n) {
  Node* x = n.input(0);
  const char* scales[] = {"scales_h", "scales_w"};
  for (int i = 0; i < 2; ++i) {
    int64_t d = 2 + i, in = x->shape()[d], out = n.shape()[d];
    double sc = scale_of(n.arg(scales[i]), in, out);
    Node* src = g.call("mul.Scalar", {g.call("arange", {out}, dtype_kw(DType::Float32)), sc});
    Node* idx = g.call("clamp", {cast(g, g.call("floor", {src}), DType::Int64), Arg(), in - 1});
    x = g.call("index_select", {x, d, idx});
  }
  return x;
}

Node* upsample_bilinear_decomp(Graph& g, const Node& n) {
  Node* x = n.input(0);
  DType in_t = x->dtype();
  DType acc = in_t == DType::Float64 ? DType::Float64 : DType::Float32;
  x = cast(g, x, acc);
  bool align = n.arg("align_corners").to_bool();
  const char* scales[] = {"scales_w", "scales_h"};
  // W first, then H: torch's h0λ (w0λ x00 + w1λ x01) + h1λ (w0λ x10 + w1λ x11).
  for (int i = 0; i < 2; ++i) {
    int64_t d = 3 - i, in = x->shape()[d], out = n.shape()[d];
    bool dbl = acc == DType::Float64;
    double sc;
    if (align) {
      sc = out > 1 ? static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0;
      if (!dbl) sc = static_cast<float>(sc);
    } else {
      sc = scale_of(n.arg(scales[i]), in, out, dbl);
    }
    Node* dst = g.call("arange", {out}, dtype_kw(acc));
    Node* src = align ? g.call("mul.Scalar", {dst, sc})
                      : g.call("clamp", {g.call("sub.Scalar", {g.call("mul.Scalar",
                                                 {g.call("add.Scalar", {dst, 0.5}), sc}), 0.5}),
                                         0.0});
    Node* i0 = cast(g, src, DType::Int64);  // src >= 0: truncation is floor
    Node* lam1 = g.call("sub.Tensor", {src, cast(g, i0, acc)});
    Node* lam0 = g.call("add.Scalar", {g.call("neg", {lam1}), 1});
    Node* i1 = g.call("clamp", {g.call("add.Scalar", {i0, 1}), Arg(), in - 1});
    if (d == 2) {  // weights as (out, 1) to broadcast over W
      lam0 = g.call("unsqueeze", {lam0, 1});
      lam1 = g.call("unsqueeze", {lam1, 1});
    }
    Node* x0 = g.call("index_select", {x, d, i0});
    Node* x1 = g.call("index_select", {x, d, i1});
    x = g.call("add.Tensor", {g.call("mul.Tensor", {lam0, x0}), g.call("mul.Tensor", {lam1, x1})});
  }
  return cast(g, x, in_t);
}

// The parts of nll_loss: per element (target shape) the picked -x[target] * w and w (0 where
// target == ignore_index); x is (N, C, d...) (1-D inputs are lifted to (1, C)). The pick is a
// gather (its bounds check makes a target outside [0, C) an error, as in torch); `hit`, the
// one-hot mask class == target, is what nll_loss_backward writes through (a where, so the
// backward stays pointwise: nll_loss's VJP is nll_loss_backward, vjp.cpp).
struct NllParts {
  Node* loss;
  Node* w;
  Node* hit;  // (N, C, d...) bool: class == target (never for ignored targets)
};

NllParts nll_parts(Graph& g, Node* x, Node* t, Node* weight, int64_t ignore, bool want_hit) {
  if (t->dtype() != DType::Int64) t = cast(g, t, DType::Int64);
  Node* ignored = g.call("eq.Scalar", {t, ignore});
  Node* safe = g.call("where.ScalarSelf", {ignored, 0, t});
  Node* keep = g.call("logical_not", {ignored});
  Node* picked = g.call("squeeze.dim", {g.call("gather", {x, 1, g.call("unsqueeze", {safe, 1})}), 1});
  Node* w;
  if (weight) {
    Node* flat = g.call("reshape", {safe, Arg(Shape{shape_numel(safe->shape())})});
    Node* wsel = g.call("view", {g.call("index_select", {weight, 0, flat}), Arg(safe->shape())});
    w = g.call("where.ScalarOther", {keep, wsel, 0});
  } else {
    w = cast(g, keep, x->dtype());
  }
  Node* hit = nullptr;
  if (want_hit) {
    int64_t rank = x->meta().dim(), C = x->shape()[1];
    Shape cshape(static_cast<size_t>(rank), 1);
    cshape[1] = C;
    Node* classes = g.call("view", {g.call("arange", {C}, dtype_kw(DType::Int64)), Arg(cshape)});
    hit = g.call("logical_and", {g.call("eq.Tensor", {classes, g.call("unsqueeze", {t, 1})}),
                                 g.call("unsqueeze", {keep, 1})});
  }
  return {g.call("mul.Tensor", {g.call("neg", {picked}), w}), w, hit};
}

Node* nll_loss_decomp(Graph& g, const Node& n) {
  Node* x = n.input(0);
  Node* t = n.input(1);
  bool one = x->meta().dim() == 1;
  if (one) {
    x = g.call("unsqueeze", {x, 0});
    t = g.call("unsqueeze", {t, 0});
  }
  NllParts p = nll_parts(g, x, t, tensor_arg(n, "weight"), n.arg("ignore_index").to_int(), false);
  int64_t red = n.arg("reduction").to_int();
  if (red == nn::kReductionNone) return one ? g.call("squeeze.dim", {p.loss, 0}) : p.loss;
  Node* s = g.call("sum.default", {p.loss});
  if (red == nn::kReductionSum) return s;
  return g.call("div.Tensor", {s, g.call("sum.default", {p.w})});
}

Node* nll_loss_backward_decomp(Graph& g, const Node& n) {
  Node* go = n.input(0);
  Node* x = n.input(1);
  Node* t = n.input(2);
  bool one = x->meta().dim() == 1;
  if (one) {
    x = g.call("unsqueeze", {x, 0});
    t = g.call("unsqueeze", {t, 0});
    if (go->meta().dim() == 1) go = g.call("unsqueeze", {go, 0});
  }
  NllParts p = nll_parts(g, x, t, tensor_arg(n, "weight"), n.arg("ignore_index").to_int(), true);
  int64_t red = n.arg("reduction").to_int();
  Node* ge = red == nn::kReductionNone ? go : g.call("expand", {go, Arg(p.w->shape())});
  Node* coeff = g.call("mul.Tensor", {g.call("neg", {ge}), p.w});
  if (red == nn::kReductionMean) coeff = g.call("div.Tensor", {coeff, n.arg("total_weight").node()});
  Node* r = g.call("where.ScalarOther",
                   {p.hit, g.call("unsqueeze", {cast(g, coeff, x->dtype()), 1}), 0});
  if (r->shape() != x->shape()) r = g.call("expand", {r, Arg(x->shape())});
  return one ? g.call("squeeze.dim", {r, 0}) : r;
}

Node* mse_decomp(Graph& g, const Node& n) {
  Node* d = g.call("sub.Tensor", {n.input(0), n.input(1)});
  return reduce_loss(g, g.call("mul.Tensor", {d, d}), n.arg("reduction").to_int());
}

Node* smooth_l1_decomp(Graph& g, const Node& n) {
  double beta = n.arg("beta").to_double();
  Node* d = g.call("abs", {g.call("sub.Tensor", {n.input(0), n.input(1)})});
  Node* l = d;
  if (beta > 0) {
    Node* quad = g.call("div.Scalar", {g.call("mul.Scalar", {g.call("mul.Tensor", {d, d}), 0.5}), beta});
    l = g.call("where.self", {g.call("lt.Scalar", {d, beta}), quad, g.call("sub.Scalar", {d, 0.5 * beta})});
  }
  return reduce_loss(g, l, n.arg("reduction").to_int());
}

// torch: (1 - t) x + lw (log1p(exp(-|x|)) + max(-x, 0)), lw = 1 + (pos_weight - 1) t.
Node* bce_logits_decomp(Graph& g, const Node& n) {
  Node* x = n.input(0);
  Node* t = n.input(1);
  Node* soft = g.call("add.Tensor", {g.call("log1p", {g.call("exp", {g.call("neg", {g.call("abs", {x})})})}),
                                     g.call("relu", {g.call("neg", {x})})});
  if (Node* pw = tensor_arg(n, "pos_weight")) {
    Node* lw = g.call("add.Scalar", {g.call("mul.Tensor", {g.call("sub.Scalar", {pw, 1}), t}), 1});
    soft = g.call("mul.Tensor", {lw, soft});
  }
  Node* one_minus_t = g.call("add.Scalar", {g.call("neg", {t}), 1});
  Node* l = g.call("add.Tensor", {g.call("mul.Tensor", {one_minus_t, x}), soft});
  if (Node* w = tensor_arg(n, "weight")) l = g.call("mul.Tensor", {l, w});
  return cast(g, reduce_loss(g, l, n.arg("reduction").to_int()), n.dtype());
}

Node* cross_entropy_decomp(Graph& g, const Node& n) {
  Node* x = n.input(0);
  Node* t = n.input(1);
  int64_t class_dim = x->meta().dim() >= 2 ? 1 : 0;
  int64_t C = x->shape()[class_dim];
  int64_t red = n.arg("reduction").to_int();
  double eps = n.arg("label_smoothing").to_double();
  Node* weight = tensor_arg(n, "weight");
  Node* logp = g.call("log_softmax.int", {x, class_dim});
  if (is_floating(t->dtype())) {  // class probabilities
    Node* tt = t;
    if (eps > 0) tt = g.call("add.Scalar", {g.call("mul.Scalar", {t, 1 - eps}), eps / static_cast<double>(C)});
    Node* prod = g.call("mul.Tensor", {logp, tt});
    if (weight) prod = g.call("mul.Tensor", {prod, class_dim == 1 ? channel_view(g, weight, x->meta().dim()) : weight});
    Node* l = g.call("neg", {g.call("sum.dim_IntList", {prod, Arg(Ints{class_dim}), false})});
    if (red == nn::kReductionMean)
      return g.call("div.Scalar", {g.call("sum.default", {l}), shape_numel(x->shape()) / std::max<int64_t>(1, C)});
    return reduce_loss(g, l, red);
  }
  Node* nll = g.call("nll_loss", {logp, t, n.arg("weight"), red, n.arg("ignore_index")});
  if (eps <= 0) return nll;
  // Label smoothing (no class weight): (1 - eps) nll + eps / C * smooth, smooth = -Σ_c logp
  // (0 where target == ignore_index), reduced like the loss (mean: over non-ignored targets).
  Node* tl = t->dtype() == DType::Int64 ? t : cast(g, t, DType::Int64);
  Node* keep = g.call("ne.Scalar", {tl, n.arg("ignore_index")});
  Node* smooth = g.call("neg", {g.call("sum.dim_IntList", {logp, Arg(Ints{class_dim}), false})});
  smooth = g.call("where.ScalarOther", {keep, smooth, 0});
  if (red == nn::kReductionSum) smooth = g.call("sum.default", {smooth});
  if (red == nn::kReductionMean)
    smooth = g.call("div.Tensor", {g.call("sum.default", {smooth}), g.call("sum.default", {cast(g, keep, x->dtype())})});
  return g.call("add.Tensor", {g.call("mul.Scalar", {nll, 1 - eps}),
                               g.call("mul.Scalar", {smooth, eps / static_cast<double>(C)})});
}

// ---- attention -----------------------------------------------------------------------------

Node* sdpa_decomp(Graph& g, const Node& n) {
  Node* q = n.input(0);
  Node* k = n.input(1);
  Node* v = n.input(2);
  int64_t r = q->meta().dim();
  int64_t E = q->shape()[r - 1], L = q->shape()[r - 2], S = k->shape()[r - 2];
  if (n.arg("enable_gqa").to_bool() && r >= 3 && k->shape()[r - 3] != q->shape()[r - 3]) {
    int64_t rep = q->shape()[r - 3] / k->shape()[r - 3];
    auto repeat = [&](Node* t) {  // each kv head `rep` times in a row (repeat_interleave)
      Shape s = t->shape();
      Shape e = s;
      e.insert(e.begin() + (r - 2), rep);
      Node* u = g.call("expand", {g.call("unsqueeze", {t, r - 2}), Arg(e)});
      s[r - 3] *= rep;
      return g.call("reshape", {u, Arg(s)});
    };
    k = repeat(k);
    v = repeat(v);
  }
  // float16 / bfloat16 compute in float32 and round the output once, as torch's CPU kernels (the
  // flash kernel's float accumulators, the math path's upcast): rounding the scores and the
  // probabilities to the low type loses up to a few output ulps where torch's values do not.
  const DType out_t = q->dtype();
  const bool low = out_t == DType::Float16 || out_t == DType::BFloat16;
  if (low) {
    q = g.call("to.dtype", {q, DType::Float32});
    k = g.call("to.dtype", {k, DType::Float32});
    v = g.call("to.dtype", {v, DType::Float32});
  }
  double scale = n.arg("scale").is_absent() ? 1.0 / std::sqrt(static_cast<double>(E)) : n.arg("scale").to_double();
  Node* scores = g.call("mul.Scalar", {g.call("matmul", {q, g.call("transpose.int", {k, -2, -1})}), scale});
  double ninf = -std::numeric_limits<double>::infinity();
  if (n.arg("is_causal").to_bool()) {
    Node* i = g.call("unsqueeze", {g.call("arange", {L}, dtype_kw(DType::Int64)), 1});
    Node* j = g.call("arange", {S}, dtype_kw(DType::Int64));
    scores = g.call("where.ScalarOther", {g.call("le.Tensor", {j, i}), scores, ninf});
  }
  if (Node* m = tensor_arg(n, "attn_mask")) {
    if (low && m->dtype() != DType::Bool && m->dtype() != DType::Float32)
      m = g.call("to.dtype", {m, DType::Float32});
    scores = m->dtype() == DType::Bool ? g.call("where.ScalarOther", {m, scores, ninf})
                                       : g.call("add.Tensor", {scores, m});
  }
  Node* attn = g.call("softmax.int", {scores, -1});
  // dropout_p > 0: torch's math attention drops the probabilities before P·V (keep with
  // probability 1 - p, scale 1 / (1 - p)). An ordinary dropout node: decompose() gives it this
  // node's rng_seed key, so the interpreter, the VJP (the same mask again) and the fused kernel
  // (attention_fusion.cpp) all draw the one mask of this node.
  const double drop = n.arg("dropout_p").to_double();
  if (drop != 0.0) attn = g.call("dropout", {attn, drop, true});
  Node* out = g.call("matmul", {attn, v});
  return low ? g.call("to.dtype", {out, out_t}) : out;
}

}  // namespace

namespace nn {

Ints pool_out_sizes(const Shape& x, const PoolParams& p) {
  size_t sp = p.kernel.size();
  Ints out(sp);
  for (size_t i = 0; i < sp; ++i)
    out[i] = pool_out_size(x[x.size() - sp + i], p.kernel[i], p.stride[i], p.padding[i],
                           p.dilation[i], p.ceil_mode);
  return out;
}

// A padding value for a tensor of dtype t: an infinite one (max pooling's -inf) becomes the
// extreme of an integer dtype, which converts without overflow (constant_pad_nd checks).
static Arg pad_fill(DType t, double v) {
  if (is_floating(t) || !std::isinf(v)) return Arg(v);
  bool low = v < 0;
  switch (t) {
    case DType::Bool: return Arg(!low);
    case DType::UInt8: return Arg(int64_t{low ? 0 : 255});
    case DType::Int8: return Arg(int64_t{low ? -128 : 127});
    case DType::Int16: return Arg(int64_t{low ? -32768 : 32767});
    case DType::Int32:
      return Arg(int64_t{low ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int32_t>::max()});
    default:
      return Arg(low ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max());
  }
}

// The strided window slices of x's last sp dims (padded by p.padding with pad_value, plus what
// ceil_mode's last window needs), one per kernel offset in row-major kernel order.
std::vector<Node*> pool_windows(Graph& g, Node* x, const PoolParams& p, double pad_value,
                                double extra_value) {
  size_t sp = p.kernel.size();
  int64_t rank = x->meta().dim();
  Shape s = x->shape();
  Ints out(sp), extra(sp);
  for (size_t i = 0; i < sp; ++i) {
    int64_t L = s[rank - sp + i];
    out[i] = pool_out_size(L, p.kernel[i], p.stride[i], p.padding[i], p.dilation[i], p.ceil_mode);
    int64_t need = (out[i] - 1) * p.stride[i] + p.dilation[i] * (p.kernel[i] - 1) + 1;
    extra[i] = std::max<int64_t>(0, need - (L + 2 * p.padding[i]));
  }
  // constant_pad_nd's pad list starts at the last dim.
  Ints pad, pad_extra;
  bool any_pad = false, any_extra = false;
  for (size_t i = sp; i-- > 0;) {
    pad.push_back(p.padding[i]);
    pad.push_back(p.padding[i]);
    pad_extra.push_back(0);
    pad_extra.push_back(extra[i]);
    any_pad = any_pad || p.padding[i] > 0;
    any_extra = any_extra || extra[i] > 0;
  }
  Node* xp = x;
  if (any_pad) xp = g.call("constant_pad_nd", {xp, Arg(pad), pad_fill(x->dtype(), pad_value)});
  if (any_extra)
    xp = g.call("constant_pad_nd", {xp, Arg(pad_extra), pad_fill(x->dtype(), extra_value)});
  std::vector<Node*> windows;
  Ints k(sp, 0);
  while (true) {
    Node* w = xp;
    for (size_t i = 0; i < sp; ++i) {
      int64_t start = k[i] * p.dilation[i];
      int64_t end = start + (out[i] - 1) * p.stride[i] + 1;
      int64_t dim = rank - static_cast<int64_t>(sp) + static_cast<int64_t>(i);
      w = g.call("slice.Tensor", {w, dim, start, end, p.stride[i]});
    }
    windows.push_back(w);
    size_t i = sp;
    while (i-- > 0) {
      if (++k[i] < p.kernel[i]) break;
      k[i] = 0;
    }
    if (i == static_cast<size_t>(-1)) break;
  }
  return windows;
}

AvgDivisor avg_pool_divisor(Graph& g, const Node& n, Node* x, const PoolParams& p) {
  size_t sp = p.kernel.size();
  AvgDivisor d;
  const Arg& over = n.op()->schema.index_of("divisor_override") >= 0 ? n.arg("divisor_override") : Arg();
  if (!over.is_absent()) {
    d.scalar = static_cast<double>(over.to_int());
    return d;
  }
  bool count_pad = n.arg("count_include_pad").to_bool();
  bool uniform = count_pad;
  int64_t rank = x->meta().dim();
  double kprod = 1;
  for (size_t i = 0; i < sp; ++i) {
    kprod *= static_cast<double>(p.kernel[i]);
    int64_t L = x->shape()[rank - sp + i];
    int64_t o = pool_out_size(L, p.kernel[i], p.stride[i], p.padding[i], 1, p.ceil_mode);
    if ((o - 1) * p.stride[i] + p.kernel[i] > L + 2 * p.padding[i]) uniform = false;
  }
  if (uniform) {  // every window lies inside input + padding
    d.scalar = kprod;
    return d;
  }
  // The window sizes torch divides by: cells inside the input (count_include_pad=False) or
  // inside input + padding, as a map over the output's spatial dims.
  Shape sshape(x->shape().end() - static_cast<long>(sp), x->shape().end());
  Node* ones = g.call("ones", {Arg(sshape)}, dtype_kw(x->dtype()));
  std::vector<Node*> w = pool_windows(g, ones, p, count_pad ? 1.0 : 0.0, 0.0);
  d.map = window_sum(g, w);
  return d;
}

}  // namespace nn

void register_nn_decompositions(DecompositionTable& t) {
  t.add("conv1d.default", [](Graph& g, const Node& n) { return conv_entry_decomp(g, n, 1, false); });
  t.add("conv2d.default", [](Graph& g, const Node& n) { return conv_entry_decomp(g, n, 2, false); });
  t.add("conv3d.default", [](Graph& g, const Node& n) { return conv_entry_decomp(g, n, 3, false); });
  t.add("conv_transpose1d.default", [](Graph& g, const Node& n) { return conv_entry_decomp(g, n, 1, true); });
  t.add("conv_transpose2d.input", [](Graph& g, const Node& n) { return conv_entry_decomp(g, n, 2, true); });
  t.add("conv_transpose3d.input", [](Graph& g, const Node& n) { return conv_entry_decomp(g, n, 3, true); });
  t.add("conv1d.padding", [](Graph& g, const Node& n) { return conv_padding_decomp(g, n, 1); });
  t.add("conv2d.padding", [](Graph& g, const Node& n) { return conv_padding_decomp(g, n, 2); });
  t.add("conv3d.padding", [](Graph& g, const Node& n) { return conv_padding_decomp(g, n, 3); });
  t.add("batch_norm.default", batch_norm_decomp);
  t.add("group_norm.default", group_norm_decomp);
  t.add("embedding.default", embedding_decomp);
  t.add("embedding_dense_backward.default", embedding_dense_backward_decomp);
  for (size_t sp = 1; sp <= 3; ++sp) {
    std::string s = std::to_string(sp);
    t.add("max_pool" + s + "d.default", [sp](Graph& g, const Node& n) { return max_pool_decomp(g, n, sp); });
    t.add("avg_pool" + s + "d.default", [sp](Graph& g, const Node& n) { return avg_pool_decomp(g, n, sp); });
    t.add("adaptive_avg_pool" + s + "d.default",
          [sp](Graph& g, const Node& n) { return adaptive_avg_pool_decomp(g, n, sp); });
  }
  t.add("constant_pad_nd.default", constant_pad_decomp);
  t.add("reflection_pad1d.default", [](Graph& g, const Node& n) { return index_pad_decomp(g, n, 1, true); });
  t.add("reflection_pad2d.default", [](Graph& g, const Node& n) { return index_pad_decomp(g, n, 2, true); });
  t.add("replication_pad1d.default", [](Graph& g, const Node& n) { return index_pad_decomp(g, n, 1, false); });
  t.add("replication_pad2d.default", [](Graph& g, const Node& n) { return index_pad_decomp(g, n, 2, false); });
  t.add("reflection_pad3d.default", [](Graph& g, const Node& n) { return index_pad_decomp(g, n, 3, true); });
  t.add("replication_pad3d.default", [](Graph& g, const Node& n) { return index_pad_decomp(g, n, 3, false); });
  t.add("upsample_nearest2d.default", upsample_nearest_decomp);
  t.add("upsample_bilinear2d.default", upsample_bilinear_decomp);
  t.add("nll_loss.default", nll_loss_decomp);
  t.add("nll_loss2d.default", nll_loss_decomp);
  t.add("nll_loss_backward.default", nll_loss_backward_decomp);
  t.add("mse_loss.default", mse_decomp);
  t.add("smooth_l1_loss.default", smooth_l1_decomp);
  t.add("binary_cross_entropy_with_logits.default", bce_logits_decomp);
  t.add("cross_entropy_loss.default", cross_entropy_decomp);
  t.add("scaled_dot_product_attention.default", sdpa_decomp);
}

}  // namespace stax
