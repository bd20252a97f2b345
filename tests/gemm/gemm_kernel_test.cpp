// stax::sdk::gemm (sdk/include/stax/sdk/gemm.hpp): multiply() gives reference()'s bits (one fused
// multiply-add per term, in order) for every layout, batch, edge, thread count and instruction
// set; the rows-done callback sees every row once, after it is final; scratch that cannot be
// allocated is an OutOfMemory naming its size.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "stax/sdk/gemm.hpp"

namespace {

using stax::sdk::gemm::Context;
using stax::sdk::gemm::InstructionSet;
using stax::sdk::gemm::Problem;

// A parallel_for on fresh threads (each task index claimed once).
void spawn_loop(int threads, int64_t tasks, const std::function<void(int64_t)>& task) {
  std::atomic<int64_t> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (int64_t i; (i = next.fetch_add(1)) < tasks;) task(i);
    });
  for (std::thread& t : pool) t.join();
}

Context with_threads(int threads) {
  Context c;
  c.threads = threads;
  if (threads > 1)
    c.parallel_for = [threads](int64_t n, const std::function<void(int64_t)>& f) {
      spawn_loop(threads, n, f);
    };
  return c;
}

enum class Layout { RowMajor, Transposed, Strided, Padded };

// A matrix of rows x cols in its own storage with the given layout (Strided: every other
// element of a row-major matrix twice as wide, rows padded; Padded: row-major, rows 5 elements
// longer than the matrix: a slice of a wider one).
template <class T>
struct Mat {
  std::vector<T> data;
  int64_t rs = 0, cs = 0;
  Mat(int64_t rows, int64_t cols, Layout l, std::mt19937& rng, int64_t batch = 1) {
    if (l == Layout::RowMajor) {
      rs = cols;
      cs = 1;
    } else if (l == Layout::Transposed) {
      rs = 1;
      cs = rows;
    } else if (l == Layout::Padded) {
      rs = cols + 5;
      cs = 1;
    } else {
      rs = 2 * cols + 3;
      cs = 2;
    }
    int64_t span = (rows - 1) * rs + (cols - 1) * cs + 1;
    data.resize(static_cast<size_t>(std::max<int64_t>(span, 1) * batch));
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    for (T& x : data) x = static_cast<T>(dist(rng));
  }
  int64_t entry() const { return static_cast<int64_t>(data.size()); }
};

template <class T>
void expect_same_bits(const std::vector<T>& got, const std::vector<T>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0) {
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", the reference "
                    << want[i];
      return;
    }
}

template <class T>
void check_case(int64_t batch, int64_t m, int64_t n, int64_t k, Layout la, Layout lb, Layout lc,
                const Context& ctx, uint32_t seed, const std::vector<int64_t>& b_entries = {}) {
  // b_entries (one per entry): entry e reads B's matrix b_entries[e] (a B shared by entries, as
  // a weight broadcast over a batch); empty: one B per entry.
  std::mt19937 rng(seed);
  int64_t b_count = batch;
  if (!b_entries.empty()) b_count = *std::max_element(b_entries.begin(), b_entries.end()) + 1;
  Mat<T> a(m, k, la, rng, batch), b(k, n, lb, rng, b_count), c(m, n, lc, rng, batch);
  std::vector<int64_t> b_offsets;
  for (int64_t x : b_entries) b_offsets.push_back(x * (b.entry() / b_count));
  Problem<T> p;
  p.batch = batch;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a = a.data.data();
  p.a_rs = a.rs;
  p.a_cs = a.cs;
  p.a_bs = a.entry() / batch;
  p.b = b.data.data();
  p.b_rs = b.rs;
  p.b_cs = b.cs;
  p.b_bs = b.entry() / b_count;
  if (!b_offsets.empty()) p.b_offsets = b_offsets.data();
  std::vector<T> got = c.data, want = c.data;  // untouched elements must stay as they were
  p.c_rs = c.rs;
  p.c_cs = c.cs;
  p.c_bs = c.entry() / batch;
  Problem<T> ref = p;
  ref.c = want.data();
  stax::sdk::gemm::reference(ref);
  p.c = got.data();
  // Every row reported once, and already equal to the reference when reported.
  std::mutex mu;
  std::vector<int> seen(static_cast<size_t>(batch * m), 0);
  bool early = false;
  stax::sdk::gemm::multiply(p, ctx, [&](int64_t e, int64_t r0, int64_t r1) {
    std::lock_guard<std::mutex> lock(mu);
    for (int64_t i = r0; i < r1; ++i) {
      ++seen[static_cast<size_t>(e * m + i)];
      for (int64_t j = 0; j < n; ++j) {
        size_t at = static_cast<size_t>(e * p.c_bs + i * p.c_rs + j * p.c_cs);
        if (std::memcmp(&got[at], &want[at], sizeof(T)) != 0) early = true;
      }
    }
  });
  SCOPED_TRACE(::testing::Message() << "batch " << batch << " m " << m << " n " << n << " k "
                                    << k << " layouts " << int(la) << int(lb) << int(lc)
                                    << " threads " << ctx.threads << " set "
                                    << stax::sdk::gemm::instruction_set_name(ctx.instruction_set));
  expect_same_bits(got, want, "C");
  EXPECT_FALSE(early) << "a row was reported before it was final";
  for (int s : seen) ASSERT_EQ(s, 1) << "a row reported " << s << " times";
}

