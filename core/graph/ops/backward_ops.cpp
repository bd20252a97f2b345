// The backward ops autodiff emits (seed Listing 5.2): pointwise in the grad and saved inputs.
#include "core/graph/ops/infer_helpers.h"
#include "core/graph/ops/register_ops.h"

namespace stax {

void register_backward_ops(OpRegistry& r) {
  using P = Promotion;
  r.add("gelu_backward(Tensor grad_output, Tensor self, str approximate='none') -> Tensor",
        OpCategory::Pointwise, P::Default, infer::elementwise_rule({"grad_output", "self"}));
}

}  // namespace stax
