// Pointwise ops: unary math, binary arithmetic (.Tensor and .Scalar), comparisons, logical ops,
// where, clamp and dtype conversion. Shapes broadcast; dtypes follow PyTorch's promotion modes.
#include "core/ops/common/infer_helpers.h"
#include "core/ops/registration.h"

namespace stax {
namespace {

// An elementwise rule that also requires a floating-point result (gelu, silu: torch has no
// integer kernels for them).
InferFn floating_rule(std::vector<std::string> params) {
  return [params = std::move(params)](const CallArgs& c) {
    TensorMeta m = infer::elementwise(c, params, c.op().promotion);
    if (!is_floating(m.dtype))
      c.fail("expected a floating-point input, got " + std::string(dtype_name(m.dtype)));
    return m;
  };
}

// add / sub: self +- alpha * other. Like torch: a floating alpha needs a floating result, and
// bool tensors cannot be subtracted.
InferFn alpha_rule(std::string base) {
  return [base = std::move(base)](const CallArgs& c) {
    TensorMeta m = infer::elementwise(c, {"self", "other"}, c.op().promotion);
    if (c.get("alpha").is_double() && !is_floating(m.dtype))
      c.fail("for integral input tensors, argument alpha must not be a floating point number");
    if (base == "sub" && m.dtype == DType::Bool)
      c.fail("subtraction, the `-` operator, with bool tensors is not supported; use "
             "logical_xor or logical_not");
    return m;
  };
}

}  // namespace

void register_pointwise_ops(OpRegistry& r) {
  using P = Promotion;
  auto unary = [&](const char* name, P mode, bool differentiable = true) {
    auto& d = r.add(std::string(name) + "(Tensor self) -> Tensor", OpCategory::Pointwise, mode,
                    infer::elementwise_rule({"self"}));
    d.differentiable = differentiable;
  };
  // Float-valued math: integers promote to float32 (torch's INT_TO_FLOAT).
  for (const char* n : {"exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt",
                        "sin", "cos", "tan", "tanh", "sigmoid", "erf", "reciprocal"})
    unary(n, P::IntToFloat);
  for (const char* n : {"abs", "relu"}) unary(n, P::Default);
  // Rounding and sign have no bool kernels (as in torch): rejected when the graph is built.
  for (const char* n : {"sign", "floor", "ceil", "round", "trunc"}) {
    r.add(std::string(n) + "(Tensor self) -> Tensor", OpCategory::Pointwise, P::Default,
          [](const CallArgs& c) {
            if (c.tensor("self").dtype == DType::Bool)
              c.fail("not implemented for 'bool' tensors");
            return infer::elementwise(c, {"self"}, P::Default);
          });
  }
  unary("logical_not", P::AlwaysBool, false);
  unary("isnan", P::AlwaysBool, false);
  r.add("neg(Tensor self) -> Tensor", OpCategory::Pointwise, P::Default, [](const CallArgs& c) {
    if (c.tensor("self").dtype == DType::Bool)
      c.fail("negation, the `-` operator, on a bool tensor is not supported; use logical_not");
    return infer::elementwise(c, {"self"}, P::Default);
  });
  // gelu and silu are formulas (core/graph/pointwise_formulas.h) on floating inputs.
  r.add("gelu(Tensor self, *, str approximate='none') -> Tensor", OpCategory::Pointwise,
        P::Default, floating_rule({"self"}))
      .allow_positional("approximate");  // Listing 5.2: (%matmul, 'none')
  // silu stays Composite (decompositions.cpp: x * sigmoid(x), the same sequence as the formula).
  r.add("silu(Tensor self) -> Tensor", OpCategory::Composite, P::Default, floating_rule({"self"}));

  // Like torch ("pow" / "remainder_cpu" / "div_floor_cpu" not implemented for 'Bool'), these
  // reject a bool computation when the call is built, not only when an executor runs it.
  auto no_bool = [](std::string b, std::vector<std::string> params) -> InferFn {
    return [b, params](const CallArgs& c) {
      TensorMeta m = infer::elementwise(c, params, c.op().promotion);
      if (m.dtype == DType::Bool) c.fail("'" + b + "' is not defined for bool tensors");
      return m;
    };
  };
  // aten: add.Tensor / sub.Tensor take `*, Scalar alpha=1`; add.Scalar / sub.Scalar take
  // `Scalar alpha=1` positionally.
  auto binary = [&](const char* base, P mode, bool with_alpha, bool differentiable = true) {
    InferFn rule = with_alpha ? alpha_rule(base) : infer::elementwise_rule({"self", "other"});
    std::string b = base;
    if (b == "remainder" || b == "floor_divide") rule = no_bool(b, {"self", "other"});
    auto& t = r.add(std::string(base) + ".Tensor(Tensor self, Tensor other" +
                        (with_alpha ? ", *, Scalar alpha=1" : "") + ") -> Tensor",
                    OpCategory::Pointwise, mode, rule);
    auto& s = r.add(std::string(base) + ".Scalar(Tensor self, Scalar other" +
                        (with_alpha ? ", Scalar alpha=1" : "") + ") -> Tensor",
                    OpCategory::Pointwise, mode, rule);
    t.differentiable = s.differentiable = differentiable;
  };
  binary("add", P::Default, true);
  binary("sub", P::Default, true);
  binary("mul", P::Default, false);
  binary("div", P::IntToFloat, false);
  binary("remainder", P::Default, false);
  // aten: pow.Tensor_Tensor (x ** y), pow.Tensor_Scalar (x ** 2), pow.Scalar (2 ** x).
  r.add("pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor", OpCategory::Pointwise,
        P::Default, no_bool("pow", {"self", "exponent"}));
  r.add("pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor", OpCategory::Pointwise,
        P::Default, no_bool("pow", {"self", "exponent"}));
  r.add("pow.Scalar(Scalar self, Tensor exponent) -> Tensor", OpCategory::Pointwise, P::Default,
        no_bool("pow", {"self", "exponent"}));
  // aten: floor_divide (Tensor, Tensor) is the overload-less `floor_divide.default`.
  r.add("floor_divide(Tensor self, Tensor other) -> Tensor", OpCategory::Pointwise, P::Default,
        no_bool("floor_divide", {"self", "other"}))
      .differentiable = false;
  r.add("floor_divide.Scalar(Tensor self, Scalar other) -> Tensor", OpCategory::Pointwise,
        P::Default, no_bool("floor_divide", {"self", "other"}))
      .differentiable = false;
  for (const char* n : {"eq", "ne", "lt", "le", "gt", "ge"}) binary(n, P::AlwaysBool, false, false);
  for (const char* n : {"maximum", "minimum"})
    r.add(std::string(n) + "(Tensor self, Tensor other) -> Tensor", OpCategory::Pointwise,
          P::Default,
          infer::elementwise_rule({"self", "other"}));
  for (const char* n : {"logical_and", "logical_or"})
    r.add(std::string(n) + "(Tensor self, Tensor other) -> Tensor", OpCategory::Pointwise,
          P::AlwaysBool, infer::elementwise_rule({"self", "other"}))
        .differentiable = false;

  r.add("where.self(Tensor condition, Tensor self, Tensor other) -> Tensor", OpCategory::Pointwise,
        P::None, [](const CallArgs& c) {
          if (c.tensor("condition").dtype != DType::Bool)
            c.fail("condition must be a bool tensor, got " +
                   std::string(dtype_name(c.tensor("condition").dtype)));
          TensorMeta m = infer::elementwise(c, {"condition", "self", "other"}, P::Default);
          m.dtype = result_type(c, {"self", "other"}, P::Default);
          return m;
        });
  // where with Python-number branches (torch's where.ScalarSelf / ScalarOther / Scalar); the
  // numbers take part in type promotion as Python scalars do.
  auto where_rule = [](const CallArgs& c) {
    if (c.tensor("condition").dtype != DType::Bool)
      c.fail("condition must be a bool tensor, got " +
             std::string(dtype_name(c.tensor("condition").dtype)));
    TensorMeta m = infer::elementwise(c, {"condition", "self", "other"}, P::Default);
    m.dtype = result_type(c, {"self", "other"}, P::Default);
    return m;
  };
  r.add("where.ScalarSelf(Tensor condition, Scalar self, Tensor other) -> Tensor",
        OpCategory::Pointwise, P::None, where_rule);
  r.add("where.ScalarOther(Tensor condition, Tensor self, Scalar other) -> Tensor",
        OpCategory::Pointwise, P::None, where_rule);
  r.add("where.Scalar(Tensor condition, Scalar self, Scalar other) -> Tensor",
        OpCategory::Pointwise, P::None, where_rule);
  r.add("clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor", OpCategory::Pointwise,
        P::Default, [](const CallArgs& c) {
          if (!c.has("min") && !c.has("max"))
            c.fail("at least one of 'min' and 'max' must be given");
          return infer::elementwise(c, {"self", "min", "max"}, P::Default);
        });
  // make_fx records .to(dtype) / .float() / .double() as _to_copy: to.dtype when a dtype is given,
  // else a copy (layout / device / memory_format are accepted and ignored, as by clone).
  r.add("_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
        "bool? pin_memory=None, bool non_blocking=False, MemoryFormat? memory_format=None) -> Tensor",
        OpCategory::Pointwise, P::None, [](const CallArgs& c) {
          const TensorMeta& in = c.tensor("self");
          DType t = c.get("dtype").is_dtype() ? c.get("dtype").dtype() : in.dtype;
          return TensorMeta::contiguous(in.sizes, t, in.device);
        });
  // Type conversion (torch's _to_copy / convert_element_type).
  r.add("to.dtype(Tensor self, ScalarType dtype, bool non_blocking=False, bool copy=False, "
        "MemoryFormat? memory_format=None) -> Tensor",
        OpCategory::Pointwise, P::None,
        [](const CallArgs& c) {
          TensorMeta m = TensorMeta::contiguous(c.tensor("self").sizes, c.get("dtype").dtype(),
                                                c.tensor("self").device);
          return m;
        });
}

}  // namespace stax
