// cpu_cpp's thread pool (plugins/cpu_cpp/thread_pool.h, compiled into this test): every task of
// every batch runs exactly once, on batches of any size, back to back (workers spinning) and after
// the workers went to sleep, from several calling threads at once; misuse is a clear error. No
// timing is asserted. On an OpenMP team, Stax's GEMM (gemm_library.cpp, compiled in too) plans
// for the team's width at each call. A team of instrumented std::threads (ThreadPoolTeam) runs
// the team path under TSan too, where libgomp's tests skip.
#include "plugins/cpu_cpp/thread_pool.h"

#include <dlfcn.h>

#include <cstring>

#include "plugins/cpu_cpp/gemm_library.h"
#include "stax/sdk/gemm.hpp"
#include "tests/support/sanitizers.h"
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace stax::cpu {
namespace {

// Runs one batch of `tasks` and checks that each index ran exactly once.
void expect_each_once(ThreadPool& pool, int64_t tasks, const std::string& what) {
  std::vector<std::atomic<int>> hits(static_cast<size_t>(tasks));
  for (auto& h : hits) h.store(0);
  pool.parallel_for(tasks, [&](int64_t t) { hits[static_cast<size_t>(t)].fetch_add(1); });
  for (int64_t t = 0; t < tasks; ++t)
    ASSERT_EQ(hits[static_cast<size_t>(t)].load(), 1) << what << ": task " << t << " of " << tasks;
}

TEST(ThreadPool, EveryTaskRunsExactlyOnceBackToBack) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.threads(), threads);
    for (int batch = 0; batch < 3000; ++batch)
      expect_each_once(pool, 1 + (batch * 7919) % 37,
                       std::to_string(threads) + " threads, batch " + std::to_string(batch));
  }
}

TEST(ThreadPool, WorkersThatFellAsleepAreWokenUp) {
  ThreadPool pool(3);
  for (int round = 0; round < 5; ++round) {
    // Longer than the spin (100 us): the workers sleep on the futex before the next batch.
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
    expect_each_once(pool, 64, "round " + std::to_string(round));
  }
  // A batch whose tasks outlast the caller's spin: the caller sleeps until the last one returns.
  std::atomic<int> done{0};
  pool.parallel_for(3, [&](int64_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    done.fetch_add(1);
  });
  EXPECT_EQ(done.load(), 3);
}

TEST(ThreadPool, ConcurrentCallersTakeTurns) {
  ThreadPool pool(2);
  std::vector<std::thread> callers;
  std::atomic<int> failures{0};
  for (int c = 0; c < 3; ++c)
    callers.emplace_back([&, c] {
      for (int batch = 0; batch < 500; ++batch) {
        const int64_t tasks = 1 + (batch + c) % 9;
        std::vector<std::atomic<int>> hits(static_cast<size_t>(tasks));
        for (auto& h : hits) h.store(0);
        pool.parallel_for(tasks, [&](int64_t t) { hits[static_cast<size_t>(t)].fetch_add(1); });
        for (auto& h : hits)
          if (h.load() != 1) failures.fetch_add(1);
      }
    });
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(failures.load(), 0);
}

// Affinity (thread_pool.h): a batch's tasks are cut into one contiguous home range per thread,
// each claimed in order, and a thread takes its own range before it steals from the others'. So
// in the sequence of tasks a thread ran, the tasks of its home range come first and in increasing
// order; once it ran a task of another range (its own was used up), none of its own follows.
// `runs`: (thread's home range, task) in the order they ran; 2 threads, 8 tasks: homes 0..3, 4..7.
// (Before, one counter over all tasks: a worker ran e.g. 1, 3, 5, 7, which fails here.)
void expect_home_ranges_first(const std::vector<std::pair<int, int64_t>>& runs, int batch) {
  for (int home = 0; home < 2; ++home) {
    bool stole = false;
    int64_t last = -1;
    for (const auto& [k, t] : runs) {
      if (k != home) continue;
      const bool own = t / 4 == home;
      if (!own) {
        stole = true;
        continue;
      }
      ASSERT_FALSE(stole) << "batch " << batch << ": thread " << home << " ran task " << t
                          << " of its own range after stealing";
      ASSERT_GT(t, last) << "batch " << batch << ": thread " << home << "'s range out of order";
      last = t;
    }
  }
}

