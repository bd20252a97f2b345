// The internal forms of scaled_dot_product_attention that real traces carry (issue 29 item 5):
// what F.scaled_dot_product_attention records without decompositions on the CPU (flash for CPU)
// and on CUDA (memory-efficient), and the backward ops AOTAutograd emits for them. They are
// tuple-valued nodes (docs/DECISIONS.md item 20) whose output element is a call of
// scaled_dot_product_attention itself, so they are lowered exactly like sdpa (and get whatever
// fused attention kernel sdpa gets): there is no second attention here.
//   _scaled_dot_product_flash_attention_for_cpu     (output, logsumexp (B, H, L))
//   _scaled_dot_product_efficient_attention         (output, log_sumexp (B, H, ceil(L / 32) * 32)
//                                                    or (B, H, 0), philox_seed, philox_offset)
//   *_backward                                      sdpa's VJP rule (q, k, v and the bias)
// logsumexp is that of the scaled, masked scores over the key dim, in the computation dtype
// (float32 for float16 / bfloat16), before any dropout (torch's meaning); the efficient form's
// padding entries (rows L..) are +inf, and its philox seed and offset are 0-d int64 zeros.
// dropout_p > 0 (docs/attention.md "Dropout"): the flash form's output is sdpa's with dropout
// (Stax's Philox stream, drawn per sdpa node). The forms that would hand torch's RNG state from
// the forward to the backward cannot: the efficient form (its philox_seed / philox_offset are
// torch's CUDA generator state) and both backward forms (a separate node, which cannot redraw the
// forward form's mask) refuse dropout_p > 0 with a clear error.
// Strides are torch 2.15's (measured on its CPU kernels; the efficient forms' from its meta
// functions), because traces rely on them: GPT-2's `y.transpose(1, 2).view(B, L, H * E)` is a
// legal view only when y is laid out (B, L, H, E). The flash form's output is
// empty_like(query) (query's dim order, made dense: a query split from one (B, L, 3*H*E)
// projection gives (B, L, H, E) memory); its logsumexp is (B, L, H) memory seen as (B, H, L);
// the efficient form's output and both backward forms' gradients of q, k, v are (B, L, H, E)
// memory seen as (B, H, L, E). A layout other than row-major is a permute -> contiguous ->
// permute of the row-major value.
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/graph/multi_output.h"
#include "core/ops/nn/params.h"
#include "core/ops/common/forward_vjp.h"
#include "core/ops/registration.h"
#include "core/support/error.h"

