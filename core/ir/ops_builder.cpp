#include "core/ir/ops_builder.h"

#include <cassert>
#include <cmath>

#include "core/support/error.h"

namespace stax {

OpsBuilder::OpsBuilder(std::vector<int64_t> ranges, std::vector<int64_t> reduction_ranges) {
  body_.ranges = std::move(ranges);
  body_.reduction_ranges = std::move(reduction_ranges);
  // A recorded body has a handful of ops: room for 8 up front (what doubling from one gives a
  // body of five to eight ops) instead of growing through 1, 2, 4.
  body_.ops.reserve(8);
  sym_.reserve(8);
}

namespace {
bool is_int(DType t) { return is_integral(t); }
}  // namespace

Val OpsBuilder::push(LoopOp op, std::optional<Expr> symbolic) {
  for (int32_t operand : op.operands)
    assert(operand < static_cast<int32_t>(body_.ops.size()) && "operands must be earlier ops");
  body_.ops.push_back(std::move(op));
  sym_.push_back(std::move(symbolic));
  return Val{static_cast<int32_t>(body_.ops.size() - 1)};
}

Val OpsBuilder::unary(Opcode code, Val x) {
  assert(is_unary_op(code));
  LoopOp op;
  op.opcode = code;
  op.dtype = op_result_dtype(code, dtype(x));
  op.operands[0] = x.id;
  std::optional<Expr> sym;
  if (code == Opcode::neg && is_int(op.dtype) && symbolic(x)) sym = -*symbolic(x);
  return push(std::move(op), sym);
}

Val OpsBuilder::binary(Opcode code, Val a, Val b) {
  assert(is_binary_op(code) || is_compare_op(code));
  if (dtype(a) != dtype(b))
    throw Error("lowering", std::string(opcode_name(code)),
                "operands of different dtypes (" + std::string(dtype_name(dtype(a))) + ", " +
                    std::string(dtype_name(dtype(b))) + "): a lowering rule must cast first");
  LoopOp op;
  op.opcode = code;
  op.dtype = op_result_dtype(code, dtype(a));
  op.operands[0] = a.id;
  op.operands[1] = b.id;
  std::optional<Expr> sym;
  auto sa = symbolic(a), sb = symbolic(b);
  if (is_int(op.dtype) && sa && sb) {
    bool positive_divisor = sb->is_const() && sb->value() > 0;
    switch (code) {
      case Opcode::add:
        sym = *sa + *sb;
        break;
      case Opcode::sub:
        sym = *sa - *sb;
        break;
      case Opcode::mul:
        sym = *sa * *sb;
        break;
      case Opcode::floordiv:
        if (positive_divisor) sym = stax::floordiv(*sa, *sb);
        break;
      case Opcode::mod:
        if (positive_divisor) sym = stax::mod(*sa, *sb);
        break;
      case Opcode::minimum:
        sym = stax::min(*sa, *sb);
        break;
      case Opcode::maximum:
        sym = stax::max(*sa, *sb);
        break;
      default:
        break;
    }
  }
  return push(std::move(op), sym);
}

Val OpsBuilder::constant(ScalarValue value, DType t) {
  LoopOp op;
  op.opcode = Opcode::constant;
  op.dtype = t;
  // Both fields hold the value in the dtype's domain (the kernel bridge reads imm_i64 for integer
  // and bool dtypes, imm_f64 for floating ones); `integral` keeps the literal's spelling.
  if (!is_floating(t) && !value.integral)
    value.i = is_bool(t) ? (value.f != 0.0)
                         : (std::isfinite(value.f) && std::fabs(value.f) < 9.2e18
                                ? static_cast<int64_t>(value.f)
                                : 0);
  if (is_bool(t) && value.integral) value.i = value.i != 0;
  op.imm = value;
  std::optional<Expr> sym;
  if (is_int(t)) sym = Expr(value.i);
  return push(std::move(op), sym);
}

Val OpsBuilder::load(const std::string& buffer, DType t, const Expr& index, const Buffer* source) {
  LoopOp op;
  op.opcode = Opcode::load;
  op.dtype = t;
  op.buffer = buffer;
  op.source = source;
  op.index = body_.add_index(index);
  return push(std::move(op));
}

Val OpsBuilder::masked_load(const std::string& buffer, DType t, const Expr& index, Val mask,
                            ScalarValue other, const Buffer* source) {
  assert(dtype(mask) == DType::Bool);
  LoopOp op;
  op.opcode = Opcode::masked_load;
  op.dtype = t;
  op.buffer = buffer;
  op.source = source;
  op.index = body_.add_index(index);
  op.operands[0] = mask.id;
  op.imm = other;
  return push(std::move(op));
}

Val OpsBuilder::index_expr(const Expr& index, DType t) {
  LoopOp op;
  op.opcode = Opcode::index_expr;
  op.dtype = t;
  op.index = body_.add_index(index);
  return push(std::move(op), is_int(t) ? std::optional<Expr>(index) : std::nullopt);
}

Val OpsBuilder::to_dtype(Val x, DType t) {
  if (dtype(x) == t) return x;
  LoopOp op;
  op.opcode = Opcode::to_dtype;
  op.dtype = t;
  op.operands[0] = x.id;
  std::optional<Expr> sym;
  if (is_int(t) && is_int(dtype(x)) && dtype_size(t) >= dtype_size(dtype(x))) sym = symbolic(x);
  return push(std::move(op), sym);
}

Val OpsBuilder::where(Val cond, Val a, Val b) {
  if (dtype(cond) != DType::Bool || dtype(a) != dtype(b))
    throw Error("lowering", "where", "where needs a bool condition and branches of one dtype");
  LoopOp op;
  op.opcode = Opcode::where;
  op.dtype = dtype(a);
  op.operands = {cond.id, a.id, b.id};
  return push(std::move(op));
}

Expr OpsBuilder::indirect_indexing(Val x, int64_t size, bool check, bool wrap_negative) {
  // Index propagation: a provably in-range symbolic index needs neither wrapping nor a check.
  if (auto e = symbolic(x); e && bound(*e).within(0, size - 1)) return *e;
  LoopOp op;
  op.opcode = Opcode::indirect_indexing;
  op.dtype = DType::Int64;
  op.operands[0] = x.id;
  op.size = size;
  op.check = check;
  op.wrap_negative = wrap_negative;
  Val v = push(std::move(op));
  return Expr::indirect(v.id, size);
}

Val OpsBuilder::reduction(ReductionType type, DType t, Val value) {
  LoopOp op;
  op.opcode = Opcode::reduction;
  op.dtype = t;
  op.reduction = type;
  op.operands[0] = value.id;
  return push(std::move(op));
}

void OpsBuilder::store(const std::string& buffer, const Expr& index, Val value) {
  LoopOp op;
  op.opcode = Opcode::store;
  op.dtype = dtype(value);
  op.buffer = buffer;
  op.index = body_.add_index(index);
  op.operands[0] = value.id;
  push(std::move(op));
}

void OpsBuilder::store_reduction(const std::string& buffer, const Expr& index, Val value) {
  LoopOp op;
  op.opcode = Opcode::store_reduction;
  op.dtype = dtype(value);
  op.buffer = buffer;
  op.index = body_.add_index(index);
  op.operands[0] = value.id;
  push(std::move(op));
}

}  // namespace stax
