// cpu_cpp's JIT (ClangJit: Clang, LLVM, ORC) as a library of its own, cpu_cpp_jit.so beside the
// plugin, loaded by the first compile that needs it (issue 27, "a cached compile under 10 ms";
// DECISIONS item 54). The plugin itself links neither libLLVM nor libclang-cpp: a kernel-cache
// hit is linked by the plugin's ObjectLoader (object_loader.h) and the cache identity is
// jit_identity.h's, so a process whose kernels all come from the cache never maps libLLVM
// (12.5 ms of the dynamic loader per process). A miss, an object the loader refuses, or
// STAX_CPU_LOADER=off loads this library (after the ownership checks of docs/security.md, as for
// the Clang frontend) and goes through ClangJit as before.
//
// The table below is the library's whole interface; no C++ exception crosses it (a failure comes
// back as a code and a message) and its modules are opaque handles.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stax/sdk/types.hpp"

namespace stax::cpu {

struct ClangJitOptions;

struct JitLibraryApi {
  uint32_t size;  // sizeof(JitLibraryApi) as the library was built: checked by the loader
  // A ClangJit; null with *code and *error on failure.
  void* (*create)(const ClangJitOptions& options, StaxErrorCode* code, std::string* error);
  void (*destroy)(void* jit);
  // ClangJit::compile of `source`, looking up `symbol`: a module, or null with code and error.
  void* (*compile)(void* jit, std::string_view source, const std::string& symbol,
                   const std::string& name, StaxErrorCode* code, std::string* error);
  // ClangJit::load_objects: objects[i] with symbol `symbol`, named names[i]; all or nothing:
  // true with one module per object in *modules, or false with code and error.
  bool (*load_objects)(void* jit, const std::vector<std::string_view>& objects,
                       const std::string& symbol, const std::vector<std::string>& names,
                       std::vector<void*>* modules, StaxErrorCode* code, std::string* error);
  std::string (*identity)(void* jit);
  // A module's asked-for symbol, its object file; free_module frees its code.
  void* (*module_symbol)(void* module);
  const std::string& (*module_object)(void* module);
  void (*free_module)(void* module);
};

// The library, loaded on first use (jit_library_loader.cpp): cpu_cpp_jit.so from the directory of
// the plugin, else the build tree's copy. The file and its directory must be the user's or root's
// and writable by no one else. Thread-safe. Null with *error naming the places searched when it is
// missing, untrusted or not a JIT library of this build.
const JitLibraryApi* jit_library(std::string* error);

// The files of the JIT library and of the Clang frontend it loads, as trusted_library.h's
// library_file_identity: part of the kernel cache's key (a rebuilt JIT never reuses objects of
// its predecessor), without loading either.
std::string jit_library_files_identity();

}  // namespace stax::cpu
