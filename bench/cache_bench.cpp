// bench_cache: what the persistent kernel cache (issue 11) buys, cold vs hit, per graph, each
// measurement in a fresh process (so plugin loading and JIT set-up count, as for a user).
//
// Graphs: Example 1.1, softmax.stax, and the MLP training step of examples/train_mlp at batch
// 4096 (forward and backward graphs after the min-cut partition; "mlp step" is both).
// Per graph: the Compiler::compile wall time with an empty cache directory ("cold": every kernel
// compiled and stored) and with every kernel on disk ("hit", median over the hit processes),
// the ratio cold / hit, and where a hit's time goes: decompose + lower + schedule + codegen
// ("pipeline") vs getting the kernels ("kernels": reading and linking the stored object code).
// Last, Example 1.1 again in the same process by a second Compiler (kernel from disk again): what
// a hit costs once the process's code has run, vs the first graph of a process.
// Paid once per process and shown apart: loading and configuring the plugin, and the JIT's
// set-up (cpu_cpp: target machine and LLJIT, no Clang driver on a hit).
// Usage: bench_cache [hit_processes=5]. /proc/loadavg is printed: the numbers are indicative on
// a loaded machine.
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/autodiff/joint_graph.h"
#include "core/cache/disk_cache.h"
#include "core/config/config.h"
#include "core/driver/compiler.h"
#include "core/graph/parser.h"
#include "core/ops/install.h"
#include "core/partition/partitioner.h"

