#include "plugins/cpu_cpp/object_check.h"
#include "plugins/cpu_cpp/elf_bytes.h"

#include <elf.h>

#include <cstdint>
#include <cstring>

namespace stax::cpu {

namespace {

#if defined(__x86_64__)
constexpr uint16_t kHostMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr uint16_t kHostMachine = EM_AARCH64;
#else
#error "cpu_cpp's object check knows x86-64 and AArch64 hosts"
#endif

using elf::inside;
using elf::read_at;

}  // namespace

std::string stored_object_problem(std::string_view object, std::string_view entry) {
  const uint64_t size = object.size();
  if (size < sizeof(Elf64_Ehdr)) return "shorter than an ELF header";
  const auto eh = read_at<Elf64_Ehdr>(object, 0);
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) return "not an ELF file";
  if (eh.e_ident[EI_CLASS] != ELFCLASS64) return "not a 64-bit ELF object";
  if (eh.e_ident[EI_DATA] != ELFDATA2LSB) return "not a little-endian ELF object";
  if (eh.e_ident[EI_VERSION] != EV_CURRENT || eh.e_version != EV_CURRENT)
    return "an unknown ELF version";
  if (eh.e_ident[EI_OSABI] != ELFOSABI_SYSV && eh.e_ident[EI_OSABI] != ELFOSABI_GNU)
    return "built for another OS ABI (" + std::to_string(eh.e_ident[EI_OSABI]) + ")";
  if (eh.e_type != ET_REL) return "not a relocatable object (e_type " + std::to_string(eh.e_type) + ")";
  if (eh.e_machine != kHostMachine)
    return "built for another machine (e_machine " + std::to_string(eh.e_machine) +
           ", this process is " + std::to_string(kHostMachine) + ")";
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0)
    return "no valid section header table";
  if (!inside(eh.e_shoff, uint64_t(eh.e_shnum) * sizeof(Elf64_Shdr), size))
    return "its section header table lies past the end of the object";
  auto section = [&](uint64_t i) {
    return read_at<Elf64_Shdr>(object, eh.e_shoff + i * sizeof(Elf64_Shdr));
  };
  for (uint64_t i = 0; i < eh.e_shnum; ++i) {
    const Elf64_Shdr sh = section(i);
    if (sh.sh_type != SHT_NOBITS && sh.sh_type != SHT_NULL && !inside(sh.sh_offset, sh.sh_size, size))
      return "section " + std::to_string(i) + " lies past the end of the object";
  }
  for (uint64_t i = 0; i < eh.e_shnum; ++i) {
    const Elf64_Shdr symtab = section(i);
    if (symtab.sh_type != SHT_SYMTAB) continue;
    if (symtab.sh_entsize != sizeof(Elf64_Sym) || symtab.sh_link >= eh.e_shnum)
      return "a malformed symbol table";
    const Elf64_Shdr strtab = section(symtab.sh_link);
    if (strtab.sh_type != SHT_STRTAB) return "a symbol table without a string table";
    for (uint64_t k = 1; k < symtab.sh_size / sizeof(Elf64_Sym); ++k) {
      const auto sym = read_at<Elf64_Sym>(object, symtab.sh_offset + k * sizeof(Elf64_Sym));
      if (sym.st_name >= strtab.sh_size) continue;
      const char* name = object.data() + strtab.sh_offset + sym.st_name;
      const size_t room = strtab.sh_size - sym.st_name;
      if (strnlen(name, room) != entry.size() || std::memcmp(name, entry.data(), entry.size()) != 0)
        continue;
      const std::string what = "its entry symbol '" + std::string(entry) + "'";
      if (sym.st_shndx == SHN_UNDEF || sym.st_shndx >= eh.e_shnum)
        return what + " is not defined in it";
      if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC) return what + " is not a function";
      if (ELF64_ST_BIND(sym.st_info) != STB_GLOBAL) return what + " is not global";
      const Elf64_Shdr code = section(sym.st_shndx);
      if ((code.sh_flags & SHF_ALLOC) == 0 || (code.sh_flags & SHF_EXECINSTR) == 0 ||
          code.sh_type != SHT_PROGBITS)
        return what + " is not in an executable section";
      if (!inside(sym.st_value, sym.st_size, code.sh_size) || sym.st_size == 0)
        return what + " does not lie inside its section";
      return "";
    }
  }
  return "it does not define its entry symbol '" + std::string(entry) + "'";
}

}  // namespace stax::cpu
