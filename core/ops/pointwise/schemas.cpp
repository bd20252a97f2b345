// Pointwise ops: unary math, binary arithmetic (.Tensor and .Scalar), comparisons, logical ops,
// where, clamp and dtype conversion. Shapes broadcast; dtypes follow PyTorch's promotion modes.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/ops/common/infer_helpers.h"
#include "core/ops/nn/params.h"
#include "core/ops/registration.h"

namespace stax {
namespace {

std::string dt(DType t) { return std::string(dtype_name(t)); }

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

TensorMeta relu_rule(const CallArgs& c) {
  if (c.tensor("self").dtype == DType::Bool) c.fail("bool inputs are not supported for relu");
  return infer::elementwise(c, {"self"}, Promotion::Default);
}

// pow.Tensor_Scalar: as torch, no bool result and no negative integer power of integers.
TensorMeta pow_tensor_scalar_rule(const CallArgs& c) {
  TensorMeta m = infer::elementwise(c, {"self", "exponent"}, Promotion::Default);
  if (m.dtype == DType::Bool) c.fail("'pow' is not defined for bool tensors");
  const Arg& e = c.get("exponent");
  if (!is_floating(c.tensor("self").dtype) && (e.is_int() || e.is_bool()) && e.to_int() < 0)
    c.fail("integers to negative integer powers are not allowed (exponent " + arg_str(e) + ")");
  return m;
}

// lerp: end must have self's dtype, as torch.
TensorMeta lerp_rule(const CallArgs& c) {
  DType t = c.tensor("self").dtype;
  if (c.tensor("end").dtype != t)
    c.fail("expected dtype " + dt(t) + " for `end`, but got dtype " + dt(c.tensor("end").dtype));
  if (c.get("weight").is_node() && c.tensor("weight").dim() > 0 && c.tensor("weight").dtype != t)
    c.fail("expected dtype " + dt(t) + " for `weight`, but got dtype " +
           dt(c.tensor("weight").dtype) + " (a 0-d weight may differ, as in torch)");
  std::vector<std::string> params{"self", "end"};
  if (c.get("weight").is_node()) params.push_back("weight");
  return infer::floating(params)(c);
}

// sub / rsub: as torch, no operand may be bool (a bool Scalar `other` included).
void check_sub_operands(const CallArgs& c) {
  const Arg& o = c.get("other");
  if (c.tensor("self").dtype == DType::Bool || o.is_bool() ||
      (o.is_node() && c.tensor("other").dtype == DType::Bool))
    c.fail("subtraction, the `-` operator, with a bool tensor is not supported; use "
           "logical_xor or logical_not");
}

// gelu: a floating rule whose `approximate` is 'none' or 'tanh'.
TensorMeta gelu_rule(const CallArgs& c) {
  const std::string& a = c.get("approximate").str();
  if (a != "none" && a != "tanh")
    c.fail("approximate argument must be either none or tanh, got '" + a + "'");
  return floating_rule({"self"})(c);
}

// add / sub: self +- alpha * other. Like torch: a floating alpha needs a floating result, a bool
// alpha a bool result, and bool tensors cannot be subtracted.
InferFn alpha_rule(std::string base) {
  return [base = std::move(base)](const CallArgs& c) {
    TensorMeta m = infer::elementwise(c, {"self", "other"}, c.op().promotion);
    if (c.get("alpha").is_double() && !is_floating(m.dtype))
      c.fail("for integral input tensors, argument alpha must not be a floating point number");
    if (c.get("alpha").is_bool() && m.dtype != DType::Bool)
      c.fail("a bool alpha is only supported for bool results, got " + dt(m.dtype));
    if (base == "sub") check_sub_operands(c);
    return m;
  };
}

using P = Promotion;
using C = OpCategory;


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

TensorMeta same_as_self(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  return TensorMeta::contiguous(in.sizes, in.dtype, in.device);
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

TensorMeta round_decimals_rule(const CallArgs& c) {
  if (c.tensor("self").dtype == DType::Bool) c.fail("round is not implemented for 'bool' tensors");
  if (!is_floating(c.tensor("self").dtype) && c.get("decimals").to_int() != 0)
    c.fail("round_cpu not implemented for '" + dt(c.tensor("self").dtype) +
           "' with decimals != 0");
  return same_as_self(c);
}

TensorMeta heaviside_rule(const CallArgs& c) {
  if (c.tensor("self").dtype != c.tensor("values").dtype)
    c.fail("heaviside is not yet implemented for tensors with different dtypes");
  return infer::elementwise(c, {"self", "values"}, P::Default);  // bool too, as torch
}

TensorMeta int_binary(const CallArgs& c) {
  TensorMeta m = infer::elementwise(c, {"self", "other"}, P::Default);
  if (is_floating(m.dtype) || m.dtype == DType::Bool)
    c.fail("not implemented for '" + dt(m.dtype) + "' (integer tensors only, as in torch)");
  return m;
}

// exp log sin ... abs relu sign floor ... neg gelu silu.
void add_unary_ops(OpRegistry& r) {
  auto unary = [&](const char* name, P mode, bool differentiable = true) {
    auto& d = r.add(std::string(name) + "(Tensor self) -> Tensor", OpCategory::Pointwise, mode,
                    infer::elementwise_rule({"self"}));
    d.differentiable = differentiable;
  };
  // Float-valued math: integers promote to float32 (torch's INT_TO_FLOAT).
  for (const char* n : {"exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt",
                        "sin", "cos", "tan", "tanh", "sigmoid", "erf", "reciprocal"})
    unary(n, P::IntToFloat);
  unary("abs", P::Default);
  r.add("relu(Tensor self) -> Tensor", OpCategory::Pointwise, P::Default, relu_rule);
  // Rounding has no bool kernels (as in torch): rejected when the graph is built. sign of bool
  // is the tensor itself (torch 2.x).
  for (const char* n : {"sign", "floor", "ceil", "round", "trunc"}) {
    bool takes_bool = std::string(n) == "sign";
    r.add(std::string(n) + "(Tensor self) -> Tensor", OpCategory::Pointwise, P::Default,
          [takes_bool](const CallArgs& c) {
            if (c.tensor("self").dtype == DType::Bool && !takes_bool)
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
  // gelu and silu are formulas (core/ops/pointwise/formulas.h) on floating inputs.
  r.add("gelu(Tensor self, *, str approximate=\"none\") -> Tensor", OpCategory::Pointwise,
        P::Default, gelu_rule)
      .allow_positional("approximate");  // Listing 5.2: (%matmul, 'none')
  // silu stays Composite (decompositions.cpp: x * sigmoid(x), the same sequence as the formula).
  r.add("silu(Tensor self) -> Tensor", OpCategory::Composite, P::Default, floating_rule({"self"}));
}

// add sub mul div remainder pow floor_divide, the comparisons, maximum minimum, logical_and / or.
void add_arithmetic_ops(OpRegistry& r) {
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
        P::Default, pow_tensor_scalar_rule);
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
}

// where (tensor and number branches), clamp and the dtype conversions _to_copy / to.dtype.
void add_selection_and_cast_ops(OpRegistry& r) {
  // The branches' dtypes promote (Python numbers as Python scalars do); the condition only
  // broadcasts (it takes no part in promotion: bool with uint16 branches is fine, as torch).
  auto where_rule = [](const CallArgs& c) {
    const TensorMeta& cond = c.tensor("condition");
    if (cond.dtype != DType::Bool)
      c.fail("condition must be a bool tensor, got " + std::string(dtype_name(cond.dtype)));
    TensorMeta m = infer::elementwise(c, {"self", "other"}, P::Default);
    bool branch_tensor = c.get("self").is_node() || c.get("other").is_node();
    Shape shape = branch_tensor ? broadcast_shapes(cond.sizes, m.sizes, c.where()) : cond.sizes;
    return TensorMeta::contiguous(shape, m.dtype, cond.device);
  };
  r.add("where.self(Tensor condition, Tensor self, Tensor other) -> Tensor", OpCategory::Pointwise,
        P::None, where_rule);
  // where with Python-number branches (torch's where.ScalarSelf / ScalarOther / Scalar).
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
          TensorMeta m = infer::elementwise(c, {"self", "min", "max"}, P::Default);
          infer::check_clamp_max(c, "max", m.dtype);
          return m;
        });
  // make_fx records .to(dtype) / .float() / .double() as _to_copy: to.dtype when a dtype is given,
  // else a copy (layout / device / memory_format are accepted and ignored, as by clone).
  r.add("_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
        "bool? pin_memory=None, bool non_blocking=False, MemoryFormat? memory_format=None) -> Tensor",
        OpCategory::Pointwise, P::None, [](const CallArgs& c) {
          const TensorMeta& in = c.tensor("self");
          DType t = c.get("dtype").is_dtype() ? c.get("dtype").dtype() : in.dtype;
          return TensorMeta::contiguous(in.sizes, t, in.device);
        }).complex = true;  // real <-> complex conversions (torch.fft.fftn of a real input)
  // Type conversion (torch's _to_copy / convert_element_type).
  r.add("to.dtype(Tensor self, ScalarType dtype, bool non_blocking=False, bool copy=False, "
        "MemoryFormat? memory_format=None) -> Tensor",
        OpCategory::Pointwise, P::None,
        [](const CallArgs& c) {
          TensorMeta m = TensorMeta::contiguous(c.tensor("self").sizes, c.get("dtype").dtype(),
                                                c.tensor("self").device);
          return m;
        }).complex = true;
}

// Composite formulas of torch's Python-level ops: max / min.other, addcmul, lerp, div with a
// rounding mode, the clamp variants.
void add_composite_formulas(OpRegistry& r) {
  r.add("max.other(Tensor self, Tensor other) -> Tensor", C::Composite, P::Default,
        infer::elementwise_rule({"self", "other"}));

  r.add("min.other(Tensor self, Tensor other) -> Tensor", C::Composite, P::Default,
        infer::elementwise_rule({"self", "other"}));

  r.add("addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor",
        C::Composite, P::Default, [](const CallArgs& c) {
          TensorMeta m = numeric({"self", "tensor1", "tensor2"})(c);
          // torch's kernel converts value to an integer result dtype, checked (-1.5 into uint8
          // fails; a float16 result takes 1e6).
          if (!is_floating(m.dtype)) infer::check_scalar_fits(c, "value", m.dtype);
          return m;
        });

  r.add("addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor",
        C::Composite, P::Default, [](const CallArgs& c) {
          TensorMeta m = infer::elementwise(c, {"self", "tensor1", "tensor2"}, P::Default);
          // torch: integer tensor1 and tensor2 are an error whatever self's dtype.
          if (!is_floating(m.dtype) || (!is_floating(c.tensor("tensor1").dtype) &&
                                        !is_floating(c.tensor("tensor2").dtype)))
            c.fail("Integer division with addcdiv is no longer supported; use addcmul with "
                   "a floating-point dtype");
          return m;
        });

  r.add("lerp.Scalar(Tensor self, Tensor end, Scalar weight) -> Tensor", C::Composite, P::Default,
        lerp_rule);

  r.add("lerp.Tensor(Tensor self, Tensor end, Tensor weight) -> Tensor", C::Composite, P::Default,
        lerp_rule);

  r.add("div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor",
        C::Composite, P::None, div_mode_rule());

  r.add("div.Scalar_mode(Tensor self, Scalar other, *, str? rounding_mode) -> Tensor",
        C::Composite, P::None, div_mode_rule());

  r.add("clamp.Tensor(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor", C::Composite,
        P::None, clamp_tensor_rule);

  r.add("clamp_min(Tensor self, Scalar min) -> Tensor", C::Composite, P::Default,
        numeric({"self", "min"}));

  r.add("clamp_max(Tensor self, Scalar max) -> Tensor", C::Composite, P::Default,
        [](const CallArgs& c) {
          TensorMeta m = numeric({"self", "max"})(c);
          infer::check_clamp_max(c, "max", m.dtype);
          return m;
        });

  // The Tensor forms are maximum / minimum (bool too, as torch); the Scalar ones are not for bool.
  r.add("clamp_min.Tensor(Tensor self, Tensor min) -> Tensor", C::Composite, P::Default,
        infer::elementwise_rule({"self", "min"}));

  r.add("clamp_max.Tensor(Tensor self, Tensor max) -> Tensor", C::Composite, P::Default,
        infer::elementwise_rule({"self", "max"}));
}

// fmod and the bitwise ops: interpreter kernels (scalar semantics of scalar_ops.hpp).
void add_integer_ops(OpRegistry& r) {
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
    // A number shifted by a tensor: the .Tensor op on a full tensor of the result dtype.
    r.add(std::string(b) + ".Scalar_Tensor(Scalar self, Tensor other) -> Tensor", C::Composite,
          P::Default, no_bool)
        .differentiable = false;
  }
  for (const char* b : {"bitwise_and", "bitwise_or", "bitwise_xor"})
    r.add(std::string(b) + ".Scalar_Tensor(Scalar self, Tensor other) -> Tensor", C::Composite,
          P::Default, integral({"self", "other"}))
        .differentiable = false;

  // Python's operators on tensors (`x << 2`, `a & b` record __lshift__ / __and__ ...): the
  // bitwise ops themselves (Composite).
  for (const char* b : {"__and__", "__or__", "__xor__", "__lshift__", "__rshift__"}) {
    std::string name = b;
    bool shift = name == "__lshift__" || name == "__rshift__";
    InferFn rule = [shift](const CallArgs& c) {
      TensorMeta m = integral({"self", "other"})(c);
      // torch's shifts check each operand: a bool input or shift value is refused even where the
      // promoted dtype is an integer (bool << int64).
      if (shift && (c.tensor("self").dtype == DType::Bool ||
                    (c.get("other").is_node() && c.tensor("other").dtype == DType::Bool)))
        c.fail("shifts are not implemented for 'bool' tensors (torch: expected an integral dtype)");
      return m;
    };
    r.add(name + ".Tensor(Tensor self, Tensor other) -> Tensor", C::Composite, P::Default, rule)
        .differentiable = false;
    r.add(name + ".Scalar(Tensor self, Scalar other) -> Tensor", C::Composite, P::Default, rule)
        .differentiable = false;
  }
}

// The predicates (Composite): logical_xor, isinf isfinite ..., nan_to_num.
void add_predicates(OpRegistry& r) {
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

// The rest of the unary and binary math: asin ... lgamma, atan2, hypot, copysign, rsub, logit,
// xlogy, fmax, round.decimals, gcd / lcm.
void add_extended_math_ops(OpRegistry& r) {
  {
    // ---- base unary math (interpreter kernels; float results, integers promote). The special
    // functions torch gives no derivative (Bessel, Airy) are not differentiable here either.
    auto unary = [&](const char* n, const char* param, bool differentiable) {
      infer::add_unary_math(r, n, param, differentiable);
    };

    // ---- pointwise formulas (Composite)
    auto comp = [&](const std::string& schema, Promotion p, InferFn f) -> OpDef& {
      return r.add(schema, C::Composite, p, std::move(f));
    };

    auto rsub_rule = [](const CallArgs& c) {
      TensorMeta m = infer::elementwise(c, {"self", "other"}, P::Default);
      if (c.get("alpha").is_double() && !is_floating(m.dtype))
        c.fail("for integral input tensors, argument alpha must not be a floating point number");
      if (c.get("alpha").is_bool() && m.dtype != DType::Bool)
        c.fail("a bool alpha is only supported for bool results, got " + dt(m.dtype));
      check_sub_operands(c);
      return m;
    };

    for (const char* n :
           {"asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erfc", "lgamma"})
      unary(n, "self", true);

    r.add("signbit(Tensor self) -> Tensor", C::Pointwise, P::AlwaysBool,
          infer::elementwise_rule({"self"}))
        .differentiable = false;

    // ---- base binary math
    r.add("atan2(Tensor self, Tensor other) -> Tensor", C::Pointwise, P::IntToFloat,
          floating({"self", "other"}, P::IntToFloat));

    // atan2.out (Core ATen lists this out= overload): the functional value, atan2(self, other)
    // converted to out's dtype, of the broadcast shape (torch resizes out to it). Writing it back
    // into `out` is the caller's (the parser's functionalization of out= forms).
    r.add("atan2.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)", C::Composite,
          P::None, [](const CallArgs& c) {
            const TensorMeta& out = c.tensor("out");
            Shape s = broadcast_shapes(c.tensor("self").sizes, c.tensor("other").sizes, c.where());
            if (!is_floating(out.dtype))
              c.fail("result type Float can't be cast to the desired output type " +
                     std::string(dtype_name(out.dtype)));
            return TensorMeta::contiguous(s, out.dtype, out.device);
          });

    r.add("hypot(Tensor self, Tensor other) -> Tensor", C::Pointwise, P::Default,
          floating({"self", "other"}));

    r.add("copysign.Tensor(Tensor self, Tensor other) -> Tensor", C::Pointwise, P::IntToFloat,
          floating({"self", "other"}, P::IntToFloat));

    r.add("copysign.Scalar(Tensor self, Scalar other) -> Tensor", C::Pointwise, P::IntToFloat,
          floating({"self", "other"}, P::IntToFloat));

    r.add("nextafter(Tensor self, Tensor other) -> Tensor", C::Pointwise, P::Default,
          floating({"self", "other"}));

    comp("rsub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", P::Default,
         rsub_rule);

    comp("rsub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor", P::Default, rsub_rule);

    for (const char* n : {"deg2rad", "rad2deg"})
      comp(std::string(n) + "(Tensor self) -> Tensor", P::IntToFloat, floating({"self"}, P::IntToFloat));

    comp("frac(Tensor self) -> Tensor", P::Default, floating({"self"}));

    // sgn of bool is the tensor itself (torch 2.x); sign proper keeps bool out
    comp("sgn(Tensor self) -> Tensor", P::Default, infer::elementwise_rule({"self"}));

    comp("sinc(Tensor self) -> Tensor", P::IntToFloat, floating({"self"}, P::IntToFloat));

    // angle of a real tensor: 0 or pi (NaN stays NaN); integers give the default float
    comp("angle(Tensor self) -> Tensor", P::IntToFloat, floating({"self"}, P::IntToFloat));

    // ldexp(self, other) = self * 2^other (torch's formula: a multiply by pow(2, other))
    comp("ldexp.Tensor(Tensor self, Tensor other) -> Tensor", P::IntToFloat,
         floating({"self", "other"}, P::IntToFloat));

    comp("logit(Tensor self, float? eps=None) -> Tensor", P::IntToFloat,
         floating({"self"}, P::IntToFloat));

    comp("heaviside(Tensor self, Tensor values) -> Tensor", P::Default, heaviside_rule)
        .differentiable = false;

    comp("logaddexp(Tensor self, Tensor other) -> Tensor", P::Default, floating({"self", "other"}));

    comp("logaddexp2(Tensor self, Tensor other) -> Tensor", P::Default, floating({"self", "other"}));

    comp("xlogy.Tensor(Tensor self, Tensor other) -> Tensor", P::IntToFloat,
         floating({"self", "other"}, P::IntToFloat));

    for (const char* n : {"fmax", "fmin"})  // bool too, as torch
      comp(std::string(n) + "(Tensor self, Tensor other) -> Tensor", P::Default,
           infer::elementwise_rule({"self", "other"}));

    comp("round.decimals(Tensor self, *, int decimals) -> Tensor", P::None, round_decimals_rule);
  }
  for (const char* n : {"gcd", "lcm"})
    r.add(std::string(n) + "(Tensor self, Tensor other) -> Tensor", C::Pointwise, P::Default,
          int_binary)
        .differentiable = false;
}

}  // namespace

void register_pointwise_ops(OpRegistry& r) {
  add_unary_ops(r);
  add_arithmetic_ops(r);
  add_selection_and_cast_ops(r);
  add_composite_formulas(r);
  add_integer_ops(r);
  add_predicates(r);
  add_extended_math_ops(r);
}

}  // namespace stax
