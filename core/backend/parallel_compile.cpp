#include "core/backend/parallel_compile.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <locale>
#include <mutex>
#include <numeric>
#include <string>
#include <system_error>
#include <thread>

#include "core/support/error.h"
#include "stax/sdk/loop_body.hpp"

namespace stax {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// Whether the kernel has at least 16 outputs along its innermost iteration variable (fewer are not
// worth accumulating side by side) and every load moves by 0 or 1 element when that variable grows
// by one (at the origin; an indirect index reads as 0).
bool contiguous_along_innermost(const StaxKernelDesc& d) {
  if (d.num_ranges == 0 || d.ranges[d.num_ranges - 1] < 16) return false;
  const sdk::Kernel k(&d);
  std::vector<int64_t> zero_i(d.num_ranges, 0), one_i = zero_i;
  one_i.back() = 1;
  std::vector<int64_t> zero_r(std::max<size_t>(d.num_reduction_ranges, 1), 0);
  for (size_t b = 0; b < k.num_bodies(); ++b) {
    sdk::LoopBody body = k.body(b);
    std::vector<int64_t> ind(std::max<size_t>(body.num_ops(), 1), 0);
    for (size_t i = 0; i < body.num_ops(); ++i) {
      sdk::OpNode op = body.op(i);
      if (op.opcode() != STAX_OP_LOAD && op.opcode() != STAX_OP_MASKED_LOAD) continue;
      sdk::Expr e = body.index_of(op);
      const int64_t step = sdk::evaluate(e, one_i.data(), zero_r.data(), ind.data()) -
                           sdk::evaluate(e, zero_i.data(), zero_r.data(), ind.data());
      if (step != 0 && step != 1) return false;
    }
  }
  return true;
}

}  // namespace

size_t compile_cost(const StaxKernelDesc& d) {
  // Units of about 0.15 ms of Clang + LLVM on cpu_cpp (fitted on the GPT block's 21 kernels,
  // thread CPU time per kernel: STAX_COMPILE_TRACE): a fixed part (parse, an empty module through
  // the pipeline and the code generator, the link: ~17 ms), the bodies' ops and index-expression
  // nodes (twice for a reduction loop, printed more than once: vector and tail loops), and a
  // large part per reduction loop of a column reduction (a reduction whose loads are contiguous
  // along the innermost output dimension: a vectorising backend accumulates many outputs side by
  // side, e.g. cpu_cpp's 16 x 128-lane accumulators, ~45 ms of optimisation and code generation
  // each: the bias gradients of the GPT block's backward took 60-120 ms where their ops alone
  // predicted the least of all).
  constexpr size_t kFixed = 110, kColumnReduction = 300;
  size_t c = kFixed, reductions = 0;
  for (size_t b = 0; b < d.num_bodies; ++b) {
    const StaxLoopBody* body = d.bodies[b];
    const bool reduction = body->loop == STAX_BODY_REDUCTION_LOOP;
    c += (body->num_ops + body->num_exprs) * (reduction ? 2 : 1);
    reductions += reduction ? 1 : 0;
  }
  if (reductions > 0 && contiguous_along_innermost(d)) c += kColumnReduction * reductions;
  return c;
}