template <class T>
void sweep(const Context& ctx) {
  const int64_t sizes[][3] = {{1, 1, 1},   {7, 5, 3},    {6, 64, 17},  {13, 65, 300},
                              {31, 17, 1}, {64, 33, 96}, {97, 130, 257}, {5, 200, 600}};
  uint32_t seed = 1;
  for (const auto& s : sizes)
    for (Layout la : {Layout::RowMajor, Layout::Transposed, Layout::Strided})
      for (Layout lb : {Layout::RowMajor, Layout::Transposed, Layout::Strided})
        check_case<T>(1, s[0], s[1], s[2], la, lb, Layout::RowMajor, ctx, seed++);
  check_case<T>(1, 37, 41, 29, Layout::RowMajor, Layout::RowMajor, Layout::Transposed, ctx, 91);
  check_case<T>(1, 37, 41, 29, Layout::Strided, Layout::RowMajor, Layout::Strided, ctx, 92);
  // Batches: attention's shape scaled down (K^T read transposed), and many tiny entries.
  check_case<T>(12, 40, 40, 8, Layout::RowMajor, Layout::Transposed, Layout::RowMajor, ctx, 93);
  check_case<T>(9, 40, 8, 40, Layout::RowMajor, Layout::RowMajor, Layout::RowMajor, ctx, 94);
  // P @ V with a head dim of one tile (B read in place: it is its own packed form), and Kᵀ
  // packed in 16 x 16 transposes.
  check_case<T>(5, 45, 32, 70, Layout::RowMajor, Layout::RowMajor, Layout::RowMajor, ctx, 96);
  check_case<T>(5, 45, 64, 70, Layout::RowMajor, Layout::RowMajor, Layout::RowMajor, ctx, 97);
  check_case<T>(3, 40, 70, 48, Layout::RowMajor, Layout::Transposed, Layout::RowMajor, ctx, 98);
  check_case<T>(33, 3, 2, 5, Layout::Transposed, Layout::Strided, Layout::RowMajor, ctx, 95);
}

TEST(GemmKernel, SameBitsAsReferenceOnEveryInstructionSetAndThreadCount) {
  for (InstructionSet set : {InstructionSet::Avx512, InstructionSet::Avx2, InstructionSet::Portable})
    for (int threads : {1, 2, 3}) {
      Context ctx = with_threads(threads);
      ctx.instruction_set = set;
      sweep<float>(ctx);
      sweep<double>(ctx);
    }
}

TEST(GemmKernel, GptBlockShapesKeepTheBits) {
  // The GPT block's products (K = 128..512, N a multiple of the tile width): a row-major B, also
  // with padded rows (a slice of a wider matrix), packed by the vector copies (avx512::copy_rows),
  // and A transposed (dW = dYᵀ·X: its row panels copied the same way); a last panel of columns
  // that is partial (N = 100: the copy's masked tail and zeroed lanes).
  stax::sdk::gemm::Workspace ws;
  for (InstructionSet set : {InstructionSet::Avx512, InstructionSet::Avx2, InstructionSet::Portable})
    for (int threads : {1, 2, 3}) {
      Context ctx = with_threads(threads);
      ctx.workspace = &ws;
      ctx.instruction_set = set;
      int seed = 200;
      for (Layout lb : {Layout::RowMajor, Layout::Padded}) {
        check_case<float>(1, 45, 128, 128, Layout::RowMajor, lb, Layout::RowMajor, ctx, seed++);
        check_case<float>(1, 40, 384, 128, Layout::Transposed, lb, Layout::RowMajor, ctx, seed++);
        check_case<float>(1, 50, 512, 512, Layout::RowMajor, lb, Layout::RowMajor, ctx, seed++);
        check_case<float>(1, 20, 640, 512, Layout::Transposed, lb, Layout::RowMajor, ctx, seed++);
        check_case<float>(2, 30, 100, 130, Layout::RowMajor, lb, Layout::RowMajor, ctx, seed++);
        check_case<double>(1, 30, 64, 200, Layout::RowMajor, lb, Layout::RowMajor, ctx, seed++);
      }
    }
}

