// Kernels of the random ops.
#include <array>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <string>

#include "core/graph/op_registry.h"
#include "core/interpreter/interpreter.h"
#include "core/ops/common/elementwise_kernels.h"
#include "core/ops/common/kernel_utils.h"
#include "core/ops/registration.h"
#include "core/ops/special/functions.h"

namespace stax {
namespace {

using namespace elementwise_kernels;  // NOLINT
using namespace kernels;

// normal(mean, std): mean + std * z, z the standard normal numbers of the node's seed.
Tensor normal(const KernelContext& ctx) {
  const TensorMeta& om = ctx.out_meta();
  DType dt = computation_dtype(om.dtype);
  std::array<Tensor, 3> ins{number_operand(ctx, "mean", dt), number_operand(ctx, "std", dt),
                            Tensor::randn(om.sizes, om.dtype, ctx.seed(), 0)};
  Tensor out = empty_output(om);
  dispatch_compute(dt, [&](auto tag) {
    using C = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<C>)
      map_into_as<C>(out, ins, [](C m, C s, C z) -> C { return m + s * z; });
  });
  return out;
}

Tensor bernoulli(const KernelContext& ctx) {
  const TensorMeta& om = ctx.out_meta();
  DType dt = computation_dtype(om.dtype);
  std::array<Tensor, 2> ins{ctx.tensor("self"), Tensor::rand(om.sizes, om.dtype, ctx.seed(), 0)};
  Tensor out = empty_output(om);
  dispatch_compute(dt, [&](auto tag) {
    using C = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<C>)
      map_into_as<C>(out, ins, [](C p, C u) -> C { return u < p ? C(1) : C(0); });
  });
  return out;
}

Tensor randint_like(const KernelContext& ctx) {
  const TensorMeta& om = ctx.out_meta();
  bool low = ctx.node().op()->schema.index_of("low") >= 0;
  if (shape_numel(om.sizes) == 0) return Tensor::empty(om.sizes, om.dtype);  // any range, as torch
  return Tensor::randint(om.sizes, low ? ctx.arg("low").to_int() : 0, ctx.arg("high").to_int(),
                         om.dtype, ctx.seed(), 0);
}

}  // namespace

void register_random_kernels(InterpreterTable& t) {
  for (const char* op : {"normal.Tensor_Tensor", "normal.Tensor_float", "normal.float_Tensor"})
    t.add(op, normal);

  t.add("bernoulli.default", bernoulli);

  t.add("randint_like.default", randint_like);

  t.add("randint_like.low_dtype", randint_like);
}

}  // namespace stax
