// bench_attention_backward: the flash backward's two schedules side by side (docs/attention.md),
// the SDK kernel alone (no compiler): causal, B·H = 64 entries, T = 256, D = 32, float32.
//   one-pass  one task per batch entry (entry_grads: each block's P and dS once), what
//             attn::backward runs from kOnePassBatch entries on;
//   two-pass  tasks per block of keys (dK, dV) and per block of queries (dQ), each block's P and
//             dS twice: attn::backward on chunks of fewer than kOnePassBatch entries.
// Both give the same bits (tests/attention/flash_attention_test.cpp). Interleaved rounds,
// medians in ms, the ratio two-pass / one-pass; threads by a std::thread pool per call.
// Usage: bench_attention_backward [threads=1] [rounds=5] [reps=5] [T=256] [--once --only one|two]
//                                 [--sub-rows A,B,...] [--products tiles,gemm] [--entries N]
// --once --only X: one call of one schedule, for `valgrind --tool=callgrind` instruction counts.
// --sub-rows A,B: instead, the forward and the one-pass backward with Problem::sub_rows = A, B ...
// (rows per product where the causal diagonal crosses a block; 64: whole blocks, the kernel
// before 2026-12-06), interleaved, medians in ms.
// --products tiles,gemm: instead, the forward and the one-pass backward with the block products
// as register tiles reading the blocks in place (tiles, the default) and by Stax's packing GEMM
// (gemm: Problem::gemm_products, the kernel before 2026-12-06), interleaved, medians in ms of
// wall time and of the process's CPU time per call. --entries N: N batch entries (default 64).
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "stax/sdk/flash_attention.hpp"

namespace attn = stax::sdk::attention;