TEST(GemmKernel, LargeProductsSplitAcrossThreadsKeepTheBits) {
  // Large enough for the parallel paths: row blocks with shared packed B, column groups (few
  // rows), several term blocks, and a batch spread over its entries.
  stax::sdk::gemm::Workspace ws;
  for (int threads : {1, 2, 4}) {
    Context ctx = with_threads(threads);
    ctx.workspace = &ws;
    check_case<float>(1, 300, 200, 700, Layout::RowMajor, Layout::RowMajor, Layout::RowMajor, ctx, 7);
    check_case<float>(1, 12, 900, 300, Layout::RowMajor, Layout::Transposed, Layout::RowMajor, ctx, 8);
    check_case<float>(16, 64, 64, 32, Layout::RowMajor, Layout::Transposed, Layout::RowMajor, ctx, 9);
    check_case<double>(1, 150, 100, 300, Layout::Transposed, Layout::RowMajor, Layout::RowMajor, ctx,
                       10);
  }
}

TEST(GemmKernel, AttentionShapesAndBalancedRowBlocksKeepTheBits) {
  // Attention's Q @ Kᵀ at its real entry size (K = 32: one term block, rows of tiles, each tile
  // prefetching the next one's C; 256 rows leave a partial tile of 4) and P @ V; row counts that
  // split into row blocks of equal size for 2 and 3 threads (1000 rows: 167 tile rows, the last
  // partial), fewer tile rows than threads, and a product whose column panels are outermost (the
  // prefetch wraps from a panel's last row to the next panel's first). A block's partial last
  // panel of rows, with one term block and A read in place, is its last MR rows, overlapping the
  // panel before (16 rows: in column groups on 2 and 3 threads; 11 rows, strided C).
  stax::sdk::gemm::Workspace ws;
  for (InstructionSet set : {InstructionSet::Avx512, InstructionSet::Avx2, InstructionSet::Portable})
    for (int threads : {1, 2, 3}) {
      Context ctx = with_threads(threads);
      ctx.workspace = &ws;
      ctx.instruction_set = set;
      check_case<float>(3, 256, 256, 32, Layout::RowMajor, Layout::Transposed, Layout::RowMajor,
                        ctx, 11);
      check_case<float>(3, 256, 32, 256, Layout::RowMajor, Layout::RowMajor, Layout::RowMajor, ctx,
                        12);
      check_case<float>(1, 1000, 70, 40, Layout::RowMajor, Layout::RowMajor, Layout::RowMajor, ctx,
                        13);
      check_case<float>(1, 1000, 64, 600, Layout::RowMajor, Layout::Transposed, Layout::RowMajor,
                        ctx, 14);
      check_case<float>(1, 7, 300, 200, Layout::RowMajor, Layout::RowMajor, Layout::RowMajor, ctx,
                        15);
      check_case<float>(1, 16, 900, 100, Layout::RowMajor, Layout::RowMajor, Layout::RowMajor, ctx,
                        18);
      check_case<float>(2, 11, 40, 20, Layout::RowMajor, Layout::Transposed, Layout::Strided, ctx,
                        19);
      check_case<float>(1, 50, 200, 600, Layout::RowMajor, Layout::RowMajor, Layout::Strided, ctx,
                        16);
      check_case<double>(2, 250, 130, 33, Layout::RowMajor, Layout::Transposed, Layout::RowMajor,
                         ctx, 17);
    }
}

