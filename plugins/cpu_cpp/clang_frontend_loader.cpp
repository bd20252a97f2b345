// clang_frontend(): cpu_cpp_clang_frontend.so, loaded by the first compile that needs Clang
// (clang_frontend.h). Part of stax_cpu_jit: no Clang header, no libclang-cpp dependency.
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "plugins/cpu_cpp/clang_frontend.h"
#include "plugins/cpu_cpp/clang_jit.h"

#ifndef STAX_CPU_CLANG_FRONTEND_FILE
#define STAX_CPU_CLANG_FRONTEND_FILE "cpu_cpp_clang_frontend.so"
#endif

namespace stax::cpu {

namespace {

namespace fs = std::filesystem;

// Why `path` may not be trusted with dlopen (its constructors run): empty when it is a regular
// file (or, for `directory`, a directory) owned by the user or root and writable by no one else.
// Follows links: the caller checks the canonical path and the directory that holds it.
std::string trust_problem(const fs::path& path, bool directory) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return path.string() + ": " + std::strerror(errno);
  if (directory ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))
    return path.string() + " is not a " + (directory ? "directory" : "regular file");
  if (st.st_uid != ::geteuid() && st.st_uid != 0)
    return path.string() + " is owned by uid " + std::to_string(st.st_uid) + ", not by you (uid " +
           std::to_string(::geteuid()) + ") or root";
  // A sticky directory writable by others (/tmp) lets no one else replace the user's file.
  const bool sticky_ok = directory && (st.st_mode & S_ISVTX);
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !sticky_ok)
    return path.string() + " is writable by others";
  return "";
}

// The directory of the shared object (or program) that holds this code.
fs::path own_directory() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&own_directory), &info) == 0 || !info.dli_fname ||
      !info.dli_fname[0])
    return {};
  std::error_code ec;
  fs::path p = fs::canonical(info.dli_fname, ec);
  return ec ? fs::path() : p.parent_path();
}

struct Loaded {
  const ClangFrontendApi* api = nullptr;
  std::string error;  // why api is null
};

// dlopen of one candidate; null with *error when it is untrusted or not a frontend of this build.
const ClangFrontendApi* open_frontend(const fs::path& candidate, std::string* error) {
  std::error_code ec;
  fs::path real = fs::canonical(candidate, ec);
  if (ec) {
    *error = candidate.string() + ": " + ec.message();
    return nullptr;
  }
  std::string why = trust_problem(real, false);
  if (why.empty()) why = trust_problem(real.parent_path(), true);
  if (!why.empty()) {
    *error = "refusing to load the Clang frontend: " + why + " (docs/security.md)";
    return nullptr;
  }
  // RTLD_LOCAL: its symbols (one exported) stay its own; RTLD_NOW: a missing libclang-cpp fails
  // here, not in the middle of a compile.
  void* handle = ::dlopen(real.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* e = ::dlerror();
    *error = "cannot load " + real.string() + ": " + (e ? e : "dlopen failed");
    // The dynamic loader's words for an mmap that failed with ENOMEM (`ulimit -v` smaller than
    // libclang-cpp's ~100 MB): said as the plugin loader says it (core/backend/plugin_loader.cpp).
    if (error->find("failed to map segment") != std::string::npos ||
        error->find("Cannot allocate memory") != std::string::npos)
      *error += " (out of memory: the address space left cannot map the library)";
    return nullptr;
  }
  using Entry = const ClangFrontendApi* (*)();
  auto entry = reinterpret_cast<Entry>(::dlsym(handle, "stax_cpu_clang_frontend_api"));
  const ClangFrontendApi* api = entry ? entry() : nullptr;
  if (!api || api->size != sizeof(ClangFrontendApi)) {
    *error = real.string() + " is not the Clang frontend of this build of cpu_cpp (" +
             (api ? "its interface has another size" : "no stax_cpu_clang_frontend_api") + ")";
    ::dlclose(handle);
    return nullptr;
  }
  return api;  // the library stays loaded for the life of the process (modules hold its code)
}

Loaded load() {
  std::vector<fs::path> candidates;
  if (fs::path dir = own_directory(); !dir.empty())
    candidates.push_back(dir / STAX_CPU_CLANG_FRONTEND_FILE);
#ifdef STAX_CPU_CLANG_FRONTEND_BUILD_PATH
  candidates.push_back(STAX_CPU_CLANG_FRONTEND_BUILD_PATH);  // tests and tools in the build tree
#endif
  Loaded out;
  std::string searched;
  for (const fs::path& c : candidates) {
    std::error_code ec;
    if (!fs::exists(c, ec)) {
      searched += "\n  " + c.string() + " (not there)";
      continue;
    }
    std::string error;
    out.api = open_frontend(c, &error);
    if (!out.api) out.error = error;
    return out;  // the first that exists decides: an untrusted one is an error, not skipped
  }
  out.error = "the Clang frontend library " STAX_CPU_CLANG_FRONTEND_FILE
              " was not found; searched:" + (searched.empty() ? std::string(" nothing") : searched);
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
