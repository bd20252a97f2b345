#include "core/cache/siphash.h"

#include <cstring>

namespace stax {

namespace {

uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

uint64_t le64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

SipHasher::SipHasher(const SipKey& key, bool wide) : wide_(wide) {
  const uint64_t k0 = le64(key.data()), k1 = le64(key.data() + 8);
  v0_ = k0 ^ 0x736f6d6570736575ull;  // "somepseudorandomlygeneratedbytes"
  v1_ = k1 ^ 0x646f72616e646f6dull;
  v2_ = k0 ^ 0x6c7967656e657261ull;
  v3_ = k1 ^ 0x7465646279746573ull;
  if (wide_) v1_ ^= 0xee;
}

void SipHasher::rounds(int n) {
  for (int i = 0; i < n; ++i) {
    v0_ += v1_;
    v1_ = rotl(v1_, 13);
    v1_ ^= v0_;
    v0_ = rotl(v0_, 32);
    v2_ += v3_;
    v3_ = rotl(v3_, 16);
    v3_ ^= v2_;
    v0_ += v3_;
    v3_ = rotl(v3_, 21);
    v3_ ^= v0_;
    v2_ += v1_;
    v1_ = rotl(v1_, 17);
    v1_ ^= v2_;
    v2_ = rotl(v2_, 32);
  }
}

void SipHasher::compress(uint64_t m) {
  v3_ ^= m;
  rounds(2);
  v0_ ^= m;
}

void SipHasher::update(std::string_view bytes) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t n = bytes.size();
  length_ += n;
  if (tail_size_ > 0) {
    while (n > 0 && tail_size_ < 8) {
      tail_[tail_size_++] = *p++;
      --n;
    }
    if (tail_size_ < 8) return;
    compress(le64(tail_));
    tail_size_ = 0;
  }
  for (; n >= 8; p += 8, n -= 8) compress(le64(p));
  std::memcpy(tail_, p, n);
  tail_size_ = n;
}

uint64_t SipHasher::finish64() {
  uint64_t b = (length_ & 0xff) << 56;
  for (size_t i = 0; i < tail_size_; ++i) b |= uint64_t(tail_[i]) << (8 * i);
  compress(b);
  v2_ ^= wide_ ? 0xee : 0xff;
  rounds(4);
  return v0_ ^ v1_ ^ v2_ ^ v3_;
}

std::array<uint64_t, 2> SipHasher::finish128() {
  std::array<uint64_t, 2> out;
  out[0] = finish64();
  v1_ ^= 0xdd;
  rounds(4);
  out[1] = v0_ ^ v1_ ^ v2_ ^ v3_;
  return out;
}

uint64_t siphash64(const SipKey& key, std::string_view bytes) {
  SipHasher h(key, false);
  h.update(bytes);
  return h.finish64();
}

std::array<uint64_t, 2> siphash128(const SipKey& key, std::string_view bytes) {
  SipHasher h(key, true);
  h.update(bytes);
  return h.finish128();
}

}  // namespace stax
