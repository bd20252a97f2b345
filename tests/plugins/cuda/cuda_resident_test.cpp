// Device-resident runs (issue 8): a CompiledGraph on a backend whose device is not the CPU keeps
// every buffer in the backend's device memory (ABI 1.2 device_alloc), copies each graph input in
// once and each output out once, launches on device buffers (buffers_on_device) on its run
// context's stream (ABI 1.3), and runs interpreter fallbacks with explicit copies. Tested on
// cuda_nvrtc's host emulation, whose device memory is registered host memory: a host pointer
// passed as device memory is an error there, and `trace_copies: true` prints every copy, which
// these tests count (besides the executor's own RunStats).
#include <gtest/gtest.h>

#include <thread>

#include "core/backend/plugin_registry.h"
#include "core/scheduler/memory_plan.h"
#include "tests/support/cuda_e2e.h"
#include "tests/support/strings.h"

namespace stax {
namespace {

using test::contains;

OptionValue emulated(bool trace) {
  OptionValue o = OptionValue::map();
  o.set("emulate", OptionValue::make_scalar("true"));
  if (trace) o.set("trace_copies", OptionValue::make_scalar("true"));
  return o;
}

Compiler& compiler(bool trace = false) {
  static Compiler plain(test::cuda_config(emulated(false)));
  static Compiler traced(test::cuda_config(emulated(true)));
  return trace ? traced : plain;
}

size_t count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// Two inputs, two outputs, at least two kernels: a row sum of a fused pointwise value and a column
// sum. Short rows: the warp form, whose order is the interpreter's segmented one (bit for bit).
Graph two_kernel_graph() {
  Graph g;
  Node* x = g.placeholder("x", {40, 33});
  Node* y = g.placeholder("y", {40, 33});
  Node* a = g.call("relu", {g.call("add.Tensor", {x, y})});
  Node* rows = g.call("mul.Scalar", {g.call("sum.dim_IntList", {a, std::vector<int64_t>{-1}}), 2});
  Node* cols = g.call("sum.dim_IntList", {g.call("mul.Tensor", {x, y}), std::vector<int64_t>{0}});
  g.output({rows, cols});
  return g;
}

TEST(CudaResident, OneCopyInPerInputAndOneCopyOutPerOutput) {
  Graph g = two_kernel_graph();
  CompiledGraph cg = compiler().compile(g);
  ASSERT_EQ(cg.backend_name(), "cuda_nvrtc");
  ASSERT_GE(cg.num_kernels(), 2u);
  for (uint64_t seed : {1, 2}) {  // the second run reuses the context (arena, blocks, stream)
    std::vector<Tensor> in = test::random_inputs(g, seed);
    RunStats st;
    GraphRunOptions ro;
    ro.stats = &st;
    std::vector<Tensor> got = cg.run(in, ro);
    std::vector<Tensor> want = test::reference(g, in);
    ASSERT_EQ(got.size(), 2u);
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_TRUE(test::bitwise_equal(got[i], want[i])) << "seed " << seed << " out " << i;
    EXPECT_TRUE(st.on_device);
    EXPECT_EQ(st.host_to_device, 2u);
    EXPECT_EQ(st.device_to_host, 2u);
    EXPECT_EQ(st.host_to_device_bytes, 2 * 40 * 33 * 4);
    EXPECT_EQ(st.device_to_host_bytes, (40 + 33) * 4);
    EXPECT_EQ(st.launches, cg.num_kernels());
    EXPECT_EQ(st.interpreter_steps, 0u);
    EXPECT_EQ(st.synchronizes, 1u);
  }
}

// The plugin's own view: with trace_copies it prints every copy, launch and synchronize.
TEST(CudaResident, ThePluginSeesExactlyTheseCopies) {
  Graph g = two_kernel_graph();
  CompiledGraph cg = compiler(true).compile(g);
  std::vector<Tensor> in = test::random_inputs(g, 3);
  ::testing::internal::CaptureStderr();
  std::vector<Tensor> got = cg.run(in);
  std::string trace = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(count(trace, "cuda_nvrtc (emulated): copy host_to_device 5280 bytes"), 2u) << trace;
  EXPECT_EQ(count(trace, "cuda_nvrtc (emulated): copy device_to_host"), 2u) << trace;
  EXPECT_EQ(count(trace, "cuda_nvrtc (emulated): copy"), 4u) << trace;
  EXPECT_EQ(count(trace, "cuda_nvrtc (emulated): launch kernel"), cg.num_kernels()) << trace;
  EXPECT_EQ(count(trace, "cuda_nvrtc (emulated): synchronize"), 1u) << trace;
  std::vector<Tensor> want = test::reference(g, in);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(test::bitwise_equal(got[i], want[i])) << i;
}

// A fallback between kernels: what it reads comes to the host, its result goes back to the
// device for the kernel that reads it; nothing else moves.
TEST(CudaResident, FallbacksCopyExplicitly) {
  Graph g;
  Node* x = g.placeholder("x", {6, 10});
  Node* r = g.call("mul.Scalar", {g.call("relu", {x}), 2});                // kernel
  Node* v = g.call("cumsum", {r, 1});                                    // fallback reads r
  Node* s = g.call("sum.dim_IntList", {x, std::vector<int64_t>{-1}, true});  // kernel reads x
  g.output({g.call("add.Tensor", {v, s})});                              // kernel reads v
  CompiledGraph cg = compiler().compile(g);
  ASSERT_EQ(cg.num_fallbacks(), 1u) << cg.summary();
  std::vector<Tensor> in = test::random_inputs(g, 5);
  RunStats st;
  GraphRunOptions ro;
  ro.stats = &st;
  Tensor got = cg.run(in, ro)[0];
  Tensor want = test::reference(g, in)[0];
  EXPECT_TRUE(test::bitwise_equal(got, want));
  EXPECT_EQ(st.interpreter_steps, 1u);
  EXPECT_EQ(st.host_to_device, 2u);  // x, the fallback's result
  EXPECT_EQ(st.device_to_host, 2u);  // r for the fallback, the output
  EXPECT_EQ(st.synchronizes, 2u);    // before the fallback reads r, before returning
}

// A kernel that writes its output in place of a buffer the interpreter produced (memory_plan.h,
// in place): cuda_nvrtc offers no matmul, so the first product runs on the interpreter and its
// result lives only in a host copy; gelu's kernel then takes over that buffer's arena bytes and
// reads it through its own pointer, so the host copy must reach those device bytes first (it
// was dropped unread, and gelu read whatever the arena held: off by up to 1e26).
TEST(CudaResident, InPlaceKernelOverAnInterpreterResult) {
  Graph g;
  Node* x = g.placeholder("x", {16, 32});
  Node* w1 = g.placeholder("w1", {64, 32});
  Node* w2 = g.placeholder("w2", {32, 64});
  Node* h = g.call("linear", {x, g.call("mul.Scalar", {w1, 0.125})});  // on the interpreter
  Node* a = g.call("gelu", {h});                                       // in place of h
  g.output({g.call("linear", {a, w2})});
  CompiledGraph cg = compiler().compile(g);
  ASSERT_TRUE(contains(cg.memory_plan().str(), " in place of ")) << cg.memory_plan().str();
  ASSERT_GE(cg.num_fallbacks(), 1u) << cg.summary();
  for (uint64_t seed : {21, 22}) {  // the second run finds the first run's values in the arena
    std::vector<Tensor> in = test::random_inputs(g, seed);
    Tensor got = cg.run(in)[0];
    Tensor want = test::reference(g, in)[0];
    EXPECT_TRUE(test::bitwise_equal(got, want)) << "seed " << seed;
  }
}

// Concurrent runs (cuda_nvrtc reports concurrent_runs): each run context has its own stream and
// device buffers; results equal the interpreter's in every thread.
TEST(CudaResident, ConcurrentRunsEachOnTheirOwnStream) {
  Graph g = two_kernel_graph();
  CompiledGraph cg = compiler().compile(g);
  std::vector<std::vector<Tensor>> in, want;
  for (uint64_t s = 0; s < 4; ++s) {
    in.push_back(test::random_inputs(g, 10 + s));
    want.push_back(test::reference(g, in.back()));
  }
  std::vector<int> bad(4, 0);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 3; ++rep) {
        std::vector<Tensor> got = cg.run(in[t]);
        for (size_t i = 0; i < got.size(); ++i) bad[t] += !test::bitwise_equal(got[i], want[t][i]);
      }
    });
  for (std::thread& th : threads) th.join();
  for (size_t t = 0; t < 4; ++t) EXPECT_EQ(bad[t], 0) << "thread " << t;
}

