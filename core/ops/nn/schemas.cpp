// The neural-network ops of real models, with aten's schemas (issue 14): normalization,
// embedding, pooling, padding, upsampling, losses and scaled dot-product attention (convolution
// and its entry points: convolution_schemas.cpp). All are Composite: their decompositions
// (core/ops/nn/decompositions.cpp) rewrite them into base ops, so the compiled path fuses them
// and their derivatives follow from the decomposition.
//
// Differences from aten, by design of a single-output, functional IR:
//   * batch_norm with training=True normalizes with the batch statistics; the update of
//     running_mean / running_var is functionalized as Graph::call builds the node
//     (core/ops/mutation/rules.cpp, docs/functionalization.md). The multi-output native_batch_norm, native_group_norm,
//     native_layer_norm, max_pool*_with_indices, nll_loss_forward are tuple-valued ops expanded
//     into these (core/ops/multi_output/schemas.cpp); convolution_backward is not registered.
//   * scaled_dot_product_attention takes 0 <= dropout_p < 1: its decomposition drops the
//     probabilities with an ordinary dropout node (Stax's Philox stream, not torch's RNG bits;
//     docs/attention.md "Dropout"); p = 1 (everything dropped) and p outside [0, 1) are errors.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/ops/nn/params.h"
#include "core/ops/common/infer_helpers.h"
#include "core/ops/registration.h"

