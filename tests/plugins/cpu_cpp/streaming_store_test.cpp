// cpu_cpp's streaming stores (option `streaming_store_bytes`, plugins/cpu_cpp/streaming_store.h,
// DECISIONS 71): a float32 output above the threshold that its kernel does not read back is
// written 16 elements at a time with non-temporal stores where 64-byte aligned, the kernel's
// entry point ending with an sfence. Nothing is computed differently: every result is bit for bit
// the normal stores' and the interpreter's, with the scalar and the vector printer (and for the
// baseline x86-64 target), on 1, 2 and 3 threads, for odd row lengths (a scalar / masked tail,
// rows that start misaligned and keep normal stores), offset slices as inputs, pointwise kernels
// and a row reduction's last pass (layer_norm); outputs read back by their kernel (softmax's
// in-place division) never stream; a producer's streamed output is read by other threads (an
// extern product on the pool, and on a libgomp team) and by the calling thread (a fallback) in
// the next steps; the printed source streams above the threshold and not at or below it; bad
// option values are clear errors. (TSan cannot see the weak ordering of non-temporal stores: the
// argument that the fence is enough is in streaming_store.h.)
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <unistd.h>
#include <vector>

#include "tests/support/compiled_check.h"
#include "tests/support/sanitizers.h"
#include "tests/support/strings.h"

namespace stax {
namespace {

using test::count_of;
using test::kernel_functions;

using test::bitwise_equal;

const char* kStream = "stax_stream16(";
const char* kFence = "stax_stream_fence();";

// `bytes`: the option's value; vector_printer: cpu_cpp's `vector_printer`.
Compiler& compiler(const std::string& bytes, int threads, bool vector_printer) {
  static std::map<std::tuple<std::string, int, bool>, std::unique_ptr<Compiler>> compilers;
  auto& c = compilers[{bytes, threads, vector_printer}];
  if (!c) {
    OptionValue o = test::cpu_options(test::Order::Segmented, threads);
    o.set("streaming_store_bytes", OptionValue::make_scalar(bytes));
    o.set("vector_printer", OptionValue::make_scalar(vector_printer ? "true" : "false"));
    c = std::make_unique<Compiler>(test::cpu_config(o));
  }
  return *c;
}

// Compiles g with a tiny threshold (64 bytes: every output above it may stream) and with
// streaming off, with either printer, on 1, 2 and 3 threads: every output the interpreter's bits
// (segmented order). `streams`: whether the tiny threshold's source must stream (and fence), else
// it must not; the source with streaming off never does.
void expect_same_bits(const Graph& g, bool streams, const std::string& what, uint64_t seed = 3) {
  SCOPED_TRACE(what);
  std::vector<Tensor> in = test::random_inputs(g, seed);
  std::vector<Tensor> want;
  for (bool vp : {false, true}) {
    SCOPED_TRACE(vp ? "vector printer" : "scalar printer");
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE("threads " + std::to_string(threads));
      CompiledGraph on = compiler("64", threads, vp).compile(g);
      CompiledGraph off = compiler("0", threads, vp).compile(g);
      if (want.empty()) want = test::reference(on.graph(), in);
      const std::string on_src = kernel_functions(on), off_src = kernel_functions(off);
      if (std::getenv("STAX_TEST_PRINT_SOURCE") && threads == 1) std::cout << on_src;
      EXPECT_EQ(count_of(off_src, kStream), 0u);
      EXPECT_EQ(count_of(off_src, kFence), 0u);
      if (streams) {
        EXPECT_GT(count_of(on_src, kStream), 0u) << on_src;
        EXPECT_GT(count_of(on_src, kFence), 0u) << on_src;
      } else {
        EXPECT_EQ(count_of(on_src, kStream), 0u) << on_src;
        EXPECT_EQ(count_of(on_src, kFence), 0u) << on_src;
      }
      std::vector<Tensor> a = on.run(in), b = off.run(in);
      ASSERT_EQ(a.size(), want.size());
      ASSERT_EQ(b.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_TRUE(bitwise_equal(a[i], want[i])) << "output " << i << " streaming vs interpreter";
        EXPECT_TRUE(bitwise_equal(b[i], want[i])) << "output " << i << " normal vs interpreter";
      }
    }
  }
}

Node* pointwise(Graph& g, Node* x, Node* y) {
  return g.call("mul.Scalar", {g.call("relu", {g.call("add.Tensor", {x, y})}), 2});
}

TEST(StreamingStores, PointwiseKernelsGiveTheInterpretersBits) {
  // Rows of 4099 (a tail of 3; most rows start misaligned), of 1024 (aligned), 1-D of 100003
  // (chunked along the blocked loop itself), 3-D with an innermost 48.
  const std::vector<std::vector<int64_t>> shapes = {{64, 4099}, {96, 1024}, {100003}, {5, 7, 48}};
  for (const auto& shape : shapes) {
    Graph g;
    g.output({pointwise(g, g.placeholder("x", shape), g.placeholder("y", shape))});
    std::string name = "pointwise";
    for (int64_t d : shape) name += " " + std::to_string(d);
    expect_same_bits(g, true, name);
  }
}

TEST(StreamingStores, OffsetSliceInputsGiveTheInterpretersBits) {
  // Inputs read through views that start 3 and 5 elements in (misaligned loads); the output is
  // fresh. Two outputs of one kernel, both streamed.
  Graph g;
  Node* x = g.placeholder("x", {40, 1030});
  Node* y = g.placeholder("y", {40, 1030});
  Node* xs = g.call("slice.Tensor", {x, 1, 3, 1027});
  Node* ys = g.call("slice.Tensor", {y, 1, 5, 1029});
  g.output({pointwise(g, xs, ys), g.call("sub.Tensor", {xs, ys})});
  expect_same_bits(g, true, "offset slices");
}

TEST(StreamingStores, LayerNormsLastPassStreams) {
  // A row reduction and its pointwise last pass (a reduction-loop body that only stores).
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{64, 4099}, {33, 512}, {7, 16}};
  for (auto [rows, cols] : shapes) {
    Graph g;
    Node* x = g.placeholder("x", {rows, cols});
    g.output({g.call("layer_norm", {x, std::vector<int64_t>{cols}, g.placeholder("w", {cols}),
                                    g.placeholder("b", {cols})})});
    expect_same_bits(g, true, "layer_norm " + std::to_string(rows) + "x" + std::to_string(cols));
    // The scalar printer peels a row of 4099 floats to its first 64-byte boundary (then every
    // block streams); a row of a multiple of 16 floats needs no peeling.
    const std::string src = kernel_functions(compiler("64", 1, false).compile(g));
    EXPECT_EQ(count_of(src, "to a 64-byte boundary"), cols % 16 == 0 ? 0u : 1u) << src;
  }
}

