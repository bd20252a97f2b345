// The C++ printer of cpu_cpp: a CStylePrinter specialisation (sdk/include/stax/sdk/
// cstyle_printer.hpp) plus the kernel framing. A kernel's source is
//
//   <prelude>                      scalar_ops.hpp verbatim, half_bits.hpp verbatim, the float16 /
//                                  bfloat16 storage types and their conversions, STAX_CHECK
//   // ---- stax kernel ----        kKernelMarker: everything below is the kernel proper
//   static inline __attribute__((always_inline)) void kernel0_body(
//       const float* __restrict in_ptr0,                         // the buffers: restrict
//       float* __restrict out_ptr0,                              // parameters (no two overlap)
//       long long stax_begin, long long stax_end, stax_fault* stax_error) {
//     for (int i0 = (int)stax_begin; i0 < (int)stax_end; ++i0) {  // i0 in [begin, end): the
//       // buf2                                                    // host splits it across threads
//       float acc0 = 0.0f;
//       for (int r0_0 = 0; r0_0 < 128; ++r0_0) {
//         float tmp0 = in_ptr0[128*i0 + r0_0];
//         ...
//         acc0 = stax_scalar::add(acc0, tmp5);
//       }
//       out_ptr0[i0] = acc0;
//     }
//   }
//   extern "C" void kernel0(void* const* stax_buffers, long long stax_begin, long long stax_end,
//                           stax_fault* stax_error) {   // the ABI entry point (plugin_api.h)
//     kernel0_body((const float*)stax_buffers[0], (float*)stax_buffers[1], stax_begin, ...);
//   }
//
// Reduction order. By default (PrintOptions::strict_order false) sum / prod / max / min / any / all
// accumulate in the segmented order of stax/sdk/reduction_order.hpp, the order of the reference
// interpreter's ReductionOrder::Segmented: `float acc0[16]`, one chain per segment j mod 16 of the
// flat reduction index, then a fixed tree. When the segment follows the innermost reduction
// variable (one reduction loop, or an innermost extent divisible by 16) that loop steps by 16 over
// a `stax_seg` loop of 16 (plus a tail loop), marked `#pragma clang loop unroll(disable)
// vectorize(enable) vectorize_width(16)` so that Clang turns it into one 512-bit operation per
// statement with the chains in one register (left alone, it unrolls the loop first and packs the
// chains into 128-bit pairs); otherwise a running counter `stax_seg` picks the chain. argmax / argmin, and every reduction with strict_order,
// accumulate sequentially in lexicographic order (the interpreter's default order, bit for bit);
// strict order's row reductions run 16 rows in 16 vector lanes over transposed tiles
// (PrintOptions::row_tiles), else 8 rows' scalar chains side by side.
// A reduction kernel whose loads are contiguous along its innermost iteration variable (a
// reduction over an outer dimension) is lane-interleaved: up to 128 neighbouring outputs per
// block, accumulators in an array and the lane loop innermost (vector loads and adds; each output
// keeps its own order). Pointwise loops are left to Clang's vectoriser. No system header is
// included. With PrintOptions::vector_printer the innermost loop of pointwise kernels and of
// segmented reduction bodies is printed as explicit AVX-512 code instead (vector_printer.h),
// body by body where it has a vector form, with the same bits.
// Two printings of the segmented order that change no bit (issue 9, DECISIONS "softmax in three
// passes"): a reduction-loop body that only stores (softmax's exp(x - max) over the row) runs in
// the loop of the segmented reduction after it when that one reads the stored row at the stored
// index (PrintOptions::fuse_bodies); and a float max / min accumulation runs as `acc = acc > x ?
// acc : x` with a NaN flag per segment, the exact NaN-propagating loop running again for a row
// only when the flag is set (stax_scalar::maximum's NaN tests made a 5-6 cycle dependency chain).
// Streaming stores (PrintOptions::streaming_store_bytes, streaming_store.h): a float32 output above
// the threshold that the kernel does not read back is stored 16 elements at a time with
// `stax_stream16` (non-temporal where 64-byte aligned): the scalar printer runs its loop in blocks
// of 16 into a 16-float array, the vector printer streams its full vectors; the entry point then
// ends with `stax_stream_fence()` (sfence), and a comment above the kernel names those buffers.
// Index arithmetic is long long, or int when the host proved every index fits int32
// (Kernel::index_bits() == 32, ABI 1.1): then loop variables are int (`for (int i0 =
// (int)stax_begin; i0 < (int)stax_end; ++i0)`, bounds without LL) and an indirect index is
// narrowed to int after its check; loaded values and INDEX_EXPR results keep their dtypes.
// A kernel without iteration ranges (a 0-d result) ignores stax_begin / stax_end (the host passes
// [0, 1)). A failed bounds check of an indirect index records the index as loaded and the size
// in *stax_error (the prelude's struct stax_fault) and returns; the host's message names both.
#pragma once

