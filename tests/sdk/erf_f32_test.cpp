// erf over float32 (DECISIONS items 34, 38, 62, docs/vector_math.md): Stax's own formula, three
// polynomials in fmas (scalar_ops.hpp's erf_f32). Its bound, over a sweep of every float32 exponent
// and every float in the intervals where the formula changes (the 0.75 and 1.5 splits, the 3.95
// clamp, the subnormals), against glibc's double erf; its sign and special values; the C99
// header's copy and the compiled kernels (Clang's vectorised loop and the vector printer) bit for
// bit against the interpreter on inputs that cross every region. STAX_ERF_EXHAUSTIVE=1 checks
// every float32 (the time and the maximum are in docs/vector_math.md).
#include <gtest/gtest.h>

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

extern "C" float c99_erf_f32(float);  // tests/support/scalar_ops_c99_shim.c (C99, contraction off)

using namespace stax;
using stax::test::bits;
using stax::test::from_bits;
using stax::test::ulp_error;

namespace {

// The documented bound (docs/vector_math.md): the maximum over every float32 is 0.7615 ULP.
constexpr double kBoundUlp = 0.8;

struct Sweep {
  double worst = 0;
  float worst_x = 0;
  uint64_t n = 0;
  void check(float x) {
    float got = stax_scalar::erf(x);
    double e = ulp_error(got, std::erf(static_cast<double>(x)));
    ++n;
    if (e > worst) worst = e, worst_x = x;
    // odd: erf(-x) is -erf(x) bit for bit
    float neg = stax_scalar::erf(-x);
    if (bits(neg) != (bits(got) ^ 0x80000000u)) {
      ADD_FAILURE() << "erf(" << -x << ") = " << neg << " is not -erf(" << x << ") = " << got;
    }
  }
  void range(float lo, float hi, uint32_t step = 1) {
    for (uint32_t u = bits(lo); u <= bits(hi); u += step) check(from_bits(u));
  }
};

TEST(ErfF32, WithinTheBoundOverEveryExponentAndEveryFloatNearTheSplits) {
  Sweep s;
  if (std::getenv("STAX_ERF_EXHAUSTIVE")) {
    s.range(0.0f, from_bits(0x7f7fffffu));
  } else {
    s.range(0.0f, from_bits(0x7f7fffffu), 1009);  // every exponent, 2.1 M floats
    s.range(0.72f, 0.78f);                         // every float across the 0.75 split
    s.range(1.45f, 1.55f);                         // every float across the 1.5 split
    s.range(3.9f, 4.0f);                           // across 3.9192 (erf rounds to 1) and the clamp
    s.range(0.0f, 1e-37f, 97);                     // subnormals and the smallest normals
  }
  EXPECT_LE(s.worst, kBoundUlp) << "at x = " << s.worst_x;
  std::printf("erf(float): %llu inputs, largest error %.4f ULP at %.9g\n",
              static_cast<unsigned long long>(s.n), s.worst, s.worst_x);
}

TEST(ErfF32, SpecialValues) {
  EXPECT_EQ(bits(stax_scalar::erf(0.0f)), 0u);
  EXPECT_EQ(bits(stax_scalar::erf(-0.0f)), 0x80000000u);
  EXPECT_EQ(stax_scalar::erf(INFINITY), 1.0f);
  EXPECT_EQ(stax_scalar::erf(-INFINITY), -1.0f);
  // erf rounds to 1 from 3.9192 on; the formula returns 1 from 3.92347 on (within its bound)
  EXPECT_EQ(stax_scalar::erf(3.9235f), 1.0f);
  EXPECT_EQ(stax_scalar::erf(3.95f), 1.0f);
  EXPECT_LT(stax_scalar::erf(3.9f), 1.0f);
  EXPECT_EQ(stax_scalar::erf(1e30f), 1.0f);
  EXPECT_EQ(stax_scalar::erf(from_bits(1)), from_bits(1));  // 2^-149 * 2/sqrt(pi) rounds to 2^-149
  EXPECT_EQ(bits(stax_scalar::erf(NAN)), 0x7fc00000u);     // the canonical NaN
  EXPECT_EQ(bits(stax_scalar::erf(from_bits(0xffc01234u))), 0x7fc00000u);
}

// Inputs that cross every region, with edge values.
std::vector<float> region_inputs(size_t n) {
  return test::region_inputs({0.0f, -0.0f, 0.75f, -0.75f, std::nextafter(0.75f, 0.0f), 1.5f,
                              -1.5f, std::nextafter(1.5f, 0.0f), 3.95f, -3.95f, 3.9192f, INFINITY,
                              -INFINITY, NAN, -NAN, 1e-45f, -1e-45f, 1e-38f, 1e30f},
                             n, 10.0f);
}

TEST(ErfF32, TheC99HeaderComputesTheSameBits) {
  for (float x : region_inputs(200000)) {
    float a = stax_scalar::erf(x), b = c99_erf_f32(x);
    ASSERT_TRUE(bits(a) == bits(b)) << "x = " << x << ": " << a << " vs " << b;
  }
}

TEST(ErfF32, CompiledKernelsAreBitwiseTheInterpreter) {
  ::setenv("STAX_CACHE_DIR", "off", 1);
  std::vector<float> in = region_inputs(64 * 1031);
  Tensor x = Tensor::from_vector({64, 1031}, in);
  Graph g;
  g.output({g.call("erf", {g.placeholder("x", {64, 1031})})});
  std::vector<Tensor> want = interpret(g, {x});
  for (bool vector_printer : {false, true}) {
    Config c = Config::default_cpu();
    c.plugin_path = {STAX_PLUGIN_DIR};
    c.devices["cpu"].options.set("vector_printer",
                                 OptionValue::make_scalar(vector_printer ? "true" : "false"));
    Compiler compiler(c);
    CompiledGraph cg = compiler.compile(g);
    ASSERT_EQ(cg.kernels().size(), 1u);
    // the vector printer's erf (16 lanes) or the scalar text in Clang's vectorised loop
    EXPECT_EQ(cg.kernels()[0].source.find("erf(stax_vf") != std::string::npos, vector_printer);
    std::vector<Tensor> got = cg.run({x});
    EXPECT_TRUE(got[0].equal(want[0])) << "vector_printer " << vector_printer << "\n"
                                       << got[0].summary() << "\n" << want[0].summary();
  }
}

}  // namespace
