// The C++ printer of cpu_cpp: a CStylePrinter specialisation (sdk/include/stax/sdk/
// cstyle_printer.hpp) plus the kernel framing. A kernel's source is
//
//   <prelude>                      scalar_ops.hpp verbatim, half_bits.hpp verbatim, the float16 /
//                                  bfloat16 storage types and their conversions, STAX_CHECK
//   // ---- stax kernel ----        kKernelMarker: everything below is the kernel proper
//   extern "C" void kernel0(void* const* stax_buffers, long long stax_begin, long long stax_end,
//                           const char** stax_error) {
//     const float* __restrict in_ptr0 = (const float*)stax_buffers[0];
//     float* __restrict out_ptr0 = (float*)stax_buffers[2];
//     for (int i0 = (int)stax_begin; i0 < (int)stax_end; ++i0) {  // i0 in [begin, end): the
//       // buf2                                                    // host splits it across threads
//       float acc0 = 0.0f;
//       for (int r0_0 = 0; r0_0 < 128; ++r0_0) {
//         auto tmp0 = in_ptr0[128*i0 + r0_0];
//         ...
//         acc0 = stax_scalar::add(acc0, tmp5);
//       }
//       out_ptr0[i0] = acc0;
//     }
//   }
//
// Scalar loops only: pointwise loops are left to Clang's vectoriser; reduction loops accumulate
// sequentially in lexicographic order (the reference interpreter's order, so results agree bit for
// bit) unless `reorder_reductions` asks Clang to vectorise them (#pragma clang loop vectorize:
// a §6.5 class-2 reordering, within the (n-1)·u·Σ|a_i| bound). A reduction kernel whose loads are
// contiguous along its innermost iteration variable (a reduction over an outer dimension) is
// lane-interleaved: up to 128 neighbouring outputs per block, accumulators in an array, the lane
// loop innermost (vector loads and adds; each output still accumulated alone and in order, so
// still bit-identical). No system header is included.
// Index arithmetic is long long, or int when the host proved every index fits int32
// (Kernel::index_bits() == 32, ABI 1.1): then loop variables are int (`for (int i0 =
// (int)stax_begin; i0 < (int)stax_end; ++i0)`, bounds without LL) and an indirect index is
// narrowed to int after its check; loaded values and INDEX_EXPR results keep their dtypes.
// A kernel without iteration ranges (a 0-d result) ignores stax_begin / stax_end (the host passes
// [0, 1)). A failed bounds check of an indirect index stores its message in *stax_error and
// returns.
#pragma once

#include <string>

#include "stax/sdk/loop_body.hpp"

namespace stax::cpu {

struct PrintOptions {
  bool reorder_reductions = false;  // #pragma clang loop vectorize(enable) on reduction loops
};

// The line separating the prelude from the kernel function.
inline constexpr const char* kKernelMarker = "// ---- stax kernel ----";

// The prelude every kernel starts with (ends with a newline).
const std::string& kernel_prelude();

// The kernel function alone (from the signature to the closing brace, newline-terminated).
std::string print_kernel_function(const sdk::Kernel& kernel, const PrintOptions& options = {});

// kernel_prelude() + kKernelMarker + "\n" + print_kernel_function(kernel).
std::string print_kernel_source(const sdk::Kernel& kernel, const PrintOptions& options = {});

}  // namespace stax::cpu
