// The plain C99 scalar semantics header (sdk/include/stax/sdk/scalar_ops.h) against the single
// definition, scalar_ops.hpp (DECISIONS item 1), bit for bit: every op of ops.def over every
// compute type it is defined for (f32 f64 i64 b8), on edge values (NaN of both signs, +-inf,
// +-0, subnormals, INT64_MIN / -1, wrap-around, saturation) and all their pairs; every dtype
// conversion (9 x 9) against the interpreter's to_dtype (kernel_utils.h store_as / widen, with
// core's own Half / BFloat16 rounding); the float16 / bfloat16 loads on all 65536 bit patterns
// and the stores on a float sweep dense around every rounding boundary. The C half
// (support/scalar_ops_c99_shim.c) is compiled by the C compiler as C99 with -ffp-contract=off.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "core/ops/common/kernel_utils.h"
#include "stax/sdk/scalar_ops.hpp"
#define STAX_SCALAR_OPS_LISTS_ONLY
#include "stax/sdk/scalar_ops.h"

using stax::kernels::i64;

extern "C" {
#define F1(op) float c99_##op##_f32(float); double c99_##op##_f64(double);
#define N1(op) F1(op) long long c99_##op##_i64(long long);
#define A1(op) N1(op) bool c99_##op##_b8(bool);
#define P1(op) \
  bool c99_##op##_f32(float); bool c99_##op##_f64(double); bool c99_##op##_i64(long long); \
  bool c99_##op##_b8(bool);
#define N2(op) \
  float c99_##op##_f32(float, float); double c99_##op##_f64(double, double); \
  long long c99_##op##_i64(long long, long long);
#define A2(op) N2(op) bool c99_##op##_b8(bool, bool);
#define C2(op) \
  bool c99_##op##_f32(float, float); bool c99_##op##_f64(double, double); \
  bool c99_##op##_i64(long long, long long); bool c99_##op##_b8(bool, bool);
STAX_C99_FLOAT_UNARY_OPS(F1)
STAX_C99_NUMERIC_UNARY_OPS(N1)
STAX_C99_ANY_UNARY_OPS(A1)
STAX_C99_ANY_PREDICATE_OPS(P1)
STAX_C99_NUMERIC_BINARY_OPS(N2)
STAX_C99_ANY_BINARY_OPS(A2)
STAX_C99_ANY_COMPARE_OPS(C2)
#define I2(op) long long c99_##op##_i64(long long, long long); bool c99_##op##_b8(bool, bool);
STAX_C99_INTEGRAL_BINARY_OPS(I2)
#undef I2
#undef F1
#undef N1
#undef A1
#undef P1
#undef N2
#undef A2
#undef C2
#define TO(from, C, to, R) R c99_convert_##from##_##to(C);
#define FROM(from, C)                                                                     \
  TO(from, C, f32, float) TO(from, C, f64, double) TO(from, C, f16, float)                 \
  TO(from, C, bf16, float) TO(from, C, i64, long long) TO(from, C, i32, long long)         \
  TO(from, C, i8, long long) TO(from, C, u8, long long) TO(from, C, b8, bool)            \
  TO(from, C, i16, long long) TO(from, C, u16, long long) TO(from, C, u32, long long)     \
  TO(from, C, u64, long long)
STAX_C99_DTYPES(FROM)
#undef TO
#undef FROM
float c99_f16_load(unsigned short);
unsigned short c99_f16_store(float);
float c99_bf16_load(unsigned short);
unsigned short c99_bf16_store(float);
long long c99_index_min(long long, long long);
long long c99_index_max(long long, long long);
}