TEST(GemmKernel, ColumnLanesAndOneRegionSplitsKeepTheBits) {
  // The parallel plan of one entry: a short, wide product (few rows, at least as many columns:
  // the GPT block's weight gradients) runs as one column lane per thread, each packing its own
  // panels of B; others as row blocks (in snake order) that pack B together inside the same
  // parallel region, each unit of panels flagged when packed.
  using stax::sdk::gemm::detail::plan;
  using stax::sdk::gemm::detail::snake_row_block;
  Problem<float> p;
  p.m = 128;
  p.n = 384;
  p.k = 512;
  p.a_rs = 1;
  p.a_cs = 128;
  for (int threads : {2, 3}) {
    auto bl = plan(p, InstructionSet::Avx512, threads);
    EXPECT_TRUE(bl.lanes) << threads;
    EXPECT_EQ(bl.col_groups, threads);
    EXPECT_EQ(bl.mc * bl.row_blocks >= p.m, true);
  }
  EXPECT_FALSE(plan(p, InstructionSet::Avx512, 1).lanes);
  if (stax::sdk::gemm::detect_instruction_set() == InstructionSet::Avx512)
    EXPECT_FALSE(plan(p, InstructionSet::Avx512, 4).lanes)  // 6 panels of 64: 2, 1, 2, 1
        << "uneven lanes";
  p.m = 512;
  p.n = 128;  // taller than wide: row blocks, a multiple of the threads
  auto rows = plan(p, InstructionSet::Avx512, 2);
  EXPECT_FALSE(rows.lanes);
  EXPECT_EQ(rows.col_groups, 1);
  EXPECT_EQ(rows.row_blocks % 2, 0);
  // Snake order: a permutation, every other round of `threads` tasks reversed.
  const int64_t four_on_two[] = {0, 1, 3, 2}, six_on_three[] = {0, 1, 2, 5, 4, 3};
  for (int64_t t = 0; t < 4; ++t) EXPECT_EQ(snake_row_block(t, 4, 2), four_on_two[t]);
  for (int64_t t = 0; t < 6; ++t) EXPECT_EQ(snake_row_block(t, 6, 3), six_on_three[t]);
  for (int64_t t = 0; t < 5; ++t) EXPECT_EQ(snake_row_block(t, 5, 2), t);  // not a multiple

  // Values: the reference's bits, every row reported once and final. Lanes with a partial tile
  // row and a partial panel, two term blocks (each lane packs both), Aᵀ and A row-major, Bᵀ
  // (transposes) and B row-major or padded; a lane over two row blocks (300 rows); strided A and
  // C (C through the edge buffer); doubles (term blocks of 256: five per lane); row blocks in
  // snake order with both transposes (523 rows: 4 blocks on 2 threads, 6 on 3). Float on
  // AVX-512 (6 x 64 tiles) is the GPT block's case; AVX2 and scalar tiles split differently
  // (more panels; the (row block, column group) grid where there are few tile rows).
  stax::sdk::gemm::Workspace ws;
  for (InstructionSet set : {InstructionSet::Avx512, InstructionSet::Avx2, InstructionSet::Portable})
    for (int threads : {1, 2, 3}) {
      Context ctx = with_threads(threads);
      ctx.workspace = &ws;
      ctx.instruction_set = set;
      check_case<float>(1, 61, 389, 1030, Layout::Transposed, Layout::RowMajor, Layout::RowMajor,
                        ctx, 400);
      check_case<float>(1, 61, 389, 1030, Layout::RowMajor, Layout::Transposed, Layout::RowMajor,
                        ctx, 401);
      check_case<float>(1, 300, 400, 96, Layout::Transposed, Layout::Transposed, Layout::RowMajor,
                        ctx, 402);
      check_case<float>(1, 37, 200, 300, Layout::Strided, Layout::Padded, Layout::RowMajor, ctx,
                        403);
      check_case<float>(1, 40, 500, 64, Layout::RowMajor, Layout::RowMajor, Layout::Transposed,
                        ctx, 404);
      check_case<double>(1, 50, 300, 1100, Layout::Transposed, Layout::RowMajor, Layout::RowMajor,
                         ctx, 405);
      check_case<float>(1, 523, 130, 257, Layout::Transposed, Layout::Transposed,
                        Layout::RowMajor, ctx, 406);
      // The GPT block's dW of 128 x 128 x 512: a panel per lane on 2 threads, row blocks on 3.
      check_case<float>(1, 128, 128, 512, Layout::Transposed, Layout::RowMajor, Layout::RowMajor,
                        ctx, 407);
    }
  // A pool whose other threads never run (descheduled): the tasks of a 2- or 3-thread plan run
  // one after another on the caller, first to last or last to first. The first lane to run
  // computes its own row blocks, then packs and computes every other lane's (the path that takes
  // over a descheduled thread's lane); the later lanes find nothing left.
  for (bool reversed : {false, true})
    for (int threads : {2, 3}) {
      Context ctx;
      ctx.threads = threads;
      ctx.workspace = &ws;
      ctx.parallel_for = [reversed](int64_t n, const std::function<void(int64_t)>& f) {
        for (int64_t i = 0; i < n; ++i) f(reversed ? n - 1 - i : i);
      };
      check_case<float>(1, 128, 384, 512, Layout::Transposed, Layout::RowMajor, Layout::RowMajor,
                        ctx, 410);
      check_case<float>(1, 61, 389, 1030, Layout::RowMajor, Layout::Transposed, Layout::RowMajor,
                        ctx, 411);
      check_case<double>(1, 50, 300, 1100, Layout::Transposed, Layout::Padded, Layout::RowMajor,
                         ctx, 412);
      check_case<float>(1, 523, 130, 257, Layout::RowMajor, Layout::Transposed, Layout::RowMajor,
                        ctx, 413);
    }
}

// Runs one entry on the calling thread with the given plan, on C = `c0` (its initial values).
template <class T>
std::vector<T> run_entry(const Problem<T>& p, const stax::sdk::gemm::detail::Blocking<T>& bl,
                         const std::vector<T>& c0) {
  std::vector<T> c = c0, bp(static_cast<size_t>(bl.packed_b_elems(p.k))),
                 ap(static_cast<size_t>(bl.packed_a_elems()));
  Problem<T> q = p;
  q.c = c.data();
  const T* packed_from = nullptr;
  stax::sdk::gemm::detail::entry_serial(q, bl, 0, bp.data(), ap.data(), {}, packed_from);
  return c;
}

