// cpu_cpp's ObjectLoader (plugins/cpu_cpp/object_loader.h): objects made by ClangJit, linked
// without LLVM, compute the same bits as the same objects linked by the JIT; malformed or
// unsupported objects are refused with a reason, never a crash. And the LLVM-free cache identity
// (jit_identity.h).
#include "plugins/cpu_cpp/object_loader.h"

#include <elf.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "plugins/cpu_cpp/clang_jit.h"
#include "plugins/cpu_cpp/jit_identity.h"

namespace stax::cpu {
namespace {

ClangJit& jit() {
  static ClangJit instance = [] {
    ClangJitOptions o;
    o.opt_level = 2;  // cpu_cpp's default
    return ClangJit(o);
  }();
  return instance;
}

ObjectLoader& loader() {
  static ObjectLoader l;
  return l;
}

// Code, constants (a table), a jump table (switch), writable static data, SLEEF's vector expf
// (the vector-variant pass turns the loop's expf into Sleef_expf*), libm calls and memcpy.
const char* kSource = R"(
extern "C" float expf(float);
extern "C" double sin(double);
extern "C" void* memcpy(void*, const void*, unsigned long);
static const float kTable[8] = {0.5f, -1.25f, 3.0f, 7.5f, -0.125f, 2.0f, 9.0f, -4.0f};
static int calls = 0;
static float pick(int k, float v) {
  switch (k & 7) {
    case 0: return v * 3.0f;
    case 1: return v - 1.0f;
    case 2: return v / 7.0f;
    case 3: return -v;
    case 4: return v * v;
    case 5: return v + 11.0f;
    case 6: return v * 0.25f;
    default: return v - 2.5f;
  }
}
extern "C" int stax_entry(const float* x, float* out, long n) {
  for (long i = 0; i < n; ++i) out[i] = expf(x[i]) * kTable[i & 7];
  for (long i = 0; i < n; ++i) out[i] += pick(static_cast<int>(i * 7), x[i]);
  out[0] += static_cast<float>(sin(static_cast<double>(x[1])));
  float tmp[64];
  memcpy(tmp, out, sizeof tmp);
  out[1] = tmp[63] + tmp[2];
  return ++calls;
}
)";

using EntryFn = int(const float*, float*, long);

std::vector<float> inputs(long n) {
  std::vector<float> x(n);
  for (long i = 0; i < n; ++i) x[i] = std::sin(0.37f * i) * 3.0f;
  return x;
}

TEST(ObjectLoader, LinksAJitObjectToTheJitsBits) {
  ASSERT_EQ(loader().init(), "");
  CompiledModule m = jit().compile(kSource, {"stax_entry"}, "loader_case");
  const long n = 1000;
  std::vector<float> x = inputs(n), want(n), got(n);
  EXPECT_EQ(m.function<EntryFn>("stax_entry")(x.data(), want.data(), n), 1);

  LoadedObject loaded;
  ASSERT_EQ(loader().load(m.object(), "stax_entry", &loaded), "");
  ASSERT_NE(loaded.entry, nullptr);
  auto* fn = reinterpret_cast<EntryFn*>(loaded.entry);
  EXPECT_EQ(fn(x.data(), got.data(), n), 1);  // its own static counter, not the JIT's
  EXPECT_EQ(fn(x.data(), got.data(), n), 2);
  EXPECT_EQ(std::memcmp(want.data(), got.data(), n * sizeof(float)), 0);
  EXPECT_TRUE(std::isfinite(got[5]));

  // Twice more (each link its own copy, its own static data); freed pieces go back.
  const SlabStats before = loader().stats();
  {
    LoadedObject a, b;
    ASSERT_EQ(loader().load(m.object(), "stax_entry", &a), "");
    ASSERT_EQ(loader().load(m.object(), "stax_entry", &b), "");
    EXPECT_NE(a.entry, b.entry);
    EXPECT_EQ(reinterpret_cast<EntryFn*>(a.entry)(x.data(), got.data(), n), 1);
    EXPECT_GT(loader().stats().pieces, before.pieces);
  }
  EXPECT_EQ(loader().stats().pieces, before.pieces);
}

// The object's ELF section headers, to damage it in place.
Elf64_Ehdr header(const std::string& o) {
  Elf64_Ehdr eh;
  std::memcpy(&eh, o.data(), sizeof eh);
  return eh;
}
Elf64_Shdr section(const std::string& o, size_t i) {
  Elf64_Shdr sh;
  std::memcpy(&sh, o.data() + header(o).e_shoff + i * sizeof sh, sizeof sh);
  return sh;
}

TEST(ObjectLoader, RefusesWhatItCannotLinkWithAReason) {
  CompiledModule m = jit().compile(kSource, {"stax_entry"}, "loader_refusals");
  const std::string good = m.object();
  LoadedObject out;
  EXPECT_EQ(loader().load("", "stax_entry", &out), "shorter than an ELF header");
  EXPECT_EQ(loader().load(std::string(200, '\x7f'), "stax_entry", &out),
            "not an x86-64 ELF64 relocatable object");
  EXPECT_NE(loader().load(good.substr(0, good.size() / 2), "stax_entry", &out), "");
  EXPECT_EQ(loader().load(good, "no_such_entry", &out),
            "it does not define the function 'no_such_entry'");
  EXPECT_EQ(out.entry, nullptr);

  // Every relocation's type made one the loader does not apply (R_X86_64_TPOFF32: TLS).
  std::string bad_type = good;
  // A relocation pointing past its section.
  std::string bad_offset = good;
  // A relocation naming a symbol past the symbol table.
  std::string bad_symbol = good;
  size_t relocations = 0;
  const Elf64_Ehdr eh = header(good);
  for (size_t i = 0; i < eh.e_shnum; ++i) {
    const Elf64_Shdr sh = section(good, i);
    if (sh.sh_type != SHT_RELA || !(section(good, sh.sh_info).sh_flags & SHF_ALLOC)) continue;
    const uint64_t target_size = section(good, sh.sh_info).sh_size;
    for (uint64_t k = 0; k < sh.sh_size / sizeof(Elf64_Rela); ++k) {
      const size_t at = sh.sh_offset + k * sizeof(Elf64_Rela);
      Elf64_Rela r;
      std::memcpy(&r, good.data() + at, sizeof r);
      Elf64_Rela t = r;
      t.r_info = ELF64_R_INFO(ELF64_R_SYM(r.r_info), R_X86_64_TPOFF32);
      std::memcpy(bad_type.data() + at, &t, sizeof t);
      Elf64_Rela o = r;
      o.r_offset = target_size - 2;
      std::memcpy(bad_offset.data() + at, &o, sizeof o);
      Elf64_Rela s = r;
      s.r_info = ELF64_R_INFO(0x7fffff, ELF64_R_TYPE(r.r_info));
      std::memcpy(bad_symbol.data() + at, &s, sizeof s);
      ++relocations;
    }
  }
  ASSERT_GT(relocations, 0u);
  EXPECT_EQ(loader().load(bad_type, "stax_entry", &out),
            "relocation type " + std::to_string(R_X86_64_TPOFF32) +
                " (this loader does not apply it)");
  EXPECT_EQ(loader().load(bad_offset, "stax_entry", &out), "a relocation lies outside its section");
  EXPECT_EQ(loader().load(bad_symbol, "stax_entry", &out), "a relocation names symbol 8388607");

  // An external the process does not define (libm's sin renamed in the string table): its name
  // is the reason.
  std::string unresolved = good;
  bool renamed = false;
  for (size_t i = 0; i < eh.e_shnum && !renamed; ++i) {
    const Elf64_Shdr sh = section(good, i);
    if (sh.sh_type != SHT_SYMTAB) continue;
    const Elf64_Shdr strtab = section(good, sh.sh_link);
    for (uint64_t k = 1; k < sh.sh_size / sizeof(Elf64_Sym); ++k) {
      Elf64_Sym sym;
      std::memcpy(&sym, good.data() + sh.sh_offset + k * sizeof sym, sizeof sym);
      if (sym.st_shndx != SHN_UNDEF) continue;
      char* name = unresolved.data() + strtab.sh_offset + sym.st_name;
      if (std::string(name) != "sin") continue;
      name[1] = 'j';  // "sjn"
      renamed = true;
    }
  }
  ASSERT_TRUE(renamed);
  EXPECT_EQ(loader().load(unresolved, "stax_entry", &out),
            "symbol 'sjn' is not defined in this process");
  EXPECT_EQ(out.entry, nullptr);
  // Nothing of the refused links stays in the arena.
  EXPECT_EQ(loader().stats().pieces, 0u);
}

TEST(JitIdentity, IsStableAndFollowsTheOptions) {
  ClangJitOptions o;
  const std::string a = jit_identity(o);
#if defined(__x86_64__)
  ASSERT_FALSE(a.empty());
  EXPECT_NE(a.find("llvm "), std::string::npos) << a;
  EXPECT_NE(a.find("vendor "), std::string::npos) << a;
#endif
  EXPECT_EQ(jit_identity(o), a);
  ClangJitOptions p = o;
  p.opt_level = 1;
  EXPECT_NE(jit_identity(p), a);
  ClangJitOptions q = o;
  q.native_cpu = false;
  EXPECT_NE(jit_identity(q), a);
  ClangJitOptions r = o;
  r.extra_flags = {"-DX=1"};
  EXPECT_NE(jit_identity(r), a);
}

}  // namespace
}  // namespace stax::cpu
