// bench_cpu: Stax (cpu_cpp, default options: the segmented reduction order) next to hand-written
// C++ (hand_kernels.h: g++ -O3 -march=native -ffast-math, OpenMP, OpenBLAS) and torch eager, for
// the workloads of issue 9, at 1 and 2 threads, interleaved in one run (Stax, hand, Stax, hand,
// ...; medians). `scripts/bench_cpu.sh` runs it (the whole table in one command).
//
//   bench_cpu [reps=9] [sizes=4096,8192] [threads=1,2] [workloads=W1,W3,W4,W5,W1call,W2,MLP]
//
// STAX_BENCH_VECTOR_PRINTER=true|false sets cpu_cpp's `vector_printer`; =both times Stax with it
// off and on in the same run (rows `W1` and `W1+vp`, the two interleaved with hand in one loop
// for W1-W5 and W1call; W2 / MLP one after the other). STAX_BENCH_OPTION=name:v1,v2 does the same
// for any cpu_cpp option (e.g. fuse_bodies:true,false: rows `W3` and `W3+fuse_bodies=false`).
// Last, `strict_order: true` at 1 thread for W1, W3, W4, W5, `row_tiles` on and off (workload
// `strict` alone: bench_cpu 9 4096,8192 1 strict).
//
// Workloads (float32, rows = cols = size):
//   W1  ((x + y).relu() * 2).sum(-1)      W3  softmax(x, -1)
//   W4  (x * x).sum(-1)                   W5  layer_norm(x, -1) (weight, bias; eps 1e-5)
//   W1call  W1 at 64 x 128, per call (the time of 1000 back-to-back calls / 1000): overhead
//   W2  gelu(x @ W).sum() forward + backward (x, W: 1024 x 1024; CompiledFunction), vs one sgemm
//       + one fused pass forward and one fused pass + two sgemms backward
//   MLP one training step of pred = gelu(x @ W1 + b1) @ W2 + b2, loss = mean((pred - y)^2),
//       gradients of W1, b1, W2, b2 (x 1024 x 1024, W1 1024 x 1024, W2 1024 x 128)
// Columns: medians in ms (stax, hand, torch eager, roof = the minimum traffic at the measured
// read bandwidth on the same threads: a lower bound for the memory-bound rows, "-" for W2 / MLP,
// which are compute-bound); hand/stax, torch/stax, roof/stax = throughput of Stax relative to
// each (>= 1: Stax is faster; the goals: hand/stax >= 0.9 for W1-W5, >= 1/1.1 for W2 and
// MLP, >= 0.5 for W1call); GB/s of Stax counting the minimum traffic; err = max |stax - hand| /
// max |hand| (W2 / MLP: over every gradient). torch runs in the .venv's Python
// (STAX_TORCH_PYTHON; bench/torch_eager.py, torch.set_num_threads) before the Stax rows; its column reads "-" when
// torch cannot be imported (the reason is printed).
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "bench/hand_kernels.h"
#include "core/config/config.h"
#include "core/driver/compiled_function.h"
#include "core/driver/compiler.h"
#include "core/ops/install.h"

