#include "core/ops/common/forward_vjp.h"

#include <algorithm>
#include <string>

#include "core/autodiff/vjp.h"
#include "core/graph/op_registry.h"
#include "core/support/error.h"

namespace stax {

std::vector<Node*> gradients_by_vjp(Graph& g, std::string_view target, std::vector<Arg> args,
                                    Kwargs kwargs, Node* grad, const std::vector<Node*>& wrt) {
  Node* fwd = g.call(target, std::move(args), std::move(kwargs));
  const VjpFn* rule = default_vjp_table().find(fwd->op()->name());
  if (!rule)
    throw Error("decompose", "%" + fwd->name(), "no VJP rule for " + fwd->op()->name());
  if (grad->shape() != fwd->shape())
    throw Error("shape", "%" + grad->name(),
                "the gradient has shape " + shape_str(grad->shape()) + " but " +
                    fwd->op()->name() + " gives " + shape_str(fwd->shape()));
  auto needs = [&wrt](const Node* n) {
    return std::find(wrt.begin(), wrt.end(), n) != wrt.end();
  };
  VjpContext ctx(g, fwd, grad, needs, Phase::None);
  (*rule)(ctx);
  std::vector<Node*> out(wrt.size(), nullptr);
  for (auto [input, contribution] : ctx.contributions()) {
    Node* c = ctx.cast(contribution, input->dtype());
    for (size_t i = 0; i < wrt.size(); ++i)
      if (wrt[i] == input) out[i] = out[i] ? ctx.add(out[i], c) : c;
  }
  return out;
}

Node* or_zeros(Graph& g, Node* grad, const Node* like) {
  if (grad) return grad;
  return g.call("zeros", {Arg(like->shape())}, {{"dtype", like->dtype()}});
}

}  // namespace stax