namespace stax {

namespace {

using nn::Ints;

std::string dt(DType t) { return std::string(dtype_name(t)); }

void need_floating(const CallArgs& c, const TensorMeta& m, const char* what) {
  if (!is_floating(m.dtype))
    c.fail(std::string(what) + " must have a floating dtype, got " + dt(m.dtype));
}

using infer::getter;
using infer::same_dtype;

// ---- normalization -------------------------------------------------------------------------

void channel_param(const CallArgs& c, const char* p, int64_t channels, const TensorMeta& x) {
  if (!c.has(p)) return;
  const TensorMeta& m = c.tensor(p);
  need_floating(c, m, p);
  if (m.sizes != Shape{channels})
    c.fail(std::string(p) + " " + shape_str(m.sizes) + " must have shape (" +
           std::to_string(channels) + ",) for input " + shape_str(x.sizes));
}

TensorMeta batch_norm_rule(const CallArgs& c) {
  const TensorMeta& x = c.tensor("input");
  need_floating(c, x, "input");
  if (x.dim() < 2) c.fail("input must be at least 2-D (batch, channels, ...), got " + shape_str(x.sizes));
  for (const char* p : {"weight", "bias", "running_mean", "running_var"})
    channel_param(c, p, x.sizes[1], x);
  if (c.has("running_mean") != c.has("running_var"))
    c.fail("running_mean and running_var must either both be None or neither be None");
  infer::check_norm_param_dtypes(c, x.dtype, {"weight", "bias", "running_mean", "running_var"});
  if (!c.get("training").to_bool() && (!c.has("running_mean") || !c.has("running_var")))
    c.fail("running_mean and running_var must be given when training=False");
  return TensorMeta::contiguous(x.sizes, x.dtype, x.device);
}

TensorMeta group_norm_rule(const CallArgs& c) {
  const TensorMeta& x = c.tensor("input");
  need_floating(c, x, "input");
  if (x.dim() < 2) c.fail("input must be at least 2-D (batch, channels, ...), got " + shape_str(x.sizes));
  int64_t g = c.get("num_groups").to_int();
  if (g < 1 || x.sizes[1] % g != 0)
    c.fail("num_groups " + std::to_string(g) + " must divide the " + std::to_string(x.sizes[1]) +
           " channels of input " + shape_str(x.sizes));
  // torch's native_group_norm: at least one channel and one element per (sample, channel).
  int64_t hxw = shape_numel(Shape(x.sizes.begin() + 2, x.sizes.end()));
  if (x.sizes[1] == 0 || hxw == 0)
    c.fail("input " + shape_str(x.sizes) + " must have channels (dim 1) and a non-empty spatial "
           "size (HxW = " + std::to_string(hxw) + ")");
  for (const char* p : {"weight", "bias"}) channel_param(c, p, x.sizes[1], x);
  infer::check_norm_param_dtypes(c, x.dtype, {"weight", "bias"});
  return TensorMeta::contiguous(x.sizes, x.dtype, x.device);
}

// ---- embedding -----------------------------------------------------------------------------

void need_index(const CallArgs& c, const TensorMeta& m, const char* what) {
  if (m.dtype != DType::Int64 && m.dtype != DType::Int32)
    c.fail(std::string(what) + " must be an int64 or int32 tensor, got " + dt(m.dtype));
}

TensorMeta embedding_rule(const CallArgs& c) {
  const TensorMeta& w = c.tensor("weight");
  const TensorMeta& idx = c.tensor("indices");
  if (w.dim() != 2) c.fail("weight must be 2-D (num_embeddings, embedding_dim), got " + shape_str(w.sizes));
  need_index(c, idx, "indices");
  if (c.get("sparse").to_bool()) c.fail("sparse=True (a sparse gradient) is not supported");
  if (w.sizes[0] == 0 && idx.numel() > 0)  // torch's index_select: no row to select
    c.fail("indices " + shape_str(idx.sizes) + " select rows of an empty weight " +
           shape_str(w.sizes) + ": every index is out of range");
  Shape out = idx.sizes;
  out.push_back(w.sizes[1]);
  return TensorMeta::contiguous(out, w.dtype, w.device);
}

TensorMeta embedding_dense_backward_rule(const CallArgs& c) {
  const TensorMeta& g = c.tensor("grad_output");
  const TensorMeta& idx = c.tensor("indices");
  need_floating(c, g, "grad_output");
  need_index(c, idx, "indices");
  // torch's kernel views the gradient as (indices.numel(), grad_output.size(-1)).
  if (g.dim() < 1 || g.numel() != idx.numel() * g.sizes.back())
    c.fail("grad_output " + shape_str(g.sizes) + " must hold one row of its last dim per index "
           "of indices " + shape_str(idx.sizes));
  int64_t n = c.get("num_weights").to_int();
  if (n < 0) c.fail("num_weights must be >= 0");
  return TensorMeta::contiguous({n, g.sizes.back()}, g.dtype, g.device);
}

// ---- pooling -------------------------------------------------------------------------------

InferFn pool_rule(size_t sp, bool has_dilation, bool max) {
  return [=](const CallArgs& c) {
    const TensorMeta& x = c.tensor("self");
    // avg_pool: torch's CPU kernels also take int64 (the window sum divided with truncation)
    if (!max && x.dtype != DType::Int64) need_floating(c, x, "self");
    nn::check_pool_input(x.sizes, sp, /*adaptive=*/false, c.where());
    nn::PoolParams p = nn::pool_params(getter(c), sp, has_dilation, c.where());
    Shape out = x.sizes;
    for (size_t i = 0; i < sp; ++i) {
      size_t d = x.sizes.size() - sp + i;
      if (!max && sp == 3 && x.sizes[d] < p.kernel[i])  // torch's avg_pool3d, padding or not
        c.fail("input " + shape_str(x.sizes) + " is smaller than the kernel size " +
               shape_list_str(Shape(p.kernel.begin(), p.kernel.end())));
      int64_t o = nn::pool_out_size(x.sizes[d], p.kernel[i], p.stride[i], p.padding[i],
                                    p.dilation[i], p.ceil_mode);
      if (o <= 0) c.fail("the output of pooling input " + shape_str(x.sizes) + " would be empty");
      out[d] = o;
    }
    if (!max && c.op().schema.index_of("divisor_override") >= 0 && c.has("divisor_override") &&
        c.get("divisor_override").to_int() == 0)
      c.fail("divisor_override must be non-zero");
    return TensorMeta::contiguous(out, x.dtype, x.device);
  };
}

InferFn adaptive_pool_rule(size_t sp) {
  return [=](const CallArgs& c) {
    const TensorMeta& x = c.tensor("self");
    need_floating(c, x, "self");
    nn::check_pool_input(x.sizes, sp, /*adaptive=*/true, c.where());
    // torch's kernels take exactly one size per spatial dim (its meta functions do not check).
    const Arg& size = c.get("output_size");
    if (size.is_list() && size.list().size() != sp)
      c.fail("adaptive_avg_pool" + std::to_string(sp) + "d: output_size must be " +
             std::to_string(sp) + ", got " + std::to_string(size.list().size()) + " entries");
    Ints os = nn::expand_list(size, sp, "output_size", c.where(), 0);  // 0: an empty result
    Shape out = x.sizes;
    for (size_t i = 0; i < sp; ++i) out[x.sizes.size() - sp + i] = os[i];
    return TensorMeta::contiguous(out, x.dtype, x.device);
  };
}

// ---- padding -------------------------------------------------------------------------------

TensorMeta constant_pad_rule(const CallArgs& c) {
  const TensorMeta& x = c.tensor("self");
  Ints pad = c.get("pad").to_int_list();
  infer::check_scalar_fits(c, "value", x.dtype);
  if (pad.size() % 2 != 0) c.fail("pad must have an even number of entries, got " + std::to_string(pad.size()));
  if (static_cast<int64_t>(pad.size() / 2) > x.dim())
    c.fail("pad of length " + std::to_string(pad.size()) + " pads more dims than input " +
           shape_str(x.sizes) + " has");
  Shape out = x.sizes;
  for (size_t i = 0; i < pad.size() / 2; ++i) {
    size_t d = x.sizes.size() - 1 - i;
    // torch narrows by the negative pads first: that alone must not make the dim negative.
    if (x.sizes[d] + std::min<int64_t>(pad[2 * i], 0) + std::min<int64_t>(pad[2 * i + 1], 0) < 0)
      c.fail("the negative pads of " + shape_list_str(Shape(pad.begin(), pad.end())) +
             " remove more than dim " + std::to_string(d) + " of input " + shape_str(x.sizes) +
             " has");
    out[d] = x.sizes[d] + pad[2 * i] + pad[2 * i + 1];
    if (out[d] < 0)
      c.fail("pad " + shape_list_str(Shape(pad.begin(), pad.end())) + " makes dim " +
             std::to_string(d) + " of input " + shape_str(x.sizes) + " negative");
  }
  return TensorMeta::contiguous(out, x.dtype, x.device);
}

InferFn index_pad_rule(size_t sp, bool reflect) {
  return [=](const CallArgs& c) {
    const TensorMeta& x = c.tensor("self");
    int64_t r = static_cast<int64_t>(sp);
    if (x.dim() != r + 1 && x.dim() != r + 2)
      c.fail("input must be " + std::to_string(r + 1) + "-D or " + std::to_string(r + 2) +
             "-D, got " + shape_str(x.sizes));
    if (c.get("padding").to_int_list().size() != 2 * sp)
      c.fail("padding size is expected to be " + std::to_string(2 * sp) + ", but got: " +
             std::to_string(c.get("padding").to_int_list().size()));
    if (!reflect && x.dtype == DType::Bool)
      c.fail("replication padding is not implemented for 'bool' tensors");
    Ints pad = nn::expand_list(c.get("padding"), 2 * sp, "padding", c.where(), INT64_MIN);
    Shape out = x.sizes;
    for (size_t i = 0; i < sp; ++i) {
      size_t d = x.sizes.size() - 1 - i;
      int64_t l = pad[2 * i], rr = pad[2 * i + 1], n = x.sizes[d];
      if (reflect && (l >= n || rr >= n))
        c.fail("padding " + shape_list_str(Shape(pad.begin(), pad.end())) +
               " must be smaller than the padded dim (" + std::to_string(n) + ") of input " +
               shape_str(x.sizes));
      if (n == 0) c.fail("input " + shape_str(x.sizes) + " has an empty padded dim");
      for (int64_t e = x.dim() == r + 2 ? 1 : 0; e < x.dim(); ++e)
        if (x.sizes[e] == 0)
          c.fail("expected a tensor with possibly 0 batch size and other non-zero dimensions, "
                 "got " + shape_str(x.sizes));
      out[d] = n + l + rr;
      if (out[d] <= 0) c.fail("padding makes dim " + std::to_string(d) + " empty or negative");
    }
    return TensorMeta::contiguous(out, x.dtype, x.device);
  };
}

// ---- upsampling ----------------------------------------------------------------------------

// Nearest upsampling is a gather: like torch's CPU kernel, it also takes uint8 (images).
template <bool kNearest>
TensorMeta upsample2d_rule(const CallArgs& c) {
  const TensorMeta& x = c.tensor("self");
  if (!kNearest || x.dtype != DType::UInt8) need_floating(c, x, "self");
  if (x.dim() != 4) c.fail("input must be 4-D (N, C, H, W), got " + shape_str(x.sizes));
  Ints os = nn::expand_list(c.get("output_size"), 2, "output_size", c.where(), 1);
  if (x.sizes[1] == 0 || x.sizes[2] == 0 || x.sizes[3] == 0)
    c.fail("non-empty 4D data tensor expected (only the batch dim may be empty), got " +
           shape_str(x.sizes));
  return TensorMeta::contiguous({x.sizes[0], x.sizes[1], os[0], os[1]}, x.dtype, x.device);
}

// ---- losses --------------------------------------------------------------------------------

Shape reduced_loss_shape(const CallArgs& c, const Shape& elementwise) {
  int64_t r = c.get("reduction").to_int();
  if (r < 0 || r > 2) c.fail("reduction must be 0 (none), 1 (mean) or 2 (sum), got " + std::to_string(r));
  return r == nn::kReductionNone ? elementwise : Shape{};
}

TensorMeta pointwise_loss_rule(const CallArgs& c) {
  const TensorMeta& x = c.tensor("self");
  const TensorMeta& t = c.tensor("target");
  Shape b = broadcast_shapes(x.sizes, t.sizes, c.where());
  // torch's kernels: one TensorIterator over self and target in their promoted dtype, which
  // must be floating (an integer target with a floating self is fine).
  DType d = result_type(c, {"self", "target"}, Promotion::Default);
  if (!is_floating(d))
    c.fail("self (" + dt(x.dtype) + ") and target (" + dt(t.dtype) +
           ") must promote to a floating dtype, got " + dt(d));
  if (c.op().schema.index_of("beta") >= 0 && c.get("beta").to_double() < 0)
    c.fail("beta must be >= 0");
  return TensorMeta::contiguous(reduced_loss_shape(c, b), d, x.device);
}

TensorMeta bce_logits_rule(const CallArgs& c) {
  const TensorMeta& x = c.tensor("self");
  const TensorMeta& t = c.tensor("target");
  need_floating(c, x, "self");
  need_floating(c, t, "target");  // torch's kernel writes the loss in the target's dtype
  if (c.has("pos_weight") && c.tensor("pos_weight").dtype == DType::Bool)
    c.fail("pos_weight must not be bool (the loss subtracts 1 from it)");
  if (t.sizes != x.sizes)
    c.fail("target " + shape_str(t.sizes) + " must have the shape of self " + shape_str(x.sizes));
  for (const char* p : {"weight", "pos_weight"})
    if (c.has(p) && broadcast_shapes(c.tensor(p).sizes, x.sizes, c.where()) != x.sizes)
      c.fail(std::string(p) + " " + shape_str(c.tensor(p).sizes) + " must broadcast to " +
             shape_str(x.sizes));
  // torch writes the loss in the target's dtype (its meta and its CPU kernel).
  return TensorMeta::contiguous(reduced_loss_shape(c, x.sizes), t.dtype, x.device);
}

// self (C) / (N, C) / (N, C, d...), target () / (N) / (N, d...) class indices.
Shape class_loss_shape(const CallArgs& c, const TensorMeta& x, const TensorMeta& t) {
  need_floating(c, x, "self");
  if (x.dim() < 1) c.fail("self must be at least 1-D (classes), got " + shape_str(x.sizes));
  if (t.dtype != DType::Int64)  // torch's CPU kernels: Long (or Byte, which Stax does not take)
    c.fail("expected an int64 target of class indices, got " + dt(t.dtype));
  Shape want;
  if (x.dim() >= 2) {
    want.push_back(x.sizes[0]);
    want.insert(want.end(), x.sizes.begin() + 2, x.sizes.end());
  }
  if (t.sizes != want)
    c.fail("target " + shape_str(t.sizes) + " must have shape " + shape_str(want) + " for self " +
           shape_str(x.sizes));
  if (c.has("weight") && c.tensor("weight").sizes != Shape{x.dim() == 1 ? x.sizes[0] : x.sizes[1]})
    c.fail("weight " + shape_str(c.tensor("weight").sizes) + " must have one entry per class");
  if (c.has("weight") && c.tensor("weight").dtype != x.dtype)  // torch's CPU kernels
    c.fail("weight (" + dt(c.tensor("weight").dtype) + ") must have the dtype of self (" +
           dt(x.dtype) + ")");
  return want;
}

TensorMeta nll_loss_rule(const CallArgs& c) {
  const TensorMeta& x = c.tensor("self");
  if (c.op().schema.base == "nll_loss2d" && (x.dim() != 4 || c.tensor("target").dim() != 3))
    c.fail("nll_loss2d expects a 4-D self (N, C, H, W) and a 3-D target (N, H, W), got " +
           shape_str(x.sizes) + " and " + shape_str(c.tensor("target").sizes));
  Shape e = class_loss_shape(c, x, c.tensor("target"));
  return TensorMeta::contiguous(reduced_loss_shape(c, e), x.dtype, x.device);
}

TensorMeta nll_loss_backward_rule(const CallArgs& c) {
  const TensorMeta& x = c.tensor("self");
  Shape e = class_loss_shape(c, x, c.tensor("target"));
  Shape go = reduced_loss_shape(c, e);
  if (c.tensor("grad_output").sizes != go)
    c.fail("grad_output " + shape_str(c.tensor("grad_output").sizes) + " must have shape " +
           shape_str(go));
  if (c.tensor("total_weight").dim() != 0) c.fail("total_weight must be 0-d");
  return TensorMeta::contiguous(x.sizes, x.dtype, x.device);
}

TensorMeta cross_entropy_rule(const CallArgs& c) {
  const TensorMeta& x = c.tensor("self");
  const TensorMeta& t = c.tensor("target");
  double ls = c.get("label_smoothing").to_double();
  if (ls < 0 || ls > 1) c.fail("label_smoothing must be in [0, 1], got " + std::to_string(ls));
  if (is_floating(t.dtype)) {  // class probabilities
    need_floating(c, x, "self");
    if (t.sizes != x.sizes)
      c.fail("probability target " + shape_str(t.sizes) + " must have the shape of self " +
             shape_str(x.sizes));
    Shape e = x.sizes;
    if (!e.empty()) e.erase(e.begin() + (x.dim() >= 2 ? 1 : 0));
    return TensorMeta::contiguous(reduced_loss_shape(c, e), x.dtype, x.device);
  }
  Shape e = class_loss_shape(c, x, t);
  if (ls > 0 && c.has("weight")) c.fail("label_smoothing with a class weight is not supported");
  return TensorMeta::contiguous(reduced_loss_shape(c, e), x.dtype, x.device);
}

// ---- attention -----------------------------------------------------------------------------

TensorMeta sdpa_rule(const CallArgs& c) {
  const TensorMeta& q = c.tensor("query");
  const TensorMeta& k = c.tensor("key");
  const TensorMeta& v = c.tensor("value");
  need_floating(c, q, "query");
  same_dtype(c, q, k, "query", "key");
  same_dtype(c, q, v, "query", "value");
  if (q.dim() < 2 || k.dim() != q.dim() || v.dim() != q.dim())
    c.fail("query, key and value must have one rank >= 2, got " + shape_str(q.sizes) + ", " +
           shape_str(k.sizes) + ", " + shape_str(v.sizes));
  size_t r = q.sizes.size();
  if (q.sizes[r - 1] != k.sizes[r - 1])
    c.fail("query " + shape_str(q.sizes) + " and key " + shape_str(k.sizes) + " differ in the embedding dim");
  if (k.sizes[r - 2] != v.sizes[r - 2])
    c.fail("key " + shape_str(k.sizes) + " and value " + shape_str(v.sizes) + " differ in the sequence dim");
  Shape qb(q.sizes.begin(), q.sizes.end() - 2), kb(k.sizes.begin(), k.sizes.end() - 2),
      vb(v.sizes.begin(), v.sizes.end() - 2);
  if (kb != vb) c.fail("key and value must have the same batch dims");
  bool gqa = c.get("enable_gqa").to_bool();
  if (gqa && r < 3)  // torch reads the heads dim (-3)
    c.fail("enable_gqa needs a heads dim: query, key and value of rank >= 3, got rank " +
           std::to_string(r));
  if (gqa) {
    int64_t hq = q.sizes[r - 3], hk = k.sizes[r - 3];
    if (hk == 0 || hq % hk != 0)
      c.fail("enable_gqa: query heads " + std::to_string(hq) + " must be a multiple of key heads " +
             std::to_string(hk));
    kb[kb.size() - 1] = hq;
  }
  Shape batch = broadcast_shapes(qb, kb, c.where());
  const double drop = c.get("dropout_p").to_double();
  if (!(drop >= 0.0 && drop < 1.0))
    c.fail("dropout_p must be in [0, 1) (the probability of dropping an attention weight), got " +
           std::to_string(drop));
  if (c.has("attn_mask")) {
    const TensorMeta& m = c.tensor("attn_mask");
    if (m.dtype != DType::Bool && m.dtype != q.dtype)
      c.fail("attn_mask must be bool or have the query's dtype " + dt(q.dtype) + ", got " + dt(m.dtype));
    Shape scores = batch;
    scores.push_back(q.sizes[r - 2]);
    scores.push_back(k.sizes[r - 2]);
    if (broadcast_shapes(m.sizes, scores, c.where()) != scores)
      c.fail("attn_mask " + shape_str(m.sizes) + " must broadcast to the scores' shape " + shape_str(scores));
    if (c.get("is_causal").to_bool()) c.fail("attn_mask and is_causal=True cannot both be given");
  }
  Shape out = batch;
  out.push_back(q.sizes[r - 2]);
  out.push_back(v.sizes[r - 1]);
  return TensorMeta::contiguous(out, q.dtype, q.device);
}

using P = Promotion;
using C = OpCategory;

// Losses: the broadcast shape (reduction none) or a 0-d tensor.
TensorMeta loss_rule(const CallArgs& c) {
  const TensorMeta& x = c.tensor("self");
  const TensorMeta& t = c.tensor("target");
  Shape b = broadcast_shapes(x.sizes, t.sizes, c.where());
  DType d = result_type(c, {"self", "target"}, P::Default);
  if (!is_floating(d)) c.fail("expected floating-point self and target, got " + dt(d));
  if (!is_floating(x.dtype))  // torch's kernels write a result of self's dtype
    c.fail("result type " + dt(d) + " can't be cast to self's dtype " + dt(x.dtype));
  if (c.op().schema.base == "soft_margin_loss" && b != x.sizes)  // written into self's shape
    c.fail("target " + shape_str(t.sizes) + " must broadcast to the shape of self " +
           shape_str(x.sizes));
  int64_t red = c.get("reduction").to_int();
  if (red < 0 || red > 2) c.fail("reduction must be 0 (none), 1 (mean) or 2 (sum), got " +
                                 std::to_string(red));
  return TensorMeta::contiguous(red == nn::kReductionNone ? b : Shape{}, d, x.device);
}

TensorMeta bce_rule(const CallArgs& c) {
  const TensorMeta& x = c.tensor("self");
  const TensorMeta& t = c.tensor("target");
  if (!is_floating(x.dtype)) c.fail("binary_cross_entropy: expected a floating-point input");
  if (t.dtype != x.dtype)
    c.fail("target (" + dt(t.dtype) + ") must have the dtype of self (" + dt(x.dtype) + ")");
  if (t.sizes != x.sizes)
    c.fail("Using a target size (" + shape_str(t.sizes) + ") that is different to the input size (" +
           shape_str(x.sizes) + ") is deprecated. Please ensure they have the same size.");
  if (c.has("weight") && broadcast_shapes(c.tensor("weight").sizes, x.sizes, c.where()) != x.sizes)
    c.fail("weight " + shape_str(c.tensor("weight").sizes) + " must broadcast to " +
           shape_str(x.sizes));
  return loss_rule(c);
}

TensorMeta pixel_shuffle_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  bool up = c.op().schema.index_of("upscale_factor") >= 0;
  int64_t r = c.get(up ? "upscale_factor" : "downscale_factor").to_int();
  if (in.dim() < 3) c.fail("pixel_shuffle expects input to have at least 3 dimensions, but got "
                           "input with " + std::to_string(in.dim()) + " dimension(s)");
  if (r <= 0) c.fail("pixel_shuffle expects a positive factor, but got " + std::to_string(r));
  Shape s = in.sizes;
  int64_t n = s.size();
  if (up) {
    if (s[n - 3] % (r * r) != 0)
      c.fail("pixel_shuffle expects its input's 'channel' dimension to be divisible by the "
             "square of upscale_factor, but input.size(-3)=" + std::to_string(s[n - 3]) +
             " is not divisible by " + std::to_string(r * r));
    s[n - 3] /= r * r;
    s[n - 2] *= r;
    s[n - 1] *= r;
  } else {
    if (s[n - 2] % r != 0 || s[n - 1] % r != 0)
      c.fail("pixel_unshuffle expects height and width to be divisible by downscale_factor, "
             "got " + shape_str(s));
    s[n - 3] *= r * r;
    s[n - 2] /= r;
    s[n - 1] /= r;
  }
  return TensorMeta::contiguous(s, in.dtype, in.device);
}

TensorMeta dist_rule(const CallArgs& c) {
  TensorMeta m = infer::elementwise(c, {"self", "other"}, P::Default);
  // torch: the norm of self - other, in their promoted dtype (float32 and int64 give float32).
  for (const char* p : {"self", "other"})
    if (c.tensor(p).dtype == DType::Bool)
      c.fail(std::string(p) + " is bool: subtraction with a bool tensor is not supported");
  if (!is_floating(m.dtype)) c.fail("dist: expected floating-point inputs, got " + dt(m.dtype));
  // The norm of every element: a negative or infinite order has no identity over none.
  double p = c.get("p").to_double();
  if (shape_numel(m.sizes) == 0 && (p < 0 || std::isinf(p)))
    c.fail("dist: the " + double_repr(p) + " norm of an empty difference " + shape_str(m.sizes) +
           " is undefined (the operation has no identity)");
  return TensorMeta::contiguous({}, m.dtype, m.device);
}

Shape replace_tail(const CallArgs& c, const Shape& in, const std::vector<int64_t>& tail) {
  if (in.size() < tail.size()) c.fail("expected at least " + std::to_string(tail.size()) +
                                      " dimensions, got " + shape_str(in));
  Shape s = in;
  for (size_t i = 0; i < tail.size(); ++i) {
    if (tail[i] < 0) c.fail("output size must be non-negative, got " + std::to_string(tail[i]));
    s[in.size() - tail.size() + i] = tail[i];
  }
  return s;
}

// upsample_*.vec: output_size, or floor(input size * scale_factor) per spatial dim.
std::vector<int64_t> vec_output_size(const CallArgs& c, const Shape& in, size_t spatial) {
  const Arg& os = c.get("output_size");
  const Arg& sf = c.get("scale_factors");
  if (os.is_absent() == sf.is_absent())
    c.fail("must specify exactly one of output_size and scale_factors");
  if (in.size() != spatial + 2)
    c.fail("expected a " + std::to_string(spatial + 2) + "-D input, got " + shape_str(in));
  if (std::find(in.begin() + 1, in.end(), 0) != in.end())
    c.fail("non-empty " + std::to_string(spatial + 2) + "D data tensor expected (only the batch "
           "dim may be empty), got " + shape_str(in));
  if (!os.is_absent()) {
    auto v = os.to_int_list();
    if (v.size() != spatial) c.fail("output_size must have " + std::to_string(spatial) + " entries");
    return v;
  }
  const auto& f = sf.list();
  if (f.size() != spatial) c.fail("scale_factors must have " + std::to_string(spatial) + " entries");
  std::vector<int64_t> v;
  for (size_t i = 0; i < spatial; ++i)
    v.push_back(static_cast<int64_t>(static_cast<double>(in[2 + i]) * f[i].to_double()));
  return v;
}

TensorMeta unpool_rule(const CallArgs& c, size_t spatial) {
  const TensorMeta& x = c.tensor("self");
  const TensorMeta& idx = c.tensor("indices");
  if (idx.dtype != DType::Int64) c.fail("elements in indices should be type int64 but got: " +
                                        dt(idx.dtype));
  if (idx.sizes != x.sizes) c.fail("Expected shape of indices to be same as that of the input "
                                   "tensor (" + shape_str(x.sizes) + ") but got indices tensor "
                                   "with shape: " + shape_str(idx.sizes));
  if (x.dim() != static_cast<int64_t>(spatial) + 1 && x.dim() != static_cast<int64_t>(spatial) + 2)
    c.fail("Input to max_unpooling" + std::to_string(spatial) + "d should be a " +
           std::to_string(spatial + 1) + "d or " + std::to_string(spatial + 2) + "d Tensor, got " +
           shape_str(x.sizes));
  for (int64_t d = 1; d < x.dim(); ++d)
    if (x.sizes[d] == 0)
      c.fail("max_unpooling" + std::to_string(spatial) + "d(): expected input to have non-zero "
             "size for non-batch dimensions, but got " + shape_str(x.sizes) + " with dimension " +
             std::to_string(d) + " being empty");
  auto os = c.get("output_size").to_int_list();
  if (os.size() != spatial) c.fail("There should be exactly " + std::to_string(spatial) +
                                   " elements (depth, height, width) in output_size");
  if (spatial == 3) {  // max_unpool3d's stride and padding: three entries, positive strides
    Ints st = c.get("stride").to_int_list(), pad = c.get("padding").to_int_list();
    if (st.size() != 3 || pad.size() != 3)
      c.fail("stride and padding must have exactly three elements (depth, height, width)");
    if (st[0] <= 0 || st[1] <= 0 || st[2] <= 0)
      c.fail("strides should be greater than zero, but got stride: " + shape_list_str(st));
  }
  return TensorMeta::contiguous(replace_tail(c, x.sizes, os), x.dtype, x.device);
}

TensorMeta renorm_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  if (!is_floating(in.dtype)) c.fail("renorm: expected a floating-point input, got " + dt(in.dtype));
  if (in.dim() < 2)
    c.fail("renorm: input needs at least 2 dimensions, got " + std::to_string(in.dim()));
  wrap_dim(c.get("dim").to_int(), std::max<int64_t>(in.dim(), 1), c.where());
  if (c.get("p").to_double() <= 0) c.fail("renorm: non-positive-norm not supported");
  if (c.get("maxnorm").to_double() < 0) c.fail("renorm: expected maxnorm to be >= 0 but got " +
                                               std::to_string(c.get("maxnorm").to_double()));
  return TensorMeta::contiguous(in.sizes, in.dtype, in.device);
}

