// Elementwise interpreter kernels over the C++ library's functions (pointwise, special, random):
// the operands in the computation type, f applied to each element.
#pragma once

#include <array>
#include <string>
#include <type_traits>

#include "core/graph/op_registry.h"
#include "core/interpreter/interpreter.h"
#include "core/ops/common/kernel_utils.h"

namespace stax::elementwise_kernels {

using namespace kernels;  // NOLINT: the kernels' vocabulary (empty_output, dispatch_compute ...)

// The tensor bound to `param`, or its number argument as a 0-d tensor of dtype dt.
inline Tensor number_operand(const KernelContext& ctx, const std::string& param, DType dt) {
  const Arg& a = ctx.arg(param);
  if (a.is_node()) return ctx.value(a.node());
  if (!a.is_number()) ctx.fail("parameter '" + param + "' is not a number");
  return scalar_tensor(a, dt);
}

// The first N parameters of the op's schema that are not ints (polygamma's n is read apart).
template <size_t N>
std::array<std::string, N> tensor_params(const KernelContext& ctx) {
  std::array<std::string, N> out;
  size_t k = 0;
  for (const auto& p : ctx.node().op()->schema.params) {
    if (k == N) break;
    if (p.type == ParamType::Int) continue;
    out[k++] = p.name;
  }
  return out;
}

// out = f(x[, y]) elementwise, f called with values of the floating computation type C of the
// result and returning C (or bool for a bool result).
template <size_t N, class F>
KernelFn floating_map(F f) {
  return [f](const KernelContext& ctx) -> Tensor {
    DType dt = computation_dtype(ctx.out_meta().dtype);
    auto params = tensor_params<N>(ctx);
    std::array<Tensor, N> ins;
    for (size_t i = 0; i < N; ++i) ins[i] = number_operand(ctx, params[i], dt);
    Tensor out = empty_output(ctx.out_meta());
    dispatch_compute(dt, [&](auto tag) {
      using C = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<C>)
        map_into_as<C>(out, ins, [&](auto... xs) -> C { return f(xs...); });
      else
        ctx.fail("not defined for " + std::string(dtype_name(dt)) + " values");
    });
    return out;
  };
}

}  // namespace stax::elementwise_kernels
