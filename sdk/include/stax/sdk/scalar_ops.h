/* The scalar semantics of every loop-level op of ops.def, in plain C99: what a C kernel printed
 * with CStylePrinter's c99_tables() calls. Same results as stax/sdk/scalar_ops.hpp (the single
 * definition the reference interpreter executes, DECISIONS item 1), bit for bit: the test
 * c99_scalar_ops_test compiles both and compares every op over every compute type on edge values
 * (NaN, +-inf, +-0, INT64_MIN / -1, float16 / bfloat16 rounding). Keep the two in step: a change
 * of semantics there is a change here, and the test fails until it is made.
 *
 * Names: stax_<op>_<t> with t the compute type of the operands: f32 (float; float16 and bfloat16
 * compute in float), f64 (double), i64 (long long; every integer dtype computes in int64) and b8
 * (bool). An op exists for the compute types the interpreter defines it for (the lists below).
 * Conversions: stax_convert_<from>_<to>(x) for the 13 dtypes (f32 f64 f16 bf16 i64 i32 i8 u8 b8
 * i16 u16 u32 u64; u64 is held as its bits in a long long and converts to floats as unsigned):
 * x in from's compute type, converted as to_dtype does (floating -> integer truncates and
 * goes through int64 (NaN, inf, out of range: INT64_MIN), integers wrap to the target width, 16-bit floats round to nearest
 * even), the result in to's compute type. Storage of float16 / bfloat16: unsigned short bits,
 * stax_f16_load / stax_f16_store and stax_bf16_load / stax_bf16_store (half_bits.hpp, the same
 * text the C++ kernels use).
 *
 * Defined for every input: integer division by zero is 0; int64 add / sub / mul / neg / abs / pow
 * wrap around; INT64_MIN / -1 is INT64_MIN, INT64_MIN % -1 is 0. Compile kernels with
 * -ffp-contract=off (no fused multiply-add), as the C++ ones are. */
#ifndef STAX_SDK_SCALAR_OPS_H
#define STAX_SDK_SCALAR_OPS_H

/* The ops by the compute types they are defined for (what the test iterates). */
#define STAX_C99_FLOAT_UNARY_OPS(X) /* f32 f64 */                                              \
  X(exp) X(exp2) X(expm1) X(log) X(log2) X(log10) X(log1p) X(sqrt) X(rsqrt) X(sin) X(cos) X(tan) \
  X(tanh) X(sigmoid) X(erf) X(reciprocal)
#define STAX_C99_NUMERIC_UNARY_OPS(X) /* f32 f64 i64 */ X(floor) X(ceil) X(round) X(trunc)
#define STAX_C99_ANY_UNARY_OPS(X) /* f32 f64 i64 b8 */ X(neg) X(abs) X(relu) X(sign)
#define STAX_C99_ANY_PREDICATE_OPS(X) /* f32 f64 i64 b8, result bool */ X(logical_not) X(isnan)
#define STAX_C99_NUMERIC_BINARY_OPS(X) /* f32 f64 i64 */ \
  X(sub) X(truediv) X(floordiv) X(mod) X(pow)
#define STAX_C99_ANY_BINARY_OPS(X) /* f32 f64 i64 b8 */ X(add) X(mul) X(maximum) X(minimum)
#define STAX_C99_ANY_COMPARE_OPS(X) /* f32 f64 i64 b8, result bool */ \
  X(logical_and) X(logical_or) X(eq) X(ne) X(lt) X(le) X(gt) X(ge)
#define STAX_C99_INTEGRAL_BINARY_OPS(X) /* i64 b8 (ABI 1.8) */ \
  X(bitwise_and) X(bitwise_or) X(bitwise_xor)
/* dtype name, compute type */
#define STAX_C99_DTYPES(X)                                                                    \
  X(f32, float) X(f64, double) X(f16, float) X(bf16, float) X(i64, long long) X(i32, long long) \
  X(i8, long long) X(u8, long long) X(b8, bool) X(i16, long long) X(u16, long long)               \
  X(u32, long long)

/* STAX_SCALAR_OPS_LISTS_ONLY: only the lists above (for tests in C++) */
#ifndef STAX_SCALAR_OPS_LISTS_ONLY
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "stax/sdk/half_bits.hpp"