namespace {

// libstdc++'s std::ctype<char> fills its narrow() cache one character at a time on first use, a
// write that std::regex's \b, \w and [[:class:]] make (the cpu_cpp and cuda_nvrtc printers use
// them): concurrent printers race on it (TSan reports it in hardening_test). Filling the whole
// table once, before the compile threads start, makes every later narrow() of them a read.
void fill_ctype_narrow_cache() {
  static std::once_flag once;
  std::call_once(once, [] {
    const auto& ct = std::use_facet<std::ctype<char>>(std::locale());
    char in[256], out[256];
    for (int i = 0; i < 256; ++i) in[i] = static_cast<char>(i);
    ct.narrow(in, in + 256, '\0', out);
  });
}

double thread_cpu_ms() {
  timespec ts;
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

// STAX_COMPILE_TRACE=1: one line per kernel on stderr, printed when the batch is done: the thread
// that compiled it, its start and end (ms since the batch began), its CPU time, the hook's time
// (the disk store's hand-over) and its cost estimate. Idle gaps on a thread and the batch's
// critical path show in it (docs/jit_compile.md).
struct Trace {
  struct Kernel {
    size_t thread = 0;
    double start = 0, end = 0, cpu = 0, hook = 0;
  };
  Clock::time_point t0 = Clock::now();
  std::vector<Kernel> kernels;
  bool on = false;
  void print(const std::vector<const StaxKernelDesc*>& descs, const std::vector<size_t>& costs) {
    if (!on) return;
    double end = 0, cpu = 0;
    for (size_t i = 0; i < kernels.size(); ++i) {
      const Kernel& k = kernels[i];
      std::fprintf(stderr,
                   "stax compile: %-10s thread %zu  %8.2f .. %8.2f ms  cpu %7.2f ms  hook %6.2f ms"
                   "  cost %zu\n",
                   descs[i]->name ? descs[i]->name : "", k.thread, k.start, k.end, k.cpu, k.hook,
                   costs[i]);
      end = std::max(end, k.end);
      cpu += k.cpu;
    }
    std::fprintf(stderr, "stax compile: %zu kernels: %.2f ms, cpu %.2f ms\n", kernels.size(), end,
                 cpu);
  }
};

}  // namespace

size_t compile_threads() {
  if (const char* env = std::getenv("STAX_COMPILE_THREADS"); env && *env) {
    char* end = nullptr;
    const long n = std::strtol(env, &end, 10);
    if (*end != '\0' || n < 1 || n > 1024)
      throw Error("compile", "STAX_COMPILE_THREADS",
                  "'" + std::string(env) + "' is not a thread count (1..1024)");
    return static_cast<size_t>(n);
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  size_t cpus = 0;
  if (::sched_getaffinity(0, sizeof set, &set) == 0) cpus = static_cast<size_t>(CPU_COUNT(&set));
  if (cpus == 0) cpus = std::max(1u, std::thread::hardware_concurrency());
  return std::min<size_t>(cpus, 64);
}

std::vector<CompileResult> compile_kernels(const Plugin& plugin,
                                           const std::vector<const StaxKernelDesc*>& descs,
                                           size_t threads, const CompiledHook& hook,
                                           const CancellationToken* cancel) {
  const size_t n = descs.size();
  std::vector<CompileResult> out(n);
  static const bool trace_on = std::getenv("STAX_COMPILE_TRACE") != nullptr;
  Trace trace;
  trace.on = trace_on;
  trace.kernels.resize(n);
  auto since_start = [&] { return ms_since(trace.t0); };
  auto check = [&](size_t i) {
    if (!cancel) return;
    const std::string name = descs[i]->name ? descs[i]->name : "";
    check_cancelled(cancel, name, "compiling kernel " + name);
  };
  auto compiled = [&](size_t i) {
    if (!hook) return;
    const auto t = Clock::now();
    try {
      hook(i, *out[i].kernel);
    } catch (...) {  // the hook's failure is not the compile's
    }
    trace.kernels[i].hook = ms_since(t);
  };
  // One compile, timed (and traced: its thread, start, end and CPU time).
  auto compile_one = [&](size_t i, size_t thread) {
    Trace::Kernel& k = trace.kernels[i];
    k.thread = thread;
    k.start = since_start();
    const double cpu0 = thread_cpu_ms();
    const auto t = Clock::now();
    out[i].kernel = plugin.compile(*descs[i]);
    out[i].ms = ms_since(t);
    k.cpu = thread_cpu_ms() - cpu0;
    k.end = since_start();
  };
  std::vector<size_t> costs(n);
  for (size_t i = 0; i < n; ++i) costs[i] = compile_cost(*descs[i]);
  if (!plugin.properties().concurrent_compiles) threads = 1;
  threads = std::max<size_t>(1, std::min(threads, n));
  if (threads == 1) {  // in order, stopping at the first failure
    for (size_t i = 0; i < n; ++i) {
      check(i);
      compile_one(i, 0);
      compiled(i);
    }
    trace.print(descs, costs);
    return out;
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return costs[a] > costs[b]; });
  std::atomic<size_t> next{0};
  std::mutex mutex;
  size_t first_failed = n;  // the lowest index that failed; later kernels need not compile
  std::exception_ptr error;
  auto work = [&](size_t thread) {
    for (size_t k; (k = next.fetch_add(1)) < n;) {
      const size_t i = order[k];
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (i > first_failed) continue;  // a kernel before it failed: that error is reported
      }
      try {
        check(i);
        compile_one(i, thread);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (i < first_failed) {
          first_failed = i;
          error = std::current_exception();
        }
        continue;
      }
      compiled(i);
    }
  };
  if (threads > 1) fill_ctype_narrow_cache();
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (size_t t = 1; t < threads; ++t) {
    try {
      pool.emplace_back(work, t);
    } catch (const std::system_error&) {
      break;  // no more threads to be had: the ones running (and this one) do the work
    }
  }
  work(0);
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
  trace.print(descs, costs);
  return out;
}

}  // namespace stax
