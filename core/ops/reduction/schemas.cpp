// Reductions over dims (keepdim), full reductions, argmax/argmin, mean/var, all/any.
// An empty or absent dim list reduces every dim. The interpreter's reduction order and
// accumulation dtype are documented in core/ops/reduction/kernels.cpp.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/ops/common/infer_helpers.h"
#include "core/ops/nn/params.h"
#include "core/ops/registration.h"

namespace stax {
namespace {

std::vector<int64_t> reduce_dims(const CallArgs& c) {
  if (c.op().schema.index_of("dim") >= 0 && c.has("dim")) return c.get("dim").to_int_list();
  return {};
}

bool reduce_keepdim(const CallArgs& c) {
  return c.op().schema.index_of("keepdim") >= 0 && c.get("keepdim").to_bool();
}

Shape reduced_shape(const CallArgs& c) {
  return infer::reduce_shape(c.tensor("self").sizes, reduce_dims(c), reduce_keepdim(c), c);
}

// The optional `dtype` kwarg, if the schema has one and it is given.
std::optional<DType> dtype_kwarg(const CallArgs& c) {
  if (c.op().schema.index_of("dtype") >= 0 && c.get("dtype").is_dtype())
    return c.get("dtype").dtype();
  return std::nullopt;
}

// sum / prod: the dtype kwarg, else the input's dtype with integers and bool going to int64.
TensorMeta sum_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  DType t = dtype_kwarg(c).value_or(is_floating(in.dtype) ? in.dtype : DType::Int64);
  return TensorMeta::contiguous(reduced_shape(c), t, in.device);
}

// amax / amin: the input's dtype; no identity, so no reduction over an empty dim.
TensorMeta same_dtype_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  Shape out = reduced_shape(c);
  infer::check_nonempty_reduced_dims(in.sizes, reduce_dims(c), c);
  return TensorMeta::contiguous(out, in.dtype, in.device);
}

// mean: floating only (torch: "could not infer output dtype"), unless a floating dtype is given.
TensorMeta mean_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  DType t = dtype_kwarg(c).value_or(in.dtype);
  if (!is_floating(t))
    c.fail("could not infer output dtype. Input dtype must be a floating point dtype, got " +
           std::string(dtype_name(t)));
  return TensorMeta::contiguous(reduced_shape(c), t, in.device);
}

TensorMeta var_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  if (!is_floating(in.dtype))
    c.fail("std and var only support floating point dtypes, got " +
           std::string(dtype_name(in.dtype)));
  return TensorMeta::contiguous(reduced_shape(c), in.dtype, in.device);
}

TensorMeta arg_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  if (!c.has("dim") && in.numel() == 0)
    c.fail(c.op().schema.base + "(): expected a reduction dim to be specified for an empty input");
  if (c.has("dim") && in.dim() > 0 &&
      in.sizes[wrap_dim(c.get("dim").to_int(), in.dim(), c.where())] == 0)
    c.fail(c.op().schema.base + "(): expected reduction dim " +
           std::to_string(c.get("dim").to_int()) + " to have non-zero size");
  return TensorMeta::contiguous(reduced_shape(c), DType::Int64, in.device);
}

// all / any: bool, except uint8 inputs give uint8 (as torch).
TensorMeta logical_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  DType t = in.dtype == DType::UInt8 ? DType::UInt8 : DType::Bool;
  return TensorMeta::contiguous(reduced_shape(c), t, in.device);
}

using P = Promotion;
using C = OpCategory;

std::string dt(DType t) { return std::string(dtype_name(t)); }

// Reductions over `dim` (int[1]?, absent / empty: every dim) keeping or dropping them.
Shape reduced(const CallArgs& c, const char* dim_param = "dim") {
  std::vector<int64_t> dims;
  if (c.op().schema.index_of(dim_param) >= 0 && c.has(dim_param))
    dims = c.get(dim_param).to_int_list();
  bool keepdim = c.op().schema.index_of("keepdim") >= 0 && c.get("keepdim").to_bool();
  return infer::reduce_shape(c.tensor("self").sizes, dims, keepdim, c);
}

TensorMeta std_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  if (!is_floating(in.dtype))
    c.fail("std and var only support floating point dtypes, got " + dt(in.dtype));
  return TensorMeta::contiguous(reduced(c), in.dtype, in.device);
}

TensorMeta logsumexp_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  DType t = is_floating(in.dtype) ? in.dtype : DType::Float32;  // integers: the default float
  // dim=[] reduces every dim; torch's kernel then adds the max, kept with keepdim=True and
  // squeezed over the (no) dims given, to the reduced sum in place: shape (1, ...) into ().
  if (c.get("dim").to_int_list().empty() && !c.get("keepdim").to_bool() && in.dim() > 0 &&
      in.numel() > 0)
    c.fail("dim=[] with keepdim=False fails in torch's kernel (the max, of shape " +
           shape_str(Shape(in.sizes.size(), 1)) + ", does not broadcast to the result ()); "
           "name the dims or keep them");
  return TensorMeta::contiguous(reduced(c), t, in.device);
}

