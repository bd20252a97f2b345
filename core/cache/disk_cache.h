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
// Entry format (little-endian): "STAXKC03", u64 key size, u64 payload size, the 16-byte MAC, key,
// payload. The MAC is SipHash-2-4-128 (core/cache/siphash.h) under the directory's per-user key
// (<root>/cache.key, core/cache/cache_dir.h) over the magic, both sizes, the key and the payload:
// it detects damage as a checksum would, and an entry written by anyone who cannot read the key
// fails it (defence in depth behind the ownership checks). The file's size must equal the
// header's. Entries of older formats ("STAXKC02": an unkeyed checksum) are damaged to this reader
// and rebuilt.
//
// Trust (docs/security.md): CacheDir checks that the root and <root>/kernels are the user's and
// writable by nobody else, and creates them 0700; a directory that fails is not used (one
// warning; the in-memory cache stays). Every file is opened relative to the kernels directory's
// descriptor with O_NOFOLLOW | O_NONBLOCK and must be a regular file owned by the user (fstat):
// a symbolic link, a FIFO or another user's file under an entry's name is skipped (a miss, never
// opened for reading past the check, never followed), and a store replaces it by rename. Entries
// and temporary files are created 0600. Eviction and clear() remove names with unlinkat, which
// never follows a link.
//
// Crash safety: an entry is written to "<root>/kernels/.tmp-<pid>-<n>-<file>.part", fsync'ed, renamed
// over the entry (atomic), and the directory fsync'ed. A reader sees a whole entry or none; a
// writer killed mid-write leaves only a temporary file (removed by the next store or clear of a
// process that finds its pid dead). An entry whose magic, size, MAC or key is wrong (torn,
// truncated, zero-length, corrupt, forged) is removed and reported as a miss (the caller compiles
// and stores again). Several processes may use one root at once: every write is its own
// temporary file plus a rename, and the last rename wins (both entries are equal).
//
// Bounded: after a store, when the entries exceed max_bytes, the least recently used ones (by
// mtime, which a hit refreshes) are removed until they fit.
//
// Unusable root (cannot be created, not writable, or failing the trust checks): one warning on
// stderr per root and process, and the DiskCache is disabled (load misses, store does nothing).
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "core/cache/cache_dir.h"
#include "core/cache/hash.h"

namespace stax {

// Where and whether the disk cache lives: the config's `cache_dir` / `cache:` and the
// environment. STAX_CACHE_DIR (when set and not empty) overrides cache_dir; STAX_CACHE_DIR=off
// (or `cache: off`) disables the disk cache; STAX_CACHE_MAX_BYTES overrides max_bytes: a positive
// whole number of bytes, optionally with a K, M or G suffix (powers of 1024); anything else
// (-5, 0, 1.5G, 12X, more than 2^64 - 1) is a stax::Error naming the variable.
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
  uint64_t skipped = 0;  // names that were not the user's regular files (links, FIFOs, others')
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
  // in stats().corrupt); a name that is not the user's regular file is skipped (stats().skipped).
  // A hit refreshes the entry's mtime (LRU). `why`, when given, is set on a miss that was not
  // simply an absent entry (for STAX_CACHE_TRACE), e.g. "skipped: ... is a FIFO".
  std::optional<std::string> load(std::string_view key, std::string* why = nullptr);
  // Stores `payload` (and `source` beside it) under `key`, then evicts down to max_bytes. Errors
  // (disk full, permissions) are warnings, never exceptions: the cache is an optimisation.
  void store(std::string_view key, std::string_view payload, std::string_view source = {});
  // Removes the entry of `key` (e.g. a payload the plugin rejected).
  void remove(std::string_view key);

  CacheStats stats() const;
  // Removes every entry, source and orphaned temporary file under <root>/kernels (names only:
  // unlinkat never follows a link); returns how many. Throws stax::Error (stage "cache") when
  // the directory fails the trust checks (a link, another user's, writable by others): nothing
  // is removed then. A root that does not exist has nothing to clear.
  static uint64_t clear(const std::filesystem::path& root);
  // Entries and bytes on disk under root (no DiskCache needed): regular files only, never
  // following a link. Throws stax::Error as clear() does.
  static CacheStats scan(const std::filesystem::path& root);

  // The bytes of an entry file for `key` and `payload` under this cache's MAC key (what store()
  // writes), and an entry file's key and payload without any check (nothing when it is too
  // short): for tests and tools that edit entries.
  std::string encode_entry(std::string_view key, std::string_view payload) const;
  static std::optional<std::pair<std::string, std::string>> entry_fields(std::string_view file);

  // TESTING ONLY: called by store() after half of the temporary file is written (a test kills
  // the process there).
  std::function<void()> test_after_partial_write;

 private:
  void warn(const std::string& what);
  void evict();
  std::array<uint64_t, 2> mac(std::string_view key, std::string_view payload) const;
  bool write_atomically(const std::string& name, std::string_view bytes, bool hook);

  std::filesystem::path root_, dir_;
  uint64_t max_bytes_;
  bool usable_ = false;
  CacheDir cache_dir_;
  mutable std::mutex mutex_;
  CacheStats counters_;
};

}  // namespace stax