TEST(ThreadPool, EachThreadStartsWithItsHomeRange) {
  ThreadPool pool(2);
  const std::thread::id caller = std::this_thread::get_id();
  for (int batch = 0; batch < 300; ++batch) {
    std::mutex m;
    std::vector<std::pair<int, int64_t>> runs;
    pool.parallel_for(8, [&](int64_t t) {
      {
        std::lock_guard<std::mutex> lock(m);
        runs.emplace_back(std::this_thread::get_id() == caller ? 0 : 1, t);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));  // both threads take part
    });
    ASSERT_EQ(runs.size(), 8u);
    expect_home_ranges_first(runs, batch);
  }
}

TEST(ThreadPool, BadTaskCountsAreClearErrors) {
  ThreadPool pool(2);
  int calls = 0;
  pool.parallel_for(0, [&](int64_t) { ++calls; });
  pool.parallel_for(-3, [&](int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
  try {
    pool.parallel_for(ThreadPool::kMaxTasks + 1, [](int64_t) {});
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("at most 1048575"), std::string::npos) << e.what();
  }
  expect_each_once(pool, 5, "after the error");  // still usable
}

// ---- a host program's OpenMP team (openmp_runtime) ----------------------------------------------

// The system's GNU libgomp, loaded here as a host program (torch) would have loaded it; the test
// skips where the machine has none.
// Under TSan it skips too: libgomp is not instrumented, so the hand-over of a region's data
// through its barriers is invisible to TSan and would read as a race.
void* load_libgomp() {
#ifdef STAX_TEST_TSAN
  return nullptr;
#else
  return dlopen("libgomp.so.1", RTLD_NOW | RTLD_GLOBAL);
#endif
}

TEST(ThreadPoolOpenMp, TasksRunOnceOnTheTeamsThreadsAndNoThreadOfItsOwn) {
  void* gomp = load_libgomp();
  if (!gomp) GTEST_SKIP() << "no libgomp.so.1 on this machine, or a TSan build";
  auto set_threads = reinterpret_cast<void (*)(int)>(dlsym(gomp, "omp_set_num_threads"));
  auto thread_num = reinterpret_cast<int (*)()>(dlsym(gomp, "omp_get_thread_num"));
  ASSERT_TRUE(set_threads && thread_num);
  set_threads(3);
  ThreadPool pool(4, OpenMpTeam::find("libgomp.so.1"));
  EXPECT_NE(pool.team_path().find("libgomp"), std::string::npos) << pool.team_path();
  EXPECT_EQ(pool.threads(), 3);  // the runtime's width, under the cap of 4
  std::mutex m;
  std::set<int> team_members;
  std::set<std::thread::id> os_threads;
  for (int batch = 0; batch < 500; ++batch)
    expect_each_once(pool, 1 + (batch * 7919) % 37, "team batch " + std::to_string(batch));
  pool.parallel_for(64, [&](int64_t) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));  // every member gets a task
    std::lock_guard<std::mutex> lock(m);
    team_members.insert(thread_num());
    os_threads.insert(std::this_thread::get_id());
  });
  EXPECT_GT(team_members.size(), 1u) << "the tasks ran on one thread, not on the team";
  EXPECT_EQ(team_members.size(), os_threads.size());
  for (int member : team_members) EXPECT_LT(member, 3);
  set_threads(1);  // torch.set_num_threads(1): the loops run on the caller alone
  EXPECT_EQ(pool.threads(), 1);
  std::set<std::thread::id> one;
  pool.parallel_for(16, [&](int64_t) {
    std::lock_guard<std::mutex> lock(m);
    one.insert(std::this_thread::get_id());
  });
  EXPECT_EQ(one, std::set<std::thread::id>{std::this_thread::get_id()});
  set_threads(8);
  EXPECT_EQ(pool.threads(), 4);  // capped by `threads`
}

