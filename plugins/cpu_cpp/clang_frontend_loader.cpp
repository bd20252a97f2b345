// clang_frontend(): cpu_cpp_clang_frontend.so, loaded by the first compile that needs Clang
// (clang_frontend.h). Part of stax_cpu_jit: no Clang header, no libclang-cpp dependency.
#include <string>

#include "plugins/cpu_cpp/clang_frontend.h"
#include "plugins/cpu_cpp/clang_jit.h"
#include "plugins/cpu_cpp/trusted_library.h"

#ifndef STAX_CPU_CLANG_FRONTEND_FILE
#define STAX_CPU_CLANG_FRONTEND_FILE "cpu_cpp_clang_frontend.so"
#endif

namespace stax::cpu {

namespace {

struct Loaded {
  const ClangFrontendApi* api = nullptr;
  std::string error;  // why api is null
};

Loaded load() {
  Loaded out;
#ifdef STAX_CPU_CLANG_FRONTEND_BUILD_PATH
  const char* build_path = STAX_CPU_CLANG_FRONTEND_BUILD_PATH;  // tests and tools in the build tree
#else
  const char* build_path = nullptr;
#endif
  void* entry = open_trusted_library(STAX_CPU_CLANG_FRONTEND_FILE, build_path,
                                     "stax_cpu_clang_frontend_api", "the Clang frontend",
                                     &out.error);
  if (!entry) return out;
  using Entry = const ClangFrontendApi* (*)();
  const ClangFrontendApi* api = reinterpret_cast<Entry>(entry)();
  if (!api || api->size != sizeof(ClangFrontendApi)) {
    out.error = std::string(STAX_CPU_CLANG_FRONTEND_FILE) +
                " is not the Clang frontend of this build of cpu_cpp (its interface has another "
                "size)";
    return out;
  }
  out.api = api;
  return out;
}

const Loaded& loaded() {
  static const Loaded l = load();  // once per loaded plugin, thread-safe
  return l;
}

}  // namespace

const ClangFrontendApi& clang_frontend() {
  const Loaded& l = loaded();
  if (!l.api) throw JitError(STAX_ERROR_UNAVAILABLE, "", l.error);
  return *l.api;
}

}  // namespace stax::cpu