TensorMeta norm_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  DType t = in.dtype;
  if (c.op().schema.index_of("dtype") >= 0 && c.get("dtype").is_dtype()) {
    t = c.get("dtype").dtype();
    if (!is_floating(t)) c.fail("dtype must be a floating-point dtype, got " + dt(t));
  }
  if (!is_floating(in.dtype))
    c.fail("norm: expected a floating-point input, got " + dt(in.dtype));
  const char* ord = c.op().schema.index_of("ord") >= 0 ? "ord" : "p";
  if (c.has(ord) && !c.get(ord).is_number()) c.fail(std::string(ord) + " must be a number");
  if (t != in.dtype && promote_types(in.dtype, t) != t)
    c.fail("the input's dtype " + dt(in.dtype) + " must convert to dtype " + dt(t) +
           " without narrowing");
  Shape out = reduced(c);
  // A negative or infinite order has no identity: no norm over an empty dim (as torch).
  double p = c.has(ord) ? c.get(ord).to_double() : 2.0;
  if (shape_numel(in.sizes) == 0 && (p < 0 || std::isinf(p))) {
    std::vector<int64_t> dims;
    if (c.op().schema.index_of("dim") >= 0 && c.has("dim")) dims = c.get("dim").to_int_list();
    if (dims.empty())
      c.fail("the " + double_repr(p) + " norm of an empty tensor needs dims to reduce over (the "
             "operation has no identity)");
    infer::check_nonempty_reduced_dims(in.sizes, dims, c);
  }
  return TensorMeta::contiguous(out, t, in.device);
}

TensorMeta scan_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  wrap_dim(c.get("dim").to_int(), std::max<int64_t>(in.dim(), 1), c.where());
  DType t = in.dtype;
  if (c.get("dtype").is_dtype()) t = c.get("dtype").dtype();
  else if (!is_floating(t)) t = DType::Int64;  // integers and bool accumulate in int64 (torch)
  return TensorMeta::contiguous(in.sizes, t, in.device);
}

TensorMeta argsort_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  wrap_dim(c.get("dim").to_int(), std::max<int64_t>(in.dim(), 1), c.where());
  return TensorMeta::contiguous(in.sizes, DType::Int64, in.device);
}

TensorMeta full_reduction(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  if (shape_numel(in.sizes) == 0)
    c.fail("max(): Expected reduction dim to be specified for input.numel() == 0");
  return TensorMeta::contiguous({}, in.dtype, in.device);
}

TensorMeta same_as_self(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  return TensorMeta::contiguous(in.sizes, in.dtype, in.device);
}

int64_t wrap(const CallArgs& c, int64_t d, int64_t rank) {
  return wrap_dim(d, std::max<int64_t>(rank, 1), c.where());
}

// Reductions over `dim` (int[1]? / int[] / int?; absent or empty: every dim).
TensorMeta reduction(const CallArgs& c, DType t) {
  const TensorMeta& in = c.tensor("self");
  std::vector<int64_t> dims;
  if (c.has("dim")) dims = c.get("dim").is_int() ? std::vector<int64_t>{c.get("dim").to_int()}
                                                  : c.get("dim").to_int_list();
  bool keepdim = c.op().schema.index_of("keepdim") >= 0 && c.get("keepdim").to_bool();
  return TensorMeta::contiguous(infer::reduce_shape(in.sizes, dims, keepdim, c), t, in.device);
}

TensorMeta nansum_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  DType t = is_floating(in.dtype) ? in.dtype : DType::Int64;  // integers and bool: int64 (sum)
  if (c.get("dtype").is_dtype()) t = c.get("dtype").dtype();
  return reduction(c, t);
}

TensorMeta trace_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  if (in.dim() != 2) c.fail("trace: expected a matrix, but got tensor with dim " +
                            std::to_string(in.dim()));
  DType t = is_floating(in.dtype) ? in.dtype : DType::Int64;
  return TensorMeta::contiguous({}, t, in.device);
}

TensorMeta logcumsumexp_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  wrap(c, c.get("dim").to_int(), in.dim());
  if (!is_floating(in.dtype)) c.fail("logcumsumexp: expected a floating-point input, got " +
                                     dt(in.dtype));
  return same_as_self(c);
}

TensorMeta median_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  if (in.dtype == DType::Bool) c.fail("median is not implemented for 'bool'");
  return TensorMeta::contiguous({}, in.dtype, in.device);
}

