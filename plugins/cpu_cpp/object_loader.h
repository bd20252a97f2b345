// stax::cpu::ObjectLoader: links a relocatable object made by ClangJit (x86-64 ELF, the small
// code model, position independent) into this process without LLVM (issue 27, "a cached compile
// under 10 ms": a kernel-cache hit no longer maps libLLVM, ~12.5 ms of the dynamic loader per
// process; DECISIONS item 54, docs/kernel_cache.md).
//
// What it does is what JITLink does for these objects, no more: each allocated section is copied
// into a SlabArena (slab_arena.h: code in the read-execute view, constants in the read-only view,
// writable data in pages of its own), a GOT entry is made for every symbol a GOTPCREL relocation
// names and a stub (`jmp *GOT(%rip)`) for every external a call or PC-relative reference names,
// the relocations are applied through the read-write view, and external symbols resolve in the
// process (dlsym(RTLD_DEFAULT): libm, libc, SLEEF once loaded with RTLD_GLOBAL). All pieces of
// one object come from one chunk, so 32-bit PC-relative references reach each other.
//
// It accepts only what it understands: ELF64 little-endian ET_REL for x86-64; allocated sections
// of type PROGBITS, NOBITS, NOTE and X86_64_UNWIND (copied, never registered: kernels never
// throw), INIT/FINI arrays excluded; relocations R_X86_64_NONE, 64, PC32, PLT32,
// PC64, GOTPCREL, GOTPCRELX, REX_GOTPCRELX; no TLS, no common symbols, no static constructors.
// Everything else (another relocation type, a symbol it cannot resolve, a malformed table) is a
// refusal with the reason, never a crash: the caller then links the object with the JIT (which
// knows more) or compiles the kernel again. Every offset and index read is bounds-checked.
//
// Plain C++ (no LLVM), so it lives in the plugin itself. Thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "plugins/cpu_cpp/slab_arena.h"

namespace stax::cpu {

// One linked object: the address of its entry symbol; the code stays mapped while `owner` lives.
struct LoadedObject {
  void* entry = nullptr;
  std::shared_ptr<void> owner;
};

class ObjectLoader {
 public:
  // sleef_library: dlopen'ed (RTLD_NOW | RTLD_GLOBAL) by init() so that kernels' Sleef_* calls
  // resolve, as ClangJit does; empty: none.
  explicit ObjectLoader(std::string sleef_library = "libsleef.so.3");
  ~ObjectLoader();
  ObjectLoader(const ObjectLoader&) = delete;
  ObjectLoader& operator=(const ObjectLoader&) = delete;

  // Maps the arena and loads SLEEF. Empty when the loader can be used, else why not (not an
  // x86-64 host, no memfd_create): every load() then refuses.
  const std::string& init();

  // Links `object` and looks up its global function `entry`. Empty with *out set, or the reason
  // it refuses (nothing stays linked then).
  std::string load(std::string_view object, std::string_view entry, LoadedObject* out);

  // The arena's statistics (tests: freed objects give their pieces back).
  SlabStats stats() const;

 private:
  std::string sleef_library_;
  std::string init_error_;
  bool initialized_ = false;
  std::shared_ptr<SlabArena> arena_;  // shared with every LoadedObject::owner
};

}  // namespace stax::cpu
