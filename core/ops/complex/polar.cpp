// polar(abs, angle): the complex number abs·(cos angle + i sin angle), as torch's kernel
// (std::polar: complex(abs * cos(angle), abs * sin(angle)) in the inputs' type), broadcast.
// A Composite op with one builder (core/ops/common/built_ops.h): its inference and its
// decomposition, complex(mul(abs, cos(angle)), mul(abs, sin(angle))), come from it, the
// interpreter runs that decomposition (so compiled and interpreted results agree bit for bit),
// and its VJP goes through it (complex's rule: the real and imaginary parts of the cotangent).
// torch's checks: both inputs float32 or float64 (torch also takes float16 for the result
// complex32, which Stax does not have), of the same dtype.
#include <string>
#include <vector>

#include "core/ops/common/built_ops.h"

namespace stax {

namespace {

Node* polar(Graph& g, const ExpandCall& c) {
  Node* r = c.tensor("abs");
  Node* t = c.tensor("angle");
  const DType rt = r->dtype(), tt = t->dtype();
  for (DType d : {rt, tt})
    if (d != DType::Float32 && d != DType::Float64)
      c.fail("Expected both inputs to be Half, Float or Double tensors but got " +
             std::string(dtype_name(rt)) + " and " + std::string(dtype_name(tt)));
  if (rt != tt)
    c.fail("Expected object of scalar type " + std::string(dtype_name(rt)) +
           " but got scalar type " + std::string(dtype_name(tt)) + " for second argument");
  Node* re = g.call("mul.Tensor", {r, g.call("cos", {t})});
  Node* im = g.call("mul.Tensor", {r, g.call("sin", {t})});
  return g.call("complex", {re, im});
}

const std::vector<BuiltOp>& polar_ops() {
  static const std::vector<BuiltOp> table = {
      {"polar(Tensor abs, Tensor angle) -> Tensor", polar, true, true},
  };
  return table;
}

}  // namespace

void register_polar_ops(OpRegistry& r) { add_built_ops(r, polar_ops()); }
void register_polar_decompositions(DecompositionTable& t) {
  add_built_decompositions(t, polar_ops());
}
void register_polar_kernels(InterpreterTable& t) { add_built_kernels(t, polar_ops()); }
void register_polar_vjps(VjpTable& t) { add_built_vjps(t, polar_ops()); }
void register_polar_jvps(JvpTable& t) { add_built_jvps(t, polar_ops()); }

}  // namespace stax
