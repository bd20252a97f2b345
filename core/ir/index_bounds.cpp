#include "core/ir/index_bounds.h"

#include <utility>
#include <vector>

namespace stax {

namespace {

constexpr int64_t kInt32Max = 2147483647;

// The values of an indirect index after its negative-index wrap: x for x >= 0, x + size for x < 0.
Interval wrapped(Interval x, int64_t size) {
  if (x.lo >= 0) return x;
  Interval negative = interval_add({x.lo, x.hi < 0 ? x.hi : -1}, Interval::point(size));
  if (x.hi < 0) return negative;
  return interval_union(negative, {0, x.hi});
}

// Walks index expressions in the shape a printer evaluates them and records whether every
// intermediate value fits int32.
class Int32Fit {
 public:
  explicit Int32Fit(VarIntervals vars) : vars_(std::move(vars)) {}

  bool fits() const { return fits_; }
  Interval note(Interval v) {
    if (!v.within(-kInt32Max, kInt32Max)) fits_ = false;
    return v;
  }

  // `base + e`, evaluated left to right (base == 0: plain `e`).
  void access(const Expr& e, int64_t base) {
    if (base == 0) {
      walk(e);
      return;
    }
    Interval acc = note(Interval::point(base));
    if (e.kind() != ExprKind::Add) {
      note(interval_add(acc, walk(e)));
      return;
    }
    for (size_t k = 0; k < e.args().size(); ++k)
      acc = note(interval_add(acc, term(e.coeffs()[k], e.args()[k])));
    note(interval_add(acc, Interval::point(e.value())));
  }

  Interval walk(const Expr& e) {
    switch (e.kind()) {
      case ExprKind::Const:
      case ExprKind::Var:
        return note(bound(e, vars_));
      case ExprKind::Add: {
        Interval acc = term(e.coeffs()[0], e.args()[0]);
        for (size_t k = 1; k < e.args().size(); ++k)
          acc = note(interval_add(acc, term(e.coeffs()[k], e.args()[k])));
        return note(interval_add(acc, Interval::point(e.value())));
      }
      case ExprKind::Mul:
        return product(e.args().front(), e.args(), 1);
      case ExprKind::FloorDiv:
        return note(interval_floordiv(walk(e.args()[0]), walk(e.args()[1])));
      case ExprKind::Mod:
        return note(interval_mod(walk(e.args()[0]), walk(e.args()[1])));
      case ExprKind::Min:
        return note(interval_min(walk(e.args()[0]), walk(e.args()[1])));
      case ExprKind::Max:
        return note(interval_max(walk(e.args()[0]), walk(e.args()[1])));
    }
    return Interval::unbounded();
  }

 private:
  // c*atom: the atom on its own (tree order) and, printed constant first, c*f1*f2*...
  Interval term(int64_t c, const Expr& atom) {
    Interval a = walk(atom);
    if (c == 1) return a;
    if (atom.kind() != ExprKind::Mul) return note(interval_mul(Interval::point(c), a));
    return product(Interval::point(c), atom.args(), 0);
  }
  // The running products first * factors[from] * factors[from + 1] * ...
  Interval product(const Expr& first, const std::vector<Expr>& factors, size_t from) {
    return product(walk(first), factors, from);
  }
  Interval product(Interval acc, const std::vector<Expr>& factors, size_t from) {
    for (size_t k = from; k < factors.size(); ++k) acc = note(interval_mul(acc, walk(factors[k])));
    return acc;
  }

  VarIntervals vars_;
  bool fits_ = true;
};

bool is_memory_op(Opcode op) {
  return op == Opcode::load || op == Opcode::masked_load || op == Opcode::store ||
         op == Opcode::store_reduction;
}

}  // namespace

LoopBody drop_redundant_index_checks(const LoopBody& body) {
  LoopBody out = body;
  // One pass suffices: clearing a guard leaves the op's value within [0, size), the interval
  // value_ranges gave it while it was checked, so later intervals do not change.
  std::vector<Interval> r = value_ranges(body);
  for (LoopOp& op : out.ops) {
    if (op.opcode != Opcode::indirect_indexing) continue;
    Interval x = r[static_cast<size_t>(op.operands[0])];
    if (x.lo >= 0) op.wrap_negative = false;
    if ((op.wrap_negative ? wrapped(x, op.size) : x).within(0, op.size - 1)) op.check = false;
  }
  return out;
}

int index_bits(const LoopBody& body, const std::function<int64_t(const std::string&)>& offset_of) {
  std::vector<Interval> r = value_ranges(body);
  Int32Fit fit([&r](const Expr& v) -> std::optional<Interval> {
    if (v.var_kind() != VarKind::Indirect) return std::nullopt;
    return r.at(static_cast<size_t>(v.var_index()));
  });
  for (int64_t extent : body.ranges) fit.note({0, extent});
  Interval points = Interval::point(1);
  for (int64_t extent : body.reduction_ranges) {
    fit.note({0, extent});
    points = fit.note(interval_mul(points, Interval::point(extent)));
  }
  for (const LoopOp& op : body.ops) {
    if (is_memory_op(op.opcode)) {
      int64_t offset = offset_of(op.buffer);
      fit.access(body.index_of(op) - Expr(offset), offset);
    } else if (op.opcode == Opcode::index_expr) {
      fit.walk(body.index_of(op));
    }
  }
  return fit.fits() ? 32 : 64;
}

}  // namespace stax
