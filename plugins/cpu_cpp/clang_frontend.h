// The Clang half of ClangJit (clang_jit.h): the cc1 command line from the driver, the prelude
// compiled once into a precompiled header held in memory, and C++ source -> optimised LLVM IR.
// Internal to the cpu_cpp plugin (clang_jit.cpp and clang_frontend.cpp include it); no Clang
// header here, LLVM's only by forward declaration.
//
// A library of its own (issue 27, "a cached compile"): clang_frontend.cpp is built into
// cpu_cpp_clang_frontend.so, which alone links libclang-cpp, and ClangJit reaches it through
// clang_frontend() (clang_frontend_loader.cpp), which dlopens it on the first compile that needs
// Clang. A process whose kernels all come from the kernel cache never maps libclang-cpp
// (~5-6 ms of the dynamic loader's relocations and page-ins at start-up, docs/kernel_cache.md).
// The functions below are the library's; the table ClangFrontendApi is how the JIT calls them
// (no C++ exception crosses it: a driver rejection comes back as a message).
//
// Thread safety: compile_to_module may run on several threads at once (each call has its own
// CompilerInstance and LLVMContext); a PreludePch is immutable once built and shared by them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace llvm {
class LLVMContext;
class Module;
}  // namespace llvm

namespace stax::cpu {

struct ClangJitOptions;

// The cc1 arguments (without "-cc1") the driver makes of the options' command line (clang_jit.h
// lists it); -march=native becomes -target-cpu and -target-feature flags. False with *error
// (the driver's diagnostics) when the driver rejects it.
bool build_cc1_args(const ClangJitOptions& options, std::vector<std::string>* args,
                    std::string* error);
// The driver's command line for the options (for messages).
std::vector<std::string> driver_command_line(const ClangJitOptions& options);

// A prelude (the text every kernel source starts with) parsed once and serialised as a
// precompiled header in memory. A source that starts with the prelude is compiled as the PCH
// plus the rest of the source, preceded by a #line directive so that diagnostics keep the line
// numbers of the whole source.
class PreludePch {
 public:
  // Parses `prelude` with `cc1_args` (exactly the arguments kernels are compiled with: a PCH only
  // serves its own options). On failure returns null and sets *error (Clang's diagnostics).
  static std::unique_ptr<PreludePch> build(const std::vector<std::string>& cc1_args,
                                           std::string prelude, std::string* error);
  ~PreludePch();
  PreludePch(const PreludePch&) = delete;
  PreludePch& operator=(const PreludePch&) = delete;

  const std::string& prelude() const { return prelude_; }
  // Whether `source` starts with the prelude (then compile_to_module uses the PCH).
  bool covers(std::string_view source) const;
  // The serialised AST's size in bytes.
  size_t bytes() const;
  // The PCH's files, for compile_to_module (clang_frontend.cpp).
  struct Data;
  const Data& data() const { return *data_; }

 private:
  PreludePch();
  std::string prelude_;
  std::unique_ptr<Data> data_;
};

// Clang: `source` (C++, named `file_name` in diagnostics) -> the optimised module in `context`,
// with `pch` when it covers the source (null: the whole source is parsed). Null on a compile
// error; Clang's diagnostics (warnings too) are appended to *diagnostics either way.
std::unique_ptr<llvm::Module> compile_to_module(const std::vector<std::string>& cc1_args,
                                                std::string_view source,
                                                const std::string& file_name,
                                                const PreludePch* pch, llvm::LLVMContext& context,
                                                std::string* diagnostics);

// The frontend library's entry points (what cpu_cpp_clang_frontend.so's exported
// `stax_cpu_clang_frontend_api` returns).
struct ClangFrontendApi {
  uint32_t size;  // sizeof(ClangFrontendApi) as the library was built: checked by the loader
  bool (*build_cc1_args)(const ClangJitOptions& options, std::vector<std::string>* args,
                         std::string* error);
  // PreludePch::build; null with *error on failure. Freed with free_pch.
  PreludePch* (*build_pch)(const std::vector<std::string>& cc1_args, const std::string& prelude,
                           std::string* error);
  void (*free_pch)(PreludePch* pch);
  std::unique_ptr<llvm::Module> (*compile_to_module)(const std::vector<std::string>& cc1_args,
                                                     std::string_view source,
                                                     const std::string& file_name,
                                                     const PreludePch* pch,
                                                     llvm::LLVMContext& context,
                                                     std::string* diagnostics);
};

// The frontend, loaded on first use (clang_frontend_loader.cpp): cpu_cpp_clang_frontend.so from
// the directory of the library or program that holds this code (the plugin's directory), else
// the build tree's copy. The file and its directory must be the user's or root's and writable by
// no one else (as for plugins, docs/security.md). Thread-safe. A JitError
// (STAX_ERROR_UNAVAILABLE) naming the places searched when it is missing, untrusted or not a
// frontend of this build.
const ClangFrontendApi& clang_frontend();

}  // namespace stax::cpu
