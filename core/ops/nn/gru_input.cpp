// gru.input: what torch.export's training IR keeps of nn.GRU (issue 29 item 4; make_fx and the Core
// ATen IR unroll the cell into base ops instead, docs/core_aten.md). A tuple-valued Composite op
// expanded into the GRU cell over the time steps of every layer and direction, as torch's
// decomposition (torch._decomp's gru_cell) computes it:
//   ig = x_t W_ih^T + b_ih (one matmul for every step),  hg = h W_hh^T + b_hh
//   r = sigmoid(hg_r + ig_r),  z = sigmoid(hg_z + ig_z),  n = tanh(ig_n + hg_n * r)
//   h' = (h - n) * z + n
// The directions' outputs are concatenated on the feature dim and read by the next layer; h_n is
// stacked as (layers * directions, B, H). No dropout between layers in training (a clear error).
#include <string>
#include <vector>

#include "core/graph/multi_output.h"
#include "core/ops/registration.h"
#include "core/support/error.h"

namespace stax {

namespace {

Node* third(Graph& g, Node* a, int64_t k, int64_t H) {
  return g.call("slice.Tensor", {a, a->meta().dim() - 1, k * H, (k + 1) * H, 1});
}

std::vector<Node*> gru_input(Graph& g, const ExpandCall& c) {
  Node* x = c.tensor("input");
  Node* hx = c.tensor("hx");
  std::vector<Node*> params = c.get("params").to_node_list();
  const bool bias = c.get("has_biases").to_bool(), bidir = c.get("bidirectional").to_bool();
  const bool batch_first = c.get("batch_first").to_bool();
  const int64_t layers = c.get("num_layers").to_int(), dirs = bidir ? 2 : 1;
  const size_t per = bias ? 4 : 2;
  if (layers < 1) c.fail("num_layers must be at least 1");
  if (params.size() != static_cast<size_t>(layers * dirs) * per)
    c.fail("expected " + std::to_string(layers * dirs * static_cast<int64_t>(per)) +
           " parameters (w_ih, w_hh" + std::string(bias ? ", b_ih, b_hh" : "") +
           " per layer and direction), got " + std::to_string(params.size()));
  for (Node* w : params)
    if (!w) c.fail("params must be tensors, got None");
  if (c.get("train").to_bool() && c.get("dropout").to_double() > 0 && layers > 1)
    c.fail("dropout between GRU layers in training is not supported");
  if (x->meta().dim() != 3) c.fail("input must be 3-D, got " + shape_str(x->shape()));
  Node* seq = batch_first ? g.call("transpose.int", {x, 0, 1}) : x;  // (T, B, I)
  const int64_t T = seq->shape()[0], B = seq->shape()[1];
  if (T == 0) c.fail("input has no time steps");
  if (params[1]->meta().dim() != 2) c.fail("w_hh must be 2-D (3 * hidden_size, hidden_size)");
  const int64_t H = params[1]->shape()[1];
  if (hx->shape() != Shape{layers * dirs, B, H})
    c.fail("hx must be (layers * directions, batch, hidden_size) = " +
           shape_str(Shape{layers * dirs, B, H}) + ", got " + shape_str(hx->shape()));
  std::vector<Node*> hn;
  for (int64_t l = 0; l < layers; ++l) {
    std::vector<Node*> outs;
    for (int64_t d = 0; d < dirs; ++d) {
      const int64_t k = l * dirs + d;
      const size_t p = static_cast<size_t>(k) * per;
      Node* w_ih = params[p];
      Node* w_hh = params[p + 1];
      const int64_t I = seq->shape()[2];
      if (w_ih->shape() != Shape{3 * H, I} || w_hh->shape() != Shape{3 * H, H})
        c.fail("layer " + std::to_string(l) + ": weights must be (3 * hidden_size, input) = " +
               shape_str(Shape{3 * H, I}) + " and (3 * hidden_size, hidden_size) = " +
               shape_str(Shape{3 * H, H}) + ", got " + shape_str(w_ih->shape()) + " and " +
               shape_str(w_hh->shape()));
      Node* ig_all = g.call("matmul", {seq, g.call("t", {w_ih})});  // (T, B, 3H)
      if (bias) ig_all = g.call("add.Tensor", {ig_all, params[p + 2]});
      Node* w_hh_t = g.call("t", {w_hh});
      Node* h = g.call("select.int", {hx, 0, k});
      std::vector<Node*> hs(static_cast<size_t>(T));
      for (int64_t s = 0; s < T; ++s) {
        const int64_t t = d == 1 ? T - 1 - s : s;
        Node* ig = g.call("select.int", {ig_all, 0, t});
        Node* hg = g.call("mm", {h, w_hh_t});
        if (bias) hg = g.call("add.Tensor", {hg, params[p + 3]});
        Node* r = g.call("sigmoid", {g.call("add.Tensor", {third(g, hg, 0, H), third(g, ig, 0, H)})});
        Node* z = g.call("sigmoid", {g.call("add.Tensor", {third(g, hg, 1, H), third(g, ig, 1, H)})});
        Node* n = g.call("tanh", {g.call("add.Tensor", {third(g, ig, 2, H),
                                                          g.call("mul.Tensor", {third(g, hg, 2, H), r})})});
        h = g.call("add.Tensor", {g.call("mul.Tensor", {g.call("sub.Tensor", {h, n}), z}), n});
        hs[static_cast<size_t>(t)] = h;
      }
      outs.push_back(g.call("stack", {Arg(hs), 0}));
      hn.push_back(h);
    }
    seq = dirs == 1 ? outs[0] : g.call("cat", {Arg(outs), 2});
  }
  Node* out = batch_first ? g.call("transpose.int", {seq, 0, 1}) : seq;
  return {out, g.call("stack", {Arg(hn), 0})};
}

constexpr const char* kGru =
    "gru.input(Tensor input, Tensor hx, Tensor[] params, bool has_biases, int num_layers, "
    "float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor)";

}  // namespace

void register_gru_input_ops(OpRegistry& r) {
  r.add_multi(kGru, OpCategory::Composite, infer_by_expansion(parse_schema(kGru).name));
}

void register_gru_input_expansions(ExpansionTable& t) { t.add(parse_schema(kGru).name, gru_input); }

}  // namespace stax
