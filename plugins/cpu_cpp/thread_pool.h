// A small host thread pool for cpu_cpp kernels (no OpenMP: libomp in JIT'd code clashes with GCC's
// libgomp, TOOLCHAIN.md). Kernels are compiled with their outermost loop over [stax_begin,
// stax_end); the backend cuts that range into chunks and parallel_for() runs them. The calling
// thread takes part, so `threads` = 1 spawns nothing.
//
// A batch's tasks are cut into one contiguous home range per thread (as OpenMP's static schedule
// cuts them), each range a 64-bit word (generation, end, next task), so claiming a task is one
// compare-and-swap and a thread that wakes late can never claim a task of another batch. A thread
// takes its own range first, then steals what is left of the others': the same thread runs the
// same rows at every launch (a kernel rerun over data that fits the caches it ran on finds it
// there, as with OpenMP's static schedule), and a thread that the OS deschedules (a loaded
// machine) holds back at most the one chunk it has claimed, the others take the rest. No mutex
// on the hot path.
//
// Waiting spins before it sleeps (spin_us of pause loops, then a futex through C++20
// std::atomic::wait): workers poll for the next batch and the caller for the batch's end, so the
// back-to-back kernels of a run do not pay a wake-up each (a sleeping worker costs a futex wake,
// tens of microseconds, before it runs), and a waker makes the futex call only when a thread is
// really asleep.
//
// Or the pool is a host program's OpenMP team (`openmp_runtime`, cpu_cpp's option; the torch
// backend sets it to torch's libgomp): a program that already runs one pool (torch's intra-op
// OpenMP team, whose threads spin after each eager op) must not get a second one spinning against
// it on the same cores. parallel_for then opens a parallel region of that runtime (GOMP_parallel,
// which GNU libgomp and LLVM / Intel libomp all export) whose threads claim the same tasks, each its
// home range first (its omp_get_thread_num()); its width follows the runtime's omp_get_max_threads() (torch.set_num_threads),
// capped by `threads`. No OpenMP header or link: the runtime is found with dlopen(RTLD_NOLOAD),
// so it must already be loaded and nothing new is loaded.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace stax::cpu {

// The entry points of an OpenMP runtime the process has already loaded.
struct OpenMpTeam {
  using Region = void (*)(void*);
  void (*parallel)(Region fn, void* data, unsigned num_threads, unsigned flags) = nullptr;
  int (*max_threads)() = nullptr;
  int (*thread_num)() = nullptr;  // omp_get_thread_num: a thread's home range (affinity)
  std::string path;  // as resolved by the loader (dlinfo), for messages and `stax plugins`

  // `library`: a path or soname of a runtime already mapped into the process. Throws
  // std::runtime_error naming the library and the cause (not loaded, a symbol missing).
  static OpenMpTeam find(const std::string& library);
};

class ThreadPool {
 public:
  // threads >= 1: the caller plus threads - 1 workers. Throws std::system_error (no worker left
  // running) when a thread cannot be started. `spin_us`: how long a waiting thread spins before
  // it sleeps (kDefaultSpinMicros).
  static constexpr int64_t kDefaultSpinMicros = 100;
  explicit ThreadPool(int threads, int64_t spin_us = kDefaultSpinMicros);
  // The tasks run on `team`'s threads (at most `threads` of them); no thread of Stax's own.
  ThreadPool(int threads, OpenMpTeam team);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // The threads a parallel_for may use now (an OpenMP team: min(threads, its max threads)).
  int threads() const;
  // The OpenMP runtime whose team runs the tasks, or "" (Stax's own threads).
  const std::string& team_path() const { return team_.path; }

  // The most tasks one parallel_for takes (the width of the task fields of the batch word).
  static constexpr int64_t kMaxTasks = (int64_t{1} << 20) - 1;

  // Calls task(t) for t in [0, tasks), spread over the pool and the calling thread; returns when
  // every call has returned. 1 <= tasks <= kMaxTasks (more is a std::invalid_argument). Calls are
  // serialised: one parallel_for at a time per pool (another caller waits). `task` must not throw.
  void parallel_for(int64_t tasks, const std::function<void(int64_t)>& task);

 private:
  void work(int self);
  // Stops and joins the workers.
  void stop();
  // Claims and runs tasks of the batch in `state_` until none is left: first those of thread
  // `self`'s home range (slot `self`), then the other slots' in turn.
  void drain(int self);
  void run_on_team(int64_t tasks, int width, const std::function<void(int64_t)>& task);

  std::vector<std::thread> workers_;
  std::mutex run_mutex_;  // serialises parallel_for
  // The batch: generation (bits 40..63), task count (20..39); bits 0..19 unused.
  alignas(64) std::atomic<uint64_t> state_{0};
  // One slot per thread (the caller is 0, worker i is i + 1): the batch's tasks cut into equal
  // contiguous home ranges, one per thread, each word generation (bits 40..63), end of the range
  // (20..39), next task to claim (0..19). A thread takes its own range first, then the others'
  // (affinity, as OpenMP's static schedule, with stealing for balance): the same thread runs the
  // same rows at each launch, so a kernel rerun over data that fits the caches it ran on last
  // time finds it there.
  struct alignas(64) Slot {
    std::atomic<uint64_t> word{0};
  };
  std::unique_ptr<Slot[]> slots_;
  int slot_count_ = 0;
  const std::function<void(int64_t)>* task_ = nullptr;  // published by the release of state_
  alignas(64) std::atomic<uint32_t> finished_{0};       // tasks of the batch that returned
  std::atomic<uint32_t> caller_sleeping_{0};
  alignas(64) std::atomic<uint32_t> wake_{0};  // bumped per batch (and at stop): futex word
  std::atomic<uint32_t> sleepers_{0};          // workers asleep on wake_
  std::atomic<bool> stop_{false};
  std::chrono::microseconds spin_{0};
  OpenMpTeam team_;  // team_.parallel == nullptr: Stax's own workers
  int team_width_ = 1;
};

}  // namespace stax::cpu
