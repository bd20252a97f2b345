#include "core/cache/disk_cache.h"

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

namespace stax {

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'S', 'T', 'A', 'X', 'K', 'C', '0', '2'};
constexpr size_t kHeader = 8 + 3 * 8;
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

uint64_t mix64(uint64_t x) {  // the splitmix64 finalizer
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

uint64_t load_u64(const unsigned char* p) {  // little-endian, any alignment: one load
  uint64_t v;
  std::memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  return v;
}

uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

constexpr uint64_t kK1 = 0x9e3779b97f4a7c15ull;  // odd constants with mixed bits
constexpr uint64_t kK2 = 0xc2b2ae3d27d4eb4full;
constexpr uint64_t kK3 = 0x165667b19e3779f9ull;

// One lane's step: the word enters through a multiplication, the rotation spreads the high
// product bits down before the next one.
uint64_t lane_step(uint64_t acc, uint64_t word) { return rotl(acc + word * kK2, 29) * kK1; }

// Writes all of `data` to fd; false on an error (errno set).
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

// An open file descriptor, closed on scope exit.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// The file's bytes (fd open for reading); nothing when it cannot be read; at most `limit` bytes
// (a larger file comes back as its first `limit` + 1 bytes, which no entry check accepts).
std::optional<std::string> read_fd(int fd, uint64_t limit) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return std::nullopt;
  uint64_t size = std::min<uint64_t>(static_cast<uint64_t>(st.st_size), limit + 1);
  std::string out(static_cast<size_t>(size), '\0');
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

void fsync_dir(const fs::path& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

// ".tmp-<pid>-..." of a process that no longer exists.
bool is_orphan_temp(const std::string& name) {
  if (name.rfind(kTempPrefix, 0) != 0) return false;
  long pid = std::strtol(name.c_str() + std::strlen(kTempPrefix), nullptr, 10);
  if (pid <= 0) return true;
  return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

std::mutex& warned_mutex() {
  static std::mutex m;
  return m;
}
std::set<std::string>& warned_roots() {
  static std::set<std::string> s;
  return s;
}

}  // namespace

uint64_t hash64(std::string_view bytes, uint64_t seed) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t n = bytes.size();
  uint64_t a = seed + kK1, b = seed ^ kK2, c = seed + kK3, d = seed - kK1;
  while (n >= 32) {  // four independent chains: the multiplications overlap
    a = lane_step(a, load_u64(p));
    b = lane_step(b, load_u64(p + 8));
    c = lane_step(c, load_u64(p + 16));
    d = lane_step(d, load_u64(p + 24));
    p += 32;
    n -= 32;
  }
  uint64_t h = mix64(a) ^ rotl(mix64(b), 16) ^ rotl(mix64(c), 32) ^ rotl(mix64(d), 48);
  h ^= static_cast<uint64_t>(bytes.size()) * kK3;
  for (; n >= 8; p += 8, n -= 8) h = lane_step(h, load_u64(p));
  for (; n > 0; ++p, --n) h = rotl(h ^ (*p * kK3), 23) * kK1;
  return mix64(h);
}

uint64_t entry_checksum(std::string_view key, std::string_view payload) {
  return hash64(payload, hash64(key));
}

uint64_t fnv1a64(std::string_view bytes, uint64_t seed) {
  uint64_t h = seed;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string hash128_hex(std::string_view bytes) {
  uint64_t a = hash64(bytes, 0x84222325cbf29ce4ull);
  uint64_t b = hash64(bytes, 0x2545f4914f6cdd1dull);
  static const char* digits = "0123456789abcdef";
  std::string out(32, '0');
  for (int i = 0; i < 16; ++i) {
    out[15 - i] = digits[(a >> (4 * i)) & 15];
    out[31 - i] = digits[(b >> (4 * i)) & 15];
  }
  return out;
}

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
    char* end = nullptr;
    unsigned long long v = std::strtoull(env, &end, 10);
    if (end && *end == '\0' && v > 0) s.max_bytes = v;
  }
  return s;
}

DiskCache::DiskCache(fs::path root, uint64_t max_bytes)
    : root_(std::move(root)), dir_(root_ / "kernels"), max_bytes_(max_bytes) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) {
    warn("cannot create " + dir_.string() + " (" + ec.message() + ")");
    return;
  }
  if (::access(dir_.c_str(), R_OK | W_OK | X_OK) != 0) {
    warn(dir_.string() + " is not writable (" + std::strerror(errno) + ")");
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

std::optional<std::string> DiskCache::load(std::string_view key) {
  if (!usable_) return std::nullopt;
  const fs::path path = entry_path(key);
  // An entry larger than the whole cache may be is damaged: never read it all into memory.
  Fd fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  std::optional<std::string> file = fd.fd >= 0 ? read_fd(fd.fd, max_bytes_) : std::nullopt;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!file) {
    ++counters_.misses;
    return std::nullopt;
  }
  const std::string& f = *file;
  bool ok = f.size() >= kHeader && std::memcmp(f.data(), kMagic, 8) == 0;
  uint64_t key_size = ok ? get_u64(f.data() + 8) : 0;
  uint64_t payload_size = ok ? get_u64(f.data() + 16) : 0;
  ok = ok && key_size <= f.size() && payload_size <= f.size() &&
       kHeader + key_size + payload_size == f.size();
  std::string_view stored_key, payload;
  if (ok) {
    stored_key = std::string_view(f).substr(kHeader, key_size);
    payload = std::string_view(f).substr(kHeader + key_size, payload_size);
    ok = entry_checksum(stored_key, payload) == get_u64(f.data() + 24);
  }
  if (!ok) {  // torn, truncated, zero-length or corrupt: never loaded
    std::error_code ec;
    fs::remove(path, ec);
    ++counters_.corrupt;
    ++counters_.misses;
    return std::nullopt;
  }
  if (stored_key != key) {  // a hash collision: a miss (the store overwrites it)
    ++counters_.misses;
    return std::nullopt;
  }
  ::futimens(fd.fd, nullptr);  // LRU: now (through the open file: no second path lookup)
  ++counters_.hits;
  file->erase(0, kHeader + key_size);  // the payload, in the buffer it was read into
  return file;
}

