// Which ops take uint16 / uint32 / uint64 tensors: torch's "barebones" unsigned dtypes, which its
// CPU kernels accept only in the ops that move, select or compare data (docs/dtypes.md).
#pragma once

#include <string>
#include <vector>

#include "core/graph/op_registry.h"

namespace stax {

// The op names whose torch CPU kernels take uint16 / uint32 / uint64 (`all`: a base name takes
// every overload, "base.overload" that one only) and those of them that order values
// (`ordering`: uint64 is refused there). Set once by install_ops() from the lists in
// core/ops/common/unsigned_ops.cpp (engines name no op: tests/layering/check_op_names.py).
void set_barebones_unsigned_ops(std::vector<std::string> all, std::vector<std::string> ordering);

// Whether `op` takes tensors of `t` (uint16, uint32 or uint64).
bool accepts_barebones_unsigned(const OpDef& op, DType t);

// Throws Error("shape", where, ...) in torch's words ("\"add\" not implemented for 'UInt16'"),
// naming the argument and its dtype, when `op` does not take uint16 / uint32 / uint64 tensors
// and an argument or the result (`out`, if given) is one.
void reject_unsupported_unsigned(const OpDef& op, const std::vector<Arg>& args,
                                 const Kwargs& kwargs, const TensorMeta* out,
                                 const std::string& where);

}  // namespace stax
