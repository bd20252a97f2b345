#include "plugins/cpu_cpp/vector_printer.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "stax/sdk/cstyle_printer.hpp"
#include "stax/sdk/reduction_order.hpp"

namespace stax::cpu {

namespace {

using sdk::DType;
using sdk::Expr;
using sdk::ExprKind;

static_assert(kVectorLanes == sdk::kReductionSegments,
              "the segmented order's segments are the vector lanes");

// The prelude: every op of scalar_ops.hpp that the vector printer prints, over 16 float lanes;
// bool values are int lanes of 0 / -1 (what a vector compare gives).
constexpr const char kVectorPrelude[] = R"STAX_VEC(// ---- stax vector ops (cpu_cpp's vector printer, plugins/cpu_cpp/vector_printer.cpp) ----
typedef float stax_vf __attribute__((ext_vector_type(16)));
typedef int stax_vm __attribute__((ext_vector_type(16)));
typedef int stax_vi __attribute__((ext_vector_type(16)));
typedef unsigned stax_vu __attribute__((ext_vector_type(16)));
typedef long long stax_vl __attribute__((ext_vector_type(16)));
typedef float stax_v8f __attribute__((ext_vector_type(8)));
typedef long long stax_v8l __attribute__((ext_vector_type(8)));
typedef unsigned short stax_mask16;
extern "C" {
#define STAX_VEC_SLEEF1(name) \
  stax_vf Sleef_cinz_##name##f16_u10avx512fnofma(stax_vf) __attribute__((const, nothrow));
STAX_VEC_SLEEF1(exp)
STAX_VEC_SLEEF1(exp2)
STAX_VEC_SLEEF1(expm1)
STAX_VEC_SLEEF1(log)
STAX_VEC_SLEEF1(log2)
STAX_VEC_SLEEF1(log10)
STAX_VEC_SLEEF1(log1p)
STAX_VEC_SLEEF1(sin)
STAX_VEC_SLEEF1(cos)
STAX_VEC_SLEEF1(tan)
STAX_VEC_SLEEF1(tanh)
#undef STAX_VEC_SLEEF1
}
namespace stax_vec {
static inline stax_vi iota() { return (stax_vi){0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}; }
// Lane-wise select: c (0 / -1 per lane) ? a : b, as bits (a blend).
static inline stax_vf select(stax_vm c, stax_vf a, stax_vf b) {
  return (stax_vf)((c & (stax_vm)a) | (~c & (stax_vm)b));
}
static inline stax_vm select(stax_vm c, stax_vm a, stax_vm b) { return (c & a) | (~c & b); }
static inline stax_vf where(stax_vm c, stax_vf a, stax_vf b) { return select(c, a, b); }
static inline stax_vm where(stax_vm c, stax_vm a, stax_vm b) { return select(c, a, b); }
// The first n lanes (n >= 1).
static inline stax_mask16 tail_mask(long long n) { return (stax_mask16)((1u << n) - 1u); }
static inline stax_vm tail_lanes(long long n) { return iota() < (int)n; }
static inline stax_mask16 to_mask(stax_vm m) {
  return __builtin_bit_cast(stax_mask16, __builtin_convertvector(m != 0, bool __attribute__((ext_vector_type(16)))));
}
// Loads and stores (unaligned; the masked forms touch only the lanes of the mask).
static inline stax_vf load(const float* p) {
  stax_vf v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
static inline stax_vf load(const float* p, stax_mask16 m) {
  return __builtin_ia32_loadups512_mask(p, (stax_vf)0.0f, m);
}
static inline void store(float* p, stax_vf v) { __builtin_memcpy(p, &v, sizeof v); }
static inline void store(float* p, stax_vf v, stax_mask16 m) { __builtin_ia32_storeups512_mask(p, v, m); }
// Gathers: p[idx[lane]] for the lanes of m (others 0).
static inline stax_vf gather(const float* p, stax_vi idx, stax_mask16 m = 0xffff) {
  return __builtin_ia32_gathersiv16sf((stax_vf)0.0f, p, idx, m, 4);
}
static inline stax_vf gather(const float* p, stax_vl idx, stax_mask16 m = 0xffff) {
  stax_v8l lo = __builtin_shufflevector(idx, idx, 0, 1, 2, 3, 4, 5, 6, 7);
  stax_v8l hi = __builtin_shufflevector(idx, idx, 8, 9, 10, 11, 12, 13, 14, 15);
  stax_v8f a = __builtin_ia32_gatherdiv16sf((stax_v8f)0.0f, p, lo, (unsigned char)m, 4);
  stax_v8f b = __builtin_ia32_gatherdiv16sf((stax_v8f)0.0f, p, hi, (unsigned char)(m >> 8), 4);
  return __builtin_shufflevector(a, b, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}
// int64 lanes (the indices of an indirect load): contiguous loads, the masked form in two halves.
static inline stax_vl load(const long long* p) {
  stax_vl v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
static inline stax_vl load(const long long* p, stax_mask16 m) {
  stax_v8l lo = __builtin_ia32_loaddqudi512_mask(p, (stax_v8l)0, (unsigned char)m);
  stax_v8l hi = __builtin_ia32_loaddqudi512_mask(p + 8, (stax_v8l)0, (unsigned char)(m >> 8));
  return __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}
typedef long stax_vcmp64 __attribute__((ext_vector_type(16)));  // what an int64 compare gives
static inline stax_mask16 to_mask(stax_vcmp64 m) {
  return __builtin_bit_cast(stax_mask16, __builtin_convertvector(m != 0, bool __attribute__((ext_vector_type(16)))));
}
// An indirect index: negative values wrap once (x < 0 ? x + size : x).
static inline stax_vl wrap_negative(stax_vl x, long long size) { return x < 0 ? x + size : x; }
// Index arithmetic (CStyleTables::min / max) on lane indices.
static inline stax_vi index_min(stax_vi a, stax_vi b) { return a < b ? a : b; }
static inline stax_vi index_max(stax_vi a, stax_vi b) { return a < b ? b : a; }
static inline stax_vl index_min(stax_vl a, stax_vl b) { return a < b ? a : b; }
static inline stax_vl index_max(stax_vl a, stax_vl b) { return a < b ? b : a; }
// ---- the ops of scalar_ops.hpp on 16 float lanes, the same bits lane by lane ----
static inline stax_vf canonical_nan(stax_vf r) { return select(r != r, (stax_vf)__builtin_nanf(""), r); }
static inline stax_vf neg(stax_vf x) { return -x; }
static inline stax_vf abs(stax_vf x) { return (stax_vf)((stax_vm)x & 0x7fffffff); }
#define STAX_VEC_TRANSCENDENTAL1(name) \
  static inline stax_vf name(stax_vf x) { return canonical_nan(Sleef_cinz_##name##f16_u10avx512fnofma(x)); }
STAX_VEC_TRANSCENDENTAL1(exp2)
STAX_VEC_TRANSCENDENTAL1(expm1)
STAX_VEC_TRANSCENDENTAL1(log)
STAX_VEC_TRANSCENDENTAL1(log2)
STAX_VEC_TRANSCENDENTAL1(log10)
STAX_VEC_TRANSCENDENTAL1(sin)
STAX_VEC_TRANSCENDENTAL1(cos)
STAX_VEC_TRANSCENDENTAL1(tan)
STAX_VEC_TRANSCENDENTAL1(tanh)
#undef STAX_VEC_TRANSCENDENTAL1
// scalar_ops.hpp's exp(float) (its exp_f32 formula), step for step on 16 lanes.
static inline stax_vf exp(stax_vf x) {
  namespace E = stax_scalar::m::exp_f32;
  stax_vf xc = select(x > E::kLow, x, (stax_vf)E::kLow);
  xc = select(xc < E::kHigh, xc, (stax_vf)E::kHigh);
  stax_vf s = __builtin_elementwise_fma(xc, (stax_vf)E::kLog2e, (stax_vf)E::kShift);
  stax_vf n = s - E::kShift;
  stax_vf r = __builtin_elementwise_fma(n, (stax_vf)-E::kLn2Hi, xc);
  r = __builtin_elementwise_fma(n, (stax_vf)-E::kLn2Lo, r);
  stax_vf p = __builtin_elementwise_fma((stax_vf)E::kP4, r, (stax_vf)E::kP3);
  p = __builtin_elementwise_fma(p, r, (stax_vf)E::kP2);
  p = __builtin_elementwise_fma(p, r, (stax_vf)E::kP1);
  p = __builtin_elementwise_fma(p, r, (stax_vf)E::kP0);
  stax_vf u = 1.0f + r;
  stax_vf e = (1.0f - u) + r;
  stax_vf y = u + __builtin_elementwise_fma(r * r, p, e);
  stax_vu b = (stax_vu)s;
  stax_vu b1 = b >> 1;
  y = (y * (stax_vf)((b1 + 127u) << 23)) * (stax_vf)((b - b1 + 127u) << 23);
  return select(x != x, (stax_vf)__builtin_nanf(""), y);
}
static inline stax_vf log1p(stax_vf x) {
  stax_vf r = Sleef_cinz_log1pf16_u10avx512fnofma(x);
  stax_vf big = Sleef_cinz_logf16_u10avx512fnofma(x);
  return canonical_nan(select(x > 1e38f, big, r));
}
// scalar_ops.hpp's erf(float), step for step on 16 lanes (its polynomials take vectors and an fma).
static inline stax_vf erf(stax_vf x) {
  namespace E = stax_scalar::m::erf_f32;
  auto fma = [](stax_vf a, stax_vf b, stax_vf c) { return __builtin_elementwise_fma(a, b, c); };
  stax_vf ax = abs(x);
  stax_vf small = fma(x, E::small_q(fma, x * x), x);
  stax_vf m = E::mid_m(fma, ax - E::kMidCenter);
  stax_vf a = select(ax < E::kClamp, ax, (stax_vf)E::kClamp);
  stax_vf t = E::tail_t(fma, a - E::kTailCenter);
  stax_vm mid = ax < E::kMidEnd;
  stax_vf p = select(mid, m, t);
  stax_vf base = select(mid, (stax_vf)E::kMidBase, (stax_vf)1.0f);
  stax_vf large = base - p;
  large = (stax_vf)(((stax_vm)large & 0x7fffffff) | ((stax_vm)x & (int)0x80000000));
  return canonical_nan(select(ax >= E::kSmallEnd, large, small));
}
static inline stax_vf sqrt(stax_vf x) { return __builtin_elementwise_sqrt(x); }
static inline stax_vf rsqrt(stax_vf x) { return 1.0f / __builtin_elementwise_sqrt(x); }
static inline stax_vf sigmoid(stax_vf x) { return 1.0f / (1.0f + exp(-x)); }
static inline stax_vf relu(stax_vf x) { return select(x < 0.0f, (stax_vf)0.0f, x); }
static inline stax_vf reciprocal(stax_vf x) { return 1.0f / x; }
static inline stax_vf sign(stax_vf x) {
  return select(x > 0.0f, (stax_vf)1.0f, select(x < 0.0f, (stax_vf)-1.0f, (stax_vf)0.0f));
}
static inline stax_vf floor(stax_vf x) { return __builtin_elementwise_floor(x); }
static inline stax_vf ceil(stax_vf x) { return __builtin_elementwise_ceil(x); }
static inline stax_vf round(stax_vf x) { return __builtin_elementwise_nearbyint(x); }
static inline stax_vf trunc(stax_vf x) { return __builtin_elementwise_trunc(x); }
static inline stax_vm logical_not(stax_vf x) { return x == 0.0f; }
static inline stax_vm logical_not(stax_vm x) { return ~x; }
static inline stax_vm isnan(stax_vf x) { return x != x; }
static inline stax_vf add(stax_vf a, stax_vf b) { return a + b; }
static inline stax_vf sub(stax_vf a, stax_vf b) { return a - b; }
static inline stax_vf mul(stax_vf a, stax_vf b) { return a * b; }
static inline stax_vf truediv(stax_vf a, stax_vf b) { return a / b; }
// NaN-propagating max / min (torch.maximum): a NaN operand wins, the first if both are NaN.
static inline stax_vf maximum(stax_vf a, stax_vf b) {
  return select(a != a, a, select(b != b, b, select(a > b, a, b)));
}
static inline stax_vf minimum(stax_vf a, stax_vf b) {
  return select(a != a, a, select(b != b, b, select(a < b, a, b)));
}
static inline stax_vm logical_and(stax_vf a, stax_vf b) { return (a != 0.0f) & (b != 0.0f); }
static inline stax_vm logical_or(stax_vf a, stax_vf b) { return (a != 0.0f) | (b != 0.0f); }
static inline stax_vm logical_and(stax_vm a, stax_vm b) { return a & b; }
static inline stax_vm logical_or(stax_vm a, stax_vm b) { return a | b; }
static inline stax_vm eq(stax_vf a, stax_vf b) { return a == b; }
static inline stax_vm ne(stax_vf a, stax_vf b) { return a != b; }
static inline stax_vm lt(stax_vf a, stax_vf b) { return a < b; }
static inline stax_vm le(stax_vf a, stax_vf b) { return a <= b; }
static inline stax_vm gt(stax_vf a, stax_vf b) { return a > b; }
static inline stax_vm ge(stax_vf a, stax_vf b) { return a >= b; }
static inline stax_vm eq(stax_vm a, stax_vm b) { return a == b; }
static inline stax_vm ne(stax_vm a, stax_vm b) { return a != b; }
static inline stax_vm to_bool(stax_vf x) { return x != 0.0f; }
static inline stax_vf to_float(stax_vm x) { return select(x, (stax_vf)1.0f, (stax_vf)0.0f); }
// The segmented order's tree (stax/sdk/reduction_order.hpp) over the 16 lanes: lane l of step h
// combines lanes l and l + h; the result is lane 0.
#define STAX_VEC_TREE(op)                                                                        \
  static inline float tree_##op(stax_vf s) {                                                      \
    s = op(s, __builtin_shufflevector(s, s, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7)); \
    s = op(s, __builtin_shufflevector(s, s, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3));       \
    s = op(s, __builtin_shufflevector(s, s, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1));       \
    s = op(s, __builtin_shufflevector(s, s, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0));       \
    return s[0];                                                                                  \
  }
STAX_VEC_TREE(add)
STAX_VEC_TREE(mul)
STAX_VEC_TREE(maximum)
STAX_VEC_TREE(minimum)
#undef STAX_VEC_TREE
// Strict order's row tiles (row_tile_body): t[l] = 16 consecutive elements of row l, from p +
// l * stride (all 16 lanes, or the lanes of m: the last, partial tile of a row). The full form
// also prefetches each row 128 elements (8 cache lines) ahead: 16 rows a power-of-two stride
// apart share their L1 sets, and the hardware prefetchers did not keep up with 16 streams (W4
// 8192 x 8192 by itself: 17.1 -> 13.2 ms; a prefetch never faults, so it may run past a row's
// or a buffer's end).
static inline void load_rows(stax_vf* t, const float* p, long long stride) {
  for (int l = 0; l < 16; ++l) {
    __builtin_prefetch(p + l * stride + 128, 0, 3);
    t[l] = load(p + l * stride);
  }
}
static inline void load_rows(stax_vf* t, const float* p, long long stride, stax_mask16 m) {
  for (int l = 0; l < 16; ++l) t[l] = load(p + l * stride, m);
}
// The 16 x 16 tile transposed in registers: t[j][l] = old t[l][j]. Stage s swaps the
// off-diagonal s x s blocks of every 2s x 2s block: rows i and i + s (bit s of i clear) exchange
// the columns with bit s set in row i for those without it in row i + s, one two-source shuffle
// per row (s = 1, 2: unpacks within 128-bit lanes; s = 4, 8: lane permutes); after the four
// stages every element has had the bits of its row and column swapped.
#define STAX_VEC_UNPAREN(...) __VA_ARGS__
#define STAX_VEC_TRANSPOSE_STAGE(s, lo, hi)                                  \
  for (int i = 0; i < 16; ++i) {                                             \
    if (i & (s)) continue;                                                   \
    stax_vf a = t[i], b = t[i + (s)];                                        \
    t[i] = __builtin_shufflevector(a, b, STAX_VEC_UNPAREN lo);               \
    t[i + (s)] = __builtin_shufflevector(a, b, STAX_VEC_UNPAREN hi);         \
  }
static inline void transpose16(stax_vf* t) {
  STAX_VEC_TRANSPOSE_STAGE(8, (0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23), (8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31))
  STAX_VEC_TRANSPOSE_STAGE(4, (0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27), (4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31))
  STAX_VEC_TRANSPOSE_STAGE(2, (0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29), (2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31))
  STAX_VEC_TRANSPOSE_STAGE(1, (0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30), (1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31))
}
#undef STAX_VEC_TRANSPOSE_STAGE
#undef STAX_VEC_UNPAREN
}  // namespace stax_vec
// The bounds check of an indirect index over the lanes of `mask`: the first lane out of
// [0, size) is reported with its index as loaded, as the scalar kernel reports its first failing
// element, and the kernel stops.
#define STAX_VEC_CHECK_INDEX(loaded, index, size, mask)                                   \
  do {                                                                                    \
    stax_mask16 stax_bad = stax_vec::to_mask(((index) < 0) | ((index) >= (size))) & (mask); \
    if (stax_bad) {                                                                       \
      int stax_lane = __builtin_ctz(stax_bad);                                            \
      stax_fail(stax_error, stax_index_fault{(loaded)[stax_lane], (size)});               \
      return;                                                                             \
    }                                                                                     \
  } while (0)
)STAX_VEC";

// The vector variable of a body: the innermost iteration variable of a pointwise kernel, the
// innermost reduction variable of a reduction-loop body.
struct VectorVar {
  ExprKind kind;
  int64_t index;
};

bool contains(const Expr& e, const VectorVar& v) {
  switch (e.kind()) {
    case ExprKind::Const:
    case ExprKind::Indirect: return false;
    case ExprKind::IterVar:
    case ExprKind::ReduceVar: return e.kind() == v.kind && e.value() == v.index;
    default: return contains(e.lhs(), v) || contains(e.rhs(), v);
  }
}

bool has_kind(const Expr& e, ExprKind k) {
  if (e.kind() == k) return true;
  if (sdk::is_leaf(e.kind())) return false;
  return has_kind(e.lhs(), k) || has_kind(e.rhs(), k);
}

// The coefficient of v in e when e is affine in v (v only under sums and products by
// constants); nullopt otherwise (v under a floordiv, mod, min or max).
std::optional<int64_t> stride_along(const Expr& e, const VectorVar& v) {
  if (!contains(e, v)) return 0;
  switch (e.kind()) {
    case ExprKind::IterVar:
    case ExprKind::ReduceVar: return 1;
    case ExprKind::Add: {
      auto a = stride_along(e.lhs(), v), b = stride_along(e.rhs(), v);
      if (!a || !b) return std::nullopt;
      return *a + *b;
    }
    case ExprKind::Mul: {
      if (e.lhs().is_const()) {
        auto s = stride_along(e.rhs(), v);
        if (s) return e.lhs().value() * *s;
      } else if (e.rhs().is_const()) {
        auto s = stride_along(e.lhs(), v);
        if (s) return e.rhs().value() * *s;
      }
      return std::nullopt;
    }
    default: return std::nullopt;
  }
}

bool is_float_op(int32_t opcode) {
  switch (opcode) {
#define STAX_UNARY_OP(name) case STAX_OP_##name:
#define STAX_BINARY_OP(name) case STAX_OP_##name:
#define STAX_COMPARE_OP(name) case STAX_OP_##name:
#include "stax/sdk/ops.def"
      return opcode != STAX_OP_floordiv && opcode != STAX_OP_mod && opcode != STAX_OP_pow &&
             opcode != STAX_OP_bitwise_and && opcode != STAX_OP_bitwise_or &&
             opcode != STAX_OP_bitwise_xor;  // integer / bool only: the scalar printer
    default: return false;
  }
}

bool is_bool_op(int32_t opcode) {
  return opcode == STAX_OP_logical_not || opcode == STAX_OP_logical_and ||
         opcode == STAX_OP_logical_or || opcode == STAX_OP_eq || opcode == STAX_OP_ne;
}

bool lane_type(DType d) { return d == DType::Float32 || d == DType::Bool; }

// Why body `b` cannot be printed over vectors of `v` ("" = it can). `loaded` / `stored`: the
// buffers its loads and stores touch (added to).
std::string body_reason(const sdk::Kernel& k, size_t bi, const VectorVar& v, bool strict_order,
                        std::set<int32_t>& loaded, std::set<int32_t>& stored) {
  sdk::LoopBody body = k.body(bi);
  auto dtype_of = [&](int32_t op) { return body.op(static_cast<size_t>(op)).dtype(); };
  for (size_t i = 0; i < body.num_ops(); ++i) {
    sdk::OpNode op = body.op(i);
    const std::string at = "op " + std::to_string(i) + " (" + op.name() + ")";
    switch (op.opcode()) {
      case STAX_OP_LOAD:
      case STAX_OP_MASKED_LOAD: {
        sdk::Buffer buf = body.buffer_of(op);
        Expr e = body.index_of(op);
        const bool indirect = has_kind(e, ExprKind::Indirect);
        if (buf.dtype() == DType::Int64 && op.dtype() == DType::Int64 &&
            op.opcode() == STAX_OP_LOAD) {
          // the indices of an indirect load: contiguous or invariant along the vector loop
          auto s = stride_along(e, v);
          if (indirect || !s || (*s != 0 && *s != 1))
            return at + ": an int64 load that is not contiguous along the vector loop";
        } else if (buf.dtype() != DType::Float32 || op.dtype() != DType::Float32) {
          return at + ": a load of " + std::string(sdk::dtype_name(buf.dtype()));
        }
        if ((indirect || !stride_along(e, v)) &&
            (has_kind(e, ExprKind::Min) || has_kind(e, ExprKind::Max)))
          return at + ": a gather index with min / max";
        loaded.insert(op.buffer());
        break;
      }
      case STAX_OP_STORE: {
        sdk::Buffer buf = body.buffer_of(op);
        if (buf.dtype() != DType::Float32 || dtype_of(op.operand(0)) != DType::Float32)
          return at + ": a store of " + std::string(sdk::dtype_name(buf.dtype()));
        auto s = stride_along(body.index_of(op), v);
        if (!s || *s != 1) return at + ": a store that is not contiguous along the vector loop";
        stored.insert(op.buffer());
        break;
      }
      case STAX_OP_STORE_REDUCTION: {
        sdk::Buffer buf = body.buffer_of(op);
        if (buf.dtype() != DType::Float32 || dtype_of(op.operand(0)) != DType::Float32)
          return at + ": a reduction stored as " + std::string(sdk::dtype_name(buf.dtype()));
        stored.insert(op.buffer());
        break;
      }
      case STAX_OP_REDUCTION: {
        if (strict_order) return at + ": strict_order (the sequential order)";
        sdk::ReductionType t = op.reduction_type();
        if (t != sdk::ReductionType::Sum && t != sdk::ReductionType::Prod &&
            t != sdk::ReductionType::Max && t != sdk::ReductionType::Min)
          return at + ": a " + std::string(sdk::reduction_type_name(t)) +
                 " reduction (sequential)";
        if (op.dtype() != DType::Float32 || dtype_of(op.operand(0)) != DType::Float32)
          return at + ": a reduction of " + std::string(sdk::dtype_name(op.dtype()));
        break;
      }
      case STAX_OP_CONSTANT:
        if (!lane_type(op.dtype())) return at + ": a constant of " + sdk::dtype_name(op.dtype());
        break;
      case STAX_OP_TO_DTYPE:
        if (!lane_type(op.dtype()) || !lane_type(dtype_of(op.operand(0))))
          return at + ": a conversion from " +
                 std::string(sdk::dtype_name(dtype_of(op.operand(0)))) + " to " +
                 sdk::dtype_name(op.dtype());
        break;
      case STAX_OP_WHERE:
        if (!lane_type(op.dtype())) return at + ": a where of " + sdk::dtype_name(op.dtype());
        break;
      case STAX_OP_INDIRECT_INDEXING:
        if (dtype_of(op.operand(0)) != DType::Int64)
          return at + ": an index of " + std::string(sdk::dtype_name(dtype_of(op.operand(0))));
        break;
      default: {
        if (op.opcode() == STAX_OP_INDEX_EXPR) return at + ": not printed over vectors";
        DType in = op.num_operands() > 0 ? dtype_of(op.operand(0)) : op.dtype();
        if (in == DType::Float32 ? !is_float_op(op.opcode())
                                 : !(in == DType::Bool && is_bool_op(op.opcode())))
          return at + ": " + op.name() + " of " + sdk::dtype_name(in) + " has no vector form";
        break;
      }
    }
  }
  return "";
}

constexpr const char* kReductionLoopOf = "reduction-loop body ";

}  // namespace

bool VectorPlan::any() const {
  if (pointwise) return true;
  for (bool b : body)
    if (b) return true;
  return false;
}

VectorPlan vector_plan(const sdk::Kernel& k, bool strict_order) {
  VectorPlan plan;
  plan.body.assign(k.num_bodies(), false);
  sdk::Span<int64_t> ranges = k.ranges();
  sdk::Span<int64_t> rranges = k.reduction_ranges();
  bool any_reduction_loop = false;
  for (size_t b = 0; b < k.num_bodies(); ++b)
    any_reduction_loop = any_reduction_loop || k.body(b).is_reduction_loop();
  if (!any_reduction_loop) {
    if (ranges.empty() || k.num_bodies() == 0) {
      plan.reasons.push_back("a 0-d pointwise kernel");
      return plan;
    }
    if (ranges[ranges.size() - 1] < kVectorLanes) {
      plan.reasons.push_back("the innermost extent " + std::to_string(ranges[ranges.size() - 1]) +
                             " is below " + std::to_string(kVectorLanes));
      return plan;
    }
    VectorVar v{ExprKind::IterVar, static_cast<int64_t>(ranges.size()) - 1};
    std::set<int32_t> loaded, stored;
    for (size_t b = 0; b < k.num_bodies(); ++b) {
      std::string r = body_reason(k, b, v, strict_order, loaded, stored);
      if (!r.empty()) {
        plan.reasons.push_back("body " + std::to_string(b) + ": " + r);
        return plan;
      }
    }
    for (int32_t s : stored)
      if (loaded.count(s)) {
        plan.reasons.push_back("buffer " + std::to_string(s) + " is both loaded and stored");
        return plan;
      }
    plan.pointwise = true;
    return plan;
  }
  // The segment of the flat reduction index must be the innermost reduction variable's (mod 16).
  if (rranges.empty() ||
      (rranges.size() > 1 && rranges[rranges.size() - 1] % kVectorLanes != 0)) {
    plan.reasons.push_back("the innermost reduction extent is not a multiple of " +
                           std::to_string(kVectorLanes) + " under an outer reduction loop");
    return plan;
  }
  VectorVar v{ExprKind::ReduceVar, static_cast<int64_t>(rranges.size()) - 1};
  for (size_t b = 0; b < k.num_bodies(); ++b) {
    if (!k.body(b).is_reduction_loop()) continue;  // per output: stays scalar
    std::set<int32_t> loaded, stored;
    std::string r = body_reason(k, b, v, strict_order, loaded, stored);
    for (int32_t s : stored)
      if (r.empty() && loaded.count(s)) r = "buffer " + std::to_string(s) + " is both loaded and stored";
    if (!r.empty())
      plan.reasons.push_back(kReductionLoopOf + std::to_string(b) + ": " + r);
    else
      plan.body[b] = true;
  }
  return plan;
}

std::string row_tile_reason(const sdk::Kernel& k, size_t b) {
  sdk::Span<int64_t> ranges = k.ranges();
  sdk::Span<int64_t> rranges = k.reduction_ranges();
  if (ranges.empty()) return "no iteration variable";
  if (rranges.size() != 1) return "not one reduction loop";
  sdk::LoopBody body = k.body(b);
  if (!body.is_reduction_loop()) return "not a reduction-loop body";
  const VectorVar lane{ExprKind::IterVar, static_cast<int64_t>(ranges.size()) - 1};
  const VectorVar r{ExprKind::ReduceVar, 0};
  std::set<int32_t> loaded, stored;
  std::string why = body_reason(k, b, lane, false, loaded, stored);
  if (!why.empty()) return why;
  bool accumulates = false;
  for (size_t i = 0; i < body.num_ops(); ++i) {
    sdk::OpNode op = body.op(i);
    const std::string at = "op " + std::to_string(i) + " (" + op.name() + ")";
    switch (op.opcode()) {
      case STAX_OP_STORE: return at + ": a store inside the reduction loop";
      case STAX_OP_MASKED_LOAD: return at + ": a masked load";
      case STAX_OP_INDIRECT_INDEXING: return at + ": an indirect index";
      case STAX_OP_REDUCTION: accumulates = true; break;
      case STAX_OP_LOAD: {
        Expr e = body.index_of(op);
        if (body.buffer_of(op).dtype() != DType::Float32) return at + ": not a float32 load";
        if (has_kind(e, ExprKind::Indirect)) return at + ": an indirect load";
        std::optional<int64_t> along = stride_along(e, r);
        if (!stride_along(e, lane) || !along) return at + ": an index not affine in the row or the reduction";
        if (*along != 0 && *along != 1) return at + ": strided along the reduction";
        break;
      }
      default: break;
    }
  }
  if (!accumulates) return "nothing accumulates";
  for (int32_t s : stored)
    if (loaded.count(s)) return "buffer " + std::to_string(s) + " is both loaded and stored";
  return "";
}

const std::string& vector_prelude() {
  static const std::string text = kVectorPrelude;
  return text;
}

namespace {

sdk::CStyleTables vector_tables() {
  sdk::CStyleTables t;
  t.compute_types[static_cast<int>(DType::Float32)] = "stax_vf";
  t.compute_types[static_cast<int>(DType::Bool)] = "stax_vm";
  t.compute_types[static_cast<int>(DType::Int64)] = "stax_vl";  // indices only
  t.op_prefix = "stax_vec::";
  t.value_prefix = "vtmp";
  t.acc_prefix = "vacc";
  t.hoist_invariants = false;  // every value is a vector (Clang hoists invariant broadcasts)
  return t;
}

// The ops of one body over vectors of the vector variable. tail(): the masked last vector
// (`stax_m`: its lanes as a bit mask, `stax_tail`: as bool lanes).
class VectorOps : public sdk::CStylePrinter {
 public:
  VectorOps(const sdk::Kernel& k) : sdk::CStylePrinter(k, vector_tables()) {}

  void set_var(VectorVar v) { var_ = v; }
  void set_tail(bool tail) { tail_ = tail; }
  bool used_iota() const { return used_iota_; }
  void reset_iota() { used_iota_ = false; }
  // A new body: its reduction ops get new accumulators (shared by its main and tail prints).
  void new_body() { accs_.clear(); }

  std::string iter_var(int32_t k) const override {
    std::string s = sdk::CStylePrinter::iter_var(k);
    if (row_lane_ && var_.kind == ExprKind::IterVar && var_.index == k)
      return "(" + s + " + stax_l)";
    return lane_index_ && var_.kind == ExprKind::IterVar && var_.index == k
               ? "(" + s + " + stax_iota)" : s;
  }
  std::string reduce_var(int32_t k) const override {
    std::string s = sdk::CStylePrinter::reduce_var(k);
    if (rows_ && !tile_base_) return "(" + s + " + stax_j)";
    return lane_index_ && var_.kind == ExprKind::ReduceVar && var_.index == k
               ? "(" + s + " + stax_iota)" : s;
  }

  // Row tiles (VectorPrinter::row_tile_body): lanes are the rows along iteration variable `lane`
  // (from its current value), the reduction variable reads as (r + stax_j), column stax_j of the
  // current tile; a load contiguous along the reduction and moving along the rows reads the
  // tile's column (tiles(): one per distinct address).
  struct Tile {
    std::string name, address;
    int64_t stride;  // between rows
  };
  void set_rows(int32_t lane_dim) {
    rows_ = true;
    var_ = {ExprKind::IterVar, lane_dim};
    tiles_.clear();
  }
  void clear_rows() { rows_ = false; }
  const std::vector<Tile>& tiles() const { return tiles_; }

  std::string constant(sdk::Scalar value, DType dtype) override {
    if (dtype == DType::Bool) return emit(value.as_int() ? "(stax_vm)(-1)" : "(stax_vm)(0)");
    return emit("(stax_vf)(" + literal(value, dtype) + ")");
  }

  std::string load(const sdk::Buffer& b, const Expr& index) override {
    std::string rhs = load_rhs(b, index, "");
    std::string v = emit(rhs);
    remember_load(b, rhs);
    return v;
  }
  std::string masked_load(const sdk::Buffer& b, const Expr& index, std::string mask,
                          sdk::Scalar other) override {
    std::string rhs = load_rhs(b, index, mask);
    std::string v = emit(rhs);
    remember_load(b, rhs);
    return emit("stax_vec::select(" + mask + ", " + v + ", (stax_vf)(" +
                literal(other, DType::Float32) + "))");
  }

  std::string to_dtype(std::string x, DType dtype) override {
    DType from = dtype_of(x);
    if (from == dtype) return x;
    return emit(dtype == DType::Bool ? "stax_vec::to_bool(" + x + ")"
                                     : "stax_vec::to_float(" + x + ")");
  }

  // A vector of indices: wrapped, checked over the live lanes (the first bad lane is reported as
  // the scalar kernel reports its first bad element), narrowed to int lanes for 32-bit kernels.
  std::string indirect_indexing(std::string x, int64_t size, bool check_bounds,
                                bool wrap_negative) override {
    const std::string sz = std::to_string(size) + "LL";
    std::string v = x;
    if (wrap_negative) v = emit("stax_vec::wrap_negative(" + x + ", " + sz + ")", true, "stax_vl");
    if (check_bounds)
      out().lines.push_back("STAX_VEC_CHECK_INDEX(" + x + ", " + v + ", " + sz + ", " +
                            (tail_ ? "stax_m" : "(stax_mask16)0xffff") + ");");
    if (kernel().index_bits() == 32)
      v = emit("__builtin_convertvector(" + v + ", stax_vi)", true, "stax_vi");
    return v;
  }

  std::string reduction(sdk::ReductionType type, DType dtype, std::string value) override {
    auto it = accs_.find(cur_op_);
    const char* op = type == sdk::ReductionType::Sum    ? "add"
                     : type == sdk::ReductionType::Prod ? "mul"
                     : type == sdk::ReductionType::Max  ? "maximum"
                                                        : "minimum";
    std::string acc;
    if (it != accs_.end()) {
      acc = it->second;
    } else {
      acc = "vacc" + std::to_string(acc_count_++);
      accs_[cur_op_] = acc;
      acc_op_[acc] = op;
    }
    out().prologue.push_back("stax_vf " + acc + " = (stax_vf)(" + reduction_identity(type, dtype) +
                             ");");
    std::string next = std::string("stax_vec::") + op + "(" + acc + ", " + value + ")";
    if (tail_) next = "stax_vec::select(stax_tail, " + next + ", " + acc + ")";
    out().lines.push_back(acc + " = " + next + ";");
    return acc;
  }

  void store(const sdk::Buffer& b, const Expr& index, std::string value) override {
    forget_loads(b);
    // Streaming stores (streaming_store.h): full vectors only (the masked tail stays normal).
    if (!tail_ && !rows_ && static_cast<size_t>(b.index()) < streamed_.size() &&
        streamed_[static_cast<size_t>(b.index())]) {
      out().lines.push_back("stax_stream16(" + address(b, index) + ", " + value + ");");
      streamed_any_ = true;
      return;
    }
    out().lines.push_back("stax_vec::store(" + address(b, index) + ", " + value +
                          (tail_ ? ", stax_m" : "") + ");");
  }
  void set_streamed(std::vector<bool> streamed) { streamed_ = std::move(streamed); }
  bool streamed_any() const { return streamed_any_; }
  void store_reduction(const sdk::Buffer& b, const Expr& index, std::string value) override {
    forget_loads(b);
    if (rows_) {  // lane l is row l's result
      std::optional<int64_t> s = stride_along(index, var_);
      if (s && *s == 1) {
        out().epilogue.push_back("stax_vec::store(" + address(b, index) + ", " + value + ");");
      } else {
        row_lane_ = true;
        std::string e = element(b, index);
        row_lane_ = false;
        out().epilogue.push_back("for (int stax_l = 0; stax_l < 16; ++stax_l) " + e + " = " +
                                 value + "[stax_l];");
      }
      return;
    }
    out().epilogue.push_back(element(b, index) + " = stax_vec::tree_" + acc_op_.at(value) + "(" +
                             value + ");");
  }

  void begin_op(int32_t op_index, DType result_dtype) override {
    cur_op_ = op_index;
    sdk::CStylePrinter::begin_op(op_index, result_dtype);
  }

 private:
  // `ptr + (offset + index)`, the index at lane 0.
  std::string address(const sdk::Buffer& b, const Expr& index) const {
    std::string idx = format_index(index);
    if (b.offset() != 0) idx = std::to_string(b.offset()) + " + " + idx;
    return buffer_name(b) + " + (" + idx + ")";
  }

  std::string load_rhs(const sdk::Buffer& b, const Expr& index, const std::string& mask) {
    std::optional<int64_t> st = stride_along(index, var_);
    if (rows_ && mask.empty() && b.dtype() == DType::Float32 && st && *st != 0 &&
        !has_kind(index, ExprKind::Indirect)) {
      const int32_t last = static_cast<int32_t>(kernel().reduction_ranges().size()) - 1;
      std::optional<int64_t> along = stride_along(index, {ExprKind::ReduceVar, last});
      if (along && *along == 1) {
        tile_base_ = true;
        std::string a = address(b, index);
        tile_base_ = false;
        auto it = std::find_if(tiles_.begin(), tiles_.end(),
                               [&](const Tile& t) { return t.address == a && t.stride == *st; });
        if (it == tiles_.end()) {
          tiles_.push_back({"stax_tile" + std::to_string(tiles_.size()), a, *st});
          it = tiles_.end() - 1;
        }
        return it->name + "[stax_j]";
      }
    }
    if (b.dtype() == DType::Int64) {  // indices (the plan: contiguous or invariant)
      if (st.value_or(1) == 0) return "(stax_vl)(" + element(b, index) + ")";
      return "stax_vec::load(" + address(b, index) + (tail_ ? ", stax_m" : "") + ")";
    }
    // Indirect indices vary by lane: a gather.
    const bool affine = st.has_value() && !has_kind(index, ExprKind::Indirect);
    const int64_t s = st.value_or(0);
    std::string m = mask.empty() ? (tail_ ? "stax_m" : "")
                                 : "stax_vec::to_mask(" + mask + ")" + (tail_ ? " & stax_m" : "");
    if (affine && s == 1)
      return "stax_vec::load(" + address(b, index) + (m.empty() ? "" : ", " + m) + ")";
    if (affine && s == 0 && mask.empty()) return "(stax_vf)(" + element(b, index) + ")";
    used_iota_ = true;
    std::string base = buffer_name(b);
    if (b.offset() != 0) base += " + " + std::to_string(b.offset());
    std::string idx;
    if (affine) {
      idx = format_index(index) + " + " + std::to_string(s) + " * stax_iota";
    } else {
      lane_index_ = true;
      idx = format_index(index);
      lane_index_ = false;
    }
    return "stax_vec::gather(" + base + ", " + idx + ", " + (m.empty() ? "0xffff" : m) + ")";
  }

  VectorVar var_{ExprKind::IterVar, -1};
  std::vector<bool> streamed_;  // per buffer: its stores stream (streaming_store.h)
  bool streamed_any_ = false;
  bool tail_ = false;
  bool lane_index_ = false;
  bool used_iota_ = false;
  bool rows_ = false, tile_base_ = false, row_lane_ = false;
  std::vector<Tile> tiles_;
  int32_t cur_op_ = -1;
  std::map<int32_t, std::string> accs_;       // reduction op -> accumulator (main and tail)
  std::map<std::string, std::string> acc_op_;  // accumulator -> its combining op
  int acc_count_ = 0;
};

std::string loop_open(const std::string& v, const std::string& hi) {
  return "for (; " + v + " <= " + hi + " - " + std::to_string(kVectorLanes) + "; " + v +
         " += " + std::to_string(kVectorLanes) + ") {";
}

void indent(std::vector<std::string>& out, const std::vector<std::string>& lines, int depth) {
  for (const std::string& l : lines) out.push_back(std::string(2 * depth, ' ') + l);
}

}  // namespace

struct VectorPrinter::Impl {
  Impl(const sdk::Kernel& k, std::vector<bool> streamed) : kernel(k), ops(k) {
    ops.set_streamed(std::move(streamed));
  }
  sdk::Kernel kernel;
  VectorOps ops;

  // The vector loop over `v` (a declared-here loop variable) from lo to hi: `main` prints the
  // statements of a full vector, `tail` (masks in scope) those of the last partial one.
  std::vector<std::string> vector_loop(const std::string& v, const std::string& lo,
                                       const std::string& hi, bool tail_needed,
                                       const std::function<std::vector<std::string>(bool)>& print) {
    const std::string ix = ops.index_type();
    const std::string iota = std::string("const ") +
                             (kernel.index_bits() == 32 ? "stax_vi" : "stax_vl") +
                             " stax_iota = " +
                             (kernel.index_bits() == 32 ? "stax_vec::iota();"
                                                        : "__builtin_convertvector(stax_vec::iota(), stax_vl);");
    std::vector<std::string> out;
    out.push_back("{");
    out.push_back("  " + ix + " " + v + " = " + lo + ";");
    ops.reset_iota();
    std::vector<std::string> main = print(false);
    std::vector<std::string> tail = tail_needed ? print(true) : std::vector<std::string>{};
    if (ops.used_iota()) out.push_back("  " + iota);
    out.push_back("  " + loop_open(v, hi));
    indent(out, main, 2);
    out.push_back("  }");
    if (tail_needed) {
      out.push_back("  if (" + v + " < " + hi + ") {  // the last, partial vector: masked");
      out.push_back("    const stax_mask16 stax_m = stax_vec::tail_mask(" + hi + " - " + v + ");");
      out.push_back("    const stax_vm stax_tail = stax_vec::tail_lanes(" + hi + " - " + v + ");");
      out.push_back("    (void)stax_tail;");
      indent(out, tail, 2);
      out.push_back("  }");
    }
    out.push_back("}");
    return out;
  }
};

VectorPrinter::VectorPrinter(const sdk::Kernel& k, std::vector<bool> streamed)
    : impl_(std::make_unique<Impl>(k, std::move(streamed))) {}
VectorPrinter::~VectorPrinter() = default;
bool VectorPrinter::streamed() const { return impl_->ops.streamed_any(); }

std::vector<std::string> VectorPrinter::pointwise_loop(const std::string& lo,
                                                       const std::string& hi, bool tail_needed) {
  Impl& m = *impl_;
  const int32_t d = static_cast<int32_t>(m.kernel.ranges().size()) - 1;
  m.ops.set_var({ExprKind::IterVar, d});
  std::string v = m.ops.sdk::CStylePrinter::iter_var(d);
  return m.vector_loop(v, lo, hi, tail_needed, [&](bool tail) {
    m.ops.set_tail(tail);
    std::vector<std::string> lines;
    for (size_t b = 0; b < m.kernel.num_bodies(); ++b) {
      sdk::LoopBody body = m.kernel.body(b);
      if (!body.name().empty()) lines.push_back("// " + body.name());
      // One scope for all bodies: a value that two compute is printed once (Clang did not merge
      // gelu's and gelu_backward's erf of one input: the second reloads it after the first
      // body's store, through pointers it could not tell apart once the body was inlined).
      sdk::PrintedBody pb = m.ops.print(body, /*same_scope=*/b > 0);
      lines.insert(lines.end(), pb.lines.begin(), pb.lines.end());
    }
    m.ops.set_tail(false);
    return lines;
  });
}

std::vector<std::string> VectorPrinter::row_tile_body(size_t b) {
  Impl& m = *impl_;
  const sdk::Kernel& k = m.kernel;
  const int32_t d = static_cast<int32_t>(k.ranges().size()) - 1;
  const int64_t n = k.reduction_ranges()[0];
  const bool narrow = k.index_bits() == 32;
  const std::string ix = m.ops.index_type();
  const std::string extent = std::to_string(n) + (narrow ? "" : "LL");
  m.ops.set_rows(d);
  m.ops.new_body();
  m.ops.reset_iota();
  sdk::PrintedBody pb = m.ops.print(k.body(b));
  const std::vector<VectorOps::Tile> tiles = m.ops.tiles();
  m.ops.clear_rows();
  const std::string r = m.ops.sdk::CStylePrinter::reduce_var(0);
  std::vector<std::string> out;
  out.push_back("// 16 rows from " + m.ops.sdk::CStylePrinter::iter_var(d) +
                " in 16 lanes, lane l row l's sequential accumulator; 16 x 16 tiles transposed");
  out.insert(out.end(), pb.prologue.begin(), pb.prologue.end());
  out.insert(out.end(), pb.hoisted.begin(), pb.hoisted.end());
  out.push_back("{");
  if (m.ops.used_iota())
    out.push_back(std::string("  const ") + (narrow ? "stax_vi" : "stax_vl") + " stax_iota = " +
                  (narrow ? "stax_vec::iota();" : "__builtin_convertvector(stax_vec::iota(), stax_vl);"));
  out.push_back("  " + ix + " " + r + " = 0;");
  // The tiles of columns [r, r + 16) (masked: of the first stax_rem), then their columns in order.
  auto columns = [&](const std::string& mask, const std::string& count, bool unroll) {
    for (const VectorOps::Tile& t : tiles) {
      out.push_back("    stax_vf " + t.name + "[16];");
      out.push_back("    stax_vec::load_rows(" + t.name + ", " + t.address + ", " +
                    std::to_string(t.stride) + "LL" + mask + ");");
      out.push_back("    stax_vec::transpose16(" + t.name + ");");
    }
    if (unroll) out.push_back("    #pragma clang loop unroll(full) vectorize(disable)");
    out.push_back("    for (int stax_j = 0; stax_j < " + count + "; ++stax_j) {");
    indent(out, pb.lines, 3);
    out.push_back("    }");
  };
  out.push_back("  " + loop_open(r, extent));
  columns("", "16", true);
  out.push_back("  }");
  if (n % kVectorLanes != 0) {
    out.push_back("  if (" + r + " < " + extent + ") {  // the last, partial tile: its columns in order");
    out.push_back("    const int stax_rem = (int)(" + extent + " - " + r + ");");
    columns(", stax_vec::tail_mask(stax_rem)", "stax_rem", false);
    out.push_back("  }");
  }
  out.push_back("}");
  out.insert(out.end(), pb.epilogue.begin(), pb.epilogue.end());
  return out;
}

std::vector<std::string> VectorPrinter::reduction_body(size_t b) {
  Impl& m = *impl_;
  sdk::Span<int64_t> rr = m.kernel.reduction_ranges();
  const int32_t last = static_cast<int32_t>(rr.size()) - 1;
  const bool narrow = m.kernel.index_bits() == 32;
  auto extent = [&](int64_t n) { return std::to_string(n) + (narrow ? "" : "LL"); };
  m.ops.set_var({ExprKind::ReduceVar, last});
  m.ops.new_body();
  sdk::LoopBody body = m.kernel.body(b);
  sdk::PrintedBody first;
  std::vector<std::string> loop = m.vector_loop(
      m.ops.sdk::CStylePrinter::reduce_var(last), "0", extent(rr[static_cast<size_t>(last)]),
      rr[static_cast<size_t>(last)] % kVectorLanes != 0, [&](bool tail) {
        m.ops.set_tail(tail);
        sdk::PrintedBody pb = m.ops.print(body);
        m.ops.set_tail(false);
        if (!tail) first = pb;
        return pb.lines;
      });
  std::vector<std::string> out;
  out.push_back("// the innermost reduction loop over vectors: segment l in lane l");
  out.insert(out.end(), first.prologue.begin(), first.prologue.end());
  int depth = 0;
  for (int32_t r = 0; r < last; ++r) {
    std::string v = m.ops.sdk::CStylePrinter::reduce_var(r);
    out.push_back(std::string(2 * depth, ' ') + "for (" + m.ops.index_type() + " " + v + " = 0; " +
                  v + " < " + extent(rr[static_cast<size_t>(r)]) + "; ++" + v + ") {");
    ++depth;
  }
  indent(out, loop, depth);
  while (depth > 0) {
    --depth;
    out.push_back(std::string(2 * depth, ' ') + "}");
  }
  out.insert(out.end(), first.epilogue.begin(), first.epilogue.end());
  return out;
}

}  // namespace stax::cpu
