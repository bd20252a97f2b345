// What the engines know of ops without naming them (issue 26: "no engine names an op"). Two kinds
// of entries, both registered by the op families in stax::install_ops() (core/ops/roles.cpp and
// the families' traits), both read by the engines:
//
//   roles   the one op overload an engine builds or recognises for a purpose of its own: the
//           autodiff emitter's arithmetic (a gradient is accumulated with kAdd, converted with
//           kCast), functionalization's copies (kCopyCast, kClone), the tuple element reader
//           (kTupleElement: FX's operator.getitem, the only op that may read a tuple node);
//   traits  properties of an op (every overload of one base name) that an engine acts on and its
//           category does not say: whether the partitioner may recompute it, whether a kernel
//           may fuse into it, whether an extern product takes a pointwise epilogue.
//
// The check `engines_name_no_op` (tests/layering/check_op_names.py) fails when a file of core/
// outside core/ops spells an op's name as a string literal, so an engine that needs an op gets a
// role or a trait here rather than a name.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace stax {

struct OpDef;

// An op an engine builds or recognises by itself. Each role names one op overload.
enum class OpRole : uint8_t {
  kTupleElement,  // element i of a tuple node: (tuple, int) -> Tensor
  kAdd,           // tensor + tensor, broadcasting
  kSub,           // tensor - tensor
  kMul,           // tensor * tensor
  kDiv,           // tensor / tensor
  kAddScalar,     // tensor + number
  kMulScalar,     // tensor * number
  kDivScalar,     // tensor / number
  kNeg,           // -tensor
  kSumDims,       // (tensor, int[] dims, bool keepdim) -> the sum over dims
  kView,          // (tensor, int[] size) -> a view of that size
  kReshape,       // (tensor, int[] size) -> a view or copy of that size
  kExpand,        // (tensor, int[] size) -> broadcast to size
  kUnsqueeze,     // (tensor, int dim) -> a size-1 dim inserted
  kTranspose2d,   // (tensor) -> a 2-D tensor's transpose
  kTranspose,     // (tensor, int, int) -> two dims swapped
  kZeros,         // (int[] size, dtype=, device=) -> zeros
  kCast,          // (tensor, dtype) -> converted (the tensor itself when the dtype is its own)
  kCopyCast,      // (tensor, dtype=) -> a new tensor converted to dtype
  kClone,         // (tensor) -> a new tensor with the same values
  kCat,           // (tensor[] tensors, int dim) -> the tensors concatenated along dim
  kUnsafeView,    // (tensor, int[] size) -> a view of that size (what traced matmuls leave)
};
inline constexpr size_t kNumOpRoles = static_cast<size_t>(OpRole::kUnsafeView) + 1;
std::string_view op_role_name(OpRole role);  // "tuple element", "add" ...

// Properties of an op, as bits of a mask.
enum OpTrait : uint32_t {
  // A Composite op whose decomposition is elementwise (silu): as cheap to recompute as any
  // pointwise op, and it fuses with its producers (core/partition/remat_analysis.h).
  kTraitPointwiseComposite = 1u << 0,
  // Its kernel writes a whole buffer (index_put, scatter) or holds a matrix product (linear): the
  // partitioner never recomputes it, and its inputs are materialized for it (an opaque consumer).
  kTraitOpaque = 1u << 1,
  // An extern matrix product whose row-major output comes in row blocks: the pointwise kernel
  // reading it may run as its epilogue (core/scheduler/extern_epilogue.h).
  kTraitProductEpilogue = 1u << 2,
};

class OpTraitTable {
 public:
  // Names the op overload ("add.Tensor"; a bare "neg" means neg.default) that plays `role`;
  // throws stax::Error on a second one.
  void set_role(OpRole role, std::string op);
  // The overload playing `role`; throws stax::Error("registry", ...) when none is registered.
  const std::string& op(OpRole role) const;
  // Whether `op` is the overload playing `role`.
  bool plays(const OpDef& op, OpRole role) const;

  // Adds `traits` (OpTrait bits) to every overload of the op named `base` ("scatter").
  void add_traits(const std::string& base, uint32_t traits);
  bool has(const OpDef& op, OpTrait trait) const;

  bool empty() const;

 private:
  std::array<std::string, kNumOpRoles> roles_;
  std::map<std::string, uint32_t, std::less<>> traits_;
};

// The table of this build: empty until stax::install_ops() (core/ops/install.h) fills it once,
// immutable afterwards.
const OpTraitTable& default_op_traits();
// The same table for filling: only install_ops() writes to it.
OpTraitTable& op_traits_to_fill();

}  // namespace stax
