// bench_model_worker: the Stax and hand-C++ side of the model bench (bench/models/, issue 27
// item 7). bench/models/bench_models.py starts one per thread count, under `taskset`, and drives
// it, interleaved with the torch and JAX workers, over stdin / stdout, one line per command and
// one line per answer:
//
//   probe                   -> ok GBPS          read bandwidth on THREADS threads (best of 5)
//   blas                    -> ok CORE          OpenBLAS's kernel set for this CPU (SkylakeX...)
//   setup ID SYSTEM DIR     -> ok COMPILE_MS FIRST_MS
//   time ID SYSTEM REPS     -> ok MS MS ...     one wall time per rep
//   drop ID                 -> ok
//   quit
//
// Anything that fails answers `error MESSAGE` on one line (the whole message, which may hold a
// kernel's source, goes to DIR/error_SYSTEM.txt). SYSTEM is `stax` or `hand`.
//
// DIR/case.txt (written by bench/models/cases.py) describes one case, a line per item:
//   workload W1 | mode fwd|fwdbwd | graph FILE (the make_fx printout) | input NAME FILE (one per
//   argument, in order) | wrt I,J,... (argument indices differentiated) | cotangent FILE|none (one
//   per forward output) | hand NAME|none
//
// stax: `fwd` compiles the printout with Compiler::compile (inference); `fwdbwd` builds a
// CompiledFunction over the wrt placeholders (joint graph, min-cut partition, the forward and
// backward graphs compiled as one job: CompiledFunctionOptions::compile_backward_with_forward;
// STAX_BENCH_BACKWARD_APART=1: the forward, then CompiledFunction::compile_backward) and times
// forward + backward with the case's upstream gradients. COMPILE_MS: parse + every compile of the
// case (the plugin and its JIT are set up when the worker starts, before `ready`:
// Compiler::prepare); FIRST_MS: the first run. STAX_BENCH_PHASES=1 prints where COMPILE_MS went
// on stderr (with the compiling thread's and the process's CPU time). hand: bench/hand_kernels.h
// (W1, W3, W4, W5, W2), outputs allocated once at setup. Setup writes the outputs (forward
// outputs, then one gradient per wrt) to DIR/out_SYSTEM_K.npy for the driver's check against
// torch.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/hand_kernels.h"
#include "core/config/config.h"
#include "core/driver/compiled_function.h"
#include "core/driver/compiler.h"
#include "core/graph/parser.h"
#include "core/ops/install.h"
#include "core/tensor/npy.h"

