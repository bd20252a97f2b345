// Range analysis reaching the generated code (seed §6.8, Def. 6.4, Listings 6.5 and 6.6): what
// the intervals of a LoopBody's values (value_ranges, loop_body.h) prove about its index
// arithmetic. Both functions run on a body whose iteration space is final (after
// normalize_loops); codegen calls them between normalize_loops and make_kernel_desc.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "core/ir/loop_body.h"

namespace stax {

// Returns `body` with the run-time guards of its indirect_indexing ops cleared where the interval
// of the index operand proves them redundant; nothing else changes:
//   * wrap_negative is cleared when the interval's lower bound is >= 0 (no value is negative);
//   * check is cleared when the interval after wrapping (a negative x reads as x + size while
//     wrap_negative stays) lies within [0, size).
// Listing 6.6: clamp(idx, 0, 127) (minimum / maximum with constants) feeding a gather over a dim
// of size 128 keeps neither; Listing 6.5: an index loaded from an int64 buffer ([-inf, +inf])
// keeps both. An index loaded from an int8 / uint8 / int32 buffer is bounded by its dtype.
LoopBody drop_redundant_index_checks(const LoopBody& body);

// The bit width of the body's index arithmetic: 32 when every integer the generated code computes
// for an index fits int32 (|v| <= 2^31 - 1), else 64. Checked over the full iteration and
// reduction ranges, indirect variables in their value ranges ([0, size) while checked):
//   * every range extent and the number of reduction points (the argmax / argmin linear index);
//   * the expression of every load, masked_load, store, store_reduction and index_expr, with all
//     its subexpressions as a printer evaluates them: sums left to right, constant coefficients
//     first in products; for memory ops with the buffer's element offset `offset_of(buffer)`
//     added first (the kernel description's expressions are relative to it: `offset + expr`).
int index_bits(const LoopBody& body, const std::function<int64_t(const std::string&)>& offset_of);

}  // namespace stax
