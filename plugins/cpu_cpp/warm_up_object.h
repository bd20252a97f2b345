// The object ClangJit's constructor links once (and frees) so that the first kernel a process
// links does not pay for the linker's first run (warm_up_object.cpp).
#pragma once

#include <string>

namespace stax::cpu {

// A relocatable x86-64 ELF object defining `stax_jit_warm_up` (`jmp memset`). Never called.
std::string warm_up_object();

}  // namespace stax::cpu
