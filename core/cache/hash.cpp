#include "core/cache/hash.h"

#include <cstring>

namespace stax {

namespace {

uint64_t mix64(uint64_t x) {  // the splitmix64 finalizer
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

uint64_t load_u64(const unsigned char* p) {  // little-endian, any alignment: one load
  uint64_t v;
  std::memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  return v;
}

uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

constexpr uint64_t kK1 = 0x9e3779b97f4a7c15ull;  // odd constants with mixed bits
constexpr uint64_t kK2 = 0xc2b2ae3d27d4eb4full;
constexpr uint64_t kK3 = 0x165667b19e3779f9ull;

// One lane's step: the word enters through a multiplication, the rotation spreads the high
// product bits down before the next one.
uint64_t lane_step(uint64_t acc, uint64_t word) { return rotl(acc + word * kK2, 29) * kK1; }

}  // namespace

uint64_t hash64(std::string_view bytes, uint64_t seed) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t n = bytes.size();
  uint64_t a = seed + kK1, b = seed ^ kK2, c = seed + kK3, d = seed - kK1;
  while (n >= 32) {  // four independent chains: the multiplications overlap
    a = lane_step(a, load_u64(p));
    b = lane_step(b, load_u64(p + 8));
    c = lane_step(c, load_u64(p + 16));
    d = lane_step(d, load_u64(p + 24));
    p += 32;
    n -= 32;
  }
  uint64_t h = mix64(a) ^ rotl(mix64(b), 16) ^ rotl(mix64(c), 32) ^ rotl(mix64(d), 48);
  h ^= static_cast<uint64_t>(bytes.size()) * kK3;
  for (; n >= 8; p += 8, n -= 8) h = lane_step(h, load_u64(p));
  for (; n > 0; ++p, --n) h = rotl(h ^ (*p * kK3), 23) * kK1;
  return mix64(h);
}

uint64_t fnv1a64(std::string_view bytes, uint64_t seed) {
  uint64_t h = seed;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string hash128_hex(std::string_view bytes) {
  uint64_t a = hash64(bytes, 0x84222325cbf29ce4ull);
  uint64_t b = hash64(bytes, 0x2545f4914f6cdd1dull);
  static const char* digits = "0123456789abcdef";
  std::string out(32, '0');
  for (int i = 0; i < 16; ++i) {
    out[15 - i] = digits[(a >> (4 * i)) & 15];
    out[31 - i] = digits[(b >> (4 * i)) & 15];
  }
  return out;
}

}  // namespace stax
