// Compiling several kernels on one backend at once (issue 27 item 6): a graph's kernels on the
// machine's cores when the backend allows concurrent compiles (ABI 1.6,
// StaxDeviceProperties.concurrent_compiles), one after the other otherwise.
//
//   std::vector<CompileResult> r = compile_kernels(plugin, descs, compile_threads());
//
// The kernels are independent: each is what Plugin::compile of its description gives, whatever
// ran beside it (the ABI requires it), so the threads change the time, never a result. The
// kernels estimated costliest (compile_cost) start first, so that the last one to finish is a
// small one. STAX_COMPILE_TRACE=1 prints each kernel's thread, start, end and CPU time. Errors:
// every compile runs to its end, then the failure of the first kernel in the given order is
// rethrown (the same error whatever the threads did).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "core/backend/plugin.h"
#include "core/support/cancellation.h"

namespace stax {

struct CompileResult {
  std::unique_ptr<CompiledKernel> kernel;
  double ms = 0;  // the plugin's compile, wall time on its thread
};

// The compile threads of a process: STAX_COMPILE_THREADS when set (a count >= 1; anything else
// is an error naming it), else the CPUs this process may run on (its affinity mask), at most 64.
size_t compile_threads();

// The estimate of a kernel's compile time that orders a batch (largest first), in units of about
// 0.15 ms of cpu_cpp's Clang: a fixed part, the bodies' ops and index expressions, and a large
// part per reduction loop of a column reduction (parallel_compile.cpp says how it was fitted).
size_t compile_cost(const StaxKernelDesc& desc);

// Called on the compiling thread right after kernel i compiled (e.g. to store it on disk while
// other kernels still compile); it must be safe to call from several threads at once, and what
// it throws is ignored.
using CompiledHook = std::function<void(size_t i, const CompiledKernel& kernel)>;

// Compiles descs[i] into result[i] on up to `threads` threads (the calling thread among them)
// when plugin.properties().concurrent_compiles, else on the calling thread in order; `hook`
// (optional) sees each kernel as soon as it is compiled. `cancel` (optional) is polled before
// each compile: once cancelled, no further compile starts, those running finish, and the
// "cancelled before compiling kernel <name>" error is thrown (the first failure in kernel order,
// as any other).
std::vector<CompileResult> compile_kernels(const Plugin& plugin,
                                           const std::vector<const StaxKernelDesc*>& descs,
                                           size_t threads, const CompiledHook& hook = {},
                                           const CancellationToken* cancel = nullptr);

}  // namespace stax
