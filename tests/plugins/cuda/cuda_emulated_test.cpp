// cuda_nvrtc's host emulation (`emulate: true`): the generated CUDA C compiled for the CPU and run
// over the whole grid with every GPU thread a fiber, against the reference interpreter:
//   * bit for bit: pointwise kernels (every dtype), indexing, max/min/argmax/argmin/any/all and
//     integer reductions (their result does not depend on the combine order);
//   * float sums, means and products (combined per thread, then in a fixed tree): within the seed
//     §6.5 bound, |got - want| <= 2 (n-1) u Σ|a_i| + u_out |want| (both orders are within
//     (n-1) u Σ|a_i| of the exact value; half types round the result once more);
//   * Algorithm 6.1's split (Example 6.2 / Listing 6.4: two kernels) executed, within the bound.
#include <gtest/gtest.h>

#include <cmath>

#include "core/backend/plugin_registry.h"
#include "tests/support/cuda_e2e.h"
#include "tests/support/device_roundtrip.h"

namespace stax {
namespace {

using test::contains;

OptionValue emulate_options() {
  OptionValue o = OptionValue::map();
  o.set("emulate", OptionValue::make_scalar("true"));
  return o;
}

Compiler& emulated_compiler() {
  static Compiler compiler(test::cuda_config(emulate_options()));
  return compiler;
}

TEST(CudaEmulated, E2eSetAgreesWithTheInterpreter) {
  size_t bitwise = 0, bounded = 0, segmented = 0;
  for (const test::E2eCase& c : test::cuda_e2e_cases()) {
    SCOPED_TRACE(c.name);
    CompiledGraph cg = emulated_compiler().compile(c.graph);
    ASSERT_EQ(cg.backend_name(), "cuda_nvrtc");
    std::vector<Tensor> got = cg.run(c.inputs);
    std::vector<Tensor> want = interpret(c.graph, c.inputs);
    std::vector<Tensor> want_segmented = test::reference(c.graph, c.inputs);
    std::vector<Tensor> magnitude;  // Σ|a_i| per output element, for the bound
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
      if (n == 0) {
        EXPECT_TRUE(test::bitwise_equal(got[i], want[i])) << "out " << i;
        ++bitwise;
        continue;
      }
      // Rows of the warp form keep the segmented order: those are bit for bit with it.
      segmented += static_cast<bool>(test::bitwise_equal(got[i], want_segmented[i]));
      DType dt = want[i].dtype();
      std::vector<double> bound(static_cast<size_t>(want[i].numel()));
      for (int64_t e = 0; e < want[i].numel(); ++e)
        bound[static_cast<size_t>(e)] =
            2.0 * static_cast<double>(n - 1) * test::unit_roundoff(dt) *
                magnitude[i].get_double(e) +
            2.0 * test::output_roundoff(dt) * std::fabs(want[i].get_double(e));
      EXPECT_TRUE(test::within_bound(got[i], want[i], bound)) << "out " << i;
      ++bounded;
    }
  }
  std::printf("[ cuda emulated ] %zu outputs bit for bit, %zu within the §6.5 bound (%zu of "
              "these bit for bit with the interpreter's segmented order)\n",
              bitwise, bounded, segmented);
}

// Example 6.2 (x of 64 x 16384, (x * x).sum(-1)): Algorithm 6.1 splits it into two kernels,
// 8192-element segments then the 2 partial sums; executed here and within the §6.5 bound
// (all terms are nonnegative, so Σ|a_i| is the result itself).
TEST(CudaEmulated, Example62SplitReductionExecutes) {
  Graph g;
  Node* x = g.placeholder("x", {64, 16384});
  g.output({g.call("sum.dim_IntList", {g.call("mul.Tensor", {x, x}), std::vector<int64_t>{-1}})});
  CompiledGraph cg = emulated_compiler().compile(g);
  ASSERT_EQ(cg.num_kernels(), 2u);
  std::vector<Tensor> in = {Tensor::randn({64, 16384}, DType::Float32, 21)};
  Tensor got = cg.run(in)[0], want = interpret(g, in)[0];
  std::vector<double> bound(64);
  for (int64_t i = 0; i < 64; ++i)
    bound[static_cast<size_t>(i)] = 2.0 * 16383 * std::ldexp(1.0, -24) * want.get_double(i);
  EXPECT_TRUE(test::within_bound(got, want, bound));
}

// The warp form (rows up to kWarpRowMax = 1024: 16 lanes per row, shuffles at 8, 4, 2, 1) keeps
// the segmented order of stax/sdk/reduction_order.hpp, so every reduction type equals the
// interpreter in its Segmented mode bit for bit, including float sums over rows of 1000 and the
// rows past the last full block (300 rows: 18 full groups of 16 and one of 12).
TEST(CudaEmulated, WarpFormEqualsTheSegmentedInterpreterBitForBit) {
  Graph g;
  Node* x = g.placeholder("x", {300, 1000});
  Node* h = g.placeholder("h", {300, 37}, DType::Float16);
  Node* i = g.placeholder("i", {300, 37}, DType::Int32);
  std::vector<int64_t> last{-1};
  g.output({g.call("sum.dim_IntList", {x, last}), g.call("mean.dim", {x, last}),
            g.call("amax", {x, last}), g.call("amin", {x, last}),
            g.call("argmax", {x, -1}), g.call("sum.dim_IntList", {h, last}),
            g.call("prod.dim_int", {h, -1}), g.call("sum.dim_IntList", {i, last}),
            g.call("sum.dim_IntList", {x, std::vector<int64_t>{0}})});  // columns of 300
  CompiledGraph cg = emulated_compiler().compile(g);
  std::vector<Tensor> in = test::random_inputs(g, 17);
  std::vector<Tensor> got = cg.run(in), want = test::reference(g, in);
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k)
    EXPECT_TRUE(test::bitwise_equal(got[k], want[k])) << "out " << k;
  for (const CompiledKernelInfo& k : cg.kernels())
    EXPECT_TRUE(contains(k.source, "auto stax_o = stax_shfl_down16(")) << k.source;
}

