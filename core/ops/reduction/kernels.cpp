// Reduction kernels of the reference interpreter:
//   sum prod amax amin argmax argmin mean var all any.
//
// The reduction order is fixed and documented (seed §6.9): for each output element, the reduced
// elements a_0, a_1, ..., a_{n-1} are visited in lexicographic (row-major) order of their indices
// over the reduced dims, whatever the input's strides, and folded sequentially:
//     acc = init;  acc = op(acc, a_i) for i = 0 .. n-1
// (ReductionOrder::Sequential, the default), or in the segmented order of
// stax/sdk/reduction_order.hpp (ReductionOrder::Segmented: sum, prod, mean, var, amax, amin;
// cpu_cpp's default order), in the computation dtype C = computation_dtype(result dtype): float32 for float32 / float16 /
// bfloat16 results (a float32 sum accumulates in float32, it is not widened to double), float64
// for float64, int64 for integer results (integer and bool sums produce int64). The op is the
// stax_scalar function (ScalarOps<C>), so compiled reductions that keep this order agree bit for
// bit, and any reordering (vectorised or split reductions, seed §6.5) stays within the bound
// |computed - exact| <= (n - 1) u Σ|a_i|, u the unit roundoff of C.
//   sum:  init 0, add                prod: init 1, mul
//   mean: sum (as above) then truediv(sum, n)   (an empty reduction gives 0 / 0 = NaN)
//   var:  two passes: mean = sum / n; m2 = Σ d*d with d = a_i - mean (same order);
//         var = m2 / max(n - correction, 0), correction defaulting to 1 (n <= correction gives
//         inf or NaN, as torch)
//   amax / amin: init -inf / +inf (the extreme value of integer / bool types), NaN-propagating
//         stax_scalar::maximum / minimum; an empty reduction is an error
//   argmax / argmin: the first index (in the order above) holding the extreme value; a NaN counts
//         as more extreme than anything (the first NaN wins); dim=None flattens the whole tensor
//   all / any: every element converted to bool (x != 0, NaN is true), folded with && / ||
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "core/graph/op_registry.h"
#include "core/ops/pointwise/formulas.h"
#include "core/interpreter/interpreter.h"
#include "core/ops/common/kernel_utils.h"
#include "core/ops/registration.h"
#include "core/ops/common/scalar_ops_adaptor.h"
#include "core/ops/special/functions.h"
#include "stax/sdk/reduction_order.hpp"