TEST(StreamingStores, TheBaselineTargetGivesTheSameBits) {
  // native_cpu: false (x86-64 without AVX: a 16-float block is four 128-bit non-temporal stores).
  OptionValue o = test::cpu_options(test::Order::Segmented, 2);
  o.set("streaming_store_bytes", OptionValue::make_scalar("64"));
  o.set("native_cpu", OptionValue::make_scalar("false"));
  Compiler baseline(test::cpu_config(o));
  for (int64_t cols : {4099, 512}) {
    SCOPED_TRACE("cols " + std::to_string(cols));
    Graph g;
    Node* x = g.placeholder("x", {33, cols});
    g.output({pointwise(g, x, g.placeholder("y", {33, cols})),
              g.call("layer_norm", {x, std::vector<int64_t>{cols}, g.placeholder("w", {cols}),
                                    g.placeholder("b", {cols})})});
    std::vector<Tensor> in = test::random_inputs(g, 6);
    CompiledGraph cg = baseline.compile(g);
    EXPECT_GT(count_of(kernel_functions(cg), kStream), 0u) << kernel_functions(cg);
    std::vector<Tensor> got = cg.run(in), want = test::reference(cg.graph(), in);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_TRUE(bitwise_equal(got[i], want[i])) << "output " << i;
  }
}

TEST(StreamingStores, OutputsReadBackByTheirKernelDoNotStream) {
  // softmax stores exp(x - max) into its output and divides it there in place: that buffer is
  // loaded by its own kernel, so its stores stay normal (a streamed line would have to come back
  // from memory). The row maxima / sums are per-output stores: never streamed either.
  Graph g;
  g.output({g.call("softmax.int", {g.placeholder("x", {48, 1000}), -1})});
  expect_same_bits(g, false, "softmax");
}

// A producer / consumer pair: a pointwise kernel streams y; a product reads it (on the pool's or
// the team's threads: other rows than each thread wrote, the product's blocks are not the
// kernel's chunks) and the fallback cumsum reads it on the calling thread.
Graph producer_and_consumers() {
  Graph g;
  Node* x = g.placeholder("x", {512, 272});
  Node* y = g.call("exp", {g.call("mul.Scalar", {x, 0.25})});
  Node* m = g.call("mm", {y, g.placeholder("w", {272, 40})});
  Node* c = g.call("cumsum", {y, 0});
  g.output({y, m, c});
  return g;
}

