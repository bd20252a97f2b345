// stax::cpu::ClangJit: compiles a C++17 source string in-process with Clang into LLVM IR, then to
// a relocatable object in memory, and JIT-links the object with LLVM ORC (LLJIT); load_object()
// links such an object again (the kernel cache) without Clang. One ClangJit per configuration (opt level, flags); each
// compile() returns a CompiledModule that owns the machine code of that kernel and frees it when
// destroyed.
//
// This header is plain C++ on purpose: the LLVM/Clang headers stay in clang_jit.cpp. It depends on
// the plugin SDK only (sdk/include): failures are JitError, an sdk::PluginError, so that a plugin's
// STAX_DEFINE_PLUGIN boundary turns them into StaxErrors with the right code.
//
// Kernel sources should not #include system headers (<cmath> costs ~200 ms per compile): declare
// what is needed (`extern "C" float expf(float);`) and use clang vector extensions. Functions to
// look up must have C linkage (`extern "C"`). Symbols of the process (libm, the host runtime) and,
// when loaded, of SLEEF (`Sleef_expf16_u10`, ...) resolve from the kernel. Every other external
// definition of a kernel that is not asked for in compile() is made internal, so helper functions
// of two kernels never clash; every module lives in a JITDylib of its own, so asked-for names
// may repeat between modules.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stax/sdk/types.hpp"

namespace stax::cpu {

// What ClangJit throws. code(): STAX_ERROR_COMPILE (the source failed to compile, link or look
// up: the message holds Clang's diagnostics and the numbered source), STAX_ERROR_INVALID_OPTION
// (bad opt_level or driver flags), STAX_ERROR_INVALID_ARGUMENT (misuse of a CompiledModule),
// STAX_ERROR_UNAVAILABLE (no host target / LLJIT). what() is "LOCATION: error: MESSAGE" (or
// "cpu_cpp jit: error: MESSAGE" without a location), like stax::Error.
class JitError : public sdk::PluginError {
 public:
  JitError(StaxErrorCode code, std::string location, std::string message);
  const std::string& stage() const;  // "cpu_cpp jit"
  const std::string& location() const { return location_; }  // "<kernel>.cpp" or empty
  const std::string& message() const { return message_; }

