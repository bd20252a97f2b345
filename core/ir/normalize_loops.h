// Loop normalization (seed §6.8, Prop. 6.3).
#pragma once

#include "core/ir/loop_body.h"

namespace stax {

// Returns `body` with its iteration space normalized; ops are unchanged, `ranges`,
// `reduction_ranges` and `indices` are rewritten. Iteration and reduction variables are treated as
// two separate groups:
//   1. dimensions of extent 1 are dropped (their variable becomes 0);
//   2. iteration variables (never reduction variables: that would change the accumulation
//      order) are reordered so that the one the memory accesses traverse with the smallest
//      strides is innermost (fill_order_by_strides, loop_body.h);
//   3. adjacent variables v_j, v_{j+1} (extents s_j, s_{j+1}) are merged into one variable
//      m = s_{j+1}*v_j + v_{j+1} of extent s_j*s_{j+1} when EVERY index expression of the body is
//      affine in both with coefficients a_j = s_{j+1}*a_{j+1} (Prop. 6.3: addresses unchanged;
//      merging keeps the lexicographic order, so reductions accumulate in the same order).
// Variables are renumbered from 0 afterwards. Example 6.2's first level: ranges [64, 2],
// `16384*i0 + 8192*i1 + r0_0` becomes ranges [128], `8192*i0 + r0_0`.
LoopBody normalize_loops(const LoopBody& body);

// The same for the bodies of one fused kernel, which share one iteration space (equal ranges;
// the reduction loop's bodies equal reduction_ranges): the conditions above are checked on the
// index expressions of ALL bodies, so every body gets the same new variables.
std::vector<LoopBody> normalize_loops(const std::vector<LoopBody>& bodies);

}  // namespace stax