// The base reductions: sum prod amax amin argmax argmin mean var.correction all any.
void add_base_reductions(OpRegistry& r) {
  r.add("sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, "
        "ScalarType? dtype=None) -> Tensor",
        C::Reduction, P::None, sum_rule);
  r.add("sum.default(Tensor self, *, ScalarType? dtype=None) -> Tensor", C::Reduction, P::None,
        sum_rule);
  r.add("prod.dim_int(Tensor self, int dim, bool keepdim=False, *, "
        "ScalarType? dtype=None) -> Tensor",
        C::Reduction, P::None, sum_rule);
  r.add("prod(Tensor self, *, ScalarType? dtype=None) -> Tensor", C::Reduction, P::None,
        sum_rule);
  r.add("amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor", C::Reduction, P::None,
        same_dtype_rule);
  r.add("amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor", C::Reduction, P::None,
        same_dtype_rule);
  r.add("argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", C::Reduction, P::None,
        arg_rule)
      .differentiable = false;
  r.add("argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", C::Reduction, P::None,
        arg_rule)
      .differentiable = false;
  r.add("mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, "
        "ScalarType? dtype=None) -> Tensor",
        C::Reduction, P::None, mean_rule);
  r.add("mean(Tensor self, *, ScalarType? dtype=None) -> Tensor", C::Reduction, P::None,
        mean_rule);
  r.add("var.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, "
        "bool keepdim=False) -> Tensor",
        C::Reduction, P::None, var_rule);
  for (const char* base : {"all", "any"}) {
    r.add(std::string(base) + ".dim(Tensor self, int dim, bool keepdim=False) -> Tensor",
          C::Reduction, P::None, logical_rule)
        .differentiable = false;
    r.add(std::string(base) + "(Tensor self) -> Tensor", C::Reduction, P::None, logical_rule)
        .differentiable = false;
    // .dims: None reduces every dim; an empty list reduces none (torch: an elementwise test).
    r.add(std::string(base) + ".dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor",
          C::Composite, P::None,
          [](const CallArgs& c) {
            const TensorMeta& in = c.tensor("self");
            DType t = in.dtype == DType::UInt8 ? DType::UInt8 : DType::Bool;
            if (c.has("dim") && c.get("dim").to_int_list().empty())
              return TensorMeta::contiguous(in.sizes, t, in.device);
            return TensorMeta::contiguous(reduced_shape(c), t, in.device);
          })
        .differentiable = false;
  }
}

// The Composite reductions (std var logsumexp norm max min), the scans (cumsum cumprod) and
// argsort.
void add_composite_reductions_and_scans(OpRegistry& r) {
  // ---- reductions and scans
  r.add("std.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, "
        "bool keepdim=False) -> Tensor",
        C::Composite, P::None, std_rule);

  r.add("std.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor",
        C::Composite, P::None, std_rule);

  r.add("std(Tensor self, bool unbiased=True) -> Tensor", C::Composite, P::None, std_rule);

  r.add("var.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor",
        C::Composite, P::None, std_rule);

  r.add("var(Tensor self, bool unbiased=True) -> Tensor", C::Composite, P::None, std_rule);

  r.add("logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor", C::Composite, P::None,
        logsumexp_rule);

  r.add("norm.ScalarOpt_dim(Tensor self, Scalar? p, int[1] dim, bool keepdim=False) -> Tensor",
        C::Composite, P::None, norm_rule);

  r.add("norm.Scalar(Tensor self, Scalar p=2) -> Tensor", C::Composite, P::None, norm_rule);

  r.add("linalg_vector_norm(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, "
        "ScalarType? dtype=None) -> Tensor",
        C::Composite, P::None, norm_rule);

  r.add("max(Tensor self) -> Tensor", C::Composite, P::None, full_reduction);

  r.add("min(Tensor self) -> Tensor", C::Composite, P::None, full_reduction);

  r.add("cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor", C::Reduction, P::None,
        scan_rule);

  r.add("cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor", C::Reduction,
        P::None, scan_rule);

  r.add("argsort(Tensor self, int dim=-1, bool descending=False) -> Tensor", C::Reduction, P::None,
        argsort_rule)
      .differentiable = false;

  r.add("argsort.stable(Tensor self, *, bool stable, int dim=-1, bool descending=False) -> Tensor",
        C::Reduction, P::None, argsort_rule)
      .differentiable = false;
}

// nansum, count_nonzero, logcumsumexp, trace, median, nanmedian (Composite).
void add_nan_and_order_reductions(OpRegistry& r) {
  {
    // ---- pointwise formulas (Composite)
    auto comp = [&](const std::string& schema, Promotion p, InferFn f) -> OpDef& {
      return r.add(schema, C::Composite, p, std::move(f));
    };

    // ---- reductions and scans
    comp("nansum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> "
         "Tensor",
         P::None, nansum_rule);

    comp("count_nonzero.dim_IntList(Tensor self, int[] dim) -> Tensor", P::None,
         [](const CallArgs& c) { return reduction(c, DType::Int64); })
        .differentiable = false;

    comp("count_nonzero(Tensor self, int? dim=None) -> Tensor", P::None,
         [](const CallArgs& c) { return reduction(c, DType::Int64); })
        .differentiable = false;

    comp("logcumsumexp(Tensor self, int dim) -> Tensor", P::None, logcumsumexp_rule);

    comp("trace(Tensor self) -> Tensor", P::None, trace_rule);
  }
  {
    auto comp = [&](const std::string& schema, InferFn f) -> OpDef& {
      return r.add(schema, C::Composite, P::None, std::move(f));
    };

    comp("median(Tensor self) -> Tensor", median_rule);

    comp("nanmedian(Tensor self) -> Tensor", median_rule);
  }
}

}  // namespace

void register_reduction_ops(OpRegistry& r) {
  add_base_reductions(r);
  add_composite_reductions_and_scans(r);
  add_nan_and_order_reductions(r);
}

}  // namespace stax
