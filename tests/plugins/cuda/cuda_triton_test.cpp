// cuda_triton (plugins/cuda_triton) without a GPU:
//   * the e2e set under Triton's own interpreter (`interpret: true`, TRITON_INTERPRET=1 in the
//     plugin's Python workers) against the reference interpreter: pointwise outputs in every
//     dtype (the workers give libdevice's functions SLEEF's, as the reference uses) and
//     max / min / argmax / argmin / any / all / integer reductions bit for bit; float sums /
//     products within the seed §6.5 bound (tree order);
//   * every kernel of the e2e set compiles ahead of time with the Triton compiler to an sm_90
//     cubin (counted through a fresh kernel cache; the run then fails on "no CUDA driver");
//   * seed Listing 5.4: the compiled backward of Example 5.1 is one Triton kernel that loads the
//     saved matmul and the upstream gradient, recomputes erf and exp, and stores once;
//   * a Python error and a dead worker are clean errors naming the kernel; the worker restarts.
// Skipped, saying why, when the `triton` Python package is not importable.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <regex>

#include "core/autodiff/joint_graph.h"
#include "core/graph/parser.h"
#include "core/partition/partitioner.h"
#include "core/backend/plugin_registry.h"
#include "tests/support/cubin_count.h"
#include "tests/support/cuda_e2e.h"
#include "tests/support/device_roundtrip.h"

