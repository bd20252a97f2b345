// A graph's kernels compiled in parallel (issue 27 item 6; ABI 1.6 concurrent_compiles,
// core/backend/parallel_compile.h): the host overlaps the compiles of a backend that opts in and
// never those of one that does not (the compile_rendezvous test plugin tells, failing
// otherwise), reports the first failing kernel in kernel order whatever the threads did, and on
// cpu_cpp the kernels, their sources and every result bit are those of a serial compile; the
// kernels are stored on disk as they compile, and a cancelled compile stops every compile thread.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/backend/parallel_compile.h"
#include "core/codegen/kernel_codegen.h"
#include "core/config/config.h"
#include "core/driver/compiler.h"
#include "core/graph/parser.h"
#include "core/support/cancellation.h"
#include "core/support/error.h"
#include "core/tensor/tensor.h"

namespace stax {
namespace {

namespace fs = std::filesystem;

const fs::path kTestPlugins = fs::path(STAX_BINARY_DIR) / "test_plugins";

// Five independent kernels with fusion off: relu, exp, a row sum, a scale, a negation.
Graph five_kernels() {
  Graph g;
  Node* x = g.placeholder("x", {4, 8});
  g.output({g.call("relu", {x}), g.call("exp", {x}),
            g.call("sum.dim_IntList", {x, std::vector<int64_t>{1}}),
            g.call("mul.Scalar", {x, 3.0}), g.call("neg", {x})});
  return g;
}

struct Rendezvous {
  bool concurrent = true;
  int wait_ms = 60000;
  int hold_ms = 20;
  std::vector<std::string> fail;
};

Config rendezvous_config(const Rendezvous& r) {
  Config c;
  c.source = "<test>";
  c.plugin_path = {kTestPlugins};
  c.cache = false;
  DeviceConfig d;
  d.backend = "compile_rendezvous";
  d.location = "<test>";
  d.options.set("concurrent", OptionValue::make_scalar(r.concurrent ? "true" : "false"));
  d.options.set("wait_ms", OptionValue::make_scalar(std::to_string(r.wait_ms)));
  d.options.set("hold_ms", OptionValue::make_scalar(std::to_string(r.hold_ms)));
  OptionValue fail;
  fail.kind = OptionValue::Kind::List;
  for (const std::string& f : r.fail) fail.items.push_back(OptionValue::make_scalar(f));
  d.options.set("fail", fail);
  c.devices["cpu"] = d;
  return c;
}

CompileOptions unfused(size_t threads) {
  CompileOptions o;
  o.fuse = false;
  o.compile_threads = threads;
  return o;
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(ParallelCompile, ABackendThatOptsInCompilesOverlap) {
  Compiler compiler(rendezvous_config({}), unfused(2));
  CompiledGraph cg = compiler.compile(five_kernels());
  EXPECT_EQ(cg.stats().kernels_compiled, 5);
  std::vector<float> in(32);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 7) - 3.0f;
  std::vector<Tensor> out = cg.run({Tensor::from_vector<float>({4, 8}, in)});
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(out[0].to_vector<float>()[0], 0.0f);   // relu(-3)
  EXPECT_EQ(out[3].to_vector<float>()[1], -6.0f);  // 3 * (-2)
  EXPECT_EQ(out[4].to_vector<float>()[0], 3.0f);   // -(-3)
}

// The negative control: one compile thread, so the rendezvous never meets and says so.
TEST(ParallelCompile, OneThreadCompilesOneAtATime) {
  Compiler compiler(rendezvous_config({true, 200, 20, {}}), unfused(1));
  const std::string e = error_of([&] { compiler.compile(five_kernels()); });
  EXPECT_NE(e.find("no other compile ran beside the compile of"), std::string::npos) << e;
}

TEST(ParallelCompile, ABackendThatDoesNotOptInCompilesInTurn) {
  Compiler compiler(rendezvous_config({false, 60000, 10, {}}), unfused(4));
  CompiledGraph cg = compiler.compile(five_kernels());  // an overlap would throw
  EXPECT_EQ(cg.stats().kernels_compiled, 5);
  EXPECT_FALSE(compiler.registry().backend("cpu").properties().concurrent_compiles);
}

// kernel1 and kernel3 fail: whichever finishes first, the error is kernel1's, as in a serial
// compile.
TEST(ParallelCompile, TheFirstFailingKernelInOrderIsReported) {
  for (int round = 0; round < 4; ++round) {
    Compiler compiler(rendezvous_config({true, 5000, 20, {"kernel3", "kernel1"}}), unfused(3));
    const std::string e = error_of([&] { compiler.compile(five_kernels()); });
    EXPECT_NE(e.find("compile of kernel 'kernel1' failed (compile error): kernel1 refused"),
              std::string::npos)
        << "round " << round << ": " << e;
  }
}

TEST(ParallelCompile, ThreadCountFromTheEnvironment) {
  ::setenv("STAX_COMPILE_THREADS", "3", 1);
  EXPECT_EQ(compile_threads(), 3u);
  ::setenv("STAX_COMPILE_THREADS", "two", 1);
  const std::string e = error_of([] { compile_threads(); });
  EXPECT_NE(e.find("STAX_COMPILE_THREADS: error: 'two' is not a thread count (1..1024)"),
            std::string::npos)
      << e;
  ::unsetenv("STAX_COMPILE_THREADS");
  EXPECT_GE(compile_threads(), 1u);
}

// cpu_cpp compiles concurrently: the transformer block's kernels compiled on 4 threads have the
// sources of a serial compile and compute the same bits.
// The batch's order estimate (compile_cost): a column reduction (its loads contiguous along the
// output dimension: a vectorising backend accumulates many outputs side by side) counts a large
// part per reduction loop over a row reduction of the same ops and a pointwise kernel, so that
// the GPT block backward's bias gradients (the slowest compiles) start first.
TEST(ParallelCompile, AColumnReductionIsEstimatedCostlierThanARowReduction) {
  Config config = Config::default_cpu();
  config.cache = false;
  Compiler compiler(config);
  auto cost_of = [&](const std::function<Node*(Graph&, Node*)>& body, int64_t columns = 64) {
    Graph g;
    Node* x = g.placeholder("x", {256, columns});
    g.output({body(g, x)});
    CompiledGraph cg = compiler.compile(g);
    std::vector<KernelPlan> plans = plan_kernels(cg.schedule(), cg.lowered());
    EXPECT_EQ(plans.size(), 1u);
    return plans.empty() ? size_t{0} : compile_cost(*plans[0].desc.get());
  };
  auto sum_over = [](int64_t dim) {
    return [dim](Graph& g, Node* x) {
      return g.call("sum.dim_IntList", {g.call("exp", {x}), std::vector<int64_t>{dim}});
    };
  };
  const size_t column = cost_of(sum_over(0)), row = cost_of(sum_over(1));
  const size_t pointwise = cost_of([](Graph& g, Node* x) { return g.call("exp", {x}); });
  EXPECT_GE(column, row + 300) << "column " << column << ", row " << row;
  EXPECT_GT(row, pointwise);
  EXPECT_GE(pointwise, 110u);  // the fixed part of every compile
  // A column reduction to 8 outputs: too few to accumulate side by side, no large part.
  const size_t narrow = cost_of(sum_over(0), 8);
  EXPECT_LT(narrow, row + 300) << "narrow " << narrow << ", row " << row;
}

TEST(ParallelCompile, CpuCppKernelsAreThoseOfASerialCompile) {
  Graph g = parse_graph_file(std::string(STAX_SOURCE_DIR) + "/examples/transformer_block.stax");
  Config config = Config::default_cpu();
  config.cache = false;
  CompileOptions serial_options, parallel_options;
  serial_options.compile_threads = 1;
  parallel_options.compile_threads = 4;
  Compiler serial(config, serial_options), parallel(config, parallel_options);
  ASSERT_TRUE(parallel.registry().backend("cpu").properties().concurrent_compiles);
  CompiledGraph a = serial.compile(g), b = parallel.compile(g);
  ASSERT_GT(a.num_kernels(), 2u);
  ASSERT_EQ(a.num_kernels(), b.num_kernels());
  for (size_t k = 0; k < a.num_kernels(); ++k) {
    EXPECT_EQ(a.kernels()[k].name, b.kernels()[k].name);
    EXPECT_EQ(a.kernels()[k].source, b.kernels()[k].source) << a.kernels()[k].name;
  }
  std::vector<Tensor> inputs;
  uint32_t state = 12345;
  for (const Node* p : g.placeholders()) {
    std::vector<float> v(static_cast<size_t>(shape_numel(p->meta().sizes)));
    for (float& x : v) {
      state = state * 1664525u + 1013904223u;
      x = static_cast<float>(state >> 8) / static_cast<float>(1 << 24) - 0.5f;
    }
    inputs.push_back(Tensor::from_vector(p->meta().sizes, v));
  }
  std::vector<Tensor> ra = a.run(inputs), rb = b.run(inputs);
  ASSERT_EQ(ra.size(), rb.size());
  for (size_t i = 0; i < ra.size(); ++i)
    EXPECT_EQ(ra[i].to_vector<float>(), rb[i].to_vector<float>()) << "output " << i;
}

// Kernels compiled on several threads are stored on disk by the threads that compiled them
// (KernelCache::compile_missing): a fresh process-level cache on the same directory finds every
// one of them there, with the sources of the cold compile.
TEST(ParallelCompile, CpuCppKernelsCompiledInParallelAreStoredAsTheyCompile) {
  const fs::path dir = fs::temp_directory_path() /
                       ("stax_parallel_compile_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  ::unsetenv("STAX_CACHE_DIR");  // ctest runs the suite with STAX_CACHE_DIR=off
  Graph g = parse_graph_file(std::string(STAX_SOURCE_DIR) + "/examples/transformer_block.stax");
  Config config = Config::default_cpu();
  config.cache_dir = dir;
  CompileOptions options;
  options.compile_threads = 4;
  std::vector<std::string> cold_sources;
  size_t n = 0;
  {
    Compiler cold(config, options);
    CompiledGraph cg = cold.compile(g);
    n = cg.num_kernels();
    EXPECT_EQ(static_cast<size_t>(cg.stats().kernels_compiled), n);
    for (const CompiledKernelInfo& k : cg.kernels()) cold_sources.push_back(k.source);
  }
  ASSERT_GT(n, 2u);
  Compiler cached(config, options);
  CompiledGraph cg = cached.compile(g);
  EXPECT_EQ(static_cast<size_t>(cg.stats().kernels_from_disk), n);
  EXPECT_EQ(cg.stats().kernels_compiled, 0);
  ASSERT_EQ(cg.num_kernels(), n);
  for (size_t k = 0; k < n; ++k) EXPECT_EQ(cg.kernels()[k].source, cold_sources[k]) << k;
  fs::remove_all(dir);
}

// A compile cancelled from another thread while two compile threads are busy (the rendezvous
// plugin holds each compile 1 s; the passes of five small kernels take far less than the 0.5 s
// before the cancel) stops before the next kernel, whichever thread takes it: no compile starts
// after the cancel, the error is the "cancelled" one, and the Compiler compiles again afterwards.
TEST(ParallelCompile, ACancelledCompileStopsEveryCompileThread) {
  Compiler compiler(rendezvous_config({true, 60000, 1000, {}}), unfused(2));
  CancellationToken token;
  std::string stage, message;
  std::thread worker([&] {
    try {
      compiler.compile(five_kernels(), &token);
    } catch (const Error& e) {
      stage = e.stage();
      message = e.message();
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  token.cancel();
  worker.join();
  EXPECT_EQ(stage, kCancelledStage);
  EXPECT_EQ(message.rfind("cancelled before compiling kernel kernel", 0), 0u) << message;
  EXPECT_EQ(compiler.compile(five_kernels()).stats().kernels_compiled, 5);
}

}  // namespace
}  // namespace stax
