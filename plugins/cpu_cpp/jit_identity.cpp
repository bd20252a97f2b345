// See jit_identity.h.
#include "plugins/cpu_cpp/jit_identity.h"

#include <cstdint>
#include <cstdio>

#include "llvm/Config/llvm-config.h"  // macros only (LLVM_VERSION_STRING, LLVM_HOST_TRIPLE)
#include "plugins/cpu_cpp/clang_jit.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace stax::cpu {

namespace {

std::string hex32(uint32_t v) {
  char buf[12];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

// The CPUID leaves LLVM's x86 host detection reads, as hex words (leaf 1's EBX, which holds the
// APIC id, left out; leaf 0's EAX too: only the leaves that exist matter).
std::string cpuid_fingerprint() {
  std::string out;
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return "";
  const unsigned max_leaf = a;
  out += "vendor " + hex32(b) + hex32(d) + hex32(c);
  auto leaf = [&](unsigned l, unsigned sub, bool eax, bool ebx, bool ecx, bool edx) {
    unsigned ra = 0, rb = 0, rc = 0, rd = 0;
    __cpuid_count(l, sub, ra, rb, rc, rd);
    out += " " + hex32(l) + "." + std::to_string(sub) + ":";
    if (eax) out += " " + hex32(ra);
    if (ebx) out += " " + hex32(rb);
    if (ecx) out += " " + hex32(rc);
    if (edx) out += " " + hex32(rd);
  };
  leaf(1, 0, true, false, true, true);
  if (max_leaf >= 7) {
    unsigned ra = 0, rb = 0, rc = 0, rd = 0;
    __cpuid_count(7, 0, ra, rb, rc, rd);
    leaf(7, 0, false, true, true, true);
    if (ra >= 1) leaf(7, 1, true, true, true, true);
  }
  if (max_leaf >= 0xd) leaf(0xd, 1, true, false, false, false);
  if (max_leaf >= 0x14) leaf(0x14, 0, false, true, false, false);
  if (max_leaf >= 0x19) leaf(0x19, 0, false, true, false, false);
  if (max_leaf >= 0x24) leaf(0x24, 0, false, true, false, false);
  __get_cpuid(0x80000000, &a, &b, &c, &d);
  const unsigned max_ext = a;
  if (max_ext >= 0x80000001) leaf(0x80000001, 0, false, false, true, true);
  if (max_ext >= 0x80000008) leaf(0x80000008, 0, false, true, false, false);
  // XCR0: which register states the OS saves (AVX and AVX-512 count only when it does).
  __get_cpuid(1, &a, &b, &c, &d);
  if (c & (1u << 27)) {  // OSXSAVE
    uint32_t lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    out += " xcr0 " + hex32(hi) + hex32(lo);
  }
#endif
  return out;
}

}  // namespace

std::string jit_identity(const ClangJitOptions& options) {
  static const std::string cpu = cpuid_fingerprint();
  if (cpu.empty()) return "";
  std::string out = "llvm " LLVM_VERSION_STRING "; triple " LLVM_HOST_TRIPLE "; opt " +
                    std::to_string(options.opt_level) + "; native_cpu " +
                    (options.native_cpu ? "1" : "0") +
                    "; passes sleef-vector-variants 1; unwind-tables 0; code model small pic 1;"
                    " flags";
  for (const std::string& f : options.extra_flags) out += " " + f;
  out += "; host " + cpu;
  return out;
}

}  // namespace stax::cpu
