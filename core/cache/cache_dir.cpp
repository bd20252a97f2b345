#include "core/cache/cache_dir.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <vector>

#include "core/support/file_trust.h"

namespace fs = std::filesystem;

namespace stax {

namespace {

constexpr const char* kKeyFile = "cache.key";

std::string errno_text() { return std::strerror(errno); }

bool read_exact(int fd, unsigned char* out, size_t size) {
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::read(fd, out + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

bool write_exact(int fd, const unsigned char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool random_bytes(unsigned char* out, size_t size) {
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::getrandom(out + done, size - done, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

bool create_private_directories(const fs::path& dir) {
  std::vector<fs::path> missing;
  for (fs::path p = dir.lexically_normal(); !p.empty(); p = p.parent_path()) {
    struct stat st;
    if (::stat(p.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return false;
      }
      break;
    }
    if (errno != ENOENT) return false;
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it)
    if (::mkdir(it->c_str(), 0700) != 0 && errno != EEXIST) return false;
  return true;
}

CacheDir::~CacheDir() {
  if (kernels_fd_ >= 0) ::close(kernels_fd_);
  if (root_fd_ >= 0) ::close(root_fd_);
}

CacheDir::CacheDir(CacheDir&& o) noexcept
    : root_fd_(o.root_fd_), kernels_fd_(o.kernels_fd_), key_(o.key_), has_key_(o.has_key_),
      missing_(o.missing_), problem_(std::move(o.problem_)) {
  o.root_fd_ = o.kernels_fd_ = -1;
  o.problem_ = "moved from";
}

CacheDir& CacheDir::operator=(CacheDir&& o) noexcept {
  if (this != &o) {
    this->~CacheDir();
    new (this) CacheDir(std::move(o));
  }
  return *this;
}

void CacheDir::fail(std::string why) {
  problem_ = std::move(why);
  if (kernels_fd_ >= 0) ::close(kernels_fd_);
  if (root_fd_ >= 0) ::close(root_fd_);
  kernels_fd_ = root_fd_ = -1;
}

CacheDir CacheDir::open(const fs::path& root, bool create) {
  CacheDir d;
  d.problem_.clear();
  d.open_into(root, create);
  return d;
}

void CacheDir::open_into(const fs::path& root, bool create) {
  CacheDir& d = *this;
  const fs::path kernels = root / "kernels";
  if (create && !create_private_directories(root))
    return d.fail("cannot create " + root.string() + " (" + errno_text() + ")");
  // The root as the user named it (a link the user made on the way is theirs to make); the
  // directory it leads to must be theirs.
  d.root_fd_ = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (d.root_fd_ < 0) {
    d.missing_ = errno == ENOENT;
    return d.fail("cannot open " + root.string() + " (" + errno_text() + ")");
  }
  struct stat st;
  if (::fstat(d.root_fd_, &st) != 0)
    return d.fail("cannot stat " + root.string() + " (" + errno_text() + ")");
  if (std::string why = trust_problem(st, TrustKind::Directory); !why.empty())
    return d.fail(root.string() + " " + why);
  if (create && ::mkdirat(d.root_fd_, "kernels", 0700) != 0 && errno != EEXIST)
    return d.fail("cannot create " + kernels.string() + " (" + errno_text() + ")");
  d.kernels_fd_ = ::openat(d.root_fd_, "kernels", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (d.kernels_fd_ < 0) {
    struct stat lst;
    if (errno == ELOOP || (::fstatat(d.root_fd_, "kernels", &lst, AT_SYMLINK_NOFOLLOW) == 0 &&
                           S_ISLNK(lst.st_mode)))
      return d.fail(kernels.string() + " is a symbolic link");
    d.missing_ = errno == ENOENT;
    return d.fail("cannot open " + kernels.string() + " (" + errno_text() + ")");
  }
  if (::fstat(d.kernels_fd_, &st) != 0)
    return d.fail("cannot stat " + kernels.string() + " (" + errno_text() + ")");
  if (std::string why = trust_problem(st, TrustKind::Directory); !why.empty())
    return d.fail(kernels.string() + " " + why);
  if (create && ::faccessat(d.kernels_fd_, ".", W_OK | X_OK, AT_EACCESS) != 0)
    return d.fail(kernels.string() + " is not writable (" + errno_text() + ")");
  if (create) d.load_or_create_key(root);
}

void CacheDir::load_or_create_key(const fs::path& root) {
  const std::string where = (root / kKeyFile).string();
  for (int attempt = 0; attempt < 2; ++attempt) {
    int fd = ::openat(root_fd_, kKeyFile, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) {
      struct stat st;
      std::string why;
      if (::fstat(fd, &st) != 0)
        why = "cannot be examined (" + errno_text() + ")";
      else if (why = trust_problem(st, TrustKind::RegularFile); !why.empty()) {
      } else if ((st.st_mode & 077) != 0)
        why = "is readable or writable by others (" + mode_text(st.st_mode) + "; it must be 0600)";
      else if (st.st_size != static_cast<off_t>(key_.size()))
        why = "is " + std::to_string(st.st_size) + " bytes long, not " +
              std::to_string(key_.size());
      else if (!read_exact(fd, key_.data(), key_.size()))
        why = "cannot be read (" + errno_text() + ")";
      ::close(fd);
      if (!why.empty()) return fail("the cache's MAC key " + where + " " + why);
      has_key_ = true;
      return;
    }
    if (errno == ELOOP) return fail("the cache's MAC key " + where + " is a symbolic link");
    if (errno != ENOENT) return fail("cannot open " + where + " (" + errno_text() + ")");
    // A new key: written whole under a private name, then linked into place (another process
    // creating one at the same time wins; this one then reads that).
    SipKey fresh;
    if (!random_bytes(fresh.data(), fresh.size()))
      return fail("cannot draw a random key (" + errno_text() + ")");
    static std::atomic<unsigned> counter{0};
    const std::string tmp = ".cache.key.tmp-" + std::to_string(::getpid()) + "-" +
                            std::to_string(counter.fetch_add(1));
    int out = ::openat(root_fd_, tmp.c_str(),
                       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (out < 0) return fail("cannot create a key in " + root.string() + " (" + errno_text() + ")");
    bool ok = write_exact(out, fresh.data(), fresh.size()) && ::fsync(out) == 0;
    ::close(out);
    int linked = ok ? ::linkat(root_fd_, tmp.c_str(), root_fd_, kKeyFile, 0) : -1;
    int saved = errno;
    ::unlinkat(root_fd_, tmp.c_str(), 0);
    if (!ok) return fail("cannot write " + where);
    if (linked == 0) {
      ::fsync(root_fd_);
      key_ = fresh;
      has_key_ = true;
      return;
    }
    if (saved != EEXIST) {
      errno = saved;
      return fail("cannot create " + where + " (" + errno_text() + ")");
    }
  }
  fail("cannot read or create " + where);
}

}  // namespace stax
