// Interpreter kernels of the creation and random ops.
//
// Scalars are converted with the kernels' value semantics (kernel_utils.h: the computation type
// first, then the storage type). arange computes start + i * step exactly in int64 when start, end
// and step are integers, and in double otherwise, then converts once (torch's CPU arange does the
// same in its accumulation type).
//
// Random ops draw from KernelContext::seed() (run seed mixed with the node's rng_seed attr or name)
// at Philox offset 0, with the recipes of core/tensor/random.h, so a node's numbers are
// reproducible from (run seed, node). bernoulli.p and dropout use the uniform numbers of
// rand_like(self) (float32 ones when self is not floating) and compare them in self's computation
// type exactly as their decompositions (rand_like + lt / gt + mul) do, so both agree bit for bit:
//   bernoulli.p(x, p) = (rand_like(x) < p) as x's dtype
//   dropout(x, p, train) = train ? ((rand_like(x) > p) * x) * (1 / (1 - p)) : x
//   (p == 1 gives zeros, p == 0 or train == False a copy of x).
#include <array>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <string>

#include "core/graph/op_registry.h"
#include "core/interpreter/interpreter.h"
#include "core/ops/common/kernel_utils.h"
#include "core/ops/registration.h"
#include "core/ops/special/functions.h"
#include "core/tensor/random.h"

namespace stax {

namespace {

using kernels::i64;

Tensor filled(const TensorMeta& meta, const Arg& value) {
  Tensor t = Tensor::empty(meta.sizes, meta.dtype);
  dispatch(meta.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    S v = kernels::store_as<S>(kernels::scalar_as<kernels::compute_t<S>>(value));
    S* p = t.data<S>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = v;
  });
  return t;
}

Tensor full_kernel(const KernelContext& ctx) {
  return filled(ctx.out_meta(), ctx.arg("fill_value"));
}

Tensor scalar_tensor_kernel(const KernelContext& ctx) {
  return filled(ctx.out_meta(), ctx.arg("s"));
}

Tensor zeros_kernel(const KernelContext& ctx) {
  return Tensor::zeros(ctx.out_meta().sizes, ctx.out_meta().dtype);
}

Tensor ones_kernel(const KernelContext& ctx) {
  return Tensor::ones(ctx.out_meta().sizes, ctx.out_meta().dtype);
}

Tensor arange_kernel(const KernelContext& ctx) {
  const auto& sc = ctx.node().op()->schema;
  Arg start = sc.index_of("start") >= 0 ? ctx.arg("start") : Arg(int64_t{0});
  Arg end = ctx.arg("end");
  Arg step = sc.index_of("step") >= 0 ? ctx.arg("step") : Arg(int64_t{1});
  bool floating = start.is_double() || end.is_double() || step.is_double();
  const TensorMeta& m = ctx.out_meta();
  Tensor t = Tensor::empty(m.sizes, m.dtype);
  int64_t n = m.sizes.at(0);
  dispatch(m.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    S* p = t.data<S>();
    if (!floating) {
      int64_t s = start.to_int(), st = step.to_int();
      for (int64_t i = 0; i < n; ++i) p[i] = kernels::store_as<S>(static_cast<i64>(s + i * st));
    } else {
      double s = start.to_double(), st = step.to_double();
      for (int64_t i = 0; i < n; ++i) p[i] = kernels::store_as<S>(s + static_cast<double>(i) * st);
    }
  });
  return t;
}

Tensor rand_kernel(const KernelContext& ctx) {
  return Tensor::rand(ctx.out_meta().sizes, ctx.out_meta().dtype, ctx.seed(), 0);
}

Tensor randn_kernel(const KernelContext& ctx) {
  return Tensor::randn(ctx.out_meta().sizes, ctx.out_meta().dtype, ctx.seed(), 0);
}

Tensor randint_kernel(const KernelContext& ctx) {
  const auto& sc = ctx.node().op()->schema;
  int64_t low = sc.index_of("low") >= 0 ? ctx.arg("low").to_int() : 0;
  int64_t high = ctx.arg("high").to_int();
  return Tensor::randint(ctx.out_meta().sizes, low, high, ctx.out_meta().dtype, ctx.seed(), 0);
}

// The uniform numbers rand_like(x) draws (float32 when x is not floating).
Tensor uniform_like(const KernelContext& ctx, const Tensor& x) {
  DType t = is_floating(x.dtype()) ? x.dtype() : DType::Float32;
  return Tensor::rand(x.sizes(), t, ctx.seed(), 0);
}

