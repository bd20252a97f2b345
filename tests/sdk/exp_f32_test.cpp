// exp over float32 (DECISIONS item 37, docs/vector_math.md): Stax's own formula (scalar_ops.hpp's
// exp_f32), inline where SLEEF's expf was a call. Its bound, over a sweep of every float32
// exponent of both signs and every float near the overflow and underflow thresholds and around 0,
// against glibc's double exp; its special values; the C99 header's copy, and the compiled
// kernels (Clang's vectorised loop and the vector printer) bit for bit against the interpreter
// on inputs that cross every region. STAX_EXP_EXHAUSTIVE=1 checks every float32 (~3 min here;
// the maxima, 0.7941 ULP for a normal result and 0.790 for a subnormal one, are in
// docs/vector_math.md).
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/config/config.h"
#include "core/driver/compiler.h"
#include "core/interpreter/interpreter.h"
#include "stax/sdk/scalar_ops.hpp"
#include "tests/support/float32_sweep.h"

extern "C" float c99_exp_f32(float);  // tests/support/scalar_ops_c99_shim.c (C99, contraction off)

using namespace stax;
using stax::test::bits;
using stax::test::from_bits;
using stax::test::ulp_error;

namespace {

// The documented bound (docs/vector_math.md): the maximum over every float32 is 0.7941 ULP.
constexpr double kBoundUlp = 0.8;

struct Sweep {
  double worst = 0;
  float worst_x = 0;
  uint64_t n = 0;
  void check(float x) {
    const float got = stax_scalar::exp(x);
    const double ref = std::exp(static_cast<double>(x));
    ++n;
    if (static_cast<float>(ref) == INFINITY) {  // rounds to +inf (or lies beyond FLT_MAX)
      // within the bound of FLT_MAX's ULP either way: inf, or FLT_MAX when ref is just above it
      if (!(got == INFINITY || (got == FLT_MAX && ref < 0x1.fffffep127 + 0x1p103))) {
        ADD_FAILURE() << "exp(" << x << ") = " << got << ", want inf";
      }
      return;
    }
    const double err = ulp_error(got, ref);
    if (err > worst) worst = err, worst_x = x;
  }
  void range(float lo, float hi, uint32_t step = 1) {  // lo <= hi, same sign
    if (lo >= 0) {
      for (uint64_t u = bits(lo); u <= bits(hi); u += step) check(from_bits(static_cast<uint32_t>(u)));
    } else {
      for (uint64_t u = bits(hi); u <= bits(lo); u += step) check(from_bits(static_cast<uint32_t>(u)));
    }
  }
};

TEST(ExpF32, WithinTheBoundOverEveryExponentAndEveryFloatNearTheThresholds) {
  Sweep s;
  if (std::getenv("STAX_EXP_EXHAUSTIVE")) {
    s.range(0.0f, from_bits(0x7f7fffffu));
    s.range(-from_bits(0x7f7fffffu), -0.0f);
  } else {
    s.range(0.0f, from_bits(0x7f7fffffu), 1009);    // every exponent, 2.1 M floats each sign
    s.range(-from_bits(0x7f7fffffu), -0.0f, 1009);
    s.range(88.0f, 89.5f);                          // across the overflow threshold 88.7228
    s.range(-104.5f, -86.0f, 7);                    // subnormal results and the underflow to 0
    s.range(-0.36f, 0.36f, 101);                    // one reduction interval, n = 0
  }
  EXPECT_LE(s.worst, kBoundUlp) << "at x = " << s.worst_x;
  std::printf("exp(float): %llu inputs, largest error %.4f ULP at %.9g\n",
              static_cast<unsigned long long>(s.n), s.worst, s.worst_x);
}

TEST(ExpF32, SpecialValues) {
  EXPECT_EQ(stax_scalar::exp(0.0f), 1.0f);
  EXPECT_EQ(stax_scalar::exp(-0.0f), 1.0f);
  EXPECT_EQ(stax_scalar::exp(INFINITY), INFINITY);
  EXPECT_EQ(bits(stax_scalar::exp(-INFINITY)), 0u);
  EXPECT_EQ(stax_scalar::exp(1.0f), 2.71828175f);        // e rounded to float
  EXPECT_NEAR(stax_scalar::exp(from_bits(0x42b17217u)), 0x1.ffff08p127f, 0x1p104f);  // finite
  EXPECT_EQ(stax_scalar::exp(from_bits(0x42b17218u)), INFINITY);  // 88.7228394: overflows
  EXPECT_EQ(stax_scalar::exp(-103.0f), from_bits(1));     // 1.4e-45: the smallest subnormal
  EXPECT_EQ(stax_scalar::exp(-104.0f), 0.0f);            // 6.8e-46 rounds to 0
  EXPECT_EQ(stax_scalar::exp(-1e30f), 0.0f);
  EXPECT_EQ(stax_scalar::exp(1e30f), INFINITY);
  EXPECT_EQ(stax_scalar::exp(1e-30f), 1.0f);
  EXPECT_EQ(bits(stax_scalar::exp(NAN)), 0x7fc00000u);   // the canonical NaN
  EXPECT_EQ(bits(stax_scalar::exp(from_bits(0xffc01234u))), 0x7fc00000u);
  // sigmoid goes through it
  EXPECT_EQ(stax_scalar::sigmoid(0.0f), 0.5f);
}

// Inputs that cross every region, with edge values.
std::vector<float> region_inputs(size_t n) {
  return test::region_inputs({0.0f, -0.0f, 88.72283f, 88.7228394f, 89.0f, 90.0f, -87.33f, -103.0f,
                              -103.97f, -104.0f, -105.0f, 0.3465736f, -0.3465736f, INFINITY,
                              -INFINITY, NAN, 1e-45f, -1e-45f, 1e30f, -1e30f},
                             n, 220.0f);
}

TEST(ExpF32, TheC99HeaderComputesTheSameBits) {
  for (float x : region_inputs(200000)) {
    float a = stax_scalar::exp(x), b = c99_exp_f32(x);
    ASSERT_TRUE(bits(a) == bits(b)) << "x = " << x << ": " << a << " vs " << b;
  }
}

TEST(ExpF32, CompiledKernelsAreBitwiseTheInterpreter) {
  ::setenv("STAX_CACHE_DIR", "off", 1);
  std::vector<float> in = region_inputs(64 * 1031);
  Tensor x = Tensor::from_vector({64, 1031}, in);
  // softmax's rows: finite values over a range where exp(x - max) underflows in places
  std::vector<float> finite(64 * 1031);
  uint32_t u = 777;
  for (float& v : finite) {
    u = u * 1664525u + 1013904223u;
    v = (static_cast<float>(u >> 8) / 16777216.0f - 0.5f) * 240.0f;
  }
  Tensor y = Tensor::from_vector({64, 1031}, finite);
  Graph g;
  Node* p = g.placeholder("x", {64, 1031});
  Node* q = g.placeholder("y", {64, 1031});
  // exp, and softmax decomposed (the row pattern: exp(y - max) summed in a segmented reduction,
  // then divided; the interpreter runs the composite softmax op in its own order)
  const std::vector<int64_t> last = {-1};
  Node* e = g.call("exp", {g.call("sub.Tensor", {q, g.call("amax", {q, last, true})})});
  Node* sm = g.call("div.Tensor", {e, g.call("sum.dim_IntList", {e, last, true})});
  g.output({g.call("exp", {p}), sm});
  InterpreterOptions segmented;  // the compiled default order (the sum of softmax)
  segmented.reduction_order = ReductionOrder::Segmented;
  std::vector<Tensor> want = interpret(g, {x, y}, segmented);
  for (bool vector_printer : {false, true}) {
    Config c = Config::default_cpu();
    c.plugin_path = {STAX_PLUGIN_DIR};
    c.devices["cpu"].options.set("vector_printer",
                                 OptionValue::make_scalar(vector_printer ? "true" : "false"));
    Compiler compiler(c);
    CompiledGraph cg = compiler.compile(g);
    std::string sources;
    for (const auto& k : cg.kernels()) sources += k.source;
    // the vector printer's exp (16 lanes) or the scalar text in Clang's vectorised loop
    EXPECT_EQ(sources.find("exp(stax_vf") != std::string::npos, vector_printer);
    std::vector<Tensor> got = cg.run({x, y});
    ASSERT_EQ(got.size(), 2u);
    for (size_t i = 0; i < 2; ++i)
      EXPECT_TRUE(got[i].equal(want[i])) << "output " << i << ", vector_printer "
                                         << vector_printer << "\n" << got[i].summary() << "\n"
                                         << want[i].summary();
  }
}

}  // namespace