typedef long long stax_i64;
typedef unsigned long long stax_u64;

/* Two's-complement wrap-around int64 arithmetic (defined for every input). */
static inline stax_i64 stax_wrap_add(stax_i64 a, stax_i64 b) { return (stax_i64)((stax_u64)a + (stax_u64)b); }
static inline stax_i64 stax_wrap_sub(stax_i64 a, stax_i64 b) { return (stax_i64)((stax_u64)a - (stax_u64)b); }
static inline stax_i64 stax_wrap_mul(stax_i64 a, stax_i64 b) { return (stax_i64)((stax_u64)a * (stax_u64)b); }
static inline bool stax_is_min_by_minus_one(stax_i64 a, stax_i64 b) {
  return b == -1 && a == (stax_i64)((stax_u64)1 << 63);
}

/* The transcendentals are SLEEF's deterministic scalar forms, as in scalar_ops.hpp (which explains
 * why): Sleef_cinz_<f>f1_u10purec / Sleef_cinz_<f>d1_u10purec from libsleef (link -lsleef). */
#define STAX_C99_SLEEF_DECL(name)                                       \
  float Sleef_cinz_##name##f1_u10purec(float);                          \
  double Sleef_cinz_##name##d1_u10purec(double);
STAX_C99_SLEEF_DECL(exp) STAX_C99_SLEEF_DECL(exp2) STAX_C99_SLEEF_DECL(expm1)
STAX_C99_SLEEF_DECL(log) STAX_C99_SLEEF_DECL(log2) STAX_C99_SLEEF_DECL(log10)
STAX_C99_SLEEF_DECL(log1p) STAX_C99_SLEEF_DECL(sin) STAX_C99_SLEEF_DECL(cos)
STAX_C99_SLEEF_DECL(tan) STAX_C99_SLEEF_DECL(tanh) STAX_C99_SLEEF_DECL(erf)
float Sleef_cinz_powf1_u10purec(float, float);
double Sleef_cinz_powd1_u10purec(double, double);
#undef STAX_C99_SLEEF_DECL

/* A NaN result is the default NaN (scalar_ops.hpp explains). */
static inline float stax_canon_f32(float r) { return r != r ? NAN : r; }
static inline double stax_canon_f64(double r) { return r != r ? (double)NAN : r; }
/* exp over float: Stax's own formula, the same steps as scalar_ops.hpp's exp_f32 (which explains
 * it): x clamped to [-104, 89], s = fma(x, log2 e, 1.5*2^23), n = s - 1.5*2^23 (s's low bits are
 * n), r = fma(n, -ln2_lo, fma(n, -ln2_hi, x)), exp(r) = u + fma(r^2, P(r), e) with u = 1 + r and
 * e its exact error, times 2^(n>>1) 2^(n-(n>>1)). fmaf is C99's: one rounding, so the same bits
 * as a vfmadd. At most 0.7941 ULP. */
static inline float stax_exp_impl_f32(float x) {
  float xc = x > -104.0f ? x : -104.0f;
  xc = xc < 89.0f ? xc : 89.0f;
  float s = fmaf(xc, 1.44269502162933349609375f, 12582912.0f);
  float n = s - 12582912.0f;
  float r = fmaf(n, -0.693147182464599609375f, xc);
  r = fmaf(n, 1.904654323148236e-09f, r);
  float p = fmaf(fmaf(fmaf(fmaf(1.381455921e-03f, r, 8.368736133e-03f), r, 4.166838899e-02f), r,
                      1.666652113e-01f), r, 4.999999404e-01f);
  float u = 1.0f + r;
  float e = (1.0f - u) + r;
  float y = u + fmaf(r * r, p, e);
  unsigned b, b1, s1b, s2b;
  float s1, s2;
  memcpy(&b, &s, sizeof b);
  b1 = b >> 1;
  s1b = (b1 + 127u) << 23;
  s2b = (b - b1 + 127u) << 23;
  memcpy(&s1, &s1b, sizeof s1);
  memcpy(&s2, &s2b, sizeof s2);
  y = (y * s1) * s2;
  return x != x ? NAN : y;
}
/* erf over float: Stax's own formula, the same steps as scalar_ops.hpp's erf_f32 (which explains
 * it): a = |x|; a < 0.75: fma(x, Q(x^2), x); 0.75 <= a < 1.5: 0.84375 - M(a - 1.125); else
 * 1 - T(min(a, 3.95) - 2.75); the last two with x's sign. Q, M, T by Horner in fmas (fmaf is C99's:
 * one rounding). At most 0.7615 ULP. */