// Returned views of inputs come back without any copy (they are the caller's tensors); an output
// returned twice is copied out once; zero-size buffers move nothing and still run.
TEST(CudaResident, InputViewsRepeatedOutputsAndEmptyTensors) {
  Graph g;
  Node* x = g.placeholder("x", {8, 5});
  Node* e = g.placeholder("e", {0, 5});
  Node* s = g.call("sum.dim_IntList", {x, std::vector<int64_t>{-1}});
  g.output({g.call("t", {x}), s, s, g.call("sum.dim_IntList", {e, std::vector<int64_t>{0}}),
            g.call("exp", {e})});
  CompiledGraph cg = compiler().compile(g);
  std::vector<Tensor> in = test::random_inputs(g, 9);
  RunStats st;
  GraphRunOptions ro;
  ro.stats = &st;
  std::vector<Tensor> got = cg.run(in, ro), want = test::reference(g, in);
  ASSERT_EQ(got.size(), 5u);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(test::bitwise_equal(got[i], want[i])) << i;
  EXPECT_EQ(got[0].data_ptr(), in[0].data_ptr());  // x.t() is a view of the caller's x
  EXPECT_EQ(st.host_to_device, 1u);                // x, for the row sum (e has no bytes)
  EXPECT_EQ(st.device_to_host, 2u);                // s once; the column sum of e (5 zeros)
}

