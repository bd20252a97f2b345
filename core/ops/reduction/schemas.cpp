// Reductions over dims (keepdim), full reductions, argmax/argmin, mean/var, all/any.
// An empty or absent dim list reduces every dim. The interpreter's reduction order and
// accumulation dtype are documented in core/interpreter/kernels/reduction_kernels.cpp.
#include "core/ops/common/infer_helpers.h"
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

// amax / amin: the input's dtype.
TensorMeta same_dtype_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  return TensorMeta::contiguous(reduced_shape(c), in.dtype, in.device);
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
  return TensorMeta::contiguous(reduced_shape(c), DType::Int64, in.device);
}

// all / any: bool, except uint8 inputs give uint8 (as torch).
TensorMeta logical_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  DType t = in.dtype == DType::UInt8 ? DType::UInt8 : DType::Bool;
  return TensorMeta::contiguous(reduced_shape(c), t, in.device);
}

}  // namespace

void register_reduction_ops(OpRegistry& r) {
  using P = Promotion;
  using C = OpCategory;
  r.add("sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, "
        "ScalarType? dtype=None) -> Tensor",
        C::Reduction, P::None, sum_rule);
  r.add("sum.default(Tensor self, *, ScalarType? dtype=None) -> Tensor", C::Reduction, P::None,
        sum_rule);
  r.add("prod.dim_int(Tensor self, int dim, bool keepdim=False, *, "
        "ScalarType? dtype=None) -> Tensor",
        C::Reduction, P::None, sum_rule);
  r.add("prod.default(Tensor self, *, ScalarType? dtype=None) -> Tensor", C::Reduction, P::None,
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
  r.add("mean.default(Tensor self, *, ScalarType? dtype=None) -> Tensor", C::Reduction, P::None,
        mean_rule);
  r.add("var.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, "
        "bool keepdim=False) -> Tensor",
        C::Reduction, P::None, var_rule);
  for (const char* base : {"all", "any"}) {
    r.add(std::string(base) + ".dim(Tensor self, int dim, bool keepdim=False) -> Tensor",
          C::Reduction, P::None, logical_rule)
        .differentiable = false;
    r.add(std::string(base) + ".default(Tensor self) -> Tensor", C::Reduction, P::None,
          logical_rule)
        .differentiable = false;
  }
}

}  // namespace stax
