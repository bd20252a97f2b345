// stax::cpu::SlabArena: the memory the cpu_cpp JIT links kernels into (issue 11: a kernel-cache
// hit links every kernel of a graph; with LLVM's default memory manager each link paid an mmap,
// mprotects per segment and a munmap, and first-touch page faults on fresh pages).
//
// The arena maps chunks of a memfd three times: a read-write view (where JITLink writes and
// relocates a kernel: its "working memory"), a read-execute view (where code runs) and a
// read-only view (constants). A piece of the arena has the same offset in all three views, so a
// segment is written through the RW view and used at its address in the view of its protection:
// no mprotect is ever needed, a link makes no system call, and freed pieces are reused by later
// links (the pages stay mapped and populated: no page faults for a recycled piece). The RW alias
// of the code is the price (the "double mapping" of JITs that keep W^X per address); it stays
// inside this process.
//
// Pieces are carved first-fit out of per-chunk free lists (64-byte granules, aligned as asked up
// to a page) and coalesce when freed; a request that fits no chunk maps a new one (at least
// chunk_bytes, rounded to pages), so the arena grows but never moves a piece. Chunks stay mapped
// until the arena is destroyed: loading and freeing kernels again and again does not grow it.
//
// The code model. Kernels are compiled for the small code model (position-independent, every
// reference inside an object PC-relative with a 32-bit displacement: constants are one
// RIP-relative operand, hoisted and folded like any load). That needs the pieces of one link
// within +-2 GiB of each other, in whichever views they are used. So a chunk's three views are
// mapped side by side in one reservation of 3 x its size (any two addresses of a chunk are less
// than 3 x kMaxChunkBytes = 1.5 GiB apart), and allocate_group() carves all the pieces of a link
// out of one chunk. (The large code model, which the JIT's TargetMachine defaults to, needs
// neither, but loads every constant's 64-bit address into a register inside the loop: softmax
// ran 20-25% slower; DECISIONS item 37.)
//
// fork(): the chunks are shared mappings, so a child gets private copies of them at fork (a
// pthread_atfork handler maps each chunk again from a new memfd at the same addresses): parent and
// child never write into each other's code, as with private mappings.
//
// Plain C++ (no LLVM): clang_jit.cpp builds LLVM's JITLinkMemoryManager on it, and
// clang_jit_test tests it directly. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace stax::cpu {

struct SlabStats {
  size_t chunks = 0;        // memfd chunks mapped
  size_t mapped_bytes = 0;  // their total size (each mapped three times)
  size_t used_bytes = 0;    // bytes in live pieces (granule-rounded)
  size_t pieces = 0;        // live pieces
  size_t largest_free = 0;  // the largest free extent of any chunk
};

class SlabArena {
 public:
  // One piece: `size` bytes at the same offset in the three views.
  struct Piece {
    size_t chunk = 0;
    size_t offset = 0;
    size_t size = 0;  // granule-rounded
    char* rw = nullptr;
    char* rx = nullptr;
    char* ro = nullptr;
    explicit operator bool() const { return rw != nullptr; }
  };

  // chunk_bytes: the size of the first chunk and the least size of every later one (rounded up
  // to pages). populate_bytes: how much of the first chunk init() writes (allocating and mapping
  // its pages once, up front, instead of a page fault at the first link into each page).
  explicit SlabArena(size_t chunk_bytes = size_t{256} << 10,
                     size_t populate_bytes = size_t{64} << 10);
  ~SlabArena();
  SlabArena(const SlabArena&) = delete;
  SlabArena& operator=(const SlabArena&) = delete;

  // Maps the first chunk. False (with error() saying why: no memfd_create, no memory) when the
  // arena cannot be used; the JIT then keeps LLVM's default memory manager.
  bool init();
  const std::string& error() const { return error_; }

  // The largest chunk: a link whose pieces need more fails (error() says so).
  static constexpr size_t kMaxChunkBytes = size_t{512} << 20;

  // A piece of at least `size` bytes (size > 0), aligned to `align` (a power of two, at most a
  // page) in every view; `own_pages`: start and end on page boundaries (no other piece shares its
  // pages). An empty Piece (and error() set) when the size is invalid or no chunk can be mapped.
  Piece allocate(size_t size, size_t align, bool own_pages = false);
  // The pieces of one link, all from one chunk (see "The code model" above), as allocate() would
  // give each. All or nothing: false (error() set, `out` cleared) when a request is invalid or
  // no chunk can hold them all.
  struct Request {
    size_t size = 0;
    size_t align = 1;
    bool own_pages = false;
  };
  bool allocate_group(const std::vector<Request>& requests, std::vector<Piece>* out);
  // Returns a piece of allocate() to its chunk's free list (coalescing with its neighbours). Its
  // contents are not cleared: allocate()'s caller writes or zeroes what it uses.
  void free(const Piece& piece);

  SlabStats stats() const;
  size_t page_size() const { return page_; }

 private:
  struct Chunk {
    size_t size = 0;
    char* base = nullptr;  // the reservation of 3 x size: the RX, R and RW views, in this order
    char* rw = nullptr;
    char* rx = nullptr;
    char* ro = nullptr;
    std::map<size_t, size_t> free;  // offset -> size, disjoint and not adjacent
  };
  static void before_fork();
  static void after_fork_in_parent();
  static void after_fork_in_child();
  void privatize();             // in a child after fork, under mutex_
  bool map_chunk(size_t size);  // under mutex_
  bool carve(size_t chunk, size_t size, size_t align, Piece* out);
  bool carve_all(size_t chunk, const std::vector<Request>& requests, std::vector<Piece>* out);
  void free_locked(const Piece& piece);
  bool check_request(Request* r);  // validates and rounds; false with error_ set

  size_t chunk_bytes_;
  size_t populate_bytes_;
  size_t page_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Chunk>> chunks_;
  size_t used_ = 0;
  size_t pieces_ = 0;
  bool broken_ = false;  // privatize() could not copy a chunk: no more pieces
  std::string error_;
};

}  // namespace stax::cpu