static inline float stax_erf_impl_f32(float x) {
  float ax = fabsf(x);
  float z = x * x;
  float q = fmaf(9.461307491e-05f, z, -8.355375030e-04f);
  q = fmaf(q, z, 5.216690712e-03f);
  q = fmaf(q, z, -2.686474286e-02f);
  q = fmaf(q, z, 1.128377840e-01f);
  q = fmaf(q, z, -3.761263788e-01f);
  q = fmaf(q, z, 1.283791661e-01f);
  float small = fmaf(x, q, x);
  float tm = ax - 1.125f;
  float m = fmaf(5.604335573e-03f, tm, -9.483876638e-03f);
  m = fmaf(m, tm, -1.547973417e-02f);
  m = fmaf(m, tm, 6.131064147e-02f);
  m = fmaf(m, tm, -2.797647566e-02f);
  m = fmaf(m, tm, -1.624518335e-01f);
  m = fmaf(m, tm, 3.580582738e-01f);
  m = fmaf(m, tm, -3.182739615e-01f);
  m = fmaf(m, tm, -4.463823140e-02f);
  float a = ax < 3.95f ? ax : 3.95f;
  float tt = a - 2.75f;
  float t = fmaf(-2.261292138e-06f, tt, 4.139960765e-06f);
  t = fmaf(t, tt, 1.466897174e-05f);
  t = fmaf(t, tt, -6.012218728e-05f);
  t = fmaf(t, tt, 7.264544547e-05f);
  t = fmaf(t, tt, 9.360653348e-05f);
  t = fmaf(t, tt, -6.469347863e-04f);
  t = fmaf(t, tt, 1.655136701e-03f);
  t = fmaf(t, tt, -2.755520167e-03f);
  t = fmaf(t, tt, 3.258619690e-03f);
  t = fmaf(t, tt, -2.760430332e-03f);
  t = fmaf(t, tt, 1.612218330e-03f);
  t = fmaf(t, tt, -5.862754188e-04f);
  t = fmaf(t, tt, 1.006225211e-04f);
  bool mid = ax < 1.5f;
  float p = mid ? m : t;
  float base = mid ? 0.84375f : 1.0f;
  float large = copysignf(base - p, x);
  return stax_canon_f32(ax >= 0.75f ? large : small);
}
static inline double stax_erf_impl_f64(double x) { return stax_canon_f64(Sleef_cinz_erfd1_u10purec(x)); }
static inline double stax_exp_impl_f64(double x) { return stax_canon_f64(Sleef_cinz_expd1_u10purec(x)); }