namespace stax {
namespace {

using namespace kernels;

// A reduction's input, offsets and (uninitialised) result.
struct Reduction {
  Tensor in;
  ReductionLayout layout;
  int64_t n = 0;  // reduced elements per output element
  Tensor out;
  bool segmented = false;  // ReductionOrder::Segmented
};

// Folds op over map(a_j) for the reduced elements a_j at `base` (offsets `inner`) from init, in
// r's order.
template <class C, class Op, class Map>
C fold_one(const Reduction& r, const Reader<C>& read, int64_t base, C init, Op op, Map map) {
  const std::vector<int64_t>& inner = r.layout.inner;
  auto get = [&](int64_t j) { return map(read(base + inner[static_cast<size_t>(j)])); };
  if (r.segmented) return sdk::segmented_fold<C>(r.n, init, get, op);
  C acc = init;
  for (int64_t j = 0; j < r.n; ++j) acc = op(acc, get(j));
  return acc;
}

template <class C>
C identity(C a) {
  return a;
}

Reduction prepare(const KernelContext& ctx) {
  Reduction r;
  r.in = ctx.tensor("self");
  std::vector<int64_t> dims;
  const OpSchema& schema = ctx.node().op()->schema;
  if (schema.index_of("dim") >= 0 && !ctx.arg("dim").is_absent())
    dims = ctx.arg("dim").to_int_list();
  r.layout = reduction_layout(r.in, reduction_mask(r.in.dim(), dims, "%" + ctx.node().name()));
  r.n = static_cast<int64_t>(r.layout.inner.size());
  r.out = empty_output(ctx.out_meta());
  r.segmented = ctx.reduction_order() == ReductionOrder::Segmented;
  if (static_cast<int64_t>(r.layout.outer.size()) != r.out.numel())
    ctx.fail("internal: " + std::to_string(r.layout.outer.size()) + " reduction outputs for a "
             "result of shape " + shape_str(r.out.sizes()));
  return r;
}

// For each output element i: out[i] = finish(fold of step over the reduced elements, from init).
template <class C, class Step, class Finish>
void fold(const Reduction& r, C init, Step step, Finish finish) {
  Reader<C> read(r.in);
  Writer<decltype(finish(init))> write(r.out);
  for (size_t i = 0; i < r.layout.outer.size(); ++i) {
    C acc = fold_one<C>(r, read, r.layout.outer[i], init, step, identity<C>);
    write(static_cast<int64_t>(i), finish(acc));
  }
}

template <class C>
C count_as(int64_t n) {
  return convert<C>(static_cast<i64>(n));
}

Tensor sum_kernel(const KernelContext& ctx) {
  Reduction r = prepare(ctx);
  dispatch_compute(computation_dtype(r.out.dtype()), [&](auto tag) {
    using C = typename decltype(tag)::type;
    ScalarOps<C> o;
    fold<C>(r, C(0), [&](C a, C b) { return o.add(a, b); }, [](C a) { return a; });
  });
  return r.out;
}

Tensor prod_kernel(const KernelContext& ctx) {
  Reduction r = prepare(ctx);
  dispatch_compute(computation_dtype(r.out.dtype()), [&](auto tag) {
    using C = typename decltype(tag)::type;
    ScalarOps<C> o;
    fold<C>(r, C(1), [&](C a, C b) { return o.mul(a, b); }, [](C a) { return a; });
  });
  return r.out;
}

Tensor mean_kernel(const KernelContext& ctx) {
  Reduction r = prepare(ctx);
  dispatch_compute(computation_dtype(r.out.dtype()), [&](auto tag) {
    using C = typename decltype(tag)::type;
    ScalarOps<C> o;
    C n = count_as<C>(r.n);
    fold<C>(r, C(0), [&](C a, C b) { return o.add(a, b); },
            [&](C a) { return o.truediv(a, n); });
  });
  return r.out;
}

template <bool kMax>
Tensor extreme_kernel(const KernelContext& ctx) {
  Reduction r = prepare(ctx);
  if (r.n == 0 && !r.layout.outer.empty())
    ctx.fail("cannot reduce over an empty dimension (the reduction has no identity)");
  dispatch_compute(computation_dtype(r.out.dtype()), [&](auto tag) {
    using C = typename decltype(tag)::type;
    ScalarOps<C> o;
    C init;
    if constexpr (std::is_same_v<C, bool>) init = !kMax;
    else if constexpr (std::is_floating_point_v<C>)
      init = kMax ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::infinity();
    else init = kMax ? std::numeric_limits<C>::min() : std::numeric_limits<C>::max();
    fold<C>(
        r, init, [&](C a, C b) { return kMax ? o.maximum(a, b) : o.minimum(a, b); },
        [](C a) { return a; });
  });
  return r.out;
}

template <bool kMax>
Tensor arg_extreme_kernel(const KernelContext& ctx) {
  Reduction r = prepare(ctx);
  if (r.n == 0 && !r.layout.outer.empty())
    ctx.fail("cannot take the arg" + std::string(kMax ? "max" : "min") +
             " of an empty dimension");
  dispatch_compute(computation_dtype(r.in.dtype()), [&](auto tag) {
    using C = typename decltype(tag)::type;
    Reader<C> read(r.in);
    Writer<i64> write(r.out);
    const std::vector<int64_t>& inner = r.layout.inner;
    for (size_t i = 0; i < r.layout.outer.size(); ++i) {
      const int64_t base = r.layout.outer[i];
      C best = read(base + inner[0]);
      i64 best_j = 0;
      for (size_t j = 1; j < inner.size(); ++j) {
        if (best != best) break;  // a NaN is already the answer
        C v = read(base + inner[j]);
        if (v != v || (kMax ? v > best : v < best)) {
          best = v;
          best_j = static_cast<i64>(j);
        }
      }
      write(static_cast<int64_t>(i), best_j);
    }
  });
  return r.out;
}

Tensor var_kernel(const KernelContext& ctx) {
  Reduction r = prepare(ctx);  // both passes in the run's order, as the lowering rule's reductions
  const Arg& corr = ctx.arg("correction");
  double correction = corr.is_absent() ? 1.0 : corr.to_double();
  double divisor = std::max(0.0, static_cast<double>(r.n) - correction);
  dispatch_compute(computation_dtype(r.out.dtype()), [&](auto tag) {
    using C = typename decltype(tag)::type;
    ScalarOps<C> o;
    Reader<C> read(r.in);
    Writer<C> write(r.out);
    const C n = count_as<C>(r.n), div = convert<C>(divisor);
    auto add = [&](C a, C b) { return o.add(a, b); };
    for (size_t i = 0; i < r.layout.outer.size(); ++i) {
      const int64_t base = r.layout.outer[i];
      const C mean = o.truediv(fold_one<C>(r, read, base, C(0), add, identity<C>), n);
      const C m2 = fold_one<C>(r, read, base, C(0), add, [&](C a) {
        C d = o.sub(a, mean);
        return o.mul(d, d);
      });
      write(static_cast<int64_t>(i), o.truediv(m2, div));
    }
  });
  return r.out;
}

template <bool kAll>
Tensor logical_kernel(const KernelContext& ctx) {
  Reduction r = prepare(ctx);
  fold<bool>(
      r, kAll, [](bool a, bool b) { return kAll ? (a && b) : (a || b); }, [](bool a) { return a; });
  return r.out;
}

// For every position along `dim` of `t` (a rank >= 1 tensor): offsets of the rows (outer) and of
// the elements along dim (inner), as reduction_layout gives them.
ReductionLayout along(const Tensor& t, int64_t dim) {
  std::vector<bool> mask(t.dim(), false);
  mask[dim] = true;
  return reduction_layout(t, mask);
}

Tensor scan(const KernelContext& ctx, bool product) {
  const TensorMeta& om = ctx.out_meta();
  Tensor in = ctx.tensor("self");
  Tensor out = empty_output(om);
  if (om.numel() == 0) return out;
  if (in.dim() == 0) {
    in = in.contiguous();
    out = Tensor::empty({1}, om.dtype);
    in = Tensor::from_data({1}, in.dtype(), in.data_ptr());
  }
  int64_t dim = wrap_dim(ctx.arg("dim").to_int(), in.dim(), "%" + ctx.node().name());
  ReductionLayout li = along(in, dim), lo = along(out, dim);
  dispatch_compute(computation_dtype(om.dtype), [&](auto tag) {
    using C = typename decltype(tag)::type;
    Reader<C> rd(in);
    Writer<C> wr(out);
    for (size_t r = 0; r < li.outer.size(); ++r) {
      C acc = product ? C(1) : C(0);
      for (size_t j = 0; j < li.inner.size(); ++j) {
        C v = rd(li.outer[r] + li.inner[j]);
        if constexpr (std::is_same_v<C, bool>) acc = product ? (acc && v) : (acc || v);
        else acc = product ? stax_scalar::mul(acc, v) : stax_scalar::add(acc, v);
        wr(lo.outer[r] + lo.inner[j], acc);
      }
    }
  });
  if (ctx.tensor("self").dim() == 0) return Tensor::from_data({}, om.dtype, out.data_ptr());
  return out;
}

Tensor argsort(const KernelContext& ctx) {
  const TensorMeta& om = ctx.out_meta();
  const Tensor& in = ctx.tensor("self");
  Tensor out = empty_output(om);
  if (om.numel() == 0) return out;
  if (in.dim() == 0) return Tensor::zeros({}, DType::Int64);
  int64_t dim = wrap_dim(ctx.arg("dim").to_int(), in.dim(), "%" + ctx.node().name());
  bool desc = ctx.arg("descending").to_bool();
  ReductionLayout li = along(in, dim), lo = along(out, dim);
  int64_t* o = out.data<int64_t>();
  DType dt = is_floating(in.dtype()) ? DType::Float64 : computation_dtype(in.dtype());
  dispatch_compute(dt, [&](auto tag) {
    using C = typename decltype(tag)::type;
    Reader<C> rd(in);
    std::vector<C> v(li.inner.size());
    std::vector<int64_t> idx(li.inner.size());
    // NaN sorts above every number (ascending: last; descending: first), ties keep index order.
    // uint64 is held as its bits in int64: compared as unsigned (above 2^63 too).
    bool u64 = in.dtype() == DType::UInt64;
    auto less = [u64](C a, C b) {
      if constexpr (std::is_floating_point_v<C>) {
        if (b != b) return a == a;
        if (a != a) return false;
      }
      if constexpr (std::is_same_v<C, stax_scalar::i64>)
        if (u64) return static_cast<uint64_t>(a) < static_cast<uint64_t>(b);
      return a < b;
    };
    for (size_t r = 0; r < li.outer.size(); ++r) {
      for (size_t j = 0; j < v.size(); ++j) v[j] = rd(li.outer[r] + li.inner[j]);
      std::iota(idx.begin(), idx.end(), 0);
      std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) {
        return desc ? less(v[b], v[a]) : less(v[a], v[b]);
      });
      for (size_t j = 0; j < v.size(); ++j) o[lo.outer[r] + lo.inner[j]] = idx[j];
    }
  });
  return out;
}

}  // namespace

