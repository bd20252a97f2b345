// The neural-network ops of real models, with aten's schemas (issue 14): convolution (an Extern
// op: cpu_cpp runs it as im2col + gemm, any other backend on the interpreter's kernel) and its
// conv1d/2d/3d / conv_transpose* entry points, normalization, embedding, pooling, padding,
// upsampling, losses and scaled dot-product attention. All but convolution are Composite: their
// decompositions (core/graph/decompositions_nn.cpp) rewrite them into base ops, so the compiled
// path fuses them and their derivatives follow from the decomposition.
//
// Differences from aten, by design of a single-output, functional IR:
//   * batch_norm with training=True normalizes with the batch statistics but cannot update
//     running_mean / running_var in place (a graph computes the update explicitly, as
//     examples/cnn_train_step.stax does). The multi-output native_batch_norm, native_group_norm,
//     native_layer_norm, max_pool*_with_indices, nll_loss_forward are tuple-valued ops expanded
//     into these (core/graph/ops/multi_output_ops.cpp); convolution_backward is not registered.
//   * scaled_dot_product_attention supports dropout_p == 0 only.
#include <algorithm>

#include "core/graph/nn_params.h"
#include "core/graph/ops/infer_helpers.h"
#include "core/graph/ops/register_ops.h"

namespace stax {

namespace {

using nn::Ints;

std::string dt(DType t) { return std::string(dtype_name(t)); }

void need_floating(const CallArgs& c, const TensorMeta& m, const char* what) {
  if (!is_floating(m.dtype))
    c.fail(std::string(what) + " must have a floating dtype, got " + dt(m.dtype));
}

void same_dtype(const CallArgs& c, const TensorMeta& a, const TensorMeta& b, const char* an,
                const char* bn) {
  if (a.dtype != b.dtype)
    c.fail(std::string(an) + " (" + dt(a.dtype) + ") and " + bn + " (" + dt(b.dtype) +
           ") must have the same dtype");
}

auto getter(const CallArgs& c) {
  return [&c](const char* p) -> const Arg& { return c.get(p); };
}

// ---- convolution ---------------------------------------------------------------------------

// A convolution's bias, when given: one value per output channel (issue 28: conv2d accepted any
// bias shape and failed only when run).
void conv_bias(const CallArgs& c, int64_t c_out) {
  if (!c.has("bias")) return;
  const TensorMeta& b = c.tensor("bias");
  if (b.sizes != Shape{c_out})
    c.fail("bias " + shape_str(b.sizes) + " must have shape (" + std::to_string(c_out) +
           ",): one value per output channel");
}

TensorMeta convolution_rule(const CallArgs& c) {
  const TensorMeta& x = c.tensor("input");
  const TensorMeta& w = c.tensor("weight");
  need_floating(c, x, "input");
  same_dtype(c, x, w, "input", "weight");
  if (x.dim() < 3 || x.dim() > 5)
    c.fail("input must be 3-D, 4-D or 5-D (batch, channels, spatial...), got " + shape_str(x.sizes));
  if (w.dim() != x.dim())
    c.fail("weight " + shape_str(w.sizes) + " must have the rank of input " + shape_str(x.sizes));
  size_t sp = static_cast<size_t>(x.dim() - 2);
  nn::ConvParams p = nn::conv_params(getter(c), sp, c.where());
  int64_t g = p.groups;
  int64_t c_in = x.sizes[1];
  int64_t c_out;
  if (c_in % g != 0) c.fail("input channels " + std::to_string(c_in) + " are not divisible by groups " + std::to_string(g));
  if (!p.transposed) {
    if (w.sizes[0] % g != 0)
      c.fail("weight " + shape_str(w.sizes) + ": output channels not divisible by groups " +
             std::to_string(g));
    if (w.sizes[1] * g != c_in)
      c.fail("weight " + shape_str(w.sizes) + " expects " + std::to_string(w.sizes[1] * g) +
             " input channels (groups " + std::to_string(g) + "), but input " + shape_str(x.sizes) +
             " has " + std::to_string(c_in));
    c_out = w.sizes[0];
  } else {
    if (w.sizes[0] != c_in)
      c.fail("weight " + shape_str(w.sizes) + " of a transposed convolution must have " +
             std::to_string(c_in) + " (input channels) as its first dim");
    c_out = w.sizes[1] * g;
  }
  if (c.has("bias")) same_dtype(c, x, c.tensor("bias"), "input", "bias");
  conv_bias(c, c_out);
  Shape out{x.sizes[0], c_out};
  for (size_t i = 0; i < sp; ++i) {
    int64_t k = w.sizes[2 + i];
    int64_t o = nn::conv_out_size(x.sizes[2 + i], k, p.stride[i], p.padding[i], p.dilation[i],
                                  p.transposed, p.output_padding[i]);
    if (o <= 0)
      c.fail("the output would be empty: input " + shape_str(x.sizes) + " is smaller than the " +
             "(dilated) kernel " + shape_str(w.sizes) + " plus padding");
    out.push_back(o);
  }
  return TensorMeta::contiguous(out, x.dtype, x.device);
}

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
  for (const char* p : {"weight", "bias"}) channel_param(c, p, x.sizes[1], x);
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
  Shape out = idx.sizes;
  out.push_back(w.sizes[1]);
  return TensorMeta::contiguous(out, w.dtype, w.device);
}

TensorMeta embedding_dense_backward_rule(const CallArgs& c) {
  const TensorMeta& g = c.tensor("grad_output");
  const TensorMeta& idx = c.tensor("indices");
  need_floating(c, g, "grad_output");
  need_index(c, idx, "indices");
  Shape want = idx.sizes;
  if (g.dim() != idx.dim() + 1 || !std::equal(want.begin(), want.end(), g.sizes.begin()))
    c.fail("grad_output " + shape_str(g.sizes) + " must have the shape of indices " +
           shape_str(idx.sizes) + " plus the embedding dim");
  int64_t n = c.get("num_weights").to_int();
  if (n < 0) c.fail("num_weights must be >= 0");
  return TensorMeta::contiguous({n, g.sizes.back()}, g.dtype, g.device);
}

// ---- pooling -------------------------------------------------------------------------------

// Pooled ops take (C, spatial...) or (N, C, spatial...).
void pool_input(const CallArgs& c, const TensorMeta& x, size_t sp) {
  int64_t r = static_cast<int64_t>(sp);
  if (x.dim() != r + 1 && x.dim() != r + 2)
    c.fail("input must be " + std::to_string(r + 1) + "-D or " + std::to_string(r + 2) +
           "-D, got " + shape_str(x.sizes));
  for (int64_t d = x.dim() - r; d < x.dim(); ++d)
    if (x.sizes[d] == 0) c.fail("input " + shape_str(x.sizes) + " has an empty spatial dim");
}

InferFn pool_rule(size_t sp, bool has_dilation, bool max) {
  return [=](const CallArgs& c) {
    const TensorMeta& x = c.tensor("self");
    if (!max) need_floating(c, x, "self");
    pool_input(c, x, sp);
    nn::PoolParams p = nn::pool_params(getter(c), sp, has_dilation, c.where());
    Shape out = x.sizes;
    for (size_t i = 0; i < sp; ++i) {
      size_t d = x.sizes.size() - sp + i;
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
    pool_input(c, x, sp);
    Ints os = nn::expand_list(c.get("output_size"), sp, "output_size", c.where(), 1);
    Shape out = x.sizes;
    for (size_t i = 0; i < sp; ++i) out[x.sizes.size() - sp + i] = os[i];
    return TensorMeta::contiguous(out, x.dtype, x.device);
  };
}

// ---- padding -------------------------------------------------------------------------------

TensorMeta constant_pad_rule(const CallArgs& c) {
  const TensorMeta& x = c.tensor("self");
  Ints pad = c.get("pad").to_int_list();
  if (pad.size() % 2 != 0) c.fail("pad must have an even number of entries, got " + std::to_string(pad.size()));
  if (static_cast<int64_t>(pad.size() / 2) > x.dim())
    c.fail("pad of length " + std::to_string(pad.size()) + " pads more dims than input " +
           shape_str(x.sizes) + " has");
  Shape out = x.sizes;
  for (size_t i = 0; i < pad.size() / 2; ++i) {
    size_t d = x.sizes.size() - 1 - i;
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
      out[d] = n + l + rr;
      if (out[d] <= 0) c.fail("padding makes dim " + std::to_string(d) + " empty or negative");
    }
    return TensorMeta::contiguous(out, x.dtype, x.device);
  };
}

// ---- upsampling ----------------------------------------------------------------------------

TensorMeta upsample2d_rule(const CallArgs& c) {
  const TensorMeta& x = c.tensor("self");
  need_floating(c, x, "self");
  if (x.dim() != 4) c.fail("input must be 4-D (N, C, H, W), got " + shape_str(x.sizes));
  Ints os = nn::expand_list(c.get("output_size"), 2, "output_size", c.where(), 1);
  if (x.sizes[2] == 0 || x.sizes[3] == 0) c.fail("input " + shape_str(x.sizes) + " is empty");
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
  need_floating(c, x, "self");
  need_floating(c, t, "target");
  Shape b = broadcast_shapes(x.sizes, t.sizes, c.where());
  DType d = result_type(c, {"self", "target"}, Promotion::Default);
  if (c.op().schema.index_of("beta") >= 0 && c.get("beta").to_double() < 0)
    c.fail("beta must be >= 0");
  return TensorMeta::contiguous(reduced_loss_shape(c, b), d, x.device);
}

TensorMeta bce_logits_rule(const CallArgs& c) {
  const TensorMeta& x = c.tensor("self");
  const TensorMeta& t = c.tensor("target");
  need_floating(c, x, "self");
  if (t.sizes != x.sizes)
    c.fail("target " + shape_str(t.sizes) + " must have the shape of self " + shape_str(x.sizes));
  for (const char* p : {"weight", "pos_weight"})
    if (c.has(p) && broadcast_shapes(c.tensor(p).sizes, x.sizes, c.where()) != x.sizes)
      c.fail(std::string(p) + " " + shape_str(c.tensor(p).sizes) + " must broadcast to " +
             shape_str(x.sizes));
  return TensorMeta::contiguous(reduced_loss_shape(c, x.sizes), x.dtype, x.device);
}

// self (C) / (N, C) / (N, C, d...), target () / (N) / (N, d...) class indices.
Shape class_loss_shape(const CallArgs& c, const TensorMeta& x, const TensorMeta& t) {
  need_floating(c, x, "self");
  if (x.dim() < 1) c.fail("self must be at least 1-D (classes), got " + shape_str(x.sizes));
  need_index(c, t, "target");
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
  return want;
}

TensorMeta nll_loss_rule(const CallArgs& c) {
  const TensorMeta& x = c.tensor("self");
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
  if (gqa && r >= 3) {
    int64_t hq = q.sizes[r - 3], hk = k.sizes[r - 3];
    if (hk == 0 || hq % hk != 0)
      c.fail("enable_gqa: query heads " + std::to_string(hq) + " must be a multiple of key heads " +
             std::to_string(hk));
    kb[kb.size() - 1] = hq;
  }
  Shape batch = broadcast_shapes(qb, kb, c.where());
  if (c.get("dropout_p").to_double() != 0.0)
    c.fail("dropout_p must be 0 (attention dropout is not supported)");
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

}  // namespace

void register_nn_ops(OpRegistry& r) {
  using P = Promotion;
  const auto K = OpCategory::Composite;
  // convolution: the base op (Extern).
  r.add(
      "convolution(Tensor input, Tensor weight, Tensor? bias, int[] stride, int[] padding, "
      "int[] dilation, bool transposed, int[] output_padding, int groups) -> Tensor",
      OpCategory::Extern, P::None, convolution_rule);
  // The entry points as torch prints their schemas: int[1] defaults as lists ([1]), int[2] /
  // int[3] defaults as one int (1), which binds as [1] and repeats per spatial dim.
  auto conv_entry = [&](const std::string& name, int sp, bool transposed) {
    std::string L = sp == 1 ? "[1]" : "1", Z = sp == 1 ? "[0]" : "0";
    std::string T = "int[" + std::to_string(sp) + "]";
    std::string s = name + "(Tensor input, Tensor weight, Tensor? bias=None, " + T +
                    " stride=" + L + ", " + T + " padding=" + Z + ", ";
    s += transposed ? T + " output_padding=" + Z + ", int groups=1, " + T + " dilation=" + L
                    : T + " dilation=" + L + ", int groups=1";
    s += ") -> Tensor";
    r.add(s, K, P::None, [sp, transposed](const CallArgs& c) {
      const TensorMeta& x = c.tensor("input");
      if (x.dim() != sp + 2 && x.dim() != sp + 1)
        c.fail("input must be " + std::to_string(sp + 1) + "-D (unbatched) or " +
               std::to_string(sp + 2) + "-D, got " + shape_str(x.sizes));
      const TensorMeta& w = c.tensor("weight");
      if (w.dim() != sp + 2)
        c.fail("weight must be " + std::to_string(sp + 2) + "-D, got " + shape_str(w.sizes));
      // Shape of the batched call, the batch dim dropped again for an unbatched input.
      bool unbatched = x.dim() == sp + 1;
      Shape xs = x.sizes;
      if (unbatched) xs.insert(xs.begin(), 1);
      size_t usp = static_cast<size_t>(sp);
      nn::Ints stride = nn::expand_list(c.get("stride"), usp, "stride", c.where(), 1);
      nn::Ints pad = nn::expand_list(c.get("padding"), usp, "padding", c.where(), 0);
      nn::Ints dil = nn::expand_list(c.get("dilation"), usp, "dilation", c.where(), 1);
      nn::Ints op = transposed
                        ? nn::expand_list(c.get("output_padding"), usp, "output_padding", c.where(), 0)
                        : nn::Ints(usp, 0);
      int64_t g = c.get("groups").to_int();
      if (g < 1) c.fail("groups must be >= 1");
      int64_t c_out = transposed ? w.sizes[1] * g : w.sizes[0];
      if (xs[1] != (transposed ? w.sizes[0] : w.sizes[1] * g))
        c.fail("input " + shape_str(x.sizes) + " and weight " + shape_str(w.sizes) +
               " disagree on the input channels (groups " + std::to_string(g) + ")");
      Shape out{xs[0], c_out};
      for (size_t i = 0; i < usp; ++i) {
        int64_t o = nn::conv_out_size(xs[2 + i], w.sizes[2 + i], stride[i], pad[i], dil[i],
                                      transposed, op[i]);
        if (o <= 0) c.fail("input " + shape_str(x.sizes) + " is smaller than the kernel");
        out.push_back(o);
      }
      if (unbatched) out.erase(out.begin());
      need_floating(c, x, "input");
      same_dtype(c, x, w, "input", "weight");
      conv_bias(c, c_out);
      return TensorMeta::contiguous(out, x.dtype, x.device);
    });
  };
  conv_entry("conv1d", 1, false);
  conv_entry("conv2d", 2, false);
  conv_entry("conv3d", 3, false);
  conv_entry("conv_transpose1d", 1, true);
  conv_entry("conv_transpose2d.input", 2, true);
  conv_entry("conv_transpose3d.input", 3, true);
  // conv1d/2d/3d.padding: padding="valid" (none) or "same" (stride 1; the output has the
  // input's size, an odd total padding puts the extra element on the right, as torch does).
  for (int sp = 1; sp <= 3; ++sp) {
    std::string n = std::to_string(sp), T = "int[" + n + "]";
    std::string L = sp == 1 ? "[1]" : "1";
    r.add("conv" + n + "d.padding(Tensor input, Tensor weight, Tensor? bias=None, " + T +
              " stride=" + L + ", str padding=\"valid\", " + T + " dilation=" + L +
              ", int groups=1) -> Tensor",
          K, P::None, [sp](const CallArgs& c) {
            const TensorMeta& x = c.tensor("input");
            const TensorMeta& w = c.tensor("weight");
            std::string mode = c.get("padding").str();
            if (mode != "valid" && mode != "same")
              c.fail("padding must be 'valid' or 'same', got '" + mode + "'");
            size_t usp = static_cast<size_t>(sp);
            nn::Ints stride = nn::expand_list(c.get("stride"), usp, "stride", c.where(), 1);
            nn::Ints dil = nn::expand_list(c.get("dilation"), usp, "dilation", c.where(), 1);
            if (x.dim() != sp + 1 && x.dim() != sp + 2)
              c.fail("input must be " + std::to_string(sp + 1) + "-D or " + std::to_string(sp + 2) +
                     "-D, got " + shape_str(x.sizes));
            if (w.dim() != sp + 2) c.fail("weight must be " + std::to_string(sp + 2) + "-D");
            need_floating(c, x, "input");
            same_dtype(c, x, w, "input", "weight");
            int64_t g = c.get("groups").to_int();
            bool unbatched = x.dim() == sp + 1;
            Shape xs = x.sizes;
            if (unbatched) xs.insert(xs.begin(), 1);
            if (g < 1 || xs[1] != w.sizes[1] * g)
              c.fail("input " + shape_str(x.sizes) + " and weight " + shape_str(w.sizes) +
                     " disagree on the input channels (groups " + std::to_string(g) + ")");
            Shape out{xs[0], w.sizes[0]};
            for (size_t i = 0; i < usp; ++i) {
              if (mode == "same") {
                if (stride[i] != 1) c.fail("padding='same' is not supported for strided convolutions");
                out.push_back(xs[2 + i]);
              } else {
                int64_t o = nn::conv_out_size(xs[2 + i], w.sizes[2 + i], stride[i], 0, dil[i], false, 0);
                if (o <= 0) c.fail("input " + shape_str(x.sizes) + " is smaller than the kernel");
                out.push_back(o);
              }
            }
            if (unbatched) out.erase(out.begin());
            conv_bias(c, w.sizes[0]);
            return TensorMeta::contiguous(out, x.dtype, x.device);
          });
  }

  r.add(
      "batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, "
      "Tensor? running_var, bool training, float momentum, float eps, bool cudnn_enabled) -> Tensor",
      K, P::None, batch_norm_rule);
  r.add(
      "group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, "
      "float eps=1e-05, bool cudnn_enabled=True) -> Tensor",
      K, P::None, group_norm_rule);

  r.add(
      "embedding(Tensor weight, Tensor indices, int padding_idx=-1, bool scale_grad_by_freq=False, "
      "bool sparse=False) -> Tensor",
      K, P::None, embedding_rule);
  r.add(
      "embedding_dense_backward(Tensor grad_output, Tensor indices, SymInt num_weights, "
      "int padding_idx, bool scale_grad_by_freq) -> Tensor",
      K, P::None, embedding_dense_backward_rule);

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
    r.add("adaptive_avg_pool" + n + "d(Tensor self, " + (sp == 2 ? "SymInt[2]" : "int[" + n + "]") +
              " output_size) -> Tensor",
          K, P::None, adaptive_pool_rule(static_cast<size_t>(sp)));
  }

  r.add("constant_pad_nd(Tensor self, int[] pad, Scalar value=0) -> Tensor", K, P::None,
        constant_pad_rule);
  r.add("reflection_pad1d(Tensor self, int[2] padding) -> Tensor", K, P::None, index_pad_rule(1, true));
  r.add("reflection_pad2d(Tensor self, int[4] padding) -> Tensor", K, P::None, index_pad_rule(2, true));
  r.add("replication_pad1d(Tensor self, int[2] padding) -> Tensor", K, P::None, index_pad_rule(1, false));
  r.add("replication_pad2d(Tensor self, int[4] padding) -> Tensor", K, P::None, index_pad_rule(2, false));

  r.add("upsample_nearest2d(Tensor self, SymInt[2] output_size, float? scales_h=None, "
        "float? scales_w=None) -> Tensor",
        K, P::None, upsample2d_rule);
  r.add("upsample_bilinear2d(Tensor self, SymInt[2] output_size, bool align_corners, "
        "float? scales_h=None, float? scales_w=None) -> Tensor",
        K, P::None, upsample2d_rule);

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
        K, P::None, sdpa_rule);
}

}  // namespace stax
