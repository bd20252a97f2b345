// Pointwise kernels of the reference interpreter: every op of core/ops/pointwise/schemas.cpp and
// backward_ops.cpp. Each element is computed as compiled kernels compute it (seed §6.2, §6.9):
//   load every operand converted to the computation dtype dt (kernel_utils.h load_as), run the
//   op's formula in dt through ScalarOps<dt> (stax_scalar functions, the header compiled kernels
//   embed; composite formulas from core/ops/pointwise/formulas.h), store into the node's result
//   dtype (store_as: half types round to nearest even, integers narrow modulo 2^bits).
// dt = computation_dtype(result dtype), except for ops with a bool result (comparisons, logical
// ops, isnan), which compute in computation_dtype of their inputs' promoted dtype. Python-number
// operands become constants of dt. Inputs broadcast and may have any strides; results are
// contiguous with the node's meta.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "core/graph/op_registry.h"
#include "core/ops/common/elementwise_kernels.h"
#include "core/ops/pointwise/formulas.h"
#include "core/interpreter/interpreter.h"
#include "core/ops/common/kernel_utils.h"
#include "core/ops/registration.h"
#include "core/ops/common/scalar_ops_adaptor.h"
#include "core/ops/special/functions.h"

namespace stax {
namespace {

using namespace elementwise_kernels;  // NOLINT
using namespace kernels;

// Where the computation dtype comes from.
enum class From {
  Result,  // computation_dtype(node result dtype)
  Inputs,  // computation_dtype(promoted dtype of the operands) (ops with a bool result)
};

DType promoted_dtype(const KernelContext& ctx, const std::vector<std::string>& params) {
  const Node& n = ctx.node();
  CallArgs call(*n.op(), n.args(), n.kwargs(), "%" + n.name());
  return result_type(call, params, Promotion::Default);
}

// The tensor bound to `param`, or its Python-number argument as a 0-d tensor of dtype dt.
Tensor operand(const KernelContext& ctx, const std::string& param, DType dt) {
  const Arg& a = ctx.arg(param);
  if (a.is_node()) return ctx.value(a.node());
  if (!a.is_number()) ctx.fail("parameter '" + param + "' is neither a tensor nor a number");
  return scalar_tensor(a, dt);
}

// A kernel applying, elementwise over the broadcast operands `params`, the element function that
// make(ctx, dt) returns: a generic callable f(ScalarOps<C>& o, C x...) (C = dt's C++ type).
template <size_t N, class Make>
KernelFn pointwise(std::array<const char*, N> params, From from, Make make) {
  return [params, from, make](const KernelContext& ctx) -> Tensor {
    std::vector<std::string> names(params.begin(), params.end());
    DType dt = computation_dtype(from == From::Result ? ctx.out_meta().dtype
                                                      : promoted_dtype(ctx, names));
    std::array<Tensor, N> ins;
    for (size_t i = 0; i < N; ++i) ins[i] = operand(ctx, names[i], dt);
    Tensor out = empty_output(ctx.out_meta());
    auto fn = make(ctx, dt);
    dispatch_compute(dt, [&](auto tag) {
      using C = typename decltype(tag)::type;
      ScalarOps<C> o;
      map_into_as<C>(out, ins, [&](auto... xs) { return fn(o, xs...); });
    });
    return out;
  };
}

// An element function that needs nothing from the node.
template <class F>
auto fixed(F f) {
  return [f](const KernelContext&, DType) { return f; };
}

void register_unary(InterpreterTable& t) {
#define STAX_UNARY_KERNEL(name, from)                                                   \
  t.add(#name ".default", pointwise<1>({"self"}, from, fixed([](auto& o, auto x) {      \
          return o.name(x);                                                             \
        })));
  STAX_UNARY_KERNEL(exp, From::Result)
  STAX_UNARY_KERNEL(exp2, From::Result)
  STAX_UNARY_KERNEL(expm1, From::Result)
  STAX_UNARY_KERNEL(log, From::Result)
  STAX_UNARY_KERNEL(log2, From::Result)
  STAX_UNARY_KERNEL(log10, From::Result)
  STAX_UNARY_KERNEL(log1p, From::Result)
  STAX_UNARY_KERNEL(sqrt, From::Result)
  STAX_UNARY_KERNEL(rsqrt, From::Result)
  STAX_UNARY_KERNEL(sin, From::Result)
  STAX_UNARY_KERNEL(cos, From::Result)
  STAX_UNARY_KERNEL(tan, From::Result)
  STAX_UNARY_KERNEL(tanh, From::Result)
  STAX_UNARY_KERNEL(sigmoid, From::Result)
  STAX_UNARY_KERNEL(erf, From::Result)
  STAX_UNARY_KERNEL(reciprocal, From::Result)
  STAX_UNARY_KERNEL(neg, From::Result)
  STAX_UNARY_KERNEL(abs, From::Result)
  STAX_UNARY_KERNEL(relu, From::Result)
  STAX_UNARY_KERNEL(sign, From::Result)
  STAX_UNARY_KERNEL(floor, From::Result)
  STAX_UNARY_KERNEL(ceil, From::Result)
  STAX_UNARY_KERNEL(round, From::Result)
  STAX_UNARY_KERNEL(trunc, From::Result)
  STAX_UNARY_KERNEL(logical_not, From::Inputs)
  STAX_UNARY_KERNEL(isnan, From::Inputs)
