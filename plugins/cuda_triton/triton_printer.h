// The Triton printer of cuda_triton: a kernel description -> the Python text of one @triton.jit
// function (plus the helper functions of kTritonPrelude), in the block-level form of seed
// Listing 5.4:
//
//   @triton.jit
//   def kernel0(in_ptr0, in_ptr1, out_ptr0, XBLOCK: tl.constexpr):
//       xnumel = 2048
//       xoffset = tl.program_id(0) * XBLOCK
//       xindex = xoffset + tl.arange(0, XBLOCK)
//       xmask = xindex < xnumel
//       x0 = xindex
//       tmp0 = tl.load(in_ptr0 + (0))
//       tmp1 = tl.broadcast_to(tmp0, [XBLOCK])
//       tmp2 = tl.load(in_ptr1 + (x0), xmask)
//       ...
//       tl.store(out_ptr0 + (x0), tmp9, xmask)
//
// Every value is a block: pointwise kernels tile the flattened iteration space by XBLOCK (one
// program per tile, masked by xmask). Kernels with a reduction-loop body tile rows by XBLOCK and
// the flattened reduction space by RBLOCK (xindex [XBLOCK, 1], rindex [1, RBLOCK]):
//   * persistent form (reduction length <= kMaxPersistentRBlock): RBLOCK covers the whole row,
//     one reduce per accumulator (tl.sum / tl.reduce with the combine helpers);
//   * looped form: `for roffset in range(0, rnumel, RBLOCK)` accumulates elementwise into an
//     [XBLOCK, RBLOCK] accumulator, reduced once after the loop.
// Bodies run one after another in the program, tl.debug_barrier() between them (they
// communicate through global memory, as in the CUDA printer).
// Semantics (the reference is scalar_ops.hpp): values are held in the compute type of their dtype
// (half / bfloat16 loaded into float32, computed in float32, rounded to nearest even on store;
// narrow integers in int64, wrapped on store); NaN-propagating maximum / minimum / amax / amin;
// Python floor division and remainder; integer division by zero gives 0; float -> integer
// conversion saturates (NaN -> 0). Division and square root are correctly rounded
// (tl.div_rn / tl.sqrt_rn); transcendental functions are libdevice's on the GPU (1-2 ulp) and
// numpy's under the interpreter. Sums and products combine in a tree (another order than the
// interpreter's: within the seed §6.5 bound); max / min / argmax / argmin / any / all and
// integer reductions are exact; argmax / argmin return the first occurrence (NaN counts as the
// extreme).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stax/sdk/loop_body.hpp"

namespace stax::triton {

// Rows up to this many elements are reduced in the persistent form.
inline constexpr int64_t kMaxPersistentRBlock = 1024;
// RBLOCK of the looped form.
inline constexpr int64_t kLoopedRBlock = 1024;

// How a printed kernel is launched and compiled.
struct TritonLaunch {
  bool reduction = false;   // has a reduction-loop body (2-D tiles)
  bool persistent = false;  // reduction: one RBLOCK covers the row
  int64_t numel = 0;        // iteration points (rows)
  int64_t rnumel = 1;       // reduction elements per row
  int64_t xblock = 1;       // XBLOCK
  int64_t rblock = 1;       // RBLOCK (reductions)
  int num_warps = 4;
  int64_t grid = 0;         // programs: ceil(numel / XBLOCK); 0 = nothing to launch
};

struct TritonKernelSource {
  std::string name;    // the kernel function's name (kernel.name())
  std::string text;    // the @triton.jit function alone
  // Per buffer, in kernel order: Triton's signature type ("*fp32") and the interpreter's dtype
  // name ("float32").
  std::vector<std::string> signature;
  std::vector<std::string> dtypes;
  std::vector<std::string> arg_names;  // per buffer: its parameter ("in_ptr0", "out_ptr0", ...)
  TritonLaunch launch;
};

// The helper functions every kernel module starts with (imports, NaN-propagating combines,
// Python division, saturating conversion, ...). Ends with a newline.
const std::string& triton_prelude();

// The launch plan of a kernel.
TritonLaunch plan_triton_launch(const sdk::Kernel& kernel);

// Prints the kernel. Throws PluginError(STAX_ERROR_UNSUPPORTED) for what Triton cannot express.
TritonKernelSource print_triton_kernel(const sdk::Kernel& kernel);

// triton_prelude() + the kernel: the module text the worker loads.
std::string triton_module_text(const TritonKernelSource& k);

}  // namespace stax::triton
