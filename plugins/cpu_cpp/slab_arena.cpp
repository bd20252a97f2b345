// See slab_arena.h.
#include "plugins/cpu_cpp/slab_arena.h"

#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <iterator>

namespace stax::cpu {

namespace {

constexpr size_t kGranule = 64;

size_t round_up(size_t v, size_t to) { return (v + to - 1) / to * to; }

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

// A memfd whose pages may be mapped executable: MFD_EXEC where the kernel knows it (with
// vm.memfd_noexec=1 a memfd without it is sealed non-executable), else without it (an older
// kernel rejects the unknown flag).
int code_memfd() {
#ifdef MFD_EXEC
  const int fd = ::memfd_create("stax-jit-code", MFD_CLOEXEC | MFD_EXEC);
  if (fd >= 0 || errno != EINVAL) return fd;
#endif
  return ::memfd_create("stax-jit-code", MFD_CLOEXEC);
}

// fork(): the chunks are MAP_SHARED, so without care a child would share the parent's code
// memory, and a kernel either of them links into a piece it thinks is free would overwrite the
// other's code. Every live arena is registered; pthread_atfork's handlers hold all their mutexes
// across fork() (no piece is being carved at that moment) and give the child private copies of
// its chunks (SlabArena::after_fork_in_child), as the default manager's private mappings would
// be after fork.
// The registry. The mutex is constant-initialised and trivially destructible (no exit-time
// destructor), so the atfork handlers may use it at any moment, even while statics are being
// destroyed. The list lives on the heap only while some arena does (created by the first, freed
// by the last): a list that outlived every arena would be a leak once the plugin is unloaded
// (LeakSanitizer, fuzz_compile_compare), and a static one could be destroyed at exit before an
// arena that a host's static still owns (heap-use-after-free in ~SlabArena).
std::mutex registry_mutex;
std::vector<SlabArena*>* registry = nullptr;

}  // namespace

void SlabArena::before_fork() {
  registry_mutex.lock();
  if (registry)
    for (SlabArena* a : *registry) a->mutex_.lock();
}

void SlabArena::after_fork_in_parent() {
  if (registry)
    for (SlabArena* a : *registry) a->mutex_.unlock();
  registry_mutex.unlock();
}

void SlabArena::after_fork_in_child() {
  if (registry)
    for (SlabArena* a : *registry) {
      a->privatize();
      a->mutex_.unlock();
    }
  registry_mutex.unlock();
}

// In a child after fork: each chunk's three views are mapped again, at the same addresses, from a
// new memfd holding a copy of the chunk. If that fails (no memory or descriptors), the chunk's
// views become private copies (code keeps running; the RW view no longer reaches the others)
// and the arena refuses further pieces.
void SlabArena::privatize() {
  for (auto& c : chunks_) {
    bool ok = false;
    const int fd = code_memfd();
    if (fd >= 0) {
      ok = ::ftruncate(fd, static_cast<off_t>(c->size)) == 0;
      for (size_t done = 0; ok && done < c->size;) {
        const ssize_t n = ::pwrite(fd, c->rw + done, c->size - done, static_cast<off_t>(done));
        if (n <= 0) ok = false;
        else done += static_cast<size_t>(n);
      }
      const std::pair<char*, int> views[] = {{c->rw, PROT_READ | PROT_WRITE},
                                             {c->rx, PROT_READ | PROT_EXEC},
                                             {c->ro, PROT_READ}};
      for (const auto& [at, prot] : views)
        if (ok && ::mmap(at, c->size, prot, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED)
          ok = false;
      ::close(fd);
    }
    if (ok) continue;
    // A private copy in place of each view.
    for (auto [at, prot] : {std::pair<char*, int>{c->rw, PROT_READ | PROT_WRITE},
                            std::pair<char*, int>{c->rx, PROT_READ | PROT_EXEC},
                            std::pair<char*, int>{c->ro, PROT_READ}}) {
      std::vector<char> copy(at, at + c->size);
      if (::mmap(at, c->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
                 -1, 0) != MAP_FAILED) {
        std::memcpy(at, copy.data(), c->size);
        ::mprotect(at, c->size, prot);
      }
    }
    broken_ = true;
  }
}

SlabArena::SlabArena(size_t chunk_bytes, size_t populate_bytes)
    : chunk_bytes_(chunk_bytes), populate_bytes_(populate_bytes) {
  static std::once_flag once;
  std::call_once(once, [] {
    ::pthread_atfork(&SlabArena::before_fork, &SlabArena::after_fork_in_parent,
                     &SlabArena::after_fork_in_child);
  });
  {
    std::lock_guard<std::mutex> lock(registry_mutex);
    if (!registry) registry = new std::vector<SlabArena*>;
    registry->push_back(this);
  }
  long page = ::sysconf(_SC_PAGESIZE);
  page_ = page > 0 ? static_cast<size_t>(page) : 4096;
  chunk_bytes_ = round_up(chunk_bytes_ == 0 ? page_ : chunk_bytes_, page_);
}

SlabArena::~SlabArena() {
  {
    std::lock_guard<std::mutex> lock(registry_mutex);
    registry->erase(std::remove(registry->begin(), registry->end(), this), registry->end());
    if (registry->empty()) {
      delete registry;
      registry = nullptr;
    }
  }
  for (auto& c : chunks_) {
    ::munmap(c->rw, c->size);
    ::munmap(c->rx, c->size);
    ::munmap(c->ro, c->size);
  }
}

bool SlabArena::init() {
  std::lock_guard<std::mutex> lock(mutex_);
  return !chunks_.empty() || map_chunk(chunk_bytes_);
}

bool SlabArena::map_chunk(size_t size) {
  const int fd = code_memfd();
  if (fd < 0) {
    error_ = errno_text("memfd_create");
    return false;
  }
  auto chunk = std::make_unique<Chunk>();
  chunk->size = size;
  bool ok = ::ftruncate(fd, static_cast<off_t>(size)) == 0;
  if (!ok) error_ = errno_text("ftruncate of the JIT's code chunk");
  auto view = [&](int prot, char** out) {
    if (!ok) return;
    void* p = ::mmap(nullptr, size, prot, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      error_ = errno_text("mmap of the JIT's code chunk");
      ok = false;
      return;
    }
    *out = static_cast<char*>(p);
  };
  view(PROT_READ | PROT_WRITE, &chunk->rw);
  view(PROT_READ | PROT_EXEC, &chunk->rx);
  view(PROT_READ, &chunk->ro);
  ::close(fd);  // the mappings keep the memory
  if (!ok) {
    for (char* p : {chunk->rw, chunk->rx, chunk->ro})
      if (p) ::munmap(p, size);
    return false;
  }
  // The first pages of the first chunk are written now (allocated and mapped in the RW view, at
  // ~3 us a page here): the first kernels of a process link into them without a page fault. The
  // rest fault in once, on first use (a freed piece is reused with its pages). The RX and R views
  // fault their pages in when a kernel first runs, not while it links.
  if (chunks_.empty() && populate_bytes_ > 0) std::memset(chunk->rw, 0, std::min(size, populate_bytes_));
  chunk->free.emplace(0, size);
  chunks_.push_back(std::move(chunk));
  return true;
}

bool SlabArena::carve(size_t index, size_t size, size_t align, Piece* out) {
  Chunk& c = *chunks_[index];
  for (auto it = c.free.begin(); it != c.free.end(); ++it) {
    const size_t start = it->first, end = it->first + it->second;
    const size_t at = round_up(start, align);
    if (at + size > end) continue;
    c.free.erase(it);
    if (at > start) c.free.emplace(start, at - start);
    if (at + size < end) c.free.emplace(at + size, end - (at + size));
    *out = Piece{index, at, size, c.rw + at, c.rx + at, c.ro + at};
    return true;
  }
  return false;
}

SlabArena::Piece SlabArena::allocate(size_t size, size_t align, bool own_pages) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (size == 0 || align == 0 || (align & (align - 1)) != 0 || align > page_) {
    error_ = "a JIT allocation of " + std::to_string(size) + " bytes aligned to " +
             std::to_string(align) + " (the arena gives 1.." + std::to_string(page_) +
             "-byte alignment to non-empty pieces)";
    return {};
  }
  if (broken_) {
    error_ = "the JIT's code memory could not be copied after fork(); this process links no more "
             "kernels";
    return {};
  }
  size = round_up(size, own_pages ? page_ : kGranule);
  if (own_pages) align = page_;
  align = std::max(align, kGranule);
  Piece piece;
  for (size_t i = 0; i < chunks_.size(); ++i)
    if (carve(i, size, align, &piece)) break;
  if (!piece) {
    if (!map_chunk(std::max(chunk_bytes_, round_up(size, page_))) ||
        !carve(chunks_.size() - 1, size, align, &piece))
      return {};
  }
  used_ += piece.size;
  ++pieces_;
  return piece;
}

void SlabArena::free(const Piece& piece) {
  if (!piece) return;
  std::lock_guard<std::mutex> lock(mutex_);
  Chunk& c = *chunks_.at(piece.chunk);
  size_t start = piece.offset, size = piece.size;
  auto next = c.free.lower_bound(start);
  if (next != c.free.end() && start + size == next->first) {  // merge with the next extent
    size += next->second;
    next = c.free.erase(next);
  }
  if (next != c.free.begin()) {  // and with the previous one
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      size += prev->second;
      c.free.erase(prev);
    }
  }
  c.free.emplace(start, size);
  used_ -= piece.size;
  --pieces_;
}

SlabStats SlabArena::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  SlabStats s;
  s.chunks = chunks_.size();
  for (const auto& c : chunks_) {
    s.mapped_bytes += c->size;
    for (const auto& [offset, size] : c->free) s.largest_free = std::max(s.largest_free, size);
  }
  s.used_bytes = used_;
  s.pieces = pieces_;
  return s;
}

}  // namespace stax::cpu