/* ---- floating (T = float with libm suffix f and SLEEF suffix f1, or double and d1) ------------- */
#define STAX_C99_FLOAT_OPS(T, t, F, S)                                                             \
  static inline T stax_exp_##t(T x) { return stax_exp_impl_##t(x); }                              \
  static inline T stax_exp2_##t(T x) { return stax_canon_##t(Sleef_cinz_exp2##S##_u10purec(x)); }                  \
  static inline T stax_expm1_##t(T x) { return stax_canon_##t(Sleef_cinz_expm1##S##_u10purec(x)); }                \
  static inline T stax_log_##t(T x) { return stax_canon_##t(Sleef_cinz_log##S##_u10purec(x)); }                    \
  static inline T stax_log2_##t(T x) { return stax_canon_##t(Sleef_cinz_log2##S##_u10purec(x)); }                  \
  static inline T stax_log10_##t(T x) { return stax_canon_##t(Sleef_cinz_log10##S##_u10purec(x)); }                \
  /* above SLEEF's domain (1e38 / 1e307) log1p is log: scalar_ops.hpp */                         \
  static inline T stax_log1p_##t(T x) {                                                           \
    T r = Sleef_cinz_log1p##S##_u10purec(x);                                                      \
    T big = Sleef_cinz_log##S##_u10purec(x);                                                      \
    return stax_canon_##t(x > (sizeof(T) == 4 ? (T)1e38f : (T)1e307) ? big : r);                                  \
  }                                                                                              \
  static inline T stax_sqrt_##t(T x) { return sqrt##F(x); }                                      \
  static inline T stax_rsqrt_##t(T x) { return (T)1 / sqrt##F(x); }                              \
  static inline T stax_sin_##t(T x) { return stax_canon_##t(Sleef_cinz_sin##S##_u10purec(x)); }                    \
  static inline T stax_cos_##t(T x) { return stax_canon_##t(Sleef_cinz_cos##S##_u10purec(x)); }                    \
  static inline T stax_tan_##t(T x) { return stax_canon_##t(Sleef_cinz_tan##S##_u10purec(x)); }                    \
  static inline T stax_tanh_##t(T x) { return stax_canon_##t(Sleef_cinz_tanh##S##_u10purec(x)); }                  \
  static inline T stax_sigmoid_##t(T x) { return (T)1 / ((T)1 + stax_exp_##t(-x)); } \
  static inline T stax_erf_##t(T x) { return stax_erf_impl_##t(x); }                              \
  static inline T stax_reciprocal_##t(T x) { return (T)1 / x; }                                  \
  static inline T stax_floor_##t(T x) { return floor##F(x); }                                    \
  static inline T stax_ceil_##t(T x) { return ceil##F(x); }                                      \
  static inline T stax_round_##t(T x) { return nearbyint##F(x); } /* half to even */             \
  static inline T stax_trunc_##t(T x) { return trunc##F(x); }                                    \
  static inline T stax_neg_##t(T x) { return -x; }                                               \
  static inline T stax_abs_##t(T x) { return fabs##F(x); }                                       \
  static inline T stax_relu_##t(T x) { return x < (T)0 ? (T)0 : x; }                            \
  static inline T stax_sign_##t(T x) { return x > (T)0 ? (T)1 : (x < (T)0 ? (T)-1 : (T)0); }        \
  static inline bool stax_isnan_##t(T x) { return x != x; }                                      \
  static inline T stax_add_##t(T a, T b) { return a + b; }                                       \
  static inline T stax_sub_##t(T a, T b) { return a - b; }                                       \
  static inline T stax_mul_##t(T a, T b) { return a * b; }                                       \
  static inline T stax_truediv_##t(T a, T b) { return a / b; }                                   \
  /* Python floor division: torch's div_floor (fmod-based). */                                   \
  static inline T stax_floordiv_##t(T a, T b) {                                                  \
    T mod, div, fl;                                                                              \
    if (b == (T)0) return a / b;                                                                 \
    mod = fmod##F(a, b);                                                                         \
    div = (a - mod) / b;                                                                         \
    if (mod != (T)0 && ((b < (T)0) != (mod < (T)0))) div -= (T)1;                                \
    if (div != (T)0) {                                                                           \
      fl = floor##F(div);                                                                        \
      if (div - fl > (T)0.5) fl += (T)1;                                                         \
    } else {                                                                                     \
      fl = copysign##F((T)0, a / b);                                                             \
    }                                                                                            \
    return fl;                                                                                   \
  }                                                                                              \
  static inline T stax_mod_##t(T a, T b) {                                                       \
    T r = fmod##F(a, b);                                                                         \
    if (r != (T)0 && ((b < (T)0) != (r < (T)0))) r += b;                                         \
    return r;                                                                                    \
  }                                                                                              \
  /* the forms compilers rewrite pow into (scalar_ops.hpp explains) */                           \
  static inline T stax_pow_##t(T a, T b) {                                                       \
    if (b == (T)2) return a * a;                                                                 \
    if (b == (T)-1) return (T)1 / a;                                                             \
    if (b == (T)0.5) return a == -(T)INFINITY ? (T)INFINITY : fabs##F(sqrt##F(a));               \
    if (a == (T)2) return stax_exp2_##t(b);                                        \
    return stax_canon_##t(Sleef_cinz_pow##S##_u10purec(a, b));                                                     \
  }