 private:
  std::string location_;
  std::string message_;
};

namespace detail {
struct JitState;  // the driver's cc1 arguments, the LLJIT instance, the mutex (clang_jit.cpp)
}  // namespace detail

// Options of a ClangJit, with their defaults. The driver command line is always
//   clang -x c++ -std=c++17 -c kernel.cpp -O<opt_level> -fno-math-errno -ffp-contract=off
//         -fno-exceptions -fno-rtti -fno-color-diagnostics -fno-asynchronous-unwind-tables
//         -fno-unwind-tables [-march=native] <extra_flags...>
// (-ffp-contract=off: no FMA contraction, so kernels round like the reference interpreter).
struct ClangJitOptions {
  // -O<opt_level> for Clang's pipeline, and the matching LLVM code generation level
  // (0 None, 1 Less, 2 Default, 3 Aggressive). 0..3; anything else is a JitError.
  int opt_level = 3;
  // -march=native (the driver expands it to the host CPU and its exact features). When false,
  // kernels target the triple's baseline CPU (x86-64 without AVX).
  bool native_cpu = true;
  // Appended to the driver command line after the defaults, e.g. {"-DN=4", "-ffast-math"}.
  // An unknown flag is a JitError from the constructor.
  std::vector<std::string> extra_flags;
  // dlopen(sleef_library, RTLD_NOW | RTLD_GLOBAL) in the constructor so that kernels can call
  // Sleef_* functions. A missing library is not an error: sleef_available() is then false.
  bool load_sleef = true;
  std::string sleef_library = "libsleef.so.3";
  // Link kernels into one arena of memfd chunks mapped RW + RX + R (slab_arena.h): a link then
  // makes no mmap / mprotect / munmap and reuses the freed pieces of earlier modules. False, or
  // STAX_JIT_SLAB=off in the environment (for A/B measurements), or a system without
  // memfd_create: LLVM's default manager (an mmap per object).
  bool slab_memory = true;
  // Text that sources handed to compile() start with (cpu_cpp: the kernel prelude, ~21 KB of
  // scalar semantics). It is parsed once, by the first compile of a source that starts with it,
  // into a precompiled header kept in memory; every such source is then compiled as that PCH
  // plus the rest of the source (diagnostics keep the whole source's line numbers). Sources
  // that do not start with it are compiled whole, and so is every source when the PCH fails to
  // build (pch_error() says why). Empty: no PCH.
  std::string prelude;
};

// The JIT's code memory (ClangJit::memory_stats).
struct JitMemoryStats {
  bool slab = false;        // the slab arena is in use (else LLVM's manager: the rest is 0)
  size_t chunks = 0;        // chunks mapped
  size_t mapped_bytes = 0;  // their size (each mapped as RW, RX and R views)
  size_t used_bytes = 0;    // in live modules' segments
  size_t pieces = 0;        // live segments
};

// Wall time of one compile(), in milliseconds.
struct CompileTimes {
  double frontend_ms = 0;  // Clang: parse, IR generation and the -O pipeline
  double jit_ms = 0;       // ORC: code generation, linking, symbol lookup
  double total_ms() const { return frontend_ms + jit_ms; }
};

class ClangJit;

// The machine code of one compiled source. Move-only; destruction (or reset()) removes the code
// from the JIT (ResourceTracker::remove). It keeps the JIT state alive, so it may outlive the
// ClangJit that made it. Not for concurrent use with its own reset()/destruction.
class CompiledModule {
 public:
  CompiledModule();  // empty
  CompiledModule(CompiledModule&& other) noexcept;
  CompiledModule& operator=(CompiledModule&& other) noexcept;
  CompiledModule(const CompiledModule&) = delete;
  CompiledModule& operator=(const CompiledModule&) = delete;
  ~CompiledModule();

  // Address of a symbol asked for in compile(); a JitError for any other name.
  void* address(std::string_view symbol) const;
  // address() as a function pointer: module.function<void(const float*, float*, long)>("k").
  template <class Fn>
  Fn* function(std::string_view symbol) const {
    return reinterpret_cast<Fn*>(reinterpret_cast<std::uintptr_t>(address(symbol)));
  }
  // The asked-for symbols with their addresses, in the order of compile()'s symbol_names.
  const std::vector<std::pair<std::string, void*>>& symbols() const;
  const std::string& name() const;
  // Clang's warnings (and notes) for this source; empty when it compiled cleanly.
  const std::string& diagnostics() const;
  const CompileTimes& times() const;
  // The relocatable object file (ELF) the JIT linked: what a kernel cache stores, and what
  // ClangJit::load_object links again without compiling.
  const std::string& object() const;

  bool empty() const { return impl_ == nullptr; }
  explicit operator bool() const { return impl_ != nullptr; }
  // Frees the machine code now; the module becomes empty.
  void reset();