namespace {

template <class T>
std::vector<T> edge_values();
template <>
std::vector<float> edge_values() {
  float inf = std::numeric_limits<float>::infinity();
  float nan = std::numeric_limits<float>::quiet_NaN();
  return {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, -0.5f, 1.5f, 2.5f, -2.5f, 2.0f, 3.0f, -7.0f, 7.0f,
          0.1f, 1.0f / 3.0f, 3.14159265f, 1e-40f, -1e-45f, 1.17549435e-38f, 65504.0f, 65520.0f,
          1e10f, -1e10f, 3.4e38f, -3.4e38f, 2147483648.0f, 9.3e18f, -9.3e18f, 300.0f, -129.0f,
          1.00048828125f /* 1 + 2^-11: a float16 tie */, 1.00146484375f, 88.7f, -88.7f, inf,
          -inf, nan, -nan};
}
template <>
std::vector<double> edge_values() {
  double inf = std::numeric_limits<double>::infinity();
  double nan = std::numeric_limits<double>::quiet_NaN();
  return {0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 2.0, 3.0, -7.0, 7.0, 0.1, 1.0 / 3.0,
          3.141592653589793, 5e-324, -2.2250738585072014e-308, 65504.0, 65520.0, 1e300, -1e300,
          1.7976931348623157e308, 9.3e18, -9.3e18, 9.2233720368547758e18, 2147483648.0, 300.0,
          -129.0, 1.00048828125, 1.0004882812500002, 709.0, -745.0, inf, -inf, nan, -nan};
}
template <>
std::vector<i64> edge_values() {
  i64 mn = std::numeric_limits<i64>::min(), mx = std::numeric_limits<i64>::max();
  return {0, 1, -1, 2, -2, 3, -3, 7, -7, 63, 64, 100, 255, 256, -128, -129, 2147483647,
          2147483648LL, -2147483649LL, 1LL << 53, (1LL << 53) + 1, mn, mn + 1, mx, mx - 1};
}
template <>
std::vector<bool> edge_values() {
  return {false, true};
}

template <class T>
std::string show(T v) {
  if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
  else if constexpr (std::is_floating_point_v<T>) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", static_cast<double>(v));
    return buf;
  } else {
    return std::to_string(v);
  }
}

template <class R>
bool same_bits(R a, R b) {
  if constexpr (std::is_same_v<R, bool>) return a == b;
  else return std::memcmp(&a, &b, sizeof(R)) == 0;
}

int checked = 0;  // comparisons made (the test fails if a list is empty)

template <class T, class R, class Ref>
void check_unary(const char* name, R (*c99)(T), Ref ref) {
  for (T x : edge_values<T>()) {
    R got = c99(x), want = ref(x);
    ++checked;
    EXPECT_TRUE(same_bits(got, want))
        << name << "(" << show(x) << "): C99 " << show(got) << ", C++ " << show(want);
  }
}

template <class T, class R, class Ref>
void check_binary(const char* name, R (*c99)(T, T), Ref ref) {
  for (T a : edge_values<T>())
    for (T b : edge_values<T>()) {
      R got = c99(a, b), want = ref(a, b);
      ++checked;
      EXPECT_TRUE(same_bits(got, want)) << name << "(" << show(a) << ", " << show(b) << "): C99 "
                                        << show(got) << ", C++ " << show(want);
    }
}

// The interpreter's to_dtype on one value: From (a storage type) held in its compute type,
// converted to storage type To (store_as: convert, then round / wrap), read back (widen).
template <class From, class To>
auto reference_convert(stax::kernels::compute_t<From> x) {
  using namespace stax::kernels;
  return widen(store_as<To>(x));
}

template <class From, class To, class R>
void check_convert(const char* name, R (*c99)(stax::kernels::compute_t<From>)) {
  using C = stax::kernels::compute_t<From>;
  for (C x : edge_values<C>()) {
    R got = c99(x);
    R want = static_cast<R>(reference_convert<From, To>(x));
    ++checked;
    EXPECT_TRUE(same_bits(got, want))
        << name << "(" << show(x) << "): C99 " << show(got) << ", interpreter " << show(want);
  }
}

}  // namespace

TEST(ScalarOpsC99, EveryOpOfOpsDefIsListed) {
  std::set<std::string> listed, defined;
#define L(op) listed.insert(#op);
  STAX_C99_FLOAT_UNARY_OPS(L)
  STAX_C99_NUMERIC_UNARY_OPS(L)
  STAX_C99_ANY_UNARY_OPS(L)
  STAX_C99_ANY_PREDICATE_OPS(L)
  STAX_C99_NUMERIC_BINARY_OPS(L)
  STAX_C99_ANY_BINARY_OPS(L)
  STAX_C99_ANY_COMPARE_OPS(L)
  STAX_C99_INTEGRAL_BINARY_OPS(L)
#undef L
#define STAX_UNARY_OP(op) defined.insert(#op);
#define STAX_BINARY_OP(op) defined.insert(#op);
#define STAX_COMPARE_OP(op) defined.insert(#op);
#include "stax/sdk/ops.def"
  EXPECT_EQ(listed, defined);
}