namespace stax {
namespace {

using test::contains;

bool triton_available() {
  static const bool ok = [] {
    const char* py = std::getenv("STAX_PYTHON");
    std::string cmd = std::string(py && *py ? py : "python3") +
                      " -c 'import triton' > /dev/null 2>&1";
    return std::system(cmd.c_str()) == 0;
  }();
  return ok;
}

#define REQUIRE_TRITON() \
  if (!triton_available()) GTEST_SKIP() << "the triton Python package is not installed (scripts/setup.sh)"

Config triton_config(bool interpret) {
  OptionValue o = OptionValue::map();
  o.set("arch", OptionValue::make_scalar("sm_90"));
  if (interpret) o.set("interpret", OptionValue::make_scalar("true"));
  Config c = test::cuda_config(o);
  c.devices["cuda"].backend = "cuda_triton";
  return c;
}

Compiler& interpreted() {
  static Compiler compiler(triton_config(true));
  return compiler;
}

TEST(CudaTriton, E2eSetUnderTheTritonInterpreterAgreesWithTheReference) {
  REQUIRE_TRITON();
  size_t bitwise = 0, bounded = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (const test::E2eCase& c : test::cuda_e2e_cases()) {
    SCOPED_TRACE(c.name);
    CompiledGraph cg = interpreted().compile(c.graph);
    ASSERT_EQ(cg.backend_name(), "cuda_triton");
    std::vector<Tensor> got = cg.run(c.inputs);
    std::vector<Tensor> want = interpret(c.graph, c.inputs);
    std::vector<Tensor> magnitude;
    if (!c.reordered.empty()) magnitude = interpret(c.graph, test::abs_inputs(c.inputs));
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      if (c.approximate) {
        EXPECT_TRUE(got[i].allclose(want[i], 1e-5, 1e-6)) << "out " << i;
        ++bounded;
        continue;
      }
      int64_t n = 0;
      for (const auto& [out, length] : c.reordered)
        if (out == i) n = length;
      DType dt = want[i].dtype();
      if (n > 0) {
        std::vector<double> bound(static_cast<size_t>(want[i].numel()));
        for (int64_t e = 0; e < want[i].numel(); ++e)
          bound[static_cast<size_t>(e)] =
              2.0 * static_cast<double>(n - 1) * test::unit_roundoff(dt) *
                  magnitude[i].get_double(e) +
              2.0 * test::output_roundoff(dt) * std::fabs(want[i].get_double(e));
        EXPECT_TRUE(test::within_bound(got[i], want[i], bound)) << "out " << i;
        ++bounded;
      } else {
        EXPECT_TRUE(test::bitwise_equal(got[i], want[i])) << "out " << i;
        ++bitwise;
      }
    }
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GT(bitwise, 100u);
  std::printf("[ cuda_triton interpreted ] %zu outputs bit for bit, %zu within the §6.5 bound "
              "(%.1f s)\n",
              bitwise, bounded, s);
}

// Ahead of time: every kernel of the e2e set compiles to an sm_90 cubin with the Triton compiler.
// The kernel cache on a fresh directory makes compile() wait for every cubin and counts the ones
// that were built (tests/support/cubin_count.h); without a driver the run then fails on the
// device, with a GPU it runs.
TEST(CudaTriton, EveryE2eKernelCompilesToAnSm90Cubin) {
  REQUIRE_TRITON();
  test::CubinCache cache("e2e");
  Config config = triton_config(false);
  config.cache_dir = cache.dir();
  Compiler compiler(config);
  size_t kernels = 0;
  int compiled = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (const test::E2eCase& c : test::cuda_e2e_cases()) {
    SCOPED_TRACE(c.name);
    CompiledGraph cg = compiler.compile(c.graph);
    kernels += cg.num_kernels();
    compiled += cg.stats().kernels_compiled;
    try {
      cg.run(c.inputs);
    } catch (const Error& e) {
      EXPECT_TRUE(contains(e.what(), "no CUDA driver") || contains(e.what(), "no device"))
          << e.what();
    }
  }
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GT(kernels, 30u);
  EXPECT_GT(compiled, 20);
  EXPECT_EQ(cache.cubins(), static_cast<size_t>(compiled)) << "a compile failed";
  std::printf("[ cuda_triton ] %zu kernels (%d distinct) compiled to sm_90 cubins, %.0f ms per "
              "compile (wall, 2 workers; loadavg and Triton's own cache matter)\n",
              kernels, compiled, ms / static_cast<double>(compiled));
}

// Seed Listing 5.4: the backward of Example 5.1 is one pointwise Triton kernel that loads the
// scalar upstream gradient (broadcast to the block) and the saved matmul h, recomputes
// Φ(h) = 0.5 (1 + erf(h / √2)) and φ(h) = 0.3989... exp(-h²/2), and stores once.
TEST(CudaTriton, Listing54BackwardOfExample51) {
  JointGraph joint = build_joint_graph(
      parse_graph_file(std::string(STAX_SOURCE_DIR) + "/examples/example_5_1_forward.stax"),
      {"primals_1", "primals_2"});
  partition::PartitionResult p = partition::partition_min_cut(joint);
  Compiler compiler(triton_config(true));
  CompiledGraph bw = compiler.compile(p.backward);
  std::vector<std::string> pointwise;
  for (const CompiledKernelInfo& k : bw.kernels()) pointwise.push_back(k.source);
  ASSERT_EQ(pointwise.size(), 1u) << "the backward's pointwise work is one kernel";
  const std::string& s = pointwise[0];
  std::regex structure(
      "def kernel0\\(in_ptr0, in_ptr1, out_ptr0, XBLOCK: tl.constexpr\\):\n"
      "    xnumel = 2048\n"
      "    xoffset = tl.program_id\\(0\\) \\* XBLOCK\n"
      "    xindex = xoffset \\+ tl.arange\\(0, XBLOCK\\)\n"
      "    xmask = xindex < xnumel\n"
      "    x0 = xindex\n"
      "    # buf[0-9]+\n"
      "    tmp0 = tl.load\\(in_ptr0 \\+ \\(0\\)\\)\n"
      "    tmp1 = tl.broadcast_to\\(tmp0, \\[XBLOCK\\]\\)\n"
      "    tmp2 = tl.load\\(in_ptr1 \\+ \\(x0\\), xmask\\)\n"
      "    tmp3 = \\(tmp2 \\* 0.7071067811865476\\)\n"
      "    tmp4 = libdevice.erf\\(tmp3\\)\n"
      "    tmp5 = \\(1.0 \\+ tmp4\\)\n"
      "    tmp6 = \\(0.5 \\* tmp5\\)\n"
      "    tmp7 = \\(tmp2 \\* tmp2\\)\n"
      "    tmp8 = \\(-0.5 \\* tmp7\\)\n"
      "    tmp9 = libdevice.exp\\(tmp8\\)\n"
      "    tmp10 = \\(0.3989422804014327 \\* tmp9\\)\n"
      "    tmp11 = \\(tmp2 \\* tmp10\\)\n"
      "    tmp12 = \\(tmp6 \\+ tmp11\\)\n"
      "    tmp13 = \\(tmp1 \\* tmp12\\)\n"
      "    tl.store\\(out_ptr0 \\+ \\(x0\\), tmp13, xmask\\)\n");
  EXPECT_TRUE(std::regex_search(s, structure)) << s;
  // One store, two loads.
  size_t stores = 0, loads = 0;
  for (size_t at = s.find("tl.store("); at != std::string::npos; at = s.find("tl.store(", at + 1))
    ++stores;
  for (size_t at = s.find("tl.load("); at != std::string::npos; at = s.find("tl.load(", at + 1))
    ++loads;
  EXPECT_EQ(stores, 1u);
  EXPECT_EQ(loads, 2u);
  if (!triton_available()) return;
  // Executed under the Triton interpreter against the interpreter's backward.
  std::vector<Tensor> in = test::random_inputs(p.backward, 5);
  std::vector<Tensor> got = bw.run(in), want = interpret(p.backward, in);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i].allclose(want[i], 1e-5, 1e-6)) << i;
}