TensorMeta cdist_rule(const CallArgs& c) {
  const TensorMeta& a = c.tensor("x1");
  const TensorMeta& b = c.tensor("x2");
  if (a.dim() < 2 || b.dim() < 2) c.fail("cdist only supports at least 2D tensors, X1 got: " +
                                         std::to_string(a.dim()) + "D");
  if (a.sizes.back() != b.sizes.back())
    c.fail("X1 and X2 must have the same number of columns. X1: " + std::to_string(a.sizes.back()) +
           " X2: " + std::to_string(b.sizes.back()));
  if (!is_floating(a.dtype) || a.dtype != b.dtype)
    c.fail("cdist only supports floating-point dtypes of equal type, got " + dt(a.dtype) + " and " +
           dt(b.dtype));
  if (c.get("p").to_double() < 0) c.fail("cdist only supports non-negative p values");
  if (c.has("compute_mode") && (c.get("compute_mode").to_int() < 0 || c.get("compute_mode").to_int() > 2))
    c.fail("compute_mode must be None, 0, 1 or 2, got " + std::to_string(c.get("compute_mode").to_int()));
  Shape ba(a.sizes.begin(), a.sizes.end() - 2), bb(b.sizes.begin(), b.sizes.end() - 2);
  Shape s = broadcast_shapes(ba, bb, c.where());
  s.push_back(a.sizes[a.dim() - 2]);
  s.push_back(b.sizes[b.dim() - 2]);
  return TensorMeta::contiguous(s, a.dtype, a.device);
}

