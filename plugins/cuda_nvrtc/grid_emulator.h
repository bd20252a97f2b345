// stax::cuda::GridEmulator: runs a CUDA kernel compiled for the host (the printer's host-emulation
// prelude, cuda_printer.h) over a whole grid on the calling thread. Blocks run one after another;
// each GPU thread of a block is a fiber (Boost.Context's fcontext: make_fcontext /
// jump_fcontext, own stacks) that runs until it reaches __syncthreads() or finishes; a round
// resumes every unfinished thread of the block once, so a barrier releases only when every thread
// has reached it. Shared memory is a function-local static of the kernel: blocks do not overlap,
// so the threads of the running block share it.
//
// The kernel sees the emulator through EmuState (threadIdx / blockIdx / blockDim / gridDim are
// macros reading it; __syncthreads and __trap call back into the emulator). Failures are
// PluginError(STAX_ERROR_RUNTIME): a trap (an indirect index out of bounds) or threads of a block
// that disagree about barriers (undefined behaviour on a GPU, detected here).
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace stax::cuda {

// The state the emulated kernel reads. Its layout is repeated, as text, in the emulation prelude
// (`struct stax_emu_state`, cuda_printer.cpp): change both together.
struct EmuState {
  struct Dim3 {
    unsigned x, y, z;
  };
  Dim3 thread_idx, block_idx, block_dim, grid_dim;
  void (*sync)(EmuState*);
  void (*trap)(EmuState*);
  void* runtime;
};

// The entry point the emulation compile adds to a kernel: sets the module's state pointer and
// calls the kernel with its buffers.
using EmuEntry = void(EmuState*, void* const*);

class GridEmulator {
 public:
  // stack_bytes: each fiber's stack (kernel frames are small).
  explicit GridEmulator(size_t stack_bytes = 64 << 10);
  ~GridEmulator();
  GridEmulator(const GridEmulator&) = delete;
  GridEmulator& operator=(const GridEmulator&) = delete;

  // Runs `entry` for every thread of a grid x block launch (1-D). Serialised by a mutex.
  void launch(EmuEntry* entry, void* const* args, unsigned grid, unsigned block,
              const std::string& kernel_name);

 private:
  struct Launch;
  size_t stack_bytes_;
  std::vector<std::unique_ptr<char[]>> stacks_;  // one per thread of the largest block so far
  std::mutex mutex_;
};

}  // namespace stax::cuda
