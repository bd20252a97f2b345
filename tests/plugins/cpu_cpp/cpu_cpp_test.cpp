// The cpu_cpp backend plugin (plugins/cpu_cpp) through the Compiler: Example 1.1 end to end, the
// golden C++ source of its kernel, the plugin's options / thresholds / extern kernels, and every
// way the compile path can fail cleanly (a kernel that does not compile, a missing plugin, bad
// configuration, out-of-bounds indirect indices, wrong inputs).
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <thread>

#include <random>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/backend/plugin.h"
#include "core/backend/plugin_registry.h"
#include "core/codegen/kernel_codegen.h"
#include "core/graph/parser.h"
#include "core/driver/compiler.h"
#include "core/interpreter/interpreter.h"
#include "core/lowering/graph_lowering.h"
#include "tests/support/compiled_check.h"

namespace stax {
namespace {

using test::bitwise_equal;
using test::contains;
using test::cpu_compiler;
using test::cpu_config;

Graph example_1_1(int64_t rows = 64, int64_t cols = 128) {
  Graph g;
  Node* x = g.placeholder("primals_1", {rows, cols});
  Node* y = g.placeholder("primals_2", {rows, cols});
  Node* add = g.call("add.Tensor", {x, y});
  Node* relu = g.call("relu", {add});
  Node* mul = g.call("mul.Scalar", {relu, 2});
  Node* sum = g.call("sum.dim_IntList", {mul, std::vector<int64_t>{-1}});
  g.output({sum});
  return g;
}

// The error text of f(), which must throw a stax::Error.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no stax::Error thrown";
  return "";
}

OptionValue options(std::vector<std::pair<std::string, std::string>> kv) {
  OptionValue o = OptionValue::map();
  for (auto& [k, v] : kv) o.set(k, OptionValue::make_scalar(v, "test.yaml:1:1"));
  return o;
}

// ---- Example 1.1 -----------------------------------------------------------------------------

TEST(CpuCpp, Example11IsOneKernelEqualToTheInterpreter) {
  Graph g = example_1_1();
  CompiledGraph cg = cpu_compiler().compile(g);
  ASSERT_EQ(cg.lowered().buffers.size(), 1u);
  EXPECT_EQ(cg.lowered().buffers[0]->kind(), IRKind::ComputedBuffer);
  EXPECT_EQ(cg.num_kernels(), 1u);
  EXPECT_EQ(cg.num_externs(), 0u);
  EXPECT_EQ(cg.num_fallbacks(), 0u);
  EXPECT_EQ(cg.backend_name(), "cpu_cpp");
  EXPECT_EQ(cg.kernels()[0].name, "kernel0");
  EXPECT_EQ(cg.kernels()[0].buffer, "buf2");
  std::vector<Tensor> in = test::random_inputs(g, 11);
  std::vector<Tensor> got = cg.run(in);
  std::vector<Tensor> want = test::reference(g, in);
  ASSERT_EQ(got.size(), 1u);
  // The kernel sums each row sequentially in index order, as the interpreter does, so the
  // result is not merely within the §6.5 bound (n-1)·u·Σ|a_i| but bit for bit the same.
  EXPECT_TRUE(bitwise_equal(got[0], want[0]));
  // The §6.5 bound against an exact (double) sum of the same float summands holds as well.
  const float* a = in[0].data<float>();
  const float* b = in[1].data<float>();
  for (int64_t r = 0; r < 64; ++r) {
    double exact = 0, mag = 0;
    for (int64_t c = 0; c < 128; ++c) {
      float v = std::max(0.0f, a[r * 128 + c] + b[r * 128 + c]) * 2.0f;
      exact += v;
      mag += std::fabs(v);
    }
    double bound = 127 * test::unit_roundoff(DType::Float32) * mag;
    EXPECT_LE(std::fabs(got[0].get_double(r) - exact), bound * (1 + 1e-6)) << "row " << r;
  }
}

TEST(CpuCpp, Example11FromTheExampleFile) {
  Graph g = parse_graph_file(std::string(STAX_SOURCE_DIR) + "/examples/example_1_1.stax");
  CompiledGraph cg = cpu_compiler().compile(g);
  EXPECT_EQ(cg.num_kernels(), 1u);
  std::vector<Tensor> in = test::random_inputs(g, 3);
  EXPECT_TRUE(bitwise_equal(cg.run(in)[0], test::reference(g, in)[0]));
}

// The golden kernel source of Example 1.1 (the part after the prelude) with strict_order: the
// sequential order, 8 rows' chains side by side (the fast strict order: independent chains, each
// row summed exactly as the interpreter sums it; the empty asm keeps the SLP vectoriser from
// packing them into gathers). Stable text: a change here is a change of the generated code and
// must be deliberate.
const char* kExample11StrictKernel =
    R"(static inline __attribute__((always_inline)) void kernel0_body(
    const float* __restrict in_ptr0,
    const float* __restrict in_ptr1,
    float* __restrict out_ptr0,
    long long stax_begin, long long stax_end, stax_fault* stax_error) {
  (void)stax_error;
  // 8 rows' sequential chains side by side along i0 at a time
  int i0 = (int)stax_begin;
  for (; i0 <= (int)stax_end - 8; i0 += 8) {
    // buf2
    float acc0[8];
    for (int stax_lane = 0; stax_lane < 8; ++stax_lane) {
      acc0[stax_lane] = 0.0f;
    }
    for (int r0_0 = 0; r0_0 < 128; ++r0_0) {
      #pragma clang loop unroll(full) vectorize(disable)
      for (int stax_lane = 0; stax_lane < 8; ++stax_lane) {
        float tmp0 = in_ptr0[128*(i0 + stax_lane) + r0_0];
        float tmp1 = in_ptr1[128*(i0 + stax_lane) + r0_0];
        float tmp2 = stax_scalar::add(tmp0, tmp1);
        float tmp3 = stax_scalar::relu(tmp2);
        float tmp4 = 2.0f;
        float tmp5 = stax_scalar::mul(tmp3, tmp4);
        acc0[stax_lane] = stax_scalar::add(acc0[stax_lane], tmp5);
        __asm__("" : "+x"(acc0[stax_lane]));
      }
    }
    for (int stax_lane = 0; stax_lane < 8; ++stax_lane) {
      out_ptr0[(i0 + stax_lane)] = acc0[stax_lane];
    }
  }
  for (; i0 < (int)stax_end; ++i0) {
    // buf2
    float acc1 = 0.0f;
    for (int r0_0 = 0; r0_0 < 128; ++r0_0) {
      float tmp6 = in_ptr0[128*i0 + r0_0];
      float tmp7 = in_ptr1[128*i0 + r0_0];
      float tmp8 = stax_scalar::add(tmp6, tmp7);
      float tmp9 = stax_scalar::relu(tmp8);
      float tmp10 = 2.0f;
      float tmp11 = stax_scalar::mul(tmp9, tmp10);
      acc1 = stax_scalar::add(acc1, tmp11);
    }
    out_ptr0[i0] = acc1;
  }
}
extern "C" void kernel0(void* const* stax_buffers, long long stax_begin, long long stax_end, stax_fault* stax_error) {
  kernel0_body((const float*)stax_buffers[0], (const float*)stax_buffers[1], (float*)stax_buffers[2], stax_begin, stax_end, stax_error);
}
)";

