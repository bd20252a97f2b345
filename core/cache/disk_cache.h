// core/cache: the persistent, crash-safe store of compiled kernels (issue 11; DESIGN.md §4's
// cache_dir). Bytes in, bytes out: it knows nothing of graphs, plugins or LLVM. The driver builds
// the key material (core/driver/kernel_cache.cpp: the canonical kernel description with names
// normalised, the plugin's name, version and library file, the ABI version, the options and the
// plugin's cache identity: compiler version, CPU features / GPU arch) and stores what the
// plugin's kernel_serialize gives.
//
// Layout: <root>/kernels/<32 hex digits>.entry (+ .src, the kernel's source, for inspection).
// The file name is a 128-bit hash of the key material; the entry holds the key material itself,
// compared byte for byte on load, so a hash collision is a miss, never a wrong kernel.
//
// Entry format (little-endian): "STAXKC02", u64 key size, u64 payload size, u64 checksum
// (entry_checksum: hash64 over key and payload), key, payload. The file's size must equal the
// header's. ("STAXKC01", FNV-1a 64, byte at a time: ~25x slower to check, ~0.1 ms of a hit on the
// MLP backward graph; such entries are damaged to this reader and rebuilt.)
//
// Crash safety: an entry is written to "<root>/kernels/.tmp-<pid>-<n>-<file>.part", fsync'ed, renamed
// over the entry (atomic), and the directory fsync'ed. A reader sees a whole entry or none; a
// writer killed mid-write leaves only a temporary file (removed by the next store or clear of a
// process that finds its pid dead). An entry whose magic, size, checksum or key is wrong (torn,
// truncated, zero-length, corrupt) is removed and reported as a miss (the caller compiles and
// stores again). Several processes may use one root at once: every write is its own temporary
// file plus a rename, and the last rename wins (both entries are equal).
//
// Bounded: after a store, when the entries exceed max_bytes, the least recently used ones (by
// mtime, which a hit refreshes) are removed until they fit.
//
// Unwritable root (cannot be created, or not writable): one warning on stderr per root and
// process, and the DiskCache is disabled (load misses, store does nothing).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
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
// The checksum an entry's header holds: hash64 of the payload seeded with hash64 of the key.
uint64_t entry_checksum(std::string_view key, std::string_view payload);
// A 128-bit digest of `bytes` as 32 lowercase hex digits (two independently seeded hash64):
// names entry files; never trusted alone (the key material is compared).
std::string hash128_hex(std::string_view bytes);

// Where and whether the disk cache lives: the config's `cache_dir` / `cache:` and the
// environment. STAX_CACHE_DIR (when set and not empty) overrides cache_dir; STAX_CACHE_DIR=off
// (or `cache: off`) disables the disk cache; STAX_CACHE_MAX_BYTES overrides max_bytes.
struct CacheSettings {
  bool enabled = true;                      // false: no disk cache (in-process caching stays)
  std::optional<std::filesystem::path> dir;  // none: no disk cache
  uint64_t max_bytes = uint64_t(1) << 30;    // 1 GiB

  // The settings for a config's values, with the environment applied.
  static CacheSettings resolve(bool config_enabled,
                               const std::optional<std::filesystem::path>& config_dir);
  bool disk() const { return enabled && dir.has_value(); }
};

struct CacheStats {
  uint64_t entries = 0;  // on disk
  uint64_t bytes = 0;    // of entries and their sources on disk
  // This process (this DiskCache):
  uint64_t hits = 0, misses = 0, stores = 0, corrupt = 0, evicted = 0;
};

class DiskCache {
 public:
  // Creates <root>/kernels when missing. Never throws: an unusable root warns once and
  // disables the cache.
  DiskCache(std::filesystem::path root, uint64_t max_bytes);

  bool usable() const { return usable_; }
  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path entry_path(std::string_view key) const;

  // The payload stored under `key`, or nothing (a miss). A damaged entry is removed (counted
  // in stats().corrupt). A hit refreshes the entry's mtime (LRU).
  std::optional<std::string> load(std::string_view key);
  // Stores `payload` (and `source` beside it) under `key`, then evicts down to max_bytes. Errors
  // (disk full, permissions) are warnings, never exceptions: the cache is an optimisation.
  void store(std::string_view key, std::string_view payload, std::string_view source = {});
  // Removes the entry of `key` (e.g. a payload the plugin rejected).
  void remove(std::string_view key);

  CacheStats stats() const;
  // Removes every entry, source and temporary file under <root>/kernels; returns how many files.
  static uint64_t clear(const std::filesystem::path& root);
  // Entries and bytes on disk under root (no DiskCache needed).
  static CacheStats scan(const std::filesystem::path& root);

  // TESTING ONLY: called by store() after half of the temporary file is written (a test kills
  // the process there).
  std::function<void()> test_after_partial_write;

 private:
  void warn(const std::string& what);
  void evict();

  std::filesystem::path root_, dir_;
  uint64_t max_bytes_;
  bool usable_ = false;
  mutable std::mutex mutex_;
  CacheStats counters_;
};

}  // namespace stax
