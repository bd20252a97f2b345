// Differential fuzzing of the compile path: seeded random small graphs (pointwise ops with
// broadcasting, views, reductions, cat, dtype conversions, matmul; values with several users;
// non-contiguous inputs; NaN / inf / negative values) compiled with the cpu_cpp plugin and run
// against the reference interpreter, in both of cpu_cpp's reduction orders: by default against the
// interpreter's ReductionOrder::Segmented, with strict_order against its sequential default order.
// Pointwise graphs and graphs with reductions must agree bit for bit (NaN == NaN; the two orders
// are within the §6.5 bound of each other, tested in compiled_e2e_test);
// matmul results (an extern gemm) must lie within the gemm bound k·u·(|A|·|B|)_ij, and softmax /
// log_softmax (which the interpreter computes in double, rounding once) within their float
// rounding bound. A failing case prints its seed, graph text and inputs. Minimized regressions
// found by the fuzzer are their own TESTs.
#include <gtest/gtest.h>

#include "tests/support/aten_names.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/graph/printer.h"
#include "core/driver/compiler.h"
#include "core/interpreter/interpreter.h"
#include "core/support/error.h"
#include "tests/support/aten_names.h"
#include "tests/support/compiled_check.h"
#include "tests/support/cubin_count.h"
#include "tests/support/cuda_e2e.h"
#include "tests/support/random_graphs.h"
#include "tests/support/reduction_bound.h"

