// stax bench GRAPH --config C [--threads N] [--reps N] [--seed S]: compiles GRAPH once with the
// configured backend, runs it `reps` times on seeded random inputs (the distribution of stax run),
// and prints the median run time and its spread, the bytes a run must move at least (every input
// read once, every output written once), the GB/s that makes, and the fraction of the machine's
// read bandwidth measured here (a read-reduce pass over 256 MiB on the same number of threads,
// best of 3: fused passes that stream two arrays can exceed it a little). Like Triton's do_bench:
// what a user reaches for first. --threads N sets the `threads` option of every device (without
// it the bandwidth is measured on the backend's own thread count, its `cores` property).
// Each run drops the previous run's outputs first, so the executor's storage pool serves them.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <thread>
#include <vector>

#include "core/driver/compiler.h"
#include "core/support/error.h"
#include "tools/stax/command.h"
#include "tools/stax/compile_support.h"

namespace stax::cli {

namespace {

struct BenchOptions {
  std::string graph;
  std::vector<std::string> shapes;
  std::string config;
  std::string device;  // --device
  int threads = 0;
  int reps = 50;
  uint64_t seed = 0;
};

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

typedef uint32_t v4u __attribute__((vector_size(16)));

// Read bandwidth (bytes/s) over 256 MiB of uint32 on `threads` threads, best of 3.
double read_bandwidth(int threads) {
  const size_t n = (256u << 20) / 4;
  std::vector<uint32_t> a(n, 1u);
  std::vector<uint64_t> partial(static_cast<size_t>(threads));
  const uint32_t* data = a.data();
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    auto t = Clock::now();
    std::vector<std::thread> pool;
    for (int k = 0; k < threads; ++k)
      pool.emplace_back([&, k] {
        size_t lo = n * static_cast<size_t>(k) / static_cast<size_t>(threads);
        size_t hi = n * static_cast<size_t>(k + 1) / static_cast<size_t>(threads);
        // 64 bytes per step in 4 independent 16-byte vector sums (SSE2 even on the baseline
        // target): a scalar loop is bound by the adds, not by memory
        v4u s[4] = {};
        for (size_t i = lo; i + 16 <= hi; i += 16) {
          v4u v[4];
          std::memcpy(v, data + i, sizeof v);
          for (int j = 0; j < 4; ++j) s[j] += v[j];
        }
        v4u t = s[0] + s[1] + s[2] + s[3];
        partial[static_cast<size_t>(k)] = t[0] + t[1] + t[2] + t[3];
      });
    for (std::thread& th : pool) th.join();
    best = std::max(best, static_cast<double>(n) * 4 / (ms_since(t) / 1e3));
  }
  return best;
}

Tensor random_input(const TensorMeta& m, uint64_t seed, uint64_t offset) {
  if (is_floating(m.dtype)) return Tensor::randn(m.sizes, m.dtype, seed, offset);
  if (is_bool(m.dtype)) return Tensor::randint(m.sizes, 0, 2, m.dtype, seed, offset);
  return Tensor::randint(m.sizes, 0, 10, m.dtype, seed, offset);
}

int bench(const BenchOptions& o) {
  Graph g = load_graph(o.graph, o.shapes);
  Config config = load_cli_config(o.config);
  apply_device_option(config, o.device);
  if (o.threads > 0)
    for (auto& [name, device] : config.devices)
      device.options.set("threads", OptionValue::make_scalar(std::to_string(o.threads)));
  Compiler compiler(config);
  CompiledGraph cg = compiler.compile(g);
  std::cout << "compiled: " << cg.summary() << "\n";
  std::vector<Tensor> inputs;
  uint64_t offset = 0;
  double bytes = 0;
  for (const Node* p : g.placeholders()) {
    inputs.push_back(random_input(p->meta(), o.seed, offset));
    offset += static_cast<uint64_t>(p->meta().numel());
    bytes += static_cast<double>(p->meta().nbytes());
  }
  for (const Node* out : g.outputs()) bytes += static_cast<double>(out->meta().nbytes());
  RunStats warm;
  GraphRunOptions warm_options;
  warm_options.stats = &warm;
  std::vector<Tensor> outputs = cg.run(inputs, warm_options);  // warm-up: page faults, caches
  if (warm.on_device)  // device-resident run (issue 8): what one run copies, included below
    std::cout << "device-resident: per run " << warm.host_to_device << " copies in ("
              << warm.host_to_device_bytes << " B), " << warm.device_to_host << " out ("
              << warm.device_to_host_bytes << " B), " << warm.launches << " launches, "
              << warm.interpreter_steps << " interpreter steps, " << warm.synchronizes
              << " synchronizes (times below include the copies)\n";
  std::vector<double> ms;
  for (int k = 0; k < o.reps; ++k) {
    outputs.clear();
    auto t = Clock::now();
    outputs = cg.run(inputs);
    ms.push_back(ms_since(t));
  }
  std::sort(ms.begin(), ms.end());
  auto at = [&](double q) { return ms[static_cast<size_t>(q * static_cast<double>(ms.size() - 1))]; };
  const double median = at(0.5);
  // the threads the backend runs on (--threads, else its configured or default `threads`)
  int threads = o.threads;
  if (threads <= 0) {
    const std::string kind = config.default_device.empty() ? "cpu" : config.default_device;
    try {
      threads = std::max(1, static_cast<int>(compiler.registry().backend(kind).properties().cores));
    } catch (const Error&) {
      threads = 1;
    }
  }
  const double bw = read_bandwidth(threads);
  char line[256];
  std::snprintf(line, sizeof line,
                "runs: %d; median %.4f ms; spread: min %.4f, p10 %.4f, p90 %.4f, max %.4f ms\n",
                o.reps, median, ms.front(), at(0.1), at(0.9), ms.back());
  std::cout << line;
  std::snprintf(line, sizeof line,
                "bytes moved: %.0f (inputs read once, outputs written once); %.2f GB/s; "
                "%.0f%% of the measured read bandwidth %.2f GB/s (%d thread%s)\n",
                bytes, bytes / median / 1e6, 100.0 * bytes / (median / 1e3) / bw, bw / 1e9,
                threads, threads == 1 ? "" : "s");
  std::cout << line;
  return 0;
}

}  // namespace

Subcommand make_bench_command(CLI::App& parent) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* sub = parent.add_subcommand(
      "bench", "Compile a graph once and time many runs: median, spread, bytes moved, GB/s and the "
               "fraction of the measured memory bandwidth");
  sub->add_option("graph", o->graph, "graph file (.stax)")->required();
  add_config_option(*sub, o->config);
  add_device_option(*sub, o->device);
  add_shape_option(*sub, o->shapes);
  sub->add_option("--threads", o->threads, "the `threads` option of every device (default: "
                                           "the config's)")
      ->check(CLI::Range(1, 1024));
  sub->add_option("--reps", o->reps, "timed runs (after one warm-up run)")
      ->check(CLI::Range(1, 1000000));
  add_seed_option(*sub, o->seed, "seed of the random inputs");
  return {sub, [o] { return bench(*o); }};
}

}  // namespace stax::cli
