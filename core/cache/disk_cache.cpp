#include "core/cache/disk_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <set>
#include <vector>

#include "core/support/atomic_file.h"
#include "core/support/error.h"
#include "core/support/file_trust.h"

namespace stax {

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'S', 'T', 'A', 'X', 'K', 'C', '0', '3'};
constexpr size_t kMacSize = 16;
constexpr size_t kHeader = 8 + 2 * 8 + kMacSize;
constexpr const char* kEntryExt = ".entry";
constexpr const char* kSourceExt = ".src";
constexpr const char* kTempPrefix = ".tmp-";

void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint64_t get_u64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

bool ends_with(const std::string& s, const char* suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// An open file descriptor, closed on scope exit.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// The file's bytes (fd open for reading, `size` from its fstat); nothing when it cannot be
// read; at most `limit` bytes (a larger file comes back as its first `limit` + 1 bytes, which no
// entry check accepts).
std::optional<std::string> read_fd(int fd, uint64_t size, uint64_t limit) {
  std::string out(static_cast<size_t>(std::min<uint64_t>(size, limit + 1)), '\0');
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n = ::read(fd, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  out.resize(done);
  return out;
}

// ".tmp-<pid>-..." of a process that no longer exists.
bool is_orphan_temp(const std::string& name) {
  if (name.rfind(kTempPrefix, 0) != 0) return false;
  long pid = std::strtol(name.c_str() + std::strlen(kTempPrefix), nullptr, 10);
  if (pid <= 0) return true;
  return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

// The names in the directory of `dir_fd` (not "." and ".."), read through a duplicate of it.
std::vector<std::string> list_names(int dir_fd) {
  std::vector<std::string> names;
  int fd = ::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return names;
  DIR* d = ::fdopendir(fd);
  if (!d) {
    ::close(fd);
    return names;
  }
  while (struct dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(std::move(n));
  }
  ::closedir(d);
  return names;
}

// Whether `st` is a file this user's cache may read: a regular file, theirs, writable by no
// one else.
std::string entry_problem(const struct stat& st) {
  return trust_problem(st, TrustKind::RegularFile);
}

std::mutex& warned_mutex() {
  static std::mutex m;
  return m;
}
std::set<std::string>& warned_roots() {
  static std::set<std::string> s;
  return s;
}

// The checked kernels directory of `root` for clear() and scan(); nothing when it does not
// exist; a stax::Error when it fails the checks.
std::optional<CacheDir> open_existing(const fs::path& root) {
  CacheDir d = CacheDir::open(root, /*create=*/false);
  if (d.ok()) return d;
  if (d.missing()) return std::nullopt;
  throw Error("cache", root.string(),
              "refusing to use this kernel cache: " + d.problem() + " (docs/security.md)");
}

// "1G" -> 2^30; nothing unless a positive whole number with an optional K, M or G suffix that
// fits in 64 bits.
std::optional<uint64_t> parse_byte_count(const std::string& text) {
  if (text.empty()) return std::nullopt;
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) return std::nullopt;
  unsigned shift = 0;
  if (digits + 1 == text.size()) {
    switch (text.back()) {
      case 'K': case 'k': shift = 10; break;
      case 'M': case 'm': shift = 20; break;
      case 'G': case 'g': shift = 30; break;
      default: return std::nullopt;
    }
  } else if (digits != text.size()) {
    return std::nullopt;
  }
  uint64_t v = 0;
  for (size_t i = 0; i < digits; ++i) {
    uint64_t d = static_cast<uint64_t>(text[i] - '0');
    if (v > (UINT64_MAX - d) / 10) return std::nullopt;
    v = v * 10 + d;
  }
  if (v == 0 || (shift > 0 && v > (UINT64_MAX >> shift))) return std::nullopt;
  return v << shift;
}

// Entries and bytes of a kernels directory: regular files only, never following a link (a FIFO
// or a link named like an entry has no size to add).
CacheStats scan_directory(int dir) {
  CacheStats s;
  for (const std::string& name : list_names(dir)) {
    const bool entry = ends_with(name, kEntryExt);
    if (!entry && !ends_with(name, kSourceExt)) continue;
    struct stat st;
    if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
      continue;
    if (entry) ++s.entries;
    s.bytes += static_cast<uint64_t>(st.st_size);
  }
  return s;
}

}  // namespace

CacheSettings CacheSettings::resolve(bool config_enabled,
                                     const std::optional<fs::path>& config_dir) {
  CacheSettings s;
  s.enabled = config_enabled;
  s.dir = config_dir;
  if (const char* env = std::getenv("STAX_CACHE_DIR"); env && *env) {
    std::string v = env;
    if (v == "off" || v == "0" || v == "false") {
      s.enabled = false;
    } else {
      s.dir = fs::path(v);
    }
  }
  if (const char* env = std::getenv("STAX_CACHE_MAX_BYTES"); env && *env) {
    std::optional<uint64_t> v = parse_byte_count(env);
    if (!v) {
      std::string shown(env);
      if (shown.size() > 40) shown = shown.substr(0, 40) + "...";
      throw Error("cache", "STAX_CACHE_MAX_BYTES",
                  "must be a positive whole number of bytes, optionally with a K, M or G "
                  "suffix (e.g. 1073741824 or 1G), got '" + shown +
                      "' (to turn the disk cache off, set STAX_CACHE_DIR=off)");
    }
    s.max_bytes = *v;
  }
  return s;
}

DiskCache::DiskCache(fs::path root, uint64_t max_bytes)
    : root_(std::move(root)), dir_(root_ / "kernels"), max_bytes_(max_bytes) {
  cache_dir_ = CacheDir::open(root_, /*create=*/true);
  if (!cache_dir_.ok()) {
    warn(cache_dir_.problem());
    return;
  }
  usable_ = true;
}

void DiskCache::warn(const std::string& what) {
  usable_ = false;
  std::lock_guard<std::mutex> lock(warned_mutex());
  if (!warned_roots().insert(root_.string()).second) return;
  std::cerr << "stax: warning: kernel cache: " << what
            << "; compiling without the disk cache\n";
}

fs::path DiskCache::entry_path(std::string_view key) const {
  return dir_ / (hash128_hex(key) + kEntryExt);
}

std::array<uint64_t, 2> DiskCache::mac(std::string_view key, std::string_view payload) const {
  SipHasher h(cache_dir_.key(), /*wide=*/true);
  std::string sizes;
  put_u64(sizes, key.size());
  put_u64(sizes, payload.size());
  h.update(std::string_view(kMagic, 8));
  h.update(sizes);
  h.update(key);
  h.update(payload);
  return h.finish128();
}

std::string DiskCache::encode_entry(std::string_view key, std::string_view payload) const {
  std::string body;
  body.reserve(kHeader + key.size() + payload.size());
  body.append(kMagic, 8);
  put_u64(body, key.size());
  put_u64(body, payload.size());
  std::array<uint64_t, 2> m = mac(key, payload);
  put_u64(body, m[0]);
  put_u64(body, m[1]);
  body.append(key);
  body.append(payload);
  return body;
}

std::optional<std::pair<std::string, std::string>> DiskCache::entry_fields(std::string_view f) {
  if (f.size() < kHeader) return std::nullopt;
  uint64_t key_size = get_u64(f.data() + 8), payload_size = get_u64(f.data() + 16);
  if (key_size > f.size() - kHeader || payload_size > f.size() - kHeader - key_size)
    return std::nullopt;
  return std::make_pair(std::string(f.substr(kHeader, key_size)),
                        std::string(f.substr(kHeader + key_size, payload_size)));
}

std::optional<std::string> DiskCache::load(std::string_view key, std::string* why) {
  if (!usable_) return std::nullopt;
  const std::string name = hash128_hex(key) + kEntryExt;
  auto miss = [&](bool skipped, const std::string& reason) -> std::optional<std::string> {
    std::lock_guard<std::mutex> lock(mutex_);
    ++counters_.misses;
    if (skipped) ++counters_.skipped;
    if (why) *why = reason;
    return std::nullopt;
  };
  // O_NOFOLLOW: a link is never followed; O_NONBLOCK: a FIFO cannot block the open.
  Fd fd{::openat(cache_dir_.kernels_fd(), name.c_str(),
                 O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)};
  if (fd.fd < 0) {
    if (errno == ENOENT) return miss(false, "");
    if (errno == ELOOP) return miss(true, "skipped: " + name + " is a symbolic link");
    return miss(true, "skipped: cannot open " + name + " (" + std::strerror(errno) + ")");
  }
  struct stat st;
  if (::fstat(fd.fd, &st) != 0)
    return miss(true, "skipped: cannot stat " + name + " (" + std::strerror(errno) + ")");
  if (std::string problem = entry_problem(st); !problem.empty())
    return miss(true, "skipped: " + name + " " + problem);
  // An entry larger than the whole cache may be is damaged: never read it all into memory.
  std::optional<std::string> file = read_fd(fd.fd, static_cast<uint64_t>(st.st_size), max_bytes_);
  if (!file) return miss(false, "");
  const std::string& f = *file;
  bool ok = f.size() >= kHeader && std::memcmp(f.data(), kMagic, 8) == 0;
  uint64_t key_size = ok ? get_u64(f.data() + 8) : 0;
  uint64_t payload_size = ok ? get_u64(f.data() + 16) : 0;
  ok = ok && key_size <= f.size() && payload_size <= f.size() &&
       kHeader + key_size + payload_size == f.size();
  std::string_view stored_key;
  if (ok) {
    stored_key = std::string_view(f).substr(kHeader, key_size);
    std::array<uint64_t, 2> m =
        mac(stored_key, std::string_view(f).substr(kHeader + key_size, payload_size));
    ok = m[0] == get_u64(f.data() + 24) && m[1] == get_u64(f.data() + 32);
  }
  if (!ok) {  // torn, truncated, zero-length, corrupt or forged: never loaded
    ::unlinkat(cache_dir_.kernels_fd(), name.c_str(), 0);
    std::lock_guard<std::mutex> lock(mutex_);
    ++counters_.corrupt;
    ++counters_.misses;
    if (why) *why = "damaged entry removed: " + name + " (its format, size or MAC is wrong)";
    return std::nullopt;
  }
  if (stored_key != key) return miss(false, "");  // a hash collision (the store overwrites it)
  ::futimens(fd.fd, nullptr);  // LRU: now (through the open file: no second path lookup)
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++counters_.hits;
  }
  file->erase(0, kHeader + key_size);  // the payload, in the buffer it was read into
  return file;
}