#undef STAX_UNARY_KERNEL

  t.add("gelu.default", pointwise<1>({"self"}, From::Result, [](const KernelContext& ctx,
                                                                DType dt) {
    const std::string& approx = ctx.arg("approximate").str();
    if (approx != "none" && approx != "tanh")
      ctx.fail("approximate must be 'none' or 'tanh', got '" + approx + "'");
    bool tanh = approx == "tanh";
    return [tanh, dt](auto& o, auto x) {
      return tanh ? formulas::gelu_tanh(o, x, dt) : formulas::gelu(o, x, dt);
    };
  }));
  t.add("silu.default", pointwise<1>({"self"}, From::Result, [](const KernelContext&, DType dt) {
    return [dt](auto& o, auto x) { return formulas::silu(o, x, dt); };
  }));
}

// The error torch raises for an integer division or remainder by zero (its CPU kernels'
// ZeroDivisionError, a RuntimeError in Python), naming the node. Stax's scalar functions give 0
// there (scalar_ops.hpp: no trap); the kernels check first. docs/dtypes.md.
[[noreturn]] void zero_division(const KernelContext& ctx) {
  ctx.fail("ZeroDivisionError: integer division or remainder by zero (as torch, which raises "
           "'ZeroDivisionError')");
}

// floor_divide / remainder (self, other): f(o, a, b) elementwise; integers check the divisor.
template <class F>
KernelFn integer_division(F f) {
  return pointwise<2>({"self", "other"}, From::Result, [f](const KernelContext& ctx, DType) {
    return [f, &ctx](auto& o, auto a, auto b) {
      if constexpr (std::is_same_v<decltype(a), stax_scalar::i64>)
        if (b == 0) zero_division(ctx);
      return f(o, a, b);
    };
  });
}

// maximum / minimum. uint64 is held as its bits in int64 (docs/dtypes.md): flipping the top bit
// (adding 2^63, wrapping) maps unsigned order onto signed order, so the int64 op on flipped
// values, flipped back, is the unsigned maximum / minimum (torch takes uint64 here).
template <bool Max>
Tensor unsigned_ordering(const KernelContext& ctx) {
  bool u64 = ctx.out_meta().dtype == DType::UInt64;
  KernelFn k = pointwise<2>({"self", "other"}, From::Result, [u64](const KernelContext&, DType) {
    return [u64](auto& o, auto a, auto b) {
      using C = decltype(a);
      if constexpr (std::is_same_v<C, stax_scalar::i64>) {
        if (u64) {
          constexpr C kTop = std::numeric_limits<C>::min();
          C r = Max ? o.maximum(a ^ kTop, b ^ kTop) : o.minimum(a ^ kTop, b ^ kTop);
          return static_cast<C>(r ^ kTop);
        }
      }
      return Max ? o.maximum(a, b) : o.minimum(a, b);
    };
  });
  return k(ctx);
}