// Runs cg 5 times (a missing fence would show as stale values in some run): the interpreter's bits.
void expect_runs_match(CompiledGraph& cg, const std::vector<Tensor>& in,
                       const std::vector<Tensor>& want) {
  EXPECT_GT(count_of(kernel_functions(cg), kStream), 0u) << kernel_functions(cg);
  for (int run = 0; run < 5; ++run) {
    std::vector<Tensor> got = cg.run(in);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_TRUE(bitwise_equal(got[i], want[i])) << "output " << i << " run " << run;
  }
}

TEST(StreamingStores, ProducersOutputIsReadByOtherThreadsInTheNextSteps) {
  Graph g = producer_and_consumers();
  std::vector<Tensor> in = test::random_inputs(g, 9);
  std::vector<Tensor> want;
  for (int threads : {2, 3}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    CompiledGraph cg = compiler("64", threads, false).compile(g);
    if (want.empty()) want = test::reference(cg.graph(), in);
    expect_runs_match(cg, in, want);
  }
}

// The same on a host program's OpenMP team (`openmp_runtime`: the system's libgomp, loaded here
// as torch would have loaded it): the kernel's fence precedes the team's barrier. Skips without
// libgomp, and under TSan (libgomp is not instrumented: thread_pool_test's reason).
TEST(StreamingStores, ProducersOutputIsReadOnAnOpenMpTeam) {
#ifdef STAX_TEST_TSAN
  GTEST_SKIP() << "libgomp is not instrumented for TSan";
#else
  if (!dlopen("libgomp.so.1", RTLD_NOW | RTLD_GLOBAL)) GTEST_SKIP() << "no libgomp.so.1";
  OptionValue o = test::cpu_options(test::Order::Segmented, 2);
  o.set("streaming_store_bytes", OptionValue::make_scalar("64"));
  o.set("openmp_runtime", OptionValue::make_scalar("libgomp.so.1"));
  Compiler team(test::cpu_config(o));
  Graph g = producer_and_consumers();
  std::vector<Tensor> in = test::random_inputs(g, 9);
  CompiledGraph cg = team.compile(g);
  expect_runs_match(cg, in, test::reference(cg.graph(), in));
#endif
}

TEST(StreamingStores, OnlyBuffersAboveTheThresholdStream) {
  // 64 x 4099 floats = 1049344 bytes: streamed above 1049343, not at 1049344 (strictly larger),
  // nor with a threshold of 1 GB; `auto` (the last-level cache) leaves this 1 MB output alone
  // when the cache is larger.
  Graph g;
  Node* x = g.placeholder("x", {64, 4099});
  g.output({pointwise(g, x, x)});
  std::vector<Tensor> in = test::random_inputs(g, 4);
  std::vector<Tensor> want = test::reference(g, in);
  for (bool vp : {false, true}) {
    for (const char* bytes : {"1049343", "1049344", "1000000000", "auto"}) {
      SCOPED_TRACE(std::string(bytes) + (vp ? " vector printer" : " scalar printer"));
      CompiledGraph cg = compiler(bytes, 2, vp).compile(g);
      const std::string src = kernel_functions(cg);
      if (std::string(bytes) == "1049343") {
        EXPECT_GT(count_of(src, kStream), 0u) << src;
        EXPECT_TRUE(src.find("(1049344 bytes)") != std::string::npos) << src;  // the dump says so
      } else if (std::string(bytes) != "auto") {
        EXPECT_EQ(count_of(src, kStream), 0u) << src;
      }
      EXPECT_TRUE(bitwise_equal(cg.run(in)[0], want[0]));
    }
  }
}

TEST(StreamingStores, BadOptionValuesAreClearErrors) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("stax_streaming_test_" + std::to_string(getpid()));
  fs::create_directories(dir);
  Graph g;
  Node* x = g.placeholder("x", {4, 16});
  g.output({pointwise(g, x, x)});
  auto compile_with = [&](const std::string& value) -> std::string {
    std::string yaml = "plugin_path: [" + std::string(STAX_PLUGIN_DIR) +
                       "]\ndevices:\n  cpu:\n    backend: cpu_cpp\n    options:\n"
                       "      streaming_store_bytes: " + value + "\n";
    try {
      Compiler c(Config::parse(yaml, "bad.yaml", dir));
      c.compile(g);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  for (const char* bad : {"-1", "lots", "1.5", "32M", "[1, 2]"}) {
    std::string what = compile_with(bad);
    EXPECT_TRUE(what.find("option 'streaming_store_bytes' of backend 'cpu_cpp' must be auto, 0 "
                          "(off) or a byte count") != std::string::npos)
        << bad << ": " << what;
  }
  EXPECT_TRUE(compile_with("-1").find("got '-1'") != std::string::npos);
  for (const char* good : {"auto", "0", "33554432"}) EXPECT_EQ(compile_with(good), "") << good;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace stax
