#include "core/support/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "core/support/error.h"

namespace fs = std::filesystem;

namespace stax {

namespace {

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

void write_file_atomically(const fs::path& path, std::string_view bytes, const std::string& stage,
                           mode_t mode) {
  static std::atomic<unsigned> counter{0};
  const std::string where = path.string();
  const fs::path name = path.filename();
  if (name.empty() || name == "." || name == "..")
    throw Error(stage, where, "names a directory, not a file");
  const fs::path parent = path.has_parent_path() ? path.parent_path() : fs::path(".");
  Fd dir{::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (dir.fd < 0)
    throw Error(stage, where,
                "cannot open for writing (its directory " + parent.string() + ": " +
                    std::strerror(errno) + ")");
  struct stat st;
  if (::fstatat(dir.fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
    throw Error(stage, where, "is a directory");
  const std::string tmp = "." + name.string() + ".tmp-" + std::to_string(::getpid()) + "-" +
                          std::to_string(counter.fetch_add(1));
  int fd = ::openat(dir.fd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                    mode);
  if (fd < 0)
    throw Error(stage, where, std::string("cannot open for writing (a new file in ") +
                                  parent.string() + ": " + std::strerror(errno) + ")");
  bool ok = write_all(fd, bytes.data(), bytes.size());
  int saved = errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    saved = errno;
  }
  if (ok && ::renameat(dir.fd, tmp.c_str(), dir.fd, name.c_str()) == 0) return;
  if (ok) saved = errno;
  ::unlinkat(dir.fd, tmp.c_str(), 0);
  throw Error(stage, where, std::string("cannot write: ") + std::strerror(saved));
}

}  // namespace stax
