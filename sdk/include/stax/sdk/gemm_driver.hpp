// multiply() of stax/sdk/gemm.hpp: packing, cache blocking and the parallel tasks around the
// register tiles of gemm_tiles.hpp.
//
// For one product: B is packed once (K x N in blocks of KC terms, each block in panels of NR
// columns, zero-padded) by the tasks that read it, in the product's one parallel region; a task
// takes a block of at most MC rows (the row blocks are of equal size, within a tile row, and a
// multiple of the thread count, so the threads finish together; when there are too few row
// blocks for the threads, a group of column panels; a short, wide product runs as one column
// lane per thread instead: entry_parallel), packs its rows of A per KC block into panels of MR
// rows (or reads them in place: a row-major A, or a transposed one of moderate row stride), and
// runs the tiles with the column panel outermost (the KC x NR panel of B stays in L1 / L2 while
// the MC x KC block of A streams from L2), each tile prefetching the next one's C. Every term block
// accumulates onto the C tile the previous one stored, so each element still sees its terms in
// order. A batch of small products runs one entry per task instead.
#ifndef STAX_SDK_GEMM_DRIVER_HPP
#define STAX_SDK_GEMM_DRIVER_HPP

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

#include "stax/sdk/gemm_tiles.hpp"

namespace stax::sdk::gemm {

namespace detail {

// Rows of a tile are at most this many elements (6 x 64, 24 x 16, ...): the edge buffer's size.
constexpr int kMaxTileElems = 512;
// Below this many multiply-adds a product runs on the calling thread (a parallel_for costs
// microseconds; 2^18 terms take ~2 us on one AVX-512 core).
constexpr int64_t kParallelMinTerms = int64_t{1} << 18;
// Packed B panels of a term block up to this size are looped over inside each row of tiles.
constexpr int64_t kSmallPanelsBytes = int64_t{64} << 10;
// Tiles of at most this many terms prefetch the next tile's C: with attention's K = 32 a tile's
// stores wait on C's misses (Q @ Kᵀ 1.07-1.4x faster, A/B-interleaved); with 256 terms and more
// they are under 1% of the tile's time, and the prefetches only compete with A's stream (P @ V).
constexpr int64_t kPrefetchCTerms = 128;
// A transposed A whose tile reads span at most this many bytes (a term block's terms x Aᵀ's row
// stride) is read in place by the tiles instead of packed (plan).
constexpr int64_t kAtInPlaceBytes = int64_t{1} << 20;
// ... or whose term blocks are at most this many bytes of a row when there are at most 2 column
// panels.
constexpr int64_t kAtFewPanelsTermBytes = 2048;
// A batch whose entries are smaller than this is spread over its entries.
constexpr int64_t kSmallEntryTerms = int64_t{1} << 24;

// 64-byte aligned memory; throws OutOfMemory.
inline void* allocate_aligned(size_t bytes, const char* what) {
  void* p = ::operator new(bytes, std::align_val_t(64), std::nothrow);
  if (!p) throw OutOfMemory(bytes, what);
  return p;
}
inline void free_aligned(void* p) { ::operator delete(p, std::align_val_t(64)); }

}  // namespace detail

class Workspace {
 public:
  static constexpr size_t kMaxKeptBytes = size_t{64} << 20;
  Workspace() = default;
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  ~Workspace() {
    for (const Block& b : free_) detail::free_aligned(b.data);
  }

  // A block of at least `bytes` (the smallest kept one that fits, else a new one).
  void* take(size_t bytes, const char* what, size_t* got) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      size_t best = free_.size();
      for (size_t i = 0; i < free_.size(); ++i)
        if (free_[i].bytes >= bytes && (best == free_.size() || free_[i].bytes < free_[best].bytes))
          best = i;
      if (best < free_.size()) {
        Block b = free_[best];
        free_.erase(free_.begin() + static_cast<long>(best));
        *got = b.bytes;
        return b.data;
      }
    }
    *got = bytes;
    return detail::allocate_aligned(bytes, what);
  }
  void give_back(void* data, size_t bytes) {
    if (bytes > kMaxKeptBytes) return detail::free_aligned(data);
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back({data, bytes});
  }

 private:
  struct Block {
    void* data;
    size_t bytes;
  };
  std::mutex mutex_;
  std::vector<Block> free_;
};

