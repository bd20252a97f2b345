// A minimal relocatable ELF object, built byte by byte (warm_up_object.h).
#include "plugins/cpu_cpp/warm_up_object.h"

#include <elf.h>

#include <cstring>

namespace stax::cpu {

// A minimal relocatable ELF object for x86-64, built byte by byte: `stax_jit_warm_up` is
// `jmp memset` (an R_X86_64_PLT32 relocation against an undefined symbol the process defines).
// The constructor links it (and frees it) once, so that the first kernel a process links does
// not pay for the first run of the linker: the ELF reader, the x86-64 fix-ups, GOT / PLT stubs,
// the lookup of a process symbol, ORC's lookup and materialization and the memory manager (their
// code paged in, their lazily bound calls resolved, their heap in place). Never called.
std::string warm_up_object() {
  const char text[] = {'\xe9', 0, 0, 0, 0};  // jmp rel32
  const char strtab[] = "\0stax_jit_warm_up\0memset";                  // 0, 1, 18
  const char shstrtab[] = "\0.text\0.rela.text\0.symtab\0.strtab\0.shstrtab";  // 1 7 18 26 34
  std::string out(sizeof(Elf64_Ehdr), '\0');
  auto put = [&out](const void* p, size_t n, size_t align) {
    while (out.size() % align) out.push_back('\0');
    const size_t at = out.size();
    out.append(static_cast<const char*>(p), n);
    return at;
  };
  const size_t text_at = put(text, sizeof text, 16);
  Elf64_Rela rela{};
  rela.r_offset = 1;
  rela.r_info = ELF64_R_INFO(2, R_X86_64_PLT32);
  rela.r_addend = -4;
  const size_t rela_at = put(&rela, sizeof rela, 8);
  Elf64_Sym syms[3]{};
  syms[1].st_name = 1;
  syms[1].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
  syms[1].st_shndx = 1;
  syms[1].st_size = sizeof text;
  syms[2].st_name = 18;
  syms[2].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_NOTYPE);
  syms[2].st_shndx = SHN_UNDEF;
  const size_t sym_at = put(syms, sizeof syms, 8);
  const size_t str_at = put(strtab, sizeof strtab, 1);
  const size_t shstr_at = put(shstrtab, sizeof shstrtab, 1);
  Elf64_Shdr sh[6]{};
  auto section = [&](int i, uint32_t name, uint32_t type, uint64_t flags, size_t at, size_t size,
                     uint32_t link, uint32_t info, uint64_t align, uint64_t entsize) {
    sh[i].sh_name = name;
    sh[i].sh_type = type;
    sh[i].sh_flags = flags;
    sh[i].sh_offset = at;
    sh[i].sh_size = size;
    sh[i].sh_link = link;
    sh[i].sh_info = info;
    sh[i].sh_addralign = align;
    sh[i].sh_entsize = entsize;
  };
  section(1, 1, SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, text_at, sizeof text, 0, 0, 16, 0);
  section(2, 7, SHT_RELA, SHF_INFO_LINK, rela_at, sizeof rela, 3, 1, 8, sizeof rela);
  section(3, 18, SHT_SYMTAB, 0, sym_at, sizeof syms, 4, 1, 8, sizeof(Elf64_Sym));
  section(4, 26, SHT_STRTAB, 0, str_at, sizeof strtab, 0, 0, 1, 0);
  section(5, 34, SHT_STRTAB, 0, shstr_at, sizeof shstrtab, 0, 0, 1, 0);
  const size_t sh_at = put(sh, sizeof sh, 8);
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_ident[EI_OSABI] = ELFOSABI_SYSV;
  eh.e_type = ET_REL;
  eh.e_machine = EM_X86_64;
  eh.e_version = EV_CURRENT;
  eh.e_shoff = sh_at;
  eh.e_ehsize = sizeof(Elf64_Ehdr);
  eh.e_shentsize = sizeof(Elf64_Shdr);
  eh.e_shnum = 6;
  eh.e_shstrndx = 5;
  std::memcpy(out.data(), &eh, sizeof eh);
  return out;
}

}  // namespace stax::cpu
