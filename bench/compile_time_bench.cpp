// bench_compile_time: the compile time of a training step, forward + backward, cold and cached
// (issue 27 item 6). The graph is a forward graph (.stax or an FX printout with shape=
// annotations, e.g. bench/compile_time.py's make_fx trace of the GPT block); its joint graph is
// partitioned (min cut) into a forward and a backward graph, and both are compiled by the cpu_cpp
// backend, each measurement in a fresh process:
//   cold    an empty kernel cache directory: every kernel compiled (the figure against XLA's
//           and Inductor's cold compile);
//   cached  every kernel on disk (the process before stored them): a hit links stored objects;
//   again   the same graphs compiled a second time in the cached process by a second Compiler
//           (its own in-process cache level, so the kernels come from disk again, in a warm
//           process).
// Per measurement: wall time, the process's CPU time over that span (all threads: parallel
// compiles spread it over the cores) and the compile threads used. On a machine shared with
// other work the wall time moves with the load and the CPU time much less: both are printed,
// with /proc/loadavg.
//
//   bench_compile_time GRAPH [--wrt a,b,...] [--processes N] [--threads T,...] [--config FILE]
//                      [--run N] [--job 1]
//
// --wrt defaults to every placeholder; --threads lists compile-thread counts to compare (each a
// separate cold process; default: the machine's default only), passed as STAX_COMPILE_THREADS;
// --processes: cached processes per thread count (median; default 3); --run N: the cold process
// also runs the compiled forward and backward graphs N times (median wall and CPU ms of one
// forward + backward, pseudo-random inputs): what a compile option costs or buys at run time.
// --job 1: the two graphs compiled as one job (Compiler::compile_pair: both graphs' kernels in one
// batch, as CompiledFunctionOptions::compile_backward_with_forward does), so only the fw+bw rows.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/autodiff/joint_graph.h"
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

// CPU time of the whole process (every thread), in ms.
double process_cpu_ms() {
  timespec ts;
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

struct Args {
  std::string graph, config;
  std::vector<std::string> wrt;
  std::vector<std::string> threads;  // STAX_COMPILE_THREADS values; "" = unset
  int processes = 3;
  int runs = 0;
  bool job = false;  // --job 1: Compiler::compile_pair
};

// Deterministic pseudo-random inputs for a graph's placeholders (floats in [-0.5, 0.5)).
std::vector<Tensor> inputs_for(const Graph& g) {
  std::vector<Tensor> out;
  uint64_t state = 0x9e3779b97f4a7c15ull;
  for (const Node* p : g.placeholders()) {
    const TensorMeta& m = p->meta();
    if (m.dtype != DType::Float32) {
      out.push_back(Tensor::zeros(m.sizes, m.dtype));
      continue;
    }
    std::vector<float> v(static_cast<size_t>(shape_numel(m.sizes)));
    for (float& x : v) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      x = static_cast<float>(state >> 40) / static_cast<float>(1 << 24) - 0.5f;
    }
    out.push_back(Tensor::from_vector(m.sizes, v));
  }
  return out;
}

