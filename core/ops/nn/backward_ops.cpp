// The single-output *_backward ops that AOTAutograd and torch.export's training IR emit for nn
// modules (pooling, padding, upsampling, losses, activations, view backwards), so such graphs
// import as printed. Each op is one builder (core/ops/common/infer_by_building.h): its shape /
// dtype inference and its decomposition both come from it. Most builders are the VJP rule of the
// forward op (core/ops/common/forward_vjp.h), so a traced backward computes exactly what Stax's
// own autodiff computes; the rest are torch's formulas:
//   max_pool{2,3}d_with_indices_backward, adaptive_max_pool{2,3}d_backward
//                        scatter_add of the gradient at the saved indices (flattened spatial dims),
//                        so ties go where the forward's indices say
//   select_backward / slice_backward   select_scatter / slice_scatter into zeros
//   native_dropout_backward            grad * (mask * scale)
//   log_sigmoid_backward               grad * (max_deriv - sign * z / (1 + z)), z = exp(-|x|)
//   nll_loss2d_backward                nll_loss_backward (which takes any (N, C, d...) input)
//   _prelu_kernel (a forward)          where(x > 0, x, weight * x)
// Every op here is Composite: the interpreter runs the decomposition, VJP and JVP go through it
// (so a double backward asks the base ops' rules).
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "core/autodiff/jvp.h"
#include "core/autodiff/vjp.h"
#include "core/interpreter/interpreter.h"
#include "core/ops/common/forward_vjp.h"
#include "core/ops/common/infer_by_building.h"
#include "core/ops/common/kernel_utils.h"
#include "core/ops/common/via_decomposition.h"
#include "core/ops/nn/params.h"
#include "core/ops/registration.h"
#include "core/support/error.h"