// Example 1.1 with strict_order and row tiles: 16 rows in the 16 lanes, x and y loaded as 16 x 16
// tiles, transposed, relu((x + y)) * 2 added column by column; the rows left over in the chains.
const char* kExample11StrictTiledKernel = 
    R"(static inline __attribute__((always_inline)) void kernel0_body(
    const float* __restrict in_ptr0,
    const float* __restrict in_ptr1,
    float* __restrict out_ptr0,
    long long stax_begin, long long stax_end, stax_fault* stax_error) {
  (void)stax_error;
  int i0 = (int)stax_begin;
  // 16 rows at a time in vector lanes (row tiles)
  for (; i0 <= (int)stax_end - 16; i0 += 16) {
    // buf2
    // 16 rows from i0 in 16 lanes, lane l row l's sequential accumulator; 16 x 16 tiles transposed
    stax_vf vacc0 = (stax_vf)(0.0f);
    {
      int r0_0 = 0;
      for (; r0_0 <= 128 - 16; r0_0 += 16) {
        stax_vf stax_tile0[16];
        stax_vec::load_rows(stax_tile0, in_ptr0 + (128*i0 + r0_0), 128LL);
        stax_vec::transpose16(stax_tile0);
        stax_vf stax_tile1[16];
        stax_vec::load_rows(stax_tile1, in_ptr1 + (128*i0 + r0_0), 128LL);
        stax_vec::transpose16(stax_tile1);
        #pragma clang loop unroll(full) vectorize(disable)
        for (int stax_j = 0; stax_j < 16; ++stax_j) {
          stax_vf vtmp0 = stax_tile0[stax_j];
          stax_vf vtmp1 = stax_tile1[stax_j];
          stax_vf vtmp2 = stax_vec::add(vtmp0, vtmp1);
          stax_vf vtmp3 = stax_vec::relu(vtmp2);
          stax_vf vtmp4 = (stax_vf)(2.0f);
          stax_vf vtmp5 = stax_vec::mul(vtmp3, vtmp4);
          vacc0 = stax_vec::add(vacc0, vtmp5);
        }
      }
    }
    stax_vec::store(out_ptr0 + (i0), vacc0);
  }
  // 8 rows' sequential chains side by side along i0 at a time
  for (; i0 <= (int)stax_end - 8; i0 += 8) {
    // buf2
    float acc0[8];
    for (int stax_lane = 0; stax_lane < 8; ++stax_lane) {
      acc0[stax_lane] = 0.0f;
    }
    for (int r0_0 = 0; r0_0 < 128; ++r0_0) {
      #pragma clang loop unroll(full) vectorize(disable)
      for (int stax_lane = 0; stax_lane < 8; ++stax_lane) {
        float tmp0 = in_ptr0[128*(i0 + stax_lane) + r0_0];
        float tmp1 = in_ptr1[128*(i0 + stax_lane) + r0_0];
        float tmp2 = stax_scalar::add(tmp0, tmp1);
        float tmp3 = stax_scalar::relu(tmp2);
        float tmp4 = 2.0f;
        float tmp5 = stax_scalar::mul(tmp3, tmp4);
        acc0[stax_lane] = stax_scalar::add(acc0[stax_lane], tmp5);
        __asm__("" : "+x"(acc0[stax_lane]));
      }
    }
    for (int stax_lane = 0; stax_lane < 8; ++stax_lane) {
      out_ptr0[(i0 + stax_lane)] = acc0[stax_lane];
    }
  }
  for (; i0 < (int)stax_end; ++i0) {
    // buf2
    float acc1 = 0.0f;
    for (int r0_0 = 0; r0_0 < 128; ++r0_0) {
      float tmp6 = in_ptr0[128*i0 + r0_0];
      float tmp7 = in_ptr1[128*i0 + r0_0];
      float tmp8 = stax_scalar::add(tmp6, tmp7);
      float tmp9 = stax_scalar::relu(tmp8);
      float tmp10 = 2.0f;
      float tmp11 = stax_scalar::mul(tmp9, tmp10);
      acc1 = stax_scalar::add(acc1, tmp11);
    }
    out_ptr0[i0] = acc1;
  }
}
extern "C" void kernel0(void* const* stax_buffers, long long stax_begin, long long stax_end, stax_fault* stax_error) {
  kernel0_body((const float*)stax_buffers[0], (const float*)stax_buffers[1], (float*)stax_buffers[2], stax_begin, stax_end, stax_error);
}
)";

