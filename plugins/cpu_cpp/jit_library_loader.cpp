// jit_library(): cpu_cpp_jit.so, loaded by the first compile that needs the JIT (jit_library.h).
// Part of the plugin: no LLVM here.
#include <string>

#include "plugins/cpu_cpp/jit_library.h"
#include "plugins/cpu_cpp/trusted_library.h"

#ifndef STAX_CPU_JIT_FILE
#define STAX_CPU_JIT_FILE "cpu_cpp_jit.so"
#endif

namespace stax::cpu {

namespace {

struct Loaded {
  const JitLibraryApi* api = nullptr;
  std::string error;
};

Loaded load() {
  Loaded out;
#ifdef STAX_CPU_JIT_BUILD_PATH
  const char* build_path = STAX_CPU_JIT_BUILD_PATH;
#else
  const char* build_path = nullptr;
#endif
  void* entry = open_trusted_library(STAX_CPU_JIT_FILE, build_path, "stax_cpu_jit_api",
                                     "the cpu_cpp JIT", &out.error);
  if (!entry) return out;
  using Entry = const JitLibraryApi* (*)();
  const JitLibraryApi* api = reinterpret_cast<Entry>(entry)();
  if (!api || api->size != sizeof(JitLibraryApi)) {
    out.error = std::string(STAX_CPU_JIT_FILE) +
                " is not the JIT of this build of cpu_cpp (its interface has another size)";
    return out;
  }
  out.api = api;
  return out;
}

}  // namespace

const JitLibraryApi* jit_library(std::string* error) {
  static const Loaded l = load();  // once per loaded plugin, thread-safe
  if (!l.api && error) *error = l.error;
  return l.api;
}

std::string jit_library_files_identity() {
#ifdef STAX_CPU_JIT_BUILD_PATH
  const char* jit_build = STAX_CPU_JIT_BUILD_PATH;
#else
  const char* jit_build = nullptr;
#endif
#ifdef STAX_CPU_CLANG_FRONTEND_BUILD_PATH
  const char* frontend_build = STAX_CPU_CLANG_FRONTEND_BUILD_PATH;
#else
  const char* frontend_build = nullptr;
#endif
  return library_file_identity(STAX_CPU_JIT_FILE, jit_build) + "; " +
         library_file_identity("cpu_cpp_clang_frontend.so", frontend_build);
}

}  // namespace stax::cpu