void DiskCache::store(std::string_view key, std::string_view payload, std::string_view source) {
  if (!usable_) return;
  static std::atomic<uint64_t> counter{0};
  const std::string hash = hash128_hex(key);
  std::string body;
  body.reserve(kHeader + key.size() + payload.size());
  body.append(kMagic, 8);
  put_u64(body, key.size());
  put_u64(body, payload.size());
  put_u64(body, entry_checksum(key, payload));
  body.append(key);
  body.append(payload);

  // Writes `bytes` to `target` through a temporary file, fsync and rename.
  auto write_atomically = [&](const fs::path& target, std::string_view bytes,
                              bool hook) -> bool {
    const fs::path tmp = dir_ / (std::string(kTempPrefix) + std::to_string(::getpid()) + "-" +
                                 std::to_string(counter.fetch_add(1)) + "-" +
                                 target.filename().string() + ".part");
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
      warn("cannot write " + tmp.string() + " (" + std::strerror(errno) + ")");
      return false;
    }
    size_t half = bytes.size() / 2;
    bool ok = write_all(fd, bytes.data(), half);
    if (ok && hook && test_after_partial_write) test_after_partial_write();
    ok = ok && write_all(fd, bytes.data() + half, bytes.size() - half) && ::fsync(fd) == 0;
    int saved = errno;
    ::close(fd);
    if (ok && ::rename(tmp.c_str(), target.c_str()) == 0) return true;
    if (!ok) errno = saved;
    std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    std::cerr << "stax: warning: kernel cache: cannot write " << target.string() << " (" << why
              << "); the kernel is not cached\n";
    return false;
  };
  if (!source.empty()) write_atomically(dir_ / (hash + kSourceExt), source, false);
  if (!usable_) return;
  if (!write_atomically(dir_ / (hash + kEntryExt), body, true)) return;
  fsync_dir(dir_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++counters_.stores;
  }
  evict();
}

void DiskCache::remove(std::string_view key) {
  std::error_code ec;
  const fs::path entry = entry_path(key);
  fs::remove(entry, ec);
  fs::remove(fs::path(entry).replace_extension(kSourceExt), ec);
}

void DiskCache::evict() {
  struct File {
    fs::path path;
    uint64_t bytes;
    struct timespec mtime;
  };
  std::vector<File> entries;
  uint64_t total = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (is_orphan_temp(name)) {
      std::error_code rm;
      fs::remove(it->path(), rm);
      continue;
    }
    if (it->path().extension() != kEntryExt) continue;
    struct stat st;
    if (::stat(it->path().c_str(), &st) != 0) continue;
    uint64_t bytes = static_cast<uint64_t>(st.st_size);
    struct stat src;
    if (::stat(fs::path(it->path()).replace_extension(kSourceExt).c_str(), &src) == 0)
      bytes += static_cast<uint64_t>(src.st_size);
    entries.push_back({it->path(), bytes, st.st_mtim});
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
    std::error_code rm;
    fs::remove(f.path, rm);
    fs::remove(fs::path(f.path).replace_extension(kSourceExt), rm);
    total -= f.bytes;
    ++evicted;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  counters_.evicted += evicted;
}

CacheStats DiskCache::scan(const fs::path& root) {
  CacheStats s;
  std::error_code ec;
  for (fs::directory_iterator it(root / "kernels", ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code e2;
    const auto ext = it->path().extension();
    if (ext == kEntryExt) ++s.entries;
    if (ext == kEntryExt || ext == kSourceExt) s.bytes += fs::file_size(it->path(), e2);
  }
  return s;
}

CacheStats DiskCache::stats() const {
  CacheStats s = usable_ ? scan(root_) : CacheStats{};
  std::lock_guard<std::mutex> lock(mutex_);
  s.hits = counters_.hits;
  s.misses = counters_.misses;
  s.stores = counters_.stores;
  s.corrupt = counters_.corrupt;
  s.evicted = counters_.evicted;
  return s;
}

uint64_t DiskCache::clear(const fs::path& root) {
  uint64_t removed = 0;
  std::error_code ec;
  std::vector<fs::path> files;
  for (fs::directory_iterator it(root / "kernels", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const auto ext = it->path().extension();
    // A live process's temporary file is left to its rename.
    if (ext == kEntryExt || ext == kSourceExt || is_orphan_temp(name)) files.push_back(it->path());
  }
  for (const fs::path& p : files) {
    std::error_code rm;
    if (fs::remove(p, rm)) ++removed;
  }
  return removed;
}

}  // namespace stax
