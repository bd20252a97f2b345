// The multi-output *_backward ops AOTAutograd and torch.export's training IR emit: tuple-valued
// nodes (docs/DECISIONS.md item 20) expanded into single-output ops, one element per gradient.
//   convolution_backward          the convolution's VJP rule (convolutions again)
//   native_layer_norm_backward    torch's formula from the saved mean and rstd:
//                                 dx = rstd / N (N ĝ - Σ ĝ - x̂ Σ ĝ x̂), ĝ = g w, x̂ = (x - mean) rstd;
//                                 dw = Σ_outer g x̂; db = Σ_outer g
//   native_group_norm_backward    the same per (n, group), with w per channel
//   native_batch_norm_backward    train: dx = (g - x̂ Σ g x̂ / M - Σ g / M) invstd w from the saved
//                                 mean / invstd; eval: dx = g invstd w with the running stats;
//                                 dw = Σ g x̂; db = Σ g (over every dim but the channels)
//   _prelu_kernel_backward        the VJP of _prelu_kernel (self and weight)
// Half types (float16 / bfloat16) are computed in float32 and rounded once, as torch's kernels.
// An element whose output_mask entry is False is None in torch: here an empty (0,) tensor of the
// input's dtype, which FX never reads.
#include <string>
#include <vector>

#include "core/graph/multi_output.h"
#include "core/graph/op_registry.h"
#include "core/ops/common/forward_vjp.h"
#include "core/ops/registration.h"
#include "core/support/error.h"