namespace stax {
namespace {

using test::bitwise_equal;
using test::cpu_compiler;

using test::Check;
using test::FuzzCase;
using test::check_case;
using test::describe;
using test::generate;
using test::within_gemm_bound;
using test::within_softmax_bound;

constexpr uint64_t kNumSeeds = 300;

// The fuzz run in one reduction order (two TESTs, two ctest entries that run in parallel).
void fuzz(test::Order order) {
  auto t0 = std::chrono::steady_clock::now();
  int failures = 0, with_reduction = 0, with_mm = 0;
  // STAX_FUZZ_SEEDS=N runs N seeds instead (longer fuzzing sessions), from STAX_FUZZ_FIRST (0).
  uint64_t num_seeds = kNumSeeds, first = 0;
  if (const char* e = std::getenv("STAX_FUZZ_SEEDS")) num_seeds = std::stoull(e);
  if (const char* e = std::getenv("STAX_FUZZ_FIRST")) first = std::stoull(e);
  for (uint64_t seed = first; seed < first + num_seeds; ++seed) {
    FuzzCase fc = generate(seed);
    // STAX_FUZZ_VERBOSE=1 prints each case before running it (to find a crashing seed).
    if (std::getenv("STAX_FUZZ_VERBOSE"))
      std::cerr << "seed " << seed << ":\n" << describe(fc) << std::flush;
    with_reduction += fc.has_reduction;
    with_mm += fc.checks.size() > 2 && fc.checks[2].kind == Check::Gemm;
    std::string err = check_case(fc, order);
    if (!err.empty()) {
      ++failures;
      ADD_FAILURE() << "seed " << seed << ":\n" << err << describe(fc);
    }
  }
  double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << test::order_name(order) << ": " << num_seeds << " graphs (" << with_reduction << " with reductions, " << with_mm
            << " with matmul), " << failures
            << " failures, " << secs << " s\n";
}

TEST(CompiledFuzz, RandomGraphsAgreeWithTheInterpreter) { fuzz(test::Order::Segmented); }
TEST(CompiledFuzzStrict, RandomGraphsAgreeWithTheInterpreterInStrictOrder) {
  fuzz(test::Order::Strict);
}

// The per-output bounds of the Triton slice (tests/support/reduction_bound.h: reorder_bounds),
// checked where no plugin is needed: the interpreter's two reduction orders (sequential and
// segmented) are two legitimate orders, so over the 300 fuzz graphs every Exact output must agree
// bit for bit and every Reordered one lie within its bound; some must actually differ (else the
// check is vacuous).
TEST(CompiledFuzzBound, PerOutputBoundsHoldBetweenTheInterpretersTwoOrders) {
  size_t exact = 0, reordered = 0, differ = 0, downstream = 0;
  for (uint64_t seed = 0; seed < kNumSeeds; ++seed) {
    FuzzCase fc = generate(seed);
    SCOPED_TRACE("seed " + std::to_string(seed) + ":\n" + describe(fc));
    std::vector<Tensor> want;
    try {
      want = interpret(fc.g, fc.inputs);
    } catch (const Error&) {
      continue;
    }
    std::vector<Tensor> seg = test::reference(fc.g, fc.inputs, test::Order::Segmented);
    std::vector<test::OutputBound> bounds = test::reorder_bounds(fc.g, fc.inputs, want);
    for (size_t i = 0; i < want.size(); ++i) {
      if (fc.checks[i].kind != Check::Bitwise) continue;
      const test::OutputBound& b = bounds[i];
      if (b.kind == test::OutputBound::Exact) {
        EXPECT_TRUE(bitwise_equal(seg[i], want[i])) << "output " << i;
        ++exact;
      } else if (b.kind == test::OutputBound::Reordered) {
        EXPECT_TRUE(test::within_bound(seg[i], want[i], b.bound)) << "output " << i;
        differ += !bitwise_equal(seg[i], want[i]);
        ++reordered;
      } else {
        ++downstream;
      }
    }
  }
  EXPECT_GT(differ, 5u);
  std::cout << "per-output bounds: " << exact << " exact, " << reordered << " reordered ("
            << differ << " differ between the orders, all within), " << downstream
            << " downstream of an op the propagation does not cover\n";
}

// The bound is the §6.5 formula where it applies, and it is tight enough to catch a wrong
// value: exp(sum(x) / n) over a 1000-element row, perturbed by 3 bounds, fails.
TEST(CompiledFuzzBound, BoundIsTheFormulaAndCatchesAWrongValue) {
  Graph g;
  Node* x = g.placeholder("x", {4, 1000});
  Node* s = g.call("sum.dim_IntList", {x, std::vector<int64_t>{1}, false});
  Node* e = g.call("exp", {g.call("div.Scalar", {s, 1000.0})});
  Node* v = g.call("view", {s, std::vector<int64_t>{2, 2}});
  g.output({s, e, v, g.call("amax", {x, std::vector<int64_t>{1}, false})});
  std::vector<Tensor> in = test::random_inputs(g, 5);
  std::vector<Tensor> want = interpret(g, in);
  std::vector<test::OutputBound> b = test::reorder_bounds(g, in, want);
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b[3].kind, test::OutputBound::Exact);  // amax: order-free
  for (int k : {0, 1, 2}) ASSERT_EQ(b[static_cast<size_t>(k)].kind, test::OutputBound::Reordered);
  const double u = test::unit_roundoff(DType::Float32);
  for (int64_t r = 0; r < 4; ++r) {
    double abs_sum = 0;
    for (int64_t c = 0; c < 1000; ++c) abs_sum += std::fabs(in[0].get_double(r * 1000 + c));
    EXPECT_NEAR(b[0].bound[static_cast<size_t>(r)], 2 * 999 * u * abs_sum * 1.01,
                1e-9 * abs_sum);
    EXPECT_EQ(b[2].bound[static_cast<size_t>(r)], b[0].bound[static_cast<size_t>(r)]);  // a view
    EXPECT_GT(b[1].bound[static_cast<size_t>(r)], 0.0);
  }
  for (size_t k : {size_t(0), size_t(1)}) {
    Tensor wrong = want[k].contiguous().clone();
    wrong.set_double(1, want[k].get_double(1) + 3 * b[k].bound[1]);
    EXPECT_FALSE(test::within_bound(wrong, want[k], b[k].bound)) << "output " << k;
    Tensor close = want[k].contiguous().clone();
    close.set_double(1, want[k].get_double(1) + 0.5 * b[k].bound[1]);
    EXPECT_TRUE(test::within_bound(close, want[k], b[k].bound)) << "output " << k;
  }
}

// The fuzz graphs on cuda_nvrtc (skipped when the plugin is not built): every kernel of the first
// kNumCudaSeeds cases compiles with NVRTC to an sm_90 cubin, and every case runs in the host
// emulation against the interpreter in the segmented order (cases the interpreter rejects are
// skipped). Pointwise graphs (views, strides, broadcasting, dtype mixes: index math) and graphs
// with reductions agree bit for bit: the fuzz's rows are short (at most 125 elements), so every
// reduction kernel takes the warp form, whose order is the segmented one (cuda_printer.h);
// matmuls (the interpreter's, cuda_nvrtc has no extern kernels) and softmax keep their checks.
constexpr uint64_t kNumCudaSeeds = 60;

TEST(CompiledFuzz, CudaKernelsCompileAndEmulatedAgree) {
  if (!std::filesystem::exists(std::filesystem::path(STAX_PLUGIN_DIR) / "libstax_cuda_nvrtc.so"))
    GTEST_SKIP() << "cuda_nvrtc is not built (no CUDA toolkit)";
  Compiler nvrtc(test::cuda_config());
  OptionValue emulate = OptionValue::map();
  emulate.set("emulate", OptionValue::make_scalar("true"));
  Compiler emulated(test::cuda_config(emulate));
  size_t kernels = 0, pointwise = 0, reducing = 0;
  for (uint64_t seed = 0; seed < kNumCudaSeeds; ++seed) {
    FuzzCase fc = generate(seed);
    SCOPED_TRACE("seed " + std::to_string(seed) + ":\n" + describe(fc));
    kernels += nvrtc.compile(fc.g).num_kernels();
    std::vector<Tensor> want;
    try {
      want = test::reference(fc.g, fc.inputs);
    } catch (const Error&) {
      continue;
    }
    std::vector<Tensor> got = emulated.compile(fc.g).run(fc.inputs);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      const Check& c = fc.checks[i];
      auto operand = [&](int k) { return want[static_cast<size_t>(k)]; };
      EXPECT_TRUE(c.kind == Check::Gemm ? within_gemm_bound(got[i], want[i], operand(c.a),
                                                            operand(c.b))
                  : c.kind == Check::Bitwise
                      ? bitwise_equal(got[i], want[i])
                      : within_softmax_bound(got[i], want[i], operand(c.a), c.dim,
                                             c.kind == Check::LogSoftmax))
          << "output " << i;
    }
    ++(fc.has_reduction ? reducing : pointwise);
  }
  EXPECT_GT(kernels, kNumCudaSeeds);
  EXPECT_GT(pointwise, 10u);
  EXPECT_GT(reducing, 10u);
  std::cout << kNumCudaSeeds << " fuzz graphs on cuda_nvrtc: " << kernels
            << " kernels compiled to sm_90 cubins; emulated: " << pointwise
            << " pointwise graphs and " << reducing
            << " graphs with reductions agree with the interpreter\n";
}