 private:
  friend class ClangJit;
  struct Impl;
  explicit CompiledModule(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The compiler. The constructor builds the cc1 command line with the Clang driver and creates the
// LLJIT instance (a JitError on failure, e.g. an unknown extra flag). Every member function is
// thread-safe. compile() runs concurrently with other compiles (Clang and code generation on
// the calling thread, each compile with its own Clang instance, LLVM context and target
// machine); only linking into the JIT takes a lock, shared with load_objects() and the removal
// of modules.
class ClangJit {
 public:
  explicit ClangJit(ClangJitOptions options = {});
  ~ClangJit();
  ClangJit(const ClangJit&) = delete;
  ClangJit& operator=(const ClangJit&) = delete;
  ClangJit(ClangJit&&) noexcept = default;  // a moved-from ClangJit may only be destroyed
  ClangJit& operator=(ClangJit&&) noexcept = default;

  // Compiles `source` (C++17) and looks up `symbol_names`. `name` names the kernel in diagnostics
  // ("<name>.cpp:3:7: error: ...") and in the JitError location. A failure (compile error,
  // a missing symbol, a link error) is a JitError (code STAX_ERROR_COMPILE) whose message holds
  // Clang's diagnostics and the source with line numbers. Nothing is printed.
  CompiledModule compile(std::string_view source, const std::vector<std::string>& symbol_names,
                         std::string_view name = "kernel");

  // Links an object file made by compile() (CompiledModule::object(), possibly in another
  // process with an equal identity()) and looks up `symbol_names`, without running Clang. Every
  // module (compiled or loaded) lives in a JITDylib of its own, so one object may be loaded any
  // number of times. A malformed object or a missing symbol is a JitError (STAX_ERROR_COMPILE).
  CompiledModule load_object(std::string_view object, const std::vector<std::string>& symbol_names,
                             std::string_view name = "kernel");

  // One object of load_objects().
  struct ObjectToLoad {
    std::string_view object;                // made by compile(), as for load_object()
    std::vector<std::string> symbol_names;  // to look up; may repeat between the objects
    std::string name;                       // names the kernel in errors
  };
  // load_object() of several objects at once (a graph's kernels found in the kernel cache): one
  // JITDylib for all of them and ONE lookup of all their symbols, so the JIT's per-link session
  // (dylib, lookup, materialization dispatch) is paid once. Each object's asked-for symbols are
  // renamed in its link graph ("<symbol>.<index>"), so equal names in several objects (every
  // cpu_cpp kernel's entry point) do not clash; symbols() and address() use the original names.
  // The i-th module owns the i-th object's code (freed on its destruction; the dylib goes with
  // the last of them); the same object may appear any number of times. All or nothing: a
  // malformed object, a missing symbol or a link error of any object is a JitError
  // (STAX_ERROR_COMPILE) naming the kernels, nothing of the batch stays linked and the JIT
  // stays usable (a caller may then load the objects one by one to find the bad one).
  // times().jit_ms of each module is its share of the batch.
  std::vector<CompiledModule> load_objects(const std::vector<ObjectToLoad>& objects);
  // Everything besides the source that decides compile()'s object code: LLVM's version, the
  // target triple, the options (opt level, native_cpu, flags) and the host CPU's name and
  // features (what -march=native expands to). Cheap: no driver run, computed once.
  std::string identity() const;

  const ClangJitOptions& options() const;
  bool sleef_available() const;
  // Where linked code lives: the slab's chunks and what live modules use of them.
  JitMemoryStats memory_stats() const;
  // The constructor links a tiny object once (and frees it), so that the first kernel linked in
  // a process does not pay for the linker's first run (code paged in, lazy bindings, heap); empty
  // when that link succeeded, else why not (a JIT that could not warm up still works).
  // STAX_JIT_WARM_UP=off in the environment skips it (for A/B measurements).
  const std::string& warm_up_error() const;
  // The cc1 arguments the driver produced (without the leading "clang"/"-cc1"), for dumps. The
  // driver runs on the first compile() (or here), or in the constructor with extra_flags.
  const std::vector<std::string>& cc1_args() const;
  // The host CPU LLVM targets, e.g. "znver5".
  const std::string& target_cpu() const;
  // Why the options' prelude has no precompiled header (its build failed: Clang's message);
  // empty when it has one, when none was asked for, or before the first compile that uses it.
  std::string pch_error() const;
  // Whether the prelude's precompiled header is built (after a compile that used it).
  bool has_pch() const;

 private:
  struct ParsedObjects;  // load_objects' link graphs (clang_jit.cpp)
  ParsedObjects parse_objects(
      const std::vector<ObjectToLoad>& objects,
      const std::function<JitError(const std::string&, const std::string&)>& fail) const;
  std::unique_ptr<CompiledModule::Impl> link_object(
      std::string_view object, const std::vector<std::string>& symbol_names,
      const std::string& kernel_name,
      const std::function<JitError(const std::string&, const std::string&)>& fail);
  std::string compute_identity() const;
  std::shared_ptr<detail::JitState> state_;
};

// "   1 | first line\n   2 | ...": the source as it appears in compile errors.
std::string number_source_lines(std::string_view source);

}  // namespace stax::cpu
