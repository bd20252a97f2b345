// The scalar semantics of every loop-level op of ops.def: the single definition that the reference
// interpreter executes and that C-like CPU printers (cpu_cpp) embed verbatim as their kernel prelude,
// so that compiled pointwise code and the interpreter agree bit for bit (seed §6.9, class-1
// transformations). Constraints, because this text is compiled inside JIT kernels:
//   * no #include of any system header; exact math goes through __builtin_* (GCC and Clang both
//     lower them to an exact instruction or libm call: sqrt, floor, fmod, ...), transcendentals
//     through SLEEF's deterministic functions, declared below (link libsleef);
//   * C++17, header-only, no exceptions; everything is defined for every input: integer division
//     by zero yields 0 rather than trapping; int64 add / sub / mul / neg / abs / pow wrap around
//     (two's complement, as torch does), so INT64_MIN / -1 is INT64_MIN and INT64_MIN % -1 is 0
//     (never SIGFPE, never signed-overflow UB).
// Floating ops are defined for float and double; half/bfloat16 compute in float (promote on load,
// round on store), as the seed §6.2 prescribes. Integer ops are defined on int64_t (narrower ints
// compute in int64 and are narrowed on store), bool ops on bool.
#ifndef STAX_SDK_SCALAR_OPS_HPP
#define STAX_SDK_SCALAR_OPS_HPP

// ---- transcendentals: SLEEF's deterministic scalar forms ---------------------------------------
// exp, exp2, expm1, log, log2, log10, log1p, sin, cos, tan, tanh, erf and pow (float and double;
// float16 / bfloat16 through float) are SLEEF's `Sleef_cinz_<f><t>1_u10purec` functions (libsleef,
// Debian libsleef-dev 3.5.1): plain C, no FMA, so the same bits on every x86 CPU, and the same bits
// as SLEEF's vector forms `Sleef_cinz_<f>f16_u10avx512fnofma` / `..d8..` that cpu_cpp's vectorised
// loops call (plugins/cpu_cpp/clang_jit.cpp maps one to the other): the interpreter and the vector
// kernels agree bit for bit by construction, not by luck of the C library. Each is within 1.0 ULP
// of the correctly rounded result over its whole domain (SLEEF's u10 bound; docs/vector_math.md
// lists them). A target whose math is not SLEEF (CUDA C) defines STAX_SCALAR_MATH_F / _D before
// this header to its own functions, and then owes its tests a bound, not bit equality.
#ifndef STAX_SCALAR_MATH_F
#define STAX_SCALAR_OWN_ERF_F32 1  // erf(float) is the formula below erf_f32 (polynomials in fmas)
#define STAX_SCALAR_OWN_EXP_F32 1  // exp(float) is the formula below exp_f32
#define STAX_SCALAR_MATH_F(name) Sleef_cinz_##name##f1_u10purec
#define STAX_SCALAR_MATH_D(name) Sleef_cinz_##name##d1_u10purec
#define STAX_SCALAR_SLEEF_DECL1(name)                                                           \
  float STAX_SCALAR_MATH_F(name)(float) __attribute__((const, nothrow));                       \
  double STAX_SCALAR_MATH_D(name)(double) __attribute__((const, nothrow));
extern "C" {
STAX_SCALAR_SLEEF_DECL1(exp)
STAX_SCALAR_SLEEF_DECL1(exp2)
STAX_SCALAR_SLEEF_DECL1(expm1)
STAX_SCALAR_SLEEF_DECL1(log)
STAX_SCALAR_SLEEF_DECL1(log2)
STAX_SCALAR_SLEEF_DECL1(log10)
STAX_SCALAR_SLEEF_DECL1(log1p)
STAX_SCALAR_SLEEF_DECL1(sin)
STAX_SCALAR_SLEEF_DECL1(cos)
STAX_SCALAR_SLEEF_DECL1(tan)
STAX_SCALAR_SLEEF_DECL1(tanh)
STAX_SCALAR_SLEEF_DECL1(erf)
float STAX_SCALAR_MATH_F(pow)(float, float) __attribute__((const, nothrow));
double STAX_SCALAR_MATH_D(pow)(double, double) __attribute__((const, nothrow));
}
#undef STAX_SCALAR_SLEEF_DECL1
#endif

