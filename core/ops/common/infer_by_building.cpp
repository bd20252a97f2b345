#include "core/ops/common/infer_by_building.h"

#include "core/support/error.h"

namespace stax {

InferFn infer_by_building(BuildFn fn) {
  return [fn](const CallArgs& c) -> TensorMeta {
    Graph g(default_registry());
    ExpandCall call = scratch_call(g, c);
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
