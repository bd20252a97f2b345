// bench_cpu: Stax (cpu_cpp, default options: the segmented reduction order) next to hand-written
// C++ (hand_kernels.h: g++ -O3 -march=native -ffast-math, OpenMP) for the workloads of issue 9, at
// 1 and 2 threads, interleaved in one run (Stax, hand, Stax, hand, ...; medians).
//
//   bench_cpu [reps=9] [sizes=4096,8192]
//
// Workloads (float32, rows = cols = size):
//   W1  ((x + y).relu() * 2).sum(-1)      W3  softmax(x, -1)
//   W4  (x * x).sum(-1)                   W5  layer_norm(x, -1) (weight, bias; eps 1e-5)
// Columns: medians in ms; hand/stax = throughput of Stax relative to hand (≥ 1: Stax is faster);
// GB/s of Stax counting the minimum traffic (inputs read once, outputs written once); %bw =
// that against the read bandwidth measured at start-up on the same thread count (a read-reduce
// probe: a fused pass may exceed it a little); err = max |stax - hand| / max |hand|.
// Torch eager is not timed here: Debian's python3-torch is not installed on the measured machine.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "bench/hand_kernels.h"
#include "core/config/config.h"
#include "core/driver/compiler.h"

namespace {

using namespace stax;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Read bandwidth (bytes/s) on `threads` threads: best of 5 sums over 256 MiB of int32 (the probe
// is compiled with the hand kernels, -O3 -march=native).
double measure_bandwidth(int threads) {
  const int64_t n = (256 << 20) / 4;
  std::vector<int32_t> a(static_cast<size_t>(n), 1);
  double best = 0;
  volatile int64_t sink = 0;
  for (int rep = 0; rep < 5; ++rep) {
    auto t = Clock::now();
    sink = sink + bench::hand_read_sum(a.data(), n, threads);
    best = std::max(best, static_cast<double>(n) * 4 / (ms_since(t) / 1e3));
  }
  return best;
}

Config config(int threads) {
  Config c;
  c.source = "<bench>";
  c.plugin_path = {STAX_PLUGIN_DIR};
  DeviceConfig cpu;
  cpu.backend = "cpu_cpp";
  cpu.options = OptionValue::map();
  cpu.options.set("threads", OptionValue::make_scalar(std::to_string(threads)));
  c.devices["cpu"] = std::move(cpu);
  return c;
}

struct Workload {
  std::string name;
  Graph graph;
  // The hand kernel on the inputs, writing `out`.
  std::function<void(const std::vector<Tensor>&, Tensor&, int)> hand;
};

std::vector<Workload> workloads(int64_t n) {
  std::vector<Workload> w;
  auto f = [](const Tensor& t) { return t.data<float>(); };
  {
    Graph g;
    Node* x = g.placeholder("x", {n, n});
    Node* y = g.placeholder("y", {n, n});
    Node* m = g.call("mul.Scalar", {g.call("relu", {g.call("add.Tensor", {x, y})}), 2});
    g.output({g.call("sum.dim_IntList", {m, std::vector<int64_t>{-1}})});
    w.push_back({"W1", std::move(g), [=](const std::vector<Tensor>& in, Tensor& out, int t) {
                   bench::hand_w1(f(in[0]), f(in[1]), out.data<float>(), n, n, t);
                 }});
  }
  {
    Graph g;
    g.output({g.call("softmax.int", {g.placeholder("x", {n, n}), -1})});
    w.push_back({"W3", std::move(g), [=](const std::vector<Tensor>& in, Tensor& out, int t) {
                   bench::hand_softmax(f(in[0]), out.data<float>(), n, n, t);
                 }});
  }
  {
    Graph g;
    Node* x = g.placeholder("x", {n, n});
    g.output({g.call("sum.dim_IntList", {g.call("mul.Tensor", {x, x}), std::vector<int64_t>{-1}})});
    w.push_back({"W4", std::move(g), [=](const std::vector<Tensor>& in, Tensor& out, int t) {
                   bench::hand_w4(f(in[0]), out.data<float>(), n, n, t);
                 }});
  }
  {
    Graph g;
    Node* x = g.placeholder("x", {n, n});
    Node* wt = g.placeholder("weight", {n});
    Node* b = g.placeholder("bias", {n});
    g.output({g.call("layer_norm", {x, std::vector<int64_t>{n}, wt, b, 1e-5})});
    w.push_back({"W5", std::move(g), [=](const std::vector<Tensor>& in, Tensor& out, int t) {
                   bench::hand_layer_norm(f(in[0]), f(in[1]), f(in[2]), out.data<float>(), n, n,
                                          t);
                 }});
  }
  return w;
}

int64_t traffic_bytes(const Graph& g) {
  int64_t bytes = 0;
  for (const Node* p : g.placeholders()) bytes += p->meta().nbytes();
  for (const Node* o : g.outputs()) bytes += o->meta().nbytes();
  return bytes;
}

std::string loadavg() {
  FILE* f = std::fopen("/proc/loadavg", "r");
  char buf[128] = {0};
  if (f) {
    if (!std::fgets(buf, sizeof buf, f)) buf[0] = 0;
    std::fclose(f);
  }
  std::string s(buf);
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 9;
  std::vector<int64_t> sizes = {4096, 8192};
  if (argc > 2) {
    sizes.clear();
    std::stringstream ss(argv[2]);
    for (std::string item; std::getline(ss, item, ',');) sizes.push_back(std::stoll(item));
  }
  double bw[3] = {0, measure_bandwidth(1), measure_bandwidth(2)};
  std::printf("bench_cpu: reps %d; read bandwidth %.1f GB/s (1 thread), %.1f GB/s (2 threads)\n",
              reps, bw[1] / 1e9, bw[2] / 1e9);
  std::printf("loadavg at start: %s\n", loadavg().c_str());
  std::printf("%-4s %6s %3s %10s %10s %9s %8s %5s %9s\n", "wl", "size", "thr", "stax ms", "hand ms",
              "hand/stax", "GB/s", "%bw", "err");
  Compiler one(config(1)), two(config(2));
  for (int64_t n : sizes) {
    for (Workload& wl : workloads(n)) {
      std::vector<Tensor> in;
      uint64_t offset = 0;
      for (const Node* p : wl.graph.placeholders()) {
        in.push_back(Tensor::randn(p->meta().sizes, p->meta().dtype, 1, offset));
        offset += static_cast<uint64_t>(p->meta().numel());
      }
      const Node* o = wl.graph.outputs()[0];
      Tensor hand_out = Tensor::zeros(o->meta().sizes, o->meta().dtype);
      double bytes = static_cast<double>(traffic_bytes(wl.graph));
      for (int threads : {1, 2}) {
        CompiledGraph cg = (threads == 1 ? one : two).compile(wl.graph);
        std::vector<Tensor> got = cg.run(in);  // warm-up: page faults, caches
        wl.hand(in, hand_out, threads);
        std::vector<double> ts, th;
        for (int k = 0; k < reps; ++k) {
          got.clear();  // dropped results: the storage pool serves the next run
          auto t = Clock::now();
          got = cg.run(in);
          ts.push_back(ms_since(t));
          t = Clock::now();
          wl.hand(in, hand_out, threads);
          th.push_back(ms_since(t));
        }
        double diff = 0, mag = 0;
        for (int64_t e = 0; e < hand_out.numel(); ++e) {
          diff = std::max(diff, std::fabs(got[0].get_double(e) - hand_out.get_double(e)));
          mag = std::max(mag, std::fabs(hand_out.get_double(e)));
        }
        double stax = median(ts), hand = median(th);
        std::printf("%-4s %6lld %3d %10.3f %10.3f %9.2f %8.1f %4.0f%% %9.1e\n", wl.name.c_str(),
                    static_cast<long long>(n), threads, stax, hand, hand / stax,
                    bytes / stax / 1e6, 100.0 * bytes / bw[threads] / (stax / 1e3),
                    mag > 0 ? diff / mag : diff);
        std::fflush(stdout);
      }
    }
  }
  // strict_order: true (the sequential order, bitwise the interpreter's; row reductions run 8
  // rows' chains side by side): W1 and W4 on 1 thread, against the same hand kernels.
  {
    Config sc = config(1);
    sc.devices["cpu"].options.set("strict_order", OptionValue::make_scalar("true"));
    Compiler strict(sc);
    for (int64_t n : sizes) {
      for (Workload& wl : workloads(n)) {
        if (wl.name != "W1" && wl.name != "W4") continue;
        std::vector<Tensor> in;
        uint64_t offset = 0;
        for (const Node* p : wl.graph.placeholders()) {
          in.push_back(Tensor::randn(p->meta().sizes, p->meta().dtype, 1, offset));
          offset += static_cast<uint64_t>(p->meta().numel());
        }
        const Node* o = wl.graph.outputs()[0];
        Tensor hand_out = Tensor::zeros(o->meta().sizes, o->meta().dtype);
        CompiledGraph cg = strict.compile(wl.graph);
        std::vector<Tensor> got = cg.run(in);
        wl.hand(in, hand_out, 1);
        std::vector<double> ts, th;
        for (int k = 0; k < reps; ++k) {
          got.clear();
          auto t = Clock::now();
          got = cg.run(in);
          ts.push_back(ms_since(t));
          t = Clock::now();
          wl.hand(in, hand_out, 1);
          th.push_back(ms_since(t));
        }
        double stax = median(ts), hand = median(th);
        std::printf("%-4s %6lld %3d %10.3f %10.3f %9.2f %8.1f   (strict_order)\n",
                    wl.name.c_str(), static_cast<long long>(n), 1, stax, hand, hand / stax,
                    static_cast<double>(traffic_bytes(wl.graph)) / stax / 1e6);
        std::fflush(stdout);
      }
    }
  }
  std::printf("loadavg at end: %s\n", loadavg().c_str());
  return 0;
}
