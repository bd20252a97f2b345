// bench_schedule: what the scheduler buys, fusion on vs off in one run (cpu_cpp, one thread).
//
// Per graph (the example graphs at their shipped size, larger softmax / layer norm rows, and the
// forward and backward graphs of an MLP training step after the min-cut partition):
//   kernels            kernels with fusion off -> on (extern / fallback steps not counted)
//   arena / interm.    the arena's bytes next to the sum of the intermediates it holds
//   faults/run         minor + major page faults per steady-state run (getrusage), fusion on
//   run off / on       median run time, and the ratio off / on (> 1: fusion is faster)
// Usage: bench_schedule [reps=20]. Run on an idle machine (/proc/loadavg is printed).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "core/autodiff/joint_graph.h"
#include "core/config/config.h"
#include "core/graph/parser.h"
#include "core/ops/install.h"
#include "core/partition/partitioner.h"
#include "core/driver/compiler.h"
#include "core/scheduler/memory_plan.h"
#include "core/tensor/tensor.h"

using namespace stax;

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

long faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt + u.ru_majflt;
}

Config cpu_config() {
  Config c;
  c.plugin_path = {default_plugin_dir()};
  DeviceConfig cpu;
  cpu.backend = "cpu_cpp";
  cpu.options = OptionValue::map();
  cpu.options.set("threads", OptionValue::make_scalar("1"));
  c.devices["cpu"] = std::move(cpu);
  return c;
}

struct Case {
  std::string name;
  Graph graph;
};

Graph softmax_rows(int64_t rows, int64_t cols) {
  Graph g;
  Node* x = g.placeholder("x", {rows, cols});
  g.output({g.call("softmax.int", {x, -1})});
  return g;
}

Graph layer_norm_rows(int64_t rows, int64_t cols) {
  Graph g;
  Node* x = g.placeholder("x", {rows, cols});
  Node* w = g.placeholder("w", {cols});
  Node* b = g.placeholder("b", {cols});
  Node* mean = g.call("mean.dim", {x, std::vector<int64_t>{-1}, true});
  Node* d = g.call("sub.Tensor", {x, mean});
  Node* var = g.call("mean.dim", {g.call("mul.Tensor", {d, d}), std::vector<int64_t>{-1}, true});
  Node* r = g.call("rsqrt", {g.call("add.Scalar", {var, 1e-5})});
  g.output({g.call("add.Tensor", {g.call("mul.Tensor", {g.call("mul.Tensor", {d, r}), w}), b})});
  return g;
}

// The MLP of examples/train_mlp at a larger batch: forward and backward graphs of one step.
std::vector<Case> mlp_step(int64_t batch) {
  const int64_t in = 256, hidden = 512, out = 64;
  Graph g;
  Node* x = g.placeholder("x", {batch, in});
  Node* w1 = g.placeholder("W1", {in, hidden});
  Node* b1 = g.placeholder("b1", {hidden});
  Node* w2 = g.placeholder("W2", {hidden, out});
  Node* b2 = g.placeholder("b2", {out});
  Node* y = g.placeholder("y", {batch, out});
  Node* h = g.call("add.Tensor", {g.call("matmul", {x, w1}), b1});
  Node* a = g.call("gelu", {h});
  Node* pred = g.call("add.Tensor", {g.call("matmul", {a, w2}), b2});
  Node* diff = g.call("sub.Tensor", {pred, y});
  g.output({g.call("mean", {g.call("mul.Tensor", {diff, diff})})});
  partition::PartitionResult p =
      partition::partition_min_cut(build_joint_graph(g, {"W1", "b1", "W2", "b2"}));
  std::vector<Case> cases;
  cases.push_back({"mlp fw", std::move(p.forward)});
  cases.push_back({"mlp bw", std::move(p.backward)});
  return cases;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const char* f : {"example_1_1.stax", "softmax.stax", "layer_norm.stax", "mlp_layer.stax",
                        "example_5_1_forward.stax"})
    out.push_back({f, parse_graph_file(std::string(STAX_SOURCE_DIR) + "/examples/" + f)});
  out.push_back({"softmax 4096x1024", softmax_rows(4096, 1024)});
  out.push_back({"layer_norm 4096x1024", layer_norm_rows(4096, 1024)});
  for (Case& c : mlp_step(4096)) out.push_back(std::move(c));
  return out;
}

size_t count_kernels(const CompiledGraph& cg) { return cg.num_kernels(); }

}  // namespace

int main(int argc, char** argv) {
  stax::install_ops();  // the engines' op tables (core/ops/install.h)
  int reps = argc > 1 ? std::max(3, std::atoi(argv[1])) : 20;
  std::ifstream load("/proc/loadavg");
  std::string loadavg;
  std::getline(load, loadavg);
  std::printf("bench_schedule: reps %d, 1 thread, /proc/loadavg: %s\n", reps, loadavg.c_str());
  std::printf("%-22s %9s %12s %12s %10s %10s %10s %8s %s\n", "graph", "kernels", "arena B",
              "interm. B", "faults/run", "off ms", "on ms", "off/on", "same bits");
  CompileOptions off_options;
  off_options.fuse = false;
  Compiler on(cpu_config()), off(cpu_config(), off_options);
  for (Case& c : cases()) {
    std::vector<Tensor> in;
    uint64_t offset = 0;
    for (const Node* p : c.graph.placeholders()) {
      in.push_back(Tensor::randn(p->meta().sizes, p->meta().dtype, 1, offset));
      offset += static_cast<uint64_t>(p->meta().numel());
    }
    CompiledGraph cg_on = on.compile(c.graph), cg_off = off.compile(c.graph);
    std::vector<Tensor> got_on = cg_on.run(in), got_off = cg_off.run(in);  // warm-up
    bool same = got_on.size() == got_off.size();
    for (size_t i = 0; same && i < got_on.size(); ++i) same = got_on[i].equal(got_off[i]);
    // Interleaved rounds; the caller drops each run's outputs, so their storage is recycled.
    std::vector<double> t_on, t_off;
    long fault_total = 0;
    for (int r = 0; r < reps; ++r) {
      got_on.clear();
      got_off.clear();
      long f0 = faults();
      auto t = Clock::now();
      got_on = cg_on.run(in);
      t_on.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t).count());
      fault_total += faults() - f0;
      t = Clock::now();
      got_off = cg_off.run(in);
      t_off.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t).count());
    }
    const MemoryPlan& m = cg_on.memory_plan();
    char kernels[32];
    std::snprintf(kernels, sizeof kernels, "%zu -> %zu", count_kernels(cg_off),
                  count_kernels(cg_on));
    double on_ms = median(t_on), off_ms = median(t_off);
    std::printf("%-22s %9s %12lld %12lld %10.2f %10.3f %10.3f %8.2f %s\n", c.name.c_str(), kernels,
                static_cast<long long>(m.arena_bytes),
                static_cast<long long>(m.intermediate_bytes),
                static_cast<double>(fault_total) / reps, off_ms, on_ms, off_ms / on_ms,
                same ? "yes" : "NO");
  }
  return 0;
}