void register_binary(InterpreterTable& t) {
  // add / sub: self +- alpha * other (formulas::add / sub).
  for (const char* overload : {".Tensor", ".Scalar"}) {
    t.add(std::string("add") + overload,
          pointwise<2>({"self", "other"}, From::Result, [](const KernelContext& ctx, DType dt) {
            double alpha = ctx.arg("alpha").to_double();
            return [alpha, dt](auto& o, auto a, auto b) {
              return formulas::add(o, a, b, alpha, dt);
            };
          }));
    t.add(std::string("sub") + overload,
          pointwise<2>({"self", "other"}, From::Result, [](const KernelContext& ctx, DType dt) {
            double alpha = ctx.arg("alpha").to_double();
            return [alpha, dt](auto& o, auto a, auto b) {
              return formulas::sub(o, a, b, alpha, dt);
            };
          }));
  }
#define STAX_BINARY_KERNEL(op_name, overload, fn, from)                                   \
  t.add(std::string(op_name) + overload,                                                 \
        pointwise<2>({"self", "other"}, from,                                            \
                     fixed([](auto& o, auto a, auto b) { return o.fn(a, b); })));
  for (const char* ov : {".Tensor", ".Scalar"}) {
    STAX_BINARY_KERNEL("mul", ov, mul, From::Result)
    STAX_BINARY_KERNEL("div", ov, truediv, From::Result)
    t.add(std::string("remainder") + ov, integer_division(
                                             [](auto& o, auto a, auto b) { return o.mod(a, b); }));
    STAX_BINARY_KERNEL("eq", ov, eq, From::Inputs)
    STAX_BINARY_KERNEL("ne", ov, ne, From::Inputs)
    STAX_BINARY_KERNEL("lt", ov, lt, From::Inputs)
    STAX_BINARY_KERNEL("le", ov, le, From::Inputs)
    STAX_BINARY_KERNEL("gt", ov, gt, From::Inputs)
    STAX_BINARY_KERNEL("ge", ov, ge, From::Inputs)
  }
  for (const char* op : {"floor_divide.default", "floor_divide.Scalar"})
    t.add(op, integer_division([](auto& o, auto a, auto b) { return o.floordiv(a, b); }));
  // pow's second operand is aten's `exponent`; pow.Scalar's `self` is the Python number.
  for (const char* ov : {".Tensor_Tensor", ".Tensor_Scalar", ".Scalar"})
    t.add(std::string("pow") + ov,
          pointwise<2>({"self", "exponent"}, From::Result,
                       fixed([](auto& o, auto a, auto b) { return o.pow(a, b); })));
  t.add("maximum.default", unsigned_ordering<true>);
  t.add("minimum.default", unsigned_ordering<false>);
  STAX_BINARY_KERNEL("logical_and", ".default", logical_and, From::Inputs)
  STAX_BINARY_KERNEL("logical_or", ".default", logical_or, From::Inputs)
#undef STAX_BINARY_KERNEL
}

// where(condition, self, other): the condition is read as bool, the branches in dt.
Tensor where_kernel(const KernelContext& ctx) {
  DType dt = computation_dtype(ctx.out_meta().dtype);
  std::array<Tensor, 3> ins{ctx.tensor("condition"), operand(ctx, "self", dt),
                            operand(ctx, "other", dt)};
  Tensor out = empty_output(ctx.out_meta());
  dispatch_compute(dt, [&](auto tag) {
    using C = typename decltype(tag)::type;
    ScalarOps<C> o;
    map_into<bool, C, C>(out, ins, [&](bool c, C a, C b) { return o.where(c, a, b); });
  });
  return out;
}

bool narrow_int_target(DType t) {
  return t == DType::Int32 || t == DType::Int8 || t == DType::UInt8 || t == DType::Int16 ||
         t == DType::UInt16;
}

