// bench_e2e: compiled graphs (cpu_cpp plugin) next to the reference interpreter and next to the
// memory-bandwidth roofline, in one run.
//
//   bench_e2e [reps=5] [scale=1]
//
// Cases (sizes multiplied by `scale` along the rows):
//   example_1_1   sum(relu(x + y) * 2, -1), x, y: 4096 x 4096 float32 (one fused reduction)
//   column_sum    x.sum(0), x: 4096 x 4096 (a reduction over the outer dimension)
//   pointwise     h = relu(x * 0.5 + y); h * h - x over 4096 x 4096 float32 (one fused loop)
//   softmax       softmax(x, -1) over 4096 x 2048 (decomposed: amax, exp, sum, div)
//   layer_norm    examples/layer_norm.stax with x: 4096 x 1024
//   mlp_layer     gelu(x @ W + b), x 1024 x 1024, W 1024 x 1024 (extern mm + fused epilogue;
//                 compute-bound: the roofline column does not apply)
// softmax and gelu are bound by the scalar libm calls (expf, erff) that keep the kernels
// bit-identical to the interpreter; the roofline column shows how far that is from memory speed.
// Each case runs with the default backend options (the segmented reduction order, vectorised,
// within the §6.5 bound of the interpreter's sequential order) and with strict_order: true
// (sequential reductions, bit-identical to the interpreter).
//
// Columns: compile = the plugin compile calls (ms, all kernels); compiled / interp = run time
// (median of `reps`, ms; the interpreter uses min(reps, 3)); speedup = interp / compiled;
// roofline = the minimum traffic (every input read once, every output written once) at the
// bandwidth measured at start-up (best of 5 single-threaded read-reduce passes over 256 MiB),
// and %roof = roofline / compiled. The loop drops each run's outputs before the next run, so
// CompiledGraph's storage pool serves every buffer (no allocation or page faults in steady
// state); the interpreter allocates (and zero-fills) every intermediate, as it always does.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/driver/compiler.h"
#include "core/interpreter/interpreter.h"
#include "core/ops/install.h"

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

// Single-threaded read bandwidth in bytes/s: best of 5 sums over 256 MiB of 32-bit integers
// (integer sums vectorise without reassociation concerns).
double measure_bandwidth() {
  const size_t n = (256u << 20) / sizeof(uint32_t);
  std::vector<uint32_t> a(n, 1u);
  double best = 0;
  volatile uint32_t sink = 0;
  for (int rep = 0; rep < 5; ++rep) {
    auto t = Clock::now();
    uint32_t acc = 0;
    for (size_t i = 0; i < n; ++i) acc += a[i];
    double s = ms_since(t) / 1e3;
    sink = sink + acc;
    best = std::max(best, static_cast<double>(n * sizeof(uint32_t)) / s);
  }
  return best;
}

struct Case {
  std::string name;
  Graph graph;
};

int64_t traffic_bytes(const Graph& g) {
  int64_t bytes = 0;
  for (const Node* p : g.placeholders()) bytes += p->meta().nbytes();
  for (const Node* o : g.outputs()) bytes += o->meta().nbytes();
  return bytes;
}

std::vector<Case> make_cases(int64_t scale) {
  std::vector<Case> cases;
  const int64_t r = 4096 * scale;
  {
    Graph g;
    Node* x = g.placeholder("x", {r, 4096});
    Node* y = g.placeholder("y", {r, 4096});
    Node* m = g.call("mul.Scalar", {g.call("relu", {g.call("add.Tensor", {x, y})}), 2});
    g.output({g.call("sum.dim_IntList", {m, std::vector<int64_t>{-1}})});
    cases.push_back({"example_1_1", std::move(g)});
  }
  {
    Graph g;
    g.output({g.call("sum.dim_IntList", {g.placeholder("x", {r, 4096}), std::vector<int64_t>{0}})});
    cases.push_back({"column_sum", std::move(g)});
  }
  {
    Graph g;
    Node* x = g.placeholder("x", {r, 4096});
    Node* y = g.placeholder("y", {r, 4096});
    Node* h = g.call("relu", {g.call("add.Tensor", {g.call("mul.Scalar", {x, 0.5}), y})});
    g.output({g.call("sub.Tensor", {g.call("mul.Tensor", {h, h}), x})});
    cases.push_back({"pointwise", std::move(g)});
  }
  {
    Graph g;
    g.output({g.call("softmax.int", {g.placeholder("x", {r, 2048}), -1})});
    cases.push_back({"softmax", std::move(g)});
  }
  {
    // examples/layer_norm.stax (16 x 64) at 4096 x 1024, built with the Graph builder.
    Graph g;
    Node* x = g.placeholder("x", {r, 1024});
    Node* w = g.placeholder("weight", {1024});
    Node* b = g.placeholder("bias", {1024});
    Node* mean = g.call("mean.dim", {x, std::vector<int64_t>{-1}, true});
    Node* d = g.call("sub.Tensor", {x, mean});
    Node* var = g.call("mean.dim", {g.call("mul.Tensor", {d, d}), std::vector<int64_t>{-1}, true});
    Node* rs = g.call("rsqrt", {g.call("add.Scalar", {var, 1e-5})});
    Node* y = g.call("mul.Tensor", {g.call("mul.Tensor", {d, rs}), w});
    g.output({g.call("add.Tensor", {y, b})});
    cases.push_back({"layer_norm", std::move(g)});
  }
  {
    Graph g;
    Node* x = g.placeholder("x", {1024 * scale, 1024});
    Node* w = g.placeholder("weight", {1024, 1024});
    Node* b = g.placeholder("bias", {1024});
    g.output({g.call("gelu", {g.call("add.Tensor", {g.call("matmul", {x, w}), b})})});
    cases.push_back({"mlp_layer", std::move(g)});
  }
  return cases;
}