TensorMeta pdist_rule(const CallArgs& c) {
  const TensorMeta& a = c.tensor("self");
  if (a.dim() != 2) c.fail("pdist only supports 2D tensors, got: " + std::to_string(a.dim()) + "D");
  if (!is_floating(a.dtype)) c.fail("pdist only supports floating-point dtypes");
  if (c.get("p").to_double() < 0) c.fail("pdist only supports non-negative p values");
  int64_t n = a.sizes[0];
  return TensorMeta::contiguous({n * (n - 1) / 2}, a.dtype, a.device);
}

constexpr OpCategory K = OpCategory::Composite;

// batch_norm group_norm, embedding and its backward.
void add_norm_and_embedding_ops(OpRegistry& r) {
  r.add(
      "batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, "
      "Tensor? running_var, bool training, float momentum, float eps, bool cudnn_enabled) -> Tensor",
      K, P::None, batch_norm_rule);
  r.add(
      "group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, "
      "float eps=1e-05, bool cudnn_enabled=True) -> Tensor",
      K, P::None, group_norm_rule);

  r.add(
      "embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool scale_grad_by_freq=False, "
      "bool sparse=False) -> Tensor",
      K, P::None, embedding_rule);
  r.add(
      "embedding_dense_backward(Tensor grad_output, Tensor indices, SymInt num_weights, "
      "SymInt padding_idx, bool scale_grad_by_freq) -> Tensor",
      K, P::None, embedding_dense_backward_rule);
}

