// Which ops take uint16 / uint32 / uint64 tensors: torch's "barebones" unsigned dtypes, which its
// CPU kernels accept only in the ops that move, select or compare data (docs/dtypes.md).
#pragma once

#include <string>
#include <vector>

#include "core/graph/op_registry.h"

namespace stax {

// Whether `op` takes tensors of `t` (uint16, uint32 or uint64).
bool accepts_barebones_unsigned(const OpDef& op, DType t);

// Throws Error("shape", where, ...) in torch's words ("\"add\" not implemented for 'UInt16'"),
// naming the argument and its dtype, when `op` does not take uint16 / uint32 / uint64 tensors
// and an argument or the result (`out`, if given) is one.
void reject_unsupported_unsigned(const OpDef& op, const std::vector<Arg>& args,
                                 const Kwargs& kwargs, const TensorMeta* out,
                                 const std::string& where);

}  // namespace stax