// cpu_cpp runs on host memory: no copies at all.
TEST(CudaResident, CpuBackendCopiesNothing) {
  Graph g = two_kernel_graph();
  CompiledGraph cg = test::cpu_compiler().compile(g);
  RunStats st;
  GraphRunOptions ro;
  ro.stats = &st;
  cg.run(test::random_inputs(g, 1), ro);
  EXPECT_FALSE(st.on_device);
  EXPECT_EQ(st.host_to_device + st.device_to_host + st.synchronizes, 0u);
  EXPECT_EQ(st.launches, cg.num_kernels());
}

// The emulation refuses host memory where device memory belongs (a GPU would fault).
TEST(CudaResident, EmulationRejectsHostPointersAsDeviceMemory) {
  PluginRegistry reg({STAX_PLUGIN_DIR});
  std::unique_ptr<Plugin> p = reg.create("cuda_nvrtc", emulated(false));
  std::vector<float> host(16, 1.0f);
  void* dev = p->device_alloc(64);
  p->device_copy(STAX_COPY_HOST_TO_DEVICE, dev, host.data(), 64);
  try {
    p->device_copy(STAX_COPY_HOST_TO_DEVICE, host.data(), dev, 64);
    FAIL() << "a host destination was accepted as device memory";
  } catch (const PluginCallError& e) {
    EXPECT_TRUE(contains(e.what(), "the destination of a host_to_device copy is not device "
                                   "memory from device_alloc"))
        << e.what();
  }
  try {
    p->device_copy(STAX_COPY_DEVICE_TO_HOST, host.data(), dev, 128);  // past the allocation
    FAIL() << "a copy past the allocation was accepted";
  } catch (const PluginCallError& e) {
    EXPECT_TRUE(contains(e.what(), "the source of a device_to_host copy is not device memory"))
        << e.what();
  }
  void* stream = p->stream_create();
  EXPECT_NE(stream, nullptr);
  p->device_copy(STAX_COPY_DEVICE_TO_HOST, host.data(), dev, 64, stream);
  p->device_synchronize(stream);
  p->stream_destroy(stream);
  EXPECT_THROW(p->device_synchronize(stream), PluginCallError);  // destroyed
  p->device_free(dev);
  EXPECT_THROW(p->device_free(dev), PluginCallError);  // freed twice
}

}  // namespace
}  // namespace stax