Config config(bool strict) {
  Config c;
  c.source = "<bench>";
  c.plugin_path = {default_plugin_dir()};
  DeviceConfig cpu;
  cpu.backend = "cpu_cpp";
  cpu.options = OptionValue::map();
  if (strict) cpu.options.set("strict_order", OptionValue::make_scalar("true"));
  c.devices["cpu"] = std::move(cpu);
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  stax::install_ops();  // the engines' op tables (core/ops/install.h)
  int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  int64_t scale = argc > 2 ? std::max(1, std::atoi(argv[2])) : 1;
  double bw = measure_bandwidth();
  std::printf("bench_e2e: reps %d, scale %lld; measured read bandwidth %.1f GB/s (1 thread)\n",
              reps, static_cast<long long>(scale), bw / 1e9);
  std::printf("%-12s %-10s %7s %9s %10s %9s %9s %9s %6s  %s\n", "case", "mode", "kernels",
              "compile", "compiled", "interp", "speedup", "roofline", "%roof", "check");
  Compiler segmented(config(false)), strict(config(true));
  int status = 0;
  for (Case& c : make_cases(scale)) {
    std::vector<Tensor> in;
    uint64_t offset = 0;
    for (const Node* p : c.graph.placeholders()) {
      in.push_back(Tensor::randn(p->meta().sizes, p->meta().dtype, 1, offset));
      offset += static_cast<uint64_t>(p->meta().numel());
    }
    std::vector<double> ti;
    std::vector<Tensor> want;
    for (int k = 0; k < std::min(reps, 3); ++k) {
      auto t = Clock::now();
      want = interpret(c.graph, in);
      ti.push_back(ms_since(t));
    }
    double interp = median(ti);
    double roof = static_cast<double>(traffic_bytes(c.graph)) / bw * 1e3;
    for (bool is_strict : {false, true}) {
      CompiledGraph cg = (is_strict ? strict : segmented).compile(c.graph);
      std::vector<Tensor> got = cg.run(in);  // warm-up (page faults, caches)
      std::vector<double> tc;
      for (int k = 0; k < reps; ++k) {
        got.clear();  // the caller drops the last results: their storage is reused
        auto t = Clock::now();
        got = cg.run(in);
        tc.push_back(ms_since(t));
      }
      double compiled = median(tc);
      // check: bit-identical to the interpreter, or the largest difference relative to the
      // output's largest magnitude (segmented sums differ by rounding, within the §6.5 bound).
      bool exact = true;
      double rel = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        exact = exact && got[i].equal(want[i]);
        double diff = 0, mag = 0;
        for (int64_t e = 0; e < got[i].numel(); ++e) {
          diff = std::max(diff, std::fabs(got[i].get_double(e) - want[i].get_double(e)));
          mag = std::max(mag, std::fabs(want[i].get_double(e)));
        }
        rel = std::max(rel, mag > 0 ? diff / mag : diff);
      }
      if (rel > 1e-4) status = 1;
      char check[64];
      if (exact)
        std::snprintf(check, sizeof check, "bit-identical");
      else
        std::snprintf(check, sizeof check, "max|diff|/max|ref| %.1e", rel);
      std::printf("%-12s %-10s %7zu %7.1fms %8.2fms %7.1fms %8.1fx %7.2fms %5.0f%%  %s\n",
                  c.name.c_str(), is_strict ? "strict" : "segmented", cg.num_kernels(),
                  cg.stats().compile_ms, compiled, interp, interp / compiled, roof,
                  100.0 * roof / compiled, check);
    }
  }
  return status;
}
