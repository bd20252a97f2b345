// bench_attention: fused (flash) attention vs the decomposed form (matmul, softmax, matmul) in one
// run, on cpu_cpp (docs/attention.md).
//
// Per T: causal sdpa with B=8, H=8, D=32 (float32), compiled twice (CompileOptions::fuse_attention
// on / off); forward = Compiler::compile's graph, fwd + bwd = CompiledFunction forward() +
// backward() (the joint graph, min-cut partition, both compiled). Interleaved rounds, medians,
// the ratio decomposed / fused (> 1: the fused form is faster), the bytes the partition saves.
// Usage: bench_attention [threads=1] [rounds=5] [reps=5] [T,T,...=256,1024] [--once]
//                        [--only fused|decomposed] [--dropout P]
// --dropout P: the decomposed causal attention with dropout of the probabilities instead of sdpa
// (matmul, scale, masked_fill, _softmax, native_dropout's rand_like < 1 - P, mul, mul, matmul):
// fused into flash_attention_dropout vs run as written.
// --once: one call of each; --only: one form (with --once, for `valgrind --tool=callgrind
// --toggle-collect='stax::CompiledGraph::run*'` instruction counts of the runs alone).
// Run on an idle machine for the record (/proc/loadavg is printed before and after).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/driver/compiled_function.h"
#include "core/driver/compiler.h"
#include "core/ops/install.h"
#include "core/tensor/tensor.h"

using namespace stax;

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

std::string loadavg() {
  std::ifstream f("/proc/loadavg");
  std::string a;
  std::getline(f, a);
  return a;
}

Config cpu_config(int threads) {
  Config c;
  c.plugin_path = {default_plugin_dir()};
  DeviceConfig cpu;
  cpu.backend = "cpu_cpp";
  cpu.options = OptionValue::map();
  cpu.options.set("threads", OptionValue::make_scalar(std::to_string(threads)));
  c.devices["cpu"] = std::move(cpu);
  return c;
}

std::unique_ptr<Graph> sdpa_graph(int64_t b, int64_t h, int64_t t, int64_t d) {
  auto g = std::make_unique<Graph>();
  Node* q = g->placeholder("q", {b, h, t, d});
  Node* k = g->placeholder("k", {b, h, t, d});
  Node* v = g->placeholder("v", {b, h, t, d});
  g->output({g->call("scaled_dot_product_attention", {q, k, v, Arg(), 0.0, true})});
  return g;
}

// softmax(q kᵀ / √d, causal) -> dropout(p) as native_dropout expands it -> @ v.
std::unique_ptr<Graph> dropout_graph(int64_t b, int64_t h, int64_t t, int64_t d, double p) {
  auto g = std::make_unique<Graph>();
  Node* q = g->placeholder("q", {b, h, t, d});
  Node* k = g->placeholder("k", {b, h, t, d});
  Node* v = g->placeholder("v", {b, h, t, d});
  Node* s = g->call("mul.Scalar", {g->call("matmul", {q, g->call("transpose.int", {k, int64_t{-2}, int64_t{-1}})}),
                                   1.0 / std::sqrt(static_cast<double>(d))});
  Node* j = g->call("unsqueeze", {g->call("arange.start_step", {int64_t{0}, t}), int64_t{-2}});
  Node* i = g->call("unsqueeze", {g->call("arange.start_step", {int64_t{0}, t}), int64_t{-1}});
  Node* after = g->call("gt.Scalar", {g->call("sub.Tensor", {j, i}), int64_t{0}});
  s = g->call("masked_fill.Scalar", {s, after, -std::numeric_limits<double>::infinity()});
  Node* pr = g->call("_softmax", {s, int64_t{-1}, false});
  Node* keep = g->call("lt.Scalar", {g->call("rand_like", {pr}), 1.0 - p});
  Node* dropped = g->call("mul.Scalar", {g->call("mul.Tensor", {pr, keep}), 1.0 / (1.0 - p)});
  g->output({g->call("matmul", {dropped, v})});
  return g;
}