TEST(ScalarOpsC99, OpsAgreeBitForBit) {
  checked = 0;
#define F1(op)                                                                               \
  check_unary<float>(#op "_f32", c99_##op##_f32, [](float x) { return stax_scalar::op(x); }); \
  check_unary<double>(#op "_f64", c99_##op##_f64, [](double x) { return stax_scalar::op(x); });
#define N1(op) \
  F1(op) check_unary<i64>(#op "_i64", c99_##op##_i64, [](i64 x) { return stax_scalar::op(x); });
#define A1(op) \
  N1(op) check_unary<bool>(#op "_b8", c99_##op##_b8, [](bool x) { return stax_scalar::op(x); });
#define B2(op, T, t) \
  check_binary<T>(#op "_" #t, c99_##op##_##t, [](T a, T b) { return stax_scalar::op(a, b); });
#define N2(op) B2(op, float, f32) B2(op, double, f64) B2(op, i64, i64)
#define A2(op) N2(op) B2(op, bool, b8)
  STAX_C99_FLOAT_UNARY_OPS(F1)
  STAX_C99_NUMERIC_UNARY_OPS(N1)
  STAX_C99_ANY_UNARY_OPS(A1)
  STAX_C99_ANY_PREDICATE_OPS(A1)
  STAX_C99_NUMERIC_BINARY_OPS(N2)
  STAX_C99_ANY_BINARY_OPS(A2)
  STAX_C99_ANY_COMPARE_OPS(A2)
#define I2(op) B2(op, i64, i64) B2(op, bool, b8)
  STAX_C99_INTEGRAL_BINARY_OPS(I2)
#undef I2
  check_binary<i64>("index_min", c99_index_min,
                    [](i64 a, i64 b) { return stax_scalar::index_min(a, b); });
  check_binary<i64>("index_max", c99_index_max,
                    [](i64 a, i64 b) { return stax_scalar::index_max(a, b); });
  EXPECT_GT(checked, 20000);
}

TEST(ScalarOpsC99, ConversionsAgreeWithTheInterpreter) {
  using stax::BFloat16;
  using stax::Half;
  checked = 0;
#define TO(from, F, to, T) check_convert<F, T>(#from "_to_" #to, c99_convert_##from##_##to);
#define FROM(from, F)                                                                       \
  TO(from, F, f32, float) TO(from, F, f64, double) TO(from, F, f16, Half)                    \
  TO(from, F, bf16, BFloat16) TO(from, F, i64, int64_t) TO(from, F, i32, int32_t)            \
  TO(from, F, i8, int8_t) TO(from, F, u8, uint8_t) TO(from, F, b8, bool)                    \
  TO(from, F, i16, int16_t) TO(from, F, u16, uint16_t) TO(from, F, u32, uint32_t)            \
  TO(from, F, u64, uint64_t)
  FROM(f32, float)
  FROM(f64, double)
  FROM(f16, Half)
  FROM(bf16, BFloat16)
  FROM(i64, int64_t)
  FROM(i32, int32_t)
  FROM(i8, int8_t)
  FROM(u8, uint8_t)
  FROM(b8, bool)
  FROM(i16, int16_t)
  FROM(u16, uint16_t)
  FROM(u32, uint32_t)  // (from u64 the C99 conversions read the bits unsigned: int_dtypes_test)
  EXPECT_GT(checked, 1000);
}

TEST(ScalarOpsC99, SixteenBitFloatStorage) {
  for (uint32_t b = 0; b < 65536; ++b) {
    uint16_t bits = static_cast<uint16_t>(b);
    float h = stax::Half::from_bits(bits), bf = stax::BFloat16::from_bits(bits);
    float gh = c99_f16_load(bits), gbf = c99_bf16_load(bits);
    ASSERT_TRUE(same_bits(gh, h)) << "f16 load " << b;
    ASSERT_TRUE(same_bits(gbf, bf)) << "bf16 load " << b;
  }
  // stores: every float's top 16 bits (sign, exponent, bfloat16 mantissa) with low halves around
  // the rounding points of both formats (float16 drops 13 bits, bfloat16 16: exact, just below,
  // at and just above each midpoint, ties of both parities), plus the edge values
  std::vector<float> xs = edge_values<float>();
  for (uint32_t hi = 0; hi < (1u << 16); ++hi)
    for (uint32_t lo : {0x0000u, 0x0fffu, 0x1000u, 0x1001u, 0x1fffu, 0x2000u, 0x3000u, 0x3001u,
                        0x7fffu, 0x8000u, 0x8001u, 0x9000u, 0xe000u, 0xf000u, 0xffffu}) {
      uint32_t u = (hi << 16) | lo;
      float f;
      std::memcpy(&f, &u, 4);
      xs.push_back(f);
    }
  for (float x : xs) {
    ASSERT_EQ(c99_f16_store(x), stax::Half(x).bits) << show(x);
    ASSERT_EQ(c99_bf16_store(x), stax::BFloat16(x).bits) << show(x);
  }
}