namespace stax {

namespace {

using Ints = std::vector<int64_t>;

Node* zeros(Graph& g, const Shape& s, DType t) {
  return g.call("zeros", {Arg(s)}, {{"dtype", Arg(t)}});
}

// The gradient of `self_param` through forward op `fwd`, called as fwd(self, rest..., kwargs).
Node* through(Graph& g, const ExpandCall& c, const char* fwd, std::vector<Arg> rest,
              Kwargs kw = {}, const char* grad_param = "grad_output",
              const char* self_param = "self") {
  Node* self = c.tensor(self_param);
  std::vector<Arg> args{self};
  args.insert(args.end(), rest.begin(), rest.end());
  auto gs = gradients_by_vjp(g, fwd, std::move(args), std::move(kw), c.tensor(grad_param), {self});
  return or_zeros(g, gs[0], self);
}

// The dtype a TensorIterator over `ns` computes in (torch.result_type): 0-d tensors count only
// when their category (bool < integral < floating) is above the dimensioned ones'.
DType iterator_dtype(const std::vector<Node*>& ns) {
  std::optional<DType> dims, zeros;
  for (Node* n : ns) {
    std::optional<DType>& acc = n->meta().dim() > 0 ? dims : zeros;
    acc = acc ? promote_types(*acc, n->dtype()) : n->dtype();
  }
  if (!dims) return *zeros;
  if (zeros && dtype_category(*zeros) > dtype_category(*dims)) return *zeros;
  return *dims;
}

// The gradient of an elementwise forward op as torch's binary backward kernels give it: the
// gradient and self broadcast together (each is expanded to that shape before the VJP).
Node* through_elementwise(Graph& g, const ExpandCall& c, const char* fwd, std::vector<Arg> rest,
                          const char* grad_param) {
  Node* self = c.tensor("self");
  Node* grad = c.tensor(grad_param);
  Shape out = broadcast_shapes(grad->shape(), self->shape(), c.where());
  // The kernel reads self in the iterator's dtype (a 0-d int8 self with a float gradient).
  DType t = iterator_dtype({grad, self});
  Node* x = self->dtype() == t || !is_floating(t) ? self : g.call("to.dtype", {self, t});
  if (x->shape() != out) x = g.call("expand", {x, Arg(out)});
  Node* gx = grad->shape() == out ? grad : g.call("expand", {grad, Arg(out)});
  std::vector<Arg> args{x};
  args.insert(args.end(), rest.begin(), rest.end());
  auto gs = gradients_by_vjp(g, fwd, std::move(args), {}, gx, {x});
  return or_zeros(g, gs[0], x);
}

// huber_loss_backward as torch's kernel: grad_output, self and target of one dtype, the result
// in their broadcast shape (self is expanded to it before the VJP).
Node* huber_loss_backward(Graph& g, const ExpandCall& c) {
  Node* self = c.tensor("self");
  Node* grad = c.tensor("grad_output");
  Node* target = c.tensor("target");
  for (Node* n : {grad, target})
    if (n->dtype() != self->dtype())
      c.fail("grad_output (" + std::string(dtype_name(grad->dtype())) + "), self (" +
             std::string(dtype_name(self->dtype())) + ") and target (" +
             std::string(dtype_name(target->dtype())) + ") must have the same dtype");
  Shape out = broadcast_shapes(broadcast_shapes(grad->shape(), self->shape(), c.where()),
                               target->shape(), c.where());
  Node* x = self->shape() == out ? self : g.call("expand", {self, Arg(out)});
  auto gs = gradients_by_vjp(g, "huber_loss", {x, target, c.get("reduction"), c.get("delta")}, {},
                             grad, {x});
  return or_zeros(g, gs[0], x);
}

// mse_loss_backward / smooth_l1_loss_backward as torch's kernels: one TensorIterator over self,
// target and grad_output (broadcast together) in their promoted dtype, cast to self's dtype:
//   mse        norm (self - target) grad, norm = 2 (/ self.numel() for the mean)
//   smooth_l1  x = self - target: x <= -beta: -norm grad; x >= beta: norm grad;
//              else norm x grad / beta (norm = 1, / self.numel() for the mean)
// Stax computes losses of a floating promoted dtype only (as its forward rules).
Node* pointwise_loss_backward(Graph& g, const ExpandCall& c, bool mse) {
  Node* grad = c.tensor("grad_output");
  Node* self = c.tensor("self");
  Node* target = c.tensor("target");
  DType t = iterator_dtype({self, target, grad});
  if (!is_floating(t))
    c.fail("grad_output, self and target promote to " + std::string(dtype_name(t)) +
           "; loss gradients need a floating dtype");
  if (!is_floating(self->dtype()))  // torch: no floating -> integral cast
    c.fail("result type " + std::string(dtype_name(t)) + " can't be cast to the desired output "
           "type " + std::string(dtype_name(self->dtype())) + " (self's)");
  int64_t red = c.get("reduction").to_int();
  if (red < 0 || red > 2)
    c.fail("reduction must be 0 (none), 1 (mean) or 2 (sum), got " + std::to_string(red));
  double beta = mse ? 0.0 : c.get("beta").to_double();
  if (beta < 0) c.fail("beta must be >= 0");
  double norm = mse ? 2.0 : 1.0;
  if (red == nn::kReductionMean)
    norm /= static_cast<double>(std::max<int64_t>(self->meta().numel(), 1));
  broadcast_shapes(broadcast_shapes(self->shape(), target->shape(), c.where()), grad->shape(),
                   c.where());
  auto as_t = [&](Node* n) { return n->dtype() == t ? n : g.call("to.dtype", {n, t}); };
  Node* x = g.call("sub.Tensor", {as_t(self), as_t(target)});
  Node* gt = as_t(grad);
  Node* r;
  if (mse) {
    r = g.call("mul.Tensor", {g.call("mul.Scalar", {x, norm}), gt});
  } else {
    Node* up = g.call("mul.Scalar", {gt, norm});
    Node* down = g.call("neg", {up});
    Node* mid = up;  // beta 0: every x is <= -beta or >= beta
    if (beta > 0)
      mid = g.call("div.Scalar",
                   {g.call("mul.Tensor", {g.call("mul.Scalar", {x, norm}), gt}), beta});
    r = g.call("where.self", {g.call("le.Scalar", {x, -beta}), down,
                              g.call("where.self", {g.call("ge.Scalar", {x, beta}), up, mid})});
  }
  return r->dtype() == self->dtype() ? r : g.call("to.dtype", {r, self->dtype()});
}

// An activation's gradient in the promoted dtype of the gradient and self, as torch's binary
// backward kernels give it (hardshrink_backward of a float32 gradient and a bfloat16 self).
Node* promoted(Graph& g, const ExpandCall& c, Node* r, const char* grad_param) {
  DType t = iterator_dtype({c.tensor(grad_param), c.tensor("self")});
  return r->dtype() == t ? r : g.call("to.dtype", {r, t});
}

// The gradient of a linear op's input of shape `sizes`: its VJP does not read the input's values,
// so the forward call is made on zeros.
Node* through_linear(Graph& g, const ExpandCall& c, const char* fwd, const Shape& sizes,
                     std::vector<Arg> rest, Kwargs kw = {}, const char* grad_param = "grad_output") {
  Node* grad = c.tensor(grad_param);
  Node* x = zeros(g, sizes, grad->dtype());
  std::vector<Arg> args{x};
  args.insert(args.end(), rest.begin(), rest.end());
  auto gs = gradients_by_vjp(g, fwd, std::move(args), std::move(kw), grad, {x});
  return or_zeros(g, gs[0], x);
}

// Scatters the gradient to the input positions the forward's indices name (flattened over the
// last `sp` dims, as max_pool*_with_indices / adaptive_max_pool* store them). As torch, self is
// a non-empty (C, spatial...) or (N, C, spatial...) tensor, the result has self's dtype, and
// max_pool's gradient must have the pooled shape of self (`pooled`).
Node* scatter_at_indices(Graph& g, const ExpandCall& c, size_t sp, bool pooled) {
  Node* grad = c.tensor("grad_output");
  Node* self = c.tensor("self");
  Node* idx = c.tensor("indices");
  const Shape& xs = self->shape();
  if (xs.size() != sp + 1 && xs.size() != sp + 2)
    c.fail("self must be " + std::to_string(sp + 1) + "-D or " + std::to_string(sp + 2) +
           "-D (batch mode), got " + shape_str(xs));
  for (size_t d = xs.size() == sp + 2 ? 1 : 0; d < xs.size(); ++d)
    if (xs[d] == 0)
      c.fail("self " + shape_str(xs) + " may be empty only in its batch dim");
  if (grad->shape().size() != xs.size())
    c.fail("grad_output " + shape_str(grad->shape()) + " must have the rank of self " +
           shape_str(xs));
  if (pooled) {
    nn::PoolParams p = nn::pool_params(
        [&c](const char* name) -> const Arg& { return c.get(name); }, sp, true, c.where());
    Shape want = xs;
    Ints o = nn::pool_out_sizes(xs, p);
    std::copy(o.begin(), o.end(), want.end() - static_cast<std::ptrdiff_t>(sp));
    if (grad->shape() != want)
      c.fail("grad_output " + shape_str(grad->shape()) + " must have the pooled shape " +
             shape_str(want) + " of self " + shape_str(xs));
  }
  if (grad->dtype() != self->dtype())  // torch's kernel reads the gradient as self's dtype
    c.fail("grad_output (" + std::string(dtype_name(grad->dtype())) + ") must have self's dtype (" +
           std::string(dtype_name(self->dtype())) + ")");
  if (idx->shape() != grad->shape())
    c.fail("indices " + shape_str(idx->shape()) + " and grad_output " +
           shape_str(grad->shape()) + " must have the same shape");
  size_t lead = xs.size() - sp;
  auto flat = [lead](const Shape& s) {
    Shape f(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(lead));
    int64_t n = 1;
    for (size_t d = lead; d < s.size(); ++d) n *= s[d];
    f.push_back(n);
    return f;
  };
  Shape fg = flat(grad->shape());
  Node* src = g.call("reshape", {grad, Arg(fg)});
  Node* at = g.call("reshape", {idx, Arg(fg)});
  Node* r = g.call("scatter_add", {zeros(g, flat(xs), self->dtype()), static_cast<int64_t>(lead),
                                   at, src});
  return g.call("reshape", {r, Arg(xs)});
}

Node* adaptive_avg_pool_backward(Graph& g, const ExpandCall& c, size_t sp) {
  const Shape& gs = c.tensor("grad_output")->shape();
  if (gs.size() < sp) c.fail("grad_output must have at least " + std::to_string(sp) + " dims");
  if (c.tensor("grad_output")->dtype() != c.tensor("self")->dtype())
    c.fail("expected dtype " + std::string(dtype_name(c.tensor("self")->dtype())) +
           " for grad_output (self's), got " +
           std::string(dtype_name(c.tensor("grad_output")->dtype())));
  Ints out(gs.end() - static_cast<std::ptrdiff_t>(sp), gs.end());
  std::string fwd = "_adaptive_avg_pool" + std::to_string(sp) + "d";
  return through(g, c, fwd.c_str(), {Arg(out)});
}

// As torch's kernel: grad_output, self and buffer of one floating dtype, broadcast together.
Node* log_sigmoid_backward(Graph& g, const ExpandCall& c) {
  Node* x = c.tensor("self");
  Node* grad = c.tensor("grad_output");
  Node* buffer = c.tensor("buffer");
  for (Node* n : {grad, buffer})
    if (n->dtype() != x->dtype())
      c.fail("grad_output (" + std::string(dtype_name(grad->dtype())) + "), self (" +
             std::string(dtype_name(x->dtype())) + ") and buffer (" +
             std::string(dtype_name(buffer->dtype())) + ") must have the same dtype");
  if (!is_floating(x->dtype()))
    c.fail("log_sigmoid_backward expects a floating-point self, got " +
           std::string(dtype_name(x->dtype())));
  Shape out = broadcast_shapes(broadcast_shapes(grad->shape(), x->shape(), c.where()),
                               buffer->shape(), c.where());
  if (x->shape() != out) x = g.call("expand", {x, Arg(out)});
  Node* neg = g.call("lt.Scalar", {x, 0});
  Node* z = g.call("exp", {g.call("neg", {g.call("abs", {x})})});
  Node* frac = g.call("div.Tensor", {z, g.call("add.Scalar", {z, 1})});
  // x < 0: 1 - z / (1 + z); x >= 0: z / (1 + z)
  Node* d = g.call("where.self", {neg, g.call("rsub.Scalar", {frac, 1}), frac});
  return g.call("mul.Tensor", {grad, d});
}

// As torch's kernel: x1's gradient for each pair of the batch dims broadcast with x2's (x1 is
// expanded to them first, so the result has that shape, unsummed); zeros of x1's shape when a
// row count, the column count or the batch is empty (torch checks nothing else then).
Node* cdist_backward(Graph& g, const ExpandCall& c) {
  Node* x1 = c.tensor("x1");
  Node* x2 = c.tensor("x2");
  const Shape &s1 = x1->shape(), &s2 = x2->shape();
  if (s1.size() < 2 || s2.size() < 2)
    c.fail("x1 " + shape_str(s1) + " and x2 " + shape_str(s2) + " must have at least 2 dims");
  Shape batch = broadcast_shapes(Shape(s1.begin(), s1.end() - 2), Shape(s2.begin(), s2.end() - 2),
                                 c.where());
  int64_t r1 = s1[s1.size() - 2], c1 = s1.back(), r2 = s2[s2.size() - 2];
  if (r1 == 0 || r2 == 0 || c1 == 0 || shape_numel(batch) == 0) return zeros(g, s1, x1->dtype());
  Shape full = batch;
  full.insert(full.end(), {r1, c1});
  Node* x = full == s1 ? x1 : g.call("expand", {x1, Arg(full)});
  auto gs = gradients_by_vjp(g, "_cdist_forward", {x, x2, c.get("p"), Arg()}, {},
                             c.tensor("grad_output"), {x});
  return or_zeros(g, gs[0], x);
}

Node* dropout_backward(Graph& g, const ExpandCall& c) {
  Node* grad = c.tensor("grad_output");
  Node* mask = g.call("to.dtype", {c.tensor("mask"), grad->dtype()});
  return g.call("mul.Tensor", {grad, g.call("mul.Scalar", {mask, c.get("scale")})});
}

Node* prelu_kernel(Graph& g, const ExpandCall& c) {
  Node* x = c.tensor("self");
  if (c.tensor("weight")->dtype() != x->dtype())  // torch's kernel reads both as self's dtype
    c.fail("weight (" + std::string(dtype_name(c.tensor("weight")->dtype())) +
           ") must have self's dtype (" + std::string(dtype_name(x->dtype())) + ")");
  Node* wx = g.call("mul.Tensor", {c.tensor("weight"), x});
  return g.call("where.self", {g.call("gt.Scalar", {x, 0}), x, wx});
}

Node* upsample_backward(Graph& g, const ExpandCall& c, const char* fwd, size_t sp, bool corners) {
  Shape in = c.get("input_size").to_int_list();
  if (in.size() != sp + 2)
    c.fail("input_size must have " + std::to_string(sp + 2) + " elements, got " + shape_list_str(in));
  std::vector<Arg> rest{c.get("output_size")};
  if (corners) rest.push_back(c.get("align_corners"));
  Kwargs kw;
  if (sp == 2) {
    kw = {{"scales_h", c.get("scales_h")}, {"scales_w", c.get("scales_w")}};
  } else if (!c.get("scales").is_absent()) {  // the .vec overload: a size or scales, not both
    rest = {Arg(), Arg(Arg::List{c.get("scales")})};
  } else {
    rest.push_back(Arg());
  }
  return through_linear(g, c, fwd, in, std::move(rest), std::move(kw));
}

struct BackwardOp {
  std::string schema;
  BuildFn build;
};

// add(schema, builder): one backward op.
using AddFn = std::function<void(std::string, BuildFn)>;

// Pooling and upsampling.
void add_pooling_backward_ops(const AddFn& add) {
  for (int sp = 2; sp <= 3; ++sp) {
    std::string n = std::to_string(sp), T = "int[" + n + "]";
    add("avg_pool" + n + "d_backward(Tensor grad_output, Tensor self, " + T + " kernel_size, " + T +
            " stride, " + T + " padding, bool ceil_mode, bool count_include_pad, "
            "int? divisor_override) -> Tensor",
        [n](Graph& g, const ExpandCall& c) {
          return through(g, c, ("avg_pool" + n + "d").c_str(),
                         {c.get("kernel_size"), c.get("stride"), c.get("padding"),
                          c.get("ceil_mode"), c.get("count_include_pad"),
                          c.get("divisor_override")});
        });
    add("max_pool" + n + "d_with_indices_backward(Tensor grad_output, Tensor self, " + T +
            " kernel_size, " + T + " stride, " + T + " padding, " + T +
            " dilation, bool ceil_mode, Tensor indices) -> Tensor",
        [sp](Graph& g, const ExpandCall& c) { return scatter_at_indices(g, c, sp, true); });
    add("_adaptive_avg_pool" + n + "d_backward(Tensor grad_output, Tensor self) -> Tensor",
        [sp](Graph& g, const ExpandCall& c) { return adaptive_avg_pool_backward(g, c, sp); });
    add("adaptive_max_pool" + n + "d_backward(Tensor grad_output, Tensor self, Tensor indices) "
        "-> Tensor",
        [sp](Graph& g, const ExpandCall& c) { return scatter_at_indices(g, c, sp, false); });
  }
  for (int sp = 1; sp <= 3; ++sp) {
    std::string n = std::to_string(sp), P = "SymInt[" + std::to_string(2 * sp) + "]";
    for (const char* kind : {"reflection", "replication"}) {
      std::string fwd = std::string(kind) + "_pad" + n + "d";
      add(fwd + "_backward(Tensor grad_output, Tensor self, " + P + " padding) -> Tensor",
          [fwd](Graph& g, const ExpandCall& c) {
            if (c.tensor("grad_output")->dtype() != c.tensor("self")->dtype())
              c.fail("grad_output and self must have the same dtype (torch's kernel reads both "
                     "as self's)");
            return through(g, c, fwd.c_str(), {c.get("padding")});
          });
    }
  }
  add("upsample_nearest1d_backward(Tensor grad_output, SymInt[1] output_size, SymInt[3] "
      "input_size, float? scales=None) -> Tensor",
      [](Graph& g, const ExpandCall& c) {
        return upsample_backward(g, c, "upsample_nearest1d.vec", 1, false);
      });
  add("upsample_nearest2d_backward(Tensor grad_output, SymInt[2] output_size, SymInt[4] "
      "input_size, float? scales_h=None, float? scales_w=None) -> Tensor",
      [](Graph& g, const ExpandCall& c) {
        return upsample_backward(g, c, "upsample_nearest2d", 2, false);
      });
  add("upsample_bilinear2d_backward(Tensor grad_output, SymInt[2] output_size, SymInt[4] "
      "input_size, bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor",
      [](Graph& g, const ExpandCall& c) {
        return upsample_backward(g, c, "upsample_bilinear2d", 2, true);
      });
}

// Losses: the gradient of self.
void add_loss_backward_ops(const AddFn& add) {
  add("mse_loss_backward(Tensor grad_output, Tensor self, Tensor target, int reduction) -> Tensor",
      [](Graph& g, const ExpandCall& c) { return pointwise_loss_backward(g, c, true); });
  add("smooth_l1_loss_backward(Tensor grad_output, Tensor self, Tensor target, int reduction, "
      "float beta) -> Tensor",
      [](Graph& g, const ExpandCall& c) { return pointwise_loss_backward(g, c, false); });
  add("huber_loss_backward(Tensor grad_output, Tensor self, Tensor target, int reduction, "
      "float delta) -> Tensor",
      [](Graph& g, const ExpandCall& c) {
        return huber_loss_backward(g, c);
      });
  add("soft_margin_loss_backward(Tensor grad_output, Tensor self, Tensor target, int reduction) "
      "-> Tensor",
      [](Graph& g, const ExpandCall& c) {
        return through(g, c, "soft_margin_loss", {c.tensor("target"), c.get("reduction")});
      });
  add("binary_cross_entropy_backward(Tensor grad_output, Tensor self, Tensor target, "
      "Tensor? weight=None, int reduction=1) -> Tensor",
      [](Graph& g, const ExpandCall& c) {
        return through(g, c, "binary_cross_entropy",
                       {c.tensor("target"), c.get("weight"), c.get("reduction")});
      });
  add("nll_loss2d_backward(Tensor grad_output, Tensor self, Tensor target, Tensor? weight, "
      "int reduction, SymInt ignore_index, Tensor total_weight) -> Tensor",
      [](Graph& g, const ExpandCall& c) {
        return g.call("nll_loss_backward",
                      {c.tensor("grad_output"), c.tensor("self"), c.tensor("target"),
                       c.get("weight"), c.get("reduction"), c.get("ignore_index"),
                       c.tensor("total_weight")});
      });
}

// Activations and distances.
void add_activation_backward_ops(const AddFn& add) {
  add("log_sigmoid_backward(Tensor grad_output, Tensor self, Tensor buffer) -> Tensor",
      log_sigmoid_backward);
  add("glu_backward(Tensor grad_output, Tensor self, int dim) -> Tensor",
      [](Graph& g, const ExpandCall& c) {
        // torch's kernel: one dtype ("Found dtype Half but expected Float")
        DType gt = c.tensor("grad_output")->dtype(), st = c.tensor("self")->dtype();
        if (gt != st)
          c.fail("grad_output (" + std::string(dtype_name(gt)) + ") must have self's dtype (" +
                 std::string(dtype_name(st)) + ")");
        return through(g, c, "glu", {c.get("dim")});
      });
  add("hardshrink_backward(Tensor grad_out, Tensor self, Scalar lambd) -> Tensor",
      [](Graph& g, const ExpandCall& c) {
        Node* r = through_elementwise(g, c, "hardshrink", {c.get("lambd")}, "grad_out");
        return promoted(g, c, r, "grad_out");
      });
  add("softshrink_backward(Tensor grad_output, Tensor self, Scalar lambd) -> Tensor",
      [](Graph& g, const ExpandCall& c) {
        Node* r = through_elementwise(g, c, "softshrink", {c.get("lambd")}, "grad_output");
        return promoted(g, c, r, "grad_output");
      });
  add("native_dropout_backward(Tensor grad_output, Tensor mask, float scale) -> Tensor",
      dropout_backward);
  add("_prelu_kernel(Tensor self, Tensor weight) -> Tensor", prelu_kernel);
  // Distances.
  add("_cdist_backward(Tensor grad_output, Tensor x1, Tensor x2, float p, Tensor cdist) -> Tensor",
      cdist_backward);
  add("_pdist_backward(Tensor grad_output, Tensor self, float p, Tensor pdist) -> Tensor",
      [](Graph& g, const ExpandCall& c) {
        return through(g, c, "_pdist_forward", {c.get("p")});
      });
}

// The backward of views: the gradient placed into zeros of the input's shape.
void add_view_backward_ops(const AddFn& add) {
  add("select_backward(Tensor grad_output, SymInt[] input_sizes, int dim, SymInt index) -> Tensor",
      [](Graph& g, const ExpandCall& c) {
        Node* grad = c.tensor("grad_output");
        Node* z = zeros(g, c.get("input_sizes").to_int_list(), grad->dtype());
        return g.call("select_scatter", {z, grad, c.get("dim"), c.get("index")});
      });
  add("slice_backward(Tensor grad_output, SymInt[] input_sizes, int dim, SymInt start, "
      "SymInt end, SymInt step) -> Tensor",
      [](Graph& g, const ExpandCall& c) {
        Node* grad = c.tensor("grad_output");
        Node* z = zeros(g, c.get("input_sizes").to_int_list(), grad->dtype());
        return g.call("slice_scatter",
                      {z, grad, c.get("dim"), c.get("start"), c.get("end"), c.get("step")});
      });
  add("diagonal_backward(Tensor grad_output, SymInt[] input_sizes, int offset, int dim1, "
      "int dim2) -> Tensor",
      [](Graph& g, const ExpandCall& c) {
        return through_linear(g, c, "diagonal", c.get("input_sizes").to_int_list(),
                              {c.get("offset"), c.get("dim1"), c.get("dim2")});
      });
  add("unfold_backward(Tensor grad_in, SymInt[] input_sizes, int dim, int size, int step) -> Tensor",
      [](Graph& g, const ExpandCall& c) {
        return through_linear(g, c, "unfold", c.get("input_sizes").to_int_list(),
                              {c.get("dim"), c.get("size"), c.get("step")}, {}, "grad_in");
      });
}

std::vector<BackwardOp> backward_ops() {
  std::vector<BackwardOp> ops;
  AddFn add = [&](std::string schema, BuildFn fn) {
    ops.push_back({std::move(schema), std::move(fn)});
  };
  add_pooling_backward_ops(add);
  add_loss_backward_ops(add);
  add_activation_backward_ops(add);
  add_view_backward_ops(add);
  return ops;
}

}  // namespace

void register_nn_backward_ops(OpRegistry& r) {
  for (auto& op : backward_ops())
    r.add(op.schema, OpCategory::Composite, Promotion::None, infer_by_building(op.build));
}

void register_nn_backward_decompositions(DecompositionTable& t) {
  for (auto& op : backward_ops())
    t.add(parse_schema(op.schema).name, decomposition_by_building(op.build));
}

void register_nn_backward_kernels(InterpreterTable& t) {
  for (auto& op : backward_ops()) t.add(parse_schema(op.schema).name, kernels::run_decomposition);
}

void register_nn_backward_vjps(VjpTable& t) {
  for (auto& op : backward_ops()) t.add(parse_schema(op.schema).name, vjp_via_decomposition);
}

void register_nn_backward_jvps(JvpTable& t) {
  for (auto& op : backward_ops()) t.add(parse_schema(op.schema).name, jvp_via_decomposition);
}

}  // namespace stax