#include <string>

#include "stax/sdk/loop_body.hpp"

namespace stax::cpu {

struct PrintOptions {
  // Sequential reductions in the interpreter's lexicographic order (bit-identical to its default
  // ReductionOrder::Sequential) instead of the segmented order.
  bool strict_order = false;
  // The vector printer (vector_printer.h): the innermost loop of pointwise kernels and of
  // segmented reduction bodies as explicit AVX-512 vector code (the same bits); false: scalar
  // loops that Clang's loop vectoriser vectorises. Needs AVX-512 (the backend turns it off
  // without).
  bool vector_printer = false;
  // A reduction-loop body that only stores (softmax's exp over the row) runs inside the loop of
  // the segmented reduction after it when that reduction reads the stored row at the same index
  // (the same bits: every value and every accumulation order is unchanged); false: each body its
  // own loop (for comparison).
  bool fuse_bodies = true;
  // strict_order's row reductions 16 rows at a time in 16 vector lanes, each lane one row's
  // sequential accumulator, over 16 x 16 tiles transposed in registers (VectorPrinter::
  // row_tile_body; the same bits as the 8 scalar row chains). Needs AVX-512 (the backend turns
  // it on by default where it has it).
  bool row_tiles = false;
  // Streaming stores (streaming_store.h, DECISIONS 71): a float32 output of more than this many
  // bytes that the kernel does not read back is stored 16 elements at a time with non-temporal
  // stores where 64-byte aligned (pointwise kernels, and reduction-loop bodies that only store,
  // e.g. layer_norm's last pass), and the kernel's entry point ends with an sfence. 0: off. The
  // backend's `streaming_store_bytes` (auto: the last-level cache).
  int64_t streaming_store_bytes = 0;
};

// Bump when the printed code of a kernel changes: part of the backend's cache identity, so that a
// kernel cache never hands back an object printed by an older printer.
inline constexpr int kPrinterRevision = 8;  // 8: streaming stores (streaming_store.h)

// The line separating the prelude from the kernel function.
inline constexpr const char* kKernelMarker = "// ---- stax kernel ----";

// The prelude every kernel starts with (ends with a newline).
const std::string& kernel_prelude();

// The kernel function alone (from the signature to the closing brace, newline-terminated).
std::string print_kernel_function(const sdk::Kernel& kernel, const PrintOptions& options = {});

// The iteration dimension whose loop runs over [stax_begin, stax_end), the one the host splits
// across threads: the first with an extent above 1 (leading unit dimensions, e.g. the [1, n] of a
// keepdim column sum such as a bias gradient, would leave nothing to split), else 0.
int32_t chunked_dim(const sdk::Kernel& kernel);

// The host's chunks of the chunked loop [stax_begin, stax_end) should start at multiples of
// this (the wide-lane block when the lanes run along the chunked loop, else 1), so that no chunk
// cuts a block of lanes into scalar tail iterations. Any chunking gives the same bits.
int64_t outer_chunk_alignment(const sdk::Kernel& kernel, const PrintOptions& options = {});

// kernel_prelude() + kKernelMarker + "\n" + print_kernel_function(kernel).
std::string print_kernel_source(const sdk::Kernel& kernel, const PrintOptions& options = {});

}  // namespace stax::cpu