// The same affinity on an OpenMP team: team thread k's home range is range k (its
// omp_get_thread_num()).
TEST(ThreadPoolOpenMp, EachTeamThreadStartsWithItsHomeRange) {
  void* gomp = load_libgomp();
  if (!gomp) GTEST_SKIP() << "no libgomp.so.1 on this machine, or a TSan build";
  auto set_threads = reinterpret_cast<void (*)(int)>(dlsym(gomp, "omp_set_num_threads"));
  auto thread_num = reinterpret_cast<int (*)()>(dlsym(gomp, "omp_get_thread_num"));
  ASSERT_TRUE(set_threads && thread_num);
  set_threads(2);
  ThreadPool pool(2, OpenMpTeam::find("libgomp.so.1"));
  for (int batch = 0; batch < 300; ++batch) {
    std::mutex m;
    std::vector<std::pair<int, int64_t>> runs;
    pool.parallel_for(8, [&](int64_t t) {
      {
        std::lock_guard<std::mutex> lock(m);
        runs.emplace_back(thread_num(), t);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    });
    ASSERT_EQ(runs.size(), 8u);
    expect_home_ranges_first(runs, batch);
  }
}

// Issue 25: on an OpenMP team whose width changes between calls (torch.set_num_threads), Stax's
// GEMM plans each product for the width of that call: at width 1 the 1-thread plan (its row
// blocks, on the calling thread, no parallel region opened), at width 2 the 2-thread plan; the
// bits are the reference's at every width. (It planned for the configured width before: at width
// 1, the 2-thread plan's 4 row blocks run one after another on the caller, which fails here.)
TEST(ThreadPoolOpenMp, StaxGemmPlansForTheTeamsWidthAtEachCall) {
  void* gomp = load_libgomp();
  if (!gomp) GTEST_SKIP() << "no libgomp.so.1 on this machine, or a TSan build";
  auto set_threads = reinterpret_cast<void (*)(int)>(dlsym(gomp, "omp_set_num_threads"));
  auto level = reinterpret_cast<int (*)()>(dlsym(gomp, "omp_get_level"));
  ASSERT_TRUE(set_threads && level);
  set_threads(2);
  auto pool = std::make_shared<ThreadPool>(2, OpenMpTeam::find("libgomp.so.1"));
  std::string why;
  auto gemm = load_gemm_library("stax", "", pool, 2, &why);
  ASSERT_TRUE(gemm) << why;

  // The GPT block's attention projection: 512 rows (B*T), d = 128.
  const int64_t m = 512, n = 128, k = 128;
  std::vector<float> a(m * k), b(k * n), want(m * n);
  for (int64_t i = 0; i < m * k; ++i) a[i] = float((i * 7919) % 201 - 100) / 37.0f;
  for (int64_t i = 0; i < k * n; ++i) b[i] = float((i * 104729) % 173 - 86) / 29.0f;
  sdk::gemm::Problem<float> p;
  p.m = m, p.n = n, p.k = k;
  p.a = a.data(), p.a_rs = k, p.a_cs = 1;
  p.b = b.data(), p.b_rs = n, p.b_cs = 1;
  p.c = want.data(), p.c_rs = n, p.c_cs = 1;
  sdk::gemm::reference(p);
  // The row blocks Stax's planner picks for 1 and 2 threads (the plugin's instruction set).
  const int64_t blocks_1 =
      sdk::gemm::detail::plan(p, sdk::gemm::InstructionSet::Avx512, 1).row_blocks;
  const int64_t blocks_2 =
      sdk::gemm::detail::plan(p, sdk::gemm::InstructionSet::Avx512, 2).row_blocks;
  ASSERT_NE(blocks_1, blocks_2) << "this shape does not tell the plans apart";

  for (int width : {1, 2, 1, 2}) {
    set_threads(width);
    ASSERT_EQ(pool->threads(), width);
    std::vector<float> c(m * n, -1.0f);
    p.c = c.data();
    std::mutex mu;
    std::set<std::pair<int64_t, int64_t>> rows;
    std::set<std::thread::id> os_threads;
    int deepest = 0;
    gemm->multiply(p, [&](int64_t entry, int64_t r0, int64_t r1) {
      std::lock_guard<std::mutex> lock(mu);
      EXPECT_EQ(entry, 0);
      rows.insert({r0, r1});
      os_threads.insert(std::this_thread::get_id());
      deepest = std::max(deepest, level());
    });
    const std::string at = "width " + std::to_string(width);
    // One `done` per row block of the plan (groups of column panels: one per row block here).
    EXPECT_EQ(int64_t(rows.size()), width == 1 ? blocks_1 : blocks_2) << at;
    int64_t covered = 0;
    for (auto [r0, r1] : rows) {
      EXPECT_EQ(r0, covered) << at;
      covered = r1;
    }
    EXPECT_EQ(covered, m) << at;
    if (width == 1) {
      EXPECT_EQ(deepest, 0) << "a parallel region was opened for a 1-wide team";
      EXPECT_EQ(os_threads, std::set<std::thread::id>{std::this_thread::get_id()});
    } else {
      EXPECT_EQ(deepest, 1) << at << ": the blocks ran outside the team's region";
    }
    EXPECT_EQ(std::memcmp(c.data(), want.data(), c.size() * sizeof(float)), 0)
        << at << ": not the reference's bits";
  }
  set_threads(2);
}

TEST(ThreadPoolOpenMp, ARuntimeNotLoadedOrNotOpenMpIsAClearError) {
  try {
    OpenMpTeam::find("libstax_no_such_runtime.so.1");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("is not loaded in this process"), std::string::npos)
        << e.what();
  }
  ASSERT_TRUE(dlopen("libm.so.6", RTLD_NOW)) << "libm";
  try {
    OpenMpTeam::find("libm.so.6");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("lacks GOMP_parallel"), std::string::npos) << e.what();
  }
}