namespace stax_scalar {

typedef long long i64;
typedef unsigned long long u64;

// Two's-complement wrap-around int64 arithmetic (defined for every input).
inline i64 wrap_add(i64 a, i64 b) { return (i64)((u64)a + (u64)b); }
inline i64 wrap_sub(i64 a, i64 b) { return (i64)((u64)a - (u64)b); }
inline i64 wrap_mul(i64 a, i64 b) { return (i64)((u64)a * (u64)b); }
inline bool is_min_by_minus_one(i64 a, i64 b) { return b == -1 && a == (i64)((u64)1 << 63); }

// ---- math dispatch by type -------------------------------------------------------------------
#define STAX_SCALAR_MATH1(name)                                      \
  inline float name(float x) { return __builtin_##name##f(x); }     \
  inline double name(double x) { return __builtin_##name(x); }
// A NaN result is the default NaN (0x7fc00000 / 0x7ff8000000000000): SLEEF's scalar and vector
// forms agree on every non-NaN bit but not on the sign and payload of a NaN they create (log(-1):
// +NaN scalar, -NaN vector) or pass on; one NaN for all keeps the kernels bitwise equal to the
// interpreter (a compare and a blend per vector).
#define STAX_SCALAR_TRANSCENDENTAL1(name)                                          \
  inline float name(float x) { return canonical_nan(STAX_SCALAR_MATH_F(name)(x)); } \
  inline double name(double x) { return canonical_nan(STAX_SCALAR_MATH_D(name)(x)); }
namespace m {
inline float canonical_nan(float r) { return r != r ? __builtin_nanf("") : r; }
inline double canonical_nan(double r) { return r != r ? __builtin_nan("") : r; }
// exp over float32 is Stax's own formula, not SLEEF's expf (docs/vector_math.md, DECISIONS items
// 37 and 38): inline, so a vectorised loop keeps its accumulators in registers instead of spilling
// them around a call. IEEE +, -, *, fused multiply-adds (an fma
// rounds once: a vfmadd, glibc's or C99's fmaf give the same bits) and bit operations in a fixed
// order, so the scalar and the vector forms have the same bits by construction:
//   xc = clamp(x, -104, 89)   (NaN -> -104; exp(-104) rounds to 0, exp(89) overflows)
//   s = fma(xc, log2 e, 1.5*2^23);  n = s - 1.5*2^23   (n = xc log2 e rounded to an integer,
//            and s's low bits hold n in two's complement: no float->int conversion)
//   r = fma(n, -ln2_hi, xc) (exact: ln2_hi = float(ln 2));  r = fma(n, -ln2_lo, r)
//   exp(r) = u + fma(r^2, P(r), e),  u = 1 + r rounded, e = (1 - u) + r its exact error
//            (P ~ (exp(r) - 1 - r) / r^2, degree 4 by Horner in fmas, fitted for relative
//            error 3.7e-9)
//   exp(x) = exp(r) * 2^(n>>1) * 2^(n - (n>>1))   (two exact scalings; a subnormal result is
//            rounded once, by the second)
// Measured over every float32 against glibc's double exp: at most 0.7941 ULP for normal results
// (at -5.858) and 0.7898 ULP for subnormal ones (SLEEF's bound: 1.0; exp_f32_test,
// STAX_EXP_EXHAUSTIVE=1). NaN in: the canonical NaN out. (Only where the math is SLEEF's: a CUDA
// C target keeps its expf.)
#ifdef STAX_SCALAR_OWN_EXP_F32
namespace exp_f32 {
constexpr float kLog2e = 1.44269502162933349609375f;  // float(log2 e)
constexpr float kShift = 12582912.0f;                 // 1.5 * 2^23: adding it rounds to an integer
constexpr float kLn2Hi = 0.693147182464599609375f;    // float(ln 2)
constexpr float kLn2Lo = -1.904654323148236e-09f;     // float(ln 2 - kLn2Hi)
constexpr float kLow = -104.0f;
constexpr float kHigh = 89.0f;
constexpr float kP4 = 1.381455921e-03f, kP3 = 8.368736133e-03f, kP2 = 4.166838899e-02f,
                kP1 = 1.666652113e-01f, kP0 = 4.999999404e-01f;
inline float fma(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
inline float bits_to_float(unsigned u) { return __builtin_bit_cast(float, u); }
inline float formula(float x) {
  float xc = x > kLow ? x : kLow;
  xc = xc < kHigh ? xc : kHigh;
  float s = fma(xc, kLog2e, kShift);
  float n = s - kShift;
  float r = fma(n, -kLn2Hi, xc);
  r = fma(n, -kLn2Lo, r);
  float p = fma(fma(fma(fma(kP4, r, kP3), r, kP2), r, kP1), r, kP0);
  float u = 1.0f + r;
  float e = (1.0f - u) + r;
  float y = u + fma(r * r, p, e);
  unsigned b = __builtin_bit_cast(unsigned, s);  // 0x4b400000 + n, so b >> 1 = 0x25a00000 + (n >> 1)
  unsigned b1 = b >> 1;                          // (<< 23 drops the constants' bits)
  y = (y * bits_to_float((b1 + 127u) << 23)) * bits_to_float((b - b1 + 127u) << 23);
  return x != x ? __builtin_nanf("") : y;
}
}  // namespace exp_f32
inline float exp(float x) { return exp_f32::formula(x); }
#else
inline float exp(float x) { return canonical_nan(STAX_SCALAR_MATH_F(exp)(x)); }
#endif
inline double exp(double x) { return canonical_nan(STAX_SCALAR_MATH_D(exp)(x)); }
STAX_SCALAR_TRANSCENDENTAL1(exp2)
STAX_SCALAR_TRANSCENDENTAL1(expm1)
STAX_SCALAR_TRANSCENDENTAL1(log)
STAX_SCALAR_TRANSCENDENTAL1(log2)
STAX_SCALAR_TRANSCENDENTAL1(log10)
// SLEEF's log1p returns +inf above 1e38 (float) / 1e307 (double), its documented domain; there
// log1p(x) equals log(x) to far below an ULP (1/x < 1e-38), so that is what it computes (a select
// of two unconditional calls: the loop vectoriser keeps it, in the same bits).
inline float log1p(float x) {
  float r = STAX_SCALAR_MATH_F(log1p)(x);
  float big = STAX_SCALAR_MATH_F(log)(x);
  return canonical_nan(x > 1e38f ? big : r);
}
inline double log1p(double x) {
  double r = STAX_SCALAR_MATH_D(log1p)(x);
  double big = STAX_SCALAR_MATH_D(log)(x);
  return canonical_nan(x > 1e307 ? big : r);
}
STAX_SCALAR_MATH1(sqrt)
STAX_SCALAR_TRANSCENDENTAL1(sin)
STAX_SCALAR_TRANSCENDENTAL1(cos)
STAX_SCALAR_TRANSCENDENTAL1(tan)
STAX_SCALAR_TRANSCENDENTAL1(tanh)
// erf over float32 (float16 / bfloat16 through it) is Stax's own formula, not SLEEF's erff
// (docs/vector_math.md, DECISIONS items 34, 38 and 62): SLEEF's deterministic erff works in
// double-float arithmetic without FMA and costs ~6x glibc's vector erff, the largest single cost
// of an MLP step's gelu. Three polynomials by Horner in fused multiply-adds, inline, in a fixed
// order, so it has the same bits in scalar form (the interpreter, kernel tails) and in vector
// form (cpu_cpp's vectorised loops; the vector printer's erf spells the same steps), on every
// machine (an fma rounds once; contraction is off in every build of this text). a = |x|:
//   a < 0.75:          fma(x, Q(x^2), x)         (Q ~ erf(x)/x - 1, degree 6; exact at 0, the
//                                               subnormals and the sign)
//   0.75 <= a < 1.5:   0.84375 - M(a - 1.125)    (M ~ 0.84375 - erf, degree 8, |M| < 0.133)
//   a >= 1.5:          1 - T(min(a, 3.95) - 2.75)  (T ~ erfc, degree 13, T < 0.034; returns 1
//                                               from 3.92347 on, erf rounds to 1 from 3.9192)
// the last two with x's sign. The reduced arguments a - 1.125 and min(a, 3.95) - 2.75 are exact
// where they are used, and the last operation of each branch adds a small term to a constant or
// to x, so its rounding is the one that counts. Every lane computes all three (selects, no
// branches; 27 fmas). Fitted (Lawson's minimax, coefficients rounded to float from the highest
// down, the rest refitted each time) against mpmath; measured over every float32 against glibc's
// double erf: at most 0.7615 ULP (at 0.75201267; erf_f32_test, STAX_ERF_EXHAUSTIVE=1).
// NaN in: the canonical NaN out.
namespace erf_f32 {
// c0 + t (c1 + t (c2 + ...)), innermost first, in fmas: fma(fma(cn, t, c(n-1)), t, ...).
template <class V, class F> inline V horner(F, V, float c) { return V(c); }
template <class V, class F, class... R> inline V horner(F fma, V t, float c, R... r) {
  return fma(horner(fma, t, r...), t, V(c));
}
constexpr float kSmallEnd = 0.75f;      // |x| below: fma(x, Q(x^2), x)
constexpr float kMidEnd = 1.5f;         // |x| below (from kSmallEnd): kMidBase - M(|x| - kMidCenter)
constexpr float kMidCenter = 1.125f;
constexpr float kMidBase = 0.84375f;
constexpr float kClamp = 3.95f;         // erf rounds to 1 from 3.9192 on
constexpr float kTailCenter = 2.75f;    // 1 - T(min(|x|, kClamp) - kTailCenter)
// Q(z), z = x^2: erf(x) / x - 1 (relative error of x (1 + Q) 2.8e-9).
template <class V, class F> inline V small_q(F fma, V z) {
  return horner(fma, z, 1.283791661e-01f, -3.761263788e-01f, 1.128377840e-01f, -2.686474286e-02f,
                5.216690712e-03f, -8.355375030e-04f, 9.461307491e-05f);
}
// M(t), t = a - kMidCenter: kMidBase - erf(a) (absolute error 2.4e-9).
template <class V, class F> inline V mid_m(F fma, V t) {
  return horner(fma, t, -4.463823140e-02f, -3.182739615e-01f, 3.580582738e-01f, -1.624518335e-01f,
                -2.797647566e-02f, 6.131064147e-02f, -1.547973417e-02f, -9.483876638e-03f,
                5.604335573e-03f);
}
// T(t), t = a - kTailCenter: erfc(a) (absolute error 7e-10).
template <class V, class F> inline V tail_t(F fma, V t) {
  return horner(fma, t, 1.006225211e-04f, -5.862754188e-04f, 1.612218330e-03f, -2.760430332e-03f,
                3.258619690e-03f, -2.755520167e-03f, 1.655136701e-03f, -6.469347863e-04f,
                9.360653348e-05f, 7.264544547e-05f, -6.012218728e-05f, 1.466897174e-05f,
                4.139960765e-06f, -2.261292138e-06f);
}
#ifdef STAX_SCALAR_OWN_ERF_F32  // (a CUDA C target has no __builtin_fmaf, and keeps its erff)
struct Fma {
  float operator()(float a, float b, float c) const { return __builtin_fmaf(a, b, c); }
};
#endif
}  // namespace erf_f32
#ifdef STAX_SCALAR_OWN_ERF_F32
inline float erf(float x) {
  erf_f32::Fma fma;
  float ax = __builtin_fabsf(x);
  float small = fma(x, erf_f32::small_q(fma, x * x), x);
  float m = erf_f32::mid_m(fma, ax - erf_f32::kMidCenter);
  float a = ax < erf_f32::kClamp ? ax : erf_f32::kClamp;
  float t = erf_f32::tail_t(fma, a - erf_f32::kTailCenter);
  bool mid = ax < erf_f32::kMidEnd;
  float p = mid ? m : t;
  float base = mid ? erf_f32::kMidBase : 1.0f;
  float large = __builtin_copysignf(base - p, x);
  return canonical_nan(ax >= erf_f32::kSmallEnd ? large : small);
}
#else
// A target with its own math (CUDA C) keeps its erff: a bound, not bit equality (above).
inline float erf(float x) { return canonical_nan(STAX_SCALAR_MATH_F(erf)(x)); }
#endif
inline double erf(double x) { return canonical_nan(STAX_SCALAR_MATH_D(erf)(x)); }
STAX_SCALAR_MATH1(floor)
STAX_SCALAR_MATH1(ceil)
STAX_SCALAR_MATH1(trunc)
STAX_SCALAR_MATH1(nearbyint)
STAX_SCALAR_MATH1(fabs)
inline float fmod(float a, float b) { return __builtin_fmodf(a, b); }
inline double fmod(double a, double b) { return __builtin_fmod(a, b); }
inline float copysign(float a, float b) { return __builtin_copysignf(a, b); }
inline double copysign(double a, double b) { return __builtin_copysign(a, b); }
// pow(a, 2) -> a * a, pow(a, -1) -> 1 / a, pow(a, 0.5) -> |sqrt(a)| (+inf for a = -inf),
// pow(2, b) -> exp2(b), as compilers rewrite a pow with a constant operand (LLVM's library-call
// simplifier) and as torch special-cases them; pow(a, 0) and pow(a, 1) give 1 and a, which SLEEF
// returns too. A general pow is not correctly rounded (differs from a * a in about one case in a
// thousand), so every caller takes these forms explicitly: the interpreter, with run-time
// operands, computes what the compiled kernel computes, bit for bit.
inline float pow(float a, float b) {
  if (b == 2.0f) return a * a;
  if (b == -1.0f) return 1.0f / a;
  if (b == 0.5f) return a == -__builtin_inff() ? __builtin_inff() : __builtin_fabsf(__builtin_sqrtf(a));
  if (a == 2.0f) return exp2(b);
  return canonical_nan(STAX_SCALAR_MATH_F(pow)(a, b));
}
inline double pow(double a, double b) {
  if (b == 2.0) return a * a;
  if (b == -1.0) return 1.0 / a;
  if (b == 0.5) return a == -__builtin_inf() ? __builtin_inf() : __builtin_fabs(__builtin_sqrt(a));
  if (a == 2.0) return exp2(b);
  return canonical_nan(STAX_SCALAR_MATH_D(pow)(a, b));
}
}  // namespace m
#undef STAX_SCALAR_MATH1
#undef STAX_SCALAR_TRANSCENDENTAL1

// ---- unary, floating ---------------------------------------------------------------------------
template <class T> inline T neg(T x) { return -x; }
inline i64 neg(i64 x) { return wrap_sub(0, x); }
inline bool neg(bool x) { return x; }
inline float abs(float x) { return m::fabs(x); }
inline double abs(double x) { return m::fabs(x); }
inline i64 abs(i64 x) { return x < 0 ? wrap_sub(0, x) : x; }
inline bool abs(bool x) { return x; }
template <class T> inline T exp(T x) { return m::exp(x); }
template <class T> inline T exp2(T x) { return m::exp2(x); }
template <class T> inline T expm1(T x) { return m::expm1(x); }
template <class T> inline T log(T x) { return m::log(x); }
template <class T> inline T log2(T x) { return m::log2(x); }
template <class T> inline T log10(T x) { return m::log10(x); }
template <class T> inline T log1p(T x) { return m::log1p(x); }
template <class T> inline T sqrt(T x) { return m::sqrt(x); }
template <class T> inline T rsqrt(T x) { return T(1) / m::sqrt(x); }
template <class T> inline T sin(T x) { return m::sin(x); }
template <class T> inline T cos(T x) { return m::cos(x); }
template <class T> inline T tan(T x) { return m::tan(x); }
template <class T> inline T tanh(T x) { return m::tanh(x); }
template <class T> inline T sigmoid(T x) { return T(1) / (T(1) + m::exp(-x)); }
template <class T> inline T erf(T x) { return m::erf(x); }
// relu keeps NaN (x < 0 is false for NaN) and -0.0.
template <class T> inline T relu(T x) { return x < T(0) ? T(0) : x; }
inline bool relu(bool x) { return x; }
template <class T> inline T reciprocal(T x) { return T(1) / x; }
// sign: -1, 0 or 1 as torch computes it, (0 < x) - (x < 0): NaN and -0.0 give +0.
template <class T> inline T sign(T x) { return x > T(0) ? T(1) : (x < T(0) ? T(-1) : T(0)); }
inline bool sign(bool x) { return x; }
template <class T> inline T floor(T x) { return m::floor(x); }
inline i64 floor(i64 x) { return x; }
template <class T> inline T ceil(T x) { return m::ceil(x); }
inline i64 ceil(i64 x) { return x; }
// Round half to even (the default rounding mode), like torch.round.
template <class T> inline T round(T x) { return m::nearbyint(x); }
inline i64 round(i64 x) { return x; }
template <class T> inline T trunc(T x) { return m::trunc(x); }
inline i64 trunc(i64 x) { return x; }
template <class T> inline bool logical_not(T x) { return !(x != T(0)); }
template <class T> inline bool isnan(T x) { return x != x; }
inline bool isnan(i64) { return false; }
inline bool isnan(bool) { return false; }

// ---- binary ----------------------------------------------------------------------------------
template <class T> inline T add(T a, T b) { return a + b; }
inline i64 add(i64 a, i64 b) { return wrap_add(a, b); }
inline bool add(bool a, bool b) { return a || b; }
template <class T> inline T sub(T a, T b) { return a - b; }
inline i64 sub(i64 a, i64 b) { return wrap_sub(a, b); }
template <class T> inline T mul(T a, T b) { return a * b; }
inline i64 mul(i64 a, i64 b) { return wrap_mul(a, b); }
inline bool mul(bool a, bool b) { return a && b; }
template <class T> inline T truediv(T a, T b) { return a / b; }
inline i64 truediv(i64 a, i64 b) { return b == 0 ? 0 : (is_min_by_minus_one(a, b) ? a : a / b); }

// Python floor division. Floating: torch's div_floor (fmod-based, exact for representable results).
template <class T> inline T floordiv(T a, T b) {
  if (b == T(0)) return a / b;
  T mod = m::fmod(a, b);
  T div = (a - mod) / b;
  if (mod != T(0) && ((b < T(0)) != (mod < T(0)))) div -= T(1);
  T fl;
  if (div != T(0)) {
    fl = m::floor(div);
    if (div - fl > T(0.5)) fl += T(1);
  } else {
    fl = m::copysign(T(0), a / b);  // signed zero of the true quotient
  }
  return fl;
}
inline i64 floordiv(i64 a, i64 b) {
  if (b == 0) return 0;
  if (is_min_by_minus_one(a, b)) return a;  // the quotient 2^63 wraps to INT64_MIN
  i64 q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;
  return q;
}
// Python remainder: the result has the sign of the divisor.
template <class T> inline T mod(T a, T b) {
  T r = m::fmod(a, b);
  if (r != T(0) && ((b < T(0)) != (r < T(0)))) r += b;
  return r;
}
inline i64 mod(i64 a, i64 b) {
  if (b == 0 || b == -1) return 0;  // b == -1: INT64_MIN % -1 traps on x86
  i64 r = a % b;
  if (r != 0 && ((b < 0) != (r < 0))) r += b;
  return r;
}
template <class T> inline T pow(T a, T b) { return m::pow(a, b); }
inline i64 pow(i64 a, i64 b) {
  if (b < 0) return a == 1 ? 1 : (a == -1 ? ((b & 1) ? -1 : 1) : 0);
  i64 r = 1;
  while (b) {
    if (b & 1) r = wrap_mul(r, a);
    a = wrap_mul(a, a);
    b >>= 1;
  }
  return r;
}
// C remainder (torch.fmod): the sign of the dividend. Integers: b == 0 gives 0 (torch raises).
template <class T> inline T fmod(T a, T b) { return m::fmod(a, b); }
inline i64 fmod(i64 a, i64 b) { return (b == 0 || b == -1) ? 0 : a % b; }
// Bitwise ops on integers (bool: the logical ops); shifts as torch: a left shift by a negative
// amount or by >= 64 gives 0, a right shift by such an amount gives the sign fill.
template <class T> inline T bitwise_and(T a, T b) { return a & b; }
template <class T> inline T bitwise_or(T a, T b) { return a | b; }
template <class T> inline T bitwise_xor(T a, T b) { return a ^ b; }
inline bool bitwise_and(bool a, bool b) { return a && b; }
inline bool bitwise_or(bool a, bool b) { return a || b; }
inline bool bitwise_xor(bool a, bool b) { return a != b; }
inline i64 bitwise_not(i64 a) { return ~a; }
inline bool bitwise_not(bool a) { return !a; }
inline i64 bitwise_left_shift(i64 a, i64 b) { return (b < 0 || b >= 64) ? 0 : (i64)((u64)a << b); }
inline i64 bitwise_right_shift(i64 a, i64 b) { return (b < 0 || b >= 64) ? (a >> 63) : (a >> b); }
// NaN-propagating max/min (torch.maximum): a NaN operand wins, the first one if both are NaN.
template <class T> inline T maximum(T a, T b) { return a != a ? a : (b != b ? b : (a > b ? a : b)); }
template <class T> inline T minimum(T a, T b) { return a != a ? a : (b != b ? b : (a < b ? a : b)); }
// min / max of index expressions (CStyleTables::min / max): int64 operands, whatever types the
// printed operands have (a variable and a plain int literal).
inline i64 index_min(i64 a, i64 b) { return a < b ? a : b; }
inline i64 index_max(i64 a, i64 b) { return a < b ? b : a; }
template <class T> inline bool logical_and(T a, T b) { return (a != T(0)) && (b != T(0)); }
template <class T> inline bool logical_or(T a, T b) { return (a != T(0)) || (b != T(0)); }

template <class T> inline bool eq(T a, T b) { return a == b; }
template <class T> inline bool ne(T a, T b) { return a != b; }
template <class T> inline bool lt(T a, T b) { return a < b; }
template <class T> inline bool le(T a, T b) { return a <= b; }
template <class T> inline bool gt(T a, T b) { return a > b; }
template <class T> inline bool ge(T a, T b) { return a >= b; }

template <class T> inline T where(bool c, T a, T b) { return c ? a : b; }

// ---- conversions -------------------------------------------------------------------------------
// Floating -> integer truncates toward zero; NaN, +-inf and out-of-range values give INT64_MIN,
// as x86's cvttss2si / cvttsd2si do and therefore torch on x86 (defined here, never UB). Narrower
// integer results follow the int32 instruction (formulas::x86_int32_range, applied by to.dtype).
template <class To, class From> inline To convert(From x) { return (To)x; }
template <> inline i64 convert<i64, float>(float x) {
  if (!(x >= -9.2233720368547758e18f && x < 9.2233720368547758e18f))
    return (i64)(-0x7fffffffffffffffLL - 1);
  return (i64)x;
}
template <> inline i64 convert<i64, double>(double x) {
  if (!(x >= -9.2233720368547758e18 && x < 9.2233720368547758e18))
    return (i64)(-0x7fffffffffffffffLL - 1);
  return (i64)x;
}
// uint64 (held as its bits in int64 elsewhere): [2^63, 2^64) converts exactly, as torch's
// static_cast; below that as int64.
template <> inline u64 convert<u64, float>(float x) {
  if (x >= 9223372036854775808.0f && x < 18446744073709551616.0f) return (u64)x;
  return (u64)convert<i64>(x);
}
template <> inline u64 convert<u64, double>(double x) {
  if (x >= 9223372036854775808.0 && x < 18446744073709551616.0) return (u64)x;
  return (u64)convert<i64>(x);
}
template <> inline bool convert<bool, float>(float x) { return x != 0.0f; }
template <> inline bool convert<bool, double>(double x) { return x != 0.0; }
template <> inline bool convert<bool, i64>(i64 x) { return x != 0; }

}  // namespace stax_scalar

// The conversions of a 16-bit float type H (computed through float, rounded to nearest even on the
// way back): the one definition for every target. A target defines `float stax_to_float(H)` and
// `stax_from_float<H>(float)` for its own H (scalar_ops_f16.hpp: the bit-level types of the C++
// kernels; cuda_nvrtc: __half and __nv_bfloat16) and then invokes the macro inside stax_scalar.
#define STAX_SCALAR_F16_CONVERSIONS(H)                                                  \
  template <> inline float convert<float, H>(H x) { return stax_to_float(x); }          \
  template <> inline double convert<double, H>(H x) { return stax_to_float(x); }        \
  template <> inline i64 convert<i64, H>(H x) { return convert<i64>(stax_to_float(x)); } \
  template <> inline bool convert<bool, H>(H x) { return stax_to_float(x) != 0.0f; }    \
  template <> inline H convert<H, float>(float x) { return stax_from_float<H>(x); }     \
  template <> inline H convert<H, double>(double x) {                                   \
    return stax_from_float<H>((float)x);                                                \
  }                                                                                     \
  template <> inline H convert<H, i64>(i64 x) { return stax_from_float<H>((float)x); }  \
  template <> inline H convert<H, bool>(bool x) {                                       \
    return stax_from_float<H>(x ? 1.0f : 0.0f);                                         \
  }

#endif  // STAX_SDK_SCALAR_OPS_HPP