// Pooling, padding and upsampling.
void add_pooling_and_padding_ops(OpRegistry& r) {
  // Pooling (defaults as torch prints them: int[1] padding=[0], int[2] padding=0).
  const char* L1[] = {"[0]", "0", "0"};
  const char* O1[] = {"[1]", "1", "1"};
  for (int sp = 1; sp <= 3; ++sp) {
    std::string n = std::to_string(sp);
    std::string T = "int[" + n + "]";
    r.add("max_pool" + n + "d(Tensor self, " + T + " kernel_size, " + T + " stride=[], " + T +
              " padding=" + L1[sp - 1] + ", " + T + " dilation=" + O1[sp - 1] +
              ", bool ceil_mode=False) -> Tensor",
          K, P::None, pool_rule(static_cast<size_t>(sp), true, true));
    r.add("avg_pool" + n + "d(Tensor self, " + T + " kernel_size, " + T + " stride=[], " + T +
              " padding=" + L1[sp - 1] +
              ", bool ceil_mode=False, bool count_include_pad=True" +
              (sp == 1 ? "" : ", int? divisor_override=None") + ") -> Tensor",
          K, P::None, pool_rule(static_cast<size_t>(sp), false, false));
    r.add("adaptive_avg_pool" + n + "d(Tensor self, " + (sp == 1 ? "int[1]" : "SymInt[" + n + "]") +
              " output_size) -> Tensor",
          K, P::None, adaptive_pool_rule(static_cast<size_t>(sp)));
  }

  r.add("constant_pad_nd(Tensor self, SymInt[] pad, Scalar value=0) -> Tensor", K, P::None,
        constant_pad_rule);
  r.add("reflection_pad1d(Tensor self, SymInt[2] padding) -> Tensor", K, P::None, index_pad_rule(1, true));
  r.add("reflection_pad2d(Tensor self, SymInt[4] padding) -> Tensor", K, P::None, index_pad_rule(2, true));
  r.add("replication_pad1d(Tensor self, SymInt[2] padding) -> Tensor", K, P::None, index_pad_rule(1, false));
  r.add("replication_pad2d(Tensor self, SymInt[4] padding) -> Tensor", K, P::None, index_pad_rule(2, false));
  r.add("reflection_pad3d(Tensor self, SymInt[6] padding) -> Tensor", K, P::None, index_pad_rule(3, true));
  r.add("replication_pad3d(Tensor self, SymInt[6] padding) -> Tensor", K, P::None, index_pad_rule(3, false));

  r.add("upsample_nearest2d(Tensor self, SymInt[2] output_size, float? scales_h=None, "
        "float? scales_w=None) -> Tensor",
        K, P::None, upsample2d_rule<true>);
  r.add("upsample_bilinear2d(Tensor self, SymInt[2] output_size, bool align_corners, "
        "float? scales_h=None, float? scales_w=None) -> Tensor",
        K, P::None, upsample2d_rule<false>);
}

