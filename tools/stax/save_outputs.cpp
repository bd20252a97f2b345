#include "tools/stax/save_outputs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include "core/support/error.h"
#include "core/tensor/npy.h"

namespace stax::cli {

namespace {

namespace fs = std::filesystem;

bool is_output_name(const std::string& n) {
  auto ends_npy = n.size() > 4 && n.compare(n.size() - 4, 4, ".npy") == 0;
  if (!ends_npy) return false;
  if (n.rfind("grad_", 0) == 0) return n.size() > 9;
  if (n.rfind("out", 0) != 0 || n.size() <= 7) return false;
  for (size_t i = 3; i < n.size() - 4; ++i)
    if (n[i] < '0' || n[i] > '9') return false;
  return true;
}

// The names in `dir` that are stale outputs (not in `keep`), sorted; never a directory.
std::vector<std::string> stale_outputs(int dir, const std::set<std::string>& keep) {
  std::vector<std::string> out;
  int fd = ::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR* d = fd >= 0 ? ::fdopendir(fd) : nullptr;
  if (!d) {
    if (fd >= 0) ::close(fd);
    return out;
  }
  while (struct dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (!is_output_name(n) || keep.count(n)) continue;
    struct stat st;
    if (::fstatat(dir, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode))
      out.push_back(n);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::vector<std::string> save_outputs(const std::string& dir,
                                      const std::vector<std::pair<std::string, Tensor>>& outputs) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("cli", "--save " + dir, "cannot create the directory: " + ec.message());
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    throw Error("cli", "--save " + dir, std::string("cannot open the directory: ") +
                                            std::strerror(errno));
  std::set<std::string> keep;
  for (const auto& [name, t] : outputs) keep.insert(name);
  std::vector<std::string> removed;
  for (const std::string& n : stale_outputs(fd, keep))
    if (::unlinkat(fd, n.c_str(), 0) == 0) removed.push_back(n);
  ::close(fd);
  for (const auto& [name, t] : outputs) save_npy((fs::path(dir) / name).string(), t);
  return removed;
}

std::string saved_summary(const std::string& what, const std::string& dir,
                          const std::vector<std::string>& removed) {
  std::string s = "saved " + what + " to " + dir;
  if (!removed.empty()) {
    s += "; removed " + std::to_string(removed.size()) + " stale output(s) of an earlier run:";
    for (const std::string& n : removed) s += " " + n;
  }
  return s;
}

}  // namespace stax::cli
