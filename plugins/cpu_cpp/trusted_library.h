// dlopen of cpu_cpp's helper libraries (the Clang frontend, clang_frontend.h; the JIT,
// jit_library.h) after the plugins' ownership checks (docs/security.md, "Plugins"): the file and
// its directory must be the user's or root's and writable by no one else (a sticky directory
// excepted). Plain C++, no LLVM.
#pragma once

#include <string>

namespace stax::cpu {

// Loads `file` from the directory of the shared object (or program) holding this code, else from
// `build_path` (the build tree's copy, for tests and tools outside the plugin directory; may be
// null), the first that exists deciding (an untrusted one is an error, not skipped), with
// RTLD_NOW | RTLD_LOCAL, and returns the address of its `entry` symbol. The library stays loaded
// for the life of the process. Null with *error (naming the places searched, the ownership
// problem or the loader's message; an mmap that failed for lack of address space says so).
// `what` names the library in messages ("the Clang frontend").
void* open_trusted_library(const char* file, const char* build_path, const char* entry,
                           const std::string& what, std::string* error);

// The file open_trusted_library(file, build_path, ...) would load, as "PATH SIZE MTIME_NS"
// ("FILE missing" when there is none), without loading it: for the kernel cache's key, so that a
// rebuilt JIT or frontend library never reuses its predecessor's objects (a stat per file).
std::string library_file_identity(const char* file, const char* build_path);

}  // namespace stax::cpu
