// The cache's unkeyed hashes: fast, not cryptographic. They name entry files (hash128_hex) and
// nothing trusts them alone: an entry's stored key material is compared byte for byte, and its
// integrity and origin are checked by a keyed MAC (core/cache/siphash.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace stax {

// FNV-1a 64, a byte at a time (kept for callers outside the cache; the cache uses hash64).
uint64_t fnv1a64(std::string_view bytes, uint64_t seed = 0xcbf29ce484222325ull);
// A fast 64-bit hash (not cryptographic): four independent multiply-rotate lanes over 32-byte
// stripes, the tail a word or a byte at a time, every lane and the length mixed at the end. Every
// input bit reaches the result through a multiplication and the splitmix64 finalizer; ~6 bytes
// per cycle where FNV-1a does one byte in ~4 cycles.
uint64_t hash64(std::string_view bytes, uint64_t seed = 0);
// A 128-bit digest of `bytes` as 32 lowercase hex digits (two independently seeded hash64):
// names entry files; never trusted alone (the key material is compared).
std::string hash128_hex(std::string_view bytes);

}  // namespace stax