// ---- a team of instrumented threads ------------------------------------------------------------

// An OpenMP runtime's entry points played by std::threads: GOMP_parallel runs the region on the
// caller (team thread 0) and on `members - 1` threads it starts and joins, as a team's fork and
// closing barrier do; a runtime may give a region fewer threads than asked (nested, dynamic), so
// `members` can be less than num_threads. Unlike libgomp these threads are instrumented: under
// TSan (where the libgomp tests above skip) this checks run_on_team's hand-over of a batch (the
// home ranges stored before the region, claimed and stolen by the team), and in every build that
// each task runs once, home ranges first.
namespace test_team {
thread_local int member = 0;
std::atomic<int> max_width{3};
std::atomic<int> members_cap{64};  // threads a region really gets, at most
void parallel(void (*fn)(void*), void* data, unsigned num_threads, unsigned) {
  const int members = std::min(static_cast<int>(num_threads), members_cap.load());
  std::vector<std::thread> team;
  for (int k = 1; k < members; ++k)
    team.emplace_back([fn, data, k] {
      member = k;
      fn(data);
    });
  member = 0;
  fn(data);
  for (std::thread& t : team) t.join();
}
int max_threads() { return max_width.load(); }
int thread_num() { return member; }
OpenMpTeam team() {
  OpenMpTeam t;
  t.parallel = &parallel;
  t.max_threads = &max_threads;
  t.thread_num = &thread_num;
  t.path = "test team";
  return t;
}
}  // namespace test_team

TEST(ThreadPoolTeam, InstrumentedTeamRunsEachTaskOnceHomeRangesFirst) {
  test_team::max_width = 3;
  test_team::members_cap = 64;
  ThreadPool pool(4, test_team::team());
  EXPECT_EQ(pool.threads(), 3);  // the runtime's width, under the cap of 4
  for (int batch = 0; batch < 300; ++batch)
    expect_each_once(pool, 1 + (batch * 7919) % 37, "team batch " + std::to_string(batch));
  test_team::max_width = 2;
  for (int batch = 0; batch < 100; ++batch) {
    std::mutex m;
    std::vector<std::pair<int, int64_t>> runs;
    pool.parallel_for(8, [&](int64_t t) {
      {
        std::lock_guard<std::mutex> lock(m);
        runs.emplace_back(test_team::thread_num(), t);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    });
    ASSERT_EQ(runs.size(), 8u);
    expect_home_ranges_first(runs, batch);
  }
  // A region given fewer threads than asked (here the caller alone): the others' home ranges
  // are stolen, every task still runs once.
  test_team::max_width = 4;
  test_team::members_cap = 1;
  for (int batch = 0; batch < 50; ++batch)
    expect_each_once(pool, 2 + batch % 23, "team of one, batch " + std::to_string(batch));
  test_team::members_cap = 64;
}

// Several callers on one team pool take turns (run_mutex_), the home-range words reused by each.
TEST(ThreadPoolTeam, ConcurrentCallersOnATeamTakeTurns) {
  test_team::max_width = 3;
  test_team::members_cap = 64;
  ThreadPool pool(3, test_team::team());
  std::vector<std::thread> callers;
  std::atomic<int> failures{0};
  for (int c = 0; c < 3; ++c)
    callers.emplace_back([&, c] {
      for (int batch = 0; batch < 100; ++batch) {
        const int64_t tasks = 1 + (batch + c) % 9;
        std::vector<std::atomic<int>> hits(static_cast<size_t>(tasks));
        for (auto& h : hits) h.store(0);
        pool.parallel_for(tasks, [&](int64_t t) { hits[static_cast<size_t>(t)].fetch_add(1); });
        for (auto& h : hits)
          if (h.load() != 1) failures.fetch_add(1);
      }
    });
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
}  // namespace stax::cpu