// Writes `bytes` to the kernels directory's `name` through a temporary file, fsync and rename.
bool DiskCache::write_atomically(const std::string& name, std::string_view bytes, bool hook) {
  static std::atomic<uint64_t> counter{0};
  const int dir = cache_dir_.kernels_fd();
  const std::string tmp = std::string(kTempPrefix) + std::to_string(::getpid()) + "-" +
                          std::to_string(counter.fetch_add(1)) + "-" + name + ".part";
  int fd = ::openat(dir, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    warn("cannot write " + (dir_ / tmp).string() + " (" + std::strerror(errno) + ")");
    return false;
  }
  size_t half = bytes.size() / 2;
  bool ok = write_all(fd, bytes.data(), half);
  if (ok && hook && test_after_partial_write) test_after_partial_write();
  ok = ok && write_all(fd, bytes.data() + half, bytes.size() - half) && ::fsync(fd) == 0;
  int saved = errno;
  ::close(fd);
  // rename replaces whatever has the name (a link, a FIFO): never writes through it.
  if (ok && ::renameat(dir, tmp.c_str(), dir, name.c_str()) == 0) return true;
  if (!ok) errno = saved;
  std::string why = std::strerror(errno);
  ::unlinkat(dir, tmp.c_str(), 0);
  std::cerr << "stax: warning: kernel cache: cannot write " << (dir_ / name).string() << " ("
            << why << "); the kernel is not cached\n";
  return false;
}