namespace stax {

namespace {

using Ints = std::vector<int64_t>;

Node* cast(Graph& g, Node* x, DType t) { return x->dtype() == t ? x : g.call("to.dtype", {x, t}); }
DType compute_type(DType t) {
  return t == DType::Float16 || t == DType::BFloat16 ? DType::Float32 : t;
}
Node* empty_like_dtype(Graph& g, DType t) {
  return g.call("zeros", {Arg(Shape{0})}, {{"dtype", Arg(t)}});
}
std::vector<bool> mask_of(const ExpandCall& c, const char* param, size_t n) {
  std::vector<bool> m;
  for (const auto& e : c.get(param).list()) m.push_back(e.to_bool());
  if (m.size() != n) c.fail(std::string(param) + " must have " + std::to_string(n) + " entries");
  return m;
}
Node* sum_over(Graph& g, Node* x, const Ints& dims, bool keepdim) {
  if (dims.empty()) return x;
  return g.call("sum.dim_IntList", {x, Arg(dims), keepdim});
}

std::vector<Node*> convolution_backward(Graph& g, const ExpandCall& c) {
  Node* grad = c.tensor("grad_output");
  Node* x = c.tensor("input");
  Node* w = c.tensor("weight");
  std::vector<bool> mask = mask_of(c, "output_mask", 3);
  Node* bias = nullptr;
  // torch passes bias_sizes=[0] for a convolution without bias; only a wanted bias gradient needs
  // the bias (its values do not matter: the gradient is Σ grad).
  if (mask[2] && !c.get("bias_sizes").is_absent())
    bias = g.call("zeros", {c.get("bias_sizes")}, {{"dtype", Arg(grad->dtype())}});
  std::vector<Node*> wrt;
  if (mask[0]) wrt.push_back(x);
  if (mask[1]) wrt.push_back(w);
  if (mask[2] && bias) wrt.push_back(bias);
  std::vector<Node*> gs = gradients_by_vjp(
      g, "convolution",
      {x, w, bias ? Arg(bias) : Arg(), c.get("stride"), c.get("padding"), c.get("dilation"),
       c.get("transposed"), c.get("output_padding"), c.get("groups")},
      {}, grad, wrt);
  std::vector<Node*> out;
  size_t k = 0;
  for (Node* in : {x, w, bias}) {
    size_t i = out.size();
    if (mask[i] && in) {
      out.push_back(or_zeros(g, gs[k++], in));
    } else {
      out.push_back(empty_like_dtype(g, grad->dtype()));
    }
  }
  return out;
}

// The normalization backward shared by layer, group and batch norm, on x viewed so that `inner`
// are the dims normalized together (N elements) and mean / rstd broadcast against it.
struct NormGrads {
  Node* dx = nullptr;
  Node* xhat = nullptr;
};
NormGrads norm_dx(Graph& g, Node* gx_hat, Node* x, Node* mean, Node* rstd, const Ints& inner,
                  int64_t N) {
  Node* xhat = g.call("mul.Tensor", {g.call("sub.Tensor", {x, mean}), rstd});
  Node* a = g.call("mul.Scalar", {gx_hat, N});
  Node* b = sum_over(g, gx_hat, inner, true);
  Node* cc = g.call("mul.Tensor", {xhat, sum_over(g, g.call("mul.Tensor", {gx_hat, xhat}), inner, true)});
  Node* d = g.call("sub.Tensor", {g.call("sub.Tensor", {a, b}), cc});
  Node* dx = g.call("mul.Tensor", {g.call("div.Scalar", {rstd, N}), d});
  return {dx, xhat};
}

std::vector<Node*> layer_norm_backward(Graph& g, const ExpandCall& c) {
  Node* grad = c.tensor("grad_out");
  Node* x = c.tensor("input");
  DType io = x->dtype(), ct = compute_type(io);
  std::vector<bool> mask = mask_of(c, "output_mask", 3);
  Ints shape = c.get("normalized_shape").to_int_list();
  int64_t rank = x->meta().dim(), axis = rank - static_cast<int64_t>(shape.size());
  if (axis < 0) c.fail("normalized_shape has more dims than the input");
  Ints inner, outer;
  int64_t N = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (d >= axis) {
      inner.push_back(d);
      N *= x->shape()[d];
    } else {
      outer.push_back(d);
    }
  }
  Node* gf = cast(g, grad, ct);
  Node* xf = cast(g, x, ct);
  Node* w = c.has("weight") ? cast(g, c.tensor("weight"), ct) : nullptr;
  Node* gx_hat = w ? g.call("mul.Tensor", {gf, w}) : gf;
  NormGrads ng = norm_dx(g, gx_hat, xf, cast(g, c.tensor("mean"), ct),
                         cast(g, c.tensor("rstd"), ct), inner, N);
  std::vector<Node*> out;
  out.push_back(mask[0] ? cast(g, ng.dx, io) : empty_like_dtype(g, io));
  auto param_grad = [&](const char* p, Node* v) {
    if (!c.has(p)) return empty_like_dtype(g, io);
    return cast(g, sum_over(g, v, outer, false), c.tensor(p)->dtype());
  };
  out.push_back(mask[1] ? param_grad("weight", g.call("mul.Tensor", {gf, ng.xhat}))
                        : empty_like_dtype(g, io));
  out.push_back(mask[2] ? param_grad("bias", gf) : empty_like_dtype(g, io));
  return out;
}

std::vector<Node*> group_norm_backward(Graph& g, const ExpandCall& c) {
  Node* grad = c.tensor("grad_out");
  Node* x = c.tensor("input");
  DType io = x->dtype(), ct = compute_type(io);
  std::vector<bool> mask = mask_of(c, "output_mask", 3);
  int64_t N = c.get("N").to_int(), C = c.get("C").to_int(), HxW = c.get("HxW").to_int();
  int64_t G = c.get("group").to_int();
  if (G <= 0 || C % G != 0) c.fail("the channel count must be divisible by group");
  if (N * C * HxW != x->meta().numel()) c.fail("N * C * HxW does not match the input");
  Shape grouped{N, G, C / G, HxW};
  Node* xg = g.call("reshape", {cast(g, x, ct), Arg(grouped)});
  Node* gg = g.call("reshape", {cast(g, grad, ct), Arg(grouped)});
  Node* mean = g.call("reshape", {cast(g, c.tensor("mean"), ct), Arg(Shape{N, G, 1, 1})});
  Node* rstd = g.call("reshape", {cast(g, c.tensor("rstd"), ct), Arg(Shape{N, G, 1, 1})});
  Node* w = c.has("weight") ? g.call("reshape", {cast(g, c.tensor("weight"), ct),
                                                 Arg(Shape{1, G, C / G, 1})})
                            : nullptr;
  Node* gx_hat = w ? g.call("mul.Tensor", {gg, w}) : gg;
  NormGrads ng = norm_dx(g, gx_hat, xg, mean, rstd, Ints{2, 3}, C / G * HxW);
  std::vector<Node*> out;
  out.push_back(mask[0] ? cast(g, g.call("reshape", {ng.dx, Arg(x->shape())}), io)
                        : empty_like_dtype(g, io));
  auto per_channel = [&](Node* v) {
    return cast(g, g.call("reshape", {sum_over(g, v, Ints{0, 3}, false), Arg(Shape{C})}), io);
  };
  out.push_back(mask[1] ? per_channel(g.call("mul.Tensor", {gg, ng.xhat})) : empty_like_dtype(g, io));
  out.push_back(mask[2] ? per_channel(gg) : empty_like_dtype(g, io));
  return out;
}

std::vector<Node*> batch_norm_backward(Graph& g, const ExpandCall& c) {
  Node* grad = c.tensor("grad_out");
  Node* x = c.tensor("input");
  DType io = x->dtype(), ct = compute_type(io);
  std::vector<bool> mask = mask_of(c, "output_mask", 3);
  int64_t rank = x->meta().dim();
  if (rank < 2) c.fail("input must have at least 2 dims (N, C, ...)");
  int64_t C = x->shape()[1];
  Ints dims{0};
  for (int64_t d = 2; d < rank; ++d) dims.push_back(d);
  int64_t M = x->meta().numel() / std::max<int64_t>(C, 1);
  Shape bshape(static_cast<size_t>(rank), 1);
  bshape[1] = C;
  auto per_channel = [&](const char* p) -> Node* {
    if (!c.has(p)) return nullptr;
    return g.call("reshape", {cast(g, c.tensor(p), ct), Arg(bshape)});
  };
  bool train = c.get("train").to_bool();
  Node *mean, *invstd;
  if (train) {
    mean = per_channel("save_mean");
    invstd = per_channel("save_invstd");
    if (!mean || !invstd) c.fail("train=True needs save_mean and save_invstd");
  } else {
    mean = per_channel("running_mean");
    Node* var = per_channel("running_var");
    if (!mean || !var) c.fail("train=False needs running_mean and running_var");
    invstd = g.call("rsqrt", {g.call("add.Scalar", {var, c.get("eps")})});
  }
  Node* w = per_channel("weight");
  Node* gf = cast(g, grad, ct);
  Node* xc = g.call("sub.Tensor", {cast(g, x, ct), mean});
  Node* grad_sum = sum_over(g, gf, dims, true);
  Node* dot = sum_over(g, g.call("mul.Tensor", {gf, xc}), dims, true);
  Node* scale = w ? g.call("mul.Tensor", {invstd, w}) : invstd;
  Node* dx;
  if (train) {
    Node* k = g.call("div.Scalar", {g.call("mul.Tensor", {dot, g.call("mul.Tensor", {invstd, invstd})}), M});
    Node* proj = g.call("mul.Tensor", {xc, k});
    Node* mean_g = g.call("div.Scalar", {grad_sum, M});
    dx = g.call("mul.Tensor", {g.call("sub.Tensor", {g.call("sub.Tensor", {gf, proj}), mean_g}), scale});
  } else {
    dx = g.call("mul.Tensor", {gf, scale});
  }
  auto channel_vec = [&](Node* v) { return g.call("reshape", {v, Arg(Shape{C})}); };
  std::vector<Node*> out;
  out.push_back(mask[0] ? cast(g, dx, io) : empty_like_dtype(g, io));
  out.push_back(mask[1] ? cast(g, channel_vec(g.call("mul.Tensor", {dot, invstd})), io)
                        : empty_like_dtype(g, io));
  out.push_back(mask[2] ? cast(g, channel_vec(grad_sum), io) : empty_like_dtype(g, io));
  return out;
}

// As torch's kernel (one TensorIterator over self, weight and grad_output): the three of one
// dtype, both gradients in their broadcast shape, elementwise
//   self > 0: (grad, 0)    else: (weight * grad, self * grad)
// (the caller reduces the weight's gradient to its shape).
std::vector<Node*> prelu_kernel_backward(Graph& g, const ExpandCall& c) {
  Node* x = c.tensor("self");
  Node* w = c.tensor("weight");
  Node* grad = c.tensor("grad_output");
  if (w->dtype() != x->dtype() || grad->dtype() != x->dtype())
    c.fail("grad_output (" + std::string(dtype_name(grad->dtype())) + "), self (" +
           std::string(dtype_name(x->dtype())) + ") and weight (" +
           std::string(dtype_name(w->dtype())) + ") must have the same dtype");
  if (!is_floating(x->dtype()))  // torch's kernel: floating types only
    c.fail("_prelu_kernel_backward expects a floating dtype, got " +
           std::string(dtype_name(x->dtype())));
  Shape out = broadcast_shapes(broadcast_shapes(x->shape(), w->shape(), c.where()),
                               grad->shape(), c.where());
  Node* pos = g.call("gt.Scalar", {x, 0});
  if (pos->shape() != out) pos = g.call("expand", {pos, Arg(out)});  // where broadcasts the rest
  Node* dx = g.call("where.self", {pos, grad, g.call("mul.Tensor", {w, grad})});
  Node* zero = g.call("zeros", {Arg(Shape{})}, {{"dtype", Arg(x->dtype())}});
  Node* dw = g.call("where.self", {pos, zero, g.call("mul.Tensor", {x, grad})});
  return {dx, dw};
}

// batch_norm_backward (torch 2.x's backward of _batch_norm_with_update / _no_update): torch's
// kernel calls native_batch_norm_backward with update as train and save_var as the saved invstd
// (the same first ten arguments); reserve is cuDNN's and unused on the CPU.
std::vector<Node*> batch_norm_backward_update(Graph& g, const ExpandCall& c) {
  const OpDef* op = default_registry().find("native_batch_norm_backward");
  if (!op) c.fail("native_batch_norm_backward is not registered");
  std::vector<Arg> args;
  for (const char* p : {"grad_out", "input", "weight", "running_mean", "running_var", "save_mean",
                        "save_var", "update", "eps", "output_mask"})
    args.push_back(c.get(p));
  return batch_norm_backward(g, ExpandCall(*op, std::move(args), {}, c.where()));
}

struct MultiBackward {
  const char* schema;
  ExpandFn expand;
};

std::vector<MultiBackward> multi_backward_ops() {
  return {
      {"convolution_backward(Tensor grad_output, Tensor input, Tensor weight, SymInt[]? bias_sizes, "
       "SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] "
       "output_padding, SymInt groups, bool[3] output_mask) -> (Tensor, Tensor, Tensor)",
       convolution_backward},
      {"native_layer_norm_backward(Tensor grad_out, Tensor input, SymInt[] normalized_shape, "
       "Tensor mean, Tensor rstd, Tensor? weight, Tensor? bias, bool[3] output_mask) -> "
       "(Tensor, Tensor, Tensor)",
       layer_norm_backward},
      {"native_group_norm_backward(Tensor grad_out, Tensor input, Tensor mean, Tensor rstd, "
       "Tensor? weight, SymInt N, SymInt C, SymInt HxW, int group, bool[3] output_mask) -> "
       "(Tensor, Tensor, Tensor)",
       group_norm_backward},
      {"native_batch_norm_backward(Tensor grad_out, Tensor input, Tensor? weight, Tensor? "
       "running_mean, Tensor? running_var, Tensor? save_mean, Tensor? save_invstd, bool train, "
       "float eps, bool[3] output_mask) -> (Tensor, Tensor, Tensor)",
       batch_norm_backward},
      {"batch_norm_backward(Tensor grad_out, Tensor input, Tensor weight, Tensor? running_mean, "
       "Tensor? running_var, Tensor? save_mean, Tensor? save_var, bool update, float eps, bool[3] "
       "output_mask, Tensor reserve) -> (Tensor, Tensor, Tensor)",
       batch_norm_backward_update},
      {"_prelu_kernel_backward(Tensor grad_output, Tensor self, Tensor weight) -> (Tensor, Tensor)",
       prelu_kernel_backward},
  };
}

}  // namespace

void register_nn_backward_multi_output_ops(OpRegistry& r) {
  for (auto& op : multi_backward_ops()) {
    OpSchema s = parse_schema(op.schema);
    r.add_multi(op.schema, OpCategory::Composite, infer_by_expansion(s.name));
  }
}

void register_nn_backward_multi_output_expansions(ExpansionTable& t) {
  for (auto& op : multi_backward_ops()) t.add(parse_schema(op.schema).name, op.expand);
}

}  // namespace stax
