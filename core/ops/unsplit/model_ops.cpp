// Ops of real models (issue 14 part C), with aten's exact schemas: activations and their
// *_backward ops, std / logsumexp / norm, cumsum / cumprod, argsort, stack / repeat / flip / roll /
// tril / triu, masked_fill / index_add / scatter_reduce, baddbmm / addcmul / addcdiv / lerp, fmod,
// bitwise and logical ops, nan_to_num / isinf / isfinite, div with rounding_mode, clamp with
// tensor bounds, clamp_min / clamp_max, max / min over all elements.
//
// Composite ops here have entries in core/graph/decompositions_model.cpp (the compiled path runs
// their decomposition; the interpreter runs it too, so compiled results match bit for bit).
// cumsum, cumprod, argsort, index_add, scatter_reduce, fmod and the bitwise ops are base ops with
// interpreter kernels (core/interpreter/kernels/model_kernels.cpp) and no lowering rule: the
// compiled path runs them as FallbackKernels (counted as fallbacks).
#include <algorithm>

#include "core/ops/common/infer_helpers.h"
#include "core/ops/registration.h"

namespace stax {
namespace {

using P = Promotion;
using C = OpCategory;

std::string dt(DType t) { return std::string(dtype_name(t)); }

using infer::floating;
using infer::numeric;

InferFn integral(std::vector<std::string> params) {
  return [params = std::move(params)](const CallArgs& c) {
    TensorMeta m = infer::elementwise(c, params, P::Default);
    if (is_floating(m.dtype))
      c.fail("bitwise ops are only defined for integer and bool tensors, got " + dt(m.dtype));
    return m;
  };
}

InferFn always_bool(std::vector<std::string> params) {
  return [params = std::move(params)](const CallArgs& c) {
    return infer::elementwise(c, params, P::AlwaysBool);
  };
}

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
  return TensorMeta::contiguous(reduced(c), t, in.device);
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

TensorMeta stack_rule(const CallArgs& c) {
  std::vector<Node*> ts = c.get("tensors").to_node_list();
  if (ts.empty()) c.fail("stack expects a non-empty TensorList");
  const TensorMeta& first = ts[0]->meta();
  for (size_t i = 1; i < ts.size(); ++i)
    if (!ts[i] || ts[i]->meta().sizes != first.sizes)
      c.fail("stack expects each tensor to be equal size, but got " + shape_str(first.sizes) +
             " at entry 0 and " + (ts[i] ? shape_str(ts[i]->meta().sizes) : "None") +
             " at entry " + std::to_string(i));
  int64_t d = wrap_dim(c.get("dim").to_int(), first.dim() + 1, c.where());
  DType t = ts[0]->meta().dtype;
  for (Node* n : ts) t = promote_types(t, n->meta().dtype);
  Shape s = first.sizes;
  s.insert(s.begin() + d, static_cast<int64_t>(ts.size()));
  return TensorMeta::contiguous(s, t, first.device);
}

TensorMeta repeat_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  std::vector<int64_t> r = c.get("repeats").to_int_list();
  if (static_cast<int64_t>(r.size()) < in.dim())
    c.fail("Number of dimensions of repeat dims (" + std::to_string(r.size()) +
           ") can not be smaller than number of dimensions of tensor (" +
           std::to_string(in.dim()) + ")");
  Shape s(r.size());
  size_t pad = r.size() - in.sizes.size();
  for (size_t i = 0; i < r.size(); ++i) {
    if (r[i] < 0) c.fail("repeats must be non-negative, got " + std::to_string(r[i]));
    s[i] = r[i] * (i < pad ? 1 : in.sizes[i - pad]);
  }
  return TensorMeta::contiguous(s, in.dtype, in.device);
}

TensorMeta same_as_self(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  return TensorMeta::contiguous(in.sizes, in.dtype, in.device);
}

TensorMeta flip_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  std::vector<bool> seen(std::max<int64_t>(in.dim(), 1));
  for (int64_t d : c.get("dims").to_int_list()) {
    int64_t w = wrap_dim(d, std::max<int64_t>(in.dim(), 1), c.where());
    if (seen[w]) c.fail("dim " + std::to_string(w) + " appears multiple times in dims");
    seen[w] = true;
  }
  return same_as_self(c);
}

TensorMeta roll_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  auto shifts = c.get("shifts").to_int_list();
  auto dims = c.get("dims").to_int_list();
  if (dims.empty() && shifts.size() != 1)
    c.fail("shifts must have one element when dims is empty, got " +
           std::to_string(shifts.size()));
  if (!dims.empty() && shifts.size() != dims.size())
    c.fail("shifts and dimensions must align: shifts has " + std::to_string(shifts.size()) +
           " elements, dims " + std::to_string(dims.size()));
  for (int64_t d : dims) wrap_dim(d, std::max<int64_t>(in.dim(), 1), c.where());
  return same_as_self(c);
}

