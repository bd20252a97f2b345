// SipHash-2-4 (Aumasson and Bernstein, "SipHash: a fast short-input PRF", 2012): a keyed hash
// whose output an attacker without the 128-bit key cannot predict or forge. The disk cache uses
// its 128-bit output as each entry's MAC (core/cache/disk_cache.h), with a per-user random key.
// Written from the paper's specification; tests/security/siphash_test.cpp checks the paper's
// test vectors.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace stax {

using SipKey = std::array<unsigned char, 16>;

// Incremental SipHash-2-4: update() any number of times, then finish64() or finish128() once.
class SipHasher {
 public:
  // wide: the 128-bit variant (its initialisation differs from the 64-bit one's).
  SipHasher(const SipKey& key, bool wide);
  void update(std::string_view bytes);
  uint64_t finish64();
  std::array<uint64_t, 2> finish128();

 private:
  void compress(uint64_t m);
  void rounds(int n);
  uint64_t v0_, v1_, v2_, v3_;
  unsigned char tail_[8];
  size_t tail_size_ = 0;
  uint64_t length_ = 0;
  bool wide_;
};

uint64_t siphash64(const SipKey& key, std::string_view bytes);
std::array<uint64_t, 2> siphash128(const SipKey& key, std::string_view bytes);

}  // namespace stax