// The GPU policy is cuda_nvrtc's (cuda_common's gpu_properties + the SDK's §6.6 thresholds and
// Algorithm 6.1): Example 6.2 (x of 64 x 16384, (x * x).sum(-1)) splits into two kernels, 8192-
// element segments (the looped form) then the 2 partial sums (the persistent form); executed
// under the interpreter within the §6.5 bound (all terms are nonnegative).
TEST(CudaTriton, Example62SplitReductionLikeCudaNvrtc) {
  Graph g;
  Node* x = g.placeholder("x", {64, 16384});
  g.output({g.call("sum.dim_IntList", {g.call("mul.Tensor", {x, x}), std::vector<int64_t>{-1}})});
  Compiler nvrtc(test::cuda_config());
  EXPECT_EQ(nvrtc.compile(g).num_kernels(), 2u);
  Compiler& c = interpreted();
  Plugin& p = c.registry().backend("cuda");
  EXPECT_EQ(p.thresholds().op_limit, 30);
  EXPECT_EQ(p.properties().multiprocessor_count, 132);
  if (!triton_available()) return;
  CompiledGraph cg = c.compile(g);
  ASSERT_EQ(cg.num_kernels(), 2u);
  EXPECT_TRUE(contains(cg.kernels()[0].source, "for roffset in range(0, rnumel, RBLOCK):"))
      << cg.kernels()[0].source;
  EXPECT_TRUE(contains(cg.kernels()[0].source, "rnumel = 8192")) << cg.kernels()[0].source;
  std::vector<Tensor> in = {Tensor::randn({64, 16384}, DType::Float32, 21)};
  Tensor got = cg.run(in)[0], want = interpret(g, in)[0];
  std::vector<double> bound(64);
  for (int64_t i = 0; i < 64; ++i)
    bound[static_cast<size_t>(i)] = 2.0 * 16383 * std::ldexp(1.0, -24) * want.get_double(i);
  EXPECT_TRUE(test::within_bound(got, want, bound));
}

// A kernel whose bounds check fails under the interpreter: a Python AssertionError in the worker,
// reported as a run-time error naming the kernel; the CompiledGraph and the worker stay usable.
TEST(CudaTriton, PythonErrorIsACleanErrorNamingTheKernel) {
  REQUIRE_TRITON();
  Graph g;
  Node* x = g.placeholder("x", {5, 7});
  Node* idx = g.placeholder("idx", {4}, DType::Int64);
  g.output({g.call("index_select", {x, 0, idx})});
  CompiledGraph cg = interpreted().compile(g);
  Tensor xs = Tensor::randn({5, 7}, DType::Float32, 1);
  try {
    cg.run({xs, Tensor::from_vector<int64_t>({4}, {0, 9, 1, 2})});
    FAIL() << "an out-of-bounds index ran";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "kernel 'kernel0'")) << e.what();
    EXPECT_TRUE(contains(e.what(), "index out of bounds")) << e.what();
  }
  std::vector<Tensor> in = {xs, Tensor::from_vector<int64_t>({4}, {0, 4, 1, 2})};
  EXPECT_TRUE(test::bitwise_equal(cg.run(in)[0], interpret(g, in)[0]));
}

// A worker that dies mid-request (STAX_TRITON_TEST_CRASH makes it exit on that request) is an
// error naming the kernel and the exit status, never the end of this process; the next request
// starts a new worker, which loads the kernel's module again.
TEST(CudaTriton, CrashedWorkerIsACleanErrorAndRestarts) {
  REQUIRE_TRITON();
  Compiler compiler(triton_config(true));
  Graph g;
  Node* x = g.placeholder("x", {3, 4});
  g.output({g.call("exp", {x})});
  CompiledGraph cg = compiler.compile(g);
  std::vector<Tensor> in = {Tensor::randn({3, 4}, DType::Float32, 2)};
  std::vector<Tensor> want = interpret(g, in);
  EXPECT_TRUE(test::bitwise_equal(cg.run(in)[0], want[0]));
  // Workers started from now on exit (status 3) when asked to RUN.
  ::setenv("STAX_TRITON_TEST_CRASH", "RUN", 1);
  Compiler crashing(triton_config(true));
  CompiledGraph cg2 = crashing.compile(g);
  try {
    cg2.run(in);
    FAIL() << "the worker did not crash";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "the Triton worker died during RUN of kernel 'kernel0'"))
        << e.what();
    EXPECT_TRUE(contains(e.what(), "exited with status 3")) << e.what();
  }
  ::unsetenv("STAX_TRITON_TEST_CRASH");
  EXPECT_TRUE(test::bitwise_equal(cg2.run(in)[0], want[0]));  // a new worker, the module loaded again
}