// The persistent warp form: softmax and layer_norm over rows of 1000 (63 elements per lane) read
// each row once into registers and reuse it in every body; the same bits as the segmented
// interpreter (the arithmetic and its order are unchanged).
TEST(CudaEmulated, PersistentRowsEqualTheSegmentedInterpreter) {
  Graph g;
  Node* x = g.placeholder("x", {40, 1000});
  Node* m = g.call("amax", {x, std::vector<int64_t>{-1}, true});
  Node* e = g.call("exp", {g.call("sub.Tensor", {x, m})});
  Node* sm = g.call("div.Tensor", {e, g.call("sum.dim_IntList", {e, std::vector<int64_t>{-1},
                                                                  true})});
  Node* mean = g.call("mean.dim", {x, std::vector<int64_t>{-1}, true});
  Node* c = g.call("sub.Tensor", {x, mean});
  Node* var = g.call("mean.dim", {g.call("mul.Tensor", {c, c}), std::vector<int64_t>{-1}, true});
  g.output({sm, g.call("mul.Tensor", {c, g.call("rsqrt", {g.call("add.Scalar", {var, 1e-5})})})});
  CompiledGraph cg = emulated_compiler().compile(g);
  bool persistent = false;
  for (const CompiledKernelInfo& k : cg.kernels())
    persistent = persistent || contains(k.source, "[stax_k] = tmp");
  EXPECT_TRUE(persistent);
  std::vector<Tensor> in = test::random_inputs(g, 23);
  std::vector<Tensor> got = cg.run(in), want = test::reference(g, in);
  for (size_t k = 0; k < got.size(); ++k)
    EXPECT_TRUE(test::bitwise_equal(got[k], want[k])) << "out " << k;
}

// Listing 6.3 (x.t() + y) executed in the emulation: the transposed read is bit for bit.
TEST(CudaEmulated, Listing63Executes) {
  Graph g;
  Node* x = g.placeholder("x", {512, 256});
  Node* y = g.placeholder("y", {256, 512});
  g.output({g.call("add.Tensor", {g.call("t", {x}), y})});
  CompiledGraph cg = emulated_compiler().compile(g);
  EXPECT_TRUE(contains(cg.loop_ir(), "i0 + 256*i1")) << cg.loop_ir();
  std::vector<Tensor> in = test::random_inputs(g, 63);
  EXPECT_TRUE(test::bitwise_equal(cg.run(in)[0], interpret(g, in)[0]));
}

// A bounds-checked gather with an index out of range: the kernel records the index and the size
// (the first faulting thread: index 9 before 12; index_select takes no negative index) and traps; the
// error names both, like cpu_cpp's.
TEST(CudaEmulated, TrapIsReportedAsARuntimeErrorWithTheIndexAndTheSize) {
  Graph g;
  Node* x = g.placeholder("x", {5, 7});
  Node* idx = g.placeholder("idx", {4}, DType::Int64);
  g.output({g.call("index_select", {x, 0, idx})});
  CompiledGraph cg = emulated_compiler().compile(g);
  auto error_of = [&](std::vector<int64_t> index) {
    try {
      cg.run({Tensor::randn({5, 7}, DType::Float32, 1),
              Tensor::from_vector<int64_t>({4}, std::move(index))});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string e = error_of({0, 9, 1, 12});
  EXPECT_TRUE(contains(e, "cuda_nvrtc (emulated): kernel 'kernel0' trapped in block 0")) << e;
  EXPECT_TRUE(contains(e, "(an indirect index out of bounds)")) << e;
  EXPECT_TRUE(contains(e, "index out of bounds: index 9 for a dimension of size 5")) << e;
  e = error_of({0, 1, -7, 2});
  EXPECT_TRUE(contains(e, "index out of bounds: index -7 for a dimension of size 5")) << e;
  // In range: runs, and the record of the failed run is not reused.
  EXPECT_EQ(error_of({0, 4, 3, 2}), "no error");
}

// ABI 1.2 device memory of the emulation: host memory, kernels launched on it directly.
TEST(CudaEmulated, DeviceMemoryRoundTrip) {
  PluginRegistry reg({STAX_PLUGIN_DIR});
  test::check_example11_on_device(*reg.create("cuda_nvrtc", emulate_options()));
}

TEST(CudaEmulated, PropertiesSayEmulated) {
  EXPECT_EQ(emulated_compiler().registry().backend("cuda").properties().device_name,
            "host emulation of sm_90 (fibers on the CPU)");
}

}  // namespace
}  // namespace stax