template <class T>
void check_transposed_a_both_ways(int64_t m, int64_t n, int64_t k, Layout lb, InstructionSet set,
                                  uint32_t seed) {
  std::mt19937 rng(seed);
  Mat<T> a(m, k, Layout::Transposed, rng), b(k, n, lb, rng), c(m, n, Layout::RowMajor, rng);
  Problem<T> p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a = a.data.data();
  p.a_rs = a.rs;
  p.a_cs = a.cs;
  p.b = b.data.data();
  p.b_rs = b.rs;
  p.b_cs = b.cs;
  p.c_rs = c.rs;
  p.c_cs = c.cs;
  std::vector<T> want = c.data;
  Problem<T> ref = p;
  ref.c = want.data();
  stax::sdk::gemm::reference(ref);
  auto bl = stax::sdk::gemm::detail::plan(p, set, 1);
  SCOPED_TRACE(::testing::Message() << "m " << m << " n " << n << " k " << k << " B layout "
                                    << int(lb) << " set "
                                    << stax::sdk::gemm::instruction_set_name(set));
  ASSERT_TRUE(bl.a_in_place);
  const std::vector<T> in_place = run_entry(p, bl, c.data);
  bl.a_in_place = false;  // the packed panels (the path before)
  const std::vector<T> packed = run_entry(p, bl, c.data);
  expect_same_bits(in_place, packed, "C read in place against C packed");
  expect_same_bits(in_place, want, "C read in place");
}

TEST(GemmKernel, TransposedAReadInPlaceKeepsTheBits) {
  // A transposed A (the weight gradient dW = Xᵀ·dY, dX through a transposed view) whose tile
  // reads span at most 1 MB of it (terms of a block x Aᵀ's row stride) is read where it is: each
  // term's MR rows are contiguous in a row of Aᵀ. A wider one (768 terms, 8 KB apart: a page or
  // more per term) is still packed, as is a strided A.
  using stax::sdk::gemm::detail::plan;
  Problem<float> p;
  p.m = 128;
  p.n = 384;
  p.k = 512;
  p.a_rs = 1;
  p.a_cs = 128;
  for (int threads : {1, 2, 3}) EXPECT_TRUE(plan(p, InstructionSet::Avx512, threads).a_in_place);
  p.m = 512;
  p.n = 128;
  p.a_cs = 512;  // 512 terms 2 KB apart
  EXPECT_TRUE(plan(p, InstructionSet::Avx512, 2).a_in_place);
  p.m = 2048;
  p.n = 256;
  p.k = 768;
  p.a_cs = 2048;
  EXPECT_FALSE(plan(p, InstructionSet::Avx512, 1).a_in_place);
  p.k = 64;  // 64 terms 8 KB apart: 512 KB
  EXPECT_TRUE(plan(p, InstructionSet::Avx512, 1).a_in_place);
  p.a_rs = 2;  // strided
  EXPECT_FALSE(plan(p, InstructionSet::Avx512, 1).a_in_place);
  p.a_rs = 64;
  p.a_cs = 1;  // row-major: in place as always
  EXPECT_TRUE(plan(p, InstructionSet::Avx512, 1).a_in_place);
  Problem<double> d;
  d.m = 600;
  d.n = 200;
  d.k = 1000;
  d.a_rs = 1;
  d.a_cs = 600;  // blocks of 256 terms x 4.8 KB
  EXPECT_FALSE(plan(d, InstructionSet::Avx512, 1).a_in_place);
  d.a_cs = d.m = 500;  // x 4 KB: 1 MB
  EXPECT_TRUE(plan(d, InstructionSet::Avx512, 1).a_in_place);
  if (stax::sdk::gemm::detect_instruction_set() == InstructionSet::Avx512) {
    // Beyond 1 MB, at most 2 column panels (of 64 floats) and term blocks of at most 2 KB: in
    // place (the packed panels would be read once or twice); with 1024 terms, packed.
    p = Problem<float>();
    p.m = p.a_cs = 2048;
    p.n = 128;
    p.k = 512;
    p.a_rs = 1;
    EXPECT_TRUE(plan(p, InstructionSet::Avx512, 1).a_in_place);
    p.n = 192;  // 3 panels
    EXPECT_FALSE(plan(p, InstructionSet::Avx512, 1).a_in_place);
    p.n = 64;
    p.k = 2048;  // blocks of 1024 terms
    EXPECT_FALSE(plan(p, InstructionSet::Avx512, 1).a_in_place);
    d.m = d.a_cs = 2048;
    d.n = 64;  // 2 panels of 32 doubles, blocks of 256 terms
    EXPECT_TRUE(plan(d, InstructionSet::Avx512, 1).a_in_place);
  }

  // The tiles reading Aᵀ in place and the packed panels give the same bits (and the reference's):
  // the GPT block's dW, a partial tile row with one term block (the block's last MR rows computed
  // again) and with two (that panel packed), fewer rows than a tile, a partial panel of columns,
  // B row-major and transposed, doubles (term blocks of 256).
  for (InstructionSet set : {InstructionSet::Avx512, InstructionSet::Avx2, InstructionSet::Portable})
    for (Layout lb : {Layout::RowMajor, Layout::Transposed}) {
      check_transposed_a_both_ways<float>(128, 384, 512, lb, set, 500);
      check_transposed_a_both_ways<float>(131, 100, 517, lb, set, 501);
      check_transposed_a_both_ways<float>(61, 389, 1030, lb, set, 502);
      check_transposed_a_both_ways<float>(5, 70, 40, lb, set, 503);
      check_transposed_a_both_ways<double>(50, 300, 1100, lb, set, 504);
      check_transposed_a_both_ways<double>(37, 64, 200, lb, set, 505);
      if (set == InstructionSet::Avx512 &&
          stax::sdk::gemm::detect_instruction_set() == InstructionSet::Avx512) {
        // 1.3 MB of Aᵀ per term block, one column panel (float), two (double)
        check_transposed_a_both_ways<float>(1100, 64, 300, lb, set, 506);
        check_transposed_a_both_ways<double>(1100, 60, 300, lb, set, 507);
      }
    }
  // And through multiply() on 1, 2 and 3 threads (column lanes, row blocks in snake order).
  stax::sdk::gemm::Workspace ws;
  for (InstructionSet set : {InstructionSet::Avx512, InstructionSet::Avx2})
    for (int threads : {1, 2, 3}) {
      Context ctx = with_threads(threads);
      ctx.workspace = &ws;
      ctx.instruction_set = set;
      for (Layout lb : {Layout::RowMajor, Layout::Transposed}) {
        check_case<float>(1, 128, 128, 512, Layout::Transposed, lb, Layout::RowMajor, ctx, 510);
        check_case<float>(1, 131, 389, 517, Layout::Transposed, lb, Layout::RowMajor, ctx, 511);
        check_case<float>(1, 515, 130, 509, Layout::Transposed, lb, Layout::RowMajor, ctx, 512);
        check_case<float>(1, 61, 389, 1030, Layout::Transposed, lb, Layout::Strided, ctx, 513);
        check_case<double>(1, 50, 300, 1100, Layout::Transposed, lb, Layout::RowMajor, ctx, 514);
        check_case<float>(1, 1100, 100, 300, Layout::Transposed, lb, Layout::RowMajor, ctx, 515);
      }
    }
}