TensorMeta tri_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  if (in.dim() < 2) c.fail("tril/triu: input tensor must have at least 2 dimensions");
  return same_as_self(c);
}

TensorMeta masked_fill_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  const TensorMeta& mask = c.tensor("mask");
  if (mask.dtype != DType::Bool)
    c.fail("masked_fill only supports boolean masks, but got mask with dtype " + dt(mask.dtype));
  Shape b = broadcast_shapes(in.sizes, mask.sizes, c.where());
  if (b != in.sizes)
    c.fail("the mask of shape " + shape_str(mask.sizes) + " must broadcast to self's shape " +
           shape_str(in.sizes));
  if (c.get("value").is_node()) {
    const TensorMeta& v = c.tensor("value");
    if (v.dim() != 0)
      c.fail("masked_fill only supports a 0-dimensional value tensor, but got tensor with " +
             std::to_string(v.dim()) + " dimension(s)");
  }
  return same_as_self(c);
}

// index_add / scatter_reduce: self's shape and dtype; index int64 of the stated rank.
TensorMeta index_add_rule(const CallArgs& c) {
  const TensorMeta& self = c.tensor("self");
  const TensorMeta& idx = c.tensor("index");
  const TensorMeta& src = c.tensor("source");
  int64_t d = wrap_dim(c.get("dim").to_int(), std::max<int64_t>(self.dim(), 1), c.where());
  if (idx.dtype != DType::Int64 && idx.dtype != DType::Int32)
    c.fail("index_add_(): Expected dtype int32/int64 for index, got " + dt(idx.dtype));
  if (idx.dim() > 1) c.fail("index_add_(): Index is supposed to be a vector");
  if (src.dtype != self.dtype)
    c.fail("index_add_(): self (" + dt(self.dtype) + ") and source (" + dt(src.dtype) +
           ") must have the same scalar type");
  int64_t n = idx.dim() == 0 ? 1 : idx.sizes[0];
  if (self.dim() > 0) {
    Shape want = self.sizes;
    want[d] = n;
    if (src.sizes != want && !(src.dim() == 0 && shape_numel(want) == 1))
      c.fail("index_add_(): source of shape " + shape_str(src.sizes) + " must have shape " +
             shape_str(want) + " (self's with dim " + std::to_string(d) + " of the index's length)");
  }
  if (c.get("alpha").is_double() && !is_floating(self.dtype))
    c.fail("for integral input tensors, argument alpha must not be a floating point number");
  return same_as_self(c);
}

TensorMeta scatter_reduce_rule(const CallArgs& c) {
  const TensorMeta& self = c.tensor("self");
  const TensorMeta& idx = c.tensor("index");
  const TensorMeta& src = c.tensor("src");
  wrap_dim(c.get("dim").to_int(), std::max<int64_t>(self.dim(), 1), c.where());
  const std::string& red = c.get("reduce").str();
  if (red != "sum" && red != "prod" && red != "mean" && red != "amax" && red != "amin")
    c.fail("reduce argument must be either sum, prod, mean, amax or amin, got " + red);
  if (idx.dtype != DType::Int64) c.fail("scatter_reduce(): Expected dtype int64 for index");
  if (src.dtype != self.dtype)
    c.fail("scatter_reduce(): Expected self.dtype to be equal to src.dtype");
  if (idx.dim() != self.dim() || idx.dim() != src.dim())
    c.fail("Index tensor must have the same number of dimensions as self and src tensors");
  for (int64_t i = 0; i < idx.dim(); ++i)
    if (idx.sizes[i] > src.sizes[i])
      c.fail("Expected index " + shape_str(idx.sizes) + " to be smaller than src " +
             shape_str(src.sizes));
  return same_as_self(c);
}

TensorMeta baddbmm_rule(const CallArgs& c) {
  const TensorMeta& self = c.tensor("self");
  const TensorMeta& a = c.tensor("batch1");
  const TensorMeta& b = c.tensor("batch2");
  if (a.dim() != 3 || b.dim() != 3)
    c.fail("batch1 and batch2 must be 3-D tensors, got " + shape_str(a.sizes) + " and " +
           shape_str(b.sizes));
  if (a.sizes[0] != b.sizes[0] || a.sizes[2] != b.sizes[1])
    c.fail("batch1 " + shape_str(a.sizes) + " and batch2 " + shape_str(b.sizes) +
           " cannot be multiplied");
  if (a.dtype != b.dtype || self.dtype != a.dtype)
    c.fail("self (" + dt(self.dtype) + "), batch1 (" + dt(a.dtype) + ") and batch2 (" +
           dt(b.dtype) + ") must have the same dtype");
  Shape out{a.sizes[0], a.sizes[1], b.sizes[2]};
  if (broadcast_shapes(self.sizes, out, c.where()) != out)
    c.fail("self of shape " + shape_str(self.sizes) + " does not broadcast to " + shape_str(out));
  return TensorMeta::contiguous(out, a.dtype, a.device);
}

