// The fused attention ops (issue 27 item 3, docs/attention.md): what fuse_attention()
// (attention_fusion.h) puts in place of scaled_dot_product_attention when the backend offers the
// extern kernels "flash_attention" and "flash_attention_backward".
//
//   _stax_flash_attention(q, k, v, attn_mask?, is_causal, scale) -> packed
//       q [batch..., L, E], k [batch..., S, E], v [batch..., S, Ev], attn_mask [batch..., L, S]
//       (bool, or additive in q's dtype), one batch shape for all (the pass expands them);
//       packed: 1-D [N·L·Ev + N·L] (N = numel(batch)): the output, row-major, then the
//       log-sum-exp of each row's scores. One buffer, so one extern writes both (an extern has
//       one output); the output and lse are its slices.
//   _stax_flash_attention_backward(grad, q, k, v, attn_mask?, packed, is_causal, scale) -> packed
//       grad: the gradient of `packed` (of the output and of the lse); result 1-D
//       [N·L·E + N·S·E + N·S·Ev]: dq, dk, dv, each row-major.
//
// Both are Extern ops (lowered to ExternKernels); the interpreter runs the SDK's kernel
// (stax/sdk/flash_attention.hpp) on one thread, which is what cpu_cpp runs on its pool, so
// compiled and interpreted fused attention agree bit for bit. The forward's VJP is the backward
// op (from the saved packed output: the probabilities are recomputed from the lse, never saved);
// an additive mask that needs a gradient gets dS = P ∘ (dO·Vᵀ − D) from the saved lse in plain
// ops (that gradient is an L × S tensor anyway). float32 and float64 only.
//
// Dropout of the probabilities (the matcher's softmax -> dropout -> P·V, docs/attention.md): both
// ops take `dropout_seed`, a 0-d int64 tensor holding the Philox seed of the unfused form's
// random op (_stax_rng_seed gives it at run time), and the scalars dropout_threshold,
// dropout_keep_above (keep when u > threshold, else when u < threshold) and dropout_scale; the
// kernel draws element (n, i, j)'s uniform number as rand_like of the [N, L, S] probabilities does
// (stax/sdk/flash_attention.hpp, DROPOUT), in the forward and again, per block, in the backward.
// They lower to the externs "flash_attention_dropout" and "flash_attention_dropout_backward".
//
//   _stax_rng_seed() -> int64 0-d: the seed a random op with this node's rng_seed key draws from in
//       this run (KernelContext::seed()): a Random op, so every run (and every call of a torch
//       partition) gets its own, and the backward reads the forward's (saved, or recomputed with
//       the same key).
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/autodiff/jvp.h"
#include "core/autodiff/vjp.h"
#include "core/graph/op_registry.h"
#include "core/interpreter/interpreter.h"
#include "core/lowering/graph_lowering.h"
#include "core/lowering/lowering_rules.h"
#include "core/ops/registration.h"
#include "core/support/error.h"
#include "stax/sdk/flash_attention.hpp"