namespace {

// task(0 .. tasks-1) on `threads` threads, task t on thread t % threads.
void parallel_for(int threads, int64_t tasks, const std::function<void(int64_t)>& task) {
  std::vector<std::thread> pool;
  for (int w = 0; w < threads; ++w)
    pool.emplace_back([&, w] {
      for (int64_t t = w; t < tasks; t += threads) task(t);
    });
  for (std::thread& t : pool) t.join();
}

struct Data {
  int64_t n, t, d;
  std::vector<float> q, k, v, out, dout, grads;
  std::vector<int64_t> offsets;
};

// Entries [first, first + count) of the data's backward.
void run(Data& x, int64_t first, int64_t count, const attn::Context& c,
         int64_t sub_rows = attn::kSubRows, bool gemm_products = false) {
  attn::Backward<float> p;
  p.sub_rows = sub_rows;
  p.gemm_products = gemm_products;
  p.batch = count, p.l = x.t, p.s = x.t, p.e = x.d, p.ev = x.d, p.causal = true;
  p.scale = 1.0f / std::sqrt(static_cast<float>(x.d));
  const int64_t* off = x.offsets.data() + first;
  p.q = {x.q.data(), off, x.d, 1};
  p.k = {x.k.data(), off, x.d, 1};
  p.v = {x.v.data(), off, x.d, 1};
  const int64_t rows = x.n * x.t;
  p.out = x.out.data() + first * x.t * x.d, p.lse = x.out.data() + rows * x.d + first * x.t;
  p.dout = x.dout.data() + first * x.t * x.d, p.dlse = nullptr;
  p.dq = x.grads.data() + first * x.t * x.d;
  p.dk = x.grads.data() + rows * x.d + first * x.t * x.d;
  p.dv = x.grads.data() + 2 * rows * x.d + first * x.t * x.d;
  attn::backward(p, c);
}

double call_ms(Data& x, bool one_pass, const attn::Context& c) {
  auto start = std::chrono::steady_clock::now();
  if (one_pass) {
    run(x, 0, x.n, c);
  } else {  // chunks below kOnePassBatch: the two-pass schedule
    const int64_t chunk = attn::kOnePassBatch / 2;
    for (int64_t first = 0; first < x.n; first += chunk) run(x, first, std::min(chunk, x.n - first), c);
  }
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string loadavg() {
  std::ifstream f("/proc/loadavg");
  std::string s;
  std::getline(f, s);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> pos;
  bool once = false;
  std::string only;
  std::vector<int64_t> subs;
  std::vector<bool> products;  // --products: gemm_products per variant
  int64_t entries = 64;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--sub-rows") == 0 && i + 1 < argc) {
      for (const char* t = argv[++i]; *t;) {
        char* end = nullptr;
        subs.push_back(std::strtoll(t, &end, 10));
        if (end == t || subs.back() < 1) {
          std::fprintf(stderr, "bench_attention_backward: --sub-rows takes numbers >= 1, as 32,64\n");
          return 2;
        }
        t = *end == ',' ? end + 1 : end;
      }
    } else if (std::strcmp(argv[i], "--products") == 0 && i + 1 < argc) {
      for (const char* t = argv[++i]; *t;) {
        const char* end = std::strchr(t, ',');
        const std::string name = end ? std::string(t, end) : std::string(t);
        if (name != "tiles" && name != "gemm") {
          std::fprintf(stderr, "bench_attention_backward: --products takes tiles and gemm, as tiles,gemm\n");
          return 2;
        }
        products.push_back(name == "gemm");
        t = end ? end + 1 : t + name.size();
      }
    } else if (std::strcmp(argv[i], "--entries") == 0 && i + 1 < argc) {
      entries = std::atoll(argv[++i]);
      if (entries < 1) {
        std::fprintf(stderr, "bench_attention_backward: --entries takes a number >= 1\n");
        return 2;
      }
    } else if (std::strcmp(argv[i], "--once") == 0)
      once = true;
    else if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc)
      only = argv[++i];
    else
      pos.push_back(argv[i]);
  }
  const int threads = pos.size() > 0 ? std::atoi(pos[0].c_str()) : 1;
  const int rounds = once ? 1 : pos.size() > 1 ? std::atoi(pos[1].c_str()) : 5;
  const int reps = once ? 1 : pos.size() > 2 ? std::atoi(pos[2].c_str()) : 5;
  Data x{entries, pos.size() > 3 ? std::atoll(pos[3].c_str()) : 256, 32, {}, {}, {}, {}, {}, {}, {}};
  std::mt19937 gen(1);
  std::normal_distribution<float> nd;
  auto fill = [&](std::vector<float>& v, int64_t size) {
    v.resize(static_cast<size_t>(size));
    for (float& f : v) f = nd(gen);
  };
  const int64_t rows = x.n * x.t;
  fill(x.q, rows * x.d), fill(x.k, rows * x.d), fill(x.v, rows * x.d), fill(x.dout, rows * x.d);
  x.out.assign(static_cast<size_t>(rows * x.d + rows), 0.0f);
  x.grads.assign(static_cast<size_t>(3 * rows * x.d), 0.0f);
  for (int64_t e = 0; e < x.n; ++e) x.offsets.push_back(e * x.t * x.d);
  attn::Context c;
  if (threads > 1) c.parallel_for = [threads](int64_t tasks, const std::function<void(int64_t)>& task) {
    parallel_for(threads, tasks, task);
  };
  auto forward = [&](int64_t sub_rows, bool gemm_products = false) {  // out and lse, so the backward's probabilities are real ones
    attn::Forward<float> f;
    f.sub_rows = sub_rows;
    f.gemm_products = gemm_products;
    f.batch = x.n, f.l = x.t, f.s = x.t, f.e = x.d, f.ev = x.d, f.causal = true;
    f.scale = 1.0f / std::sqrt(static_cast<float>(x.d));
    f.q = {x.q.data(), x.offsets.data(), x.d, 1};
    f.k = {x.k.data(), x.offsets.data(), x.d, 1};
    f.v = {x.v.data(), x.offsets.data(), x.d, 1};
    f.out = x.out.data(), f.lse = x.out.data() + rows * x.d;
    attn::forward(f, c);
  };
  forward(attn::kSubRows);
  if (!products.empty()) {
    std::printf("bench_attention_backward --products: causal, %lld entries, T=%lld, D=%lld, float32, %d thread(s)\n",
                static_cast<long long>(x.n), static_cast<long long>(x.t), static_cast<long long>(x.d), threads);
    std::printf("loadavg before: %s\n", loadavg().c_str());
    auto cpu_ms = [] { return 1e3 * static_cast<double>(std::clock()) / CLOCKS_PER_SEC; };
    // f(); returns {wall ms, process CPU ms}
    auto ms = [&](auto&& f) {
      const double c0 = cpu_ms();
      auto start = std::chrono::steady_clock::now();
      f();
      const double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      return std::pair<double, double>{wall, cpu_ms() - c0};
    };
    const size_t nv = products.size();
    std::vector<std::vector<double>> fw(nv), bw(nv), fc(nv), bc(nv);
    for (int r = 0; r < rounds + 1; ++r)  // round 0 warms up
      for (int i = 0; i < reps; ++i)
        for (size_t v = 0; v < nv; ++v) {
          const auto f = ms([&] { forward(attn::kSubRows, products[v]); });
          const auto b = ms([&] { run(x, 0, x.n, c, attn::kSubRows, products[v]); });
          if (r > 0) fw[v].push_back(f.first), bw[v].push_back(b.first), fc[v].push_back(f.second), bc[v].push_back(b.second);
        }
    for (size_t v = 0; v < nv; ++v)
      std::printf("%-5s: forward %.3f ms (cpu %.3f), backward %.3f ms (cpu %.3f), sum %.3f ms (cpu %.3f)\n",
                  products[v] ? "gemm" : "tiles", median(fw[v]), median(fc[v]), median(bw[v]), median(bc[v]),
                  median(fw[v]) + median(bw[v]), median(fc[v]) + median(bc[v]));
    std::printf("loadavg after: %s\n", loadavg().c_str());
    return 0;
  }
  if (!subs.empty()) {
    std::printf("bench_attention_backward --sub-rows: causal, %lld entries, T=%lld, D=%lld, float32, %d thread(s)\n",
                static_cast<long long>(x.n), static_cast<long long>(x.t), static_cast<long long>(x.d), threads);
    std::printf("loadavg before: %s\n", loadavg().c_str());
    auto ms = [](auto&& f) {
      auto start = std::chrono::steady_clock::now();
      f();
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    };
    std::vector<std::vector<double>> fw(subs.size()), bw(subs.size());
    for (int r = 0; r < rounds + 1; ++r)  // round 0 warms up
      for (int i = 0; i < reps; ++i)
        for (size_t v = 0; v < subs.size(); ++v) {
          const double f = ms([&] { forward(subs[v]); });
          const double b = ms([&] { run(x, 0, x.n, c, subs[v]); });
          if (r > 0) fw[v].push_back(f), bw[v].push_back(b);
        }
    for (size_t v = 0; v < subs.size(); ++v)
      std::printf("sub_rows %3lld: forward %.3f ms, backward %.3f ms, sum %.3f ms\n",
                  static_cast<long long>(subs[v]), median(fw[v]), median(bw[v]), median(fw[v]) + median(bw[v]));
    std::printf("loadavg after: %s\n", loadavg().c_str());
    return 0;
  }
  if (once) {
    call_ms(x, only != "two", c);
    return 0;
  }
  std::printf("bench_attention_backward: causal, %lld entries, T=%lld, D=%lld, float32, %d thread(s)\n",
              static_cast<long long>(x.n), static_cast<long long>(x.t), static_cast<long long>(x.d), threads);
  std::printf("loadavg before: %s\n", loadavg().c_str());
  call_ms(x, true, c), call_ms(x, false, c);  // warm-up
  std::vector<double> one, two;
  for (int r = 0; r < rounds; ++r)
    for (int i = 0; i < reps; ++i) {
      one.push_back(call_ms(x, true, c));
      two.push_back(call_ms(x, false, c));
    }
  std::printf("one-pass %.2f ms, two-pass %.2f ms, two-pass / one-pass %.2f\n", median(one), median(two),
              median(two) / median(one));
  std::printf("loadavg after: %s\n", loadavg().c_str());
  return 0;
}
