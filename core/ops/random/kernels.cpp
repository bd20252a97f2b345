// Kernels of the random ops.
#include <array>
#include <cmath>
#include <cstdlib>
#include <numbers>
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

// The distributions of aten's in-place samplers (cauchy_, exponential_, geometric_, log_normal_,
// in their functional forms): torch's transformations of uniform (or normal) numbers of the
// node's seed, computed in double and stored in the result's dtype.
using Transform = double (*)(double v, double a, double b);

Tensor sample(const KernelContext& ctx, bool normal, Transform f, const char* a, const char* b) {
  const TensorMeta& om = ctx.out_meta();
  Tensor out = empty_output(om);
  Tensor v = normal ? Tensor::randn(om.sizes, DType::Float64, ctx.seed(), 0)
                    : Tensor::rand(om.sizes, DType::Float64, ctx.seed(), 0);
  double pa = ctx.arg(a).to_double(), pb = b ? ctx.arg(b).to_double() : 0.0;
  const double* pv = v.data<double>();
  Writer<double> w(out);
  for (int64_t i = 0; i < out.numel(); ++i) w(i, f(pv[i], pa, pb));
  return out;
}

double cauchy(double u, double median, double sigma) {
  return median + sigma * std::tan(std::numbers::pi * (u - 0.5));
}
// u in [0, 1): 1 - u in (0, 1], so the logarithm is finite.
double exponential(double u, double lambd, double) { return -std::log1p(-u) / lambd; }
double geometric(double u, double p, double) { return std::ceil(std::log1p(-u) / std::log1p(-p)); }
double log_normal(double z, double mean, double std) { return std::exp(mean + std * z); }
double normal_value(double z, double mean, double std) { return mean + std * z; }

// multinomial: per row, each draw picks the category where the running sum of the weights first
// exceeds u * total (u uniform in [0, 1)); without replacement a drawn category's weight is then
// zeroed. A row with a negative, infinite or NaN weight, or all zero, is an error (torch's).
Tensor multinomial(const KernelContext& ctx) {
  const Tensor& p = ctx.tensor("self");
  const TensorMeta& om = ctx.out_meta();
  int64_t cats = p.sizes().back(), rows = p.dim() == 1 ? 1 : p.sizes()[0];
  int64_t k = ctx.arg("num_samples").to_int();
  bool replace = ctx.arg("replacement").to_bool();
  Tensor out = empty_output(om);
  Tensor u = Tensor::rand({rows * k}, DType::Float64, ctx.seed(), 0);
  const double* pu = u.data<double>();
  Reader<double> rp(p);
  Writer<double> w(out);
  std::vector<double> weight(static_cast<size_t>(cats));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < cats; ++j) {
      int64_t off = (p.dim() == 1 ? 0 : r * p.strides()[0]) + j * p.strides().back();
      double v = rp(off);
      if (!std::isfinite(v) || v < 0) ctx.fail("probability tensor contains either `inf`, `nan` or element < 0");
      weight[static_cast<size_t>(j)] = v;
    }
    for (int64_t s = 0; s < k; ++s) {
      double total = 0;
      for (double v : weight) total += v;
      if (total <= 0) ctx.fail("invalid multinomial distribution (sum of probabilities <= 0)");
      double target = pu[r * k + s] * total, run = 0;
      int64_t pick = -1;
      for (int64_t j = 0; j < cats; ++j) {
        if (weight[static_cast<size_t>(j)] <= 0) continue;
        pick = j;  // the last positive category takes any rounding remainder
        run += weight[static_cast<size_t>(j)];
        if (target < run) break;
      }
      w(r * k + s, static_cast<double>(pick));
      if (!replace) weight[static_cast<size_t>(pick)] = 0;
    }
  }
  return out;
}

}  // namespace

void register_random_kernels(InterpreterTable& t) {
  t.add("multinomial.default", multinomial);
  t.add("cauchy.default",
        [](const KernelContext& c) { return sample(c, false, cauchy, "median", "sigma"); });
  t.add("exponential.default",
        [](const KernelContext& c) { return sample(c, false, exponential, "lambd", nullptr); });
  t.add("geometric.default",
        [](const KernelContext& c) { return sample(c, false, geometric, "p", nullptr); });
  t.add("log_normal.default",
        [](const KernelContext& c) { return sample(c, true, log_normal, "mean", "std"); });
  t.add("normal.float_float",
        [](const KernelContext& c) { return sample(c, true, normal_value, "mean", "std"); });

  for (const char* op : {"normal.Tensor_Tensor", "normal.Tensor_float", "normal.float_Tensor"})
    t.add(op, normal);

  t.add("bernoulli.default", bernoulli);

  t.add("randint_like.default", randint_like);

  t.add("randint_like.low_dtype", randint_like);
}

}  // namespace stax
