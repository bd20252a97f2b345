// The cuda_nvrtc plugin without a GPU: every kernel of the representative e2e set prints as CUDA C
// and compiles with NVRTC to an sm_90 cubin; the plugin's policy is the GPU's (§6.6 thresholds,
// Algorithm 6.1 splits); a failing compile reports NVRTC's log with the numbered source; running
// without a driver fails cleanly (never silently on the CPU).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdio>

#include "tests/support/cuda_e2e.h"

namespace stax {
namespace {

using test::contains;
using test::cuda_config;

Compiler& cuda_compiler() {
  static Compiler compiler(cuda_config());
  return compiler;
}

bool driver_present() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h) dlclose(h);
  return h != nullptr;
}

TEST(CudaNvrtc, EveryKernelOfTheE2eSetCompilesToAnSm90Cubin) {
  size_t kernels = 0;
  double ms = 0;
  for (const test::E2eCase& c : test::cuda_e2e_cases()) {
    SCOPED_TRACE(c.name);
    CompiledGraph cg = cuda_compiler().compile(c.graph);
    EXPECT_EQ(cg.backend_name(), "cuda_nvrtc");
    EXPECT_GT(cg.num_kernels(), 0u);
    for (const CompiledKernelInfo& k : cg.kernels()) {
      EXPECT_TRUE(contains(k.source, "extern \"C\" __global__ void __launch_bounds__(")) << k.source;
      ++kernels;
      ms += k.compile_ms;
    }
  }
  EXPECT_GT(kernels, 30u);
  std::printf("[ cuda_nvrtc ] %zu kernels, %.1f ms per kernel (print + NVRTC to sm_90 cubin)\n",
              kernels, ms / static_cast<double>(kernels));
}

// Pointwise kernels: grid-stride loops; short rows: the warp form (16 lanes per row, shuffles);
// long rows: one row per block, a fixed-tree combine in shared memory, thread 0 stores; bodies
// separated by barriers.
TEST(CudaNvrtc, LaunchForms) {
  Graph g;
  Node* x = g.placeholder("x", {64, 100});
  g.output({g.call("exp", {x})});
  CompiledGraph pw = cuda_compiler().compile(g);
  ASSERT_EQ(pw.num_kernels(), 1u);
  const std::string& s = pw.kernels()[0].source;
  EXPECT_TRUE(contains(s, "__launch_bounds__(256)")) << s;
  EXPECT_TRUE(contains(s, "stax_linear < 6400LL; stax_linear += (long long)blockDim.x * "
                          "gridDim.x)")) << s;
  EXPECT_TRUE(contains(s, "int i0 = (int)stax_linear;")) << s;  // one loop (Prop. 6.3)
  EXPECT_FALSE(contains(s, "__syncthreads")) << s;

  // Rows of 32 (softmax.stax): the warp form, 16 lanes per row, shuffles at 8, 4, 2, 1.
  CompiledGraph sm = cuda_compiler().compile(
      parse_graph_file(std::string(STAX_SOURCE_DIR) + "/examples/softmax.stax"));
  bool row_kernel = false;
  for (const CompiledKernelInfo& k : sm.kernels()) {
    if (!contains(k.source, "stax_row")) continue;
    row_kernel = true;
    EXPECT_TRUE(contains(k.source, "__launch_bounds__(256)")) << k.source;
    EXPECT_TRUE(contains(k.source, "const unsigned stax_lane = threadIdx.x % 16u;")) << k.source;
    EXPECT_TRUE(contains(k.source, "for (int stax_k = 0; stax_k < 2; ++stax_k) {")) << k.source;
    EXPECT_TRUE(contains(k.source, "long long stax_r = stax_lane + 16LL * stax_k;")) << k.source;
    for (const char* h : {"8u", "4u", "2u", "1u"})
      EXPECT_TRUE(contains(k.source, std::string(", ") + h + ");")) << h << k.source;
    EXPECT_TRUE(contains(k.source, "auto stax_o = stax_shfl_down16(")) << k.source;
    EXPECT_TRUE(contains(k.source, "if (stax_active && stax_lane == 0) {")) << k.source;
    // Persistent: x's row is read from global memory once, by the first body, into registers.
    EXPECT_TRUE(contains(k.source, "float stax_cache0[2];")) << k.source;
    EXPECT_TRUE(contains(k.source, "stax_cache0[stax_k] = tmp0;")) << k.source;
    EXPECT_TRUE(contains(k.source, "float tmp1 = stax_cache0[stax_k];")) << k.source;
    EXPECT_TRUE(contains(k.source, "__syncthreads();")) << k.source;
  }
  EXPECT_TRUE(row_kernel);

  // Rows longer than kWarpRowMax (1024): one row per block, the shared-memory tree.
  Graph lg;
  Node* lx = lg.placeholder("x", {8, 3000});
  lg.output({lg.call("sum.dim_IntList", {lx, std::vector<int64_t>{-1}})});
  CompiledGraph lr = cuda_compiler().compile(lg);
  ASSERT_EQ(lr.num_kernels(), 1u);
  const std::string& ls = lr.kernels()[0].source;
  EXPECT_TRUE(contains(ls, "for (unsigned stax_s = blockDim.x / 2; stax_s > 0; "
                           "stax_s /= 2) {")) << ls;
  EXPECT_TRUE(contains(ls, "if (threadIdx.x == 0) {")) << ls;
  EXPECT_FALSE(contains(ls, "auto stax_o = stax_shfl_down16(")) << ls;

  // A single reduction body over short rows: the warp form without the persistent cache.
  Graph sg;
  Node* sx = sg.placeholder("x", {8, 40});
  sg.output({sg.call("sum.dim_IntList", {sx, std::vector<int64_t>{-1}})});
  const std::string ss = cuda_compiler().compile(sg).kernels()[0].source;
  EXPECT_TRUE(contains(ss, "for (long long stax_r = stax_lane; stax_r < 40LL; stax_r += 16) {"))
      << ss;
  EXPECT_FALSE(contains(ss, "stax_cache")) << ss;
  EXPECT_TRUE(row_kernel);
}

