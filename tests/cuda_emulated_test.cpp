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

std::vector<Tensor> abs_inputs(const std::vector<Tensor>& in) {
  std::vector<Tensor> out;
  for (const Tensor& t : in) {
    Tensor a = t.clone();
    if (is_floating(a.dtype()))
      for (int64_t i = 0; i < a.numel(); ++i) a.set_double(i, std::fabs(a.get_double(i)));
    out.push_back(a);
  }
  return out;
}

// The unit roundoff of a dtype's storage (the final rounding of a half-type result).
double storage_roundoff(DType d) {
  if (d == DType::Float16) return std::ldexp(1.0, -11);
  if (d == DType::BFloat16) return std::ldexp(1.0, -8);
  return test::unit_roundoff(d);
}

TEST(CudaEmulated, E2eSetAgreesWithTheInterpreter) {
  size_t bitwise = 0, bounded = 0;
  for (const test::E2eCase& c : test::cuda_e2e_cases()) {
    SCOPED_TRACE(c.name);
    CompiledGraph cg = emulated_compiler().compile(c.graph);
    ASSERT_EQ(cg.backend_name(), "cuda_nvrtc");
    std::vector<Tensor> got = cg.run(c.inputs);
    std::vector<Tensor> want = interpret(c.graph, c.inputs);
    std::vector<Tensor> magnitude;  // Σ|a_i| per output element, for the bound
    if (!c.reordered.empty()) magnitude = interpret(c.graph, abs_inputs(c.inputs));
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
      DType dt = want[i].dtype();
      std::vector<double> bound(static_cast<size_t>(want[i].numel()));
      for (int64_t e = 0; e < want[i].numel(); ++e)
        bound[static_cast<size_t>(e)] =
            2.0 * static_cast<double>(n - 1) * test::unit_roundoff(dt) *
                magnitude[i].get_double(e) +
            2.0 * storage_roundoff(dt) * std::fabs(want[i].get_double(e));
      EXPECT_TRUE(test::within_bound(got[i], want[i], bound)) << "out " << i;
      ++bounded;
    }
  }
  std::printf("[ cuda emulated ] %zu outputs bit for bit, %zu within the §6.5 bound\n", bitwise,
              bounded);
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

// A bounds-checked gather with an index out of range: the kernel traps; the emulator reports it.
TEST(CudaEmulated, TrapIsReportedAsARuntimeError) {
  Graph g;
  Node* x = g.placeholder("x", {5, 7});
  Node* idx = g.placeholder("idx", {4}, DType::Int64);
  g.output({g.call("index_select", {x, 0, idx})});
  CompiledGraph cg = emulated_compiler().compile(g);
  try {
    cg.run({Tensor::randn({5, 7}, DType::Float32, 1),
            Tensor::from_vector<int64_t>({4}, {0, 9, 1, 2})});
    FAIL() << "an out-of-bounds index did not trap";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "cuda_nvrtc (emulated): kernel 'kernel0' trapped in block 0"))
        << e.what();
    EXPECT_TRUE(contains(e.what(), "(an indirect index out of bounds)")) << e.what();
  }
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