// The losses with their own rules, and scaled_dot_product_attention.
void add_loss_and_attention_ops(OpRegistry& r) {
  r.add("nll_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=1, "
        "int ignore_index=-100) -> Tensor",
        K, P::None, nll_loss_rule);
  r.add("nll_loss2d(Tensor self, Tensor target, Tensor? weight=None, int reduction=1, "
        "int ignore_index=-100) -> Tensor",
        K, P::None, nll_loss_rule);
  r.add("nll_loss_backward(Tensor grad_output, Tensor self, Tensor target, Tensor? weight, "
        "int reduction, int ignore_index, Tensor total_weight) -> Tensor",
        K, P::None, nll_loss_backward_rule);
  r.add("mse_loss(Tensor self, Tensor target, int reduction=1) -> Tensor", K, P::None,
        pointwise_loss_rule);
  r.add("smooth_l1_loss(Tensor self, Tensor target, int reduction=1, float beta=1.) -> Tensor",
        K, P::None, pointwise_loss_rule);
  r.add("binary_cross_entropy_with_logits(Tensor self, Tensor target, Tensor? weight=None, "
        "Tensor? pos_weight=None, int reduction=1) -> Tensor",
        K, P::None, bce_logits_rule);
  r.add("cross_entropy_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=1, "
        "int ignore_index=-100, float label_smoothing=0.) -> Tensor",
        K, P::None, cross_entropy_rule);

  r.add("scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, "
        "Tensor? attn_mask=None, float dropout_p=0.0, bool is_causal=False, *, float? scale=None, "
        "bool enable_gqa=False) -> Tensor",
        K, P::None, sdpa_rule)
      .draws_random = nn::attention_draws_random;
}