STAX_C99_FLOAT_OPS(float, f32, f, f1)
STAX_C99_FLOAT_OPS(double, f64, , d1)
#undef STAX_C99_FLOAT_OPS

/* ---- int64 -------------------------------------------------------------------------------------- */
static inline stax_i64 stax_floor_i64(stax_i64 x) { return x; }
static inline stax_i64 stax_ceil_i64(stax_i64 x) { return x; }
static inline stax_i64 stax_round_i64(stax_i64 x) { return x; }
static inline stax_i64 stax_trunc_i64(stax_i64 x) { return x; }
static inline stax_i64 stax_neg_i64(stax_i64 x) { return stax_wrap_sub(0, x); }
static inline stax_i64 stax_abs_i64(stax_i64 x) { return x < 0 ? stax_wrap_sub(0, x) : x; }
static inline stax_i64 stax_relu_i64(stax_i64 x) { return x < 0 ? 0 : x; }
static inline stax_i64 stax_sign_i64(stax_i64 x) { return x > 0 ? 1 : (x < 0 ? -1 : x); }
static inline bool stax_isnan_i64(stax_i64 x) { (void)x; return false; }
static inline stax_i64 stax_add_i64(stax_i64 a, stax_i64 b) { return stax_wrap_add(a, b); }
static inline stax_i64 stax_sub_i64(stax_i64 a, stax_i64 b) { return stax_wrap_sub(a, b); }
static inline stax_i64 stax_mul_i64(stax_i64 a, stax_i64 b) { return stax_wrap_mul(a, b); }
static inline stax_i64 stax_truediv_i64(stax_i64 a, stax_i64 b) {
  return b == 0 ? 0 : (stax_is_min_by_minus_one(a, b) ? a : a / b);
}
static inline stax_i64 stax_floordiv_i64(stax_i64 a, stax_i64 b) {
  stax_i64 q;
  if (b == 0) return 0;
  if (stax_is_min_by_minus_one(a, b)) return a;
  q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;
  return q;
}
static inline stax_i64 stax_mod_i64(stax_i64 a, stax_i64 b) {
  stax_i64 r;
  if (b == 0 || b == -1) return 0;
  r = a % b;
  if (r != 0 && ((b < 0) != (r < 0))) r += b;
  return r;
}
static inline stax_i64 stax_pow_i64(stax_i64 a, stax_i64 b) {
  stax_i64 r = 1;
  if (b < 0) return a == 1 ? 1 : (a == -1 ? ((b & 1) ? -1 : 1) : 0);
  while (b) {
    if (b & 1) r = stax_wrap_mul(r, a);
    a = stax_wrap_mul(a, a);
    b >>= 1;
  }
  return r;
}

/* ---- bool --------------------------------------------------------------------------------------- */
static inline bool stax_neg_b8(bool x) { return x; }
static inline bool stax_abs_b8(bool x) { return x; }
static inline bool stax_relu_b8(bool x) { return x; }
static inline bool stax_sign_b8(bool x) { return x; }
static inline bool stax_isnan_b8(bool x) { (void)x; return false; }
static inline bool stax_add_b8(bool a, bool b) { return a || b; }
static inline bool stax_mul_b8(bool a, bool b) { return a && b; }

/* ---- bitwise ops (ABI 1.8): integers on their int64 bits, bool as the logical ops ------------- */
static inline stax_i64 stax_bitwise_and_i64(stax_i64 a, stax_i64 b) { return a & b; }
static inline stax_i64 stax_bitwise_or_i64(stax_i64 a, stax_i64 b) { return a | b; }
static inline stax_i64 stax_bitwise_xor_i64(stax_i64 a, stax_i64 b) { return a ^ b; }
static inline bool stax_bitwise_and_b8(bool a, bool b) { return a && b; }
static inline bool stax_bitwise_or_b8(bool a, bool b) { return a || b; }
static inline bool stax_bitwise_xor_b8(bool a, bool b) { return a != b; }

