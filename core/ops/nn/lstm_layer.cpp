// nn.LSTM as torch 2.x traces it on the CPU without decompositions (issue 29 item 5): one
// mkldnn_rnn_layer per layer and direction, and mkldnn_rnn_layer_backward in training graphs.
// Both are tuple-valued ops expanded into the LSTM cell over the time steps (base ops: one mm for
// the input projection of every step, then per step an mm, sigmoid / tanh and the cell update):
//   gates = x_t W_ih^T + b_ih + h W_hh^T + b_hh = (i, f, g, o);  i, f, o = sigmoid, g = tanh
//   c' = f c + i g;  h' = o tanh(c')
// The input is time-major (T, B, I) whatever batch_first says (torch transposes before the call;
// its meta function gives the same shape either way); `reverse` runs the steps from T - 1 down and
// writes each h at its own step. The backward recomputes the forward and runs backpropagation
// through time with the cell's derivatives (so it is differentiable again), giving the gradients
// of the input, W_ih, W_hh, b_ih, b_hh, hx and cx. The workspace is an empty uint8 tensor, as
// torch's meta function gives. Only mode 2 (LSTM) without packed sequences (batch_sizes empty);
// anything else is a clear error. lstm.input (torch.export's training IR of nn.LSTM) runs every
// layer and direction through the same cell.
#include <string>
#include <vector>

#include "core/graph/multi_output.h"
#include "core/ops/registration.h"
#include "core/support/error.h"

