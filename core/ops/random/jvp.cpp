// Jvp of the random ops.
#include "core/autodiff/jvp.h"
#include "core/graph/op_registry.h"
#include "core/ops/common/derivative_formulas.h"
#include "core/ops/registration.h"

namespace stax {
namespace {

// dropout is linear for a fixed mask: the same dropout (same rng_seed) of the tangent.
Node* dropout_jvp(JvpContext& c) {
  Node* d = c.call("dropout", {c.tangent("input"), c.arg("p"), c.arg("train")});
  auto it = c.node()->attrs.find("rng_seed");
  d->attrs["rng_seed"] = it != c.node()->attrs.end() ? it->second : Arg(c.node()->name());
  return d;
}

}  // namespace

void register_random_jvps(JvpTable& t) {
  t.add("dropout.default", dropout_jvp);
}

}  // namespace stax