TEST(GemmKernel, PartialTileRowsRunATileOfTheirRows) {
  // A row block's last tile row of h < MR rows runs the tile of h rows (rows[h] of AVX-512's 6 x
  // 64 and 6 x 32 tiles), reading A in place (row-major, or transposed within the span) or from
  // the packed panel, and writing C directly (or through the edge buffer for a partial column
  // panel or strided C), one and two term blocks; the 8-row tiles (N = 48, 16) and the other
  // sets still compute a whole tile (the block's last MR rows again, or a zero-padded panel).
  // Every h of every AVX-512 shape against the reference bit for bit.
  if (stax::sdk::gemm::detect_instruction_set() == InstructionSet::Avx512) {
    for (int64_t n : {128, 32}) {
      auto shape = stax::sdk::gemm::pick_tile<float>(InstructionSet::Avx512, n);
      ASSERT_NE(shape.rows, nullptr) << n;
      for (int h = 1; h < shape.mr; ++h) EXPECT_NE(shape.rows[h], nullptr) << n << " " << h;
    }
    EXPECT_EQ(stax::sdk::gemm::pick_tile<float>(InstructionSet::Avx512, 48).rows, nullptr);
  }
  EXPECT_EQ(stax::sdk::gemm::pick_tile<float>(InstructionSet::Portable, 64).rows, nullptr);
  stax::sdk::gemm::Workspace ws;
  uint32_t seed = 600;
  for (int threads : {1, 2, 3}) {
    Context ctx = with_threads(threads);
    ctx.workspace = &ws;
    for (int64_t n : {128, 48, 32, 16})
      for (int64_t h = 0; h < 8; ++h)
        for (Layout la : {Layout::RowMajor, Layout::Transposed, Layout::Strided}) {
          check_case<float>(1, 16 + h, n, 40, la, Layout::RowMajor, Layout::RowMajor, ctx, seed++);
          if (h % 3 == 1) {
            check_case<float>(1, 16 + h, n + 5, 1030, la, Layout::Transposed, Layout::RowMajor,
                              ctx, seed++);
            check_case<float>(1, 16 + h, n, 40, la, Layout::RowMajor, Layout::Strided, ctx,
                              seed++);
            check_case<double>(1, 16 + h, n, 300, la, Layout::RowMajor, Layout::RowMajor, ctx,
                               seed++);
          }
        }
  }
}

