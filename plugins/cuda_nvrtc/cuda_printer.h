// The CUDA C printer of cuda_nvrtc: a CStylePrinter specialisation (sdk/include/stax/sdk/
// cstyle_printer.hpp) plus the launch framing. A kernel's source is
//
//   <prelude>                      (NVRTC; the host emulation's: see Target) CUDA spellings of the __builtin_* math that scalar_ops.hpp
//                                  uses, <cuda_fp16.h> / <cuda_bf16.h>, scalar_ops.hpp verbatim
//                                  (compiled with NVRTC's -default-device), the __half /
//                                  __nv_bfloat16 conversions, STAX_CHECK / STAX_CHECK_INDEX,
//                                  the argmax/argmin combine rule
//   // ---- stax kernel ----        kKernelMarker
//   extern "C" __global__ void __launch_bounds__(256) kernel0(const float* in_ptr0, ...,
//                                                             unsigned long long* stax_fault)
//
// Three launch forms (LaunchPlan):
//   * pointwise kernels (no reduction-loop body): one iteration point per thread, grid-stride
//     loop over the flattened iteration space (`stax_linear`, long long), decomposed row-major
//     into i0, i1, ...; every body runs in order at each point.
//   * kernels with a reduction-loop body: one iteration point ("row") per block, grid-stride over
//     rows. Pointwise bodies run on thread 0; a reduction-loop body's statements run strided over
//     the flattened reduction space (`stax_r` = threadIdx.x, += blockDim.x, decomposed into
//     r0_0, ...); each thread accumulates its elements in increasing order, then the block
//     combines the per-thread accumulators through shared memory in a FIXED binary tree
//     (stride blockDim/2, /4, ... 1), so results do not depend on timing; thread 0 runs the
//     stores of the reduction. __syncthreads() after every body: bodies communicate through
//     global memory. blockDim is a power of two fixed by the reduction length alone
//     (block_threads()), so results do not depend on the grid either.
//   * kernels with a reduction-loop body whose rows are short (reduction_numel <= kWarpRowMax):
//     the warp form, 16 lanes per row (kRowLanes, half a warp), 16 rows per 256-thread block,
//     grid-stride over groups of 16 rows (every thread runs every iteration, so barriers and
//     shuffles are uniform; lanes of a row past the end only join them). Lane l accumulates the
//     row's elements j ≡ l (mod 16) in increasing j, then the 16 partial results combine with
//     __shfl_down_sync at offsets 8, 4, 2, 1: s_l = op(s_l, s_{l+h}) for l < h. That is exactly
//     stax/sdk/reduction_order.hpp's segmented order (K = 16), which the interpreter's
//     Segmented mode and cpu_cpp use by default: sums, products, max and min of this form equal
//     them bit for bit. Lane 0 runs the row's pointwise bodies and stores.
//     With several reduction-loop bodies loading the same input element (softmax, layer_norm),
//     the persistent variant reads the row once into per-lane registers (cuda_printer.cpp,
//     PersistentLoads); the same arithmetic in the same order.
// The block form's sums add in a different order than the interpreter (within the seed §6.5 bound
// (n-1)·u·Σ|a_i|); max/min/any/all/argmax/argmin and integer sums are exact. half/bfloat16 are
// loaded into float, computed in float and rounded (to nearest even) on store. Math functions are
// CUDA's (expf: 2 ulp, logf / sinf / cosf / tanhf / erff: 1-2 ulp per the CUDA C Programming
// Guide's table; sqrtf and division correctly rounded with NVRTC's defaults; no FMA contraction,
// nvrtc_compiler.h), so transcendental results may differ from the host's libm in the last bits.
#pragma once

#include <cstdint>
#include <string>

#include "stax/sdk/loop_body.hpp"

namespace stax::cuda {

inline constexpr const char* kKernelMarker = "// ---- stax kernel ----";
// The kernel's last parameter (after the buffers): `unsigned long long* stax_fault`, three
// words of host-visible memory, zero before the launch. A failed indirect-index check
// (STAX_CHECK_INDEX) of the first faulting thread sets [0] = 1, [1] = the index as loaded,
// [2] = the size, then traps; the host reads them after the failed launch.
inline constexpr const char* kFaultParam = "stax_fault";
inline constexpr size_t kFaultWords = 3;

// How a printed kernel is launched.
struct LaunchPlan {
  bool row_per_block = false;  // false: pointwise grid-stride form
  bool warp_rows = false;      // with row_per_block: the warp form (kRowLanes lanes per row)
  int64_t points = 0;          // iteration points (rows); 0 = nothing to launch
  int64_t reduction_numel = 1; // elements per row (row form)
  unsigned block = 256;        // threads per block (a power of two)
  unsigned grid = 1;           // blocks: min(ceil(points / per block), kMaxGrid)
};

// Blocks of a launch are capped at this; grid-stride loops cover the rest.
inline constexpr int64_t kMaxGrid = 8192;
// The warp form: lanes per row (= sdk::kReductionSegments), rows up to this length.
inline constexpr unsigned kRowLanes = 16;
inline constexpr int64_t kWarpRowMax = 1024;

// The launch plan of a kernel.
LaunchPlan plan_launch(const sdk::Kernel& kernel);

// Threads per block for rows of `reduction_numel` elements: the next power of two, clamped to
// [32, 256].
unsigned block_threads(int64_t reduction_numel);

// What the source is compiled by: NVRTC for the GPU, or a host C++ compiler for the grid
// emulator (grid_emulator.h). Only the prelude differs: the host one defines the CUDA built-ins
// the kernels use (threadIdx, blockIdx, blockDim, gridDim, __syncthreads, __trap, __shared__ as a
// function-local static, __half / __nv_bfloat16 with half_bits.hpp's conversions) and keeps the
// host's math (so emulated pointwise kernels agree with the interpreter bit for bit).
enum class Target { Nvrtc, HostEmulation };

// The prelude every kernel starts with (ends with a newline).
const std::string& kernel_prelude(Target target = Target::Nvrtc);

// The __global__ function alone, newline-terminated, for `plan` (from plan_launch(kernel)).
std::string print_kernel_function(const sdk::Kernel& kernel, const LaunchPlan& plan);

// kernel_prelude(target) + kKernelMarker + "\n" + print_kernel_function(kernel, plan).
std::string print_kernel_source(const sdk::Kernel& kernel, const LaunchPlan& plan,
                                Target target = Target::Nvrtc);

}  // namespace stax::cuda
