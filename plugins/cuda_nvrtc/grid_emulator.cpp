#include "plugins/cuda_nvrtc/grid_emulator.h"

#include <boost/context/detail/fcontext.hpp>

#include "stax/sdk/types.hpp"

namespace stax::cuda {

namespace fc = boost::context::detail;

// The functions that run on a fiber's stack (fiber_main, and the kernel's sync / trap callbacks)
// switch stacks with jump_fcontext and some never return. ThreadSanitizer keeps a shadow call
// stack per OS thread (func_entry / func_exit around every instrumented call): frames entered on
// a fiber and left by a jump would pile up on the scheduler's shadow stack, launch after launch,
// until reports show wrong stacks or the shadow stack overflows. These functions are therefore
// not instrumented at all; every fiber runs on the launching thread, one after another, so there
// is nothing for TSan to see in them (the kernel itself is JIT-compiled and never instrumented).
// (Only in a TSan build: ASan keeps checking them.)
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define STAX_FIBER_FN __attribute__((disable_sanitizer_instrumentation))  // clang
#endif
#endif
#if !defined(STAX_FIBER_FN) && defined(__SANITIZE_THREAD__)
#define STAX_FIBER_FN __attribute__((no_sanitize_thread))  // GCC: no func_entry / exit either
#endif
#if !defined(STAX_FIBER_FN)
#define STAX_FIBER_FN
#endif

struct GridEmulator::Launch {
  struct Fiber {
    fc::fcontext_t context = nullptr;
    bool done = false;
  };
  EmuState state{};
  EmuEntry* entry = nullptr;
  void* const* args = nullptr;
  std::vector<Fiber> fibers;
  unsigned current = 0;
  fc::fcontext_t scheduler = nullptr;  // where a fiber returns to
  bool trapped = false;

  static Launch& of(EmuState* s) { return *static_cast<Launch*>(s->runtime); }

  // A fiber's body: run the kernel as thread `current`, then hand control back for good.
  STAX_FIBER_FN static void fiber_main(fc::transfer_t t) {
    Launch& l = *static_cast<Launch*>(t.data);
    l.scheduler = t.fctx;
    unsigned me = l.current;
    l.entry(&l.state, l.args);
    l.fibers[me].done = true;
    fc::jump_fcontext(l.scheduler, nullptr);  // never resumed
  }
  // __syncthreads(): back to the scheduler until the next round.
  STAX_FIBER_FN static void sync(EmuState* s) {
    Launch& l = of(s);
    l.scheduler = fc::jump_fcontext(l.scheduler, nullptr).fctx;
  }
  // __trap(): the launch fails; this fiber is never resumed (its stack is simply reused).
  STAX_FIBER_FN static void trap(EmuState* s) {
    Launch& l = of(s);
    l.trapped = true;
    fc::jump_fcontext(l.scheduler, nullptr);
  }
};

GridEmulator::GridEmulator(size_t stack_bytes) : stack_bytes_(stack_bytes) {}

GridEmulator::~GridEmulator() = default;

void GridEmulator::launch(EmuEntry* entry, void* const* args, unsigned grid, unsigned block,
                          const std::string& kernel_name) {
  std::lock_guard<std::mutex> lock(mutex_);
  while (stacks_.size() < block) stacks_.push_back(std::make_unique<char[]>(stack_bytes_));
  Launch l;
  l.entry = entry;
  l.args = args;
  l.state.block_dim = {block, 1, 1};
  l.state.grid_dim = {grid, 1, 1};
  l.state.sync = &Launch::sync;
  l.state.trap = &Launch::trap;
  l.state.runtime = &l;
  l.fibers.resize(block);
  auto fail = [&](const std::string& why) {
    throw sdk::PluginError(STAX_ERROR_RUNTIME,
                           "cuda_nvrtc (emulated): kernel '" + kernel_name + "' " + why);
  };
  for (unsigned b = 0; b < grid; ++b) {
    l.state.block_idx = {b, 0, 0};
    for (unsigned t = 0; t < block; ++t) {
      char* top = stacks_[t].get() + stack_bytes_;  // stacks grow down
      l.fibers[t] = {fc::make_fcontext(top, stack_bytes_, &Launch::fiber_main), false};
    }
    for (;;) {  // one round: every unfinished thread runs to its next barrier or its end
      unsigned finished = 0;
      for (unsigned t = 0; t < block; ++t) {
        if (l.fibers[t].done) {
          ++finished;
          continue;
        }
        l.current = t;
        l.state.thread_idx = {t, 0, 0};
        l.fibers[t].context = fc::jump_fcontext(l.fibers[t].context, &l).fctx;
        if (l.trapped)
          fail("trapped in block " + std::to_string(b) + ", thread " + std::to_string(t) +
               " (an indirect index out of bounds)");
        if (l.fibers[t].done) ++finished;
      }
      if (finished == block) break;
      if (finished > 0)
        fail("diverged at a barrier in block " + std::to_string(b) + ": " +
             std::to_string(finished) + " of " + std::to_string(block) +
             " threads finished while the others wait in __syncthreads()");
    }
  }
}

}  // namespace stax::cuda
