// VJP and JVP rules of the differentiable creation-family composites: copy (the gradient goes to
// src, summed over the dims it was broadcast along, converted to src's dtype; self only gives the
// shape) and fill.Tensor (to the 0-d value: the sum of the gradient). Both through their
// decompositions (to.dtype, expand, clone), so value, gradient and tangent share one formula.
#include "core/autodiff/jvp.h"
#include "core/autodiff/vjp.h"
#include "core/ops/common/via_decomposition.h"
#include "core/ops/registration.h"

namespace stax {

namespace {
constexpr const char* kThroughDecomposition[] = {"copy.default", "fill.Tensor"};
}  // namespace

void register_creation_vjps(VjpTable& t) {
  for (const char* op : kThroughDecomposition) t.add(op, vjp_via_decomposition);
}

void register_creation_jvps(JvpTable& t) {
  for (const char* op : kThroughDecomposition) t.add(op, jvp_via_decomposition);
}

}  // namespace stax