/* ---- every compute type: NaN-propagating max / min, logic, comparisons ------------------------ */
#define STAX_C99_COMMON_OPS(T, t)                                                                  \
  static inline T stax_maximum_##t(T a, T b) { return a != a ? a : (b != b ? b : (a > b ? a : b)); } \
  static inline T stax_minimum_##t(T a, T b) { return a != a ? a : (b != b ? b : (a < b ? a : b)); } \
  static inline bool stax_logical_not_##t(T x) { return !(x != (T)0); }                            \
  static inline bool stax_logical_and_##t(T a, T b) { return (a != (T)0) && (b != (T)0); }          \
  static inline bool stax_logical_or_##t(T a, T b) { return (a != (T)0) || (b != (T)0); }           \
  static inline bool stax_eq_##t(T a, T b) { return a == b; }                                       \
  static inline bool stax_ne_##t(T a, T b) { return a != b; }                                       \
  static inline bool stax_lt_##t(T a, T b) { return a < b; }                                        \
  static inline bool stax_le_##t(T a, T b) { return a <= b; }                                       \
  static inline bool stax_gt_##t(T a, T b) { return a > b; }                                        \
  static inline bool stax_ge_##t(T a, T b) { return a >= b; }
STAX_C99_COMMON_OPS(float, f32)
STAX_C99_COMMON_OPS(double, f64)
STAX_C99_COMMON_OPS(stax_i64, i64)
STAX_C99_COMMON_OPS(bool, b8)
#undef STAX_C99_COMMON_OPS

/* min / max of index expressions (CStyleTables::min / max) */
static inline stax_i64 stax_index_min(stax_i64 a, stax_i64 b) { return a < b ? a : b; }
static inline stax_i64 stax_index_max(stax_i64 a, stax_i64 b) { return a < b ? b : a; }

/* ---- storage of 16-bit floats -------------------------------------------------------------------- */
static inline float stax_f16_load(unsigned short x) { return stax_f16_half_to_float(x); }
static inline unsigned short stax_f16_store(float x) { return stax_f16_float_to_half(x); }
static inline float stax_bf16_load(unsigned short x) { return stax_f16_bf16_to_float(x); }
static inline unsigned short stax_bf16_store(float x) { return stax_f16_float_to_bf16(x); }

/* ---- conversions between dtypes ------------------------------------------------------------------ */
/* floating -> int64: truncate toward zero; NaN, +-inf and out-of-range values give INT64_MIN (as
 * x86's cvttss2si / cvttsd2si, and so torch on x86; scalar_ops.hpp's convert<i64, float/double>) */
static inline stax_i64 stax_saturate_f32(float x) {
  if (!(x >= -9.2233720368547758e18f && x < 9.2233720368547758e18f))
    return (stax_i64)(-0x7fffffffffffffffLL - 1);
  return (stax_i64)x;
}
static inline stax_i64 stax_saturate_f64(double x) {
  if (!(x >= -9.2233720368547758e18 && x < 9.2233720368547758e18))
    return (stax_i64)(-0x7fffffffffffffffLL - 1);
  return (stax_i64)x;
}
/* to int64 from each compute type */
static inline stax_i64 stax_to_i64_f32(float x) { return stax_saturate_f32(x); }
static inline stax_i64 stax_to_i64_f64(double x) { return stax_saturate_f64(x); }
static inline stax_i64 stax_to_i64_i64(stax_i64 x) { return x; }
static inline stax_i64 stax_to_i64_b8(bool x) { return x; }
/* to uint64 (its bits): floats in [2^63, 2^64) convert exactly, as torch's static_cast */
static inline stax_i64 stax_to_u64_f32(float x) {
  return x >= 9223372036854775808.0f && x < 18446744073709551616.0f
             ? (stax_i64)(unsigned long long)x : stax_saturate_f32(x);
}
static inline stax_i64 stax_to_u64_f64(double x) {
  return x >= 9223372036854775808.0 && x < 18446744073709551616.0
             ? (stax_i64)(unsigned long long)x : stax_saturate_f64(x);
}
static inline stax_i64 stax_to_u64_i64(stax_i64 x) { return x; }
static inline stax_i64 stax_to_u64_b8(bool x) { return x; }

