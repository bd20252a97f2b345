// Interpreter kernels of the model ops (core/graph/ops/model_ops.cpp, issue 14 part C).
//   * Composite ops (activations, std, logsumexp, norm, stack, flip, roll, masked_fill, lerp ...)
//     run their decomposition (core/graph/decompositions_model.cpp) on the interpreter, so the
//     compiled path, which runs the same decomposition, matches them bit for bit; their values are
//     checked against NumPy / hand-computed results and PyTorch in tests/model_ops_test.cpp.
//   * fmod and the bitwise ops are elementwise over stax_scalar's definitions
//     (sdk/include/stax/sdk/scalar_ops.hpp), computing in computation_dtype(result dtype).
//   * cumsum / cumprod scan sequentially along dim in the computation dtype of the result,
//     storing every prefix (torch's CPU order). argsort sorts stably (NaN greater than every
//     number, as torch). index_add and scatter_reduce.two accumulate in index order.
#include <algorithm>
#include <array>
#include <numeric>
#include <string>
#include <vector>

#include "core/graph/op_registry.h"
#include "core/ops/pointwise/formulas.h"
#include "core/interpreter/interpreter.h"
#include "core/ops/common/kernel_utils.h"
#include "core/ops/registration.h"

namespace stax {
namespace {

using namespace kernels;

Tensor operand(const KernelContext& ctx, const char* param, DType dt) {
  const Arg& a = ctx.arg(param);
  if (a.is_node()) return ctx.value(a.node());
  if (!a.is_number()) ctx.fail(std::string("parameter '") + param + "' is not a number");
  return scalar_tensor(a, dt);
}

// An elementwise kernel over self (and other): f(C a[, C b]) -> C in computation_dtype(result).
template <size_t N, class F>
KernelFn elementwise(F f) {
  return [f](const KernelContext& ctx) -> Tensor {
    DType dt = computation_dtype(ctx.out_meta().dtype);
    std::array<Tensor, N> ins;
    ins[0] = operand(ctx, "self", dt);
    if constexpr (N == 2) ins[1] = operand(ctx, "other", dt);
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
    auto less = [](C a, C b) {
      if constexpr (std::is_floating_point_v<C>) {
        if (b != b) return a == a;
        if (a != a) return false;
      }
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

// Multi-index helpers over contiguous row-major shapes.
Shape row_major_strides(const Shape& s) {
  Shape st(s.size(), 1);
  for (int64_t d = static_cast<int64_t>(s.size()) - 2; d >= 0; --d) st[d] = st[d + 1] * s[d + 1];
  return st;
}

Tensor index_add(const KernelContext& ctx) {
  Tensor out = ctx.tensor("self").contiguous().clone();
  Tensor idx = ctx.tensor("index").contiguous();
  Tensor src = ctx.tensor("source").contiguous();
  if (out.numel() == 0) return out;
  int64_t rank = out.dim();
  int64_t dim = rank == 0 ? 0 : wrap_dim(ctx.arg("dim").to_int(), rank, "%" + ctx.node().name());
  Shape osz = rank == 0 ? Shape{1} : out.sizes();
  int64_t n = idx.numel();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= osz[d];
  for (size_t d = dim + 1; d < osz.size(); ++d) inner *= osz[d];
  std::vector<int64_t> ix(n);
  Reader<i64> ri(idx);
  for (int64_t i = 0; i < n; ++i) {
    ix[i] = ri(i);
    if (ix[i] < 0 || ix[i] >= osz[dim])
      ctx.fail("index_add: index " + std::to_string(ix[i]) + " is out of bounds for dimension " +
               std::to_string(dim) + " with size " + std::to_string(osz[dim]));
  }
  const Arg& alpha = ctx.arg("alpha");
  dispatch_compute(computation_dtype(out.dtype()), [&](auto tag) {
    using C = typename decltype(tag)::type;
    Reader<C> rs(src), ro(out);
    Writer<C> wo(out);
    C a = scalar_as<C>(alpha);
    bool unit = alpha.to_double() == 1.0;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < n; ++i)
        for (int64_t k = 0; k < inner; ++k) {
          int64_t to = o * (osz[dim] * inner) + ix[i] * inner + k;
          int64_t from = o * (n * inner) + i * inner + k;
          C v = rs(from);
          if constexpr (std::is_same_v<C, bool>) wo(to, ro(to) || (a && v));
          else wo(to, stax_scalar::add(ro(to), unit ? v : stax_scalar::mul(a, v)));
        }
  });
  return out;
}

Tensor scatter_reduce(const KernelContext& ctx) {
  Tensor out = ctx.tensor("self").contiguous().clone();
  Tensor idx = ctx.tensor("index").contiguous();
  Tensor src = ctx.tensor("src");
  const std::string red = ctx.arg("reduce").str();
  bool include_self = ctx.arg("include_self").to_bool();
  int64_t rank = out.dim();
  if (idx.numel() == 0) return out;
  int64_t dim = rank == 0 ? 0 : wrap_dim(ctx.arg("dim").to_int(), rank, "%" + ctx.node().name());
  Shape osz = rank == 0 ? Shape{1} : out.sizes();
  Shape isz = rank == 0 ? Shape{1} : idx.sizes();
  Shape ost = row_major_strides(osz);
  Shape sst = rank == 0 ? Shape{0} : src.strides();
  Shape ist = row_major_strides(isz);
  std::vector<int64_t> target(idx.numel()), source(idx.numel());
  Reader<i64> ri(idx);
  for (int64_t e = 0; e < idx.numel(); ++e) {
    int64_t rem = e, to = 0, from = 0;
    for (size_t d = 0; d < isz.size(); ++d) {
      int64_t i_d = rem / ist[d];
      rem %= ist[d];
      int64_t v = i_d;
      if (static_cast<int64_t>(d) == dim) {
        v = ri(e);
        if (v < 0) v += osz[d];
        if (v < 0 || v >= osz[d])
          ctx.fail("scatter_reduce: index " + std::to_string(ri(e)) +
                   " is out of bounds for dimension " + std::to_string(d) + " with size " +
                   std::to_string(osz[d]));
      } else if (i_d >= osz[d]) {
        ctx.fail("scatter_reduce: index tensor is larger than self in dimension " +
                 std::to_string(d));
      }
      to += v * ost[d];
      from += i_d * sst[d];
    }
    target[e] = to;
    source[e] = from;
  }
  std::vector<int64_t> counts(out.numel(), include_self ? 1 : 0);
  std::vector<bool> touched(out.numel(), false);
  dispatch_compute(computation_dtype(out.dtype()), [&](auto tag) {
    using C = typename decltype(tag)::type;
    if constexpr (std::is_same_v<C, bool>) {
      ctx.fail("scatter_reduce is not implemented for bool tensors");
    } else {
      Reader<C> rs(src), ro(out);
      Writer<C> wo(out);
      std::vector<C> acc(out.numel());
      for (int64_t i = 0; i < out.numel(); ++i) acc[i] = ro(i);
      for (size_t e = 0; e < target.size(); ++e) {
        int64_t t = target[e];
        C v = rs(source[e]);
        if (!include_self && !touched[t]) {
          touched[t] = true;
          acc[t] = v;
          counts[t] = 1;
          continue;
        }
        touched[t] = true;
        if (red == "sum" || red == "mean") acc[t] = stax_scalar::add(acc[t], v);
        else if (red == "prod") acc[t] = stax_scalar::mul(acc[t], v);
        else if (red == "amax") acc[t] = stax_scalar::maximum(acc[t], v);
        else acc[t] = stax_scalar::minimum(acc[t], v);
        if (red == "mean") ++counts[t];
      }
      for (int64_t i = 0; i < out.numel(); ++i) {
        C r = acc[i];
        if (red == "mean" && counts[i] > 1) {
          C c = static_cast<C>(counts[i]);
          r = std::is_floating_point_v<C> ? stax_scalar::truediv(r, c)
                                          : stax_scalar::floordiv(r, c);
        }
        wo(i, r);
      }
    }
  });
  return out;
}

}  // namespace

void register_model_kernels(InterpreterTable& t) {
  // Composite ops: their decomposition, on the interpreter.
  for (const char* op :
       {"leaky_relu.default", "elu.default", "hardtanh.default", "relu6.default",
        "hardswish.default", "hardsigmoid.default", "softplus.default", "mish.default",
        "leaky_relu_backward.default", "elu_backward.default", "hardtanh_backward.default",
        "hardswish_backward.default", "hardsigmoid_backward.default", "softplus_backward.default",
        "mish_backward.default", "std.correction", "std.dim", "std.default", "var.dim",
        "var.default", "logsumexp.default", "norm.ScalarOpt_dim", "norm.Scalar",
        "linalg_vector_norm.default", "max.default", "min.default", "max.other", "min.other",
        "stack.default", "repeat.default", "flip.default", "roll.default", "tril.default",
        "triu.default", "masked_fill.Scalar", "masked_fill.Tensor", "baddbmm.default",
        "addcmul.default", "addcdiv.default", "lerp.Scalar", "lerp.Tensor", "div.Tensor_mode",
        "div.Scalar_mode", "clamp.Tensor", "clamp_min.default", "clamp_max.default",
        "clamp_min.Tensor", "clamp_max.Tensor", "isinf.default", "isposinf.default",
        "isneginf.default", "isfinite.default", "logical_xor.default", "nan_to_num.default"})
    t.add(op, kernels::run_decomposition);

  t.add("cumsum.default", [](const KernelContext& c) { return scan(c, false); });
  t.add("cumprod.default", [](const KernelContext& c) { return scan(c, true); });
  t.add("argsort.default", argsort);
  t.add("argsort.stable", argsort);
  t.add("index_add.default", index_add);
  t.add("scatter_reduce.two", scatter_reduce);

  auto fmod = [](auto a, auto b) -> decltype(a) {
    if constexpr (std::is_same_v<decltype(a), bool>) throw Error("interpreter", "", "fmod on bool");
    else return stax_scalar::fmod(a, b);
  };
  t.add("fmod.Tensor", elementwise<2>(fmod));
  t.add("fmod.Scalar", elementwise<2>(fmod));
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
  for (const char* ov : {".Tensor", ".Scalar"}) {
    t.add(std::string("bitwise_and") + ov, elementwise<2>(band));
    t.add(std::string("bitwise_or") + ov, elementwise<2>(bor));
    t.add(std::string("bitwise_xor") + ov, elementwise<2>(bxor));
  }
  t.add("bitwise_not.default",
        elementwise<1>(integral([](auto a) { return stax_scalar::bitwise_not(a); })));
  auto shift = [](bool left) {
    return [left](auto a, auto b) -> decltype(a) {
      using C = decltype(a);
      if constexpr (std::is_same_v<C, stax_scalar::i64>)
        return left ? stax_scalar::bitwise_left_shift(a, b) : stax_scalar::bitwise_right_shift(a, b);
      else
        throw Error("interpreter", "", "shifts are defined for integer values only");
    };
  };
  for (const char* ov : {".Tensor", ".Tensor_Scalar"}) {
    t.add(std::string("bitwise_left_shift") + ov, elementwise<2>(shift(true)));
    t.add(std::string("bitwise_right_shift") + ov, elementwise<2>(shift(false)));
  }
}

}  // namespace stax