namespace stax {

namespace {

constexpr int64_t kLstm = 2;

struct Step {
  Node* x;       // (B, I)
  Node* h_prev;  // (B, H)
  Node* c_prev;
  Node *i, *f, *g, *o;  // activated gates
  Node* tanh_c;
  Node* h;
  Node* c;
};

struct Layer {
  std::vector<Step> steps;  // in processing order (reversed time when `reverse`)
  std::vector<int64_t> time;  // the time index of each step
  int64_t T = 0, B = 0, I = 0, H = 0;
};

Node* gate(Graph& g, Node* a, int64_t k, int64_t H) {
  return g.call("slice.Tensor", {a, 1, k * H, (k + 1) * H, 1});
}

// mkldnn_rnn_layer's own checks: LSTM (mode 2) without packed sequences.
void check_mkldnn_layer(const ExpandCall& c) {
  if (c.get("mode").to_int() != kLstm)
    c.fail("mode " + std::to_string(c.get("mode").to_int()) + " is not supported (2: LSTM)");
  if (!c.get("batch_sizes").to_int_list().empty())
    c.fail("packed sequences (non-empty batch_sizes) are not supported");
}

Layer run_layer(Graph& g, const ExpandCall& c, Node* x, Node* w_ih, Node* w_hh, Node* b_ih,
                Node* b_hh, Node* hx, Node* cx, int64_t hidden_size, bool has_biases,
                bool reverse) {
  Layer L;
  if (x->meta().dim() != 3) c.fail("input must be 3-D (T, B, I), got " + shape_str(x->shape()));
  L.T = x->shape()[0];
  L.B = x->shape()[1];
  L.I = x->shape()[2];
  L.H = hidden_size;
  if (w_ih->shape() != Shape{4 * L.H, L.I} || w_hh->shape() != Shape{4 * L.H, L.H})
    c.fail("weights must be (4 * hidden_size, input) and (4 * hidden_size, hidden_size), got " +
           shape_str(w_ih->shape()) + " and " + shape_str(w_hh->shape()));
  if (hx->shape() != Shape{L.B, L.H} || cx->shape() != Shape{L.B, L.H})
    c.fail("hx and cx must be (batch, hidden_size) = " + shape_str(Shape{L.B, L.H}));
  Node* proj = g.call("matmul", {x, g.call("t", {w_ih})});  // (T, B, 4H)
  if (has_biases) proj = g.call("add.Tensor", {proj, g.call("add.Tensor", {b_ih, b_hh})});
  Node* w_hh_t = g.call("t", {w_hh});
  Node* h = hx;
  Node* cell = cx;
  for (int64_t s = 0; s < L.T; ++s) {
    int64_t t = reverse ? L.T - 1 - s : s;
    Step st;
    st.x = g.call("select.int", {x, 0, t});
    st.h_prev = h;
    st.c_prev = cell;
    Node* a = g.call("add.Tensor", {g.call("select.int", {proj, 0, t}), g.call("mm", {h, w_hh_t})});
    st.i = g.call("sigmoid", {gate(g, a, 0, L.H)});
    st.f = g.call("sigmoid", {gate(g, a, 1, L.H)});
    st.g = g.call("tanh", {gate(g, a, 2, L.H)});
    st.o = g.call("sigmoid", {gate(g, a, 3, L.H)});
    st.c = g.call("add.Tensor", {g.call("mul.Tensor", {st.f, cell}), g.call("mul.Tensor", {st.i, st.g})});
    st.tanh_c = g.call("tanh", {st.c});
    st.h = g.call("mul.Tensor", {st.o, st.tanh_c});
    h = st.h;
    cell = st.c;
    L.steps.push_back(st);
    L.time.push_back(t);
  }
  return L;
}

// The h of every step in time order, stacked: (T, B, H).
Node* outputs_in_time_order(Graph& g, const Layer& L) {
  std::vector<Node*> hs(static_cast<size_t>(L.T));
  for (size_t s = 0; s < L.steps.size(); ++s) hs[static_cast<size_t>(L.time[s])] = L.steps[s].h;
  return g.call("stack", {Arg(hs), 0});
}

Node* workspace(Graph& g) {
  return g.call("zeros", {Arg(Shape{0})}, {{"dtype", Arg(DType::UInt8)}});
}

std::vector<Node*> lstm_layer(Graph& g, const ExpandCall& c) {
  check_mkldnn_layer(c);
  Layer L = run_layer(g, c, c.tensor("input"), c.tensor("weight0"), c.tensor("weight1"),
                      c.tensor("weight2"), c.tensor("weight3"), c.tensor("hx_"), c.tensor("cx_"),
                      c.get("hidden_size").to_int(), c.get("has_biases").to_bool(),
                      c.get("reverse").to_bool());
  if (L.T == 0) c.fail("input has no time steps");
  return {outputs_in_time_order(g, L), L.steps.back().h, L.steps.back().c, workspace(g)};
}

Node* one_minus(Graph& g, Node* x) { return g.call("rsub.Scalar", {x, 1}); }

std::vector<Node*> lstm_layer_backward(Graph& g, const ExpandCall& c) {
  Node* x = c.tensor("input");
  Node* w_ih = c.tensor("weight1");
  Node* w_hh = c.tensor("weight2");
  check_mkldnn_layer(c);
  Layer L = run_layer(g, c, x, w_ih, w_hh, c.tensor("weight3"), c.tensor("weight4"),
                      c.tensor("hx_"), c.tensor("cx_tmp"), c.get("hidden_size").to_int(),
                      c.get("has_biases").to_bool(), c.get("reverse").to_bool());
  if (L.T == 0) c.fail("input has no time steps");
  DType dt = x->dtype();
  auto zeros = [&](const Shape& s) { return g.call("zeros", {Arg(s)}, {{"dtype", Arg(dt)}}); };
  Node* grad_out = c.has("grad_output") ? c.tensor("grad_output") : nullptr;
  Node* dh = c.has("grad_hy") ? c.tensor("grad_hy") : zeros({L.B, L.H});
  Node* dc = c.has("grad_cy") ? c.tensor("grad_cy") : zeros({L.B, L.H});
  std::vector<Node*> da(static_cast<size_t>(L.T));
  for (size_t s = L.steps.size(); s-- > 0;) {
    const Step& st = L.steps[s];
    if (grad_out) dh = g.call("add.Tensor", {dh, g.call("select.int", {grad_out, 0, L.time[s]})});
    Node* d_tanh = one_minus(g, g.call("mul.Tensor", {st.tanh_c, st.tanh_c}));
    dc = g.call("add.Tensor", {dc, g.call("mul.Tensor", {g.call("mul.Tensor", {dh, st.o}), d_tanh})});
    Node* d_o = g.call("mul.Tensor", {dh, st.tanh_c});
    auto sig = [&](Node* d, Node* y) {  // d * y * (1 - y)
      return g.call("mul.Tensor", {d, g.call("mul.Tensor", {y, one_minus(g, y)})});
    };
    Node* a_i = sig(g.call("mul.Tensor", {dc, st.g}), st.i);
    Node* a_f = sig(g.call("mul.Tensor", {dc, st.c_prev}), st.f);
    Node* a_g = g.call("mul.Tensor", {g.call("mul.Tensor", {dc, st.i}),
                                      one_minus(g, g.call("mul.Tensor", {st.g, st.g}))});
    Node* a_o = sig(d_o, st.o);
    Node* a = g.call("cat", {Arg(std::vector<Node*>{a_i, a_f, a_g, a_o}), 1});  // (B, 4H)
    da[static_cast<size_t>(L.time[s])] = a;
    dh = g.call("mm", {a, w_hh});
    dc = g.call("mul.Tensor", {dc, st.f});
  }
  Node* das = g.call("stack", {Arg(da), 0});  // (T, B, 4H) in time order
  std::vector<Node*> h_prev(static_cast<size_t>(L.T));
  for (size_t s = 0; s < L.steps.size(); ++s) h_prev[static_cast<size_t>(L.time[s])] = L.steps[s].h_prev;
  Node* flat_a = g.call("reshape", {das, Arg(Shape{L.T * L.B, 4 * L.H})});
  Node* flat_x = g.call("reshape", {x, Arg(Shape{L.T * L.B, L.I})});
  Node* flat_h = g.call("reshape", {g.call("stack", {Arg(h_prev), 0}), Arg(Shape{L.T * L.B, L.H})});
  Node* d_x = g.call("matmul", {das, w_ih});
  Node* d_w_ih = g.call("mm", {g.call("t", {flat_a}), flat_x});
  Node* d_w_hh = g.call("mm", {g.call("t", {flat_a}), flat_h});
  Node* d_b = c.get("has_biases").to_bool()
                  ? g.call("sum.dim_IntList", {flat_a, Arg(std::vector<int64_t>{0})})
                  : zeros({0});
  return {d_x, d_w_ih, d_w_hh, d_b, d_b, dh, dc};
}

// lstm.input (what torch.export's training IR keeps of nn.LSTM): every layer and direction
// through the same cell, the directions' outputs concatenated on the feature dim, the next layer
// reading them; h_n and c_n stacked as (layers * directions, B, H). No projections (proj_size:
// five or three parameters per layer) and no dropout between layers in training (a clear error).
std::vector<Node*> lstm_input(Graph& g, const ExpandCall& c) {
  Node* x = c.tensor("input");
  std::vector<Node*> hx = c.get("hx").to_node_list();
  std::vector<Node*> params = c.get("params").to_node_list();
  const bool bias = c.get("has_biases").to_bool(), bidir = c.get("bidirectional").to_bool();
  const bool batch_first = c.get("batch_first").to_bool();
  const int64_t layers = c.get("num_layers").to_int(), dirs = bidir ? 2 : 1;
  const size_t per = bias ? 4 : 2;
  if (layers < 1) c.fail("num_layers must be at least 1");
  if (hx.size() != 2 || !hx[0] || !hx[1]) c.fail("hx must be [h_0, c_0]");
  if (params.size() != static_cast<size_t>(layers * dirs) * per)
    c.fail("expected " + std::to_string(layers * dirs * static_cast<int64_t>(per)) +
           " parameters (w_ih, w_hh" + std::string(bias ? ", b_ih, b_hh" : "") +
           " per layer and direction), got " + std::to_string(params.size()) +
           " (LSTM projections, proj_size > 0, are not supported)");
  for (Node* w : params)
    if (!w) c.fail("params must be tensors, got None");
  if (c.get("train").to_bool() && c.get("dropout").to_double() > 0 && layers > 1)
    c.fail("dropout between LSTM layers in training is not supported");
  if (x->meta().dim() != 3) c.fail("input must be 3-D, got " + shape_str(x->shape()));
  if (params[1]->meta().dim() != 2) c.fail("w_hh must be 2-D (4 * hidden_size, hidden_size)");
  const int64_t H = params[1]->shape()[1];
  Node* seq = batch_first ? g.call("transpose.int", {x, 0, 1}) : x;  // (T, B, I)
  std::vector<Node*> hn, cn;
  for (int64_t l = 0; l < layers; ++l) {
    std::vector<Node*> outs;
    for (int64_t d = 0; d < dirs; ++d) {
      const int64_t k = l * dirs + d;
      const size_t p = static_cast<size_t>(k) * per;
      Node* h0 = g.call("select.int", {hx[0], 0, k});
      Node* c0 = g.call("select.int", {hx[1], 0, k});
      Layer L = run_layer(g, c, seq, params[p], params[p + 1], bias ? params[p + 2] : nullptr,
                          bias ? params[p + 3] : nullptr, h0, c0, H, bias, d == 1);
      if (L.T == 0) c.fail("input has no time steps");
      outs.push_back(outputs_in_time_order(g, L));
      hn.push_back(L.steps.back().h);
      cn.push_back(L.steps.back().c);
    }
    seq = dirs == 1 ? outs[0] : g.call("cat", {Arg(outs), 2});
  }
  Node* out = batch_first ? g.call("transpose.int", {seq, 0, 1}) : seq;
  return {out, g.call("stack", {Arg(hn), 0}), g.call("stack", {Arg(cn), 0})};
}

constexpr const char* kInput =
    "lstm.input(Tensor input, Tensor[] hx, Tensor[] params, bool has_biases, int num_layers, "
    "float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor, Tensor)";

constexpr const char* kForward =
    "mkldnn_rnn_layer(Tensor input, Tensor weight0, Tensor weight1, Tensor weight2, Tensor "
    "weight3, Tensor hx_, Tensor cx_, bool reverse, int[] batch_sizes, int mode, int hidden_size, "
    "int num_layers, bool has_biases, bool bidirectional, bool batch_first, bool train) -> "
    "(Tensor, Tensor, Tensor, Tensor)";
constexpr const char* kBackward =
    "mkldnn_rnn_layer_backward(Tensor input, Tensor weight1, Tensor weight2, Tensor weight3, "
    "Tensor weight4, Tensor hx_, Tensor cx_tmp, Tensor output, Tensor hy_, Tensor cy_, Tensor? "
    "grad_output, Tensor? grad_hy, Tensor? grad_cy, bool reverse, int mode, int hidden_size, int "
    "num_layers, bool has_biases, bool train, bool bidirectional, int[] batch_sizes, bool "
    "batch_first, Tensor workspace) -> (Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor)";

}  // namespace

void register_lstm_layer_ops(OpRegistry& r) {
  for (const char* s : {kForward, kBackward, kInput})
    r.add_multi(s, OpCategory::Composite, infer_by_expansion(parse_schema(s).name));
}

void register_lstm_layer_expansions(ExpansionTable& t) {
  t.add(parse_schema(kInput).name, lstm_input);
  t.add(parse_schema(kForward).name, lstm_layer);
  t.add(parse_schema(kBackward).name, lstm_layer_backward);
}

}  // namespace stax