/* stax_convert_<from>_<to>: C is the compute type of `from`, c its name (f32 f64 i64 b8). */
#define STAX_C99_CONVERSIONS(from, C, c)                                                          \
  static inline float stax_convert_##from##_f32(C x) { return (float)x; }                          \
  static inline double stax_convert_##from##_f64(C x) { return (double)x; }                        \
  static inline float stax_convert_##from##_f16(C x) {                                             \
    return stax_f16_half_to_float(stax_f16_float_to_half((float)x));                               \
  }                                                                                                \
  static inline float stax_convert_##from##_bf16(C x) {                                            \
    return stax_f16_bf16_to_float(stax_f16_float_to_bf16((float)x));                              \
  }                                                                                                \
  static inline stax_i64 stax_convert_##from##_i64(C x) { return stax_to_i64_##c(x); }            \
  static inline stax_i64 stax_convert_##from##_i32(C x) { return (int)stax_to_i64_##c(x); }       \
  static inline stax_i64 stax_convert_##from##_i8(C x) { return (signed char)stax_to_i64_##c(x); } \
  static inline stax_i64 stax_convert_##from##_u8(C x) { return (unsigned char)stax_to_i64_##c(x); } \
  static inline bool stax_convert_##from##_b8(C x) { return x != (C)0; }                           \
  static inline stax_i64 stax_convert_##from##_i16(C x) { return (short)stax_to_i64_##c(x); }      \
  static inline stax_i64 stax_convert_##from##_u16(C x) {                                          \
    return (unsigned short)stax_to_i64_##c(x);                                                     \
  }                                                                                                \
  static inline stax_i64 stax_convert_##from##_u32(C x) { return (unsigned int)stax_to_i64_##c(x); } \
  static inline stax_i64 stax_convert_##from##_u64(C x) { return stax_to_u64_##c(x); }
STAX_C99_CONVERSIONS(f32, float, f32)
STAX_C99_CONVERSIONS(f64, double, f64)
STAX_C99_CONVERSIONS(f16, float, f32)
STAX_C99_CONVERSIONS(bf16, float, f32)
STAX_C99_CONVERSIONS(i64, stax_i64, i64)
STAX_C99_CONVERSIONS(i32, stax_i64, i64)
STAX_C99_CONVERSIONS(i8, stax_i64, i64)
STAX_C99_CONVERSIONS(u8, stax_i64, i64)
STAX_C99_CONVERSIONS(b8, bool, b8)
STAX_C99_CONVERSIONS(i16, stax_i64, i64)
STAX_C99_CONVERSIONS(u16, stax_i64, i64)
STAX_C99_CONVERSIONS(u32, stax_i64, i64)
#undef STAX_C99_CONVERSIONS
/* from uint64 (its bits in a long long): integers take the bits, floats the unsigned value */
static inline float stax_convert_u64_f32(stax_i64 x) { return (float)(unsigned long long)x; }
static inline double stax_convert_u64_f64(stax_i64 x) { return (double)(unsigned long long)x; }
static inline float stax_convert_u64_f16(stax_i64 x) {
  return stax_f16_half_to_float(stax_f16_float_to_half((float)(unsigned long long)x));
}
static inline float stax_convert_u64_bf16(stax_i64 x) {
  return stax_f16_bf16_to_float(stax_f16_float_to_bf16((float)(unsigned long long)x));
}
static inline stax_i64 stax_convert_u64_i64(stax_i64 x) { return x; }
static inline stax_i64 stax_convert_u64_i32(stax_i64 x) { return (int)x; }
static inline stax_i64 stax_convert_u64_i8(stax_i64 x) { return (signed char)x; }
static inline stax_i64 stax_convert_u64_u8(stax_i64 x) { return (unsigned char)x; }
static inline bool stax_convert_u64_b8(stax_i64 x) { return x != 0; }
static inline stax_i64 stax_convert_u64_i16(stax_i64 x) { return (short)x; }
static inline stax_i64 stax_convert_u64_u16(stax_i64 x) { return (unsigned short)x; }
static inline stax_i64 stax_convert_u64_u32(stax_i64 x) { return (unsigned int)x; }
static inline stax_i64 stax_convert_u64_u64(stax_i64 x) { return x; }

#endif /* STAX_SCALAR_OPS_LISTS_ONLY */
#endif /* STAX_SDK_SCALAR_OPS_H */