// Composite formulas: huber / soft margin / binary cross entropy losses, dist, pixel_shuffle.
void add_composite_formulas(OpRegistry& r) {
  {
    // ---- pointwise formulas (Composite)
    auto comp = [&](const std::string& schema, Promotion p, InferFn f) -> OpDef& {
      return r.add(schema, C::Composite, p, std::move(f));
    };

    comp("huber_loss(Tensor self, Tensor target, int reduction=1, float delta=1.) -> Tensor",
         P::None, [](const CallArgs& c) {
           if (c.get("delta").to_double() <= 0)
             c.fail("huber_loss does not support non-positive values for delta.");
           return loss_rule(c);
         });

    comp("soft_margin_loss(Tensor self, Tensor target, int reduction=1) -> Tensor", P::None,
         loss_rule);

    comp("binary_cross_entropy(Tensor self, Tensor target, Tensor? weight=None, int reduction=1) "
         "-> Tensor",
         P::None, bce_rule);

    comp("dist(Tensor self, Tensor other, Scalar p=2) -> Tensor", P::None, dist_rule);

    comp("pixel_shuffle(Tensor self, int upscale_factor) -> Tensor", P::None, pixel_shuffle_rule);

    comp("pixel_unshuffle(Tensor self, int downscale_factor) -> Tensor", P::None,
         pixel_shuffle_rule);
  }
}

