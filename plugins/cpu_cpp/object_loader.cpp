// See object_loader.h.
#include "plugins/cpu_cpp/object_loader.h"
#include "plugins/cpu_cpp/elf_bytes.h"

#include <dlfcn.h>
#include <elf.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <vector>

namespace stax::cpu {

namespace {

using elf::inside;
using elf::read_at;

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// The pieces of one linked object, given back to the arena with the last owner.
struct Linked {
  std::shared_ptr<SlabArena> arena;
  std::vector<SlabArena::Piece> pieces;
  ~Linked() {
    for (const SlabArena::Piece& p : pieces) arena->free(p);
  }
};

// Where a section goes: 0 code (RX view), 1 constants and the GOT (R view), 2 writable data
// (RW view, pages of its own).
enum Group { kCode = 0, kConst = 1, kData = 2, kGroups = 3 };

constexpr size_t kStubBytes = 8;  // jmp *disp32(%rip) (6 bytes) and two int3

}  // namespace

ObjectLoader::ObjectLoader(std::string sleef_library) : sleef_library_(std::move(sleef_library)) {}
ObjectLoader::~ObjectLoader() = default;

const std::string& ObjectLoader::init() {
  if (initialized_) return init_error_;
  initialized_ = true;
#if !defined(__x86_64__)
  init_error_ = "the object loader links x86-64 objects only";
  return init_error_;
#else
  auto arena = std::make_shared<SlabArena>();
  if (!arena->init()) {
    init_error_ = "no code memory for the object loader: " + arena->error();
    return init_error_;
  }
  arena_ = std::move(arena);
  // Kept open for the life of the process, as ClangJit does: linked code holds its addresses.
  // A missing SLEEF is not an error here: an object that calls it is refused at its symbol.
  if (!sleef_library_.empty()) (void)::dlopen(sleef_library_.c_str(), RTLD_NOW | RTLD_GLOBAL);
  return init_error_;
#endif
}

SlabStats ObjectLoader::stats() const { return arena_ ? arena_->stats() : SlabStats{}; }

std::string ObjectLoader::load(std::string_view object, std::string_view entry,
                               LoadedObject* out) {
  *out = LoadedObject{};
  if (!initialized_) init();
  if (!init_error_.empty()) return init_error_;
  const uint64_t size = object.size();
  if (size < sizeof(Elf64_Ehdr)) return "shorter than an ELF header";
  const auto eh = read_at<Elf64_Ehdr>(object, 0);
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_type != ET_REL || eh.e_machine != EM_X86_64)
    return "not an x86-64 ELF64 relocatable object";
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 ||
      !inside(eh.e_shoff, uint64_t(eh.e_shnum) * sizeof(Elf64_Shdr), size))
    return "no valid section header table";
  const size_t nsec = eh.e_shnum;
  std::vector<Elf64_Shdr> sec(nsec);
  for (size_t i = 0; i < nsec; ++i) {
    sec[i] = read_at<Elf64_Shdr>(object, eh.e_shoff + i * sizeof(Elf64_Shdr));
    if (sec[i].sh_type != SHT_NOBITS && sec[i].sh_type != SHT_NULL &&
        !inside(sec[i].sh_offset, sec[i].sh_size, size))
      return "section " + std::to_string(i) + " lies past the end of the object";
  }

  // 1. Which sections are loaded, and where in their group.
  std::vector<int> group(nsec, -1);
  std::vector<uint64_t> offset(nsec, 0);
  uint64_t group_size[kGroups] = {0, 0, 0};
  uint64_t group_align[kGroups] = {16, 8, 8};
  const uint64_t page = arena_->page_size();
  for (size_t i = 0; i < nsec; ++i) {
    const Elf64_Shdr& s = sec[i];
    if (!(s.sh_flags & SHF_ALLOC)) continue;
    if (s.sh_flags & SHF_TLS) return "section " + std::to_string(i) + " is thread-local";
    if (s.sh_type != SHT_PROGBITS && s.sh_type != SHT_NOBITS && s.sh_type != SHT_X86_64_UNWIND &&
        s.sh_type != SHT_NOTE)
      return "section " + std::to_string(i) + " has type " + std::to_string(s.sh_type) +
             " (static constructors or another kind this loader does not link)";
    const int g = (s.sh_flags & SHF_EXECINSTR) ? kCode : (s.sh_flags & SHF_WRITE) ? kData : kConst;
    const uint64_t a = std::max<uint64_t>(1, s.sh_addralign);
    if (a > page || (a & (a - 1))) return "section " + std::to_string(i) + " has alignment " +
                                          std::to_string(a);
    if (s.sh_size > (uint64_t{1} << 28)) return "section " + std::to_string(i) + " is too large";
    group[i] = g;
    offset[i] = align_up(group_size[g], a);
    group_size[g] = offset[i] + s.sh_size;
    group_align[g] = std::max(group_align[g], a);
  }

  // 2. The symbol table.
  size_t symtab_index = 0;
  for (size_t i = 0; i < nsec; ++i)
    if (sec[i].sh_type == SHT_SYMTAB) {
      if (symtab_index) return "more than one symbol table";
      symtab_index = i;
    }
  if (!symtab_index) return "no symbol table";
  const Elf64_Shdr& symtab = sec[symtab_index];
  if (symtab.sh_entsize != sizeof(Elf64_Sym) || symtab.sh_link >= nsec ||
      sec[symtab.sh_link].sh_type != SHT_STRTAB)
    return "a malformed symbol table";
  const Elf64_Shdr& strtab = sec[symtab.sh_link];
  const size_t nsym = symtab.sh_size / sizeof(Elf64_Sym);
  std::vector<Elf64_Sym> syms(nsym);
  for (size_t k = 0; k < nsym; ++k)
    syms[k] = read_at<Elf64_Sym>(object, symtab.sh_offset + k * sizeof(Elf64_Sym));
  auto sym_name = [&](const Elf64_Sym& s) -> std::string {
    if (s.st_name >= strtab.sh_size) return {};
    const char* p = object.data() + strtab.sh_offset + s.st_name;
    return std::string(p, strnlen(p, strtab.sh_size - s.st_name));
  };

  // 3. The relocations: which symbols need a GOT entry, which externals a stub.
  struct RelaSection {
    size_t target;
    uint64_t offset, count;
  };
  std::vector<RelaSection> relas;
  std::map<uint32_t, size_t> got_slot, stub_slot;  // symbol index -> slot
  for (size_t i = 0; i < nsec; ++i) {
    const Elf64_Shdr& s = sec[i];
    if (s.sh_type != SHT_RELA && s.sh_type != SHT_REL) continue;
    if (s.sh_info >= nsec || group[s.sh_info] < 0) continue;  // of a section not loaded
    if (s.sh_type == SHT_REL) return "REL relocations (x86-64 objects use RELA)";
    if (s.sh_link != symtab_index || s.sh_entsize != sizeof(Elf64_Rela))
      return "a malformed relocation section";
    relas.push_back({s.sh_info, s.sh_offset, s.sh_size / sizeof(Elf64_Rela)});
    for (uint64_t k = 0; k < s.sh_size / sizeof(Elf64_Rela); ++k) {
      const auto r = read_at<Elf64_Rela>(object, s.sh_offset + k * sizeof(Elf64_Rela));
      const uint32_t type = ELF64_R_TYPE(r.r_info), si = ELF64_R_SYM(r.r_info);
      if (type == R_X86_64_NONE) continue;
      if (si == 0 || si >= nsym) return "a relocation names symbol " + std::to_string(si);
      if (type == R_X86_64_GOTPCREL || type == R_X86_64_GOTPCRELX ||
          type == R_X86_64_REX_GOTPCRELX) {
        got_slot.emplace(si, got_slot.size());
      } else if (type == R_X86_64_PLT32 && syms[si].st_shndx == SHN_UNDEF) {
        got_slot.emplace(si, got_slot.size());
        stub_slot.emplace(si, stub_slot.size());
      }
    }
  }
  const uint64_t got_offset = align_up(group_size[kConst], 8);
  group_size[kConst] = got_offset + 8 * got_slot.size();
  const uint64_t stub_offset = align_up(group_size[kCode], 16);
  group_size[kCode] = stub_offset + kStubBytes * stub_slot.size();

  // 4. The memory: one chunk for all groups (32-bit PC-relative references reach).
  std::vector<SlabArena::Request> requests;
  std::vector<int> request_group;
  for (int g = 0; g < kGroups; ++g) {
    if (!group_size[g]) continue;
    requests.push_back({static_cast<size_t>(group_size[g]), static_cast<size_t>(group_align[g]),
                        g == kData});
    request_group.push_back(g);
  }
  auto linked = std::make_shared<Linked>();
  linked->arena = arena_;
  char* rw_base[kGroups] = {nullptr, nullptr, nullptr};
  uint64_t exec_base[kGroups] = {0, 0, 0};  // where the group is used: its view's address
  if (!requests.empty()) {
    if (!arena_->allocate_group(requests, &linked->pieces))
      return "no code memory: " + arena_->error();
    for (size_t k = 0; k < requests.size(); ++k) {
      const SlabArena::Piece& p = linked->pieces[k];
      const int g = request_group[k];
      std::memset(p.rw, 0, p.size);
      rw_base[g] = p.rw;
      exec_base[g] = reinterpret_cast<uint64_t>(g == kCode ? p.rx : g == kConst ? p.ro : p.rw);
    }
  }
  for (size_t i = 0; i < nsec; ++i)
    if (group[i] >= 0 && sec[i].sh_type != SHT_NOBITS && sec[i].sh_size)
      std::memcpy(rw_base[group[i]] + offset[i], object.data() + sec[i].sh_offset,
                  sec[i].sh_size);
  auto section_address = [&](size_t i) { return exec_base[group[i]] + offset[i]; };

  // 5. Symbol addresses (externals from the process).
  std::vector<uint64_t> sym_addr(nsym, 0);
  std::vector<char> resolved(nsym, 0);
  auto resolve = [&](uint32_t si, std::string* why) -> bool {
    if (resolved[si]) return true;
    const Elf64_Sym& s = syms[si];
    if (s.st_shndx == SHN_UNDEF) {
      const std::string name = sym_name(s);
      if (name.empty()) {
        *why = "an undefined symbol without a name";
        return false;
      }
      void* addr = ::dlsym(RTLD_DEFAULT, name.c_str());
      if (!addr && ELF64_ST_BIND(s.st_info) != STB_WEAK) {
        *why = "symbol '" + name + "' is not defined in this process";
        return false;
      }
      sym_addr[si] = reinterpret_cast<uint64_t>(addr);
    } else if (s.st_shndx == SHN_ABS) {
      sym_addr[si] = s.st_value;
    } else if (s.st_shndx >= SHN_LORESERVE || s.st_shndx >= nsec || group[s.st_shndx] < 0) {
      *why = "symbol '" + sym_name(s) + "' is in section " + std::to_string(s.st_shndx) +
             ", which is not loaded";
      return false;
    } else {
      if (!inside(s.st_value, 0, sec[s.st_shndx].sh_size)) {
        *why = "symbol '" + sym_name(s) + "' lies outside its section";
        return false;
      }
      sym_addr[si] = section_address(s.st_shndx) + s.st_value;
    }
    resolved[si] = 1;
    return true;
  };
  std::string why;
  for (const auto& [si, slot] : got_slot) {
    if (!resolve(si, &why)) return why;
    const uint64_t v = sym_addr[si];
    std::memcpy(rw_base[kConst] + got_offset + 8 * slot, &v, 8);
  }
  for (const auto& [si, slot] : stub_slot) {
    char* stub = rw_base[kCode] + stub_offset + kStubBytes * slot;
    const uint64_t at = exec_base[kCode] + stub_offset + kStubBytes * slot;
    const int64_t disp = static_cast<int64_t>(exec_base[kConst] + got_offset + 8 * got_slot.at(si)) -
                         static_cast<int64_t>(at + 6);
    if (disp < std::numeric_limits<int32_t>::min() || disp > std::numeric_limits<int32_t>::max())
      return "a stub's GOT entry is out of reach";
    const auto d32 = static_cast<int32_t>(disp);
    stub[0] = static_cast<char>(0xff);
    stub[1] = 0x25;
    std::memcpy(stub + 2, &d32, 4);
    stub[6] = stub[7] = static_cast<char>(0xcc);
  }

  // 6. The relocations, written through the RW view at the addresses of their views.
  for (const RelaSection& rs : relas) {
    const uint64_t target_size = sec[rs.target].sh_size;
    if (sec[rs.target].sh_type == SHT_NOBITS && rs.count) return "relocations in a NOBITS section";
    char* base_rw = rw_base[group[rs.target]] + offset[rs.target];
    const uint64_t base = section_address(rs.target);
    for (uint64_t k = 0; k < rs.count; ++k) {
      const auto r = read_at<Elf64_Rela>(object, rs.offset + k * sizeof(Elf64_Rela));
      const uint32_t type = ELF64_R_TYPE(r.r_info), si = ELF64_R_SYM(r.r_info);
      if (type == R_X86_64_NONE) continue;
      const size_t width = (type == R_X86_64_64 || type == R_X86_64_PC64) ? 8 : 4;
      if (!inside(r.r_offset, width, target_size))
        return "a relocation lies outside its section";
      if (!resolve(si, &why)) return why;
      const uint64_t P = base + r.r_offset;
      const int64_t A = r.r_addend;
      uint64_t S = sym_addr[si];
      char* where = base_rw + r.r_offset;
      auto put32 = [&](int64_t v) -> bool {
        if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
          return false;
        const auto v32 = static_cast<int32_t>(v);
        std::memcpy(where, &v32, 4);
        return true;
      };
      switch (type) {
        case R_X86_64_64: {
          const uint64_t v = S + static_cast<uint64_t>(A);
          std::memcpy(where, &v, 8);
          break;
        }
        case R_X86_64_PC64: {
          const uint64_t v = S + static_cast<uint64_t>(A) - P;
          std::memcpy(where, &v, 8);
          break;
        }
        case R_X86_64_PLT32:
        case R_X86_64_PC32: {
          if (type == R_X86_64_PLT32 && stub_slot.count(si))
            S = exec_base[kCode] + stub_offset + kStubBytes * stub_slot.at(si);
          if (!put32(static_cast<int64_t>(S + static_cast<uint64_t>(A) - P)))
            return "a PC-relative reference to '" + sym_name(syms[si]) + "' is out of reach";
          break;
        }
        case R_X86_64_GOTPCREL:
        case R_X86_64_GOTPCRELX:
        case R_X86_64_REX_GOTPCRELX: {
          const uint64_t G = exec_base[kConst] + got_offset + 8 * got_slot.at(si);
          if (!put32(static_cast<int64_t>(G + static_cast<uint64_t>(A) - P)))
            return "a GOT reference is out of reach";
          break;
        }
        default:
          return "relocation type " + std::to_string(type) + " (this loader does not apply it)";
      }
    }
  }

  // 7. The entry point: a global function defined in a loaded executable section.
  for (size_t k = 1; k < nsym; ++k) {
    const Elf64_Sym& s = syms[k];
    if (ELF64_ST_TYPE(s.st_info) != STT_FUNC || ELF64_ST_BIND(s.st_info) != STB_GLOBAL ||
        s.st_shndx == SHN_UNDEF || s.st_shndx >= nsec || group[s.st_shndx] != kCode)
      continue;
    if (sym_name(s) != entry) continue;
    if (!inside(s.st_value, std::max<uint64_t>(1, s.st_size), sec[s.st_shndx].sh_size))
      return "the entry symbol lies outside its section";
    out->entry = reinterpret_cast<void*>(section_address(s.st_shndx) + s.st_value);
    out->owner = std::move(linked);
    return "";
  }
  return "it does not define the function '" + std::string(entry) + "'";
}

}  // namespace stax::cpu