// Seed Listing 6.3 (Example 6.1, x.t() + y targeting CUDA): the lowered read of x is
// i0 + 256*i1; the kernel's loops are then ordered for contiguous access (x's read becomes
// 256*i0 + i1) and the flat thread index decomposes into the two loop variables.
// An indirect index: the kernel takes the fault record after its buffers and checks with
// STAX_CHECK_INDEX (the index as loaded and the size, for the host's message); NVRTC compiles it
// (atomicCAS, __threadfence_system, __trap) to an sm_90 cubin. Run in cuda_emulated_test.
TEST(CudaNvrtc, IndexChecksRecordTheIndexAndTheSize) {
  Graph g;
  Node* x = g.placeholder("x", {5, 7});
  Node* idx = g.placeholder("idx", {4}, DType::Int64);
  g.output({g.call("index_select", {x, 0, idx})});
  CompiledGraph cg = cuda_compiler().compile(g);
  ASSERT_EQ(cg.num_kernels(), 1u);
  const std::string& s = cg.kernels()[0].source;
  EXPECT_TRUE(contains(s, ", unsigned long long* stax_fault) {")) << s;
  EXPECT_TRUE(contains(s, "STAX_CHECK_INDEX(")) << s;
  EXPECT_TRUE(contains(s, ", 5LL);")) << s;
}

TEST(CudaNvrtc, Listing63Golden) {
  Graph g;
  Node* x = g.placeholder("x", {512, 256});
  Node* y = g.placeholder("y", {256, 512});
  g.output({g.call("add.Tensor", {g.call("t", {x}), y})});
  CompiledGraph cg = cuda_compiler().compile(g);
  EXPECT_TRUE(contains(cg.loop_ir(), "i0 + 256*i1")) << cg.loop_ir();
  ASSERT_EQ(cg.num_kernels(), 1u);
  const std::string& s = cg.kernels()[0].source;
  EXPECT_TRUE(contains(s, "int i0 = (int)(stax_linear / 256LL);")) << s;
  EXPECT_TRUE(contains(s, "int i1 = (int)(stax_linear % 256LL);")) << s;
  EXPECT_TRUE(contains(s, "float tmp0 = in_ptr0[256*i0 + i1];")) << s;
  EXPECT_TRUE(contains(s, "out_ptr0[i0 + 512*i1] = tmp2;")) << s;
}

