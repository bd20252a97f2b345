#include "core/backend/elf_check.h"

#include <elf.h>

#include <cstring>
#include <fstream>
#include <vector>

namespace stax {

namespace {

std::string past_end(const std::string& what, uint64_t end, uint64_t size) {
  return what + " ends at byte " + std::to_string(end) + ", past the end of the file (" +
         std::to_string(size) + " bytes)";
}

// offset + count * entry_size, or UINT64_MAX when it overflows.
uint64_t table_end(uint64_t offset, uint64_t count, uint64_t entry_size) {
  uint64_t bytes = 0, end = 0;
  if (__builtin_mul_overflow(count, entry_size, &bytes) ||
      __builtin_add_overflow(offset, bytes, &end))
    return UINT64_MAX;
  return end;
}

}  // namespace

std::string elf_shared_object_problem(const std::filesystem::path& path) {
  std::error_code ec;
  uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) return "cannot read the file size: " + ec.message();
  std::ifstream in(path, std::ios::binary);
  Elf64_Ehdr eh;
  if (!in.read(reinterpret_cast<char*>(&eh), sizeof eh))
    return "the file (" + std::to_string(size) + " bytes) is shorter than an ELF header";
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) return "no ELF magic number";
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
    return "not a 64-bit little-endian ELF file";
  if (eh.e_type != ET_DYN) return "not an ELF shared object (e_type " + std::to_string(eh.e_type) + ")";
#if defined(__x86_64__)
  if (eh.e_machine != EM_X86_64)
    return "built for another machine (e_machine " + std::to_string(eh.e_machine) + ")";
#elif defined(__aarch64__)
  if (eh.e_machine != EM_AARCH64)
    return "built for another machine (e_machine " + std::to_string(eh.e_machine) + ")";
#endif
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0)
    return "no valid program header table";
  uint64_t ph_end = table_end(eh.e_phoff, eh.e_phnum, eh.e_phentsize);
  if (ph_end > size) return past_end("the program header table", ph_end, size);
  if (eh.e_shnum != 0) {
    uint64_t sh_end = table_end(eh.e_shoff, eh.e_shnum, eh.e_shentsize);
    if (sh_end > size) return past_end("the section header table", sh_end, size);
  }
  std::vector<Elf64_Phdr> phs(eh.e_phnum);
  in.seekg(static_cast<std::streamoff>(eh.e_phoff));
  if (!in.read(reinterpret_cast<char*>(phs.data()),
               static_cast<std::streamsize>(phs.size() * sizeof(Elf64_Phdr))))
    return "cannot read the program header table";
  for (size_t i = 0; i < phs.size(); ++i) {
    const Elf64_Phdr& ph = phs[i];
    if (ph.p_type != PT_LOAD && ph.p_type != PT_DYNAMIC) continue;
    uint64_t end = table_end(ph.p_offset, 1, ph.p_filesz);
    if (end > size) return past_end("segment " + std::to_string(i), end, size);
  }
  return "";
}

}  // namespace stax