// randperm(n): Fisher-Yates as torch's CPU kernel does it (for i < n - 1: swap r[i] with r[i + z],
// z uniform in [0, n - i)), z drawn from Philox word pair i of the node's seed (core/tensor/random.h:
// ((w0 << 32 | w1) mod (n - i))). A permutation of the same distribution as torch's, not its
// numbers: Stax has its own generator.
Tensor randperm_kernel(const KernelContext& ctx) {
  int64_t n = ctx.arg("n").to_int();
  std::vector<int64_t> r(static_cast<size_t>(n));
  std::iota(r.begin(), r.end(), int64_t{0});
  for (int64_t i = 0; i + 1 < n; ++i) {
    PhiloxCounter w = philox_words(ctx.seed(), static_cast<uint64_t>(i));
    uint64_t bits = (static_cast<uint64_t>(w[0]) << 32) | w[1];
    int64_t z = static_cast<int64_t>(bits % static_cast<uint64_t>(n - i));
    std::swap(r[static_cast<size_t>(i)], r[static_cast<size_t>(i + z)]);
  }
  return Tensor::from_vector({n}, r).to(ctx.out_meta().dtype);
}

Tensor bernoulli_kernel(const KernelContext& ctx) {
  const Tensor& self = ctx.tensor("self");
  Tensor u = uniform_like(ctx, self);
  Tensor out = Tensor::empty(self.sizes(), self.dtype());
  dispatch(u.dtype(), [&](auto tag) {
    using U = typename decltype(tag)::type;
    if constexpr (is_floating_element_v<U>) {
      using C = kernels::compute_t<U>;
      C p = kernels::scalar_as<C>(ctx.arg("p"));
      const U* pu = u.data<U>();
      kernels::Writer<bool> write(out);
      for (int64_t i = 0; i < u.numel(); ++i) write(i, kernels::widen(pu[i]) < p);
    }
  });
  return out;
}

Tensor dropout_kernel(const KernelContext& ctx) {
  const Tensor& x = ctx.tensor("input");
  double p = ctx.arg("p").to_double();
  if (!ctx.arg("train").to_bool() || p == 0) return x.clone();
  if (p == 1) return Tensor::zeros(x.sizes(), x.dtype());
  Tensor u = uniform_like(ctx, x);
  Tensor out = Tensor::empty(x.sizes(), x.dtype());
  Arg scale(1.0 / (1.0 - p));
  dispatch(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (is_floating_element_v<T>) {
      using C = kernels::compute_t<T>;
      C pc = kernels::scalar_as<C>(ctx.arg("p")), sc = kernels::scalar_as<C>(scale);
      const T* pu = u.data<T>();
      T* po = out.data<T>();
      kernels::Reader<C> read_x(x);
      for (int64_t i = 0; i < x.numel(); ++i) {
        C keep = kernels::widen(pu[i]) > pc ? C(1) : C(0);
        T masked = kernels::narrow<T>(keep * read_x(x.linear_offset(i) - x.storage_offset()));
        po[i] = kernels::narrow<T>(kernels::widen(masked) * sc);
      }
    }
  });
  return out;
}

using namespace kernels;

}  // namespace

void register_creation_kernels(InterpreterTable& t) {
  t.add("full.default", full_kernel);
  t.add("full_like.default", full_kernel);
  t.add("scalar_tensor.default", scalar_tensor_kernel);
  t.add("zeros.default", zeros_kernel);
  t.add("zeros_like.default", zeros_kernel);
  for (const char* op : {"empty.memory_format", "empty_strided.default", "empty_like.default"})
    t.add(op, zeros_kernel);
  t.add("ones.default", ones_kernel);
  t.add("ones_like.default", ones_kernel);
  for (const char* op : {"arange.default", "arange.start", "arange.start_step"})
    t.add(op, arange_kernel);
  t.add("rand.default", rand_kernel);
  t.add("rand_like.default", rand_kernel);
  t.add("randn.default", randn_kernel);
  t.add("randn_like.default", randn_kernel);
  t.add("randint.default", randint_kernel);
  t.add("randint.low", randint_kernel);
  t.add("bernoulli.p", bernoulli_kernel);
  t.add("randperm.default", randperm_kernel);
  t.add("dropout.default", dropout_kernel);
  // ---- Composite ops: their decomposition
  for (const char* op :
         {"new_full.default", "new_zeros.default", "new_ones.default", "new_empty.default",
          "new_empty_strided.default", "fill.Scalar", "fill.Tensor", "copy.default",
          "eye.default", "eye.m",
          "linspace.default", "logspace.default", "tril_indices.default", "triu_indices.default",
          "linspace.Tensor_Tensor", "linspace.Tensor_Scalar", "linspace.Scalar_Tensor",
          "logspace.Tensor_Tensor", "logspace.Tensor_Scalar", "logspace.Scalar_Tensor"})
    t.add(op, kernels::run_decomposition);
}

}  // namespace stax
