// Tests of core/types/half.h: float16 and bfloat16 conversions against exhaustive enumeration
// and an independent round-to-nearest-even oracle.
#include "core/types/half.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/tensor/tensor.h"

namespace stax {
namespace {

bool half_is_nan(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }
bool bf16_is_nan(uint16_t b) { return (b & 0x7f80u) == 0x7f80u && (b & 0x7fu) != 0; }
float bits_float(uint32_t b) { return std::bit_cast<float>(b); }

// Nearest-even rounding of x to a 16-bit format whose non-negative finite values are the bit
// patterns 0 .. inf_bits - 1 (ascending in value) and whose next power (the value "inf_bits" would
// have with an unbounded exponent) is `beyond`. Computed by search in double arithmetic, with no
// bit tricks, so it is independent of the code under test.
class RoundingOracle {
 public:
  RoundingOracle(uint16_t inf_bits, float (*to_float)(uint16_t), double beyond) : inf_(inf_bits) {
    for (uint32_t b = 0; b < inf_bits; ++b) values_.push_back(to_float(static_cast<uint16_t>(b)));
    values_.push_back(beyond);
  }
  uint16_t round(float f) const {
    double x = std::fabs(static_cast<double>(f));
    uint16_t sign = std::signbit(f) ? 0x8000 : 0;
    if (x >= values_.back()) return sign | inf_;
    // i: the largest representable value <= x.
    size_t i = static_cast<size_t>(std::upper_bound(values_.begin(), values_.end(), x) -
                                   values_.begin()) - 1;
    double lo = values_[i], hi = values_[i + 1];
    size_t pick;
    if (x - lo < hi - x) pick = i;
    else if (x - lo > hi - x) pick = i + 1;
    else pick = (i % 2 == 0) ? i : i + 1;  // tie: even significand
    return static_cast<uint16_t>(sign | pick);
  }

