#include "plugins/cpu_cpp/thread_pool.h"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <system_error>

namespace stax::cpu {

namespace {

// How long a waiting thread spins before it sleeps (ThreadPool::kDefaultSpinMicros, cpu_cpp's
// `pool_spin_us`): long enough to bridge the gaps between the kernels of one run and between
// back-to-back runs (microseconds), short enough that an idle pool gives the cores back at once.

constexpr int kTaskBits = 20;
constexpr uint64_t kTaskMask = (uint64_t{1} << kTaskBits) - 1;
constexpr int kGenerationShift = 2 * kTaskBits;
constexpr uint64_t kGenerationMask = (uint64_t{1} << (64 - kGenerationShift)) - 1;

uint64_t generation(uint64_t state) { return state >> kGenerationShift; }
uint64_t task_count(uint64_t state) { return (state >> kTaskBits) & kTaskMask; }
uint64_t next_task(uint64_t state) { return state & kTaskMask; }

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Spins until done() or `spin` is spent; returns done().
template <class Done>
bool spin_until(std::chrono::microseconds spin, Done done) {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
      cpu_relax();
    }
    if (std::chrono::steady_clock::now() - start > spin) return done();
  }
}

}  // namespace

ThreadPool::ThreadPool(int threads, int64_t spin_us) : spin_(std::max<int64_t>(0, spin_us)) {
  slot_count_ = std::max(1, threads);
  slots_ = std::make_unique<Slot[]>(static_cast<size_t>(slot_count_));
  try {
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { work(i); });
  } catch (const std::system_error& e) {
    // No room for another thread (its stack under `ulimit -v`, or the process's thread limit):
    // the ones started stop before the error leaves, so that no joinable thread is destroyed.
    // (Thread 1 is the caller; workers are threads 2 .. threads.)
    const size_t started = workers_.size();
    stop();
    throw std::system_error(e.code(), "cannot start thread " + std::to_string(started + 2) +
                                          " of " + std::to_string(threads) +
                                          " of the thread pool (out of memory?)");
  }
}

OpenMpTeam OpenMpTeam::find(const std::string& library) {
  // RTLD_NOLOAD: only a runtime the process already runs (torch's); loading a second OpenMP
  // runtime next to it is what this option exists to avoid. The handle is not closed: the
  // runtime stays loaded as long as its host does.
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (!handle)
    throw std::runtime_error("OpenMP runtime '" + library +
                             "' is not loaded in this process (the option names a runtime the "
                             "host program already runs, e.g. torch's libgomp)");
  OpenMpTeam team;
  team.parallel = reinterpret_cast<decltype(team.parallel)>(dlsym(handle, "GOMP_parallel"));
  team.max_threads = reinterpret_cast<int (*)()>(dlsym(handle, "omp_get_max_threads"));
  team.thread_num = reinterpret_cast<int (*)()>(dlsym(handle, "omp_get_thread_num"));
  if (!team.parallel || !team.max_threads)
    throw std::runtime_error("OpenMP runtime '" + library +
                             "' lacks GOMP_parallel or omp_get_max_threads (not a GNU libgomp "
                             "or an LLVM / Intel libomp)");
  const link_map* map = nullptr;
  team.path = (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && *map->l_name)
                  ? map->l_name
                  : library;
  return team;
}

ThreadPool::ThreadPool(int threads, OpenMpTeam team)
    : team_(std::move(team)), team_width_(std::max(1, threads)) {
  if (!team_.parallel || !team_.max_threads)
    throw std::invalid_argument("ThreadPool: an OpenMP team without its entry points");
  slot_count_ = team_width_;
  slots_ = std::make_unique<Slot[]>(static_cast<size_t>(slot_count_));
}

ThreadPool::~ThreadPool() { stop(); }

int ThreadPool::threads() const {
  if (team_.parallel) return std::clamp(team_.max_threads(), 1, team_width_);
  return static_cast<int>(workers_.size()) + 1;
}

namespace {

// The first task of home range `slot` of `slots` over `tasks` tasks (equal contiguous ranges,
// as OpenMP's static schedule cuts them).
int64_t range_begin(int64_t tasks, int64_t slots, int64_t slot) { return tasks * slot / slots; }

// A team's batch: the task, and the team threads' home ranges in the pool's slots (a word each:
// end of the range in bits 32..63, next task to claim in 0..31; no generation: the batch lives
// as long as the region).
struct TeamBatch {
  const std::function<void(int64_t)>* task;
  int width;
  int (*thread_num)();
  std::atomic<uint64_t>* (*slot)(void* pool, int i);
  void* pool;
};

// Runs on every thread of the OpenMP team (the caller is its thread 0): claims the tasks of its
// home range, then those left in the others', until none is left. The region's end is the team's
// barrier, so every task has returned when GOMP_parallel returns (and a kernel's streaming
// stores were fenced by the kernel itself before it returned: streaming_store.h).
void team_region(void* data) {
  auto* batch = static_cast<TeamBatch*>(data);
  const int self = batch->thread_num ? std::clamp(batch->thread_num(), 0, batch->width - 1) : 0;
  for (int i = 0; i < batch->width; ++i) {
    std::atomic<uint64_t>& range = *batch->slot(batch->pool, (self + i) % batch->width);
    for (uint64_t w = range.load(std::memory_order_relaxed);;) {
      if ((w & 0xffffffffu) >= (w >> 32)) break;
      if (range.compare_exchange_weak(w, w + 1, std::memory_order_relaxed,
                                      std::memory_order_relaxed))
        (*batch->task)(static_cast<int64_t>(w & 0xffffffffu));
    }
  }
}

}  // namespace

