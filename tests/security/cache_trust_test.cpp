// The kernel cache's trust checks (issue 28, docs/security.md "The kernel cache") at the level of
// core/cache: CacheDir (ownership, permissions, links, the MAC key) and DiskCache (entries that
// are links, FIFOs, another user's files or forged; clear() and eviction never following a link).
// The same findings through the stax binary: security_cli_test.py.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/cache/cache_dir.h"
#include "core/cache/disk_cache.h"
#include "core/cache/siphash.h"
#include "core/support/error.h"

namespace stax {
namespace {

namespace fs = std::filesystem;

constexpr uid_t kOtherUid = 65534;  // nobody

class CacheTrust : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("stax_cache_trust_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  static std::string read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  static void write(const fs::path& p, const std::string& s) {
    std::ofstream(p, std::ios::binary | std::ios::trunc) << s;
  }
  static mode_t mode_of(const fs::path& p) {
    struct stat st;
    EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
    return st.st_mode & 07777;
  }
  fs::path dir_;
};

TEST(SipHash, PaperTestVectors) {
  // Aumasson & Bernstein's vectors: key 00 01 .. 0f, messages 00 01 .. (n-1).
  SipKey key;
  for (int i = 0; i < 16; ++i) key[i] = static_cast<unsigned char>(i);
  std::string m;
  for (int i = 0; i < 15; ++i) m.push_back(static_cast<char>(i));
  EXPECT_EQ(siphash64(key, ""), 0x726fdb47dd0e0e31ull);
  EXPECT_EQ(siphash64(key, m), 0xa129ca6149be45e5ull);
  EXPECT_EQ(siphash64(key, m.substr(0, 1)), 0x74f839c593dc67fdull);
  std::array<uint64_t, 2> w = siphash128(key, "");  // a3 81 7f 04 ba 25 a8 e6 6d f6 72 14 ...
  EXPECT_EQ(w[0], 0xe6a825ba047f81a3ull);
  EXPECT_EQ(w[1], 0x930255c71472f66dull);
  // Incremental updates of any split give the one-shot value.
  for (size_t cut = 0; cut <= m.size(); ++cut) {
    SipHasher h(key, false);
    h.update(m.substr(0, cut));
    h.update(m.substr(cut));
    EXPECT_EQ(h.finish64(), 0xa129ca6149be45e5ull) << cut;
  }
}

TEST_F(CacheTrust, DirectoriesAndEntriesArePrivate) {
  const fs::path root = dir_ / "a" / "b" / "cache";
  DiskCache c(root, 1 << 20);
  ASSERT_TRUE(c.usable());
  c.store("k", "payload", "source");
  for (const fs::path& d : {dir_ / "a", dir_ / "a" / "b", root, root / "kernels"})
    EXPECT_EQ(mode_of(d), 0700u) << d;
  EXPECT_EQ(mode_of(c.entry_path("k")), 0600u);
  EXPECT_EQ(mode_of(root / "cache.key"), 0600u);
  EXPECT_EQ(fs::file_size(root / "cache.key"), 16u);
}

TEST_F(CacheTrust, OpenDirectoriesAreRefused) {
  const fs::path root = dir_ / "cache";
  ASSERT_TRUE(DiskCache(root, 1 << 20).usable());
  ::chmod(root.c_str(), 0777);
  ::testing::internal::CaptureStderr();
  DiskCache c(root, 1 << 20);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(c.usable());
  EXPECT_NE(err.find("writable by group or others (mode 0777)"), std::string::npos) << err;
  EXPECT_THROW(DiskCache::clear(root), Error);
  ::chmod(root.c_str(), 0700);
  ::chmod((root / "kernels").c_str(), 0775);
  EXPECT_FALSE(CacheDir::open(root, true).ok());
}

TEST_F(CacheTrust, AnotherUsersDirectoryIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a directory to uid " << kOtherUid;
  const fs::path root = dir_ / "theirs";
  ASSERT_TRUE(DiskCache(root, 1 << 20).usable());
  ASSERT_EQ(::chown(root.c_str(), kOtherUid, kOtherUid), 0);
  CacheDir d = CacheDir::open(root, true);
  EXPECT_FALSE(d.ok());
  EXPECT_NE(d.problem().find("is owned by uid 65534, not by you (uid 0)"), std::string::npos)
      << d.problem();
}

TEST_F(CacheTrust, KernelsLinkIsRefusedAndClearRemovesNothing) {
  const fs::path victim = dir_ / "victim";
  fs::create_directories(victim);
  write(victim / "a.entry", "precious");
  write(victim / "b.src", "precious");
  const fs::path root = dir_ / "cache";
  fs::create_directories(root);
  ::chmod(root.c_str(), 0700);
  fs::create_directory_symlink(victim, root / "kernels");
  DiskCache c(root, 1 << 20);
  EXPECT_FALSE(c.usable());
  c.store("k", "p");
  try {
    DiskCache::clear(root);
    ADD_FAILURE() << "clear went through the link";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is a symbolic link"), std::string::npos) << e.what();
  }
  EXPECT_THROW(DiskCache::scan(root), Error);
  EXPECT_EQ(read(victim / "a.entry"), "precious");
  EXPECT_EQ(read(victim / "b.src"), "precious");
  EXPECT_EQ(std::distance(fs::directory_iterator(victim), fs::directory_iterator()), 2);
}

TEST_F(CacheTrust, LinksFifosAndForeignEntriesAreSkippedNeverFollowed) {
  const fs::path root = dir_ / "cache";
  DiskCache c(root, 1 << 20);
  ASSERT_TRUE(c.usable());
  // A link at an entry's name: skipped on load, its target untouched; a store replaces the link.
  const fs::path target = dir_ / "target";
  write(target, "precious");
  fs::create_symlink(target, c.entry_path("link"));
  std::string why;
  EXPECT_FALSE(c.load("link", &why));
  EXPECT_NE(why.find("symbolic link"), std::string::npos) << why;
  c.store("link", "payload");
  EXPECT_EQ(read(target), "precious");
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(c.entry_path("link"))));
  EXPECT_EQ(*c.load("link"), "payload");
  // A FIFO: open never blocks (O_NONBLOCK), it is skipped, and stats count no bytes for it.
  ASSERT_EQ(::mkfifo(c.entry_path("fifo").c_str(), 0600), 0);
  EXPECT_FALSE(c.load("fifo", &why));
  EXPECT_NE(why.find("FIFO"), std::string::npos) << why;
  CacheStats s = DiskCache::scan(root);
  EXPECT_EQ(s.entries, 1u);  // "link", now a regular entry
  EXPECT_LT(s.bytes, 1000u);
  EXPECT_EQ(c.stats().skipped, 2u);
  // clear() removes the FIFO's name, never opening it.
  EXPECT_EQ(DiskCache::clear(root), 2u);
  // Another user's entry in the user's directory (root only can make one).
  if (::geteuid() == 0) {
    c.store("foreign", "payload");
    ASSERT_EQ(::chown(c.entry_path("foreign").c_str(), kOtherUid, kOtherUid), 0);
    EXPECT_FALSE(c.load("foreign", &why));
    EXPECT_NE(why.find("owned by uid 65534"), std::string::npos) << why;
  }
}