namespace {

using namespace stax;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

double thread_cpu_ms() {
  timespec ts;
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

// Every thread's (the compile threads too).
double process_cpu_ms() {
  timespec ts;
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

struct CaseFile {
  std::string dir, workload, mode, graph, hand;
  std::vector<std::string> input_names, input_files;
  std::vector<int> wrt;
  std::vector<std::string> cotangents;  // "none" for an output without an upstream gradient
};

[[noreturn]] void fail(const std::string& why) { throw std::runtime_error(why); }

CaseFile read_case(const std::string& dir) {
  CaseFile c;
  c.dir = dir;
  std::ifstream in(dir + "/case.txt");
  if (!in) fail("cannot read " + dir + "/case.txt");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ss(line);
    std::string key;
    ss >> key;
    if (key == "workload") ss >> c.workload;
    else if (key == "mode") ss >> c.mode;
    else if (key == "graph") ss >> c.graph;
    else if (key == "hand") ss >> c.hand;
    else if (key == "input") {
      std::string name, file;
      ss >> name >> file;
      c.input_names.push_back(name);
      c.input_files.push_back(file);
    } else if (key == "wrt") {
      std::string list;
      ss >> list;
      std::stringstream items(list);
      for (std::string item; std::getline(items, item, ',');)
        if (!item.empty()) c.wrt.push_back(std::stoi(item));
    } else if (key == "cotangent") {
      std::string file;
      ss >> file;
      c.cotangents.push_back(file);
    }
  }
  if (c.mode != "fwd" && c.mode != "fwdbwd") fail(dir + "/case.txt: mode must be fwd or fwdbwd");
  return c;
}

std::string path_in(const CaseFile& c, const std::string& file) { return c.dir + "/" + file; }

Config stax_config(int threads) {
  Config c;
  c.source = "<bench_model_worker>";
  c.plugin_path = {STAX_PLUGIN_DIR};
  DeviceConfig cpu;
  cpu.backend = "cpu_cpp";
  cpu.options = OptionValue::map();
  cpu.options.set("threads", OptionValue::make_scalar(std::to_string(threads)));
  // STAX_BENCH_CPU_OPTIONS="key=value,key=value": more cpu_cpp options, to compare settings
  // (e.g. pool_spin_us=2000, openmp_runtime=libgomp.so.1: the hand kernels' team).
  if (const char* extra = std::getenv("STAX_BENCH_CPU_OPTIONS")) {
    std::istringstream items(extra);
    for (std::string item; std::getline(items, item, ',');) {
      const size_t eq = item.find('=');
      if (eq == std::string::npos || eq == 0)
        throw std::runtime_error("STAX_BENCH_CPU_OPTIONS: '" + item + "' is not key=value");
      cpu.options.set(item.substr(0, eq), OptionValue::make_scalar(item.substr(eq + 1)));
    }
  }
  c.devices["cpu"] = std::move(cpu);
  return c;
}

// One prepared case of one system: run() computes it once and returns its outputs.
struct Prepared {
  std::function<std::vector<Tensor>()> run;
  double compile_ms = 0, first_ms = 0;
  double parse_ms = 0;  // of compile_ms: the printout's parse
  double compile_cpu_ms = 0;  // the compiling thread's CPU time over compile_ms
  double compile_process_cpu_ms = 0;  // the process's (every compile thread's) over compile_ms
  // Keeps what run() refers to alive.
  std::shared_ptr<void> state;
};

struct StaxFwd {
  CompiledGraph graph;
  std::vector<Tensor> inputs;
};

struct StaxFwdBwd {
  std::unique_ptr<CompiledFunction> fn;
  std::vector<Tensor> inputs, cotangents;
};

Prepared prepare_stax(const CaseFile& c, Compiler& compiler) {
  std::vector<Tensor> inputs;
  ParseOptions po;
  for (size_t i = 0; i < c.input_files.size(); ++i) {
    inputs.push_back(load_npy(path_in(c, c.input_files[i])));
    po.placeholder_meta_if_missing[c.input_names[i]] = inputs.back().meta();
  }
  Prepared p;
  auto t = Clock::now();
  const double cpu0 = thread_cpu_ms(), process_cpu0 = process_cpu_ms();
  Graph g = parse_graph_file(path_in(c, c.graph), po);
  p.parse_ms = ms_since(t);
  std::vector<Node*> ph = g.placeholders();
  if (ph.size() != inputs.size())
    fail(c.graph + " has " + std::to_string(ph.size()) + " placeholders, the case " +
         std::to_string(inputs.size()) + " inputs");
  if (c.mode == "fwd") {
    auto s = std::make_shared<StaxFwd>(StaxFwd{compiler.compile(g), std::move(inputs)});
    p.compile_ms = ms_since(t);
    p.compile_cpu_ms = thread_cpu_ms() - cpu0;
    p.compile_process_cpu_ms = process_cpu_ms() - process_cpu0;
    p.run = [s] { return s->graph.run(s->inputs); };
    p.state = s;
    return p;
  }
  std::vector<std::string> wrt;
  for (int i : c.wrt) wrt.push_back(ph.at(static_cast<size_t>(i))->name());
  auto s = std::make_shared<StaxFwdBwd>();
  // Both graphs compiled here, as one job (their kernels in one batch on the compile threads),
  // not the backward in the first backward(): counted as compile time.
  static const bool apart = std::getenv("STAX_BENCH_BACKWARD_APART") != nullptr;
  CompiledFunctionOptions options;
  options.compile_backward_with_forward = !apart;
  s->fn = std::make_unique<CompiledFunction>(g, wrt, compiler, options);
  if (apart) s->fn->compile_backward();
  p.compile_ms = ms_since(t);
  p.compile_cpu_ms = thread_cpu_ms() - cpu0;
  p.compile_process_cpu_ms = process_cpu_ms() - process_cpu0;
  s->inputs = std::move(inputs);
  for (const std::string& f : c.cotangents)
    s->cotangents.push_back(f == "none" ? Tensor() : load_npy(path_in(c, f)));
  p.run = [s] {
    ForwardResult r = s->fn->forward(s->inputs);
    std::vector<Tensor> out = std::move(r.outputs);
    for (Tensor& grad : s->fn->backward(*r.ctx, s->cotangents)) out.push_back(std::move(grad));
    return out;
  };
  p.state = s;
  return p;
}

struct HandState {
  std::vector<Tensor> in, out, scratch;
};

Prepared prepare_hand(const CaseFile& c, int threads) {
  auto s = std::make_shared<HandState>();
  for (const std::string& f : c.input_files) s->in.push_back(load_npy(path_in(c, f)));
  auto f = [](Tensor& t) { return t.data<float>(); };
  auto& in = s->in;
  if (in.empty()) fail("the case has no inputs");
  const int64_t rows = in[0].meta().sizes.at(0);
  const int64_t cols = in[0].meta().sizes.size() > 1 ? in[0].meta().sizes[1] : 1;
  Prepared p;
  HandState* h = s.get();
  if (c.hand == "W1" || c.hand == "W4") {
    h->out = {Tensor::zeros({rows})};
    bool w1 = c.hand == "W1";
    p.run = [h, f, rows, cols, threads, w1] {
      if (w1)
        bench::hand_w1(f(h->in[0]), f(h->in[1]), f(h->out[0]), rows, cols, threads);
      else
        bench::hand_w4(f(h->in[0]), f(h->out[0]), rows, cols, threads);
      return h->out;
    };
  } else if (c.hand == "W3" || c.hand == "W5") {
    h->out = {Tensor::zeros({rows, cols})};
    bool w3 = c.hand == "W3";
    p.run = [h, f, rows, cols, threads, w3] {
      if (w3)
        bench::hand_softmax(f(h->in[0]), f(h->out[0]), rows, cols, threads);
      else
        bench::hand_layer_norm(f(h->in[0]), f(h->in[1]), f(h->in[2]), f(h->out[0]), rows, cols,
                               threads);
      return h->out;
    };
  } else if (c.hand == "W2") {  // gelu(x @ W).sum(): the loss, then dx, dW
    const int64_t k = cols, m = in.at(1).meta().sizes.at(1);
    h->out = {Tensor::zeros({}), Tensor::zeros({rows, k}), Tensor::zeros({k, m})};
    h->scratch = {Tensor::zeros({rows, m}), Tensor::zeros({rows, m})};
    p.run = [h, f, rows, k, m, threads] {
      f(h->out[0])[0] = bench::hand_w2_forward(f(h->in[0]), f(h->in[1]), f(h->scratch[0]), rows,
                                               k, m, threads);
      bench::hand_w2_backward(f(h->in[0]), f(h->in[1]), f(h->scratch[0]), f(h->scratch[1]),
                              f(h->out[1]), f(h->out[2]), rows, k, m, threads);
      return h->out;
    };
  } else {
    fail("no hand kernel named '" + c.hand + "'");
  }
  p.state = s;
  return p;
}

// Read bandwidth (bytes/s) on `threads` threads: best of 5 sums over 256 MiB of int32.
double read_bandwidth(int threads) {
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

std::string one_line(std::string s) {
  for (char& ch : s)
    if (ch == '\n' || ch == '\r') ch = ' ';
  if (s.size() > 1500) s = s.substr(0, 1500) + " ...";
  return s;
}

// STAX_BENCH_PHASES=1: where a case's COMPILE_MS went, on stderr (bench/cached_compile.py).
std::string graph_phases(const CompiledGraph& g) {
  const CompileStats& s = g.stats();
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "decompose %.2f lower %.2f schedule %.2f codegen %.2f kernels %.2f (disk %d, "
                "compiled %d) total %.2f",
                s.decompose_ms, s.lower_ms, s.schedule_ms, s.codegen_ms, s.compile_ms,
                s.kernels_from_disk, s.kernels_compiled, s.total_ms);
  return buf;
}

void print_phases(const CaseFile& c, const Prepared& p) {
  std::fprintf(stderr, "phases %s: compile %.2f ms (cpu %.2f, process cpu %.2f) = parse %.2f",
               c.workload.c_str(), p.compile_ms, p.compile_cpu_ms, p.compile_process_cpu_ms,
               p.parse_ms);
  if (c.mode == "fwd") {
    const auto* s = static_cast<const StaxFwd*>(p.state.get());
    std::fprintf(stderr, " + graph [%s]\n", graph_phases(s->graph).c_str());
    return;
  }
  const auto* s = static_cast<const StaxFwdBwd*>(p.state.get());
  const CompiledFunctionStats& st = s->fn->stats();
  std::fprintf(stderr, " + joint %.2f + partition %.2f + forward %.2f [%s] + backward %.2f [%s]\n",
               st.joint_ms, st.partition_ms, st.forward_compile_ms,
               graph_phases(*s->fn->compiled_forward()).c_str(), st.backward_compile_ms,
               graph_phases(*s->fn->compiled_backward()).c_str());
}

class Worker {
 public:
  // The plugin is loaded and its JIT set up here (Compiler::prepare), before `ready`: a case's
  // COMPILE_MS is its compiles, as the bench's compile table says, not the process's set-up.
  // STAX_BENCH_PHASES=1 prints its parts on stderr: "prepare: plugin P ms, jit J ms" (P: the
  // plugin library and the libraries it needs loaded, its backend configured; J: the rest of
  // Compiler::prepare, the JIT and the kernel cache's key).
  explicit Worker(int threads) : threads_(threads), compiler_(stax_config(threads)) {
    const auto t = Clock::now();
    compiler_.registry().backend("cpu");
    const double plugin_ms = ms_since(t);
    compiler_.prepare();
    if (std::getenv("STAX_BENCH_PHASES"))
      std::fprintf(stderr, "prepare: plugin %.3f ms, jit %.3f ms\n", plugin_ms,
                   ms_since(t) - plugin_ms);
  }

  // One command line -> its answer (without "ok " / "error ").
  std::string handle(const std::string& line) {
    std::istringstream ss(line);
    std::string cmd, id, system;
    ss >> cmd;
    char buf[64];
    if (cmd == "probe") {
      std::snprintf(buf, sizeof buf, "%.2f", read_bandwidth(threads_) / 1e9);
      return buf;
    }
    if (cmd == "blas") return bench::hand_blas_core();
    if (cmd == "drop") {
      ss >> id;
      for (auto it = cases_.begin(); it != cases_.end();)
        it = it->first.rfind(id + " ", 0) == 0 ? cases_.erase(it) : std::next(it);
      return "";
    }
    if (cmd == "setup") {
      std::string dir;
      ss >> id >> system >> dir;
      return setup(id, system, dir);
    }
    if (cmd == "time") {
      int reps = 1;
      ss >> id >> system >> reps;
      auto it = cases_.find(id + " " + system);
      if (it == cases_.end()) fail("no case " + id + " set up for " + system);
      std::string times;
      for (int r = 0; r < reps; ++r) {
        auto t = Clock::now();
        std::vector<Tensor> out = it->second.run();
        std::snprintf(buf, sizeof buf, "%s%.4f", r ? " " : "", ms_since(t));
        times += buf;
      }
      return times;
    }
    fail("unknown command '" + cmd + "'");
  }

 private:
  std::string setup(const std::string& id, const std::string& system, const std::string& dir) {
    CaseFile c = read_case(dir);
    try {
      if (system != "stax" && system != "hand") fail("unknown system '" + system + "'");
      Prepared p = system == "stax" ? prepare_stax(c, compiler_) : prepare_hand(c, threads_);
      auto t = Clock::now();
      std::vector<Tensor> out = p.run();
      p.first_ms = ms_since(t);
      if (system == "stax" && std::getenv("STAX_BENCH_PHASES")) print_phases(c, p);
      for (size_t k = 0; k < out.size(); ++k)
        save_npy(dir + "/out_" + system + "_" + std::to_string(k) + ".npy", out[k]);
      char buf[96];
      std::snprintf(buf, sizeof buf, "%.3f %.4f", p.compile_ms, p.first_ms);
      cases_[id + " " + system] = std::move(p);
      return buf;
    } catch (const std::exception& e) {
      std::ofstream(dir + "/error_" + system + ".txt") << e.what() << "\n";
      throw;
    }
  }

  int threads_;
  Compiler compiler_;
  std::map<std::string, Prepared> cases_;  // by "ID SYSTEM"
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_model_worker THREADS (commands on stdin)\n");
    return 2;
  }
  stax::install_ops();  // the engines' op tables (core/ops/install.h)
  int threads = std::max(1, std::atoi(argv[1]));
  std::unique_ptr<Worker> worker;
  // The Compiler and its prepare(): loading the plugin, configuring it, creating its JIT. A
  // user's first compile pays this when nothing prepared; STAX_BENCH_PHASES=1 prints it on stderr
  // ("prepare W ms (cpu C)"), and bench/cached_compile.py adds it to the compile (the compile
  // the user sees).
  const auto t_prepare = Clock::now();
  const double cpu_prepare = thread_cpu_ms();
  try {
    worker = std::make_unique<Worker>(threads);
  } catch (const std::exception& e) {
    std::printf("error %s\n", one_line(e.what()).c_str());
    return 1;
  }
  if (std::getenv("STAX_BENCH_PHASES"))
    std::fprintf(stderr, "prepare %.3f ms (cpu %.3f)\n", ms_since(t_prepare),
                 thread_cpu_ms() - cpu_prepare);
  std::printf("ready stax %d\n", threads);
  std::fflush(stdout);
  for (std::string line; std::getline(std::cin, line);) {
    if (line == "quit") break;
    if (line.empty()) continue;
    try {
      std::string answer = worker->handle(line);
      std::printf("ok%s%s\n", answer.empty() ? "" : " ", answer.c_str());
    } catch (const std::exception& e) {
      std::printf("error %s\n", one_line(e.what()).c_str());
    }
    std::fflush(stdout);
  }
  return 0;
}
