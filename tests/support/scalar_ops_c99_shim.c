/* scalar_ops_c99_test's C half: every function of stax/sdk/scalar_ops.h (compiled as C99 with
 * -ffp-contract=off, as C kernels are) behind an extern "c99_<name>" symbol the C++ half calls. */
#include "stax/sdk/scalar_ops.h"

#define F1(op)                                                  \
  float c99_##op##_f32(float x) { return stax_##op##_f32(x); } \
  double c99_##op##_f64(double x) { return stax_##op##_f64(x); }
#define N1(op) F1(op) long long c99_##op##_i64(long long x) { return stax_##op##_i64(x); }
#define A1(op) N1(op) bool c99_##op##_b8(bool x) { return stax_##op##_b8(x); }
#define P1(op)                                                        \
  bool c99_##op##_f32(float x) { return stax_##op##_f32(x); }         \
  bool c99_##op##_f64(double x) { return stax_##op##_f64(x); }        \
  bool c99_##op##_i64(long long x) { return stax_##op##_i64(x); }     \
  bool c99_##op##_b8(bool x) { return stax_##op##_b8(x); }
#define N2(op)                                                                            \
  float c99_##op##_f32(float a, float b) { return stax_##op##_f32(a, b); }               \
  double c99_##op##_f64(double a, double b) { return stax_##op##_f64(a, b); }            \
  long long c99_##op##_i64(long long a, long long b) { return stax_##op##_i64(a, b); }
#define A2(op) N2(op) bool c99_##op##_b8(bool a, bool b) { return stax_##op##_b8(a, b); }
#define C2(op)                                                                         \
  bool c99_##op##_f32(float a, float b) { return stax_##op##_f32(a, b); }              \
  bool c99_##op##_f64(double a, double b) { return stax_##op##_f64(a, b); }            \
  bool c99_##op##_i64(long long a, long long b) { return stax_##op##_i64(a, b); }      \
  bool c99_##op##_b8(bool a, bool b) { return stax_##op##_b8(a, b); }
STAX_C99_FLOAT_UNARY_OPS(F1)
STAX_C99_NUMERIC_UNARY_OPS(N1)
STAX_C99_ANY_UNARY_OPS(A1)
STAX_C99_ANY_PREDICATE_OPS(P1)
STAX_C99_NUMERIC_BINARY_OPS(N2)
STAX_C99_ANY_BINARY_OPS(A2)
STAX_C99_ANY_COMPARE_OPS(C2)
#define I2(op)                                                                         \
  long long c99_##op##_i64(long long a, long long b) { return stax_##op##_i64(a, b); } \
  bool c99_##op##_b8(bool a, bool b) { return stax_##op##_b8(a, b); }
STAX_C99_INTEGRAL_BINARY_OPS(I2)

/* conversions: every (from, to) pair; the C++ half declares the same list */
#define TO(from, C, to, R) \
  R c99_convert_##from##_##to(C x) { return stax_convert_##from##_##to(x); }
#define FROM(from, C)                                                                     \
  TO(from, C, f32, float) TO(from, C, f64, double) TO(from, C, f16, float)                 \
  TO(from, C, bf16, float) TO(from, C, i64, long long) TO(from, C, i32, long long)         \
  TO(from, C, i8, long long) TO(from, C, u8, long long) TO(from, C, b8, bool)            \
  TO(from, C, i16, long long) TO(from, C, u16, long long) TO(from, C, u32, long long)     \
  TO(from, C, u64, long long)
STAX_C99_DTYPES(FROM)

float c99_f16_load(unsigned short x) { return stax_f16_load(x); }
unsigned short c99_f16_store(float x) { return stax_f16_store(x); }
float c99_bf16_load(unsigned short x) { return stax_bf16_load(x); }
unsigned short c99_bf16_store(float x) { return stax_bf16_store(x); }
long long c99_index_min(long long a, long long b) { return stax_index_min(a, b); }
long long c99_index_max(long long a, long long b) { return stax_index_max(a, b); }
