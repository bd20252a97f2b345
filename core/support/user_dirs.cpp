#include "core/support/user_dirs.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

#include "core/support/error.h"

namespace fs = std::filesystem;

namespace stax {

namespace {

std::optional<fs::path> absolute_env(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  fs::path p(v);
  if (!p.is_absolute()) return std::nullopt;
  return p;
}

std::optional<fs::path> passwd_home() {
  long hint = ::sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buf(hint > 0 ? static_cast<size_t>(hint) : 4096);
  struct passwd pw;
  struct passwd* found = nullptr;
  for (;;) {
    int rc = ::getpwuid_r(::getuid(), &pw, buf.data(), buf.size(), &found);
    if (rc == ERANGE && buf.size() < (size_t{1} << 20)) {
      buf.resize(buf.size() * 2);
      continue;
    }
    break;
  }
  if (!found || !found->pw_dir || found->pw_dir[0] != '/') return std::nullopt;
  return fs::path(found->pw_dir);
}

}  // namespace

std::optional<fs::path> home_directory() {
  if (auto h = absolute_env("HOME")) return h;
  return passwd_home();
}

std::optional<fs::path> user_cache_directory() {
  if (auto x = absolute_env("XDG_CACHE_HOME")) return x;
  if (auto h = home_directory()) return *h / ".cache";
  return std::nullopt;
}

fs::path expand_home(const std::string& path, const std::string& stage,
                     const std::string& location) {
  if (path != "~" && path.rfind("~/", 0) != 0) return fs::path(path);
  std::optional<fs::path> home = home_directory();
  if (!home)
    throw Error(stage, location,
                "cannot expand '~' in '" + path + "': HOME is unset (or not an absolute path) "
                "and the passwd database has no home directory for uid " +
                    std::to_string(::getuid()));
  return path.size() <= 2 ? *home : *home / path.substr(2);
}

}  // namespace stax