void ThreadPool::run_on_team(int64_t tasks, int width, const std::function<void(int64_t)>& task) {
  width = static_cast<int>(std::min<int64_t>({width, tasks, slot_count_}));
  for (int s = 0; s < width; ++s)
    slots_[static_cast<size_t>(s)].word.store(
        static_cast<uint64_t>(range_begin(tasks, width, s + 1)) << 32 |
            static_cast<uint64_t>(range_begin(tasks, width, s)),
        std::memory_order_relaxed);
  auto slot = [](void* pool, int i) {
    return &static_cast<ThreadPool*>(pool)->slots_[static_cast<size_t>(i)].word;
  };
  TeamBatch batch{&task, width, team_.thread_num, slot, this};
  // GOMP_parallel's start publishes the stores above to the team's threads.
  team_.parallel(&team_region, &batch, static_cast<unsigned>(width), 0);
}

void ThreadPool::stop() {
  stop_.store(true, std::memory_order_seq_cst);
  wake_.fetch_add(1, std::memory_order_seq_cst);
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
  workers_.clear();
}

void ThreadPool::drain(int self) {
  const uint64_t batch = state_.load(std::memory_order_acquire);
  const uint64_t gen = generation(batch);
  const uint64_t tasks = task_count(batch);
  for (int i = 0; i < slot_count_; ++i) {
    std::atomic<uint64_t>& slot = slots_[static_cast<size_t>((self + i) % slot_count_)].word;
    for (;;) {
      // A slot of another batch (this thread woke late, or the batch has ended): nothing of
      // this batch is left there.
      uint64_t s = slot.load(std::memory_order_acquire);
      if (generation(s) != gen || next_task(s) >= task_count(s)) break;
      if (!slot.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel,
                                      std::memory_order_acquire))
        continue;
      // The batch cannot end (nor task_ change) before this claimed task is counted below.
      // A kernel that used streaming (non-temporal) stores has fenced them (sfence) before
      // returning from the task (streaming_store.h): they are globally visible before this
      // count, which a plain release would not guarantee for them.
      (*task_)(static_cast<int64_t>(next_task(s)));
      if (finished_.fetch_add(1, std::memory_order_seq_cst) + 1 == tasks &&
          caller_sleeping_.load(std::memory_order_seq_cst))
        finished_.notify_all();
    }
  }
}

void ThreadPool::work(int self) {
  uint64_t seen = 0;  // the generation of the last batch this worker looked at
  for (;;) {
    auto fresh = [&] {
      return stop_.load(std::memory_order_acquire) ||
             generation(state_.load(std::memory_order_acquire)) != seen;
    };
    if (!spin_until(spin_, fresh)) {
      for (;;) {
        // Dekker with parallel_for: either this check sees the new batch, or the caller sees
        // sleepers_ > 0 after publishing it and bumps wake_ and wakes us.
        uint32_t w = wake_.load(std::memory_order_seq_cst);
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        if (!fresh()) wake_.wait(w, std::memory_order_seq_cst);
        sleepers_.fetch_sub(1, std::memory_order_seq_cst);
        if (fresh()) break;
      }
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = generation(state_.load(std::memory_order_acquire));
    drain(self);
  }
}

void ThreadPool::parallel_for(int64_t tasks, const std::function<void(int64_t)>& task) {
  if (tasks <= 0) return;
  if (tasks > kMaxTasks)
    throw std::invalid_argument("ThreadPool::parallel_for: " + std::to_string(tasks) +
                                " tasks, at most " + std::to_string(kMaxTasks));
  const int width = team_.parallel ? threads() : 1;
  if ((team_.parallel ? width <= 1 : workers_.empty()) || tasks == 1) {
    for (int64_t t = 0; t < tasks; ++t) task(t);
    return;
  }
  std::lock_guard<std::mutex> serial(run_mutex_);
  if (team_.parallel) {
    run_on_team(tasks, width, task);
    return;
  }
  task_ = &task;
  finished_.store(0, std::memory_order_relaxed);
  caller_sleeping_.store(0, std::memory_order_relaxed);
  const uint64_t g = (generation(state_.load(std::memory_order_relaxed)) + 1) & kGenerationMask;
  // Publishes task_ and the reset counters with the batch (seq_cst: see work()).
  for (int s = 0; s < slot_count_; ++s)
    slots_[static_cast<size_t>(s)].word.store(
        g << kGenerationShift |
            static_cast<uint64_t>(range_begin(tasks, slot_count_, s + 1)) << kTaskBits |
            static_cast<uint64_t>(range_begin(tasks, slot_count_, s)),
        std::memory_order_relaxed);
  state_.store(g << kGenerationShift | static_cast<uint64_t>(tasks) << kTaskBits,
               std::memory_order_seq_cst);
  wake_.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) wake_.notify_all();
  drain(0);
  const uint32_t all = static_cast<uint32_t>(tasks);
  if (!spin_until(spin_, [&] { return finished_.load(std::memory_order_acquire) == all; })) {
    caller_sleeping_.store(1, std::memory_order_seq_cst);
    for (uint32_t f; (f = finished_.load(std::memory_order_seq_cst)) != all;)
      finished_.wait(f, std::memory_order_seq_cst);
  }
  task_ = nullptr;
}

}  // namespace stax::cpu
