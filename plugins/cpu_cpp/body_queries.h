// Questions the cpu_cpp printers ask of a kernel and its loop bodies (body_queries.cpp): their
// index expressions (cpp_printer.cpp, streaming_store.cpp), which accumulations take the
// segmented order, which bodies fuse, whether the loads allow lane interleaving (cpp_printer.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "stax/sdk/loop_body.hpp"

namespace stax::cpu {

// Whether expression e is affine (sums and products of constants and variables: no indirect
// value, floordiv, mod, min or max).
bool affine(const sdk::Expr& e);

// Whether some index of the body is indirect (read from a tensor).
bool has_indirect(const sdk::LoopBody& body);

// Whether the body stores (STORE, not STORE_REDUCTION) inside its loop.
bool stores_in_loop(const sdk::LoopBody& body);

// Whether a reduction-loop body accumulates in the segmented order: it has a reduction, and no
// argmax / argmin (a body without one, e.g. softmax's exp stored over the reduction loop, runs
// as a plain loop that Clang vectorises).
bool segmentable(const sdk::LoopBody& body);

// Whether body b of k (a reduction-loop body that only stores, e.g. softmax's exp(x - max)
// written over the row) can run inside the loop of the next body, a segmented reduction (the
// sum of that row): iteration r then runs b's statements for r and then the next body's, instead
// of all of b's iterations first. Every value is computed as before and every accumulator keeps
// its order, so the bits are the same; the row is read once where it was read twice. Required:
// one reduction loop; b accumulates nothing; the next body reads what b stores only at the index
// b stores it at, an affine index that moves with the reduction variable (so each element is
// stored once, at the iteration that reads it), and stores nothing inside its loop into a buffer
// b reads or writes; neither has an indirect index (whose bounds checks would fail in another
// order).
bool fusable_into_next(const sdk::Kernel& k, size_t b, sdk::Span<int64_t> rranges);

// Whether every load of the kernel moves by 0 or 1 element when iteration variable `dim` grows
// by one (evaluated at the origin; a non-affine index counts as not contiguous).
bool contiguous_along(const sdk::Kernel& k, int32_t dim);

// Lane interleaving of reduction kernels whose loads are contiguous (or constant) along the
// innermost iteration variable L (a column reduction, a reduction over an outer dimension): up to
// 128 neighbouring outputs along L per block, their accumulators in an array and the lane loop
// innermost, so that Clang turns each lane loop into vector loads and vector adds. Only outputs
// are interleaved: each output keeps its own accumulation order (sequential, or segmented with a
// segment counter). Row reductions, contiguous along the reduction variable, vectorise through
// the segmented order instead (emit_segmented_body, body_loops.h).
// The wide lanes of a kernel (0: none): kernels with a reduction loop (a fused kernel may add
// pointwise bodies, e.g. a mean's division), contiguous along the innermost iteration variable
// with an extent of at least 16; the largest power of two up to 128 within that extent.
int64_t wide_lanes(const sdk::Kernel& k);

}  // namespace stax::cpu