// to.dtype: load in the input's computation type, stax_scalar::convert to the result's, store.
Tensor to_dtype_kernel(const KernelContext& ctx) {
  const Tensor& in = ctx.tensor("self");
  Tensor out = empty_output(ctx.out_meta());
  // uint64 is held as its bits in int64 by the computation dtypes: a conversion between it and a
  // floating dtype reads / writes the unsigned value (Tensor's convert_value, as scalar_ops').
  bool u64_float = (in.dtype() == DType::UInt64 && is_floating(out.dtype())) ||
                   (out.dtype() == DType::UInt64 && is_floating(in.dtype()));
  if (is_complex(in.dtype()) || is_complex(out.dtype()) || u64_float) {  // torch's rules
    out.copy_from(in);
    return out;
  }
  if (is_floating(in.dtype()) && narrow_int_target(out.dtype())) {
    dispatch_compute(computation_dtype(in.dtype()), [&](auto in_tag) {
      using Ci = typename decltype(in_tag)::type;
      if constexpr (std::is_floating_point_v<Ci>) {
        ScalarOps<Ci> o;
        DType dt = computation_dtype(in.dtype());
        map_into<Ci>(out, {in}, [&](Ci x) {
          return convert<stax_scalar::i64>(formulas::x86_int32_range(o, x, dt));
        });
      }
    });
    return out;
  }
  dispatch_compute(computation_dtype(in.dtype()), [&](auto in_tag) {
    using Ci = typename decltype(in_tag)::type;
    dispatch_compute(computation_dtype(out.dtype()), [&](auto out_tag) {
      using Co = typename decltype(out_tag)::type;
      map_into<Ci>(out, {in}, [](Ci x) { return convert<Co>(x); });
    });
  });
  return out;
}

std::optional<double> optional_scalar(const KernelContext& ctx, const char* param) {
  const Arg& a = ctx.arg(param);
  if (a.is_absent()) return std::nullopt;
  return a.to_double();
}

void register_special(InterpreterTable& t) {
  for (const char* name : {"where.self", "where.ScalarSelf", "where.ScalarOther", "where.Scalar"})
    t.add(name, where_kernel);
  t.add("to.dtype", to_dtype_kernel);
  t.add("_to_copy.default", to_dtype_kernel);
  t.add("clamp.default",
        pointwise<1>({"self"}, From::Result, [](const KernelContext& ctx, DType dt) {
          std::optional<double> lo = optional_scalar(ctx, "min"), hi = optional_scalar(ctx, "max");
          return [lo, hi, dt](auto& o, auto x) { return formulas::clamp(o, x, lo, hi, dt); };
        }));
}

void register_backward(InterpreterTable& t) {
  t.add("gelu_backward.default",
        pointwise<2>({"grad_output", "self"}, From::Result,
                     [](const KernelContext& ctx, DType dt) {
                       const std::string& approx = ctx.arg("approximate").str();
                       if (approx != "none" && approx != "tanh")
                         ctx.fail("approximate must be 'none' or 'tanh', got '" + approx + "'");
                       bool tanh = approx == "tanh";
                       return [tanh, dt](auto& o, auto g, auto x) {
                         return tanh ? formulas::gelu_tanh_backward(o, g, x, dt)
                                     : formulas::gelu_backward(o, g, x, dt);
                       };
                     }));
  t.add("threshold_backward.default",
        pointwise<2>({"grad_output", "self"}, From::Result,
                     [](const KernelContext& ctx, DType dt) {
                       double threshold = ctx.arg("threshold").to_double();
                       return [threshold, dt](auto& o, auto g, auto x) {
                         return formulas::threshold_backward(o, g, x, threshold, dt);
                       };
                     }));
  t.add("sigmoid_backward.default",
        pointwise<2>({"grad_output", "output"}, From::Result, [](const KernelContext&, DType dt) {
          return [dt](auto& o, auto g, auto y) { return formulas::sigmoid_backward(o, g, y, dt); };
        }));
  t.add("tanh_backward.default",
        pointwise<2>({"grad_output", "output"}, From::Result, [](const KernelContext&, DType dt) {
          return [dt](auto& o, auto g, auto y) { return formulas::tanh_backward(o, g, y, dt); };
        }));
  t.add("silu_backward.default",
        pointwise<2>({"grad_output", "self"}, From::Result, [](const KernelContext&, DType dt) {
          return [dt](auto& o, auto g, auto x) { return formulas::silu_backward(o, g, x, dt); };
        }));
}

