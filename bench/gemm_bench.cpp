// bench_gemm: one GEMM library (gemm_libraries.h) on the shapes of real model blocks, on a given
// number of threads, in this process. scripts/bench_gemm.sh runs it once per library and thread
// count (interleaved rounds, a process each: the libraries' symbols clash) next to torch and XLA
// (bench/gemm_peers.py) and prints the table of docs/gemm.md.
//
//   bench_gemm --lib NAME [--threads T] [--reps R] [--shapes square,tall,bmm_qk,bmm_pv|gpt]
//   bench_gemm --peak             the core's float32 FMA peak (GFLOP/s, one thread)
//
// The process is pinned to its first T CPUs (libraries that size their pools from the affinity
// mask, TBB and OpenMP, then use T threads too). Per shape it prints one line
//   RESULT lib=... shape=... threads=T wall_ms=... cpu_ms=... check=... batch=...
// with the best wall time and the best process CPU time (every thread of the process: a spinning
// helper thread counts) over R calls after one warm-up call; on a busy machine compare the CPU
// times of 1-thread runs, which the other processes' load does not inflate. `check` is the largest
// deviation from Stax's product (the sequential fused multiply-add order) in units of the gemm
// error bound k * u * sum |a_ip b_pj| (at most ~2 for any summation order).
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench/gemm_libraries.h"
#include "stax/sdk/gemm.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace {

using stax::bench::GemmShape;

const std::vector<GemmShape>& all_shapes() {
  static const std::vector<GemmShape> shapes = {
      {"square", 1, 1024, 1024, 1024, false},  // 1024^3
      {"tall", 1, 2048, 256, 768, false},      // M x N x K = 2048 x 256 x 768
      {"bmm_qk", 64, 256, 256, 32, true},      // attention scores Q @ K^T, 64 heads x batches
      {"bmm_pv", 64, 256, 32, 256, false},     // attention output P @ V
      // The GPT block's products (bench/torch_backend.py "gpt": d = 128, MLP 512, 8 x 64 tokens),
      // M x N x K with the layouts its training step passes (at: A read transposed, the weight
      // gradients' Xᵀ and the input gradient through a transposed view; bt: B transposed, a
      // Linear's weight). `--shapes gpt` selects them all.
      {"gpt_512x128x512_at", 1, 512, 128, 512, false, true},  // mm (512,512)ᵀ-view x (512,128)
      {"gpt_128x384x512_at", 1, 128, 384, 512, false, true},  // dW of the qkv projection
      {"gpt_128x512x512_at", 1, 128, 512, 512, false, true},  // dW of the MLP's first Linear
      {"gpt_128x128x512_at", 1, 128, 128, 512, false, true},  // dW of the MLP's second Linear
      {"gpt_512x384x128_bt", 1, 512, 384, 128, true, false},  // addmm: the qkv projection
      {"gpt_512x512x128_bt", 1, 512, 512, 128, true, false},  // addmm: the MLP's first Linear
      {"gpt_512x128x512_bt", 1, 512, 128, 512, true, false},  // addmm: the MLP's second Linear
      {"gpt_512x512x128", 1, 512, 512, 128, false, false},    // dX of the MLP's second Linear
      {"gpt_512x128x512", 1, 512, 128, 512, false, false},    // dX of the MLP's first Linear
      {"gpt_512x128x384", 1, 512, 128, 384, false, false},    // dX of the qkv projection
  };
  return shapes;
}

// The names of --shapes, a set ("gpt": every gpt_* shape) expanded.
std::vector<std::string> expand_sets(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const std::string& n : names) {
    if (n != "gpt") {
      out.push_back(n);
      continue;
    }
    for (const GemmShape& s : all_shapes())
      if (s.name.rfind("gpt_", 0) == 0) out.push_back(s.name);
  }
  return out;
}

double process_cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

double thread_cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Pins the process to the first `threads` CPUs of its affinity mask; false when it has fewer.
bool pin(int threads) {
  cpu_set_t have, want;
  CPU_ZERO(&want);
  if (sched_getaffinity(0, sizeof have, &have) != 0) return false;
  int n = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE && n < threads; ++cpu)
    if (CPU_ISSET(cpu, &have)) {
      CPU_SET(cpu, &want);
      ++n;
    }
  return n == threads && sched_setaffinity(0, sizeof want, &want) == 0;
}

#if defined(__x86_64__)
__attribute__((target("avx512f,fma"))) double fma_peak_avx512(int64_t iters) {
  __m512 acc[12];
  const __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-7f);
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  const double t0 = thread_cpu_seconds();
  for (int64_t n = 0; n < iters; ++n)
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_fmadd_ps(acc[i], x, y);
  const double t = thread_cpu_seconds() - t0;
  float s = 0;
  for (int i = 0; i < 12; ++i) s += _mm512_reduce_add_ps(acc[i]);
  if (s == 12345.0f) std::puts("");
  return 12.0 * 16 * 2 * static_cast<double>(iters) / t * 1e-9;
}
#endif

int peak() {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) {
    double best = 0;
    for (int r = 0; r < 5; ++r) best = std::max(best, fma_peak_avx512(20000000));
    std::printf("PEAK gflops=%.1f isa=avx512 (12 independent fp32 FMA chains, thread CPU time)\n",
                best);
    return 0;
  }
