// Running long C++ work (a compile) with the GIL released, and Ctrl-C.
//
// A signal reaches Python code only in the main thread, and only when that thread runs Python:
// a compile blocked in C++ would swallow Ctrl-C until it ends. run_interruptible() therefore,
// when called from the main thread, runs the work on a helper thread and waits for it with the
// GIL released, waking every 20 ms to run Python's signal handlers (PyErr_CheckSignals). When a
// handler raises (KeyboardInterrupt for Ctrl-C), the CancellationToken is cancelled, the work
// stops at its next checkpoint (Compiler::compile polls the token between passes and before
// each kernel compile; core/support/cancellation.h) and the handler's exception is raised once
// the helper has finished: no thread is left running, no result half-built. Off the main thread
// the work runs in place with the GIL released (signals are never delivered there).
// The work compiles; it must not run kernels: on the helper thread a parallel loop would open
// a region of torch's OpenMP runtime on a thread without a team, which starts a second team
// (docs/torch_backend.md "Threads"). Callers run the compiled graph afterwards, in place.
#pragma once

#include <nanobind/nanobind.h>

#include <functional>

#include "core/support/cancellation.h"

namespace stax::python {

namespace nb = nanobind;

// Runs `work` as described above. `token` must be reset by the caller before; it is the one the
// work polls. Rethrows the work's exception, or raises the signal handler's.
void run_interruptible(CancellationToken& token, const std::function<void()>& work);

}  // namespace stax::python
