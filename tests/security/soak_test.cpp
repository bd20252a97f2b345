// The soak (issue 28, docs/hardening.md "Soak"): a long-lived process that compiles ever new
// graphs (a Python program recompiling as shapes change) on one Compiler, runs each and destroys
// it, must keep its resident memory and its JIT code memory bounded.
//
// Each cycle builds one of several graph families (pointwise chains, reductions, a softmax, a
// matmul with a bias, a broadcast, an index_select) at a shape no earlier cycle used, so every
// kernel is new: compiled, run, checked against the interpreter (every 25th cycle) and destroyed.
// Resident memory (/proc/self/statm) and the JIT's code chunks (the memfd mappings named
// "stax-jit-code" in /proc/self/maps) are sampled after every 10% of the cycles. After the first
// 30% (warm-up: caches fill, the arena reaches its working size) neither may grow by more than
// the bounds below, however many cycles run.
//
// STAX_SOAK_CYCLES sets the number of cycles: CI runs 1,000 (tests/security/CMakeLists.txt);
// `STAX_SOAK_CYCLES=10000 build/bin/soak_test` is the full soak of docs/hardening.md.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/driver/compiler.h"
#include "tests/support/compiled_check.h"

namespace stax {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
// Growth allowed after the warm-up, in MiB: resident memory (malloc's free lists and LLVM's
// allocators hold some memory they reuse, never return), and JIT code chunks.
constexpr double kRssGrowthMiB = 16;
constexpr double kJitGrowthMiB = 1;

double resident_mib() {
  std::ifstream in("/proc/self/statm");
  long pages = 0, resident = 0;
  in >> pages >> resident;
  return static_cast<double>(resident) * static_cast<double>(::sysconf(_SC_PAGESIZE)) / kMiB;
}

// The JIT's code chunks: each is mapped three times (RW, RX, R views); counted once.
double jit_code_mib() {
  std::ifstream in("/proc/self/maps");
  std::string line;
  double bytes = 0;
  while (std::getline(in, line)) {
    if (line.find("stax-jit-code") == std::string::npos) continue;
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &lo, &hi) == 2) bytes += static_cast<double>(hi - lo);
  }
  return bytes / 3 / kMiB;
}

// The i-th cycle's graph: family i % 6 at a size no other cycle of that family uses.
Graph varied_graph(int i) {
  Graph g;
  const int64_t n = 8 + i / 6;             // grows with i: every cycle's shape is new
  const int64_t m = 3 + (i * 7) % 29;
  switch (i % 6) {
    case 0: {
      Node* x = g.placeholder("x", {n, m});
      Node* y = g.call("mul.Scalar", {g.call("relu", {g.call("add.Tensor", {x, x})}), 2.0});
      g.output({g.call("sum.dim_IntList", {y, std::vector<int64_t>{-1}})});
      break;
    }
    case 1: {
      Node* x = g.placeholder("x", {m, n});
      g.output({g.call("softmax.int", {x, int64_t{1}})});
      break;
    }
    case 2: {
      Node* a = g.placeholder("a", {n, m});
      Node* b = g.placeholder("b", {m, 5});
      Node* c = g.placeholder("c", {5});
      g.output({g.call("tanh", {g.call("add.Tensor", {g.call("mm", {a, b}), c})})});
      break;
    }
    case 3: {
      Node* x = g.placeholder("x", {2, n, m});
      Node* s = g.placeholder("s", {m});
      Node* z = g.call("sub.Tensor", {g.call("exp", {x}), s});
      g.output({g.call("amax", {z, std::vector<int64_t>{1}, true}), g.call("sigmoid", {z})});
      break;
    }
    case 4: {
      Node* x = g.placeholder("x", {n, m});
      Node* idx = g.placeholder("idx", {4}, DType::Int64);
      Node* sel = g.call("index_select", {x, int64_t{0}, idx});
      g.output({g.call("mean.dim", {g.call("mul.Tensor", {sel, sel}), std::vector<int64_t>{0}})});
      break;
    }
    default: {
      Node* x = g.placeholder("x", {n * m});
      Node* v = g.call("view", {x, std::vector<int64_t>{n, m}});
      g.output({g.call("sum.dim_IntList", {g.call("abs", {v}), std::vector<int64_t>{0}})});
      break;
    }
  }
  return g;
}

std::vector<Tensor> inputs_for(const Graph& g, int seed) {
  std::vector<Tensor> in = test::random_inputs(g, static_cast<uint64_t>(seed));
  for (size_t k = 0; k < in.size(); ++k)
    if (in[k].dtype() == DType::Int64)  // index_select's indices: inside the rows
      for (int64_t j = 0; j < in[k].numel(); ++j) in[k].set_double(j, static_cast<double>(j));
  return in;
}

TEST(Soak, CompileRunDestroyCyclesStayBounded) {
  ::setenv("STAX_CACHE_DIR", "off", 1);
  int cycles = 1000;
  if (const char* v = std::getenv("STAX_SOAK_CYCLES")) cycles = std::atoi(v);
  ASSERT_GE(cycles, 20);
  Compiler compiler(test::cpu_config());
  struct Sample {
    int cycle;
    double rss, jit;
  };
  std::vector<Sample> samples;
  const int step = cycles / 10;
  for (int i = 0; i < cycles; ++i) {
    Graph g = varied_graph(i);
    std::vector<Tensor> in = inputs_for(g, i);
    {
      CompiledGraph cg = compiler.compile(g);
      std::vector<Tensor> got = cg.run(in);
      if (i % 25 == 0) {
        std::vector<Tensor> want = test::reference(g, in);
        ASSERT_EQ(got.size(), want.size());
        for (size_t k = 0; k < got.size(); ++k)
          ASSERT_TRUE(got[k].allclose(want[k], 1e-5, 1e-5)) << "cycle " << i << " output " << k;
      }
    }
    if ((i + 1) % step == 0) {
      samples.push_back({i + 1, resident_mib(), jit_code_mib()});
      std::printf("soak: cycle %d: resident %.1f MiB, JIT code %.2f MiB\n", i + 1,
                  samples.back().rss, samples.back().jit);
      std::fflush(stdout);
    }
  }
  ASSERT_EQ(samples.size(), 10u);
  const Sample& warm = samples[2];  // after 30% of the cycles
  double rss_max = 0, jit_max = 0;
  for (size_t k = 3; k < samples.size(); ++k) {
    rss_max = std::max(rss_max, samples[k].rss);
    jit_max = std::max(jit_max, samples[k].jit);
  }
  std::printf("soak: %d cycles; after the warm-up (cycle %d: %.1f MiB resident, %.2f MiB JIT "
              "code) at most %.1f MiB and %.2f MiB\n",
              cycles, warm.cycle, warm.rss, warm.jit, rss_max, jit_max);
  EXPECT_LE(rss_max - warm.rss, kRssGrowthMiB) << "resident memory grows with every compile";
  EXPECT_LE(jit_max - warm.jit, kJitGrowthMiB) << "JIT code memory grows with every compile";
}

}  // namespace
}  // namespace stax