double thread_cpu_ms() {
  timespec ts;
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// One line per graph compiled: name, wall ms, cpu ms, kernels compiled, kernels from disk.
struct Line {
  std::string name;
  double wall = 0, cpu = 0;
  int compiled = 0, from_disk = 0;
};

// The child: build the training step's graphs, compile them with the cache in `dir`, print.
int child(const Args& a, const std::string& dir) {
  ::setenv("STAX_CACHE_DIR", dir.c_str(), 1);
  Graph g = parse_graph_file(a.graph);
  std::vector<std::string> wrt = a.wrt;
  if (wrt.empty())
    for (const Node* p : g.placeholders()) wrt.push_back(p->name());
  partition::PartitionResult part = partition::partition_min_cut(build_joint_graph(g, wrt));
  Config config = a.config.empty() ? Config::default_cpu() : Config::load(a.config);
  auto run = [&](const char* label, int runs) {
    const auto t_setup = Clock::now();
    const double cpu_setup = process_cpu_ms();
    Compiler compiler(config);
    compiler.registry().backend("cpu").cache_identity();  // plugin + JIT set-up
    std::printf("%s setup\t%.3f\t%.3f\t0\t0\n", label, ms_since(t_setup),
                process_cpu_ms() - cpu_setup);
    Line total{std::string(label) + " fw+bw"};
    std::vector<CompiledGraph> compiled;
    if (a.job) {
      const auto t = Clock::now();
      const double cpu0 = process_cpu_ms();
      auto [fw, bw] = compiler.compile_pair(
          part.forward, [&](const LoweredGraph&) { return part.backward.clone(); });
      total.wall = ms_since(t);
      total.cpu = process_cpu_ms() - cpu0;
      for (const CompiledGraph* cg : {&fw, &bw}) {
        total.compiled += cg->stats().kernels_compiled;
        total.from_disk += cg->stats().kernels_from_disk;
      }
      compiled.push_back(std::move(fw));
      compiled.push_back(std::move(bw));
    }
    for (const auto& [name, graph] : {std::pair<const char*, const Graph*>{"fw", &part.forward},
                                      {"bw", &part.backward}}) {
      if (a.job) break;
      const auto t = Clock::now();
      const double cpu0 = process_cpu_ms();
      CompiledGraph cg = compiler.compile(*graph);
      compiled.push_back(cg);
      Line l{std::string(label) + " " + name, ms_since(t), process_cpu_ms() - cpu0,
             cg.stats().kernels_compiled, cg.stats().kernels_from_disk};
      std::printf("%s\t%.3f\t%.3f\t%d\t%d\n", l.name.c_str(), l.wall, l.cpu, l.compiled,
                  l.from_disk);
      total.wall += l.wall;
      total.cpu += l.cpu;
      total.compiled += l.compiled;
      total.from_disk += l.from_disk;
    }
    std::printf("%s\t%.3f\t%.3f\t%d\t%d\n", total.name.c_str(), total.wall, total.cpu,
                total.compiled, total.from_disk);
    if (runs <= 0) return;
    const std::vector<Tensor> fw_in = inputs_for(part.forward), bw_in = inputs_for(part.backward);
    std::vector<double> wall, cpu;
    for (int i = 0; i < runs + 1; ++i) {  // the first run warms up (arena, pages)
      const auto t = Clock::now();
      const double c = thread_cpu_ms();
      compiled[0].run(fw_in);
      compiled[1].run(bw_in);
      if (i > 0) {
        wall.push_back(ms_since(t));
        cpu.push_back(thread_cpu_ms() - c);
      }
    }
    std::sort(wall.begin(), wall.end());
    std::sort(cpu.begin(), cpu.end());
    std::printf("%s run fw+bw\t%.3f\t%.3f\t0\t0\n", label, wall[wall.size() / 2],
                cpu[cpu.size() / 2]);
  };
  run("first", a.runs);
  run("again", 0);
  std::fflush(stdout);
  return 0;
}

std::vector<Line> run_child(const std::string& self, const Args& a, const std::string& dir,
                            const std::string& threads) {
  std::string cmd;
  if (!threads.empty()) cmd += "STAX_COMPILE_THREADS=" + threads + " ";
  cmd += "'" + self + "' --child '" + dir + "' '" + a.graph + "'";
  if (!a.wrt.empty()) {
    cmd += " --wrt ";
    for (size_t i = 0; i < a.wrt.size(); ++i) cmd += (i ? "," : "") + a.wrt[i];
  }
  if (!a.config.empty()) cmd += " --config '" + a.config + "'";
  if (a.runs > 0) cmd += " --run " + std::to_string(a.runs);
  if (a.job) cmd += " --job 1";
  FILE* p = ::popen(cmd.c_str(), "r");
  std::vector<Line> out;
  char buf[512];
  while (p && std::fgets(buf, sizeof buf, p)) {
    std::string s(buf);
    size_t tab = s.find('\t');
    if (tab == std::string::npos) continue;
    Line l;
    l.name = s.substr(0, tab);
    std::istringstream in(s.substr(tab + 1));
    in >> l.wall >> l.cpu >> l.compiled >> l.from_disk;
    out.push_back(l);
  }
  if (p && ::pclose(p) != 0) std::fprintf(stderr, "bench_compile_time: a child failed\n");
  return out;
}

const Line* find(const std::vector<Line>& lines, const std::string& name) {
  for (const Line& l : lines)
    if (l.name == name) return &l;
  return nullptr;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

Args parse_args(int argc, char** argv, int first) {
  Args a;
  a.graph = argv[first];
  for (int i = first + 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--wrt") a.wrt = split(v);
    else if (k == "--threads") a.threads = split(v);
    else if (k == "--processes") a.processes = std::max(1, std::atoi(v.c_str()));
    else if (k == "--config") a.config = v;
    else if (k == "--run") a.runs = std::max(0, std::atoi(v.c_str()));
    else if (k == "--job") a.job = v == "1";
    else {
      std::fprintf(stderr, "bench_compile_time: unknown option %s\n", k.c_str());
      std::exit(2);
    }
  }
  if (a.threads.empty()) a.threads.push_back("");
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  stax::install_ops();  // the engines' op tables (core/ops/install.h)
  if (argc > 3 && std::string(argv[1]) == "--child") return child(parse_args(argc, argv, 3), argv[2]);
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: bench_compile_time GRAPH [--wrt a,b] [--threads 1,2] [--processes N] "
                 "[--config FILE] [--run N] [--job 1]\n");
    return 2;
  }
  Args a = parse_args(argc, argv, 1);
  std::string loadavg;
  std::getline(std::ifstream("/proc/loadavg"), loadavg);
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  std::printf("bench_compile_time: %s\nloadavg at start: %s\n", a.graph.c_str(), loadavg.c_str());
  std::printf("%-9s %-14s %10s %10s %9s %6s\n", "threads", "measure", "wall ms", "cpu ms",
              "compiled", "disk");
  for (const std::string& threads : a.threads) {
    fs::path dir = fs::temp_directory_path() /
                   ("stax_bench_compile_" + std::to_string(::getpid()) + "_" + threads);
    fs::remove_all(dir);
    std::vector<Line> cold = run_child(self, a, dir.string(), threads);
    std::vector<std::vector<Line>> hits;
    for (int i = 0; i < a.processes; ++i) hits.push_back(run_child(self, a, dir.string(), threads));
    fs::remove_all(dir);
    const std::string t = threads.empty() ? "default" : threads;
    auto print = [&](const char* measure, const std::vector<const Line*>& ls) {
      std::vector<double> wall, cpu;
      int compiled = 0, disk = 0;
      for (const Line* l : ls) {
        if (!l) continue;
        wall.push_back(l->wall);
        cpu.push_back(l->cpu);
        compiled = l->compiled;
        disk = l->from_disk;
      }
      if (wall.empty()) return;
      std::printf("%-9s %-14s %10.2f %10.2f %9d %6d\n", t.c_str(), measure, median(wall),
                  median(cpu), compiled, disk);
    };
    print("cold setup", {find(cold, "first setup")});
    print("cold fw", {find(cold, "first fw")});
    print("cold bw", {find(cold, "first bw")});
    print("cold fw+bw", {find(cold, "first fw+bw")});
    print("run fw+bw", {find(cold, "first run fw+bw")});
    std::vector<const Line*> setup, fw, bw, step, again;
    for (const auto& h : hits) {
      setup.push_back(find(h, "first setup"));
      fw.push_back(find(h, "first fw"));
      bw.push_back(find(h, "first bw"));
      step.push_back(find(h, "first fw+bw"));
      again.push_back(find(h, "again fw+bw"));
    }
    print("cached setup", setup);
    print("cached fw", fw);
    print("cached bw", bw);
    print("cached fw+bw", step);
    print("again fw+bw", again);
  }
  std::getline(std::ifstream("/proc/loadavg"), loadavg);
  std::printf("loadavg at end: %s\n", loadavg.c_str());
  return 0;
}