 private:
  uint16_t inf_;
  std::vector<double> values_;
};

// Floats to test rounding on: a stride through all bit patterns plus the neighbourhood of every
// halfway point of the target format.
std::vector<float> sample_floats(float (*to_float)(uint16_t), uint16_t inf_bits) {
  std::vector<float> out;
  for (uint64_t b = 0; b < (1ull << 32); b += 4099) out.push_back(bits_float(uint32_t(b)));
  for (uint32_t h = 0; h + 1 < inf_bits; ++h) {
    double mid = (double(to_float(uint16_t(h))) + double(to_float(uint16_t(h + 1)))) / 2;
    float m = static_cast<float>(mid);  // exact: midpoints of 16-bit formats fit in float
    uint32_t mb = std::bit_cast<uint32_t>(m);
    for (int d = -2; d <= 2; ++d) {
      out.push_back(bits_float(mb + uint32_t(d)));
      out.push_back(-bits_float(mb + uint32_t(d)));
    }
  }
  return out;
}

// ---- float16 ------------------------------------------------------------------------------------

static_assert(float_to_half_bits(1.0f) == 0x3c00);
static_assert(half_bits_to_float(0x3c00) == 1.0f);
static_assert(Half(2.5f).bits == 0x4100);

TEST(HalfTest, RoundTripsAll65536Patterns) {
  int nans = 0;
  for (uint32_t b = 0; b < 65536; ++b) {
    uint16_t h = static_cast<uint16_t>(b);
    float f = half_bits_to_float(h);
    uint16_t back = float_to_half_bits(f);
    if (half_is_nan(h)) {
      ++nans;
      ASSERT_TRUE(std::isnan(f)) << std::hex << b;
      ASSERT_TRUE(half_is_nan(back)) << std::hex << b;
      ASSERT_EQ(back & 0x8000, h & 0x8000) << "NaN sign kept " << std::hex << b;
      ASSERT_EQ(back & 0x200, 0x200) << "NaN is quiet " << std::hex << b;
      if (h & 0x200) {
        ASSERT_EQ(back, h) << "quiet NaN payload kept " << std::hex << b;
      }
    } else {
      ASSERT_EQ(back, h) << std::hex << b;
    }
  }
  EXPECT_EQ(nans, 2 * 1023);
}

TEST(HalfTest, DecodesKnownValues) {
  EXPECT_EQ(half_bits_to_float(0x0000), 0.0f);
  EXPECT_TRUE(std::signbit(half_bits_to_float(0x8000)));
  EXPECT_EQ(half_bits_to_float(0x3c00), 1.0f);
  EXPECT_EQ(half_bits_to_float(0xc000), -2.0f);
  EXPECT_EQ(half_bits_to_float(0x7bff), 65504.0f);
  EXPECT_EQ(half_bits_to_float(0x0400), std::ldexp(1.0f, -14));  // smallest normal
  EXPECT_EQ(half_bits_to_float(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(half_bits_to_float(0x03ff), 1023 * std::ldexp(1.0f, -24));  // largest subnormal
  EXPECT_EQ(half_bits_to_float(0x3555), 0.333251953125f);
  EXPECT_EQ(half_bits_to_float(0x7c00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(half_bits_to_float(0xfc00), -std::numeric_limits<float>::infinity());
}

TEST(HalfTest, RoundsKnownValuesToNearestEven) {
  EXPECT_EQ(float_to_half_bits(0.1f), 0x2e66);
  EXPECT_EQ(float_to_half_bits(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half_bits(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half_bits(65519.996f), 0x7bff);
  EXPECT_EQ(float_to_half_bits(65520.0f), 0x7c00);  // halfway to 2^16: ties to even = Inf
  EXPECT_EQ(float_to_half_bits(1e10f), 0x7c00);
  EXPECT_EQ(float_to_half_bits(-1e10f), 0xfc00);
  EXPECT_EQ(float_to_half_bits(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // tie -> even
  EXPECT_EQ(float_to_half_bits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie -> even
  EXPECT_EQ(float_to_half_bits(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3c01);
  // 2047.5 * 2^-10 ... the largest value below 2 rounds up into the next binade.
  EXPECT_EQ(float_to_half_bits(2.0f - std::ldexp(1.0f, -12)), 0x4000);
  // Subnormals (units of 2^-24).
  float unit = std::ldexp(1.0f, -24);
  EXPECT_EQ(float_to_half_bits(unit), 0x0001);
  EXPECT_EQ(float_to_half_bits(0.5f * unit), 0x0000);   // tie -> even (zero)
  EXPECT_EQ(float_to_half_bits(0.51f * unit), 0x0001);
  EXPECT_EQ(float_to_half_bits(1.5f * unit), 0x0002);   // tie -> even
  EXPECT_EQ(float_to_half_bits(2.5f * unit), 0x0002);   // tie -> even
  EXPECT_EQ(float_to_half_bits(1023.5f * unit), 0x0400);  // rounds into the smallest normal
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -26)), 0x0000);
  EXPECT_EQ(float_to_half_bits(-std::ldexp(1.0f, -26)), 0x8000);
  EXPECT_EQ(float_to_half_bits(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(float_to_half_bits(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_TRUE(half_is_nan(float_to_half_bits(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(half_is_nan(float_to_half_bits(bits_float(0x7f800001))));  // NaN, not Inf
  EXPECT_TRUE(half_is_nan(float_to_half_bits(bits_float(0xffc00000))));
}

TEST(HalfTest, MatchesRoundingOracleOnLargeSample) {
  RoundingOracle oracle(0x7c00, half_bits_to_float, 65536.0);
  std::vector<float> sample = sample_floats(half_bits_to_float, 0x7c00);
  ASSERT_GT(sample.size(), 1000000u);
  int64_t checked = 0;
  for (float f : sample) {
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_half_bits(f), oracle.round(f))
        << "float bits 0x" << std::hex << std::bit_cast<uint32_t>(f);
    ++checked;
  }
  EXPECT_GT(checked, 1000000);
}

TEST(HalfTest, ArithmeticGoesThroughFloat) {
  Half a = 1.5f, b = 2.25f;
  Half c = a + b;
  EXPECT_EQ(static_cast<float>(c), 3.75f);
  EXPECT_EQ(Half::from_bits(0x3c00), Half(1.0f));
  EXPECT_LT(Half(1.0f), Half(2.0f));
  // double -> half rounds through float (PyTorch's c10::Half semantics): 1 + 2^-11 + 2^-40 is
  // above the halfway point in double, but float(d) drops the 2^-40 and the tie goes to even.
  double d = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  EXPECT_EQ(convert_value<Half>(d).bits, 0x3c00);
}

// ---- bfloat16 -----------------------------------------------------------------------------------

static_assert(float_to_bf16_bits(1.0f) == 0x3f80);
static_assert(bf16_bits_to_float(0x4049) == 3.140625f);

TEST(BFloat16Test, RoundTripsAll65536Patterns) {
  for (uint32_t b = 0; b < 65536; ++b) {
    uint16_t h = static_cast<uint16_t>(b);
    float f = bf16_bits_to_float(h);
    uint16_t back = float_to_bf16_bits(f);
    if (bf16_is_nan(h)) {
      ASSERT_TRUE(std::isnan(f));
      ASSERT_TRUE(bf16_is_nan(back)) << std::hex << b;
      ASSERT_EQ(back & 0x8000, h & 0x8000);
    } else {
      ASSERT_EQ(back, h) << std::hex << b;
    }
  }
}

TEST(BFloat16Test, RoundsKnownValuesToNearestEven) {
  EXPECT_EQ(float_to_bf16_bits(3.14159265f), 0x4049);
  EXPECT_EQ(float_to_bf16_bits(-1.0f), 0xbf80);
  EXPECT_EQ(float_to_bf16_bits(-0.0f), 0x8000);
  EXPECT_EQ(float_to_bf16_bits(1.0f + std::ldexp(1.0f, -8)), 0x3f80);      // tie -> even
  EXPECT_EQ(float_to_bf16_bits(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);  // tie -> even
  EXPECT_EQ(float_to_bf16_bits(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)), 0x3f81);
  EXPECT_EQ(float_to_bf16_bits(1.0f + std::ldexp(1.0f, -8) - std::ldexp(1.0f, -20)), 0x3f80);
  EXPECT_EQ(float_to_bf16_bits(bits_float(0x7f7fffff)), 0x7f80);  // FLT_MAX rounds to Inf
  EXPECT_EQ(float_to_bf16_bits(bits_float(0x7f7f7fff)), 0x7f7f);
  EXPECT_EQ(float_to_bf16_bits(bits_float(0x7f7f8000)), 0x7f80);  // tie at the top: even = Inf
  EXPECT_EQ(float_to_bf16_bits(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(float_to_bf16_bits(bits_float(0x00000001)), 0x0000);  // float subnormals
  EXPECT_EQ(float_to_bf16_bits(bits_float(0x00008000)), 0x0000);  // tie -> even
  EXPECT_EQ(float_to_bf16_bits(bits_float(0x00018000)), 0x0002);  // tie -> even
  EXPECT_EQ(float_to_bf16_bits(bits_float(0x00010001)), 0x0001);
  // A signalling NaN whose payload lies only in the low bits must stay NaN (naive rounding would
  // carry it into Inf or truncate it to Inf).
  EXPECT_TRUE(bf16_is_nan(float_to_bf16_bits(bits_float(0x7f800001))));
  EXPECT_TRUE(bf16_is_nan(float_to_bf16_bits(bits_float(0x7fffffff))));
  EXPECT_EQ(float_to_bf16_bits(bits_float(0xffc00000)), 0xffc0);
}

TEST(BFloat16Test, MatchesRoundingOracleOnLargeSample) {
  RoundingOracle oracle(0x7f80, bf16_bits_to_float, std::ldexp(1.0, 128));
  std::vector<float> sample = sample_floats(bf16_bits_to_float, 0x7f80);
  int64_t checked = 0;
  for (float f : sample) {
    if (std::isnan(f) || std::isinf(f)) continue;
    ASSERT_EQ(float_to_bf16_bits(f), oracle.round(f))
        << "float bits 0x" << std::hex << std::bit_cast<uint32_t>(f);
    ++checked;
  }
  EXPECT_GT(checked, 1000000);
}

TEST(BFloat16Test, ConvertsThroughFloat) {
  BFloat16 a = 1.5f;
  EXPECT_EQ(a.bits, 0x3fc0);
  EXPECT_EQ(static_cast<float>(a * 2.0f), 3.0f);
  EXPECT_EQ(convert_value<BFloat16>(Half(0.5f)).bits, 0x3f00);
  EXPECT_EQ(convert_value<float>(BFloat16::from_bits(0x4049)), 3.140625f);
}

}  // namespace
}  // namespace stax
