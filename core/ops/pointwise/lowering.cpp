// Lowering rules of pointwise ops (seed §6.2): every rule is the pointwise() helper of Listing 6.1
// with a body of loop-level ops. Composite formulas (gelu, silu, the *_backward ops, add/sub with
// alpha, clamp) come from core/ops/pointwise/formulas.h, the same templates the reference
// interpreter runs, so compiled code performs exactly the interpreter's op sequence.
//
// Dtypes: an op computes in computation_dtype(result dtype) (half types in float32, integers in
// int64); comparisons and logical ops compute in the promoted input dtype and give bool.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/ops/pointwise/formulas.h"
#include "core/ops/common/lowering_helpers.h"
#include "core/ops/registration.h"

namespace stax {

namespace {

std::vector<Operand> operands(GraphLowering& g, const Node& n,
                              const std::vector<std::string>& params) {
  std::vector<Operand> out;
  for (const std::string& p : params) {
    const Arg& a = n.arg(p);
    if (a.is_node())
      out.emplace_back(g.value(a.node()));
    else
      out.emplace_back(scalar_of(a));
  }
  return out;
}

// Computes in the result dtype's computation dtype.
LoweringRule elementwise(
    std::vector<std::string> params,
    std::function<Val(OpsBuilder&, const std::vector<Val>&, const Node&, DType)> fn) {
  return [params, fn](GraphLowering& g, const Node& n) {
    DType out = n.meta().dtype, dt = computation_dtype(out);
    return pointwise(
        g, operands(g, n, params), dt, out,
        [fn, &n, dt](OpsBuilder& o, const std::vector<Val>& a) { return fn(o, a, n, dt); });
  };
}

// Computes in the promoted inputs' computation dtype and yields bool.
LoweringRule to_bool(std::vector<std::string> params, Opcode op) {
  return [params, op](GraphLowering& g, const Node& n) {
    DType dt = computation_dtype(promoted_dtype(n, params));
    return pointwise(g, operands(g, n, params), dt, n.meta().dtype,
                     [op](OpsBuilder& o, const std::vector<Val>& a) {
                       return a.size() == 1 ? o.unary(op, a[0]) : o.binary(op, a[0], a[1]);
                     });
  };
}

LoweringRule unary(Opcode op) {
  return elementwise({"self"}, [op](OpsBuilder& o, const std::vector<Val>& a, const Node&, DType) {
    return o.unary(op, a[0]);
  });
}

LoweringRule binary(Opcode op) {
  return elementwise({"self", "other"}, [op](OpsBuilder& o, const std::vector<Val>& a, const Node&,
                                             DType) { return o.binary(op, a[0], a[1]); });
}

// add / sub: self ± alpha * other.
LoweringRule add_sub(bool sub) {
  return elementwise({"self", "other"}, [sub](OpsBuilder& o, const std::vector<Val>& a,
                                              const Node& n, DType dt) {
    double alpha = n.arg("alpha").to_double();
    return sub ? formulas::sub(o, a[0], a[1], alpha, dt) : formulas::add(o, a[0], a[1], alpha, dt);
  });
}

// floor_divide / remainder. Integers: torch raises ZeroDivisionError for a zero divisor, which a
// fused loop cannot report, so an integer division lowers only by a non-zero number; by a tensor
// (or by 0) it declines and runs as the counted fallback, whose interpreter kernel checks the
// divisor and raises (docs/dtypes.md). Floating values lower as before.
LoweringRule integer_division(Opcode op) {
  LoweringRule lowered = binary(op);
  return [lowered](GraphLowering& g, const Node& n) -> IRPtr {
    if (computation_dtype(n.meta().dtype) == DType::Int64) {
      const Arg& other = n.arg("other");
      if (other.is_node() || other.to_double() == 0) return nullptr;
    }
    return lowered(g, n);
  };
}

// maximum / minimum. uint64 is held as its bits in int64: adding 2^63 (wrapping) flips the top
// bit, which maps unsigned order onto signed order, so the int64 op between flipped values,
// flipped back, is the unsigned one (as the interpreter's kernel).
LoweringRule unsigned_ordering(Opcode op) {
  return elementwise({"self", "other"}, [op](OpsBuilder& o, const std::vector<Val>& a,
                                             const Node& n, DType dt) {
    if (n.meta().dtype != DType::UInt64) return o.binary(op, a[0], a[1]);
    Val top = o.constant(ScalarValue::integer(std::numeric_limits<int64_t>::min()), dt);
    Val r = o.binary(op, o.add(a[0], top), o.add(a[1], top));
    return o.add(r, top);
  });
}

// Shifts on integers (computed in int64, wrapped to the result's width by the store), from
// ops.def's arithmetic, as stax_scalar::bitwise_left_shift / right_shift define them:
//   a << b = a * 2^b (wrapping) for 0 <= b < 64, else 0;
//   a >> b = floor(a / 2^b) for 0 <= b < 63, else the sign fill (a < 0 ? -1 : 0).
// Bool has no shifts (the rule declines; the schema refuses it first).
LoweringRule shift(bool left) {
  return [left](GraphLowering& g, const Node& n) -> IRPtr {
    DType out = n.meta().dtype, dt = computation_dtype(out);
    if (dt != DType::Int64) return nullptr;
    return pointwise(g, operands(g, n, {"self", "other"}), dt, out,
                     [left, dt](OpsBuilder& o, const std::vector<Val>& v) {
                       auto k = [&](int64_t c) { return o.constant(ScalarValue::integer(c), dt); };
                       Val a = v[0], b = v[1];
                       Val negative = o.lt(b, k(0));
                       if (left) {
                         Val in_range = o.logical_and(o.logical_not(negative), o.lt(b, k(64)));
                         Val p = o.pow(k(2), o.minimum(o.maximum(b, k(0)), k(63)));
                         return o.where(in_range, o.mul(a, p), k(0));
                       }
                       Val bb = o.where(negative, k(63), o.minimum(b, k(63)));
                       Val fill = o.where(o.lt(a, k(0)), k(-1), k(0));
                       return o.where(o.eq(bb, k(63)), fill, o.floordiv(a, o.pow(k(2), bb)));
                     });
  };
}

// bitwise_and / or / xor / not. Bool: the logical ops (xor: ne). Integers: bitwise_not is
// -x - 1 (two's complement, wrapping); and / or / xor are ops.def's bitwise opcodes (ABI 1.8) on
// the int64 computation values, whose low bits the store narrows to the result's width (uint64:
// its bits). A backend whose plugin predates them (LoweringOptions::bitwise_opcodes false)
// declines, and the op runs as a counted fallback.
LoweringRule bitwise(const char* which) {
  std::string w = which;
  return [w](GraphLowering& g, const Node& n) -> IRPtr {
    DType out = n.meta().dtype, dt = computation_dtype(out);
    bool unary = w == "not";
    if (dt == DType::Bool) {
      Opcode op = unary ? Opcode::logical_not
                        : (w == "and" ? Opcode::logical_and
                                      : (w == "or" ? Opcode::logical_or : Opcode::ne));
      return pointwise(g, operands(g, n, unary ? std::vector<std::string>{"self"}
                                               : std::vector<std::string>{"self", "other"}),
                       dt, out, [op, unary](OpsBuilder& o, const std::vector<Val>& v) {
                         return unary ? o.unary(op, v[0]) : o.binary(op, v[0], v[1]);
                       });
    }
    if (dt != DType::Int64) return nullptr;
    if (unary)
      return pointwise(g, operands(g, n, {"self"}), dt, out,
                       [dt](OpsBuilder& o, const std::vector<Val>& v) {
                         return o.sub(o.neg(v[0]), o.constant(ScalarValue::integer(1), dt));
                       });
    if (!g.options().bitwise_opcodes) return nullptr;
    Opcode op = w == "and" ? Opcode::bitwise_and
                           : (w == "or" ? Opcode::bitwise_or : Opcode::bitwise_xor);
    return pointwise(g, operands(g, n, {"self", "other"}), dt, out,
                     [op](OpsBuilder& o, const std::vector<Val>& v) {
                       return o.binary(op, v[0], v[1]);
                     });
  };
}

bool tanh_approximation(const Node& n) { return n.arg("approximate").str() == "tanh"; }

// The identity copy (clone, contiguous): no conversion at all.
IRPtr copy(GraphLowering& g, const Node& n) {
  IRPtr x = g.input(n, "self");
  return pointwise(g, {Operand(x, x->dtype())}, x->dtype(), n.meta().dtype,
                   [](OpsBuilder&, const std::vector<Val>& a) { return a[0]; });
}

// Unary ops, binary arithmetic, comparisons and logical ops (their ops.def opcodes).
void add_arithmetic_rules(LoweringTable& t) {
  // Unary ops named as in ops.def (registered in bulk, §6.2).
#define STAX_UNARY_OP(name)                                                 \
  if (std::string(#name) != "logical_not" && std::string(#name) != "isnan") \
    t.add(std::string(#name) + ".default", unary(Opcode::name));
#include "stax/sdk/ops.def"
  t.add("logical_not.default", to_bool({"self"}, Opcode::logical_not));
  t.add("isnan.default", to_bool({"self"}, Opcode::isnan));

  // Binary arithmetic: .Tensor and .Scalar overloads.
  const std::pair<const char*, Opcode> arith[] = {{"mul", Opcode::mul},
                                                  {"div", Opcode::truediv},
                                                  {"remainder", Opcode::mod}};
  for (const auto& [name, op] : arith)
    for (const char* ov : {".Tensor", ".Scalar"})
      t.add(std::string(name) + ov, op == Opcode::mod ? integer_division(op) : binary(op));
  t.add("floor_divide.default", integer_division(Opcode::floordiv));
  t.add("floor_divide.Scalar", integer_division(Opcode::floordiv));
  for (const char* ov : {"pow.Tensor_Tensor", "pow.Tensor_Scalar", "pow.Scalar"})
    t.add(ov, elementwise({"self", "exponent"},
                          [](OpsBuilder& o, const std::vector<Val>& a, const Node&, DType) {
                            return o.binary(Opcode::pow, a[0], a[1]);
                          }));
  for (const char* ov : {".Tensor", ".Scalar"}) {
    t.add(std::string("add") + ov, add_sub(false));
    t.add(std::string("sub") + ov, add_sub(true));
  }
  t.add("maximum.default", unsigned_ordering(Opcode::maximum));
  t.add("minimum.default", unsigned_ordering(Opcode::minimum));

  // Comparisons and logical ops: bool results.
  const std::pair<const char*, Opcode> cmp[] = {{"eq", Opcode::eq}, {"ne", Opcode::ne},
                                                {"lt", Opcode::lt}, {"le", Opcode::le},
                                                {"gt", Opcode::gt}, {"ge", Opcode::ge}};
  for (const auto& [name, op] : cmp)
    for (const char* ov : {".Tensor", ".Scalar"})
      t.add(std::string(name) + ov, to_bool({"self", "other"}, op));
  t.add("logical_and.default", to_bool({"self", "other"}, Opcode::logical_and));
  t.add("logical_or.default", to_bool({"self", "other"}, Opcode::logical_or));

  // Bitwise ops and shifts (integers and bool).
  for (const char* ov : {".Tensor", ".Scalar"}) {
    t.add(std::string("bitwise_and") + ov, bitwise("and"));
    t.add(std::string("bitwise_or") + ov, bitwise("or"));
    t.add(std::string("bitwise_xor") + ov, bitwise("xor"));
  }
  t.add("bitwise_not.default", bitwise("not"));
  for (const char* ov : {".Tensor", ".Tensor_Scalar"}) {
    t.add(std::string("bitwise_left_shift") + ov, shift(true));
    t.add(std::string("bitwise_right_shift") + ov, shift(false));
  }
}

// where, clamp, the conversions and copies, and the formulas shared with the interpreter (gelu,
// silu and the backward ops of joint graphs).
void add_selection_conversion_and_formula_rules(LoweringTable& t) {
  // where: a bool condition selects between branches in the result's computation dtype.
  for (const char* ov : {"where.self", "where.ScalarSelf", "where.ScalarOther", "where.Scalar"})
    t.add(ov, [](GraphLowering& g, const Node& n) {
      DType out = n.meta().dtype;
      std::vector<Operand> in = operands(g, n, {"condition", "self", "other"});
      in[0].as = DType::Bool;
      return pointwise(
          g, in, computation_dtype(out), out,
          [](OpsBuilder& o, const std::vector<Val>& a) { return o.where(a[0], a[1], a[2]); });
    });

  t.add("clamp.default", elementwise({"self"}, [](OpsBuilder& o, const std::vector<Val>& a,
                                                  const Node& n, DType dt) {
          auto bound = [&](const char* p) -> std::optional<double> {
            const Arg& v = n.arg(p);
            if (v.is_absent()) return std::nullopt;
            return v.to_double();
          };
          return formulas::clamp(o, a[0], bound("min"), bound("max"), dt);
        }));

  // Conversions and copies.
  for (const char* op : {"to.dtype", "_to_copy.default"})
    t.add(op, [](GraphLowering& g, const Node& n) {
      IRPtr x = g.input(n, "self");
      DType dt = computation_dtype(x->dtype());
      DType out = n.meta().dtype;
      bool narrow = out == DType::Int32 || out == DType::Int8 || out == DType::UInt8 ||
                    out == DType::Int16 || out == DType::UInt16;
      if (x->dtype() == DType::UInt64 && is_floating(out))  // the unsigned value, not int64's
        dt = DType::UInt64;
      if (is_floating(dt) && narrow)  // torch on x86: through the 32-bit conversion
        return pointwise(g, {Operand(x, dt)}, dt, out,
                         [dt](OpsBuilder& o, const std::vector<Val>& a) {
                           return formulas::x86_int32_range(o, a[0], dt);
                         });
      return pointwise(g, {Operand(x, dt)}, dt, out,
                       [](OpsBuilder&, const std::vector<Val>& a) { return a[0]; });
    });
  t.add("clone.default", copy);
  t.add("lift_fresh_copy.default", copy);
  t.add("contiguous.default", copy);

  // Composite formulas shared with the interpreter.
  t.add("gelu.default", elementwise({"self"}, [](OpsBuilder& o, const std::vector<Val>& a,
                                                 const Node& n, DType dt) {
          return tanh_approximation(n) ? formulas::gelu_tanh(o, a[0], dt)
                                       : formulas::gelu(o, a[0], dt);
        }));
  t.add("gelu_backward.default",
        elementwise({"grad_output", "self"},
                    [](OpsBuilder& o, const std::vector<Val>& a, const Node& n, DType dt) {
                      return tanh_approximation(n) ? formulas::gelu_tanh_backward(o, a[0], a[1], dt)
                                                   : formulas::gelu_backward(o, a[0], a[1], dt);
                    }));
  t.add("silu.default",
        elementwise({"self"}, [](OpsBuilder& o, const std::vector<Val>& a, const Node&, DType dt) {
          return formulas::silu(o, a[0], dt);
        }));
  t.add("silu_backward.default",
        elementwise({"grad_output", "self"},
                    [](OpsBuilder& o, const std::vector<Val>& a, const Node&, DType dt) {
                      return formulas::silu_backward(o, a[0], a[1], dt);
                    }));
  t.add("sigmoid_backward.default",
        elementwise({"grad_output", "output"},
                    [](OpsBuilder& o, const std::vector<Val>& a, const Node&, DType dt) {
                      return formulas::sigmoid_backward(o, a[0], a[1], dt);
                    }));
  t.add("tanh_backward.default",
        elementwise({"grad_output", "output"},
                    [](OpsBuilder& o, const std::vector<Val>& a, const Node&, DType dt) {
                      return formulas::tanh_backward(o, a[0], a[1], dt);
                    }));
  t.add("threshold_backward.default",
        elementwise({"grad_output", "self"}, [](OpsBuilder& o, const std::vector<Val>& a,
                                                const Node& n, DType dt) {
          return formulas::threshold_backward(o, a[0], a[1], n.arg("threshold").to_double(), dt);
        }));
}

}  // namespace

void register_pointwise_rules(LoweringTable& t) {
  add_arithmetic_rules(t);
  add_selection_conversion_and_formula_rules(t);
}

}  // namespace stax
