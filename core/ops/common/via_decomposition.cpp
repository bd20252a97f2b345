// VJP / JVP rules of a Composite op derived from its decomposition (via_decomposition.h): the
// node is rebuilt over placeholders in a one-call graph, decomposed, differentiated with the base
// ops' rules (build_joint_graph / build_jvp_graph) and replayed into the graph being built, so
// gradients follow the formula the compiled forward runs (the forward recomputation the replay
// emits is dropped when nothing reads it).
#include "core/ops/common/via_decomposition.h"

#include <unordered_map>

#include "core/autodiff/joint_graph.h"
#include "core/graph/decompositions.h"
#include "core/graph/op_registry.h"
#include "core/support/error.h"

namespace stax {
namespace {

bool differentiable_dtype(DType t) { return is_floating(t) || is_complex(t); }

// A one-call graph of `n` over one placeholder per distinct tensor input, decomposed.
struct Mini {
  Graph g{default_registry()};
  std::vector<Node*> outer;         // the outer graph's input nodes
  std::vector<std::string> names;   // the placeholder standing for each
};

std::unique_ptr<Mini> mini_graph(const Node& n) {
  auto m = std::make_unique<Mini>();
  std::unordered_map<const Node*, Node*> ph;
  for (Node* in : n.input_nodes()) {
    if (ph.count(in)) continue;
    std::string name = "in" + std::to_string(m->outer.size());
    ph[in] = m->g.placeholder(name, in->meta());
    m->outer.push_back(in);
    m->names.push_back(name);
  }
  auto remap = [&](const Arg& a) { return map_nodes(a, [&](Node* x) { return ph.at(x); }); };
  std::vector<Arg> args;
  for (const Arg& a : n.args()) args.push_back(remap(a));
  Kwargs kwargs;
  for (const auto& [k, v] : n.kwargs()) kwargs.emplace_back(k, remap(v));
  Node* call = m->g.call(n.target(), std::move(args), std::move(kwargs), n.name());
  call->attrs = n.attrs;
  m->g.output({call});
  decompose(m->g);
  // decompose() keeps a complex node whose entry is written for real values (docs/complex.md).
  for (const Node* x : m->g.nodes())
    if (x->is_call() && x->target() == n.target())
      throw Error("autodiff", "%" + n.name(),
                  "no derivative rule for " + n.target() + " on complex values");
  return m;
}

// Replays the call nodes of `g` through `e` (placeholders and `fixed` nodes come from `map`).
void replay(const Graph& g, const Emitter& e, std::unordered_map<const Node*, Node*>& map,
            const Node* forward_out, Node* outer_out) {
  auto remap = [&](const Arg& a) { return map_nodes(a, [&](Node* x) { return map.at(x); }); };
  for (const Node* n : g.nodes()) {
    if (!n->is_call()) continue;
    if (n == forward_out) {
      map[n] = outer_out;
      continue;
    }
    std::vector<Arg> args;
    for (const Arg& a : n->args()) args.push_back(remap(a));
    Kwargs kwargs;
    for (const auto& [k, v] : n->kwargs()) kwargs.emplace_back(k, remap(v));
    Node* r = e.call(n->target(), std::move(args), std::move(kwargs));
    for (const auto& [k, v] : n->attrs) r->attrs.emplace(k, v);
    map[n] = r;
  }
}

}  // namespace

void vjp_via_decomposition(VjpContext& c) {
  auto m = mini_graph(*c.node());
  std::vector<std::string> wrt;
  std::vector<Node*> wrt_outer;
  for (size_t i = 0; i < m->outer.size(); ++i)
    if (c.needs(m->outer[i]) && differentiable_dtype(m->outer[i]->dtype())) {
      wrt.push_back(m->names[i]);
      wrt_outer.push_back(m->outer[i]);
    }
  if (wrt.empty()) return;
  JointGraph j = build_joint_graph(m->g, wrt);
  if (j.output_tangent.empty() || j.output_tangent[0] < 0) return;
  std::unordered_map<const Node*, Node*> map;
  for (size_t i = 0; i < m->names.size(); ++i) map[j.graph.find(m->names[i])] = m->outer[i];
  map[j.graph.find(j.tangents[j.output_tangent[0]])] = c.grad();
  std::vector<Node*> outs = j.graph.outputs();
  replay(j.graph, c, map, outs[0], c.out());
  for (size_t i = 0; i < wrt.size(); ++i) c.give(wrt_outer[i], map.at(outs[j.num_forward_outputs + i]));
}

Node* jvp_via_decomposition(JvpContext& c) {
  auto m = mini_graph(*c.node());
  std::vector<std::string> wrt;
  std::vector<Node*> wrt_outer;
  for (size_t i = 0; i < m->outer.size(); ++i)
    if (c.tangent(m->outer[i]) && differentiable_dtype(m->outer[i]->dtype())) {
      wrt.push_back(m->names[i]);
      wrt_outer.push_back(m->outer[i]);
    }
  if (wrt.empty()) return nullptr;
  JvpGraph j = build_jvp_graph(m->g, wrt);
  std::unordered_map<const Node*, Node*> map;
  for (size_t i = 0; i < m->names.size(); ++i) map[j.graph.find(m->names[i])] = m->outer[i];
  for (size_t i = 0; i < wrt.size(); ++i)
    map[j.graph.find(j.tangents[i])] = c.tangent(wrt_outer[i]);
  std::vector<Node*> outs = j.graph.outputs();
  replay(j.graph, c, map, outs[0], c.out());
  return map.at(outs[j.num_outputs]);
}

}  // namespace stax
