#include "core/backend/parallel_compile.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <locale>
#include <mutex>
#include <numeric>
#include <string>
#include <system_error>
#include <thread>

#include "core/support/error.h"

namespace stax {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// A stand-in for a kernel's compile cost: its ops and index-expression nodes, times 2 per
// reduction-loop body (a reduction body is printed more than once: vector and tail loops).
size_t cost(const StaxKernelDesc& d) {
  size_t c = 1;
  for (size_t b = 0; b < d.num_bodies; ++b) {
    const StaxLoopBody* body = d.bodies[b];
    c += (body->num_ops + body->num_exprs) * (body->loop == STAX_BODY_REDUCTION_LOOP ? 2 : 1);
  }
  return c;
}

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
  auto check = [&](size_t i) {
    if (!cancel) return;
    const std::string name = descs[i]->name ? descs[i]->name : "";
    check_cancelled(cancel, name, "compiling kernel " + name);
  };
  auto compiled = [&](size_t i) {
    if (!hook) return;
    try {
      hook(i, *out[i].kernel);
    } catch (...) {  // the hook's failure is not the compile's
    }
  };
  if (!plugin.properties().concurrent_compiles) threads = 1;
  threads = std::max<size_t>(1, std::min(threads, n));
  if (threads == 1) {  // in order, stopping at the first failure
    for (size_t i = 0; i < n; ++i) {
      check(i);
      const auto t = Clock::now();
      out[i].kernel = plugin.compile(*descs[i]);
      out[i].ms = ms_since(t);
      compiled(i);
    }
    return out;
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::vector<size_t> costs(n);
  for (size_t i = 0; i < n; ++i) costs[i] = cost(*descs[i]);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return costs[a] > costs[b]; });
  std::atomic<size_t> next{0};
  std::mutex mutex;
  size_t first_failed = n;  // the lowest index that failed; later kernels need not compile
  std::exception_ptr error;
  auto work = [&] {
    for (size_t k; (k = next.fetch_add(1)) < n;) {
      const size_t i = order[k];
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (i > first_failed) continue;  // a kernel before it failed: that error is reported
      }
      try {
        check(i);
        const auto t = Clock::now();
        out[i].kernel = plugin.compile(*descs[i]);
        out[i].ms = ms_since(t);
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
      pool.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // no more threads to be had: the ones running (and this one) do the work
    }
  }
  work();
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
  return out;
}

}  // namespace stax