InferFn div_mode_rule() {
  return [](const CallArgs& c) {
    const Arg& mode = c.get("rounding_mode");
    if (mode.is_absent()) return infer::elementwise(c, {"self", "other"}, P::IntToFloat);
    const std::string& m = mode.str();
    if (m != "trunc" && m != "floor")
      c.fail("div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '" + m +
             "'");
    TensorMeta r = infer::elementwise(c, {"self", "other"}, P::Default);
    if (r.dtype == DType::Bool) c.fail("div with rounding_mode is not defined for bool tensors");
    return r;
  };
}

TensorMeta clamp_tensor_rule(const CallArgs& c) {
  if (!c.has("min") && !c.has("max")) c.fail("at least one of 'min' and 'max' must be given");
  TensorMeta m = infer::elementwise(c, {"self", "min", "max"}, P::Default);
  if (m.dtype == DType::Bool) c.fail("clamp is not supported for bool tensors");
  return m;
}

TensorMeta nan_to_num_rule(const CallArgs& c) { return same_as_self(c); }

TensorMeta full_reduction(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  if (shape_numel(in.sizes) == 0)
    c.fail("max(): Expected reduction dim to be specified for input.numel() == 0");
  return TensorMeta::contiguous({}, in.dtype, in.device);
}

}  // namespace

