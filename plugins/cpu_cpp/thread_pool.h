// A small host thread pool for cpu_cpp kernels (no OpenMP: libomp in JIT'd code clashes with GCC's
// libgomp, TOOLCHAIN.md). Kernels are compiled with their outermost loop over [stax_begin,
// stax_end); the backend cuts that range into chunks and parallel_for() runs them. The calling
// thread takes part, so `threads` = 1 spawns nothing.
//
// A batch is one 64-bit word (generation, task count, next task), so claiming a task is one
// compare-and-swap and a thread that wakes late can never claim a task of another batch. Tasks
// are claimed dynamically: a thread that the OS deschedules (a loaded machine) holds back at most
// the one chunk it has claimed, the others take the rest. No mutex on the hot path.
//
// Waiting spins before it sleeps (spin_us of pause loops, then a futex through C++20
// std::atomic::wait): workers poll for the next batch and the caller for the batch's end, so the
// back-to-back kernels of a run do not pay a wake-up each (a sleeping worker costs a futex wake,
// tens of microseconds, before it runs), and a waker makes the futex call only when a thread is
// really asleep.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace stax::cpu {

class ThreadPool {
 public:
  // threads >= 1: the caller plus threads - 1 workers. Throws std::system_error (no worker left
  // running) when a thread cannot be started. `spin_us`: how long a waiting thread spins before
  // it sleeps (kDefaultSpinMicros).
  static constexpr int64_t kDefaultSpinMicros = 100;
  explicit ThreadPool(int threads, int64_t spin_us = kDefaultSpinMicros);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  // The most tasks one parallel_for takes (the width of the task fields of the batch word).
  static constexpr int64_t kMaxTasks = (int64_t{1} << 20) - 1;

  // Calls task(t) for t in [0, tasks), spread over the pool and the calling thread; returns when
  // every call has returned. 1 <= tasks <= kMaxTasks (more is a std::invalid_argument). Calls are
  // serialised: one parallel_for at a time per pool (another caller waits). `task` must not throw.
  void parallel_for(int64_t tasks, const std::function<void(int64_t)>& task);

 private:
  void work();
  // Stops and joins the workers.
  void stop();
  // Claims and runs tasks of the batch in `state_` until none is left.
  void drain();

  std::vector<std::thread> workers_;
  std::mutex run_mutex_;  // serialises parallel_for
  // The batch: generation (bits 40..63), task count (20..39), next task to claim (0..19).
  alignas(64) std::atomic<uint64_t> state_{0};
  const std::function<void(int64_t)>* task_ = nullptr;  // published by the release of state_
  alignas(64) std::atomic<uint32_t> finished_{0};       // tasks of the batch that returned
  std::atomic<uint32_t> caller_sleeping_{0};
  alignas(64) std::atomic<uint32_t> wake_{0};  // bumped per batch (and at stop): futex word
  std::atomic<uint32_t> sleepers_{0};          // workers asleep on wake_
  std::atomic<bool> stop_{false};
  std::chrono::microseconds spin_;
};

}  // namespace stax::cpu