namespace {

using namespace stax;
// Wall time; STAX_BENCH_CLOCK=thread_cpu: the calling thread's CPU time instead (a loaded
// machine's preemptions do not count; meaningful for 1-thread rows only, where the caller does all
// the work); =process_cpu: the CPU time of all the process's threads (what a run costs the
// machine, spinning included).
struct Clock {
  using time_point = std::chrono::steady_clock::time_point;
  static time_point now() {
    static const std::string which =
        std::getenv("STAX_BENCH_CLOCK") ? std::getenv("STAX_BENCH_CLOCK") : "";
    static const bool thread = which == "thread_cpu", process = which == "process_cpu";
    if (!thread && !process) return std::chrono::steady_clock::now();
    timespec ts;
    clock_gettime(thread ? CLOCK_THREAD_CPUTIME_ID : CLOCK_PROCESS_CPUTIME_ID, &ts);
    return time_point(std::chrono::nanoseconds(int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec));
  }
};

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

// vector_printer: "" (the plugin's default), "true" or "false".
Config config(int threads, const std::string& vector_printer = "",
              const std::string& option = "", const std::string& value = "") {
  Config c;
  c.source = "<bench>";
  c.plugin_path = {STAX_PLUGIN_DIR};
  DeviceConfig cpu;
  cpu.backend = "cpu_cpp";
  cpu.options = OptionValue::map();
  cpu.options.set("threads", OptionValue::make_scalar(std::to_string(threads)));
  if (!vector_printer.empty())
    cpu.options.set("vector_printer", OptionValue::make_scalar(vector_printer));
  if (!option.empty()) cpu.options.set(option, OptionValue::make_scalar(value));
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

// torch eager medians (ms) by "workload size threads", from bench/torch_eager.py in
// STAX_TORCH_PYTHON (the .venv's torch 2.x); empty (with `why` set) when torch is not importable.
std::map<std::string, double> torch_times(int reps, const std::vector<int64_t>& sizes,
                                          const std::vector<int>& threads, std::string& why) {
  std::map<std::string, double> times;
  std::string size_list, thread_list;
  for (int64_t n : sizes) size_list += (size_list.empty() ? "" : ",") + std::to_string(n);
  for (int t : threads) thread_list += (thread_list.empty() ? "" : ",") + std::to_string(t);
  std::string cmd = STAX_TORCH_PYTHON " " STAX_SOURCE_DIR "/bench/torch_eager.py " +
                    std::to_string(reps) + " " + size_list + " " + thread_list + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) {
    why = "cannot start " STAX_TORCH_PYTHON;
    return times;
  }
  char line[512];
  while (std::fgets(line, sizeof line, p)) {
    std::stringstream ss(line);
    std::string tag, wl;
    long long n = 0;
    int t = 0;
    double ms = 0;
    ss >> tag;
    if (tag == "torch" && (ss >> wl >> n >> t >> ms))
      times[wl + " " + std::to_string(n) + " " + std::to_string(t)] = ms;
    else if (tag == "torch-missing")
      why = std::string(line).substr(14);
  }
  int status = pclose(p);
  if (times.empty() && why.empty())
    why = "bench/torch_eager.py printed no timings (exit status " + std::to_string(status) + ")";
  while (!why.empty() && why.back() == '\n') why.pop_back();
  return times;
}

struct Row {
  std::string name;
  int64_t size = 0;
  int threads = 1;
  double stax = 0, hand = 0, torch = -1, roof = -1, bytes = 0, err = 0;
};

void print_header() {
  std::printf("%-6s %6s %3s %10s %10s %10s %10s %9s %10s %9s %8s %9s\n", "wl", "size", "thr",
              "stax ms", "hand ms", "torch ms", "roof ms", "hand/stax", "torch/stax",
              "roof/stax", "GB/s", "err");
}

void print_row(const Row& r) {
  auto ms = [](double v) {
    char b[32];
    if (v < 0)
      std::snprintf(b, sizeof b, "-");
    else
      std::snprintf(b, sizeof b, "%.4f", v);
    return std::string(b);
  };
  auto ratio = [&](double v) {
    char b[32];
    if (v < 0)
      std::snprintf(b, sizeof b, "-");
    else
      std::snprintf(b, sizeof b, "%.2f", v / r.stax);
    return std::string(b);
  };
  std::printf("%-6s %6lld %3d %10.4f %10.4f %10s %10s %9s %10s %9s %8.1f %9.1e\n",
              r.name.c_str(), static_cast<long long>(r.size), r.threads, r.stax, r.hand,
              ms(r.torch).c_str(), ms(r.roof).c_str(), ratio(r.hand).c_str(),
              ratio(r.torch).c_str(), ratio(r.roof).c_str(),
              r.bytes > 0 ? r.bytes / r.stax / 1e6 : 0.0, r.err);
  std::fflush(stdout);
}

// max |a - b| / max |b| over pairs of tensors
double rel_err(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  double diff = 0, mag = 0;
  for (size_t k = 0; k < got.size() && k < want.size(); ++k)
    for (int64_t e = 0; e < want[k].numel(); ++e) {
      diff = std::max(diff, std::fabs(got[k].get_double(e) - want[k].get_double(e)));
      mag = std::max(mag, std::fabs(want[k].get_double(e)));
    }
  return mag > 0 ? diff / mag : diff;
}

Graph w2_graph(int64_t n) {
  Graph g;
  Node* x = g.placeholder("x", {n, n});
  Node* w = g.placeholder("W", {n, n});
  g.output({g.call("sum.default", {g.call("gelu", {g.call("matmul", {x, w})})})});
  return g;
}

constexpr int64_t kMlpBatch = 1024, kMlpIn = 1024, kMlpHidden = 1024, kMlpOut = 128;

Graph mlp_graph() {
  Graph g;
  Node* x = g.placeholder("x", {kMlpBatch, kMlpIn});
  Node* w1 = g.placeholder("W1", {kMlpIn, kMlpHidden});
  Node* b1 = g.placeholder("b1", {kMlpHidden});
  Node* w2 = g.placeholder("W2", {kMlpHidden, kMlpOut});
  Node* b2 = g.placeholder("b2", {kMlpOut});
  Node* y = g.placeholder("y", {kMlpBatch, kMlpOut});
  Node* a = g.call("gelu", {g.call("add.Tensor", {g.call("matmul", {x, w1}), b1})});
  Node* pred = g.call("add.Tensor", {g.call("matmul", {a, w2}), b2});
  Node* diff = g.call("sub.Tensor", {pred, y});
  g.output({g.call("mean", {g.call("mul.Tensor", {diff, diff})})});
  return g;
}

std::vector<Tensor> random_inputs(const Graph& g, double scale) {
  std::vector<Tensor> in;
  uint64_t offset = 0;
  for (const Node* p : g.placeholders()) {
    Tensor t = Tensor::randn(p->meta().sizes, p->meta().dtype, 1, offset);
    if (scale != 1.0)
      for (int64_t e = 0; e < t.numel(); ++e) t.set_double(e, t.get_double(e) * scale);
    in.push_back(t);
    offset += static_cast<uint64_t>(p->meta().numel());
  }
  return in;
}

// One forward + backward of `f` (gradients of every wrt input).
std::vector<Tensor> train_step(CompiledFunction& f, const std::vector<Tensor>& in) {
  ForwardResult r = f.forward(in);
  return f.backward(*r.ctx);
}

}  // namespace