void register_model_ops(OpRegistry& r) {
  // ---- activations (Composite: decompositions_model.cpp) and their backward ops
  auto act = [&](const std::string& schema, InferFn f) {
    return r.add(schema, C::Composite, P::Default, std::move(f));
  };
  act("leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor", floating({"self"}));
  act("elu(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> Tensor",
      floating({"self"}));
  act("hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor", numeric({"self"}));
  act("relu6(Tensor self) -> Tensor", numeric({"self"}));
  act("hardswish(Tensor self) -> Tensor", floating({"self"}));
  act("hardsigmoid(Tensor self) -> Tensor", floating({"self"}));
  act("softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor", floating({"self"}));
  act("mish(Tensor self) -> Tensor", floating({"self"}));
  act("leaky_relu_backward(Tensor grad_output, Tensor self, Scalar negative_slope, "
      "bool self_is_result) -> Tensor",
      floating({"grad_output", "self"}));
  act("elu_backward(Tensor grad_output, Scalar alpha, Scalar scale, Scalar input_scale, "
      "bool is_result, Tensor self_or_result) -> Tensor",
      floating({"grad_output", "self_or_result"}));
  act("hardtanh_backward(Tensor grad_output, Tensor self, Scalar min_val, Scalar max_val) -> "
      "Tensor",
      floating({"grad_output", "self"}));
  act("hardswish_backward(Tensor grad_output, Tensor self) -> Tensor",
      floating({"grad_output", "self"}));
  act("hardsigmoid_backward(Tensor grad_output, Tensor self) -> Tensor",
      floating({"grad_output", "self"}));
  act("softplus_backward(Tensor grad_output, Tensor self, Scalar beta, Scalar threshold) -> "
      "Tensor",
      floating({"grad_output", "self"}));
  act("mish_backward(Tensor grad_output, Tensor self) -> Tensor",
      floating({"grad_output", "self"}));

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
  r.add("max.other(Tensor self, Tensor other) -> Tensor", C::Composite, P::Default,
        infer::elementwise_rule({"self", "other"}));
  r.add("min.other(Tensor self, Tensor other) -> Tensor", C::Composite, P::Default,
        infer::elementwise_rule({"self", "other"}));
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

  // ---- shape ops (Composite: cat / unsqueeze / expand / reshape / index_select / slice / where)
  r.add("stack(Tensor[] tensors, int dim=0) -> Tensor", C::Composite, P::None, stack_rule);
  r.add("repeat(Tensor self, SymInt[] repeats) -> Tensor", C::Composite, P::None, repeat_rule);
  r.add("flip(Tensor self, int[] dims) -> Tensor", C::Composite, P::None, flip_rule);
  r.add("roll(Tensor self, SymInt[1] shifts, int[1] dims=[]) -> Tensor", C::Composite, P::None,
        roll_rule);
  r.add("tril(Tensor self, int diagonal=0) -> Tensor", C::Composite, P::None, tri_rule);
  r.add("triu(Tensor self, int diagonal=0) -> Tensor", C::Composite, P::None, tri_rule);

  // ---- masked and indexed writes
  r.add("masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor", C::Composite,
        P::None, masked_fill_rule);
  r.add("masked_fill.Tensor(Tensor self, Tensor mask, Tensor value) -> Tensor", C::Composite,
        P::None, masked_fill_rule);
  r.add("index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor",
        C::Indexing, P::None, index_add_rule);
  r.add("scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, str reduce, *, "
        "bool include_self=True) -> Tensor",
        C::Indexing, P::None, scatter_reduce_rule);

  // ---- fused arithmetic
  r.add("baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> "
        "Tensor",
        C::Composite, P::None, baddbmm_rule);
  r.add("addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor",
        C::Composite, P::Default, numeric({"self", "tensor1", "tensor2"}));
  r.add("addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor",
        C::Composite, P::Default, [](const CallArgs& c) {
          TensorMeta m = infer::elementwise(c, {"self", "tensor1", "tensor2"}, P::Default);
          if (!is_floating(m.dtype))
            c.fail("Integer division with addcdiv is no longer supported; use addcmul with "
                   "a floating-point dtype");
          return m;
        });
  r.add("lerp.Scalar(Tensor self, Tensor end, Scalar weight) -> Tensor", C::Composite, P::Default,
        floating({"self", "end"}));
  r.add("lerp.Tensor(Tensor self, Tensor end, Tensor weight) -> Tensor", C::Composite, P::Default,
        floating({"self", "end", "weight"}));
  r.add("div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor",
        C::Composite, P::None, div_mode_rule());
  r.add("div.Scalar_mode(Tensor self, Scalar other, *, str? rounding_mode) -> Tensor",
        C::Composite, P::None, div_mode_rule());
  r.add("clamp.Tensor(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor", C::Composite,
        P::None, clamp_tensor_rule);
  r.add("clamp_min(Tensor self, Scalar min) -> Tensor", C::Composite, P::Default,
        numeric({"self", "min"}));
  r.add("clamp_max(Tensor self, Scalar max) -> Tensor", C::Composite, P::Default,
        numeric({"self", "max"}));
  r.add("clamp_min.Tensor(Tensor self, Tensor min) -> Tensor", C::Composite, P::Default,
        numeric({"self", "min"}));
  r.add("clamp_max.Tensor(Tensor self, Tensor max) -> Tensor", C::Composite, P::Default,
        numeric({"self", "max"}));

  // ---- fmod and bitwise ops: interpreter kernels (scalar semantics of scalar_ops.hpp)
  r.add("fmod.Tensor(Tensor self, Tensor other) -> Tensor", C::Pointwise, P::Default,
        numeric({"self", "other"}));
  r.add("fmod.Scalar(Tensor self, Scalar other) -> Tensor", C::Pointwise, P::Default,
        numeric({"self", "other"}));
  for (const char* b : {"bitwise_and", "bitwise_or", "bitwise_xor"}) {
    r.add(std::string(b) + ".Tensor(Tensor self, Tensor other) -> Tensor", C::Pointwise,
          P::Default, integral({"self", "other"}))
        .differentiable = false;
    r.add(std::string(b) + ".Scalar(Tensor self, Scalar other) -> Tensor", C::Pointwise,
          P::Default, integral({"self", "other"}))
        .differentiable = false;
  }
  r.add("bitwise_not(Tensor self) -> Tensor", C::Pointwise, P::Default, integral({"self"}))
      .differentiable = false;
  for (const char* b : {"bitwise_left_shift", "bitwise_right_shift"}) {
    auto no_bool = [](const CallArgs& c) {
      TensorMeta m = integral({"self", "other"})(c);
      if (m.dtype == DType::Bool) c.fail("shifts are not implemented for 'bool' tensors");
      return m;
    };
    r.add(std::string(b) + ".Tensor(Tensor self, Tensor other) -> Tensor", C::Pointwise,
          P::Default, no_bool)
        .differentiable = false;
    r.add(std::string(b) + ".Tensor_Scalar(Tensor self, Scalar other) -> Tensor", C::Pointwise,
          P::Default, no_bool)
        .differentiable = false;
  }

  // ---- predicates (Composite)
  r.add("logical_xor(Tensor self, Tensor other) -> Tensor", C::Composite, P::AlwaysBool,
        always_bool({"self", "other"}))
      .differentiable = false;
  for (const char* n : {"isinf", "isfinite", "isposinf", "isneginf"})
    r.add(std::string(n) + "(Tensor self) -> Tensor", C::Composite, P::AlwaysBool,
          always_bool({"self"}))
        .differentiable = false;
  r.add("nan_to_num(Tensor self, float? nan=None, float? posinf=None, float? neginf=None) -> "
        "Tensor",
        C::Composite, P::None, nan_to_num_rule);
}

}  // namespace stax