TEST(GemmKernel, EntriesSharingTheirBKeepTheBits) {
  // A weight broadcast over a batch (bmm(x, W.expand(B, K, N)): every entry's B at one offset)
  // is packed once for consecutive entries that share it; entries whose B changes and comes back
  // (offsets 0 0 1 1 0 2 2 2) are packed again. Serial, batch-spread and row-block paths, with
  // Bᵀ packed by transposes and a row-major B by copies.
  stax::sdk::gemm::Workspace ws;
  const std::vector<int64_t> shared(8, 0), mixed = {0, 0, 1, 1, 0, 2, 2, 2};
  for (InstructionSet set : {InstructionSet::Avx512, InstructionSet::Avx2, InstructionSet::Portable})
    for (int threads : {1, 2, 3}) {
      Context ctx = with_threads(threads);
      ctx.workspace = &ws;
      ctx.instruction_set = set;
      for (const auto* b_entries : {&shared, &mixed}) {
        check_case<float>(8, 64, 128, 128, Layout::RowMajor, Layout::RowMajor, Layout::RowMajor,
                          ctx, 300, *b_entries);
        check_case<float>(8, 64, 128, 128, Layout::Strided, Layout::Transposed, Layout::RowMajor,
                          ctx, 301, *b_entries);
        check_case<float>(8, 300, 70, 200, Layout::RowMajor, Layout::RowMajor, Layout::RowMajor,
                          ctx, 302, *b_entries);
        check_case<double>(8, 20, 30, 40, Layout::Transposed, Layout::RowMajor, Layout::RowMajor,
                           ctx, 303, *b_entries);
      }
    }
}

TEST(GemmKernel, ABatchSharingItsBWithRowsInSequenceIsOneProduct) {
  // bmm(x, W.expand(B, K, N)) with x's entries one after the other: one product of B * M rows
  // (detail::fold_batch), with the reference's bits and every entry's rows reported once, as
  // (entry, rows of the entry) even where a row block spans two entries (M = 13, 250: partial
  // tile rows inside the folded product). Not folded: a B per entry, entries of A or C with a
  // gap between them (rows padded), B shared by some entries only.
  using stax::sdk::gemm::detail::fold_batch;
  std::vector<float> a(4 * 13 * 7), b(7 * 5), c(4 * 13 * 5);
  Problem<float> p;
  p.batch = 4;
  p.m = 13;
  p.n = 5;
  p.k = 7;
  p.a = a.data();
  p.a_rs = 7;
  p.a_cs = 1;
  p.a_bs = 13 * 7;
  p.b = b.data();
  p.b_rs = 5;
  p.b_cs = 1;
  p.b_bs = 0;
  p.c = c.data();
  p.c_rs = 5;
  p.c_cs = 1;
  p.c_bs = 13 * 5;
  Problem<float> f;
  ASSERT_TRUE(fold_batch(p, &f));
  EXPECT_EQ(f.batch, 1);
  EXPECT_EQ(f.m, 52);
  EXPECT_EQ(f.a, a.data());
  EXPECT_EQ(f.c, c.data());
  Problem<float> q = p;
  q.b_bs = 35;  // a B per entry
  EXPECT_FALSE(fold_batch(q, &f));
  q = p;
  q.a_bs = 13 * 7 + 1;  // a gap between A's entries
  EXPECT_FALSE(fold_batch(q, &f));
  q = p;
  q.c_bs = 13 * 5 + 5;  // a gap between C's entries
  EXPECT_FALSE(fold_batch(q, &f));
  const std::vector<int64_t> some = {0, 0, 1, 0};
  q = p;
  q.b_offsets = some.data();
  EXPECT_FALSE(fold_batch(q, &f));

  stax::sdk::gemm::Workspace ws;
  const std::vector<int64_t> shared(6, 0);
  for (InstructionSet set : {InstructionSet::Avx512, InstructionSet::Portable})
    for (int threads : {1, 2, 3}) {
      Context ctx = with_threads(threads);
      ctx.workspace = &ws;
      ctx.instruction_set = set;
      check_case<float>(6, 13, 70, 33, Layout::RowMajor, Layout::RowMajor, Layout::RowMajor, ctx,
                        310, shared);
      check_case<float>(6, 250, 128, 128, Layout::RowMajor, Layout::Transposed, Layout::RowMajor,
                        ctx, 311, shared);
      check_case<float>(6, 250, 64, 600, Layout::RowMajor, Layout::RowMajor, Layout::RowMajor,
                        ctx, 312, shared);
      check_case<double>(6, 13, 30, 40, Layout::RowMajor, Layout::RowMajor, Layout::RowMajor, ctx,
                         313, shared);
      // entries with a gap (padded rows): the batch paths
      check_case<float>(6, 13, 70, 33, Layout::Padded, Layout::RowMajor, Layout::Padded, ctx, 314,
                        shared);
    }
}