// Nanoseconds of one PAUSE instruction (what spin-waits are made of): the fastest of 50 batches
// of 2000 (a batch the OS preempts reads long). ~25 ns on the Zen 5 guests we measure on.
double pause_ns() {
  double best = 1e9;
  for (int b = 0; b < 50; ++b) {
    auto t = Clock::now();
    for (int i = 0; i < 2000; ++i) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
    best = std::min(best, ms_since(t) * 1e6 / 2000);
  }
  return best;
}

int main(int argc, char** argv) {
  stax::install_ops();  // the engines' op tables (core/ops/install.h)
  // The hand baseline's OpenMP workers spin GOMP_SPINCOUNT PAUSEs (300000 by default) after each
  // parallel loop before sleeping: ~7.5 ms where PAUSE costs 25 ns (Zen 5), so each Stax run
  // that follows a hand run (interleaved) would share a core with a spinning idle thread. Like
  // Stax's pool (100 µs, thread_pool.cpp), the baseline spins ~100 µs: libgomp reads the variable
  // when it is loaded, so the bench sets it and runs itself again.
  if (!std::getenv("GOMP_SPINCOUNT") && !std::getenv("OMP_WAIT_POLICY")) {
    double ns = std::max(0.5, pause_ns());
    std::string spins = std::to_string(std::max<long long>(100, static_cast<long long>(1e5 / ns)));
    setenv("GOMP_SPINCOUNT", spins.c_str(), 1);
    setenv("STAX_BENCH_PAUSE_NS", std::to_string(ns).c_str(), 1);
    execv("/proc/self/exe", argv);  // returns only on failure: go on with the default
  }
  int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 9;
  std::vector<int64_t> sizes = {4096, 8192};
  if (argc > 2) {
    sizes.clear();
    std::stringstream ss(argv[2]);
    for (std::string item; std::getline(ss, item, ',');) sizes.push_back(std::stoll(item));
  }
  std::vector<int> thread_counts = {1, 2};
  if (argc > 3) {
    thread_counts.clear();
    std::stringstream ss(argv[3]);
    for (std::string item; std::getline(ss, item, ',');) thread_counts.push_back(std::stoi(item));
  }
  std::string only = argc > 4 ? "," + std::string(argv[4]) + "," : "";
  auto wanted = [&](const std::string& wl) {
    return only.empty() || only.find("," + wl + ",") != std::string::npos;
  };
  std::printf("bench_cpu: reps %d; loadavg at start: %s\n", reps, loadavg().c_str());
  std::printf("hand baseline: GOMP_SPINCOUNT=%s (PAUSE %s ns)\n",
              std::getenv("GOMP_SPINCOUNT") ? std::getenv("GOMP_SPINCOUNT") : "libgomp's default",
              std::getenv("STAX_BENCH_PAUSE_NS") ? std::getenv("STAX_BENCH_PAUSE_NS") : "?");
  std::map<int, double> bw;
  for (int t : thread_counts) {
    bw[t] = measure_bandwidth(t);
    std::printf("read bandwidth %.1f GB/s (%d thread%s)\n", bw[t] / 1e9, t, t == 1 ? "" : "s");
  }
  std::string torch_why;
  std::map<std::string, double> torch;
  if (!std::getenv("STAX_BENCH_NO_TORCH"))
    torch = torch_times(reps, sizes, thread_counts, torch_why);
  else
    torch_why = "STAX_BENCH_NO_TORCH is set";
  if (torch.empty()) std::printf("torch eager: not timed (%s)\n", torch_why.c_str());
  auto torch_ms = [&](const std::string& wl, int64_t n, int t) {
    auto it = torch.find(wl + " " + std::to_string(n) + " " + std::to_string(t));
    return it == torch.end() ? -1.0 : it->second;
  };
  print_header();
  // Compiler sets: one, or (STAX_BENCH_VECTOR_PRINTER=both) vector printer off and on.
  const char* vp_env = std::getenv("STAX_BENCH_VECTOR_PRINTER");
  std::string vp = vp_env ? vp_env : "";
  std::vector<std::string> vp_modes = vp == "both" ? std::vector<std::string>{"false", "true"}
                                                   : std::vector<std::string>{vp};
  // Or (STAX_BENCH_OPTION=name:v1,v2,...) one set per value of one cpu_cpp option, rows named
  // <workload>+<name>=<value> after the first (e.g. fuse_bodies:true,false).
  std::string opt_name;
  std::vector<std::string> opt_values;
  if (const char* o = std::getenv("STAX_BENCH_OPTION"); o && std::strchr(o, ':')) {
    std::string spec = o;
    opt_name = spec.substr(0, spec.find(':'));
    std::string rest = spec.substr(spec.find(':') + 1) + ",";
    for (size_t at = 0, comma; (comma = rest.find(',', at)) != std::string::npos; at = comma + 1)
      if (comma > at) opt_values.push_back(rest.substr(at, comma - at));
    vp_modes.assign(opt_values.size(), vp == "both" ? "" : vp);
  }
  std::vector<std::map<int, std::unique_ptr<Compiler>>> sets(vp_modes.size());
  for (size_t s = 0; s < vp_modes.size(); ++s)
    for (int t : thread_counts)
      sets[s][t] = std::make_unique<Compiler>(
          opt_values.empty() ? config(t, vp_modes[s])
                             : config(t, vp_modes[s], opt_name, opt_values[s]));
  auto row_name = [&](const std::string& wl, size_t s) {
    if (!opt_values.empty()) return s == 0 ? wl : wl + "+" + opt_name + "=" + opt_values[s];
    return vp_modes[s] == "true" && vp_modes.size() > 1 ? wl + "+vp" : wl;
  };
  for (int64_t n : sizes) {
    for (Workload& wl : workloads(n)) {
      if (!wanted(wl.name)) continue;
      std::vector<Tensor> in = random_inputs(wl.graph, 1.0);
      const Node* o = wl.graph.outputs()[0];
      Tensor hand_out = Tensor::zeros(o->meta().sizes, o->meta().dtype);
      double bytes = static_cast<double>(traffic_bytes(wl.graph));
      for (int threads : thread_counts) {
        std::vector<CompiledGraph> cgs;
        std::vector<std::vector<Tensor>> gots;
        for (auto& set : sets) {
          cgs.push_back(set[threads]->compile(wl.graph));
          gots.push_back(cgs.back().run(in));  // warm-up: page faults, caches
        }
        wl.hand(in, hand_out, threads);
        std::vector<std::vector<double>> ts(sets.size());
        std::vector<double> th;
        for (int k = 0; k < reps; ++k) {
          for (size_t s = 0; s < sets.size(); ++s) {
            gots[s].clear();  // dropped results: the storage pool serves the next run
            auto t = Clock::now();
            gots[s] = cgs[s].run(in);
            ts[s].push_back(ms_since(t));
          }
          auto t = Clock::now();
          wl.hand(in, hand_out, threads);
          th.push_back(ms_since(t));
        }
        for (size_t s = 0; s < sets.size(); ++s) {
          Row r{row_name(wl.name, s), n, threads, median(ts[s]), median(th),
                torch_ms(wl.name, n, threads), bytes / bw[threads] * 1e3, bytes,
                rel_err({gots[s][0]}, {hand_out})};
          print_row(r);
        }
      }
    }
  }

  // W1 at 64 x 128: the per-call overhead (1000 back-to-back calls per sample)
  if (wanted("W1call")) {
    const int64_t rows = 64, cols = 128, calls = 1000;
    Graph g;
    Node* x = g.placeholder("x", {rows, cols});
    Node* y = g.placeholder("y", {rows, cols});
    Node* m = g.call("mul.Scalar", {g.call("relu", {g.call("add.Tensor", {x, y})}), 2});
    g.output({g.call("sum.dim_IntList", {m, std::vector<int64_t>{-1}})});
    std::vector<Tensor> in = random_inputs(g, 1.0);
    Tensor hand_out = Tensor::zeros({rows}, DType::Float32);
    for (size_t s = 0; s < sets.size(); ++s)
    for (int threads : thread_counts) {
      CompiledGraph cg = sets[s][threads]->compile(g);
      std::vector<Tensor> got = cg.run(in);
      std::vector<double> ts, th;
      for (int k = 0; k < reps; ++k) {
        auto t = Clock::now();
        for (int64_t c = 0; c < calls; ++c) {
          got.clear();
          got = cg.run(in);
        }
        ts.push_back(ms_since(t) / calls);
        t = Clock::now();
        for (int64_t c = 0; c < calls; ++c)
          bench::hand_w1(in[0].data<float>(), in[1].data<float>(), hand_out.data<float>(), rows,
                         cols, threads);
        th.push_back(ms_since(t) / calls);
      }
      double bytes = static_cast<double>(traffic_bytes(g));
      print_row(Row{row_name("W1call", s), rows, threads, median(ts), median(th),
                    torch_ms("W1call", rows, threads), bytes / bw[threads] * 1e3, bytes,
                    rel_err({got[0]}, {hand_out})});
    }
  }

  // W2: gelu(x @ W).sum(), forward + backward at 1024^3
  if (wanted("W2")) {
    const int64_t n = 1024;
    Graph g = w2_graph(n);
    std::vector<Tensor> in = random_inputs(g, 1.0);
    Tensor h = Tensor::empty({n, n}), dh = Tensor::empty({n, n});
    std::vector<Tensor> hand_grads = {Tensor::empty({n, n}), Tensor::empty({n, n})};
    for (size_t s = 0; s < sets.size(); ++s)
    for (int threads : thread_counts) {
      CompiledFunction f(g, {"x", "W"}, *sets[s][threads]);
      std::vector<Tensor> got = train_step(f, in);  // compiles the backward
      auto hand = [&] {
        bench::hand_w2_forward(in[0].data<float>(), in[1].data<float>(), h.data<float>(), n, n, n,
                               threads);
        bench::hand_w2_backward(in[0].data<float>(), in[1].data<float>(), h.data<float>(),
                                dh.data<float>(), hand_grads[0].data<float>(),
                                hand_grads[1].data<float>(), n, n, n, threads);
      };
      hand();
      std::vector<double> ts, th;
      for (int k = 0; k < reps; ++k) {
        got.clear();
        auto t = Clock::now();
        got = train_step(f, in);
        ts.push_back(ms_since(t));
        t = Clock::now();
        hand();
        th.push_back(ms_since(t));
      }
      print_row(Row{row_name("W2", s), n, threads, median(ts), median(th), torch_ms("W2", n, threads), -1, 0,
                    rel_err(got, hand_grads)});
    }
  }

  // MLP: one training step (forward + backward, every parameter's gradient)
  if (wanted("MLP")) {
    Graph g = mlp_graph();
    std::vector<Tensor> in = random_inputs(g, 1.0);
    for (size_t k : {size_t{1}, size_t{3}})  // W1, W2 ~ N(0, 1) / sqrt(fan_in)
      for (int64_t e = 0; e < in[k].numel(); ++e) in[k].set_double(e, in[k].get_double(e) / 32);
    std::vector<Tensor> hand_grads = {
        Tensor::empty({kMlpIn, kMlpHidden}), Tensor::empty({kMlpHidden}),
        Tensor::empty({kMlpHidden, kMlpOut}), Tensor::empty({kMlpOut})};
    Tensor pre = Tensor::empty({kMlpBatch, kMlpHidden}), act = Tensor::empty({kMlpBatch, kMlpHidden}),
           dact = Tensor::empty({kMlpBatch, kMlpHidden}), pred = Tensor::empty({kMlpBatch, kMlpOut}),
           dpred = Tensor::empty({kMlpBatch, kMlpOut});
    auto f = [](Tensor& t) { return t.data<float>(); };
    for (size_t s = 0; s < sets.size(); ++s)
    for (int threads : thread_counts) {
      CompiledFunction fn(g, {"W1", "b1", "W2", "b2"}, *sets[s][threads]);
      std::vector<Tensor> got = train_step(fn, in);
      auto hand = [&] {
        bench::hand_mlp_step(in[0].data<float>(), in[1].data<float>(), in[2].data<float>(),
                             in[3].data<float>(), in[4].data<float>(), in[5].data<float>(),
                             f(hand_grads[0]), f(hand_grads[1]), f(hand_grads[2]),
                             f(hand_grads[3]), {f(pre), f(act), f(pred), f(dpred), f(dact)},
                             kMlpBatch, kMlpIn, kMlpHidden, kMlpOut, threads);
      };
      hand();
      std::vector<double> ts, th;
      for (int k = 0; k < reps; ++k) {
        got.clear();
        auto t = Clock::now();
        got = train_step(fn, in);
        ts.push_back(ms_since(t));
        t = Clock::now();
        hand();
        th.push_back(ms_since(t));
      }
      print_row(Row{row_name("MLP", s), kMlpBatch, threads, median(ts), median(th),
                    torch_ms("MLP", kMlpBatch, threads), -1, 0, rel_err(got, hand_grads)});
    }
  }

  // strict_order: true (the sequential order, bitwise the interpreter's): W1, W3, W4, W5 on 1
  // thread, row_tiles on (16 rows in vector lanes over transposed tiles) and off (8 rows' scalar
  // chains side by side), interleaved with the same hand kernels. Workload `strict` on the
  // command line runs this part alone.
  {
    std::vector<std::unique_ptr<Compiler>> strict;
    for (const char* tiles : {"true", "false"}) {
      Config sc = config(1);
      sc.devices["cpu"].options.set("strict_order", OptionValue::make_scalar("true"));
      sc.devices["cpu"].options.set("row_tiles", OptionValue::make_scalar(tiles));
      strict.push_back(std::make_unique<Compiler>(sc));
    }
    for (int64_t n : sizes) {
      for (Workload& wl : workloads(n)) {
        if (wl.name != "W1" && wl.name != "W3" && wl.name != "W4" && wl.name != "W5") continue;
        if (!wanted(wl.name) && !wanted("strict")) continue;
        std::vector<Tensor> in;
        uint64_t offset = 0;
        for (const Node* p : wl.graph.placeholders()) {
          in.push_back(Tensor::randn(p->meta().sizes, p->meta().dtype, 1, offset));
          offset += static_cast<uint64_t>(p->meta().numel());
        }
        const Node* o = wl.graph.outputs()[0];
        Tensor hand_out = Tensor::zeros(o->meta().sizes, o->meta().dtype);
        std::vector<CompiledGraph> cgs;
        std::vector<std::vector<Tensor>> gots;
        for (auto& c : strict) {
          cgs.push_back(c->compile(wl.graph));
          gots.push_back(cgs.back().run(in));
        }
        bool same = gots[0].size() == gots[1].size() && !gots[0].empty() &&
                    gots[0][0].numel() == gots[1][0].numel();
        for (int64_t i = 0; same && i < gots[0][0].numel(); ++i) {
          double a = gots[0][0].get_double(i), b = gots[1][0].get_double(i);
          same = std::memcmp(&a, &b, sizeof a) == 0;
        }
        wl.hand(in, hand_out, 1);
        std::vector<std::vector<double>> ts(cgs.size());
        std::vector<double> th;
        for (int k = 0; k < reps; ++k) {
          for (size_t i = 0; i < cgs.size(); ++i) {
            // ABBA: the first run after the hand kernel's was measured slower (~2x for W4)
            size_t c = k % 2 ? cgs.size() - 1 - i : i;
            gots[c].clear();
            auto t = Clock::now();
            gots[c] = cgs[c].run(in);
            ts[c].push_back(ms_since(t));
          }
          auto t = Clock::now();
          wl.hand(in, hand_out, 1);
          th.push_back(ms_since(t));
        }
        double hand = median(th);
        for (size_t c = 0; c < cgs.size(); ++c) {
          double stax = median(ts[c]);
          std::printf("%-4s %6lld %3d %10.3f %10.3f %9.2f %8.1f   (strict_order, row_tiles %s)%s\n",
                      wl.name.c_str(), static_cast<long long>(n), 1, stax, hand, hand / stax,
                      static_cast<double>(traffic_bytes(wl.graph)) / stax / 1e6,
                      c == 0 ? "on" : "off",
                      c == 1 ? (same ? " bitwise equal" : " RESULTS DIFFER") : "");
        }
        std::fflush(stdout);
      }
    }
  }
  std::printf("loadavg at end: %s\n", loadavg().c_str());
  return 0;
}