void DiskCache::store(std::string_view key, std::string_view payload, std::string_view source) {
  if (!usable_) return;
  const std::string hash = hash128_hex(key);
  const std::string body = encode_entry(key, payload);
  if (!source.empty()) write_atomically(hash + kSourceExt, source, false);
  if (!usable_) return;
  if (!write_atomically(hash + kEntryExt, body, true)) return;
  ::fsync(cache_dir_.kernels_fd());
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++counters_.stores;
  }
  evict();
}

void DiskCache::remove(std::string_view key) {
  if (!usable_) return;
  const std::string hash = hash128_hex(key);
  ::unlinkat(cache_dir_.kernels_fd(), (hash + kEntryExt).c_str(), 0);
  ::unlinkat(cache_dir_.kernels_fd(), (hash + kSourceExt).c_str(), 0);
}

void DiskCache::evict() {
  struct File {
    std::string name;
    uint64_t bytes;
    struct timespec mtime;
  };
  const int dir = cache_dir_.kernels_fd();
  std::vector<File> entries;
  uint64_t total = 0;
  for (const std::string& name : list_names(dir)) {
    if (is_orphan_temp(name)) {
      ::unlinkat(dir, name.c_str(), 0);
      continue;
    }
    if (!ends_with(name, kEntryExt)) continue;
    struct stat st;
    if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
      continue;
    uint64_t bytes = static_cast<uint64_t>(st.st_size);
    const std::string src = name.substr(0, name.size() - std::strlen(kEntryExt)) + kSourceExt;
    struct stat s2;
    if (::fstatat(dir, src.c_str(), &s2, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(s2.st_mode))
      bytes += static_cast<uint64_t>(s2.st_size);
    entries.push_back({name, bytes, st.st_mtim});
    total += bytes;
  }
  if (total <= max_bytes_) return;
  std::sort(entries.begin(), entries.end(), [](const File& a, const File& b) {
    if (a.mtime.tv_sec != b.mtime.tv_sec) return a.mtime.tv_sec < b.mtime.tv_sec;
    return a.mtime.tv_nsec < b.mtime.tv_nsec;
  });
  uint64_t evicted = 0;
  for (const File& f : entries) {
    if (total <= max_bytes_) break;
    ::unlinkat(dir, f.name.c_str(), 0);
    const std::string src = f.name.substr(0, f.name.size() - std::strlen(kEntryExt)) + kSourceExt;
    ::unlinkat(dir, src.c_str(), 0);
    total -= f.bytes;
    ++evicted;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  counters_.evicted += evicted;
}

CacheStats DiskCache::scan(const fs::path& root) {
  std::optional<CacheDir> d = open_existing(root);
  return d ? scan_directory(d->kernels_fd()) : CacheStats{};
}

CacheStats DiskCache::stats() const {
  CacheStats s = usable_ ? scan_directory(cache_dir_.kernels_fd()) : CacheStats{};
  std::lock_guard<std::mutex> lock(mutex_);
  s.hits = counters_.hits;
  s.misses = counters_.misses;
  s.stores = counters_.stores;
  s.corrupt = counters_.corrupt;
  s.evicted = counters_.evicted;
  s.skipped = counters_.skipped;
  return s;
}

uint64_t DiskCache::clear(const fs::path& root) {
  std::optional<CacheDir> d = open_existing(root);
  if (!d) return 0;
  const int dir = d->kernels_fd();
  uint64_t removed = 0;
  for (const std::string& name : list_names(dir)) {
    // A live process's temporary file is left to its rename.
    if (!ends_with(name, kEntryExt) && !ends_with(name, kSourceExt) && !is_orphan_temp(name))
      continue;
    struct stat st;
    if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || S_ISDIR(st.st_mode))
      continue;
    if (::unlinkat(dir, name.c_str(), 0) == 0) ++removed;  // the name, never a link's target
  }
  return removed;
}

}  // namespace stax