template <class F>
double ms(F&& f) {
  auto t0 = Clock::now();
  f();
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  install_ops();
  bool once = false;
  std::string only;
  double dropout = 0;
  std::vector<std::string> pos;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--once") == 0)
      once = true;
    else if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc)
      only = argv[++i];
    else if (std::strcmp(argv[i], "--dropout") == 0 && i + 1 < argc)
      dropout = std::atof(argv[++i]);
    else
      pos.push_back(argv[i]);
  }
  const bool run_fused = only != "decomposed", run_plain = only != "fused";
  const int threads = pos.size() > 0 ? std::atoi(pos[0].c_str()) : 1;
  const int rounds = once ? 1 : pos.size() > 1 ? std::atoi(pos[1].c_str()) : 5;
  const int reps = once ? 1 : pos.size() > 2 ? std::atoi(pos[2].c_str()) : 5;
  std::vector<int64_t> ts;
  {
    std::stringstream ss(pos.size() > 3 ? pos[3] : "256,1024");
    for (std::string x; std::getline(ss, x, ',');) ts.push_back(std::atoll(x.c_str()));
  }
  if (dropout > 0)
    std::printf("bench_attention: causal attention with dropout %.2f (native_dropout's form), ", dropout);
  else
    std::printf("bench_attention: causal sdpa, ");
  std::printf("B=8 H=8 D=32 float32, cpu_cpp threads=%d, %d rounds x %d reps\n", threads, rounds, reps);
  std::printf("loadavg before: %s\n", loadavg().c_str());
  CompileOptions off;
  off.fuse_attention = false;
  Compiler fused(cpu_config(threads)), plain(cpu_config(threads), off);
  std::printf("%6s | %-8s | %10s %10s %7s | %12s %12s\n", "T", "pass", "fused ms", "decomp ms", "ratio",
              "saved fused", "saved decomp");
  for (int64_t t : ts) {
    auto g = dropout > 0 ? dropout_graph(8, 8, t, 32, dropout) : sdpa_graph(8, 8, t, 32);
    std::vector<Tensor> in{Tensor::randn({8, 8, t, 32}, DType::Float32, 1),
                           Tensor::randn({8, 8, t, 32}, DType::Float32, 2),
                           Tensor::randn({8, 8, t, 32}, DType::Float32, 3)};
    Tensor up = Tensor::randn({8, 8, t, 32}, DType::Float32, 4);
    // The form --only leaves out compiles the fused graph (cheap), so callgrind skips its JIT.
    Compiler& other = run_plain ? plain : fused;
    CompiledGraph cf = (run_fused ? fused : other).compile(*g), cp = other.compile(*g);
    CompiledFunction ff(*g, {"q", "k", "v"}, run_fused ? fused : other),
        fp(*g, {"q", "k", "v"}, other);
    auto train = [&](CompiledFunction& f) {
      ForwardResult r = f.forward(in);
      f.backward(*r.ctx, {up});
    };
    if (!once) cf.run(in), cp.run(in), train(ff), train(fp);  // warm-up
    std::vector<double> f1, p1, f2, p2;
    for (int r = 0; r < rounds; ++r)
      for (int i = 0; i < reps; ++i) {
        if ((r + i) % 2) {
          if (run_fused) f1.push_back(ms([&] { cf.run(in); }));
          if (run_plain) p1.push_back(ms([&] { cp.run(in); }));
        } else {
          if (run_plain) p1.push_back(ms([&] { cp.run(in); }));
          if (run_fused) f1.push_back(ms([&] { cf.run(in); }));
        }
        if (run_fused) f2.push_back(ms([&] { train(ff); }));
        if (run_plain) p2.push_back(ms([&] { train(fp); }));
      }
    auto ratio = [](double p, double f) { return f > 0 ? p / f : 0.0; };
    std::printf("%6lld | %-8s | %10.3f %10.3f %7.2f |\n", static_cast<long long>(t), "forward",
                median(f1), median(p1), ratio(median(p1), median(f1)));
    std::printf("%6lld | %-8s | %10.3f %10.3f %7.2f | %12lld %12lld\n", static_cast<long long>(t),
                "fwd+bwd", median(f2), median(p2), ratio(median(p2), median(f2)),
                static_cast<long long>(ff.stats().saved_bytes),
                static_cast<long long>(fp.stats().saved_bytes));
  }
  std::printf("loadavg after: %s\n", loadavg().c_str());
  return 0;
}
