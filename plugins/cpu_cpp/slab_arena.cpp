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
  for (auto& c : chunks_) ::munmap(c->base, 3 * c->size);
}

bool SlabArena::init() {
  std::lock_guard<std::mutex> lock(mutex_);
  return !chunks_.empty() || map_chunk(chunk_bytes_);
}

bool SlabArena::map_chunk(size_t size) {
  if (size > kMaxChunkBytes) {
    error_ = "a JIT link needs " + std::to_string(size) + " bytes, more than the " +
             std::to_string(kMaxChunkBytes) + " of the largest code chunk";
    return false;
  }
  // One reservation for the three views (slab_arena.h, "The code model"), then each view mapped
  // over its third of it.
  void* reserved =
      ::mmap(nullptr, 3 * size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (reserved == MAP_FAILED) {
    error_ = errno_text("mmap (reserving the JIT's code chunk)");
    return false;
  }
  const int fd = code_memfd();
  if (fd < 0) {
    error_ = errno_text("memfd_create");
    ::munmap(reserved, 3 * size);
    return false;
  }
  auto chunk = std::make_unique<Chunk>();
  chunk->size = size;
  chunk->base = static_cast<char*>(reserved);
  bool ok = ::ftruncate(fd, static_cast<off_t>(size)) == 0;
  if (!ok) error_ = errno_text("ftruncate of the JIT's code chunk");
  auto view = [&](size_t third, int prot, char** out) {
    if (!ok) return;
    void* at = chunk->base + third * size;
    if (::mmap(at, size, prot, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) {
      error_ = errno_text("mmap of the JIT's code chunk");
      ok = false;
      return;
    }
    *out = static_cast<char*>(at);
  };
  view(0, PROT_READ | PROT_EXEC, &chunk->rx);
  view(1, PROT_READ, &chunk->ro);
  view(2, PROT_READ | PROT_WRITE, &chunk->rw);
  ::close(fd);  // the mappings keep the memory
  if (!ok) {
    ::munmap(reserved, 3 * size);
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

bool SlabArena::check_request(Request* r) {
  if (r->size == 0 || r->align == 0 || (r->align & (r->align - 1)) != 0 || r->align > page_) {
    error_ = "a JIT allocation of " + std::to_string(r->size) + " bytes aligned to " +
             std::to_string(r->align) + " (the arena gives 1.." + std::to_string(page_) +
             "-byte alignment to non-empty pieces)";
    return false;
  }
  if (r->size > kMaxChunkBytes) {
    error_ = "a JIT allocation of " + std::to_string(r->size) + " bytes, more than the " +
             std::to_string(kMaxChunkBytes) + " of the largest code chunk";
    return false;
  }
  r->size = round_up(r->size, r->own_pages ? page_ : kGranule);
  if (r->own_pages) r->align = page_;
  r->align = std::max(r->align, kGranule);
  return true;
}

bool SlabArena::carve_all(size_t index, const std::vector<Request>& requests,
                          std::vector<Piece>* out) {
  out->clear();
  for (const Request& r : requests) {
    Piece piece;
    if (!carve(index, r.size, r.align, &piece)) {
      for (const Piece& p : *out) free_locked(p);
      out->clear();
      return false;
    }
    out->push_back(piece);
    used_ += piece.size;
    ++pieces_;
  }
  return true;
}

SlabArena::Piece SlabArena::allocate(size_t size, size_t align, bool own_pages) {
  std::vector<Piece> one;
  if (!allocate_group({Request{size, align, own_pages}}, &one)) return {};
  return one[0];
}

bool SlabArena::allocate_group(const std::vector<Request>& requests, std::vector<Piece>* out) {
  out->clear();
  std::lock_guard<std::mutex> lock(mutex_);
  if (broken_) {
    error_ = "the JIT's code memory could not be copied after fork(); this process links no more "
             "kernels";
    return false;
  }
  std::vector<Request> rounded = requests;
  size_t worst = 0;  // what a fresh chunk needs for all of them, alignment gaps included
  for (Request& r : rounded) {
    if (!check_request(&r)) return false;
    worst += r.size + r.align;
  }
  for (size_t i = 0; i < chunks_.size(); ++i)
    if (carve_all(i, rounded, out)) return true;
  if (!map_chunk(std::max(chunk_bytes_, round_up(worst, page_)))) return false;
  if (carve_all(chunks_.size() - 1, rounded, out)) return true;
  error_ = "no room for a JIT link in a fresh code chunk";  // not expected: `worst` fits
  return false;
}

void SlabArena::free(const Piece& piece) {
  if (!piece) return;
  std::lock_guard<std::mutex> lock(mutex_);
  free_locked(piece);
}

void SlabArena::free_locked(const Piece& piece) {
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