namespace stax {

namespace {

namespace attn = sdk::attention;

int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// The sizes the fused ops read: batch entries, L, S, E, Ev.
struct Dims {
  int64_t n, l, s, e, ev;
};

Dims dims_of(const Shape& q, const Shape& k, const Shape& v) {
  size_t r = q.size();
  Shape batch(q.begin(), q.end() - 2);
  return {numel_of(batch), q[r - 2], k[r - 2], q[r - 1], v[r - 1]};
}

// Checks q, k, v (and the mask) as the fused ops take them; returns their dims.
Dims check_operands(const CallArgs& c) {
  const TensorMeta& q = c.tensor("query");
  const TensorMeta& k = c.tensor("key");
  const TensorMeta& v = c.tensor("value");
  if (q.dtype != DType::Float32 && q.dtype != DType::Float64)
    c.fail("query must be float32 or float64, got " + std::string(dtype_name(q.dtype)));
  if (k.dtype != q.dtype || v.dtype != q.dtype) c.fail("query, key and value must share one dtype");
  size_t r = q.sizes.size();
  if (r < 2 || k.sizes.size() != r || v.sizes.size() != r)
    c.fail("query, key and value must have one rank >= 2");
  Shape qb(q.sizes.begin(), q.sizes.end() - 2), kb(k.sizes.begin(), k.sizes.end() - 2),
      vb(v.sizes.begin(), v.sizes.end() - 2);
  if (qb != kb || qb != vb) c.fail("query, key and value must have the same batch dims");
  if (q.sizes[r - 1] != k.sizes[r - 1]) c.fail("query and key differ in the embedding dim");
  if (k.sizes[r - 2] != v.sizes[r - 2]) c.fail("key and value differ in the sequence dim");
  if (c.has("attn_mask")) {
    const TensorMeta& m = c.tensor("attn_mask");
    Shape want = qb;
    want.push_back(q.sizes[r - 2]);
    want.push_back(k.sizes[r - 2]);
    if (m.sizes != want) c.fail("attn_mask must have the scores' shape " + shape_str(want));
    if (m.dtype != DType::Bool && m.dtype != q.dtype)
      c.fail("attn_mask must be bool or have the query's dtype");
  }
  return dims_of(q.sizes, k.sizes, v.sizes);
}

void check_dropout(const CallArgs& c) {
  if (!c.has("dropout_seed")) return;
  const TensorMeta& t = c.tensor("dropout_seed");
  if (t.dtype != DType::Int64 || !t.sizes.empty())
    c.fail("dropout_seed must be a 0-d int64 tensor, got " + std::string(dtype_name(t.dtype)) +
           shape_str(t.sizes));
  double sc = c.get("dropout_scale").to_double();
  if (!(sc > 0) || !std::isfinite(sc)) c.fail("dropout_scale must be positive and finite");
}

TensorMeta forward_rule(const CallArgs& c) {
  Dims d = check_operands(c);
  check_dropout(c);
  const TensorMeta& q = c.tensor("query");
  return TensorMeta::contiguous({d.n * d.l * d.ev + d.n * d.l}, q.dtype, q.device);
}

TensorMeta backward_rule(const CallArgs& c) {
  Dims d = check_operands(c);
  check_dropout(c);
  const TensorMeta& q = c.tensor("query");
  int64_t packed = d.n * d.l * d.ev + d.n * d.l;
  for (const char* p : {"grad", "packed"}) {
    const TensorMeta& t = c.tensor(p);
    if (t.sizes != Shape{packed} || t.dtype != q.dtype)
      c.fail(std::string(p) + " must be the forward's packed output: " + std::string(dtype_name(q.dtype)) +
             shape_str(Shape{packed}));
  }
  return TensorMeta::contiguous({d.n * d.l * d.e + d.n * d.s * d.e + d.n * d.s * d.ev}, q.dtype,
                                q.device);
}

// ---- the kernel on strided tensors (the interpreter's; cpu_cpp has its own adapter) ---------

template <class T>
attn::Operand<T> operand(const Tensor& t, std::vector<int64_t>& offsets) {
  offsets = attn::batch_offsets(t.sizes(), t.strides(), 0);
  return {reinterpret_cast<const T*>(t.data_ptr()), offsets.data(), t.stride(-2), t.stride(-1)};
}

// Offsets that must outlive the problem.
struct OffsetStore {
  std::vector<int64_t> q, k, v, m;
};

template <class T>
void fill_problem(attn::Problem<T>& p, const Tensor& q, const Tensor& k, const Tensor& v,
                  const Tensor* mask, bool causal, double scale, OffsetStore& o) {
  Dims d = dims_of(q.sizes(), k.sizes(), v.sizes());
  p.batch = d.n, p.l = d.l, p.s = d.s, p.e = d.e, p.ev = d.ev;
  p.q = operand<T>(q, o.q);
  p.k = operand<T>(k, o.k);
  p.v = operand<T>(v, o.v);
  if (mask && mask->dtype() == DType::Bool) {
    o.m = attn::batch_offsets(mask->sizes(), mask->strides(), 0);
    p.mask_bool = {reinterpret_cast<const uint8_t*>(mask->data_ptr()), o.m.data(), mask->stride(-2),
                   mask->stride(-1)};
  } else if (mask) {
    p.mask_add = operand<T>(*mask, o.m);
  }
  p.causal = causal;
  p.scale = static_cast<T>(scale);
}

const Tensor* mask_of(const KernelContext& ctx) {
  return ctx.arg("attn_mask").is_node() ? &ctx.tensor("attn_mask") : nullptr;
}

template <class T>
void fill_dropout(attn::Problem<T>& p, const KernelContext& ctx) {
  if (!ctx.arg("dropout_seed").is_node()) return;
  p.dropout = true;
  p.drop_seed = static_cast<uint64_t>(ctx.tensor("dropout_seed").get_int(0));
  p.drop_threshold = static_cast<T>(ctx.arg("dropout_threshold").to_double());
  p.drop_keep_above = ctx.arg("dropout_keep_above").to_bool();
  p.drop_scale = static_cast<T>(ctx.arg("dropout_scale").to_double());
}

Tensor rng_seed_kernel(const KernelContext& ctx) {
  Tensor t = Tensor::empty({}, DType::Int64);
  t.set_int(0, static_cast<int64_t>(ctx.seed()));
  return t;
}

Tensor forward_kernel(const KernelContext& ctx) {
  const Tensor &q = ctx.tensor("query"), &k = ctx.tensor("key"), &v = ctx.tensor("value");
  Tensor out = Tensor::empty(ctx.out_meta().sizes, ctx.out_meta().dtype);
  auto run = [&](auto zero) {
    using T = decltype(zero);
    attn::Forward<T> p;
    OffsetStore o;
    fill_problem<T>(p, q, k, v, mask_of(ctx), ctx.arg("is_causal").to_bool(),
                    ctx.arg("scale").to_double(), o);
    fill_dropout<T>(p, ctx);
    p.out = reinterpret_cast<T*>(out.data_ptr());
    p.lse = p.out + p.batch * p.l * p.ev;
    attn::forward(p);
  };
  if (q.dtype() == DType::Float64)
    run(double{});
  else
    run(float{});
  return out;
}

Tensor backward_kernel(const KernelContext& ctx) {
  const Tensor &q = ctx.tensor("query"), &k = ctx.tensor("key"), &v = ctx.tensor("value");
  Tensor packed = ctx.tensor("packed").contiguous(), grad = ctx.tensor("grad").contiguous();
  Tensor out = Tensor::empty(ctx.out_meta().sizes, ctx.out_meta().dtype);
  auto run = [&](auto zero) {
    using T = decltype(zero);
    attn::Backward<T> p;
    OffsetStore o;
    fill_problem<T>(p, q, k, v, mask_of(ctx), ctx.arg("is_causal").to_bool(),
                    ctx.arg("scale").to_double(), o);
    fill_dropout<T>(p, ctx);
    const int64_t rows = p.batch * p.l;
    p.out = reinterpret_cast<const T*>(packed.data_ptr());
    p.lse = p.out + rows * p.ev;
    p.dout = reinterpret_cast<const T*>(grad.data_ptr());
    p.dlse = p.dout + rows * p.ev;
    p.dq = reinterpret_cast<T*>(out.data_ptr());
    p.dk = p.dq + rows * p.e;
    p.dv = p.dk + p.batch * p.s * p.e;
    attn::backward(p);
  };
  if (q.dtype() == DType::Float64)
    run(double{});
  else
    run(float{});
  return out;
}

// ---- VJP: the backward op, from the saved packed output ------------------------------------

// Elements [begin, begin + numel(shape)) of a 1-D tensor as a tensor of `shape`.
Node* part(const Emitter& c, Node* flat, int64_t begin, const Shape& shape) {
  Node* s = c.call("slice.Tensor", {flat, int64_t{0}, begin, begin + numel_of(shape)});
  return c.call("reshape", {s, Arg(shape)});
}

// The gradient of the scores (an additive mask's gradient, L × S), from the saved output and
// lse: dS = P ∘ (dO·Vᵀ − D), P = exp(s − lse), D = rowsum(dO ∘ O) − dlse.
Node* scores_grad(VjpContext& c, const Dims& d) {
  Node* q = c.in("query");
  Node* k = c.in("key");
  Node* v = c.in("value");
  Shape batch(q->shape().begin(), q->shape().end() - 2), rows = batch, outs = q->shape();
  rows.push_back(d.l);
  outs.back() = d.ev;
  const int64_t n_out = d.n * d.l * d.ev;
  Node* s = c.mul(c.call("matmul", {q, c.mT(k)}), c.arg("scale"));
  if (c.arg("is_causal").to_bool()) {
    Node* i = c.call("unsqueeze", {c.call("arange", {d.l}, {{"dtype", Arg(DType::Int64)}}), int64_t{1}});
    Node* j = c.call("arange", {d.s}, {{"dtype", Arg(DType::Int64)}});
    s = c.call("where.ScalarOther", {c.call("le.Tensor", {j, i}), s,
                                     -std::numeric_limits<double>::infinity()});
  }
  s = c.add(s, c.in("attn_mask"));
  Node* lse = c.call("unsqueeze", {part(c, c.out(), n_out, rows), int64_t{-1}});
  Node* p = c.call("exp", {c.sub(s, lse)});
  Node* gout = part(c, c.grad(), 0, outs);
  Node* glse = c.call("unsqueeze", {part(c, c.grad(), n_out, rows), int64_t{-1}});
  Node* o = part(c, c.out(), 0, outs);
  Node* rowsum = c.call("sum.dim_IntList", {c.mul(gout, o), Arg(std::vector<int64_t>{-1}), true});
  Node* dp = c.call("matmul", {gout, c.mT(v)});
  return c.mul(p, c.sub(dp, c.sub(rowsum, glse)));
}

void forward_vjp(VjpContext& c) {
  Node* q = c.in("query");
  Node* k = c.in("key");
  Node* v = c.in("value");
  Node* mask = c.in("attn_mask");
  Node* seed = c.in("dropout_seed");
  const bool need_mask = mask && mask->dtype() != DType::Bool && c.needs(mask);
  if (!c.needs(q) && !c.needs(k) && !c.needs(v) && !need_mask) return;
  if (need_mask && seed)
    throw Error("autodiff", "%" + c.node()->name(),
                "the gradient of an additive attention mask under fused dropout is not implemented");
  const Arg& causal = c.arg("is_causal");
  const Arg& scale = c.arg("scale");
  Arg mask_arg = mask ? Arg(mask) : Arg();
  Kwargs kw{{"scale", scale}};
  if (seed) {
    for (const char* a : {"dropout_threshold", "dropout_keep_above", "dropout_scale"})
      kw.emplace_back(a, c.arg(a));
  }
  Node* grads = c.call("_stax_flash_attention_backward",
                       {c.grad(), q, k, v, mask_arg, c.out(), causal, seed ? Arg(seed) : Arg()}, kw);
  Dims d = dims_of(q->shape(), k->shape(), v->shape());
  c.give(q, part(c, grads, 0, q->shape()));
  c.give(k, part(c, grads, d.n * d.l * d.e, k->shape()));
  c.give(v, part(c, grads, d.n * d.l * d.e + d.n * d.s * d.e, v->shape()));
  if (need_mask) c.give(mask, scores_grad(c, d));
}

// ---- JVP: the tangent of packed (out, then lse) from the saved lse --------------------------
// ṡ = scale·(q̇·kᵀ + q·k̇ᵀ) + ṁ, P = exp(s − lse), l̇se = rowsum(P ∘ ṡ),
// ȯ = (P ∘ (ṡ − l̇se))·v + P·v̇ (an L × S tensor: forward mode is not the fused path).

Node* forward_jvp(JvpContext& c) {
  Node* q = c.in("query");
  Node* k = c.in("key");
  Node* v = c.in("value");
  Node* mask = c.in("attn_mask");
  Node *dq = c.tangent(q), *dk = c.tangent(k), *dv = c.tangent(v);
  Node* dm = mask && mask->dtype() != DType::Bool ? c.tangent(mask) : nullptr;
  if (!dq && !dk && !dv && !dm) return nullptr;
  if (c.in("dropout_seed"))
    throw Error("autodiff", "%" + c.node()->name(),
                "forward-mode derivatives of fused attention with dropout are not implemented");
  Dims d = dims_of(q->shape(), k->shape(), v->shape());
  Shape rows(q->shape().begin(), q->shape().end() - 1), outs = q->shape();
  outs.back() = d.ev;
  const int64_t n_out = d.n * d.l * d.ev;
  const Arg& scale = c.arg("scale");
  Node* s = c.mul(c.call("matmul", {q, c.mT(k)}), scale);
  if (c.arg("is_causal").to_bool()) {
    Node* i = c.call("unsqueeze", {c.call("arange", {d.l}, {{"dtype", Arg(DType::Int64)}}), int64_t{1}});
    Node* j = c.call("arange", {d.s}, {{"dtype", Arg(DType::Int64)}});
    s = c.call("where.ScalarOther", {c.call("le.Tensor", {j, i}), s,
                                     -std::numeric_limits<double>::infinity()});
  }
  if (mask) {
    s = mask->dtype() == DType::Bool
            ? c.call("where.ScalarOther", {mask, s, -std::numeric_limits<double>::infinity()})
            : c.add(s, mask);
  }
  Node* lse = c.call("unsqueeze", {part(c, c.out(), n_out, rows), int64_t{-1}});
  Node* p = c.call("exp", {c.sub(s, lse)});
  Node* ds = nullptr;
  auto acc = [&](Node* t) { ds = ds ? c.add(ds, t) : t; };
  if (dq) acc(c.mul(c.call("matmul", {dq, c.mT(k)}), scale));
  if (dk) acc(c.mul(c.call("matmul", {q, c.mT(dk)}), scale));
  if (dm) acc(dm);
  Node* dout = nullptr;
  Node* dlse = nullptr;
  if (ds) {
    ds = c.mul(p, ds);
    dlse = c.call("sum.dim_IntList", {ds, Arg(std::vector<int64_t>{-1}), true});
    dout = c.call("matmul", {c.sub(ds, c.mul(p, dlse)), v});
  }
  if (dv) {
    Node* t = c.call("matmul", {p, dv});
    dout = dout ? c.add(dout, t) : t;
  }
  Node* flat_out = c.reshape(dout, Shape{n_out});
  Node* flat_lse = dlse ? c.reshape(dlse, Shape{d.n * d.l}) : c.zeros(Shape{d.n * d.l}, q->dtype());
  return c.call("cat", {Arg(std::vector<Node*>{flat_out, flat_lse})});
}

// ---- lowering: ExternKernels ----------------------------------------------------------------

// With a dropout_seed the extern is `kernel` with "_dropout" after "flash_attention": inputs
// ..., dropout_seed last; scalars is_causal, scale, dropout_threshold, dropout_keep_above,
// dropout_scale.
LoweringRule extern_rule(std::string kernel, std::vector<std::string> params) {
  return [kernel, params](GraphLowering& g, const Node& n) -> IRPtr {
    std::vector<IRPtr> values;
    std::vector<KernelInput> inputs;
    const bool dropout = n.arg("dropout_seed").is_node();
    std::vector<std::string> all = params;
    if (dropout) all.push_back("dropout_seed");
    for (const std::string& p : all) {
      if (!n.arg(p).is_node()) continue;  // an absent attn_mask
      values.push_back(g.input(n, p));
      inputs.push_back(g.realize_input(values.back()));
    }
    std::vector<double> scalars{n.arg("is_causal").to_bool() ? 1.0 : 0.0,
                                n.arg("scale").to_double()};
    std::string name = kernel;
    if (dropout) {
      name.insert(std::string("flash_attention").size(), "_dropout");
      scalars.push_back(n.arg("dropout_threshold").to_double());
      scalars.push_back(n.arg("dropout_keep_above").to_bool() ? 1.0 : 0.0);
      scalars.push_back(n.arg("dropout_scale").to_double());
    }
    const TensorMeta& m = n.meta();
    auto k = std::make_shared<ExternKernel>(g.new_buffer_name(),
                                            Layout::fixed_contiguous(m.device, m.dtype, m.sizes),
                                            name, std::move(inputs), std::move(scalars), &n);
    k->add_origins(g.origins_for(values));
    g.register_buffer(k);
    return std::make_shared<StorageBox>(k);
  };
}

}  // namespace

void register_flash_attention_ops(OpRegistry& r) {
  const auto E = OpCategory::Extern;
  r.add("_stax_flash_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, "
        "bool is_causal=False, Tensor? dropout_seed=None, *, float scale=1.0, "
        "float dropout_threshold=0.0, bool dropout_keep_above=True, float dropout_scale=1.0) -> Tensor",
        E, Promotion::None, forward_rule);
  OpDef& b = r.add("_stax_flash_attention_backward(Tensor grad, Tensor query, Tensor key, "
                   "Tensor value, Tensor? attn_mask, Tensor packed, bool is_causal=False, "
                   "Tensor? dropout_seed=None, *, float scale=1.0, float dropout_threshold=0.0, "
                   "bool dropout_keep_above=True, float dropout_scale=1.0) -> Tensor",
                   E, Promotion::None, backward_rule);
  b.differentiable = false;
  OpDef& seed = r.add("_stax_rng_seed() -> Tensor", OpCategory::Random, Promotion::None,
                      [](const CallArgs&) { return TensorMeta::contiguous({}, DType::Int64); });
  seed.differentiable = false;
}

void register_flash_attention_kernels(InterpreterTable& t) {
  t.add("_stax_flash_attention.default", forward_kernel);
  t.add("_stax_flash_attention_backward.default", backward_kernel);
  t.add("_stax_rng_seed.default", rng_seed_kernel);
}

void register_flash_attention_vjps(VjpTable& t) {
  t.add("_stax_flash_attention.default", forward_vjp);
}

void register_flash_attention_jvps(JvpTable& t) {
  t.add("_stax_flash_attention.default", forward_jvp);
}

void register_flash_attention_rules(LoweringTable& t) {
  t.add("_stax_flash_attention.default",
        extern_rule("flash_attention", {"query", "key", "value", "attn_mask"}), true);
  t.add("_stax_flash_attention_backward.default",
        extern_rule("flash_attention_backward",
                    {"grad", "query", "key", "value", "attn_mask", "packed"}),
        true);
}

}  // namespace stax