// The fuzz graphs on cuda_triton (skipped when the plugin is not built or the triton Python package
// is missing), a CI-sized slice: the first kNumTritonSeeds cases run under Triton's interpreter
// (`interpret: true`), compared per output (tests/support/reduction_bound.h: reorder_bounds):
// outputs with no float sum / mean / prod on their path bit for bit (index math, masks, strides,
// broadcasting, dtype mixes, max / min / arg reductions); the others within the §6.5 bound of
// each reordered reduction on their path (numpy's pairwise order against the interpreter's),
// carried through the ops after it; matmuls and softmax within their bounds. An output behind an
// op the propagation does not cover (a comparison of a sum, log1p, ...) keeps rtol 1e-4 and is
// counted (none in this slice). The first kNumTritonAotSeeds compile to sm_90 cubins with the
// Triton compiler (counted through the kernel cache: the run fails on the missing driver first).
// Longer local runs: STAX_TRITON_FUZZ_SEEDS=N interprets N graphs, STAX_TRITON_AOT_SEEDS=M
// compiles the first M to cubins.
constexpr uint64_t kNumTritonSeeds = 60;
constexpr uint64_t kNumTritonAotSeeds = 12;

TEST(CompiledFuzz, TritonKernelsInterpretedAgreeAndCompile) {
  if (!std::filesystem::exists(std::filesystem::path(STAX_PLUGIN_DIR) / "libstax_cuda_triton.so"))
    GTEST_SKIP() << "cuda_triton is not built (no CUDA toolkit)";
  if (std::system("python3 -c 'import triton' > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "the triton Python package is not installed (scripts/setup.sh)";
  auto config = [](bool interpret) {
    OptionValue o = OptionValue::map();
    o.set("arch", OptionValue::make_scalar("sm_90"));
    if (interpret) o.set("interpret", OptionValue::make_scalar("true"));
    Config c = test::cuda_config(o);
    c.devices["cuda"].backend = "cuda_triton";
    return c;
  };
  // A fresh cache directory makes the ahead-of-time compiles wait and counts the cubins
  // (tests/support/cubin_count.h: the run fails on the missing driver before waiting).
  test::CubinCache cubins("fuzz");
  Config aot_config = config(false);
  aot_config.cache_dir = cubins.dir();
  Compiler interpreted(config(true)), aot(aot_config);
  int compiled = 0;
  size_t exact = 0, bounded = 0, downstream = 0, kernels = 0;
  uint64_t num_seeds = kNumTritonSeeds, aot_seeds = kNumTritonAotSeeds;
  if (const char* e = std::getenv("STAX_TRITON_FUZZ_SEEDS")) num_seeds = std::stoull(e);
  if (const char* e = std::getenv("STAX_TRITON_AOT_SEEDS")) aot_seeds = std::stoull(e);
  auto t0 = std::chrono::steady_clock::now();
  for (uint64_t seed = 0; seed < num_seeds; ++seed) {
    FuzzCase fc = generate(seed);
    SCOPED_TRACE("seed " + std::to_string(seed) + ":\n" + describe(fc));
    std::vector<Tensor> want;
    try {
      want = interpret(fc.g, fc.inputs);
    } catch (const Error&) {
      continue;
    }
    if (seed < aot_seeds) {
      CompiledGraph cg = aot.compile(fc.g);
      kernels += cg.num_kernels();
      compiled += cg.stats().kernels_compiled;
      try {
        cg.run(fc.inputs);
      } catch (const Error& e) {
        EXPECT_TRUE(std::string(e.what()).find("no CUDA driver") != std::string::npos ||
                    std::string(e.what()).find("no device") != std::string::npos)
            << e.what();
      }
    }
    std::vector<Tensor> got = interpreted.compile(fc.g).run(fc.inputs);
    ASSERT_EQ(got.size(), want.size());
    std::vector<test::OutputBound> bounds = test::reorder_bounds(fc.g, fc.inputs, want);
    for (size_t i = 0; i < got.size(); ++i) {
      const Check& c = fc.checks[i];
      auto operand = [&](int k) { return want[static_cast<size_t>(k)]; };
      const test::OutputBound& b = bounds[i];
      if (c.kind == Check::Gemm) {
        EXPECT_TRUE(within_gemm_bound(got[i], want[i], operand(c.a), operand(c.b)))
            << "output " << i;
        ++bounded;
      } else if (c.kind != Check::Bitwise) {
        EXPECT_TRUE(within_softmax_bound(got[i], want[i], operand(c.a), c.dim,
                                         c.kind == Check::LogSoftmax))
            << "output " << i;
        ++bounded;
      } else if (b.kind == test::OutputBound::Exact) {
        EXPECT_TRUE(bitwise_equal(got[i], want[i])) << "output " << i;
        ++exact;
      } else if (b.kind == test::OutputBound::Reordered) {
        EXPECT_TRUE(test::within_bound(got[i], want[i], b.bound)) << "output " << i << " ("
                                                                  << b.what << ")";
        ++bounded;
      } else {
        // Behind an op the propagation does not cover: a loose tolerance, counted.
        EXPECT_TRUE(got[i].allclose(want[i], 1e-4, 1e-4, true)) << "output " << i << "\n"
                                                                << got[i].summary() << "\n"
                                                                << want[i].summary();
        ++downstream;
      }
    }
  }
  EXPECT_GT(exact, 10u);
  EXPECT_GT(bounded, 5u);
  EXPECT_GT(kernels, std::min<uint64_t>(aot_seeds, num_seeds));
  EXPECT_EQ(cubins.cubins(), static_cast<size_t>(compiled)) << "a Triton compile failed";
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << num_seeds << " fuzz graphs on cuda_triton (interpreted), outputs: " << exact
            << " bit for bit, " << bounded << " within their §6.5 / gemm / softmax bound, "
            << downstream << " behind an uncovered op within rtol 1e-4; " << kernels
            << " kernels of the first " << aot_seeds << " compiled to sm_90 cubins; " << secs
            << " s\n";
}

// ---- minimized regressions found by the fuzzer ----------------------------------------------

// Compiles g and compares every output bit for bit with the interpreter on seeded inputs.
void expect_compiled_equals_interpreter(const Graph& g, uint64_t seed = 3) {
  std::vector<Tensor> in = test::random_inputs(g, seed);
  std::vector<Tensor> want = test::reference(g, in);
  std::vector<Tensor> got = cpu_compiler().compile(g).run(in);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(bitwise_equal(got[i], want[i])) << "output " << i << "\n" << print_graph(g);
}

// Seed 7: a reduction over dim 0 (or -1) of a 0-d tensor, which torch accepts (the result is the
// value itself, index 0 for argmax), crashed the lowering: reduced_dims flagged dim 0 of a rank-0
// shape, writing past an empty vector (core/lowering/rules_reduction.cpp).
TEST(CompiledFuzz, ReductionOverDimZeroOfA0dTensor) {
  for (int64_t d : {0, -1})
    for (bool keep : {false, true}) {
      Graph g;
      Node* x = g.placeholder("x", {5, 1, 1}, DType::Float64);
      Node* s = g.call("sum.default", {x});
      Node* prod = g.call("prod.dim_int", {s, d, keep});
      Node* sum = g.call("sum.dim_IntList", {s, std::vector<int64_t>{d}, keep});
      Node* amax = g.call("amax", {s, std::vector<int64_t>{d}, keep});
      Node* mean = g.call("mean.dim", {s, std::vector<int64_t>{d}, keep});
      Node* argmax = g.call("argmax", {s, d, keep});
      Node* e = g.call("exp", {prod});
      g.output({prod, sum, amax, mean, argmax, e});
      EXPECT_EQ(prod->shape(), Shape{});
      expect_compiled_equals_interpreter(g);
    }
}

// Seeds 27, 219, 294: pow, remainder and floor_divide of bool tensors (torch: "not implemented
// for 'Bool'") were accepted when the graph was built and failed only when the interpreter ran
// them, so a graph where such a value was unused compiled and ran (dead code) while the
// interpreter threw. They are now rejected at build time, like sub on bool
// (core/graph/ops/pointwise_ops.cpp).
TEST(CompiledFuzz, BoolPowRemainderFloorDivideAreRejectedWhenBuilt) {
  for (const char* op : {"pow", "remainder", "floor_divide"}) {
    Graph g;
    Node* a = g.placeholder("a", {4}, DType::Bool);
    Node* b = g.placeholder("b", {4}, DType::Bool);
    EXPECT_THROW(g.call(test::tensor_overload(op), {a, b}), Error) << op;
    EXPECT_THROW(g.call(test::scalar_overload(op), {a, true}), Error) << op;
    // With an integer operand the computation is int64, which is defined.
    Node* i = g.call(test::scalar_overload(op), {a, 2});
    EXPECT_EQ(i->dtype(), DType::Int64);
    Node* f = g.call(test::tensor_overload(op), {g.call("to.dtype", {a, DType::Float32}), b});
    g.output({i, f});
    expect_compiled_equals_interpreter(g);
  }
}

// Seeds 1557, 1873, 1905, 2459, 2840: a floating sum (or mean) over one element was lowered to a
// copy of it, so the sum of {-0.0} was -0.0, where eager and the interpreter add to the identity
// +0.0 and give +0.0; the sign then showed in 1 / mean = -inf instead of +inf
// (core/lowering/rules_reduction.cpp, the one-element reduction).
TEST(CompiledFuzz, FloatSumOverOneElementOfNegativeZeroIsPositiveZero) {
  for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    Graph g;
    Node* x = g.placeholder("x", {1, 3}, dt);
    Node* sum = g.call("sum.dim_IntList", {x, std::vector<int64_t>{0}, false});
    Node* mean = g.call("mean.dim", {x, std::vector<int64_t>{0}, true});
    Node* all = g.call("sum.default", {g.call("slice.Tensor", {x, 1, 0, 1})});
    Node* inv = g.call("reciprocal", {mean});
    Node* prod = g.call("prod.dim_int", {x, 0});  // 1 * -0.0 = -0.0: the sign stays
    g.output({sum, mean, all, inv, prod});
    Tensor in = Tensor::from_vector<double>({1, 3}, {-0.0, 2.0, -0.0}, dt);
    std::vector<Tensor> want = test::reference(g, {in});
    std::vector<Tensor> got = cpu_compiler().compile(g).run({in});
    EXPECT_FALSE(std::signbit(want[0].get_double(0)));
    EXPECT_EQ(want[3].get_double(0), INFINITY);
    EXPECT_TRUE(std::signbit(want[4].get_double(0)));
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_TRUE(bitwise_equal(got[i], want[i])) << dtype_name(dt) << " output " << i;
  }
}

// Seed 2729: silu of a bfloat16 / float16 tensor was decomposed into mul(x, sigmoid(x)) on the
// half type, rounding sigmoid's result to the half type before the product; the silu kernel (and
// torch) compute x * sigmoid(x) in float32 and round once (core/graph/decompositions.cpp).
TEST(CompiledFuzz, HalfSiluRoundsOnce) {
  for (DType dt : {DType::BFloat16, DType::Float16}) {
    Graph g;
    Node* x = g.placeholder("x", {64});
    Node* y = g.call("silu", {g.call("to.dtype", {x, dt})});
    g.output({y});
    Tensor in = Tensor::randn({64}, DType::Float32, 5);
    in.set_double(0, -0.90625);  // bf16: x * bf16(sigmoid(x)) = -0.259765625, once: -0.26171875
    std::vector<Tensor> want = test::reference(g, {in});
    std::vector<Tensor> got = cpu_compiler().compile(g).run({in});
    EXPECT_TRUE(bitwise_equal(got[0], want[0])) << dtype_name(dt);
  }
}

}  // namespace
}  // namespace stax