#endif
  std::printf("PEAK gflops=0 isa=none (no AVX-512 probe for this CPU)\n");
  return 0;
}

// Largest |c - ref| / (k u sum |a||b|) over the product.
double check(const GemmShape& s, const std::vector<float>& a, const std::vector<float>& b,
             const std::vector<float>& c, const std::vector<float>& ref) {
  double worst = 0;
  const double u = std::ldexp(1.0, -24);
  for (int64_t e = 0; e < s.batch; ++e)
    for (int64_t i = 0; i < s.m; i += std::max<int64_t>(1, s.m / 64))
      for (int64_t j = 0; j < s.n; ++j) {
        double mag = 0;
        for (int64_t q = 0; q < s.k; ++q) {
          float bv = s.b_transposed ? b[e * s.k * s.n + j * s.k + q] : b[e * s.k * s.n + q * s.n + j];
          float av = s.a_transposed ? a[e * s.m * s.k + q * s.m + i] : a[e * s.m * s.k + i * s.k + q];
          mag += std::fabs(static_cast<double>(av) * bv);
        }
        const size_t at = static_cast<size_t>(e * s.m * s.n + i * s.n + j);
        double d = std::fabs(static_cast<double>(c[at]) - ref[at]);
        worst = std::max(worst, mag > 0 ? d / (static_cast<double>(s.k) * u * mag) : d);
      }
  return worst;
}

int run(const std::string& lib_name, int threads, int reps, const std::vector<std::string>& want) {
  if (!pin(threads)) {
    std::printf("SKIP lib=%s threads=%d: fewer CPUs in the affinity mask\n", lib_name.c_str(),
                threads);
    return 0;
  }
  std::string why;
  auto lib = stax::bench::load_gemm_library(lib_name, threads, &why);
  if (!lib) {
    std::printf("SKIP lib=%s threads=%d: %s\n", lib_name.c_str(), threads, why.c_str());
    return 0;
  }
  std::printf("LIB lib=%s threads=%d version=\"%s\"\n", lib_name.c_str(), threads,
              lib->describe().c_str());
  auto stax_ref = stax::bench::load_gemm_library("stax", 1, &why);
  for (const GemmShape& s : all_shapes()) {
    // No --shapes: the four of docs/gemm.md's table (not the gpt set).
    if (want.empty() ? s.name.rfind("gpt_", 0) == 0
                     : std::find(want.begin(), want.end(), s.name) == want.end())
      continue;
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> a(static_cast<size_t>(s.batch * s.m * s.k)),
        b(static_cast<size_t>(s.batch * s.k * s.n)), c(static_cast<size_t>(s.batch * s.m * s.n)),
        ref(c.size());
    for (float& x : a) x = dist(rng);
    for (float& x : b) x = dist(rng);
    stax_ref->multiply(s, a.data(), b.data(), ref.data());
    lib->multiply(s, a.data(), b.data(), c.data());  // warm-up (and the checked result)
    const double deviation = check(s, a, b, c, ref);
    // Then 50 ms of calls before the timed ones: a pool thread created with the library may run
    // on the calling thread's CPU until the scheduler moves it (on the 2-vCPU VM, the first shape
    // of a process timed 2-thread products at 1-thread speed in one run of two: 0.65 against
    // 0.35 ms for 512x128x512 with A transposed).
    for (const auto t0 = std::chrono::steady_clock::now();
         std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(50);)
      lib->multiply(s, a.data(), b.data(), c.data());
    double best_wall = 1e30, best_cpu = 1e30;
    for (int r = 0; r < reps; ++r) {
      const auto w0 = std::chrono::steady_clock::now();
      const double c0 = process_cpu_seconds();
      lib->multiply(s, a.data(), b.data(), c.data());
      const double cpu = process_cpu_seconds() - c0;
      const double wall =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
      best_wall = std::min(best_wall, wall);
      best_cpu = std::min(best_cpu, cpu);
    }
    std::printf("RESULT lib=%s shape=%s threads=%d wall_ms=%.4f cpu_ms=%.4f check=%.3g batch=\"%s\"\n",
                lib_name.c_str(), s.name.c_str(), threads, best_wall * 1e3, best_cpu * 1e3,
                deviation, s.batch > 1 ? lib->batch_mode().c_str() : "-");
    std::fflush(stdout);
  }
  return 0;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    if (comma > start) out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string lib;
  int threads = 1, reps = 10;
  std::vector<std::string> shapes;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_gemm: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--peak") return peak();
    if (arg == "--lib") lib = value();
    else if (arg == "--threads") threads = std::atoi(value().c_str());
    else if (arg == "--reps") reps = std::atoi(value().c_str());
    else if (arg == "--shapes") shapes = expand_sets(split(value()));
    else {
      std::fprintf(stderr,
                   "usage: bench_gemm --lib NAME [--threads T] [--reps R] [--shapes a,b] | "
                   "--peak\n");
      return 2;
    }
  }
  if (lib.empty() || threads < 1 || reps < 1) {
    std::fprintf(stderr, "bench_gemm: --lib NAME is required (one of");
    for (const std::string& n : stax::bench::gemm_library_names()) std::fprintf(stderr, " %s", n.c_str());
    std::fprintf(stderr, ")\n");
    return 2;
  }
  return run(lib, threads, reps, shapes);
}
