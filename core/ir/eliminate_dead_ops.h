// Dead-op elimination on a LoopBody.
#pragma once

#include "core/ir/loop_body.h"

namespace stax {

// Returns `body` without the ops no store depends on (through operands or through the indirect
// variables of kept index expressions), renumbering ops, operands, indirect variables (tmp<op>)
// and the index list. Index propagation leaves such ops behind: `(3*i0) % 128` computed with
// index_expr/mul/mod becomes a direct index and the value ops die (seed Example 6.3).
LoopBody eliminate_dead_ops(const LoopBody& body);
// The same, taking `body` over: when every op is live and the index list is already in the order
// the rebuild would give, `body` itself is returned (no copy, no expression rebuilt).
LoopBody eliminate_dead_ops(LoopBody&& body);

}  // namespace stax
