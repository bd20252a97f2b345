// bench_scale: compile time per pipeline stage on generated graphs of 1k, 10k and 100k nodes.
//
// Graphs (N = node count, roughly):
//   chain   x -> relu -> relu -> ... (N relus, one fused chain)
//   fan     x -> N/2 branches (x * c_i) -> summed pairwise in a tree (a wide graph)
//   mlp     an MLP of N/6 layers (matmul, add, tanh per layer) and an MSE loss; the training
//           step: joint graph, min-cut partition, forward and backward graphs
// Stages, in milliseconds: parse (the printed graph parsed back), autodiff (joint graph; mlp
// only), partition (mlp only), lower, schedule (fusion + memory plan), codegen (kernel
// descriptions), compile (the cpu_cpp plugin's JIT; only for N <= the compile limit, as a 100k
// graph has hundreds of kernels to JIT).
// Usage: bench_scale [max_nodes=100000] [compile_limit=1000] [kinds=chain,fan,mlp]. The issue-12
// goal: 100k nodes through lower + schedule in <= 2 s.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "core/autodiff/joint_graph.h"
#include "core/codegen/kernel_codegen.h"
#include "core/config/config.h"
#include "core/driver/compiler.h"
#include "core/graph/parser.h"
#include "core/graph/printer.h"
#include "core/lowering/graph_lowering.h"
#include "core/ops/install.h"
#include "core/partition/partitioner.h"
#include "core/scheduler/memory_plan.h"
#include "core/scheduler/schedule.h"
#include "tests/support/scale_graphs.h"

using namespace stax;

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// Runs f and returns its time in ms.
double timed(const std::function<void()>& f) {
  auto t = Clock::now();
  f();
  return ms_since(t);
}

using scale_graphs::chain;
using scale_graphs::fan;
using scale_graphs::mlp;

struct Times {
  double parse = 0, autodiff = 0, partition = 0, lower = 0, schedule = 0, codegen = 0,
         compile = -1;
  size_t nodes = 0, buffers = 0, kernels = 0;
};

// lower -> schedule -> codegen (-> compile) of one graph, added to `t`.
void backend_stages(const Graph& g, Compiler* compiler, Times& t) {
  LoweredGraph l;
  t.lower += timed([&] { l = lower_graph(g); });
  Schedule s;
  t.schedule += timed([&] {
    s = schedule(l);
    plan_memory(l, s);
  });
  std::vector<KernelPlan> plans;
  t.codegen += timed([&] { plans = plan_kernels(s, l, {}); });
  t.buffers += l.buffers.size();
  t.kernels += plans.size();
  if (compiler) {
    if (t.compile < 0) t.compile = 0;
    t.compile += compiler->compile(g).stats().compile_ms;
  }
}

void report(const char* kind, int n, const Times& t) {
  auto cell = [](double v) {
    char buf[32];
    if (v < 0)
      std::snprintf(buf, sizeof buf, "%10s", "-");
    else
      std::snprintf(buf, sizeof buf, "%10.1f", v);
    return std::string(buf);
  };
  std::printf("%-6s %7d %8zu %8zu %8zu%s%s%s%s%s%s%s %10.1f\n", kind, n, t.nodes, t.buffers,
              t.kernels, cell(t.parse).c_str(), cell(t.autodiff).c_str(),
              cell(t.partition).c_str(), cell(t.lower).c_str(), cell(t.schedule).c_str(),
              cell(t.codegen).c_str(), cell(t.compile).c_str(), t.lower + t.schedule);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  stax::install_ops();  // the engines' op tables (core/ops/install.h)
  int max_nodes = argc > 1 ? std::atoi(argv[1]) : 100000;
  int compile_limit = argc > 2 ? std::atoi(argv[2]) : 1000;
  std::string kinds = argc > 3 ? argv[3] : "chain,fan,mlp";
  Config config;
  config.plugin_path = {default_plugin_dir()};
  DeviceConfig cpu;
  cpu.backend = "cpu_cpp";
  config.devices["cpu"] = cpu;
  Compiler compiler(config);

  std::printf("%-6s %7s %8s %8s %8s%10s%10s%10s%10s%10s%10s%10s %10s\n", "graph", "N", "nodes",
              "buffers", "kernels", "parse", "autodiff", "partition", "lower", "schedule",
              "codegen", "compile", "low+sched");
  for (int n = 1000; n <= max_nodes; n *= 10) {
    Compiler* c = n <= compile_limit ? &compiler : nullptr;
    for (const char* kind : {"chain", "fan", "mlp"}) {
      if (("," + kinds + ",").find(std::string(",") + kind + ",") == std::string::npos) continue;
      Times t;
      std::vector<std::string> wrt;
      Graph g = std::string(kind) == "chain" ? chain(n) : std::string(kind) == "fan" ? fan(n)
                                                                                     : mlp(n, &wrt);
      t.nodes = g.nodes().size();
      std::string text = print_graph(g);
      t.parse = timed([&] { g = parse_graph(text, std::string(kind) + ".stax"); });
      if (wrt.empty()) {
        backend_stages(g, c, t);
      } else {
        JointGraph joint;
        t.autodiff = timed([&] { joint = build_joint_graph(g, wrt); });
        partition::PartitionResult p;
        t.partition = timed([&] { p = partition::partition_min_cut(joint); });
        backend_stages(p.forward, c, t);
        backend_stages(p.backward, c, t);
      }
      report(kind, n, t);
    }
  }
  return 0;
}