// The interpreter workers reduce with numpy equivalents of the printer's combine functions (the
// generic path runs the combine in Python per element: minutes for the e2e set). Here the combine
// functions themselves (what the GPU runs) go through the interpreter's generic path
// (STAX_TRITON_GENERIC_REDUCE=1) on rows with NaNs, ties, infinities and a masked tail, in the
// persistent and the looped form: both paths equal the reference bit for bit where the order does
// not matter, and each other exactly for every output.
TEST(CudaTriton, CombineFunctionsAgreeWithTheNumpyPath) {
  REQUIRE_TRITON();
  Graph g;
  Node* x = g.placeholder("x", {3, 37});
  Node* y = g.placeholder("y", {2, 1500});
  g.output({g.call("amax", {x, std::vector<int64_t>{1}}), g.call("amin", {x, std::vector<int64_t>{1}}),
            g.call("argmax", {x, 1}), g.call("argmin", {x, 1}), g.call("any.dim", {x, 1}),
            g.call("sum.dim_IntList", {x, std::vector<int64_t>{-1}}),
            g.call("argmax", {y, 1}), g.call("amax", {y, std::vector<int64_t>{1}}),
            g.call("argmin", {y, 1})});
  Tensor xs = Tensor::randn({3, 37}, DType::Float32, 8);
  xs.set_double(5, NAN);          // row 0: a NaN wins max / min / argmax / argmin
  xs.set_double(40, 2.5);         // row 1: ties at 40 and 50, the first wins
  xs.set_double(50, 2.5);
  xs.set_double(80, INFINITY);    // row 2: +inf
  Tensor ys = Tensor::randn({2, 1500}, DType::Float32, 9);
  ys.set_double(1100, 9.0);       // row 0: ties across loop iterations (lanes 76 and 52)
  ys.set_double(1024 + 52, 9.0);
  ys.set_double(1500 + 3, NAN);   // row 1: a NaN in the first iteration, another later
  ys.set_double(1500 + 1400, NAN);
  std::vector<Tensor> in = {xs, ys};
  std::vector<Tensor> want = interpret(g, in);
  std::vector<Tensor> fast = interpreted().compile(g).run(in);
  ::setenv("STAX_TRITON_GENERIC_REDUCE", "1", 1);
  std::vector<Tensor> slow;
  {
    Compiler generic(triton_config(true));  // new workers, started with the variable
    slow = generic.compile(g).run(in);
  }
  ::unsetenv("STAX_TRITON_GENERIC_REDUCE");
  ASSERT_EQ(fast.size(), want.size());
  ASSERT_EQ(slow.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    if (i == 5) {  // the sum: tree orders
      EXPECT_TRUE(fast[i].allclose(want[i], 1e-5, 1e-5, true)) << i;
      EXPECT_TRUE(slow[i].allclose(want[i], 1e-5, 1e-5, true)) << i;
      continue;
    }
    EXPECT_TRUE(test::bitwise_equal(fast[i], want[i])) << "numpy path, output " << i;
    EXPECT_TRUE(test::bitwise_equal(slow[i], want[i])) << "combine functions, output " << i;
  }
}

// ABI 1.2 device memory under the interpreter: host memory, kernels run on it directly.
TEST(CudaTriton, DeviceMemoryRoundTripInterpreted) {
  REQUIRE_TRITON();
  OptionValue o = OptionValue::map();
  o.set("interpret", OptionValue::make_scalar("true"));
  PluginRegistry reg({STAX_PLUGIN_DIR});
  test::check_example11_on_device(*reg.create("cuda_triton", o));
}

TEST(CudaTriton, MissingPythonIsACleanError) {
  OptionValue o = OptionValue::map();
  o.set("interpret", OptionValue::make_scalar("true"));
  o.set("python", OptionValue::make_scalar("/nonexistent/python3"));
  Config c = test::cuda_config(o);
  c.devices["cuda"].backend = "cuda_triton";
  Compiler compiler(c);
  Graph g;
  Node* x = g.placeholder("x", {3});
  g.output({g.call("neg", {x})});
  try {
    compiler.compile(g);
    FAIL() << "compiled without a Python";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "cannot start the Triton worker '/nonexistent/python3'") ||
                contains(e.what(), "the Triton worker did not start"))
        << e.what();
    EXPECT_TRUE(contains(e.what(), "kernel 'kernel0'")) << e.what();
  }
}

}  // namespace
}  // namespace stax