// Seed Example 6.2 / Listing 6.4 on this plugin's policy (no device: an H200's numbers):
// (x * x).sum(-1) over 64 x 16384 splits into k = 2 segments: two kernels, the first reading
// 8192-element segments with 16384*i0 + 8192*i1 merged into 8192*i0 over 128 rows (Prop. 6.3's
// 8192*x0), the second summing the 2 partials of each of the 64 rows.
TEST(CudaNvrtc, Example62SplitsIntoTwoKernels) {
  Graph g;
  Node* x = g.placeholder("x", {64, 16384});
  g.output({g.call("sum.dim_IntList", {g.call("mul.Tensor", {x, x}), std::vector<int64_t>{-1}})});
  CompiledGraph cg = cuda_compiler().compile(g);
  ASSERT_EQ(cg.num_kernels(), 2u) << cg.loop_ir();
  // Listing 6.4's first level as lowered, then merged into one loop of 128 rows (Prop. 6.3)
  EXPECT_TRUE(contains(cg.loop_ir(), "ops.load('x', 16384*i0 + 8192*i1 + r0_0)")) << cg.loop_ir();
  const std::string& first = cg.kernels()[0].source;
  EXPECT_TRUE(contains(first, "stax_row < 128LL;")) << first;
  EXPECT_TRUE(contains(first, "stax_r < 8192LL;")) << first;
  EXPECT_TRUE(contains(first, "float tmp0 = in_ptr0[8192*i0 + r0_0];")) << first;
  EXPECT_TRUE(contains(first, "__launch_bounds__(256)")) << first;
  const std::string& second = cg.kernels()[1].source;
  EXPECT_TRUE(contains(second, "stax_base < 64LL;")) << second;  // rows of 2: the warp form
  EXPECT_TRUE(contains(second, "float tmp0 = in_ptr0[2*i0 + r0_0];")) << second;
}

TEST(CudaNvrtc, PolicyIsTheGpus) {
  Plugin& p = cuda_compiler().registry().backend("cuda");
  EXPECT_EQ(p.kind(), sdk::DeviceKind::CUDA);
  sdk::RealizationThresholds t = cuda_compiler().registry().thresholds("cuda");
  EXPECT_EQ(t.op_limit, 30);
  EXPECT_EQ(t.max_accumulated_reads, 8);
  EXPECT_EQ(t.users_limit, 0);
  EXPECT_TRUE(t.transcendental_ops.empty());
}

TEST(CudaNvrtc, FailingCompileShowsNvrtcLogAndNumberedSource) {
  OptionValue o = OptionValue::map();
  o.set("test_inject_source", OptionValue::make_scalar("\nthis_is_not_cuda;\n"));
  Compiler bad(cuda_config(o));
  Graph g;
  Node* x = g.placeholder("x", {4});
  g.output({g.call("neg", {x})});
  try {
    bad.compile(g);
    FAIL() << "compiled invalid CUDA C";
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_TRUE(contains(what, "cuda_nvrtc: NVRTC failed to compile 'kernel0.cu' for sm_90"))
        << what;
    EXPECT_TRUE(contains(what, "error: this declaration has no storage class or type specifier"))
        << what;
    EXPECT_TRUE(contains(what, "| this_is_not_cuda;")) << what;
    EXPECT_TRUE(contains(what, "   1| // CUDA device math")) << what;
  }
}

TEST(CudaNvrtc, BadArchOptionIsRejected) {
  OptionValue o = OptionValue::map();
  o.set("arch", OptionValue::make_scalar("compute_90", "cuda.yaml:9:5"));
  Compiler bad(cuda_config(o));
  try {
    bad.registry().backend("cuda");
    FAIL() << "accepted arch compute_90";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "must be sm_<digits> (a real architecture, e.g. sm_90), got "
                                   "'compute_90'")) << e.what();
  }
}

// Without a driver, the device name says why from the first query of a fresh backend on (the
// reason was read before the device had been tried: "no device present ()" under clang, whose
// order of evaluating a `+` chain's operands differs from GCC's; found by the clang ASan build).
TEST(CudaNvrtc, DeviceNameSaysWhyThereIsNoDeviceFromTheFirstQuery) {
  if (driver_present()) GTEST_SKIP() << "a CUDA driver is present (cuda_gpu_test runs kernels)";
  Compiler fresh(cuda_config());
  const std::string name = fresh.registry().backend("cuda").properties().device_name;
  EXPECT_TRUE(contains(name, "no device present (no CUDA driver (libcuda.so.1 not found)); "
                             "compiling for sm_90"))
      << name;
}

// Without a driver, compiling works and running fails with the clean message.
TEST(CudaNvrtc, RunWithoutDriverFailsCleanly) {
  if (driver_present()) GTEST_SKIP() << "a CUDA driver is present (cuda_gpu_test runs kernels)";
  Graph g;
  Node* x = g.placeholder("x", {4});
  g.output({g.call("neg", {x})});
  CompiledGraph cg = cuda_compiler().compile(g);
  try {
    cg.run({Tensor::randn({4}, DType::Float32, 1)});
    FAIL() << "ran without a driver";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "cuda_nvrtc: no CUDA driver (libcuda.so.1 not found)"))
        << e.what();
  }
  EXPECT_TRUE(contains(cuda_compiler().registry().backend("cuda").properties().device_name,
                       "no device present (no CUDA driver (libcuda.so.1 not found)); compiling "
                       "for sm_90"));
}

}  // namespace
}  // namespace stax
