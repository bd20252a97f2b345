// core/support's pieces of issue 28 (docs/security.md): the trust rules (file_trust.h), writing
// outputs through a temporary file and a rename (atomic_file.h), the home and cache directories
// without HOME (user_dirs.h), and values cut short in messages (quoted.h).
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "core/support/atomic_file.h"
#include "core/support/error.h"
#include "core/support/file_trust.h"
#include "core/support/quoted.h"
#include "core/support/user_dirs.h"

namespace stax {
namespace {

namespace fs = std::filesystem;

// Sets (or with nullptr unsets) an environment variable for the scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) ::setenv(name, value, 1);
    else ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

fs::path fresh_dir(const std::string& what) {
  fs::path d = fs::temp_directory_path() /
               ("stax_support_trust_" + std::to_string(::getpid()) + "_" + what);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(FileTrust, OwnerModeAndKind) {
  struct stat st {};
  st.st_mode = S_IFREG | 0644;
  st.st_uid = ::geteuid();
  EXPECT_EQ(trust_problem(st, TrustKind::RegularFile), "");
  st.st_mode = S_IFREG | 0664;
  EXPECT_EQ(trust_problem(st, TrustKind::RegularFile),
            "is writable by group or others (mode 0664)");
  st.st_mode = S_IFIFO | 0600;
  EXPECT_EQ(trust_problem(st, TrustKind::RegularFile), "is a FIFO, not a regular file");
  st.st_mode = S_IFDIR | 01777;
  EXPECT_NE(trust_problem(st, TrustKind::Directory), "");
  TrustRules sticky;
  sticky.allow_sticky = true;
  EXPECT_EQ(trust_problem(st, TrustKind::Directory, sticky), "");
  st.st_mode = S_IFDIR | 0755;
  st.st_uid = ::geteuid() + 1;
  EXPECT_NE(trust_problem(st, TrustKind::Directory).find("is owned by uid"), std::string::npos);
  st.st_uid = 0;
  TrustRules root_ok;
  root_ok.allow_root = true;
  EXPECT_EQ(trust_problem(st, TrustKind::Directory, root_ok), "");
}

TEST(AtomicFile, ReplacesALinkNeverWritesThroughIt) {
  fs::path d = fresh_dir("atomic");
  std::ofstream(d / "victim") << "precious";
  fs::create_symlink(d / "victim", d / "out.txt");
  write_file_atomically(d / "out.txt", "new", "test");
  EXPECT_EQ(read(d / "victim"), "precious");
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(d / "out.txt")));
  EXPECT_EQ(read(d / "out.txt"), "new");
  // A failure leaves no temporary file behind and names the path.
  fs::create_directory(d / "dir");
  try {
    write_file_atomically(d / "dir", "x", "test");
    ADD_FAILURE() << "wrote over a directory";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find((d / "dir").string()), std::string::npos) << e.what();
  }
  try {
    write_file_atomically(d / "missing" / "x", "x", "test");
    ADD_FAILURE() << "wrote into a missing directory";
  } catch (const Error&) {
  }
  size_t names = 0;
  for (const auto& e : fs::directory_iterator(d)) {
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
    ++names;
  }
  EXPECT_EQ(names, 3u);
  fs::remove_all(d);
}

TEST(UserDirs, HomeWithoutHomeIsThePasswdEntry) {
  struct passwd* pw = ::getpwuid(::getuid());
  ASSERT_NE(pw, nullptr);
  {
    ScopedEnv home("HOME", nullptr);
    ASSERT_TRUE(home_directory());
    EXPECT_EQ(*home_directory(), fs::path(pw->pw_dir));
    EXPECT_EQ(expand_home("~/.cache/stax", "t", "l"), fs::path(pw->pw_dir) / ".cache/stax");
    EXPECT_EQ(expand_home("~", "t", "l"), fs::path(pw->pw_dir));
  }
  {
    ScopedEnv home("HOME", "relative/dir");  // not absolute: ignored
    EXPECT_EQ(*home_directory(), fs::path(pw->pw_dir));
  }
  {
    ScopedEnv home("HOME", "/some/home");
    ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
    EXPECT_EQ(*user_cache_directory(), fs::path("/some/home/.cache"));
    ScopedEnv xdg2("XDG_CACHE_HOME", "/xdg/cache");
    EXPECT_EQ(*user_cache_directory(), fs::path("/xdg/cache"));
  }
  EXPECT_EQ(expand_home("~user/x", "t", "l"), fs::path("~user/x"));  // only ~ and ~/
  EXPECT_EQ(expand_home("a/~/b", "t", "l"), fs::path("a/~/b"));
}

TEST(Quoted, HugeValuesAreCut) {
  EXPECT_EQ(quote_excerpt("fast"), "'fast'");
  EXPECT_EQ(quote_excerpt("a\nb"), "'a?b'");
  std::string big(50u << 20, '7');
  std::string q = quote_excerpt(big);
  EXPECT_LT(q.size(), 100u);
  EXPECT_NE(q.find("(52428800 bytes)"), std::string::npos) << q;
}

}  // namespace
}  // namespace stax