void register_reduction_kernels(InterpreterTable& t) {
  t.add("sum.dim_IntList", sum_kernel);
  t.add("sum.default", sum_kernel);
  t.add("prod.dim_int", prod_kernel);
  t.add("prod.default", prod_kernel);
  t.add("mean.dim", mean_kernel);
  t.add("mean.default", mean_kernel);
  t.add("amax.default", extreme_kernel<true>);
  t.add("amin.default", extreme_kernel<false>);
  t.add("argmax.default", arg_extreme_kernel<true>);
  t.add("argmin.default", arg_extreme_kernel<false>);
  t.add("var.correction", var_kernel);
  t.add("all.dim", logical_kernel<true>);
  t.add("all.default", logical_kernel<true>);
  t.add("any.dim", logical_kernel<false>);
  t.add("any.default", logical_kernel<false>);
  // Composite ops: their decomposition, on the interpreter.
  for (const char* op :
         {"std.correction", "std.dim", "std.default", "var.dim", "var.default", "logsumexp.default",
          "norm.ScalarOpt_dim", "norm.Scalar", "linalg_vector_norm.default", "max.default",
          "min.default"})
    t.add(op, kernels::run_decomposition);

  t.add("cumsum.default", [](const KernelContext& c) { return scan(c, false); });

  t.add("cumprod.default", [](const KernelContext& c) { return scan(c, true); });

  t.add("argsort.default", argsort);

  t.add("argsort.stable", argsort);
  // ---- Composite ops: their decomposition
  for (const char* op :
         {"any.dims", "all.dims", "nansum.default", "count_nonzero.dim_IntList", "count_nonzero.default",
          "logcumsumexp.default", "trace.default", "median.default", "nanmedian.default"})
    t.add(op, kernels::run_decomposition);
}

}  // namespace stax