// The _adaptive_avg_pool forms, max_unpool, upsample .vec forms, renorm, cdist / pdist,
// multi_margin_loss. After add_pooling_and_padding_ops (it reads adaptive_avg_pool's rules).
void add_resampling_and_distance_ops(OpRegistry& r) {
  {
    auto comp = [&](const std::string& schema, InferFn f) -> OpDef& {
      return r.add(schema, C::Composite, P::None, std::move(f));
    };

    for (const char* n : {"adaptive_avg_pool2d", "adaptive_avg_pool3d"}) {
      const OpDef* base = r.find(n);
      if (!base) continue;
      InferFn f = base->infer;
      comp(std::string("_") + base->schema.text, [f](const CallArgs& c) { return f(c); });
    }

    comp("max_unpool2d(Tensor self, Tensor indices, int[2] output_size) -> Tensor",
         [](const CallArgs& c) { return unpool_rule(c, 2); });

    comp("max_unpool3d(Tensor self, Tensor indices, int[3] output_size, int[3] stride, "
         "int[3] padding) -> Tensor",
         [](const CallArgs& c) { return unpool_rule(c, 3); });

    comp("upsample_bilinear2d.vec(Tensor input, SymInt[]? output_size, bool align_corners, "
         "float[]? scale_factors) -> Tensor",
         [](const CallArgs& c) {
           const TensorMeta& in = c.tensor("input");
           if (!is_floating(in.dtype)) c.fail("upsample_bilinear2d: expected a floating-point input");
           return TensorMeta::contiguous(replace_tail(c, in.sizes, vec_output_size(c, in.sizes, 2)),
                                         in.dtype, in.device);
         });

    for (int k : {1, 2})
      comp("upsample_nearest" + std::to_string(k) + "d.vec(Tensor input, SymInt[]? output_size, "
           "float[]? scale_factors) -> Tensor",
           [k](const CallArgs& c) {
             const TensorMeta& in = c.tensor("input");
             return TensorMeta::contiguous(
                 replace_tail(c, in.sizes, vec_output_size(c, in.sizes, static_cast<size_t>(k))),
                 in.dtype, in.device);
           });

    comp("renorm(Tensor self, Scalar p, int dim, Scalar maxnorm) -> Tensor", renorm_rule);

    comp("_cdist_forward(Tensor x1, Tensor x2, float p, int? compute_mode) -> Tensor", cdist_rule);

    comp("_pdist_forward(Tensor self, float p=2.) -> Tensor", pdist_rule);

    comp("multi_margin_loss(Tensor self, Tensor target, Scalar p=1, Scalar margin=1, "
         "Tensor? weight=None, int reduction=1) -> Tensor",
         [](const CallArgs& c) {
           const TensorMeta& x = c.tensor("self");
           const TensorMeta& t = c.tensor("target");
           if (!is_floating(x.dtype)) c.fail("multi_margin_loss: expected a floating-point input");
           if (x.dim() > 2)
             c.fail("Expected non-empty vector or matrix with optional 0-dim batch size, but got: " +
                    shape_str(x.sizes));
           int64_t n = x.dim() == 2 ? x.sizes[0] : 1;
           if (t.dtype != DType::Int64) c.fail("multi_margin_loss: expected an int64 target");
           if (shape_numel(t.sizes) != n || t.dim() > 1)
             c.fail("inconsistent target size: " + shape_str(t.sizes) + " for input of size: " +
                    shape_str(x.sizes));
           double p = c.get("p").to_double();
           if (p != 1 && p != 2) c.fail("only p == 1 and p == 2 supported");
           int64_t classes = x.dim() == 0 ? 1 : x.sizes.back();
           if (c.has("weight") && (c.tensor("weight").dim() != 1 ||
                                   c.tensor("weight").sizes[0] != classes))
             c.fail("inconsistent weight size, expected " + std::to_string(classes) +
                    " but got " + shape_str(c.tensor("weight").sizes));
           if (c.has("weight") && c.tensor("weight").dtype != x.dtype)  // torch's CPU kernel
             c.fail("weight (" + dt(c.tensor("weight").dtype) + ") must have self's dtype (" +
                    dt(x.dtype) + ")");
           Shape s = reduced_loss_shape(c, t.sizes);  // (nframe,) or () as torch's kernel
           return TensorMeta::contiguous(s, x.dtype, x.device);
         });
  }
}

}  // namespace

void register_nn_ops(OpRegistry& r) {
  add_norm_and_embedding_ops(r);
  add_pooling_and_padding_ops(r);
  add_loss_and_attention_ops(r);
  add_composite_formulas(r);
  add_resampling_and_distance_ops(r);
}

}  // namespace stax