TEST_F(CacheTrust, EntriesSealedWithoutTheKeyAreRemoved) {
  const fs::path root = dir_ / "cache";
  DiskCache c(root, 1 << 20);
  c.store("k", "payload");
  // Someone without the key writes a well-formed entry: its MAC cannot be right.
  SipKey guess{};
  std::string forged = read(c.entry_path("k"));
  std::string payload = "evil!!!";
  std::optional<std::pair<std::string, std::string>> f = DiskCache::entry_fields(forged);
  ASSERT_TRUE(f);
  forged = forged.substr(0, 8);
  for (uint64_t v : {uint64_t(f->first.size()), uint64_t(payload.size())})
    for (int i = 0; i < 8; ++i) forged.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  std::array<uint64_t, 2> m = siphash128(guess, forged + f->first + payload);
  for (uint64_t v : m)
    for (int i = 0; i < 8; ++i) forged.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  write(c.entry_path("k"), forged + f->first + payload);
  std::string why;
  EXPECT_FALSE(c.load("k", &why));
  EXPECT_NE(why.find("MAC"), std::string::npos) << why;
  EXPECT_FALSE(fs::exists(c.entry_path("k")));
  EXPECT_EQ(c.stats().corrupt, 1u);
  // The owner's own encoding loads.
  write(c.entry_path("k"), c.encode_entry("k", payload));
  EXPECT_EQ(*c.load("k"), payload);
}

TEST_F(CacheTrust, AnUnsafeKeyDisablesTheCache) {
  const fs::path root = dir_ / "cache";
  ASSERT_TRUE(DiskCache(root, 1 << 20).usable());
  ::chmod((root / "cache.key").c_str(), 0644);
  CacheDir d = CacheDir::open(root, true);
  EXPECT_FALSE(d.ok());
  EXPECT_NE(d.problem().find("cache.key is readable or writable by others"), std::string::npos)
      << d.problem();
  fs::remove(root / "cache.key");
  fs::create_symlink(dir_ / "elsewhere", root / "cache.key");
  EXPECT_FALSE(CacheDir::open(root, true).ok());
  fs::remove(root / "cache.key");
  EXPECT_TRUE(CacheDir::open(root, true).ok());  // a new key
}

TEST_F(CacheTrust, EvictionNeverFollowsALink) {
  const fs::path root = dir_ / "cache";
  const fs::path target = dir_ / "big";
  write(target, std::string(5000, 'x'));
  DiskCache c(root, 3000);
  fs::create_symlink(target, root / "kernels" / "00000000000000000000000000000000.entry");
  c.store("a", std::string(2000, 'a'));
  c.store("b", std::string(2000, 'b'));  // over the limit: "a" goes, the link is not counted
  EXPECT_EQ(fs::file_size(target), 5000u);
  EXPECT_FALSE(c.load("a"));
  EXPECT_TRUE(c.load("b"));
}

TEST(CacheSettingsTest, MaxBytesIsParsedStrictly) {
  auto with = [](const char* v) {
    ::setenv("STAX_CACHE_MAX_BYTES", v, 1);
    return CacheSettings::resolve(true, fs::path("/tmp"));
  };
  EXPECT_EQ(with("4096").max_bytes, 4096u);
  EXPECT_EQ(with("64M").max_bytes, uint64_t(64) << 20);
  EXPECT_EQ(with("2g").max_bytes, uint64_t(2) << 30);
  EXPECT_EQ(with("18446744073709551615").max_bytes, UINT64_MAX);
  for (const char* bad : {"-5", "0", "1.5G", "12X", "G", " 5", "18446744073709551616",
                          "17179869184G"}) {
    try {
      with(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("STAX_CACHE_MAX_BYTES"), std::string::npos);
    }
  }
  ::unsetenv("STAX_CACHE_MAX_BYTES");
}

}  // namespace
}  // namespace stax
