#include "core/ops/nn/attention_fusion.h"

#include <cmath>

#include "core/graph/graph.h"
#include "core/ops/nn/attention_pattern.h"

namespace stax {

namespace {

constexpr const char* kSdpa = "scaled_dot_product_attention.default";

int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// Why `n` (a sdpa call) cannot run fused, or "" when it can; `dropout`: the backend offers the
// dropout externs.
std::string not_fusable(const Node& n, bool dropout) {
  const Node* q = n.arg("query").node();
  const Node* k = n.arg("key").node();
  if (q->dtype() != DType::Float32 && q->dtype() != DType::Float64)
    return "the fused kernel takes float32 / float64, not " + std::string(dtype_name(q->dtype()));
  int64_t r = q->meta().dim();
  if (n.arg("enable_gqa").to_bool() && r >= 3 && k->shape()[r - 3] != q->shape()[r - 3])
    return "grouped-query attention (fewer key heads than query heads)";
  if (n.arg("dropout_p").to_double() != 0.0 && !dropout)
    return "dropout_p > 0, and the backend offers no flash_attention_dropout extern";
  return "";
}

// x expanded to batch + [a, b] (x itself when it has that shape).
Node* expand_to(Graph& g, Node* x, const Shape& batch, int64_t a, int64_t b) {
  Shape s = batch;
  s.push_back(a);
  s.push_back(b);
  return x->shape() == s ? x : g.call("expand", {x, Arg(s)});
}

// Replaces sdpa call n by the fused op's output slice.
void fuse(Graph& g, Node* n) {
  Node* q = n->arg("query").node();
  Node* k = n->arg("key").node();
  Node* v = n->arg("value").node();
  const Arg& mask = n->arg("attn_mask");
  const Shape out_shape = n->shape();  // batch + [L, Ev]
  const size_t r = out_shape.size();
  const Shape batch(out_shape.begin(), out_shape.end() - 2);
  const int64_t L = q->shape()[r - 2], E = q->shape()[r - 1], S = k->shape()[r - 2];
  const int64_t Ev = v->shape()[r - 1];
  const double scale = n->arg("scale").is_absent() ? 1.0 / std::sqrt(static_cast<double>(E))
                                                   : n->arg("scale").to_double();
  g.set_insert_point(n);
  Node* qe = expand_to(g, q, batch, L, E);
  Node* ke = expand_to(g, k, batch, S, E);
  Node* ve = expand_to(g, v, batch, S, Ev);
  Arg m = mask.is_node() ? Arg(expand_to(g, mask.node(), batch, L, S)) : Arg();
  // dropout_p > 0: the mask of sdpa's decomposition (its dropout node, keyed by decompose() with
  // n's rng_seed attr or name: keep when u > p, kept values times 1 / (1 - p)), drawn in the kernel
  // from the seed that key gives in this run.
  const double drop = n->arg("dropout_p").to_double();
  Arg seed;
  Kwargs kw{{"scale", Arg(scale)}};
  if (drop != 0.0) {
    Node* sd = g.call("_stax_rng_seed", {});
    auto it = n->attrs.find("rng_seed");
    sd->attrs["rng_seed"] = it != n->attrs.end() ? it->second : Arg(n->name());
    seed = Arg(sd);
    kw.emplace_back("dropout_threshold", Arg(drop));
    kw.emplace_back("dropout_keep_above", Arg(true));
    kw.emplace_back("dropout_scale", Arg(1.0 / (1.0 - drop)));
  }
  Node* packed =
      g.call("_stax_flash_attention", {qe, ke, ve, m, n->arg("is_causal"), seed}, std::move(kw));
  Node* flat = g.call("slice.Tensor", {packed, int64_t{0}, int64_t{0}, numel_of(out_shape)});
  Node* out = g.call("reshape", {flat, Arg(out_shape)});
  g.set_insert_point(nullptr);
  g.replace_all_uses(n, out);
  g.erase(n);
}

}  // namespace

std::string AttentionFusion::str() const {
  if (notes.empty()) return "";
  std::string out = "attention:\n";
  for (const std::string& s : notes) out += "  " + s + "\n";
  return out;
}

const std::vector<std::string>& fused_attention_externs() {
  static const std::vector<std::string> names = {"flash_attention", "flash_attention_backward"};
  return names;
}

const std::vector<std::string>& fused_attention_dropout_externs() {
  static const std::vector<std::string> names = {"flash_attention_dropout",
                                                 "flash_attention_dropout_backward"};
  return names;
}

AttentionFusion fuse_attention(Graph& g, bool dropout) {
  AttentionFusion report;
  std::vector<Node*> found;
  for (Node* n : g.nodes()) {
    if (!n->is_call()) continue;
    if (n->target() == kSdpa) found.push_back(n);
    if (n->target() == "_stax_flash_attention.default")  // CompiledFunction fused it already
      report.notes.push_back("%" + n->name() + ": fused before the joint graph: flash_attention");
    if (n->target() == "_stax_flash_attention_backward.default")
      report.notes.push_back("%" + n->name() + ": the flash backward: flash_attention_backward");
  }
  for (Node* n : found) {
    std::string name = "%" + n->name();
    std::string why = not_fusable(*n, dropout);
    if (!why.empty()) {
      report.notes.push_back(name + ": not fused: " + why + " (decomposed: matmul, softmax, matmul)");
      continue;
    }
    const bool drops = n->arg("dropout_p").to_double() != 0.0;
    fuse(g, n);
    ++report.fused;
    report.notes.push_back(
        name + (drops ? ": fused (dropout_p > 0): one flash_attention_dropout extern (online "
                        "softmax, the mask drawn in the kernel); its gradient is "
                        "flash_attention_dropout_backward"
                      : ": fused: one flash_attention extern (online softmax, no L x S scores in "
                        "memory); its gradient is flash_attention_backward"));
  }
  fuse_decomposed_attention(g, report, dropout);  // the matmul-softmax-matmul form of traces
  return report;
}

}  // namespace stax
