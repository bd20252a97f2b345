#include "plugins/cpu_cpp/thread_pool.h"

namespace stax::cpu {

namespace {

// Pause loops of a spin (a few tens of microseconds on current x86 cores) before sleeping.
constexpr int kSpinIterations = 20000;

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Spins until done() or the spin budget is spent; returns done().
template <class Done>
bool spin_until(Done done) {
  for (int i = 0; i < kSpinIterations; ++i) {
    if (done()) return true;
    cpu_relax();
  }
  return done();
}

}  // namespace

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::drain() {
  // mutex_ is NOT held on entry.
  for (;;) {
    int64_t t;
    const std::function<void(int64_t)>* task;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!task_ || next_ >= tasks_) return;
      t = next_++;
      task = task_;
    }
    (*task)(t);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (finished_.fetch_add(1) + 1 == tasks_) done_.notify_all();
    }
  }
}

void ThreadPool::work() {
  uint64_t seen = 0;
  for (;;) {
    spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; });
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    drain();
  }
}

void ThreadPool::parallel_for(int64_t tasks, const std::function<void(int64_t)>& task) {
  if (tasks <= 0) return;
  if (workers_.empty() || tasks == 1) {
    for (int64_t t = 0; t < tasks; ++t) task(t);
    return;
  }
  std::lock_guard<std::mutex> serial(run_mutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    task_ = &task;
    tasks_ = tasks;
    next_ = 0;
    finished_ = 0;
    ++generation_;
  }
  wake_.notify_all();
  drain();
  spin_until([&] { return finished_.load(std::memory_order_acquire) == tasks_; });
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return finished_ == tasks_; });
  task_ = nullptr;
}

}  // namespace stax::cpu