TEST(GemmKernel, ReferenceIsTheSequentialFusedChain) {
  // The semantics by hand: 1 + 2^-24 squared is not representable; the fused chain rounds once
  // per term, a non-fused one twice.
  const float e = std::ldexp(1.0f, -12);
  std::vector<float> a = {1.0f + e, -1.0f}, b = {1.0f + e, 1.0f}, c(1);
  Problem<float> p;
  p.m = p.n = 1;
  p.k = 2;
  p.a = a.data();
  p.a_rs = 2;
  p.a_cs = 1;
  p.b = b.data();
  p.b_rs = 1;
  p.b_cs = 1;
  p.c = c.data();
  p.c_rs = p.c_cs = 1;
  stax::sdk::gemm::multiply(p);
  // (1 + e)^2 = 1 + 2e + e^2 rounds to 1 + 2e; then fma(-1, 1, 1 + 2e) = 2e exactly.
  EXPECT_EQ(c[0], 2 * e);
  float chain = std::fma(-1.0f, 1.0f, std::fma(1.0f + e, 1.0f + e, 0.0f));
  EXPECT_EQ(c[0], chain);
}

TEST(GemmKernel, EmptyAndZeroTermProducts) {
  std::vector<float> c(6, 7.0f);
  Problem<float> p;
  p.m = 2;
  p.n = 3;
  p.k = 0;
  p.c = c.data();
  p.c_rs = 3;
  p.c_cs = 1;
  int rows = 0;
  stax::sdk::gemm::multiply(p, {}, [&](int64_t, int64_t r0, int64_t r1) { rows += int(r1 - r0); });
  for (float x : c) EXPECT_EQ(x, 0.0f);
  EXPECT_EQ(rows, 2);
  p.m = 0;  // nothing to write: no call
  rows = 0;
  stax::sdk::gemm::multiply(p, {}, [&](int64_t, int64_t, int64_t) { ++rows; });
  EXPECT_EQ(rows, 0);
}

TEST(GemmKernel, NanAndInfinityPropagateAsInTheChain) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> a = {inf, 1.0f, 0.0f, 2.0f, nan, 1.0f}, b = {1.0f, 0.0f, -1.0f, 1.0f, 1.0f, 1.0f};
  std::vector<float> c(4), want(4);
  Problem<float> p;
  p.m = 2;
  p.n = 2;
  p.k = 3;
  p.a = a.data();
  p.a_rs = 3;
  p.a_cs = 1;
  p.b = b.data();
  p.b_rs = 2;
  p.b_cs = 1;
  p.c = c.data();
  p.c_rs = 2;
  p.c_cs = 1;
  stax::sdk::gemm::multiply(p);
  Problem<float> r = p;
  r.c = want.data();
  stax::sdk::gemm::reference(r);
  expect_same_bits(c, want, "C");
  EXPECT_TRUE(std::isnan(c[1]));  // inf * 0
  EXPECT_TRUE(std::isnan(c[2]));
}

TEST(GemmKernel, ScratchThatCannotBeAllocatedIsOutOfMemory) {
  // In a child with a 1 GiB address-space limit, a product whose packed B needs 4 GiB (operands
  // broadcast from one element by zero strides) throws OutOfMemory naming the bytes.
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    rlimit lim{size_t{1} << 30, size_t{1} << 30};
    if (setrlimit(RLIMIT_AS, &lim) != 0) _exit(3);
    float one = 1.0f, out[64];
    Problem<float> p;
    p.m = 1;
    p.n = 64;
    p.k = int64_t{1} << 24;
    p.a = &one;
    p.b = &one;
    p.c = out;
    p.c_rs = 64;
    p.c_cs = 1;
    try {
      stax::sdk::gemm::multiply(p);
    } catch (const stax::sdk::gemm::OutOfMemory& e) {
      bool named = std::strstr(e.what(), "out of memory: 4294967296 bytes for gemm: packed") != nullptr;
      _exit(named && e.bytes() == (size_t{1} << 32) ? 0 : 4);
    }
    _exit(5);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "3: setrlimit failed, 4: wrong message, 5: no error";
}

}  // namespace
