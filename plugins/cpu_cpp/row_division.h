// Exact division by a divisor that is the same over a row, in two fused multiply-adds instead of
// a division (issue 27 item 5; docs/DECISIONS.md "softmax's division"): softmax's last pass
// `y[r] = e[r] / s` over a row. Each quotient is still the correctly rounded x / s, bit for bit:
//
//   r = 1 / |s|;  x' = x * sign(s);  q0 = x' * r;  q1 = q0 - (q0 * |s| - x') * r  (two fmas)
//
// is exactly x / s for every float32 x that is ±0 or of magnitude in [2^-64, 2^64) and every s of
// magnitude in [2^-32, 2^32) (no intermediate underflows or overflows there; a correction that
// could round the other way must land within 2^-46 ulp of a midpoint between two floats, and an
// exhaustive check of every divisor mantissa against every dividend that close, 372 million
// pairs, found none that differs: docs/DECISIONS.md). A pass over the row first checks the range
// (an integer min and max of the magnitudes, no branch): a row with a subnormal, huge, infinite or
// NaN x, or such an s, takes the division. float64 keeps the division.
//
// The printed form, for a store-only reduction-loop body whose division's divisor is hoisted
// (loop-invariant) and whose dividend is a plain load of the stored row:
//   float tmp7 = out_ptr2[i0];                                  // the body's hoisted lines
//   const stax_row_div stax_div0 = stax_row_div_prepare(tmp7);
//   unsigned stax_div0_lo = 0xffffffffu, stax_div0_hi = 0u;
//   for (int r0_0 = 0; r0_0 < 4096; ++r0_0) {
//     stax_row_div_range(out_ptr1[4096*i0 + r0_0], stax_div0_lo, stax_div0_hi);
//   }
//   if (stax_row_div_exact(stax_div0, stax_div0_lo, stax_div0_hi)) {
//     for (...) { ...; float tmp8 = stax_row_div_apply(tmp6, stax_div0); ... }
//   } else {
//     for (...) { ...; float tmp8 = stax_scalar::truediv(tmp6, tmp7); ... }
//   }
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "stax/sdk/cstyle_printer.hpp"
#include "stax/sdk/source_writer.hpp"

namespace stax::cpu {

// The helpers the printed form calls (part of the kernel prelude).
extern const char kRowDivisionPrelude[];

// A division of a body's lines that may take the fast exact form.
struct RowDivision {
  size_t line = 0;        // its index in PrintedBody::lines
  std::string quotient;   // `tmp8`
  std::string dividend;   // `tmp6`
  std::string divisor;    // `tmp7`, declared in PrintedBody::hoisted
  std::string load;       // the dividend's load, `out_ptr1[4096*i0 + r0_0]`
};

// The division of `pb`, a reduction-loop body over the one reduction variable `reduce_var`, when
// the fast exact form applies: no accumulator; exactly one float division; its divisor hoisted;
// its dividend a plain load whose index is affine in `reduce_var` (+ and * only, so each
// iteration reads its own element) with no value in it; every store to that buffer at the same
// index (in place), so the range pass reads what each iteration will. nullopt otherwise.
std::optional<RowDivision> find_row_division(const sdk::PrintedBody& pb,
                                             const std::string& reduce_var);

// The body in the printed form above: hoisted lines, the range pass, then the fast or the exact
// loop. `open_loops` opens the reduction loop(s) at the writer's depth (closed here); `id`
// numbers the helper variables (one per division of a kernel).
void emit_row_division_body(sdk::SourceWriter& w, const sdk::PrintedBody& pb,
                            const RowDivision& d, const std::function<void()>& open_loops,
                            int id);

}  // namespace stax::cpu
