// The directory of the disk cache, opened and checked before anything in it is trusted
// (docs/security.md, "The kernel cache"). Another local user must not be able to plant, change
// or delete entries, so:
//   * a missing root is created with its missing parents, each 0700;
//   * the root and <root>/kernels must be directories owned by the effective uid and not
//     writable by group or others (core/support/file_trust.h; OpenSSH's StrictModes, pip's
//     cache); <root>/kernels is opened with O_NOFOLLOW, so a symbolic link there is refused;
//   * both stay open: every later open, rename, unlink and stat of an entry is relative to the
//     kernels directory's descriptor (openat & co.), so replacing a directory on the path later
//     changes nothing;
//   * <root>/cache.key holds the per-user MAC key (16 random bytes, mode 0600, owned by the user,
//     readable by nobody else), created on first use.
// A directory that fails a check is not used: the caller warns once and keeps only its
// in-memory cache.
#pragma once

#include <filesystem>
#include <string>

#include "core/cache/siphash.h"

namespace stax {

class CacheDir {
 public:
  CacheDir() = default;
  ~CacheDir();
  CacheDir(CacheDir&& other) noexcept;
  CacheDir& operator=(CacheDir&& other) noexcept;
  CacheDir(const CacheDir&) = delete;
  CacheDir& operator=(const CacheDir&) = delete;

  // Opens and checks <root> and <root>/kernels; `create`: makes what is missing (0700), and the
  // MAC key. Never throws: problem() says why the directory is not usable.
  static CacheDir open(const std::filesystem::path& root, bool create);

  bool ok() const { return problem_.empty(); }
  // Why the directory is not usable, naming the path, e.g. "/tmp/c is owned by uid 1001, not by
  // you (uid 1000)"; empty when it is.
  const std::string& problem() const { return problem_; }
  // Not usable because the root or <root>/kernels does not exist (opened without `create`).
  bool missing() const { return missing_; }
  // The kernels directory's descriptor (-1 when !ok()).
  int kernels_fd() const { return kernels_fd_; }
  // The MAC key (valid when ok() and the directory was opened with `create`).
  const SipKey& key() const { return key_; }
  bool has_key() const { return has_key_; }

 private:
  void open_into(const std::filesystem::path& root, bool create);
  void fail(std::string why);
  void load_or_create_key(const std::filesystem::path& root);

  int root_fd_ = -1;
  int kernels_fd_ = -1;
  SipKey key_{};
  bool has_key_ = false;
  bool missing_ = false;
  std::string problem_ = "not opened";
};

// Creates `dir` and its missing parents, each new one with mode 0700 (existing ones are left as
// they are). False with errno set on failure.
bool create_private_directories(const std::filesystem::path& dir);

}  // namespace stax
