// The ops that play the engines' roles (core/graph/op_traits.h): what the autodiff emitter builds
// derivatives with (as PyTorch's derivative formulas spell them), what functionalization copies
// with, and the tuple element reader. An engine asks for a role, never for a name.
#include "core/graph/op_registry.h"
#include "core/graph/op_traits.h"
#include "core/ops/registration.h"

namespace stax {

void register_op_roles(OpTraitTable& table, const OpRegistry& r) {
  // Each role names a registered op: an unknown name fails install_ops() at once.
  auto give = [&](OpRole role, const char* op) { table.set_role(role, r.get(op, "roles").name()); };
  // Multi-output ops (core/graph/multi_output.h): FX's operator.getitem.
  give(OpRole::kTupleElement, "getitem.default");
  // The autodiff emitter (core/autodiff/emitter.h).
  give(OpRole::kAdd, "add.Tensor");
  give(OpRole::kSub, "sub.Tensor");
  give(OpRole::kMul, "mul.Tensor");
  give(OpRole::kDiv, "div.Tensor");
  give(OpRole::kAddScalar, "add.Scalar");
  give(OpRole::kMulScalar, "mul.Scalar");
  give(OpRole::kDivScalar, "div.Scalar");
  give(OpRole::kNeg, "neg");
  give(OpRole::kSumDims, "sum.dim_IntList");
  give(OpRole::kView, "view");
  give(OpRole::kReshape, "reshape");
  give(OpRole::kExpand, "expand");
  give(OpRole::kUnsqueeze, "unsqueeze");
  give(OpRole::kTranspose2d, "t");  // Listing 5.2 spells a 2-D transpose t
  give(OpRole::kTranspose, "transpose.int");
  give(OpRole::kZeros, "zeros");
  give(OpRole::kUnsafeView, "_unsafe_view");  // cat_before_reshape (core/graph/passes.cpp)
  give(OpRole::kCat, "cat");  // gradient accumulation merges zero-padded cats (joint_graph.cpp)
  give(OpRole::kCast, "to.dtype");
  // Functionalization (core/graph/functionalize.h): a written value becomes a version of its own.
  give(OpRole::kCopyCast, "_to_copy.default");
  give(OpRole::kClone, "clone.default");
}

}  // namespace stax
