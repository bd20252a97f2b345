// See trusted_library.h.
#include "plugins/cpu_cpp/trusted_library.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

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

void* open_one(const fs::path& candidate, const char* entry, const std::string& what,
               std::string* error) {
  std::error_code ec;
  fs::path real = fs::canonical(candidate, ec);
  if (ec) {
    *error = candidate.string() + ": " + ec.message();
    return nullptr;
  }
  std::string why = trust_problem(real, false);
  if (why.empty()) why = trust_problem(real.parent_path(), true);
  if (!why.empty()) {
    *error = "refusing to load " + what + ": " + why + " (docs/security.md)";
    return nullptr;
  }
  // RTLD_LOCAL: its symbols (one exported) stay its own; RTLD_NOW: a missing dependency fails
  // here, not in the middle of a compile.
  void* handle = ::dlopen(real.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* e = ::dlerror();
    *error = "cannot load " + real.string() + ": " + (e ? e : "dlopen failed");
    // The dynamic loader's words for an mmap that failed with ENOMEM (`ulimit -v` smaller than
    // the library's ~100 MB): said as the plugin loader says it (core/backend/plugin_loader.cpp).
    if (error->find("failed to map segment") != std::string::npos ||
        error->find("Cannot allocate memory") != std::string::npos)
      *error += " (out of memory: the address space left cannot map the library)";
    return nullptr;
  }
  void* sym = ::dlsym(handle, entry);
  if (!sym) {
    *error = real.string() + " is not " + what + " of this build of cpu_cpp (no " + entry + ")";
    ::dlclose(handle);
    return nullptr;
  }
  return sym;  // the library stays loaded for the life of the process (modules hold its code)
}

std::vector<fs::path> candidates_for(const char* file, const char* build_path) {
  std::vector<fs::path> candidates;
  if (fs::path dir = own_directory(); !dir.empty()) candidates.push_back(dir / file);
  if (build_path && build_path[0]) candidates.push_back(build_path);
  return candidates;
}

}  // namespace

std::string library_file_identity(const char* file, const char* build_path) {
  for (const fs::path& c : candidates_for(file, build_path)) {
    struct stat st;
    if (::stat(c.c_str(), &st) != 0) continue;
    return c.string() + " " + std::to_string(st.st_size) + " " +
           std::to_string(static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL +
                          st.st_mtim.tv_nsec);
  }
  return std::string(file) + " missing";
}

void* open_trusted_library(const char* file, const char* build_path, const char* entry,
                           const std::string& what, std::string* error) {
  const std::vector<fs::path> candidates = candidates_for(file, build_path);
  std::string searched;
  for (const fs::path& c : candidates) {
    std::error_code ec;
    if (!fs::exists(c, ec)) {
      searched += "\n  " + c.string() + " (not there)";
      continue;
    }
    return open_one(c, entry, what, error);  // the first that exists decides
  }
  *error = what + " library " + file + " was not found; searched:" +
           (searched.empty() ? std::string(" nothing") : searched);
  return nullptr;
}

}  // namespace stax::cpu
