// A small host thread pool for cpu_cpp kernels (no OpenMP: libomp in JIT'd code clashes with GCC's
// libgomp, TOOLCHAIN.md). Kernels are compiled with their outermost loop over [stax_begin,
// stax_end); run() cuts that range into contiguous chunks, one per thread, and calls the kernel
// once per chunk. The calling thread takes part, so `threads` = 1 spawns nothing.
// Waiting spins briefly before sleeping (kSpinIterations pause loops, some tens of microseconds):
// workers poll for the next batch and the caller for the batch's end, so back-to-back kernels of
// a few tens of microseconds do not pay a condition-variable wake-up each (the reason 2 threads
// lost to 1 on small kernels); after the spin they sleep on condition variables as before.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace stax::cpu {

class ThreadPool {
 public:
  // threads >= 1: the caller plus threads - 1 workers.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls task(t) for t in [0, tasks), spread over the pool and the calling thread; returns when
  // every call has returned. Calls are serialised: one parallel_for at a time per pool. `task`
  // must not throw.
  void parallel_for(int64_t tasks, const std::function<void(int64_t)>& task);

 private:
  void work();
  void drain();  // runs tasks of the current batch until none is left

  std::vector<std::thread> workers_;
  std::mutex run_mutex_;  // serialises parallel_for
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(int64_t)>* task_ = nullptr;
  int64_t tasks_ = 0, next_ = 0;
  std::atomic<int64_t> finished_{0};     // written under mutex_, polled without it
  std::atomic<uint64_t> generation_{0};  // likewise
  bool stop_ = false;
};

}  // namespace stax::cpu