// An elementwise kernel over self (and other): f(C a[, C b]) -> C in computation_dtype(result).
template <size_t N, class F>
KernelFn elementwise(F f) {
  return [f](const KernelContext& ctx) -> Tensor {
    DType dt = computation_dtype(ctx.out_meta().dtype);
    std::array<Tensor, N> ins;
    ins[0] = number_operand(ctx, "self", dt);
    if constexpr (N == 2) ins[1] = number_operand(ctx, "other", dt);
    Tensor out = empty_output(ctx.out_meta());
    dispatch_compute(dt, [&](auto tag) {
      using C = typename decltype(tag)::type;
      map_into_as<C>(out, ins, [&](auto... xs) -> C {
        if constexpr (requires { f(xs...); }) return f(xs...);
        else ctx.fail("not defined for " + std::string(dtype_name(dt)) + " values");
      });
    });
    return out;
  };
}

Tensor signbit(const KernelContext& ctx) {
  const Tensor& in = ctx.tensor("self");
  Tensor out = empty_output(ctx.out_meta());
  DType dt = computation_dtype(in.dtype());
  dispatch_compute(dt, [&](auto tag) {
    using C = typename decltype(tag)::type;
    map_into_as<C>(out, std::array<Tensor, 1>{in}, [](C v) -> bool {
      if constexpr (std::is_floating_point_v<C>) return std::signbit(v);
      else if constexpr (std::is_same_v<C, bool>) return false;
      else return v < 0;
    });
  });
  return out;
}

// gcd / lcm on int64 values (torch: lcm = |a / gcd * b|, 0 when gcd is 0).
template <bool Lcm>
Tensor gcd_lcm(const KernelContext& ctx) {
  DType dt = computation_dtype(ctx.out_meta().dtype);
  std::array<Tensor, 2> ins{number_operand(ctx, "self", dt), number_operand(ctx, "other", dt)};
  Tensor out = empty_output(ctx.out_meta());
  map_into_as<i64>(out, ins, [](i64 a, i64 b) -> i64 {
    i64 g = std::gcd(a, b);
    if constexpr (Lcm) return g == 0 ? 0 : std::abs(a / g * b);
    else return g;
  });
  return out;
}

// fmod, the bitwise ops and shifts, and the Composite ops run through their decomposition.
void register_integer_and_composite(InterpreterTable& t) {
  {
    auto fmod = [](auto a, auto b) -> decltype(a) {
      if constexpr (std::is_same_v<decltype(a), bool>) throw Error("interpreter", "", "fmod on bool");
      else return stax_scalar::fmod(a, b);
    };
    // Integers: a zero divisor is torch's ZeroDivisionError (checked before the element loop).
    auto checked_fmod = [fmod](const KernelContext& ctx) -> Tensor {
      DType dt = computation_dtype(ctx.out_meta().dtype);
      const Arg& other = ctx.arg("other");
      if (dt == DType::Int64 && ctx.out_meta().numel() > 0) {
        if (other.is_node()) {
          const Tensor& b = ctx.value(other.node());
          for (int64_t i = 0; i < b.numel(); ++i)
            if (b.get_int(i) == 0) zero_division(ctx);
        } else if (other.to_double() == 0) {
          zero_division(ctx);
        }
      }
      return elementwise<2>(fmod)(ctx);
    };

    auto integral = [](auto f) {
      return [f](auto... xs) {
        using C = std::common_type_t<decltype(xs)...>;
        if constexpr (std::is_floating_point_v<C>)
          return (throw Error("interpreter", "", "bitwise op on floating values"), C{});
        else return static_cast<C>(f(xs...));
      };
    };

    auto band = integral([](auto a, auto b) { return stax_scalar::bitwise_and(a, b); });

    auto bor = integral([](auto a, auto b) { return stax_scalar::bitwise_or(a, b); });

    auto bxor = integral([](auto a, auto b) { return stax_scalar::bitwise_xor(a, b); });

    auto shift = [](bool left) {
      return [left](auto a, auto b) -> decltype(a) {
        using C = decltype(a);
        if constexpr (std::is_same_v<C, stax_scalar::i64>)
          return left ? stax_scalar::bitwise_left_shift(a, b) : stax_scalar::bitwise_right_shift(a, b);
        else
          throw Error("interpreter", "", "shifts are defined for integer values only");
      };
    };
    // Composite ops: their decomposition, on the interpreter.
    for (const char* op :
           {"max.other", "min.other", "addcmul.default", "addcdiv.default", "lerp.Scalar",
            "lerp.Tensor", "div.Tensor_mode", "div.Scalar_mode", "clamp.Tensor", "clamp_min.default",
            "clamp_max.default", "clamp_min.Tensor", "clamp_max.Tensor", "isinf.default",
            "isposinf.default", "isneginf.default", "isfinite.default", "logical_xor.default",
            "nan_to_num.default"})
      t.add(op, kernels::run_decomposition);
    // The bitwise ops' number-first overloads and Python's operators: their decomposition.
    for (const char* b : {"bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
                          "bitwise_right_shift"})
      t.add(std::string(b) + ".Scalar_Tensor", kernels::run_decomposition);
    for (const char* b : {"__and__", "__or__", "__xor__", "__lshift__", "__rshift__"})
      for (const char* ov : {".Tensor", ".Scalar"})
        t.add(std::string(b) + ov, kernels::run_decomposition);

    t.add("fmod.Tensor", checked_fmod);

    t.add("fmod.Scalar", checked_fmod);

    for (const char* ov : {".Tensor", ".Scalar"}) {
      t.add(std::string("bitwise_and") + ov, elementwise<2>(band));
      t.add(std::string("bitwise_or") + ov, elementwise<2>(bor));
      t.add(std::string("bitwise_xor") + ov, elementwise<2>(bxor));
    }

    t.add("bitwise_not.default",
          elementwise<1>(integral([](auto a) { return stax_scalar::bitwise_not(a); })));

    for (const char* ov : {".Tensor", ".Tensor_Scalar"}) {
      t.add(std::string("bitwise_left_shift") + ov, elementwise<2>(shift(true)));
      t.add(std::string("bitwise_right_shift") + ov, elementwise<2>(shift(false)));
    }
  }
}

