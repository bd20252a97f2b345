// cpu_cpp's thread pool (plugins/cpu_cpp/thread_pool.h, compiled into this test): every task of
// every batch runs exactly once, on batches of any size, back to back (workers spinning) and after
// the workers went to sleep, from several calling threads at once; misuse is a clear error. No
// timing is asserted.
#include "plugins/cpu_cpp/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
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

}  // namespace
}  // namespace stax::cpu
