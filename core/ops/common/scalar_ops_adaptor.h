// ScalarOps<T>: the ops domain of core/ops/pointwise/formulas.h over plain scalars, each op
// mapped to its stax_scalar function (sdk/include/stax/sdk/scalar_ops.hpp), the same text compiled
// CPU kernels embed. T is a computation type: float, double, i64 (long long) or bool.
//
// Every op of ops.def is a member; comparisons, logical ops and isnan return bool. An op that is
// not defined for T (exp on integers, floor or sub on bool ...) throws Error("interpreter", ...)
// when called, so one generic kernel body serves every dtype and fails only where PyTorch would.
#pragma once

#include <string>
#include <type_traits>

#include "core/types/dtype.h"
#include "core/support/error.h"
#include "stax/sdk/scalar_ops.hpp"

namespace stax::kernels {

template <class T>
struct ScalarOps {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double> ||
                    std::is_same_v<T, stax_scalar::i64> || std::is_same_v<T, bool>,
                "ScalarOps<T> needs a computation type");
  using V = T;
  static constexpr bool kFloat = std::is_floating_point_v<T>;
  static constexpr bool kBool = std::is_same_v<T, bool>;

  [[noreturn]] static void unsupported(const char* op) {
    const char* type = kBool ? "bool" : (kFloat ? "floating-point" : "integer");
    throw Error("interpreter", "", std::string("'") + op + "' is not defined for " + type +
                                       " values");
  }

  T constant(double v, DType) const { return stax_scalar::convert<T, double>(v); }
  T where(bool c, T a, T b) const { return stax_scalar::where(c, a, b); }

#define STAX_FLOAT_ONLY_UNARY(name)                    \
  T name(T x) const {                                  \
    if constexpr (kFloat) return stax_scalar::name(x); \
    else unsupported(#name);                           \
  }
#define STAX_NUMERIC_UNARY(name)                        \
  T name(T x) const {                                   \
    if constexpr (!kBool) return stax_scalar::name(x);  \
    else unsupported(#name);                            \
  }
#define STAX_ANY_UNARY(name, R) \
  R name(T x) const { return stax_scalar::name(x); }
#define STAX_NUMERIC_BINARY(name)                          \
  T name(T a, T b) const {                                 \
    if constexpr (!kBool) return stax_scalar::name(a, b);  \
    else unsupported(#name);                               \
  }
#define STAX_ANY_BINARY(name, R) \
  R name(T a, T b) const { return stax_scalar::name(a, b); }
#define STAX_INTEGRAL_BINARY(name)                         \
  T name(T a, T b) const {                                 \
    if constexpr (!kFloat) return stax_scalar::name(a, b); \
    else unsupported(#name);                               \
  }

  STAX_FLOAT_ONLY_UNARY(exp)
  STAX_FLOAT_ONLY_UNARY(exp2)
  STAX_FLOAT_ONLY_UNARY(expm1)
  STAX_FLOAT_ONLY_UNARY(log)
  STAX_FLOAT_ONLY_UNARY(log2)
  STAX_FLOAT_ONLY_UNARY(log10)
  STAX_FLOAT_ONLY_UNARY(log1p)
  STAX_FLOAT_ONLY_UNARY(sqrt)
  STAX_FLOAT_ONLY_UNARY(rsqrt)
  STAX_FLOAT_ONLY_UNARY(sin)
  STAX_FLOAT_ONLY_UNARY(cos)
  STAX_FLOAT_ONLY_UNARY(tan)
  STAX_FLOAT_ONLY_UNARY(tanh)
  STAX_FLOAT_ONLY_UNARY(sigmoid)
  STAX_FLOAT_ONLY_UNARY(erf)
  STAX_FLOAT_ONLY_UNARY(reciprocal)
  STAX_NUMERIC_UNARY(floor)
  STAX_NUMERIC_UNARY(ceil)
  STAX_NUMERIC_UNARY(round)
  STAX_NUMERIC_UNARY(trunc)
  STAX_ANY_UNARY(neg, T)
  STAX_ANY_UNARY(abs, T)
  STAX_ANY_UNARY(relu, T)
  STAX_ANY_UNARY(sign, T)
  STAX_ANY_UNARY(logical_not, bool)
  STAX_ANY_UNARY(isnan, bool)

  STAX_ANY_BINARY(add, T)
  STAX_ANY_BINARY(mul, T)
  STAX_NUMERIC_BINARY(sub)
  STAX_NUMERIC_BINARY(truediv)
  STAX_NUMERIC_BINARY(floordiv)
  STAX_NUMERIC_BINARY(mod)
  STAX_NUMERIC_BINARY(pow)
  STAX_ANY_BINARY(maximum, T)
  STAX_ANY_BINARY(minimum, T)
  STAX_ANY_BINARY(logical_and, bool)
  STAX_ANY_BINARY(logical_or, bool)
  STAX_ANY_BINARY(eq, bool)
  STAX_ANY_BINARY(ne, bool)
  STAX_ANY_BINARY(lt, bool)
  STAX_ANY_BINARY(le, bool)
  STAX_ANY_BINARY(gt, bool)
  STAX_ANY_BINARY(ge, bool)
  STAX_INTEGRAL_BINARY(bitwise_and)
  STAX_INTEGRAL_BINARY(bitwise_or)
  STAX_INTEGRAL_BINARY(bitwise_xor)

#undef STAX_FLOAT_ONLY_UNARY
#undef STAX_NUMERIC_UNARY
#undef STAX_ANY_UNARY
#undef STAX_NUMERIC_BINARY
#undef STAX_ANY_BINARY
#undef STAX_INTEGRAL_BINARY
};

}  // namespace stax::kernels