using namespace stax;
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// CPU time of the calling thread (user + system, page faults included), in ms: unlike the wall
// time it does not grow when other processes take the cores, so it shows what a hit costs on a
// loaded machine (the compile is single-threaded on a hit).
double thread_cpu_ms() {
  timespec ts;
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

// Page faults of the calling thread so far (minor + major): the first graph of a process touches
// code and data pages for the first time; each fault costs ~0.5-2 us, independent of the load.
long thread_faults() {
  rusage u;
  ::getrusage(RUSAGE_THREAD, &u);
  return u.ru_minflt + u.ru_majflt;
}

struct Case {
  std::string name;
  Graph graph;
};

std::vector<Case> cases(double* partition_ms) {
  std::vector<Case> out;
  for (const char* f : {"example_1_1.stax", "softmax.stax"})
    out.push_back({f, parse_graph_file(std::string(STAX_SOURCE_DIR) + "/examples/" + f)});
  const int64_t batch = 4096, in = 256, hidden = 512, outn = 64;
  Graph g;
  Node* x = g.placeholder("x", {batch, in});
  Node* w1 = g.placeholder("W1", {in, hidden});
  Node* b1 = g.placeholder("b1", {hidden});
  Node* w2 = g.placeholder("W2", {hidden, outn});
  Node* b2 = g.placeholder("b2", {outn});
  Node* y = g.placeholder("y", {batch, outn});
  Node* h = g.call("add.Tensor", {g.call("matmul", {x, w1}), b1});
  Node* a = g.call("gelu", {h});
  Node* pred = g.call("add.Tensor", {g.call("matmul", {a, w2}), b2});
  Node* diff = g.call("sub.Tensor", {pred, y});
  g.output({g.call("mean", {g.call("mul.Tensor", {diff, diff})})});
  auto t = Clock::now();
  partition::PartitionResult p =
      partition::partition_min_cut(build_joint_graph(g, {"W1", "b1", "W2", "b2"}));
  *partition_ms = ms_since(t);
  out.push_back({"mlp fw", std::move(p.forward)});
  out.push_back({"mlp bw", std::move(p.backward)});
  return out;
}

// One process: compile every graph once with the cache in `dir`; one line per graph:
// name \t total \t pipeline \t kernels \t from_disk \t compiled \t cpu
int child(const std::string& dir) {
  ::setenv("STAX_CACHE_DIR", dir.c_str(), 1);
  auto t0 = Clock::now();
  double partition_ms = 0;
  std::vector<Case> cs = cases(&partition_ms);
  double graphs_ms = ms_since(t0);
  Config c;
  c.plugin_path = {default_plugin_dir()};
  DeviceConfig cpu;
  cpu.backend = "cpu_cpp";
  cpu.options = OptionValue::map();
  c.devices["cpu"] = std::move(cpu);
  Config again_config = c;
  auto t1 = Clock::now();
  Compiler compiler(std::move(c));
  // The backend (plugin load + configure) and the JIT's set-up, paid once per process.
  const Plugin& backend = compiler.registry().backend("cpu");
  compiler.kernel_cache().disk();
  double setup_ms = ms_since(t1);
  auto t2 = Clock::now();
  backend.cache_identity();  // cpu_cpp creates its JIT (target machine, LLJIT) here
  double jit_ms = ms_since(t2);
  std::printf("setup\t%.3f\t%.3f\t%.3f\t%.3f\n", setup_ms, graphs_ms, partition_ms, jit_ms);
  for (Case& k : cs) {
    auto t = Clock::now();
    double cpu0 = thread_cpu_ms();
    long faults0 = thread_faults();
    CompiledGraph cg = compiler.compile(k.graph);
    double total = ms_since(t);
    double cpu = thread_cpu_ms() - cpu0;
    long faults = thread_faults() - faults0;
    const CompileStats& s = cg.stats();
    double pipeline = s.decompose_ms + s.lower_ms + s.schedule_ms + s.codegen_ms;
    std::printf("%s\t%.3f\t%.3f\t%.3f\t%d\t%d\t%.3f\t%ld\n", k.name.c_str(), total, pipeline,
                s.compile_ms, s.kernels_from_disk, s.kernels_compiled, cpu, faults);
  }
  // Example 1.1 once more, by a second Compiler (its own kernel cache, so the kernel comes from
  // disk again) set up beforehand: the same hit in a process whose code is already paged in
  // and whose JIT code has run (the first graph of a process pays for both).
  Compiler again(std::move(again_config));
  again.registry().backend("cpu").cache_identity();
  again.kernel_cache().disk();
  auto t = Clock::now();
  double cpu0 = thread_cpu_ms();
  long faults0 = thread_faults();
  CompiledGraph cg = again.compile(cs[0].graph);
  double total = ms_since(t);
  double cpu_ms = thread_cpu_ms() - cpu0;
  long faults = thread_faults() - faults0;
  const CompileStats& s = cg.stats();
  std::printf("%s\t%.3f\t%.3f\t%.3f\t%d\t%d\t%.3f\t%ld\n", "example_1_1 again", total,
              s.decompose_ms + s.lower_ms + s.schedule_ms + s.codegen_ms, s.compile_ms,
              s.kernels_from_disk, s.kernels_compiled, cpu_ms, faults);
  return 0;
}

struct Row {
  double total = 0, pipeline = 0, kernels = 0, cpu = 0, faults = 0;
  int disk = 0, compiled = 0;
};

std::map<std::string, Row> run_child(const std::string& self, const std::string& dir,
                                     std::vector<double>* setup) {
  std::string cmd = "'" + self + "' --child '" + dir + "'";
  FILE* p = ::popen(cmd.c_str(), "r");
  std::map<std::string, Row> rows;
  char line[512];
  while (p && std::fgets(line, sizeof line, p)) {
    std::istringstream in(line);
    std::string name;
    std::getline(in, name, '\t');
    if (name == "setup") {
      double a, b, c, d;
      in >> a >> b >> c >> d;
      *setup = {a, b, c, d};
      continue;
    }
    Row r;
    in >> r.total >> r.pipeline >> r.kernels >> r.disk >> r.compiled >> r.cpu >> r.faults;
    rows[name] = r;
  }
  if (p) ::pclose(p);
  return rows;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  stax::install_ops();  // the engines' op tables (core/ops/install.h)
  if (argc > 2 && std::string(argv[1]) == "--child") return child(argv[2]);
  int hits = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  std::ifstream load("/proc/loadavg");
  std::string loadavg;
  std::getline(load, loadavg);
  std::string self = fs::read_symlink("/proc/self/exe").string();
  fs::path dir = fs::temp_directory_path() / ("stax_bench_cache_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  std::vector<double> cold_setup, hit_setup;
  std::map<std::string, Row> cold = run_child(self, dir.string(), &cold_setup);
  std::map<std::string, std::vector<Row>> hit_rows;
  std::vector<double> hit_setup_ms, hit_jit_ms;
  for (int i = 0; i < hits; ++i) {
    std::vector<double> s;
    for (auto& [name, r] : run_child(self, dir.string(), &s)) hit_rows[name].push_back(r);
    if (s.size() == 4) {
      hit_setup_ms.push_back(s[0]);
      hit_jit_ms.push_back(s[3]);
    }
  }
  CacheStats st = DiskCache::scan(dir);
  std::printf("bench_cache: loadavg %s (1 cold process, %d hit processes; hit = median)\n",
              loadavg.c_str(), hits);
  std::printf("cache: %llu entries, %llu bytes\n", static_cast<unsigned long long>(st.entries),
              static_cast<unsigned long long>(st.bytes));
  if (cold_setup.size() == 4)
    std::printf("once per process: loading + configuring the plugin %.2f ms (hit processes: "
                "median %.2f), the JIT's set-up %.2f ms (median %.2f); building the graphs "
                "%.2f ms (of which joint graph + partition %.2f ms)\n",
                cold_setup[0], median(hit_setup_ms), cold_setup[3], median(hit_jit_ms),
                cold_setup[1], cold_setup[2]);
  std::printf("%-18s %10s %10s %8s %12s %12s %10s %10s %7s %8s\n", "graph", "cold ms", "hit ms",
              "ratio", "hit pipeline", "hit kernels", "hit cpu ms", "min cpu ms", "faults",
              "kernels");
  double step_cold = 0, step_hit = 0;
  for (const char* name : {"example_1_1.stax", "softmax.stax", "mlp fw", "mlp bw"}) {
    const Row& c = cold[name];
    std::vector<double> total, pipeline, kernels, cpu, faults;
    int disk = 0;
    for (const Row& r : hit_rows[name]) {
      total.push_back(r.total);
      pipeline.push_back(r.pipeline);
      kernels.push_back(r.kernels);
      cpu.push_back(r.cpu);
      faults.push_back(r.faults);
      disk = r.disk;
    }
    double h = median(total);
    std::printf("%-18s %10.2f %10.3f %8.0f %12.3f %12.3f %10.3f %10.3f %7.0f %4d/%-3d\n", name,
                c.total, h, h > 0 ? c.total / h : 0, median(pipeline), median(kernels),
                median(cpu), cpu.empty() ? 0 : *std::min_element(cpu.begin(), cpu.end()),
                median(faults), disk, c.compiled);
    if (std::string(name).rfind("mlp", 0) == 0) {
      step_cold += c.total;
      step_hit += h;
    }
  }
  std::printf("%-18s %10.2f %10.3f %8.0f   (forward + backward)\n", "mlp step", step_cold,
              step_hit, step_hit > 0 ? step_cold / step_hit : 0);
  {
    std::vector<double> total, pipeline, kernels, cpu, faults;
    for (const Row& r : hit_rows["example_1_1 again"]) {
      total.push_back(r.total);
      pipeline.push_back(r.pipeline);
      kernels.push_back(r.kernels);
      cpu.push_back(r.cpu);
      faults.push_back(r.faults);
    }
    std::printf("example_1_1.stax again, in a warm process (a second Compiler, kernel from disk): "
                "%.3f ms (pipeline %.3f, kernels %.3f; cpu %.3f, min %.3f; %.0f page faults)\n",
                median(total), median(pipeline), median(kernels), median(cpu),
                cpu.empty() ? 0 : *std::min_element(cpu.begin(), cpu.end()), median(faults));
  }
  fs::remove_all(dir);
  return 0;
}