// The same kernel in the default segmented order (stax/sdk/reduction_order.hpp): 16 chains that
// Clang vectorises, then the fixed tree.
const char* kExample11Kernel =
    R"(static inline __attribute__((always_inline)) void kernel0_body(
    const float* __restrict in_ptr0,
    const float* __restrict in_ptr1,
    float* __restrict out_ptr0,
    long long stax_begin, long long stax_end, stax_fault* stax_error) {
  (void)stax_error;
  for (int i0 = (int)stax_begin; i0 < (int)stax_end; ++i0) {
    // buf2
    float acc0[16];
    for (int stax_seg = 0; stax_seg < 16; ++stax_seg) {
      acc0[stax_seg] = 0.0f;
    }
    {
      int r0_0 = 0;
      for (; r0_0 <= 128 - 16; r0_0 += 16) {
        #pragma clang loop unroll(disable) vectorize(enable) vectorize_width(16)
        for (int stax_seg = 0; stax_seg < 16; ++stax_seg) {
          float tmp0 = in_ptr0[128*i0 + (r0_0 + stax_seg)];
          float tmp1 = in_ptr1[128*i0 + (r0_0 + stax_seg)];
          float tmp2 = stax_scalar::add(tmp0, tmp1);
          float tmp3 = stax_scalar::relu(tmp2);
          float tmp4 = 2.0f;
          float tmp5 = stax_scalar::mul(tmp3, tmp4);
          acc0[stax_seg] = stax_scalar::add(acc0[stax_seg], tmp5);
        }
      }
    }
    for (int stax_seg = 0; stax_seg < 8; ++stax_seg) {
      acc0[stax_seg] = stax_scalar::add(acc0[stax_seg], acc0[stax_seg + 8]);
    }
    for (int stax_seg = 0; stax_seg < 4; ++stax_seg) {
      acc0[stax_seg] = stax_scalar::add(acc0[stax_seg], acc0[stax_seg + 4]);
    }
    for (int stax_seg = 0; stax_seg < 2; ++stax_seg) {
      acc0[stax_seg] = stax_scalar::add(acc0[stax_seg], acc0[stax_seg + 2]);
    }
    for (int stax_seg = 0; stax_seg < 1; ++stax_seg) {
      acc0[stax_seg] = stax_scalar::add(acc0[stax_seg], acc0[stax_seg + 1]);
    }
    out_ptr0[i0] = acc0[0];
  }
}
extern "C" void kernel0(void* const* stax_buffers, long long stax_begin, long long stax_end, stax_fault* stax_error) {
  kernel0_body((const float*)stax_buffers[0], (const float*)stax_buffers[1], (float*)stax_buffers[2], stax_begin, stax_end, stax_error);
}
)";

