// Headroom checks before work that cannot survive an allocation failure: Clang and LLVM are
// built without exceptions, so a failed allocation inside a compile aborts the process or unwinds
// through half-built objects (a segmentation fault under `ulimit -v`, issue 28 item 6). Before
// the JIT starts, cpu_cpp checks that the address space left holds a generous reserve, and fails
// with a clean "out of memory" error naming the kernel when it does not.
#pragma once

#include <cstddef>
#include <string>

namespace stax::cpu {

// What one compile (or the JIT's creation, or a link of a cached object) may map at most:
// measured, the JIT's creation and the first small kernel of a process map ~4 MB above what the
// loaded libraries hold; 32 MB leaves room for large kernels.
constexpr size_t kJitHeadroomBytes = size_t{32} << 20;

// Throws sdk::PluginError (STAX_ERROR_RUNTIME, "out of memory: ...") when `bytes` of address
// space cannot be mapped now (checked by mapping and unmapping them, no memory touched).
void require_address_space(size_t bytes, const std::string& what);

}  // namespace stax::cpu