namespace detail {

// Scratch for `elems` elements, from the workspace when there is one; throws OutOfMemory.
template <class T>
class Scratch {
 public:
  Scratch(Workspace* ws, int64_t elems, const char* what) : ws_(ws) {
    if (elems <= 0) return;
    if (static_cast<uint64_t>(elems) > SIZE_MAX / sizeof(T)) throw OutOfMemory(SIZE_MAX, what);
    bytes_ = static_cast<size_t>(elems) * sizeof(T);
    data_ = static_cast<T*>(ws_ ? ws_->take(bytes_, what, &bytes_) : allocate_aligned(bytes_, what));
  }
  ~Scratch() {
    if (!data_) return;
    if (ws_) ws_->give_back(data_, bytes_);
    else free_aligned(data_);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  T* get() const { return data_; }

 private:
  Workspace* ws_;
  T* data_ = nullptr;
  size_t bytes_ = 0;
};

// Exceptions thrown by tasks (which must not throw into a thread pool): the first is kept and
// rethrown by the caller after the parallel loop.
class FirstError {
 public:
  template <class F>
  void run(F&& f) noexcept {
    try {
      f();
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
  }
  void rethrow() const {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  std::mutex mutex_;
  std::exception_ptr error_;
};

template <class T>
struct Blocking {
  TileShape<T> tile;
  int64_t kc = 1;        // terms per block
  int64_t mc = 1;          // rows per block at most (a multiple of tile.mr)
  int64_t m = 0;           // rows of the product
  int64_t tile_rows = 0;   // ceil(m / tile.mr)
  int64_t row_blocks = 1;  // blocks of whole tile rows, as equal as they can be
  int64_t k_blocks = 0;    // ceil(k / kc)
  int64_t panels = 0;    // ceil(n / tile.nr)
  // On several threads: column groups (the panels split in this many ranges), and whether each
  // group is one task (a lane) that runs every row block of its columns in order, packing its own
  // panels of B (a short, wide product: few rows, B the larger operand); otherwise the tasks are
  // (row block, column group) pairs that share B's packing.
  int64_t col_groups = 1;
  bool lanes = false;
  // Whether the tiles read A where it is (row-major A; a transposed A of moderate row stride:
  // plan) instead of packed panels.
  bool a_in_place = false;
  // 16 x 16 transposes for packing a transposed B (float on AVX-512), or null.
  void (*transpose16)(const T*, int64_t, T*, int64_t) = nullptr;
  // Strided rows copied into zero-padded rows of a given width (avx512::copy_rows), or null.
  void (*copy_rows)(const T*, int64_t, T*, int64_t, int64_t, int64_t, int64_t) = nullptr;

  int64_t block_terms(int64_t kb, int64_t k) const { return std::min(kc, k - kb * kc); }
  // Elements of one entry's packed B (block kb starts at kb * kc * panels * nr).
  int64_t packed_b_elems(int64_t k) const { return k * panels * tile.nr; }
  int64_t packed_a_elems() const { return mc * kc; }
  // The first row of row block rb (rb = row_blocks: m).
  int64_t row_begin(int64_t rb) const {
    return std::min(m, tile.mr * (tile_rows * rb / row_blocks));
  }
};

template <class T>
Blocking<T> plan(const Problem<T>& p, InstructionSet set, int64_t threads) {
  Blocking<T> b;
  b.tile = pick_tile<T>(std::max(set, detect_instruction_set()), p.n);
  const int64_t mr = b.tile.mr;
  // 4 KB of terms per row (1024 floats): fewer passes over C (1024^3: 131 -> 143 GFLOP/s with
  // KC = 512 against 256 on the Xeon, A/B-interleaved; 1024 against 512 on the AMD EPYC: 1024^3
  // 1.5-2% less thread CPU time, six interleaved pairs at loadavg 6, with Aᵀ or Bᵀ too). The A
  // block (MC x KC, up to 768 KB) is read once per column panel; its rows stream from L2 / L3
  // past the B panel (KC x 64, 256 KB).
  b.kc = std::is_same_v<T, float> ? 1024 : 256;
  b.kc = std::max<int64_t>(1, std::min(b.kc, p.k));
  // An MC x KC block of A takes up to ~400 KB of the 1-2 MB L2: at most `most` tile rows per
  // block. On T threads, at least 2 blocks per thread while they keep 4 tile rows each, and a
  // multiple of T blocks of equal size (within a tile row), so that the threads finish together
  // (1024 rows on 2 threads: 6 blocks of 28-29 tile rows, not 5 x 192 + 64 rows, where one
  // thread computed 576 rows and the other 448).
  const int64_t most = std::max<int64_t>(1, (std::is_same_v<T, float> ? 192 : 96) / mr);
  b.m = p.m;
  b.tile_rows = (p.m + mr - 1) / mr;
  int64_t blocks = (b.tile_rows + most - 1) / most;
  b.k_blocks = (p.k + b.kc - 1) / b.kc;
  b.panels = (p.n + b.tile.nr - 1) / b.tile.nr;
  // Panels per lane as even as they can be: the fullest lane at most 1/8 above the mean (6
  // panels on 4 threads, 2 against 1.5, are row blocks instead).
  const int64_t lane_panels = (b.panels + threads - 1) / threads;
  const bool even_lanes = (lane_panels * threads - b.panels) * 8 <= b.panels;
  if (threads > 1 && b.panels >= threads && even_lanes && p.n >= p.m &&
      b.tile_rows <= 2 * most) {
    // Few rows (at most two blocks of A) and at least as many columns (the GPT block's weight
    // gradients: 128 x 384 x 512, 128 x 512 x 512 with Aᵀ): one column group per thread, each a
    // lane over its row blocks. Each thread packs and reads only its panels of B, the larger
    // operand, and no thread waits for another's packing; A is read by every lane (in place, or
    // packed where it is transposed with long rows). Row blocks of 5-6 tile rows shared B and
    // left one thread 12 tile rows of 22 to the other's 10. The lane's row blocks are of ~4 tile
    // rows (a B panel streams from L2 for each tile whatever the block), so that a thread done
    // with its lane can take the rest of a lane whose thread the OS descheduled (a loaded
    // machine).
    b.col_groups = threads;
    b.lanes = true;
    blocks = std::max(blocks, (b.tile_rows + 3) / 4);
  } else if (threads > 1) {
    blocks = std::max(blocks, std::min(2 * threads, b.tile_rows / std::min<int64_t>(most, 4)));
    blocks = (blocks + threads - 1) / threads * threads;
  }
  b.row_blocks = std::clamp<int64_t>(blocks, 1, std::max<int64_t>(1, b.tile_rows));
  b.mc = (b.tile_rows + b.row_blocks - 1) / b.row_blocks * mr;
  if (threads > 1 && !b.lanes)  // too few row blocks for the threads: column groups too
    b.col_groups = std::clamp<int64_t>((2 * threads + b.row_blocks - 1) / b.row_blocks, 1,
                                       b.panels);
  // A transposed A is read in place too (each term's MR rows are contiguous, the next term's a row
  // of Aᵀ away) while a tile's terms span at most kAtInPlaceBytes of it: no lane or row block
  // packs it (on 2 threads every lane packed all of it), and the GPT block's Aᵀ products take
  // 0.86-0.97x the time on 1 thread, 0.68-0.90x on 2 (docs/gemm.md "Aᵀ read in place"). Spans of
  // 2 MB and more (1024 terms 2-4 KB apart, 8 KB rows) were 1.0-1.1x: those stay packed, unless
  // there are at most 2 column panels and term blocks of at most 2 KB (512 floats): the packed
  // panels are then read once or twice, and packing costs more than the strided reads
  // (1024-4096 x 64-128 x 256-512: 0.66-0.88x; with 1024 terms 1.06-1.30x).
  const int64_t elem = static_cast<int64_t>(sizeof(T));
  const bool at_in_place = b.kc * p.a_cs * elem <= kAtInPlaceBytes ||
                           (b.panels <= 2 && b.kc * elem <= kAtFewPanelsTermBytes);
  b.a_in_place = p.a_cs == 1 || (p.a_rs == 1 && p.a_cs > 1 && at_in_place);
#if STAX_GEMM_X86
  if constexpr (std::is_same_v<T, float>)
    if (std::max(set, detect_instruction_set()) == InstructionSet::Avx512) {
      b.transpose16 = &avx512::transpose16;
      b.copy_rows = &avx512::copy_rows;
    }
#endif
  return b;
}

// Packs term block kb of B's panels [jp0, jp1) into bp (the entry's packed B). A row-major B is
// read row by row (one stream in, a stream per panel out), any other layout column by column.
template <class T>
void pack_b(const Problem<T>& p, const T* b, const Blocking<T>& bl, int64_t kb, int64_t jp0,
            int64_t jp1, T* bp) {
  const int64_t nr = bl.tile.nr, q0 = kb * bl.kc, kcb = bl.block_terms(kb, p.k);
  T* block = bp + kb * bl.kc * bl.panels * nr;
  if (p.b_cs == 1 && bl.copy_rows) {  // each panel: kcb rows of its columns, vector copies
    for (int64_t jp = jp0; jp < jp1; ++jp) {
      const int64_t j0 = jp * nr;
      bl.copy_rows(b + q0 * p.b_rs + j0, p.b_rs, block + jp * kcb * nr, nr, kcb,
                   std::min(nr, p.n - j0), nr);
    }
    return;
  }
  if (p.b_cs == 1) {
    for (int64_t q = 0; q < kcb; ++q) {
      const T* src = b + (q0 + q) * p.b_rs;
      for (int64_t jp = jp0; jp < jp1; ++jp) {
        T* dst = block + jp * kcb * nr + q * nr;
        const int64_t j0 = jp * nr, w = std::min(nr, p.n - j0);
        for (int64_t j = 0; j < w; ++j) dst[j] = src[j0 + j];
        for (int64_t j = w; j < nr; ++j) dst[j] = T(0);
      }
    }
    return;
  }
  for (int64_t jp = jp0; jp < jp1; ++jp) {
    T* dst = block + jp * kcb * nr;
    const int64_t j0 = jp * nr, w = std::min(nr, p.n - j0);
    int64_t j = 0;
    if (p.b_rs == 1 && bl.transpose16)  // a transposed B, 16 x 16 blocks in registers
      for (; j + 16 <= w; j += 16) {
        int64_t q = 0;
        for (; q + 16 <= kcb; q += 16)
          bl.transpose16(b + (j0 + j) * p.b_cs + q0 + q, p.b_cs, dst + q * nr + j, nr);
        for (; q < kcb; ++q)
          for (int64_t jj = j; jj < j + 16; ++jj) dst[q * nr + jj] = b[(j0 + jj) * p.b_cs + q0 + q];
      }
    for (; j < w; ++j) {
      const T* src = b + q0 * p.b_rs + (j0 + j) * p.b_cs;
      for (int64_t q = 0; q < kcb; ++q) dst[q * nr + j] = src[q * p.b_rs];
    }
    if (w < nr)
      for (int64_t q = 0; q < kcb; ++q) std::fill(dst + q * nr + w, dst + q * nr + nr, T(0));
  }
}

// Packs rows [r0, r1) of A over term block kb into panels of mr rows (ap[ip * kcb * mr + q * mr
// + i]), zero-padding the last panel.
template <class T>
void pack_a(const Problem<T>& p, const T* a, const Blocking<T>& bl, int64_t kb, int64_t r0,
            int64_t r1, T* ap) {
  const int64_t mr = bl.tile.mr, q0 = kb * bl.kc, kcb = bl.block_terms(kb, p.k);
  if (p.a_rs == 1 && bl.copy_rows) {
    // A transposed A (dW = Xᵀ·dY): each term's rows [r0, r1) are contiguous in memory, a row of
    // Aᵀ lda apart from the next term's. Chunks of kTermChunk terms, every panel of the block
    // per chunk: the chunk's lines and pages stay in L1 and its TLB while all panels take their
    // mr rows from them. One panel at a time over all kcb terms (before) touched kcb pages per
    // panel: 1024³ with Aᵀ took 1.08-1.10x the time with A; in chunks of 8 / 16 / 32 / 64 terms
    // 1.05-1.07 / 1.03-1.06 / 1.07-1.10 / 1.09 (thread CPU time, interleaved, loadavg 5).
    constexpr int64_t kTermChunk = 16;
    for (int64_t qc = 0; qc < kcb; qc += kTermChunk) {
      const int64_t rows = std::min(kTermChunk, kcb - qc);
      for (int64_t i0 = r0, ip = 0; i0 < r1; i0 += mr, ++ip)
        bl.copy_rows(a + i0 + (q0 + qc) * p.a_cs, p.a_cs, ap + ip * kcb * mr + qc * mr, mr, rows,
                     std::min(mr, r1 - i0), mr);
    }
    return;
  }
  for (int64_t i0 = r0, ip = 0; i0 < r1; i0 += mr, ++ip) {
    T* dst = ap + ip * kcb * mr;
    const int64_t h = std::min(mr, r1 - i0);
    if (p.a_rs == 1 && h > 1) {
      for (int64_t q = 0; q < kcb; ++q) {
        const T* src = a + i0 + (q0 + q) * p.a_cs;
        for (int64_t i = 0; i < h; ++i) dst[q * mr + i] = src[i];
        for (int64_t i = h; i < mr; ++i) dst[q * mr + i] = T(0);
      }
    } else {
      for (int64_t i = 0; i < h; ++i) {
        const T* src = a + (i0 + i) * p.a_rs + q0 * p.a_cs;
        for (int64_t q = 0; q < kcb; ++q) dst[q * mr + i] = src[q * p.a_cs];
      }
      for (int64_t i = h; i < mr; ++i)
        for (int64_t q = 0; q < kcb; ++q) dst[q * mr + i] = T(0);
    }
  }
}

// C rows [r0, r1) x column panels [jp0, jp1) of one entry, every term block, from its packed B;
// ap is scratch for mc x kc elements. Rows of a row-major A are read in place (six streams the
// prefetchers follow; packing them cost ~10% at 1024^3), and so is a transposed A when
// Blocking::a_in_place (one stream, a row of Aᵀ per term); other layouts are packed. A last
// panel of h < mr rows runs the tile of h rows where the set has one (TileShape::rows: AVX-512's
// 6-row tiles), from A in place or packed, straight into C. Without one it is packed (a zero-
// padded panel through the edge buffer), or, read in place with a single term block, it is the
// block's last mr rows: the rows it shares with the panel before are computed again, to the
// same bits, and stored again before the block is reported (the partial panel through the edge
// buffer and its packing took ~6% of attention's Q @ Kᵀ; the 4 rows computed again were 3% of a
// 128-row product, which the tile of h rows saves: 0.92-0.99x the time of the GPT block's dW).
template <class T>
void compute_block(const Problem<T>& p, const T* a, const T* bp, T* c, const Blocking<T>& bl,
                   int64_t r0, int64_t r1, int64_t jp0, int64_t jp1, T* ap) {
  const int64_t mr = bl.tile.mr, nr = bl.tile.nr;
  const bool in_place = bl.a_in_place;
  // The tile for a partial last tile row of h = (r1 - r0) % mr rows, if the set has one.
  const int64_t part = (r1 - r0) % mr;
  const TileFn<T> part_fn = part > 0 && bl.tile.rows ? bl.tile.rows[part] : nullptr;
  const int64_t full_end = in_place && !part_fn ? r1 - part : r1;  // in place: rows below it
  const bool overlap = in_place && full_end < r1 && r1 - r0 >= mr && bl.k_blocks == 1;
  // The first row of the tile for rows from i0 (the last mr rows for a partial one, above).
  auto first_row = [&](int64_t i0) { return overlap && i0 == full_end ? r1 - mr : i0; };
  for (int64_t kb = 0; kb < bl.k_blocks; ++kb) {
    const int64_t q0 = kb * bl.kc, kcb = bl.block_terms(kb, p.k);
    const bool accumulate = kb > 0;
    if (!in_place) pack_a(p, a, bl, kb, r0, r1, ap);
    else if (full_end < r1 && !overlap) pack_a(p, a, bl, kb, full_end, r1, ap);
    const T* block = bp + kb * bl.kc * bl.panels * nr;
    // Whether the tile at (jp, i0) is whole, written to C directly.
    auto whole = [&](int64_t jp, int64_t i0) {
      return first_row(i0) + mr <= r1 && (jp + 1) * nr <= p.n && p.c_cs == 1;
    };
    auto tile = [&](int64_t jp, int64_t i0, int64_t next_jp, int64_t next_i0) {
      i0 = first_row(i0);
      next_i0 = first_row(next_i0);
      const T* bpanel = block + jp * kcb * nr;
      const int64_t j0 = jp * nr, w = std::min(nr, p.n - j0);
      const int64_t h = std::min(mr, r1 - i0);
      T* cp = c + i0 * p.c_rs + j0 * p.c_cs;
      const TileFn<T> fn = h < mr && part_fn ? part_fn : bl.tile.fn;  // h rows, or all mr
      const T* ar =
          in_place && (i0 + mr <= r1 || part_fn) ? a + i0 * p.a_rs + q0 * p.a_cs : nullptr;
      const int64_t ars = ar ? p.a_rs : 1, acs = ar ? p.a_cs : mr;
      if (!ar) ar = ap + (in_place ? 0 : (i0 - r0) / mr * kcb * mr);
      if ((h == mr || part_fn) && w == nr && p.c_cs == 1) {
        const bool prefetch = kcb <= kPrefetchCTerms && next_jp >= 0 && whole(next_jp, next_i0);
        const T* next = prefetch ? c + next_i0 * p.c_rs + next_jp * nr : nullptr;
        return fn(kcb, ar, ars, acs, bpanel, cp, p.c_rs, accumulate, next);
      }
      alignas(64) T edge[kMaxTileElems];  // the tile through a buffer: partial or strided C
      if (accumulate)
        for (int64_t i = 0; i < h; ++i)
          for (int64_t j = 0; j < w; ++j) edge[i * nr + j] = cp[i * p.c_rs + j * p.c_cs];
      fn(kcb, ar, ars, acs, bpanel, edge, nr, accumulate, nullptr);
      for (int64_t i = 0; i < h; ++i)
        for (int64_t j = 0; j < w; ++j) cp[i * p.c_rs + j * p.c_cs] = edge[i * nr + j];
    };
    // The term block's panels of B all in L1 / L2 (few terms: attention's head dim): rows
    // outermost, so each row of C is written whole, once, in order. Otherwise the column panel
    // outermost, its B panel kept in cache while the rows of A stream past it. Each tile is
    // told the next one (jp -1: none), whose C it prefetches.
    if (kcb * (jp1 - jp0) * nr * static_cast<int64_t>(sizeof(T)) <= kSmallPanelsBytes) {
      for (int64_t i0 = r0; i0 < r1; i0 += mr)
        for (int64_t jp = jp0; jp < jp1; ++jp) {
          if (jp + 1 < jp1) tile(jp, i0, jp + 1, i0);
          else tile(jp, i0, i0 + mr < r1 ? jp0 : -1, i0 + mr);
        }
    } else {
      for (int64_t jp = jp0; jp < jp1; ++jp)
        for (int64_t i0 = r0; i0 < r1; i0 += mr) {
          if (i0 + mr < r1) tile(jp, i0, jp, i0 + mr);
          else tile(jp, i0, jp + 1 < jp1 ? jp + 1 : -1, r0);
        }
    }
  }
}

// Whether B already is its packed form: one panel, row-major with rows of exactly NR (a head
// dim equal to the tile width: attention's P @ V), so every term block is read in place.
template <class T>
bool b_is_packed(const Problem<T>& p, const Blocking<T>& bl) {
  return bl.panels == 1 && p.n == bl.tile.nr && p.b_cs == 1 && p.b_rs == bl.tile.nr;
}

// One entry on the calling thread. packed_from: the B that bp holds packed already (entries of
// a batch that share their B, a weight broadcast over the batch: bmm(x, W.expand(...)), pack it
// once), updated here.
template <class T>
void entry_serial(const Problem<T>& p, const Blocking<T>& bl, int64_t e, T* bp, T* ap,
                  const RowsDone& done, const T*& packed_from) {
  const T* a = p.a + p.a_offset(e);
  const T* b = p.b + p.b_offset(e);
  T* c = p.c + p.c_offset(e);
  const T* packed = bp;
  if (b_is_packed(p, bl)) {
    packed = b;
  } else if (b != packed_from) {
    for (int64_t kb = 0; kb < bl.k_blocks; ++kb) pack_b(p, b, bl, kb, 0, bl.panels, bp);
    packed_from = b;
  }
  for (int64_t rb = 0; rb < bl.row_blocks; ++rb) {
    const int64_t r0 = bl.row_begin(rb), r1 = bl.row_begin(rb + 1);
    compute_block(p, a, packed, c, bl, r0, r1, 0, bl.panels, ap);
    if (done) done(e, r0, r1);
  }
}

// Waits for a flag that another running task sets (it claimed the work before this task looked).
inline void wait_for(const std::atomic<uint32_t>& flag) {
  for (int spins = 0; !flag.load(std::memory_order_acquire); ++spins) {
    if (spins < 256) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    } else {
      std::this_thread::yield();  // the packer may have been descheduled (a loaded machine)
    }
  }
}

// Row block of the t-th row task (row_blocks a multiple of threads): every other round of
// `threads` tasks in reverse, so that a thread that drew a smaller block (the blocks differ by a
// tile row) draws a larger one next: 22 tile rows in blocks of 5, 6, 5, 6 on 2 threads gave one
// thread 12 and the other 10 (tasks are claimed in order, the first thread done takes the next).
inline int64_t snake_row_block(int64_t t, int64_t row_blocks, int64_t threads) {
  if (row_blocks % threads != 0) return t;
  const int64_t round = t / threads, i = t % threads;
  return round * threads + (round % 2 ? threads - 1 - i : i);
}

// One entry spread over the threads in one parallel region. Tasks are column lanes (a task per
// column group: Blocking::lanes) or (row block, column group) pairs. B's packing is part of the
// tasks: each column group's panels are cut into units (term block, run of panels) that the
// group's tasks claim from a counter, pack, and flag; a task computes once every unit of its
// group is flagged. (Before: B was packed by a parallel_for of its own, a second region with its
// wake-up and barrier per product.) A lane claims its row blocks from its group's counter, then
// takes what is left of the other lanes (packing their units if their threads have not started:
// a descheduled thread holds back at most the row block it is computing).
template <class T>
void entry_parallel(const Problem<T>& p, const Blocking<T>& bl, int64_t e, T* bp,
                    const Context& ctx, const RowsDone& done, const T*& packed_from) {
  const T* a = p.a + p.a_offset(e);
  const T* b = p.b + p.b_offset(e);
  T* c = p.c + p.c_offset(e);
  const int64_t threads = std::max(1, ctx.threads);
  const T* packed = bp;
  bool pack = false;
  if (b_is_packed(p, bl)) {
    packed = b;
  } else if (b != packed_from) {
    packed_from = b;
    pack = true;
  }
  const int64_t row_blocks = bl.row_blocks, groups = bl.col_groups;
  const int64_t tasks = bl.lanes ? groups : row_blocks * groups;
  // Pack units per group: runs of the group's panels (2 per thread in all), per term block.
  const int64_t runs = std::max<int64_t>(1, (2 * threads + groups - 1) / groups);
  const int64_t units = bl.k_blocks * runs;
  std::unique_ptr<std::atomic<int64_t>[]> left(new std::atomic<int64_t>[row_blocks]);
  for (int64_t r = 0; r < row_blocks; ++r) left[r].store(groups, std::memory_order_relaxed);
  std::unique_ptr<std::atomic<int64_t>[]> next_unit(new std::atomic<int64_t>[groups]);
  std::unique_ptr<std::atomic<int64_t>[]> next_rows(new std::atomic<int64_t>[groups]);
  for (int64_t g = 0; g < groups; ++g) {
    next_unit[g].store(0, std::memory_order_relaxed);
    next_rows[g].store(0, std::memory_order_relaxed);
  }
  std::unique_ptr<std::atomic<uint32_t>[]> packed_unit;
  if (pack) {
    packed_unit.reset(new std::atomic<uint32_t>[groups * units]);
    for (int64_t u = 0; u < groups * units; ++u) packed_unit[u].store(0, std::memory_order_relaxed);
  }
  auto panels_of = [&](int64_t g, int64_t* jp0, int64_t* jp1) {
    *jp0 = bl.panels * g / groups;
    *jp1 = bl.panels * (g + 1) / groups;
  };
  // Helps pack group g's panels, then waits for the units that other tasks claimed.
  auto ensure_packed = [&](int64_t g) {
    if (!pack) return;
    int64_t jp0, jp1;
    panels_of(g, &jp0, &jp1);
    for (int64_t u; (u = next_unit[g].fetch_add(1, std::memory_order_relaxed)) < units;) {
      const int64_t kb = u / runs, i = u % runs;
      pack_b(p, b, bl, kb, jp0 + (jp1 - jp0) * i / runs, jp0 + (jp1 - jp0) * (i + 1) / runs, bp);
      packed_unit[g * units + u].store(1, std::memory_order_release);
    }
    for (int64_t u = 0; u < units; ++u) wait_for(packed_unit[g * units + u]);
  };
  FirstError error;
  ctx.parallel_for(tasks, [&](int64_t t) {
    error.run([&] {
      Scratch<T> ap(ctx.workspace, bl.packed_a_elems(), "gemm: packed rows of A");
      auto rows = [&](int64_t g, int64_t rb) {
        int64_t jp0, jp1;
        panels_of(g, &jp0, &jp1);
        const int64_t r0 = bl.row_begin(rb), r1 = bl.row_begin(rb + 1);
        compute_block(p, a, packed, c, bl, r0, r1, jp0, jp1, ap.get());
        if (left[rb].fetch_sub(1, std::memory_order_acq_rel) == 1 && done) done(e, r0, r1);
      };
      if (!bl.lanes) {
        const int64_t g = t % groups;
        ensure_packed(g);
        return rows(g, groups == 1 ? snake_row_block(t, row_blocks, threads) : t / groups);
      }
      for (int64_t i = 0; i < groups; ++i) {  // its own lane, then what is left of the others
        const int64_t g = (t + i) % groups;
        if (next_rows[g].load(std::memory_order_relaxed) >= row_blocks) continue;
        ensure_packed(g);
        for (int64_t rb; (rb = next_rows[g].fetch_add(1, std::memory_order_relaxed)) < row_blocks;)
          rows(g, rb);
      }
    });
  });
  error.rethrow();
}

template <class T>
void zero_product(const Problem<T>& p, const RowsDone& done) {
  for (int64_t e = 0; e < p.batch; ++e) {
    T* c = p.c + p.c_offset(e);
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) c[i * p.c_rs + j * p.c_cs] = T(0);
    if (done) done(e, 0, p.m);
  }
}

// A batch whose entries all read one B and whose A and C entries follow each other row after row
// (bmm(x, W.expand(B, K, N)) of a contiguous x: torch's matmul of a 3-D input that it did not
// fold, the GPT block's output projection) is one product of batch * m rows: every element keeps
// its chain of terms, so the same bits, with one B packed once, the row blocks and threads of one
// product, and one partial tile row instead of one per entry. Sets *folded and returns true then.
template <class T>
bool fold_batch(const Problem<T>& p, Problem<T>* folded) {
  if (p.batch <= 1 || p.c_rs == 0) return false;
  const int64_t a0 = p.a_offset(0), b0 = p.b_offset(0), c0 = p.c_offset(0);
  for (int64_t e = 1; e < p.batch; ++e)
    if (p.b_offset(e) != b0 || p.a_offset(e) != a0 + e * p.m * p.a_rs ||
        p.c_offset(e) != c0 + e * p.m * p.c_rs)
      return false;
  *folded = p;
  folded->batch = 1;
  folded->m = p.batch * p.m;
  folded->a = p.a + a0;
  folded->b = p.b + b0;
  folded->c = p.c + c0;
  folded->a_bs = folded->b_bs = folded->c_bs = 0;
  folded->a_offsets = folded->b_offsets = folded->c_offsets = nullptr;
  return true;
}

}  // namespace detail

template <class T>
void multiply(const Problem<T>& p, const Context& ctx, const RowsDone& done) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "stax::sdk::gemm::multiply: float or double");
  using namespace detail;
  if (p.batch <= 0 || p.m <= 0 || p.n <= 0) return;
  Problem<T> folded;
  if (p.k > 0 && fold_batch(p, &folded)) {
    if (!done) return multiply(folded, ctx, done);
    // Rows of the folded product back to (entry, rows of the entry), a block that spans entries
    // reported per entry (still disjoint, still covering C).
    const int64_t m = p.m;
    return multiply(folded, ctx, [&done, m](int64_t, int64_t r0, int64_t r1) {
      for (int64_t e = r0 / m; e * m < r1; ++e)
        done(e, std::max(r0, e * m) - e * m, std::min(r1, (e + 1) * m) - e * m);
    });
  }
  if (p.k <= 0) return zero_product(p, done);
  const int64_t threads = ctx.parallel_for ? std::max(1, ctx.threads) : 1;
  const int64_t entry_terms = p.m * p.n * p.k;
  const bool parallel = threads > 1 && entry_terms * p.batch >= kParallelMinTerms;
  if (parallel && p.batch > 1 && (entry_terms < kSmallEntryTerms || p.batch >= 2 * threads)) {
    // A batch of small products: contiguous runs of entries per task, each with its own scratch.
    const Blocking<T> bl = plan(p, ctx.instruction_set, 1);
    const int64_t tasks = std::min(p.batch, 4 * threads);
    FirstError error;
    ctx.parallel_for(tasks, [&](int64_t t) {
      error.run([&] {
        Scratch<T> bp(ctx.workspace, bl.packed_b_elems(p.k), "gemm: packed columns of B");
        Scratch<T> ap(ctx.workspace, bl.packed_a_elems(), "gemm: packed rows of A");
        const T* packed_from = nullptr;
        for (int64_t e = p.batch * t / tasks; e < p.batch * (t + 1) / tasks; ++e)
          entry_serial(p, bl, e, bp.get(), ap.get(), done, packed_from);
      });
    });
    return error.rethrow();
  }
  const Blocking<T> bl = plan(p, ctx.instruction_set, parallel ? threads : 1);
  Scratch<T> bp(ctx.workspace, bl.packed_b_elems(p.k), "gemm: packed columns of B");
  const T* packed_from = nullptr;
  if (!parallel) {
    Scratch<T> ap(ctx.workspace, bl.packed_a_elems(), "gemm: packed rows of A");
    for (int64_t e = 0; e < p.batch; ++e)
      entry_serial(p, bl, e, bp.get(), ap.get(), done, packed_from);
    return;
  }
  for (int64_t e = 0; e < p.batch; ++e) entry_parallel(p, bl, e, bp.get(), ctx, done, packed_from);
}

inline const char* instruction_set_name(InstructionSet set) {
  switch (set) {
    case InstructionSet::Avx512: return "avx512";
    case InstructionSet::Avx2: return "avx2";
    case InstructionSet::Portable: return "scalar";
  }
  return "scalar";
}

}  // namespace stax::sdk::gemm

#endif  // STAX_SDK_GEMM_DRIVER_HPP
