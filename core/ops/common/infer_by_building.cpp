#include "core/ops/common/infer_by_building.h"

#include <string>
#include <unordered_map>

#include "core/support/error.h"

namespace stax {

InferFn infer_by_building(BuildFn fn) {
  return [fn](const CallArgs& c) -> TensorMeta {
    Graph g(default_registry());
    std::unordered_map<Node*, Node*> ph;
    auto map = [&](Node* n) -> Node* {
      auto it = ph.find(n);
      if (it != ph.end()) return it->second;
      Node* p = g.placeholder("in" + std::to_string(ph.size()), n->meta());
      ph[n] = p;
      return p;
    };
    std::vector<Arg> args;
    for (const auto& a : c.args()) args.push_back(map_nodes(a, map));
    Kwargs kwargs;
    for (const auto& [k, v] : c.kwargs()) kwargs.emplace_back(k, map_nodes(v, map));
    ExpandCall call(c.op(), std::move(args), std::move(kwargs), c.where());
    Node* r = nullptr;
    try {
      r = fn(g, call);
    } catch (const Error& e) {
      if (e.location() == c.where()) throw;
      c.fail(e.message());  // an error of an emitted op: reported at the node being built
    }
    TensorMeta m = r->meta();
    return TensorMeta::contiguous(m.sizes, m.dtype, m.device);
  };
}

DecompositionFn decomposition_by_building(BuildFn fn) {
  return [fn](Graph& g, const Node& n) {
    ExpandCall call(*n.op(), n.args(), n.kwargs(), "%" + n.name());
    return fn(g, call);
  };
}

}  // namespace stax
