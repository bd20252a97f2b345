// The scalar printer's loops around one printed body (body_loops.cpp): the sequential form, the
// segmented order (stax/sdk/reduction_order.hpp) with its tree and its fast max / min form, wide
// lanes and row chains (accumulators in arrays of lanes), and blocks of 16 for streaming stores.
// cpp_printer.cpp's FunctionPrinter chooses the form of each body and calls these.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "plugins/cpu_cpp/cpp_op_printer.h"
#include "stax/sdk/cstyle_printer.hpp"
#include "stax/sdk/reduction_order.hpp"
#include "stax/sdk/source_writer.hpp"

namespace stax::cpu {

// The segments of the segmented order (its accumulators' arrays, its vector loops) and the block
// of streaming stores.
inline constexpr int64_t kSegments = sdk::kReductionSegments;

// `for (<type> var = begin; var < end; ++var) {`
std::string loop(const std::string& type, const std::string& var, const std::string& begin,
                 const std::string& end);

// A loop bound: `128LL` for 64-bit indices, `128` for 32-bit ones (`narrow`).
std::string extent(int64_t n, bool narrow);

// The first `count` reduction loops (r0_0, r0_1, ...) over `rranges`, opened in `w`.
void open_reduction_loops(sdk::SourceWriter& w, const CppPrinter& p, sdk::Span<int64_t> rranges,
                          size_t count);

// Whether the segment of the flat reduction index (its value mod kSegments) equals the innermost
// reduction variable's plus an offset that steps by kSegments: one reduction loop, or an innermost
// extent divisible by kSegments. Then the innermost loop steps by kSegments over a segment loop
// that Clang turns into vector code; otherwise a running segment counter is kept.
bool vector_segments(sdk::Span<int64_t> rranges);

// One body inside the iteration loops, sequential order: accumulators, the reduction loop(s), the
// statements, the stores. A store-only body that divides a row by a divisor it hoists
// (softmax's last pass) divides in fused multiply-adds where that is exact (row_division.h).
void emit_body(sdk::SourceWriter& w, const CppPrinter& p, const sdk::PrintedBody& pb,
               sdk::Span<int64_t> rranges, bool reduction);

// One reduction-loop body in the segmented order: accumulators `T acc[kSegments]`; with
// vector_segments() the innermost reduction loop steps by kSegments over `stax_seg` (the body was
// printed with that variable reading as (r + stax_seg)) and a tail loop finishes it, else a
// running counter `stax_seg` follows the flat reduction index; then the tree, and the stores read
// segment 0.
// `before` (optional): a store-only body fused into this loop (fusable_into_next): its hoisted
// statements go before the loop, its statements before this body's in every iteration.
// `no_stores`: the body stores nothing inside its loop (then its max / min accumulations may take
// the fast form of fast_min_max, the loop running again exactly when a NaN was seen).
void emit_segmented_body(sdk::SourceWriter& w, const CppPrinter& p, const sdk::PrintedBody& pb,
                         sdk::Span<int64_t> rranges, const sdk::PrintedBody* before = nullptr,
                         bool no_stores = false);

// A wide-lane body: accumulators become arrays of `lanes` (`segmented`: of kSegments × `lanes`,
// the segment a running counter over the flat reduction index); the statements run in a lane loop
// inside the reduction loop(s), the stores in one after them. `row_chains`: the lanes are rows'
// sequential chains (fully unrolled, not vectorised; a body that accumulates nothing runs row by
// row).
void emit_wide_body(sdk::SourceWriter& w, const CppPrinter& p, const sdk::PrintedBody& pb,
                    sdk::Span<int64_t> rranges, bool reduction, int64_t lanes, bool segmented,
                    bool row_chains = false);

// The loop over `v` (declared here) from lo to hi in blocks of 16 for streaming stores
// (streaming_store.h): a block runs `block` (its statements printed with v reading as
// (v + stax_seg), each streamed store writing element stax_seg of a block array) in a segment
// loop that Clang turns into one vector operation per statement (the arrays stay in registers),
// then stores each array with stax_stream16; the elements left over run `rest` (the same
// statements printed plainly, normal stores) one at a time (`rest_needed`: false when the
// bounds are constants 16 apart). When the first streamed store's blocks are not known to be
// 64-byte aligned (StreamStore::aligned_rows: a row of 4099 floats, an offset view), elements
// run one at a time first until its address is (at most 15): peeling changes no value, since a
// streamed body accumulates nothing (streaming_store.h). Every element is computed by the same
// statements as in the plain loop: the same bits.
void emit_stream_loop(sdk::SourceWriter& w, const std::string& ix, const std::string& v,
                      const std::string& lo, const std::string& hi, bool rest_needed,
                      const std::vector<CppPrinter::StreamStore>& stores,
                      const std::function<void()>& block, const std::function<void()>& rest);

}  // namespace stax::cpu