// gcd / lcm, the library math in the computation type, signbit, and more Composite formulas.
void register_library_math(InterpreterTable& t) {
  t.add("gcd.default", gcd_lcm<false>);

  t.add("lcm.default", gcd_lcm<true>);

  // ---- library math in the computation type
  t.add("asin.default", floating_map<1>([](auto x) { return std::asin(x); }));

  t.add("acos.default", floating_map<1>([](auto x) { return std::acos(x); }));

  t.add("atan.default", floating_map<1>([](auto x) { return std::atan(x); }));

  t.add("sinh.default", floating_map<1>([](auto x) { return std::sinh(x); }));

  t.add("cosh.default", floating_map<1>([](auto x) { return std::cosh(x); }));

  t.add("asinh.default", floating_map<1>([](auto x) { return std::asinh(x); }));

  t.add("acosh.default", floating_map<1>([](auto x) { return std::acosh(x); }));

  t.add("atanh.default", floating_map<1>([](auto x) { return std::atanh(x); }));

  t.add("erfc.default", floating_map<1>([](auto x) { return std::erfc(x); }));

  t.add("lgamma.default", floating_map<1>([](auto x) { return std::lgamma(x); }));

  t.add("atan2.default", floating_map<2>([](auto a, auto b) { return std::atan2(a, b); }));

  t.add("hypot.default", floating_map<2>([](auto a, auto b) { return std::hypot(a, b); }));

  for (const char* op : {"copysign.Tensor", "copysign.Scalar"})
    t.add(op, floating_map<2>([](auto a, auto b) { return std::copysign(a, b); }));

  t.add("nextafter.default", floating_map<2>([](auto a, auto b) { return std::nextafter(a, b); }));

  t.add("signbit.default", signbit);

  // ---- Composite ops: their decomposition
  for (const char* op :
         {"rsub.Tensor", "rsub.Scalar", "deg2rad.default", "rad2deg.default", "frac.default",
          "sgn.default", "sinc.default", "angle.default", "ldexp.Tensor", "logit.default", "heaviside.default", "logaddexp.default",
          "logaddexp2.default", "xlogy.Tensor", "fmax.default", "fmin.default", "round.decimals",
          "atan2.out"})
    t.add(op, kernels::run_decomposition);
}

}  // namespace

void register_pointwise_kernels(InterpreterTable& t) {
  register_unary(t);
  register_binary(t);
  register_special(t);
  register_backward(t);
  register_integer_and_composite(t);
  register_library_math(t);
}

}  // namespace stax