TEST(CpuCpp, GoldenKernelSourceOfExample11) {
  CompiledGraph cg = cpu_compiler().compile(example_1_1());
  const std::string& src = cg.kernels().at(0).source;
  const std::string marker = "// ---- stax kernel ----\n";
  size_t at = src.find(marker);
  ASSERT_NE(at, std::string::npos) << src;
  EXPECT_EQ(src.substr(at + marker.size()), kExample11Kernel);
  // strict_order with `row_tiles: false`: the 8 rows' chains golden above.
  static Compiler chains_compiler(test::cpu_config([] {
    OptionValue o = test::cpu_options(test::Order::Strict);
    o.set("row_tiles", OptionValue::make_scalar("false"));
    return o;
  }()));
  const std::string chains = chains_compiler.compile(example_1_1()).kernels().at(0).source;
  EXPECT_EQ(chains.substr(chains.find(marker) + marker.size()), kExample11StrictKernel);
  // strict_order by default (row tiles where the machine has AVX-512, DECISIONS 35): blocks of
  // 16 rows in vector lanes first, then the same chains; the vector prelude comes before.
  const std::string strict =
      cpu_compiler(test::Order::Strict).compile(example_1_1()).kernels().at(0).source;
  const std::string fn = strict.substr(strict.find("static inline __attribute__((always_inline)) void kernel0_body("));
  if (std::getenv("STAX_TEST_PRINT_SOURCE")) std::cout << fn;
  if (contains(strict, "transpose16(")) {
    EXPECT_EQ(fn, kExample11StrictTiledKernel);
  } else {
    EXPECT_EQ(fn, kExample11StrictKernel);
  }
  // The prelude is scalar_ops.hpp verbatim (no system header anywhere in the kernel).
  std::ifstream f(std::string(STAX_SOURCE_DIR) + "/sdk/include/stax/sdk/scalar_ops.hpp");
  std::string scalar_ops((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(scalar_ops.empty());
  EXPECT_TRUE(contains(src.substr(0, at), scalar_ops));
  EXPECT_FALSE(contains(src, "\n#include")) << "kernels must not include system headers";
}

// ---- the plugin's queries ----------------------------------------------------------------------

TEST(CpuCpp, ThresholdsSplitPolicyExternKernelsProperties) {
  Plugin& p = cpu_compiler().registry().backend("cpu");
  EXPECT_EQ(p.name(), "cpu_cpp");
  EXPECT_EQ(p.kind(), sdk::DeviceKind::CPU);
  EXPECT_GT(p.properties().vector_bytes, 0);
  // threads: the machine's physical cores by default
  EXPECT_GE(p.properties().cores, 1);
  EXPECT_LE(p.properties().cores, static_cast<int32_t>(std::thread::hardware_concurrency()));
  sdk::RealizationThresholds t = p.thresholds(), seed = sdk::RealizationThresholds::cpu();
  EXPECT_EQ(t.op_limit, 50);
  EXPECT_EQ(t.users_limit, seed.users_limit);
  EXPECT_EQ(t.users_near_op_limit, seed.users_near_op_limit);
  EXPECT_EQ(t.max_reads, 4);
  EXPECT_EQ(t.max_accumulated_reads, 12);
  EXPECT_EQ(t.transcendental_ops, seed.transcendental_ops);
  // the segmented order's fixed blocks (reduction_order.hpp); strict_order never splits
  EXPECT_EQ(p.split_reduction(1 << 20, 4, sdk::ReductionType::Sum), 64);
  EXPECT_EQ(p.split_reduction(1 << 13, 4, sdk::ReductionType::Sum), 1);
  EXPECT_EQ(cpu_compiler(test::Order::Strict)
                .registry()
                .backend("cpu")
                .split_reduction(1 << 20, 4, sdk::ReductionType::Sum),
            1);
  EXPECT_EQ(p.extern_kernels(), (std::vector<std::string>{"mm", "bmm", "addmm", "matmul", "convolution",
                                                          "flash_attention", "flash_attention_backward",
                                                          "flash_attention_dropout",
                                                          "flash_attention_dropout_backward",
                                                          "scatter_add", "index_put"}));
}

TEST(CpuCpp, ConfigRealizationOverridesReachTheLowering) {
  // op_limit 1: a two-user value with a couple of ops is realized instead of inlined.
  Graph g;
  Node* x = g.placeholder("x", {8, 8});
  Node* y = g.call("mul.Scalar", {g.call("add.Scalar", {x, 1}), 3});
  g.output({g.call("relu", {y}), g.call("neg", {y})});
  EXPECT_EQ(cpu_compiler().compile(g).lowered().buffers.size(), 2u);
  Config c = cpu_config();
  c.realization.op_limit = 1;
  Compiler strict(c);
  CompiledGraph cg = strict.compile(g);
  EXPECT_EQ(cg.lowered().buffers.size(), 3u);
  EXPECT_EQ(cg.num_kernels(), 1u);  // y and its two users: one fused kernel
  std::vector<Tensor> in = test::random_inputs(g, 2);
  std::vector<Tensor> got = cg.run(in), want = test::reference(g, in);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(bitwise_equal(got[i], want[i]));
}

// ---- options -----------------------------------------------------------------------------------

TEST(CpuCpp, ThreadsGiveTheSameBits) {
  Compiler two(cpu_config(options({{"threads", "2"}})));
  EXPECT_EQ(two.registry().backend("cpu").properties().cores, 2);
  Graph g = example_1_1(1024, 256);  // above the parallel cut-off
  Node* x = g.placeholders()[0];
  Node* big = g.call("exp", {g.call("mul.Scalar", {x, 0.01})});
  g.output({g.outputs()[0], big});
  std::vector<Tensor> in = test::random_inputs(g, 5);
  std::vector<Tensor> got = two.compile(g).run(in), want = test::reference(g, in);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(bitwise_equal(got[i], want[i])) << i;
}

TEST(CpuCpp, OptLevelZeroAndBaselineCpu) {
  Compiler plain(cpu_config(options({{"opt_level", "0"}, {"native_cpu", "false"}})));
  Graph g = example_1_1();
  std::vector<Tensor> in = test::random_inputs(g, 6);
  EXPECT_TRUE(bitwise_equal(plain.compile(g).run(in)[0], test::reference(g, in)[0]));
}

TEST(CpuCpp, DumpSourcePrintsEveryKernel) {
  Compiler dumping(cpu_config(options({{"dump_source", "true"}})));
  testing::internal::CaptureStderr();
  dumping.compile(example_1_1());
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(contains(err, "// cpu_cpp kernel 'kernel0'")) << err;
  EXPECT_TRUE(contains(err, "acc0[stax_seg] = stax_scalar::add(acc0[stax_seg], tmp5);")) << err;
}

// ---- must-fail ----------------------------------------------------------------------------------

TEST(CpuCppErrors, AKernelThatDoesNotCompileReportsSourceAndDiagnostics) {
  Compiler broken(
      cpu_config(options({{"test_inject_source", "\nint broken = undeclared_name;\n"}})));
  std::string what;
  try {
    broken.compile(example_1_1());
    ADD_FAILURE() << "no error";
  } catch (const PluginCallError& e) {
    what = e.what();
    EXPECT_EQ(e.stage(), "plugin");
    EXPECT_EQ(e.code(), STAX_ERROR_COMPILE);
  }
  EXPECT_TRUE(contains(what, "compile of kernel 'kernel0' failed")) << what;
  EXPECT_TRUE(contains(what, "clang failed to compile kernel 'kernel0'")) << what;
  // Clang's diagnostic, with file:line:col of the generated source ...
  EXPECT_TRUE(contains(what, "kernel0.cpp:")) << what;
  EXPECT_TRUE(contains(what, "error: use of undeclared identifier 'undeclared_name'")) << what;
  // ... and the numbered source itself.
  EXPECT_TRUE(contains(what, " | extern \"C\" void kernel0(void* const* stax_buffers")) << what;
  EXPECT_TRUE(contains(what, " | int broken = undeclared_name;")) << what;
}

// A missing plugin fails when the Compiler is created, not at the first compile.
TEST(CpuCppErrors, MissingPlugin) {
  Config c = cpu_config();
  c.devices["cpu"].backend = "no_such_backend";
  std::string what = error_of([&] { Compiler compiler(c); });
  EXPECT_TRUE(contains(what, "device 'cpu' is configured with backend 'no_such_backend'")) << what;
  EXPECT_TRUE(contains(what, "plugin 'no_such_backend' not found")) << what;
  EXPECT_TRUE(contains(what, "libstax_no_such_backend.so")) << what;
  EXPECT_TRUE(contains(what, STAX_PLUGIN_DIR)) << what;
}

TEST(CpuCppErrors, NoBackendForTheGraphsDevice) {
  Config c = cpu_config();
  c.devices.erase("cpu");
  Compiler compiler(c);
  std::string what = error_of([&] { compiler.compile(example_1_1()); });
  EXPECT_TRUE(contains(what, "no backend configured for device 'cpu'")) << what;
}

TEST(CpuCppErrors, BadOptionsNameTheYamlLocation) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("stax_cpu_cpp_test_" + std::to_string(getpid()));
  fs::create_directories(dir);
  auto compile_with = [&](const std::string& options_yaml) {
    std::string yaml = "plugin_path: [" + std::string(STAX_PLUGIN_DIR) +
                       "]\ndevices:\n  cpu:\n    backend: cpu_cpp\n    options:\n" + options_yaml;
    Compiler compiler(Config::parse(yaml, "bad.yaml", dir));
    return error_of([&] { compiler.compile(example_1_1()); });
  };
  std::string what = compile_with("      opt_level: 3\n      frobnicate: 1\n");
  EXPECT_TRUE(contains(what, "bad.yaml:7:19: unknown option 'frobnicate' for backend 'cpu_cpp'"))
      << what;
  EXPECT_TRUE(contains(what, "known options: opt_level, threads")) << what;
  what = compile_with("      opt_level: 9\n");
  EXPECT_TRUE(contains(what, "bad.yaml:6:18: option 'opt_level' of backend 'cpu_cpp' must be 0..3"))
      << what;
  what = compile_with("      threads: many\n");
  EXPECT_TRUE(contains(what, "option 'threads' of backend 'cpu_cpp' must be an integer")) << what;
  what = compile_with("      strict_order: perhaps\n");
  EXPECT_TRUE(contains(what, "must be true or false, got 'perhaps'")) << what;
  fs::remove_all(dir);
}

TEST(CpuCppErrors, IndexOutOfBoundsIsARuntimeError) {
  Graph g;
  Node* x = g.placeholder("x", {5, 3});
  Node* idx = g.placeholder("idx", {2}, DType::Int64);
  g.output({g.call("index.Tensor", {x, Arg(Arg::List{Arg(idx)})})});
  CompiledGraph cg = cpu_compiler().compile(g);
  Tensor xs = Tensor::randn({5, 3});
  EXPECT_TRUE(bitwise_equal(cg.run({xs, Tensor::from_vector<int64_t>({2}, {4, -5})})[0],
                            test::reference(g, {xs, Tensor::from_vector<int64_t>({2}, {4, -5})})[0]));
  std::string what = error_of([&] { cg.run({xs, Tensor::from_vector<int64_t>({2}, {1, 7})}); });
  EXPECT_TRUE(contains(what, "index out of bounds")) << what;
  EXPECT_TRUE(contains(what, "index out of bounds: index 7 for a dimension of size 5")) << what;
  // Issue 12: the error names the graph node, and the compiled graph stays usable.
  Node* index_node = g.outputs()[0];
  EXPECT_EQ(what.rfind("%" + index_node->name() + ": error: kernel '", 0), 0u) << what;
  Tensor ok = Tensor::from_vector<int64_t>({2}, {2, 0});
  EXPECT_TRUE(bitwise_equal(cg.run({xs, ok})[0], interpret(g, {xs, ok})[0]));
}

// gather and index_select take no negative indices in eager mode; the compiled kernel must refuse
// exactly what the interpreter refuses (index.Tensor, above, wraps them in both).
TEST(CpuCppErrors, NegativeGatherIndexIsRejectedLikeTheInterpreter) {
  Graph g;
  Node* x = g.placeholder("x", {4, 3});
  Node* idx = g.placeholder("idx", {4, 3}, DType::Int64);
  g.output({g.call("gather", {x, 0, idx})});
  CompiledGraph cg = cpu_compiler().compile(g);
  Tensor xs = Tensor::randn({4, 3});
  Tensor ok = Tensor::from_vector<int64_t>({4, 3}, {0, 1, 2, 3, 3, 2, 1, 0, 0, 0, 3, 3});
  EXPECT_TRUE(bitwise_equal(cg.run({xs, ok})[0], test::reference(g, {xs, ok})[0]));
  Tensor neg = Tensor::from_vector<int64_t>({4, 3}, {0, 1, 2, 3, -1, 2, 1, 0, 0, 0, 3, 3});
  EXPECT_FALSE(error_of([&] { test::reference(g, {xs, neg}); }).empty());
  std::string what = error_of([&] { cg.run({xs, neg}); });
  EXPECT_TRUE(contains(what, "index out of bounds")) << what;
}

TEST(CpuCppErrors, WrongInputs) {
  CompiledGraph cg = cpu_compiler().compile(example_1_1());
  EXPECT_TRUE(contains(error_of([&] {
                         cg.run({Tensor::randn({64, 128})});
                       }),
                       "2 placeholders but 1 inputs"));
  std::string what = error_of([&] {
    cg.run({Tensor::randn({64, 128}), Tensor::randn({64, 127})});
  });
  EXPECT_TRUE(contains(what, "%primals_2: error: input has float32(64, 127)")) << what;
  what = error_of([&] {
    cg.run({Tensor::randn({64, 128}), Tensor::randn({64, 128}, DType::Float64)});
  });
  EXPECT_TRUE(contains(what, "expects float32(64, 128)")) << what;
}

// ---- code generation details
// ---------------------------------------------------------------------

TEST(CpuCpp, KernelDescriptionsCrossTheBoundaryNormalized) {
  // (4, 8, 16) contiguous + 1: the three loops merge into one of 512 (Prop. 6.3).
  Graph g;
  Node* x = g.placeholder("x", {4, 8, 16});
  g.output({g.call("add.Scalar", {x, 1})});
  CompiledGraph cg = cpu_compiler().compile(g);
  std::vector<KernelPlan> plans = plan_kernels(cg.schedule(), cg.lowered());
  ASSERT_EQ(plans.size(), 1u);
  const StaxKernelDesc& k = *plans[0].desc.get();
  ASSERT_EQ(k.num_ranges, 1u);
  EXPECT_EQ(k.ranges[0], 512);
  EXPECT_EQ(k.num_buffers, 2u);
  EXPECT_EQ(std::string(k.buffers[0]->name), "x");
  EXPECT_EQ(k.buffers[0]->role, STAX_BUFFER_INPUT);
  EXPECT_EQ(k.buffers[1]->role, STAX_BUFFER_OUTPUT);
  EXPECT_EQ(k.index_bits, 32);  // 512 elements: 32-bit index arithmetic
  EXPECT_TRUE(contains(cg.kernels()[0].source, "for (int i0 = (int)stax_begin; i0 < (int)stax_end;"));
  EXPECT_TRUE(contains(cg.kernels()[0].source, "in_ptr0[i0]"));
  // Without normalization the loops stay as lowered.
  CodegenOptions raw;
  raw.normalize_loops = false;
  EXPECT_EQ(plan_kernels(cg.schedule(), cg.lowered(), raw)[0].desc.get()->num_ranges, 3u);
}

TEST(CpuCpp, HalfStorageGoesThroughTheBitHelpers) {
  Graph g;
  Node* x = g.placeholder("x", {16}, DType::Float16);
  Node* y = g.placeholder("y", {16}, DType::BFloat16);
  g.output({g.call("mul.Tensor", {x, g.call("to.dtype", {y, DType::Float16})})});
  CompiledGraph cg = cpu_compiler().compile(g);
  const std::string& src = cg.kernels()[0].source;
  EXPECT_TRUE(contains(src, "const stax_half* __restrict in_ptr0")) << src;
  EXPECT_TRUE(contains(src, "const stax_bf16* __restrict in_ptr1")) << src;
  EXPECT_TRUE(contains(src, "stax_scalar::convert<stax_half>(")) << src;
  std::vector<Tensor> in = test::random_inputs(g, 9);
  EXPECT_TRUE(bitwise_equal(cg.run(in)[0], test::reference(g, in)[0]));
}

TEST(CpuCpp, SummaryAndDumps) {
  CompiledGraph cg = cpu_compiler().compile(example_1_1());
  std::string s = cg.summary();
  EXPECT_TRUE(contains(s, "kernels: 1 (kernel0 ")) << s;
  EXPECT_TRUE(contains(s, "extern kernels: 0 | fallbacks: 0 | backend cpu_cpp")) << s;
  EXPECT_GT(cg.kernels()[0].compile_ms, 0.0);
  EXPECT_TRUE(contains(cg.loop_ir(), "ComputedBuffer(name='buf2'")) << cg.loop_ir();
  EXPECT_TRUE(contains(cg.loop_ir(), "reduction_type=sum")) << cg.loop_ir();
}

// With a constant exponent LLVM rewrites pow (x*x, 1/x, |sqrt x|); scalar_ops.hpp takes the same
// forms at run time, so the interpreter and the compiled kernel agree bit for bit where glibc's
// pow would differ (about one input in 1,000 for 0.5 and 2).
TEST(CpuCpp, PowWithConstantExponentIsBitIdentical) {
  for (DType dt : {DType::Float32, DType::Float64}) {
    for (double e : {0.5, 2.0, -1.0, 3.0, -0.5}) {
      Graph g;
      Node* x = g.placeholder("x", {8192}, dt);
      g.output({g.call("pow.Tensor_Scalar", {x, e})});
      CompiledGraph cg = cpu_compiler().compile(g);
      std::mt19937 rng(11);
      std::uniform_real_distribution<double> u(-50.0, 50.0);
      std::vector<double> v(8192);
      for (double& d : v) d = u(rng);
      Tensor scaled = Tensor::from_vector<double>({8192}, v, dt);
      EXPECT_TRUE(bitwise_equal(cg.run({scaled})[0], test::reference(g, {scaled})[0]))
          << dtype_name(dt) << " exponent " << e;
    }
  }
}

// The summary names each extern and fallback step by its op (issue: fallbacks are listed).
TEST(CpuCpp, SummaryListsExternAndFallbackOps) {
  Graph g;
  Node* a = g.placeholder("a", {8, 16});
  Node* b = g.placeholder("b", {16, 4});
  Node* m = g.call("mm", {a, b});
  Node* v = g.call("cumsum", {m, 1});  // no lowering rule: the interpreter's kernel
  g.output({v});
  CompiledGraph cg = cpu_compiler().compile(g);
  std::string s = cg.summary();
  EXPECT_TRUE(contains(s, "extern kernels: 1 (buf2 = mm)")) << s;
  EXPECT_TRUE(contains(s, "fallbacks: 1 (buf3 = cumsum")) << s;
  std::vector<Tensor> in = test::random_inputs(g, 3);
  EXPECT_TRUE(bitwise_equal(cg.run(in)[0], test::reference(g, in)[0]));
}

}  // namespace
}  // namespace stax
