// Lowering rules of creation ops: constants and arange are Pointwise nodes without inputs (their
// inner_fn is a constant, or the loop variable itself, seed Example 6.3), so they fuse into users.
// Random ops have no rule: they run as FallbackKernels and are never recomputed.
#include <string>
#include <vector>

#include "core/ops/pointwise/formulas.h"
#include "core/ops/common/lowering_helpers.h"
#include "core/ops/registration.h"

namespace stax {

namespace {

IRPtr filled(GraphLowering& g, const Node& n, ScalarValue value) {
  const TensorMeta& m = n.meta();
  Loader fill = [value, dt = m.dtype](OpsBuilder& b, const Index&) {
    return b.constant(value, dt);
  };
  return g.box(std::make_shared<Pointwise>(m.device, m.dtype, m.sizes, fill), {});
}

LoweringRule fill_rule(std::optional<ScalarValue> fixed) {
  return [fixed](GraphLowering& g, const Node& n) {
    return filled(g, n, fixed ? *fixed : scalar_of(n.arg("fill_value")));
  };
}

// arange: start + step * i0. Integer results are the index expression itself; floating ones are
// computed in float64 and rounded once.
IRPtr arange(GraphLowering& g, const Node& n) {
  const TensorMeta& m = n.meta();
  auto param = [&](const char* p, int64_t dflt) {
    return n.op()->schema.index_of(p) >= 0 ? scalar_of(n.arg(p)) : ScalarValue::integer(dflt);
  };
  ScalarValue start = param("start", 0), step = param("step", 1);
  DType out = m.dtype;
  Loader inner;
  if (!is_floating(out) && start.integral && step.integral) {
    inner = [start, step, out](OpsBuilder& b, const Index& idx) {
      return b.to_dtype(b.index_expr(Expr(start.i) + idx[0] * Expr(step.i), DType::Int64), out);
    };
  } else {
    inner = [start, step, out](OpsBuilder& b, const Index& idx) {
      // Named temporaries: the recording order must not depend on argument evaluation order.
      Val i = b.to_dtype(b.index_expr(idx[0], DType::Int64), DType::Float64);
      Val first = b.constant(start, DType::Float64);
      Val delta = b.constant(step, DType::Float64);
      Val offset = b.mul(i, delta);
      return b.to_dtype(b.add(first, offset), out);
    };
  }
  return g.box(std::make_shared<Pointwise>(m.device, out, m.sizes, inner), {});
}

}  // namespace

void register_creation_rules(LoweringTable& t) {
  t.add("full.default", fill_rule(std::nullopt));
  t.add("full_like.default", fill_rule(std::nullopt));
  t.add("scalar_tensor.default",
        [](GraphLowering& g, const Node& n) { return filled(g, n, scalar_of(n.arg("s"))); });
  for (const char* name : {"zeros.default", "zeros_like.default", "empty.memory_format",
                           "empty_strided.default", "empty_like.default"})
    t.add(name, fill_rule(ScalarValue::integer(0)));
  for (const char* name : {"ones.default", "ones_like.default"})
    t.add(name, fill_rule(ScalarValue::integer(1)));
  for (const char* name : {"arange.default", "arange.start", "arange.start_step"})
    t.add(name, arange);
}

}  // namespace stax
