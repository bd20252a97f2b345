#include "core/graph/op_traits.h"

#include "core/graph/op_registry.h"
#include "core/support/error.h"

namespace stax {

std::string_view op_role_name(OpRole role) {
  switch (role) {
    case OpRole::kTupleElement: return "tuple element";
    case OpRole::kAdd: return "add";
    case OpRole::kSub: return "sub";
    case OpRole::kMul: return "mul";
    case OpRole::kDiv: return "div";
    case OpRole::kAddScalar: return "add scalar";
    case OpRole::kMulScalar: return "mul scalar";
    case OpRole::kDivScalar: return "div scalar";
    case OpRole::kNeg: return "neg";
    case OpRole::kSumDims: return "sum over dims";
    case OpRole::kView: return "view";
    case OpRole::kReshape: return "reshape";
    case OpRole::kExpand: return "expand";
    case OpRole::kUnsqueeze: return "unsqueeze";
    case OpRole::kTranspose2d: return "2-D transpose";
    case OpRole::kTranspose: return "transpose";
    case OpRole::kZeros: return "zeros";
    case OpRole::kCast: return "cast";
    case OpRole::kCopyCast: return "copy with dtype";
    case OpRole::kClone: return "clone";
    case OpRole::kCat: return "cat";
    case OpRole::kUnsafeView: return "unsafe view";
  }
  return "?";
}

void OpTraitTable::set_role(OpRole role, std::string op) {
  op = canonical_target(op);
  std::string& slot = roles_[static_cast<size_t>(role)];
  if (!slot.empty())
    throw Error("registry", op,
                "the role '" + std::string(op_role_name(role)) + "' is given twice (" + slot +
                    ", " + op + ")");
  slot = std::move(op);
}

const std::string& OpTraitTable::op(OpRole role) const {
  const std::string& slot = roles_[static_cast<size_t>(role)];
  if (slot.empty())
    throw Error("registry", "",
                "no op plays the role '" + std::string(op_role_name(role)) +
                    "' (was stax::install_ops() called?)");
  return slot;
}

bool OpTraitTable::plays(const OpDef& op, OpRole role) const {
  const std::string& slot = roles_[static_cast<size_t>(role)];
  return !slot.empty() && op.name() == slot;
}

void OpTraitTable::add_traits(const std::string& base, uint32_t traits) {
  traits_[base] |= traits;
}

bool OpTraitTable::has(const OpDef& op, OpTrait trait) const {
  auto it = traits_.find(op.schema.base);
  return it != traits_.end() && (it->second & trait) != 0;
}

bool OpTraitTable::empty() const {
  if (!traits_.empty()) return false;
  for (const std::string& r : roles_)
    if (!r.empty()) return false;
  return true;
}

static OpTraitTable& traits_storage() {
  static OpTraitTable t;
  return t;
}
const OpTraitTable& default_op_traits() { return traits_storage(); }
OpTraitTable& op_traits_to_fill() { return traits_storage(); }

}  // namespace stax