namespace stax {

namespace {

// x with the dims in `order` (outermost first) laid out row-major, seen in x's own dim order.
Node* laid_out(Graph& g, Node* x, const std::vector<int64_t>& order) {
  std::vector<int64_t> inverse(order.size());
  bool identity = true;
  for (size_t i = 0; i < order.size(); ++i) {
    inverse[static_cast<size_t>(order[i])] = static_cast<int64_t>(i);
    identity = identity && order[i] == static_cast<int64_t>(i);
  }
  if (identity) return x;
  Node* dense = g.call("contiguous", {g.call("permute", {x, Arg(order)})});
  return g.call("permute", {dense, Arg(inverse)});
}

// (B, H, L, ...) laid out as (B, L, H, ...).
Node* heads_inner(Graph& g, Node* x) {
  std::vector<int64_t> order(static_cast<size_t>(x->meta().dim()));
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  if (order.size() >= 3) std::swap(order[1], order[2]);
  return laid_out(g, x, order);
}

// The dim order (outermost first) of torch's empty_like(t): t's dims sorted by stride (an
// insertion sort from the innermost dim, as torch's infer_dense_strides; a stride-0 dim keeps its
// place, equal strides put the smaller size inside).
std::vector<int64_t> preserved_order(const TensorMeta& t) {
  const Shape& size = t.sizes;
  const Shape& stride = t.strides;
  std::vector<int64_t> perm(size.size());  // innermost first
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(perm.size() - 1 - i);
  auto should_swap = [&](int64_t a, int64_t b) {
    if (stride[a] == 0 || stride[b] == 0) return 0;
    if (stride[a] != stride[b]) return stride[a] < stride[b] ? -1 : 1;
    return size[a] > size[b] ? 1 : 0;
  };
  for (size_t i = 1; i < perm.size(); ++i) {
    size_t d1 = i;
    for (size_t d0 = i; d0-- > 0;) {
      int c = should_swap(perm[d0], perm[d1]);
      if (c > 0) {
        std::swap(perm[d0], perm[d1]);
        d1 = d0;
      } else if (c < 0) {
        break;
      }
    }
  }
  return {perm.rbegin(), perm.rend()};
}

DType computation_type(DType t) {
  return t == DType::Float16 || t == DType::BFloat16 ? DType::Float32 : t;
}

// sdpa(q, k, v, mask, dropout_p, is_causal, scale=scale): the op every form routes to.
Node* sdpa(Graph& g, Node* q, Node* k, Node* v, const Arg& mask, const ExpandCall& c) {
  return g.call("scaled_dot_product_attention",
                {q, k, v, mask, c.get("dropout_p"), c.get("is_causal")},
                {{"scale", c.get("scale")}});
}

// logsumexp over the key dim of the scores sdpa's softmax reads: (..., L).
Node* scores_logsumexp(Graph& g, Node* q, Node* k, const Arg& mask, const ExpandCall& c) {
  DType ct = computation_type(q->dtype());
  if (ct != q->dtype()) {
    q = g.call("to.dtype", {q, ct});
    k = g.call("to.dtype", {k, ct});
  }
  int64_t r = q->meta().dim();
  if (r < 2 || k->meta().dim() != r) c.fail("query and key must have one rank >= 2");
  int64_t E = q->shape()[r - 1], L = q->shape()[r - 2], S = k->shape()[r - 2];
  double scale = c.get("scale").is_absent() ? 1.0 / std::sqrt(static_cast<double>(E))
                                            : c.get("scale").to_double();
  Node* scores = g.call("mul.Scalar", {g.call("matmul", {q, g.call("transpose.int", {k, -2, -1})}),
                                       scale});
  double ninf = -std::numeric_limits<double>::infinity();
  if (c.get("is_causal").to_bool()) {
    Node* i = g.call("unsqueeze", {g.call("arange", {L}, {{"dtype", Arg(DType::Int64)}}), 1});
    Node* j = g.call("arange", {S}, {{"dtype", Arg(DType::Int64)}});
    scores = g.call("where.ScalarOther", {g.call("le.Tensor", {j, i}), scores, ninf});
  }
  if (!mask.is_absent()) {
    Node* m = mask.node();
    scores = m->dtype() == DType::Bool
                 ? g.call("where.ScalarOther", {m, scores, ninf})
                 : g.call("add.Tensor", {scores, m->dtype() == ct ? m : g.call("to.dtype", {m, ct})});
  }
  return g.call("logsumexp", {scores, Arg(std::vector<int64_t>{-1})});
}

std::vector<Node*> flash_for_cpu(Graph& g, const ExpandCall& c) {
  Node* q = c.tensor("query");
  Node* k = c.tensor("key");
  Node* v = c.tensor("value");
  if (q->meta().dim() != 4) c.fail("query must be 4-D (batch, heads, length, dim)");
  const Arg& mask = c.get("attn_mask");
  return {laid_out(g, sdpa(g, q, k, v, mask, c), preserved_order(q->meta())),
          heads_inner(g, scores_logsumexp(g, q, k, mask, c))};
}

// The forms that cannot take dropout_p > 0 (see the top of the file).
void refuse_dropout(const ExpandCall& c, const char* why) {
  const double drop = c.get("dropout_p").to_double();
  if (drop != 0.0)
    c.fail("dropout_p = " + std::to_string(drop) + " is not supported here: " + why +
           "; scaled_dot_product_attention (or the flash form) takes dropout_p > 0, and its "
           "gradient comes from differentiating the forward graph");
}

std::vector<Node*> efficient(Graph& g, const ExpandCall& c) {
  refuse_dropout(c, "the philox_seed / philox_offset outputs are torch's CUDA generator state, "
                    "which Stax (its own Philox stream per node) does not produce");
  Node* q = c.tensor("query");
  Node* k = c.tensor("key");
  Node* v = c.tensor("value");
  if (q->meta().dim() != 4) c.fail("query must be 4-D (batch, heads, length, dim)");
  const Arg& bias = c.get("attn_bias");
  Node* out = heads_inner(g, sdpa(g, q, k, v, bias, c));
  Node* lse;
  int64_t B = q->shape()[0], H = q->shape()[1], L = q->shape()[2];
  if (c.get("compute_log_sumexp").to_bool()) {
    lse = g.call("to.dtype", {scores_logsumexp(g, q, k, bias, c), DType::Float32});
    int64_t padded = (L + 31) / 32 * 32;
    if (padded != L)
      lse = g.call("constant_pad_nd", {lse, Arg(std::vector<int64_t>{0, padded - L}),
                                       std::numeric_limits<double>::infinity()});
  } else {
    lse = g.call("zeros", {Arg(Shape{B, H, 0})}, {{"dtype", Arg(DType::Float32)}});
  }
  Node* seed = g.call("zeros", {Arg(Shape{})}, {{"dtype", Arg(DType::Int64)}});
  Node* offset = g.call("zeros", {Arg(Shape{})}, {{"dtype", Arg(DType::Int64)}});
  return {out, lse, seed, offset};
}

// The gradients of q, k, v (and of the bias when `bias_param` names one) through sdpa's VJP.
std::vector<Node*> backward(Graph& g, const ExpandCall& c, const char* grad_param,
                            const char* mask_param, std::vector<bool> wanted) {
  refuse_dropout(c, "a backward form cannot redraw the dropout mask of its forward form");
  Node* q = c.tensor("query");
  Node* k = c.tensor("key");
  Node* v = c.tensor("value");
  const Arg& mask = c.get(mask_param);
  Node* bias = mask.is_absent() ? nullptr : mask.node();
  std::vector<Node*> wrt{q, k, v};
  if (wanted.size() > 3 && wanted[3] && bias) wrt.push_back(bias);
  std::vector<Node*> gs = gradients_by_vjp(
      g, "scaled_dot_product_attention", {q, k, v, mask, c.get("dropout_p"), c.get("is_causal")},
      {{"scale", c.get("scale")}}, c.tensor(grad_param), wrt);
  std::vector<Node*> out;
  for (size_t i = 0; i < wanted.size(); ++i) {
    if (!wanted[i] || i >= wrt.size()) {  // torch's None: an empty tensor FX never reads
      out.push_back(g.call("zeros", {Arg(Shape{0})}, {{"dtype", Arg(q->dtype())}}));
    } else {
      Node* grad = or_zeros(g, gs[i], wrt[i]);
      out.push_back(i < 3 ? heads_inner(g, grad) : grad);  // q, k, v: torch's layout
    }
  }
  return out;
}

std::vector<Node*> flash_for_cpu_backward(Graph& g, const ExpandCall& c) {
  // torch's meta lays the gradients out (batch, length, heads, dim): 4-D tensors only.
  for (const char* p : {"query", "key", "value"})
    if (c.tensor(p)->meta().dim() != 4)
      c.fail(std::string(p) + " must be 4-D (batch, heads, length, dim), got " +
             shape_str(c.tensor(p)->shape()));
  return backward(g, c, "grad_out", "attn_mask", {true, true, true});
}

std::vector<Node*> efficient_backward(Graph& g, const ExpandCall& c) {
  std::vector<bool> mask;
  for (const auto& e : c.get("grad_input_mask").list()) mask.push_back(e.to_bool());
  if (mask.size() != 4) c.fail("grad_input_mask must have 4 entries");
  return backward(g, c, "grad_out_", "attn_bias", mask);
}

struct AttentionForm {
  const char* schema;
  ExpandFn expand;
};

std::vector<AttentionForm> attention_forms() {
  return {
      {"_scaled_dot_product_flash_attention_for_cpu(Tensor query, Tensor key, Tensor value, "
       "float dropout_p=0., bool is_causal=False, *, Tensor? attn_mask=None, float? scale=None) "
       "-> (Tensor output, Tensor logsumexp)",
       flash_for_cpu},
      {"_scaled_dot_product_efficient_attention(Tensor query, Tensor key, Tensor value, Tensor? "
       "attn_bias, bool compute_log_sumexp, float dropout_p=0., bool is_causal=False, *, float? "
       "scale=None) -> (Tensor output, Tensor log_sumexp, Tensor philox_seed, Tensor "
       "philox_offset)",
       efficient},
      {"_scaled_dot_product_flash_attention_for_cpu_backward(Tensor grad_out, Tensor query, "
       "Tensor key, Tensor value, Tensor out, Tensor logsumexp, float dropout_p, bool is_causal, "
       "*, Tensor? attn_mask=None, float? scale=None) -> (Tensor grad_query, Tensor grad_key, "
       "Tensor grad_value)",
       flash_for_cpu_backward},
      {"_scaled_dot_product_efficient_attention_backward(Tensor grad_out_, Tensor query, Tensor "
       "key, Tensor value, Tensor attn_bias, Tensor out, Tensor logsumexp, Tensor philox_seed, "
       "Tensor philox_offset, float dropout_p, bool[4] grad_input_mask, bool is_causal=False, *, "
       "float? scale=None) -> (Tensor, Tensor, Tensor, Tensor)",
       efficient_backward},
  };
}

}  // namespace

void register_attention_form_ops(OpRegistry& r) {
  for (auto& op : attention_forms()) {
    OpDef& def = r.add_multi(op.schema, OpCategory::Composite,
                             infer_by_expansion(parse_schema(op.schema).name));
    def.draws_random = nn::attention_draws_random;
  }
}

void register_attention_form_expansions(ExpansionTable& t) {
  for (auto& op : attention_forms()) t.add(parse_schema(op.schema).name, op.expand);
}

}  // namespace stax
