// Lowering rules of pointwise ops (seed §6.2): every rule is the pointwise() helper of Listing 6.1
// with a body of loop-level ops. Composite formulas (gelu, silu, the *_backward ops, add/sub with
// alpha, clamp) come from core/ops/pointwise/formulas.h, the same templates the reference
// interpreter runs, so compiled code performs exactly the interpreter's op sequence.
//
// Dtypes: an op computes in computation_dtype(result dtype) (half types in float32, integers in
// int64); comparisons and logical ops compute in the promoted input dtype and give bool.
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
    for (const char* ov : {".Tensor", ".Scalar"}) t.add(std::string(name) + ov, binary(op));
  t.add("floor_divide.default", binary(Opcode::floordiv));
  t.add("floor_divide.Scalar", binary(Opcode::floordiv));
  for (const char* ov : {"pow.Tensor_Tensor", "pow.Tensor_Scalar", "pow.Scalar"})
    t.add(ov, elementwise({"self", "exponent"},
                          [](OpsBuilder& o, const std::vector<Val>& a, const Node&, DType) {
                            return o.binary(Opcode::pow, a[0], a[1]);
                          }));
  for (const char* ov : {".Tensor", ".Scalar"}) {
    t.add(std::string("add") + ov, add_sub(false));
    t.add(std::string("sub") + ov, add_sub(true));
  }
  t.add("maximum.default", binary(Opcode::maximum));
  t.add("minimum.default", binary(Opcode::minimum));

  // Comparisons and logical ops: bool results.
  const std::pair<const char*, Opcode> cmp[] = {{"eq", Opcode::eq}, {"ne", Opcode::ne},
                                                {"lt", Opcode::lt}, {"le", Opcode::le},
                                                {"gt", Opcode::gt}, {"ge", Opcode::ge}};
  for (const auto& [name, op] : cmp)
    for (const char* ov : {".Tensor", ".Scalar"})
      t.add(std::string(name) + ov, to_bool({"self", "other"}, op));
  t.add("logical_and.default", to_bool({"self", "other"}, Opcode::logical_and));
  t.add("logical_or.default", to_bool({"self", "other"}, Opcode::logical_or));
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
