// The cpu_cpp JIT's part of the kernel-cache key, computed without LLVM (issue 27: a process whose
// kernels all come from the cache never maps libLLVM; DECISIONS item 54).
//
// It holds everything besides the kernel's source that decides the object code ClangJit makes:
// LLVM's version and host triple (compile-time constants of this build: the plugin's file is in
// the key too, so another LLVM means another plugin file), the options (opt level, native_cpu,
// driver flags), the fixed code generation choices (small code model, PIC, no unwind tables,
// SLEEF vector variants) and, for -march=native, the host CPU as CPUID reports it: the vendor,
// family/model/stepping and the feature leaves LLVM's host detection reads (sys::getHostCPUName
// and getHostCPUFeatures are functions of these and of XCR0), so equal CPUID means equal
// -target-cpu and -target-feature flags. Per-core fields (APIC ids, cache topology) are left out.
#pragma once

#include <string>

namespace stax::cpu {

struct ClangJitOptions;

// Cheap (a few CPUID instructions); the same string in every process of this build on this
// kind of CPU with these options. Empty on a host without CPUID (not x86): the caller then asks
// the JIT (ClangJit::identity, which needs LLVM).
std::string jit_identity(const ClangJitOptions& options);

}  // namespace stax::cpu
