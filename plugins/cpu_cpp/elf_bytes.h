// Bounds-checked reads of an ELF object held as bytes: shared by the stored-object check
// (object_check.cpp) and the plugin's own object loader (object_loader.cpp).
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace stax::cpu::elf {

// offset + size fits in `total` (no overflow).
inline bool inside(uint64_t offset, uint64_t size, uint64_t total) {
  return offset <= total && size <= total - offset;
}

// A T copied out of `bytes` at `offset` (unaligned); the caller checked the extent with inside().
template <class T>
T read_at(std::string_view bytes, uint64_t offset) {
  T v;
  std::memcpy(&v, bytes.data() + offset, sizeof v);
  return v;
}

}  // namespace stax::cpu::elf
