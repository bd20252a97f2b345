#include "core/ir/loop_body.h"

#include <algorithm>
#include <cassert>

#include "core/graph/arg.h"

namespace stax {

std::string_view opcode_name(Opcode op) {
  switch (op) {
    case Opcode::constant: return "constant";
    case Opcode::load: return "load";
    case Opcode::masked_load: return "masked_load";
    case Opcode::store: return "store";
    case Opcode::reduction: return "reduction";
    case Opcode::store_reduction: return "store_reduction";
    case Opcode::index_expr: return "index_expr";
    case Opcode::to_dtype: return "to_dtype";
    case Opcode::where: return "where";
    case Opcode::indirect_indexing: return "indirect_indexing";
#define STAX_UNARY_OP(name) case Opcode::name: return #name;
#define STAX_BINARY_OP(name) case Opcode::name: return #name;
#define STAX_COMPARE_OP(name) case Opcode::name: return #name;
#include "stax/sdk/ops.def"
    default:
      return "invalid";
  }
}

std::optional<Opcode> opcode_from_name(std::string_view name) {
  for (int32_t i = 1; i < static_cast<int32_t>(Opcode::num_opcodes); ++i)
    if (opcode_name(static_cast<Opcode>(i)) == name) return static_cast<Opcode>(i);
  return std::nullopt;
}

bool is_unary_op(Opcode op) {
  switch (op) {
#define STAX_UNARY_OP(name) case Opcode::name:
#include "stax/sdk/ops.def"
    return true;
    default:
      return false;
  }
}

bool is_binary_op(Opcode op) {
  switch (op) {
#define STAX_BINARY_OP(name) case Opcode::name:
#include "stax/sdk/ops.def"
    return true;
    default:
      return false;
  }
}

bool is_compare_op(Opcode op) {
  switch (op) {
#define STAX_COMPARE_OP(name) case Opcode::name:
#include "stax/sdk/ops.def"
    return true;
    default:
      return false;
  }
}

DType op_result_dtype(Opcode op, DType operand) {
  if (is_compare_op(op)) return DType::Bool;
  switch (op) {
    case Opcode::logical_not:
    case Opcode::isnan:
    case Opcode::logical_and:
    case Opcode::logical_or:
      return DType::Bool;
    default:
      return operand;
  }
}

std::string_view reduction_type_name(ReductionType r) {
  switch (r) {
    case ReductionType::None:
      return "none";
    case ReductionType::Sum:
      return "sum";
    case ReductionType::Prod:
      return "prod";
    case ReductionType::Max:
      return "max";
    case ReductionType::Min:
      return "min";
    case ReductionType::ArgMax:
      return "argmax";
    case ReductionType::ArgMin:
      return "argmin";
    case ReductionType::Any:
      return "any";
    case ReductionType::All:
      return "all";
  }
  return "?";
}

std::string ScalarValue::str() const { return integral ? std::to_string(i) : double_repr(f); }

int LoopOp::num_operands() const {
  int n = 0;
  while (n < 3 && operands[static_cast<size_t>(n)] >= 0) ++n;
  return n;
}

// ---------------------------------------------------------------------------------------------
// LoopBody

int32_t LoopBody::add_index(const Expr& e) {
  for (size_t i = 0; i < indices.size(); ++i)
    if (indices[i] == e) return static_cast<int32_t>(i);
  indices.push_back(e);
  return static_cast<int32_t>(indices.size() - 1);
}

std::vector<Expr> LoopBody::iter_vars() const {
  std::vector<Expr> v;
  v.reserve(ranges.size());
  for (size_t k = 0; k < ranges.size(); ++k)
    v.push_back(Expr::iter(static_cast<int32_t>(k), ranges[k]));
  return v;
}

std::vector<Expr> LoopBody::reduce_vars() const {
  std::vector<Expr> v;
  v.reserve(reduction_ranges.size());
  for (size_t k = 0; k < reduction_ranges.size(); ++k)
    v.push_back(Expr::reduce(static_cast<int32_t>(k), reduction_ranges[k]));
  return v;
}

ReductionType LoopBody::reduction_type() const {
  for (const LoopOp& op : ops)
    if (op.opcode == Opcode::reduction) return op.reduction;
  return ReductionType::None;
}

int32_t LoopBody::result() const {
  for (const LoopOp& op : ops)
    if (op.opcode == Opcode::store || op.opcode == Opcode::reduction) return op.operands[0];
  return -1;
}

// ---------------------------------------------------------------------------------------------
// Replays

namespace {
std::vector<std::string> distinct(const std::vector<MemoryDep>& deps) {
  std::vector<std::string> out;
  for (const auto& d : deps)
    if (std::find(out.begin(), out.end(), d.buffer) == out.end()) out.push_back(d.buffer);
  return out;
}
}  // namespace

std::vector<std::string> ReadWrites::read_buffers() const { return distinct(reads); }
std::vector<std::string> ReadWrites::write_buffers() const { return distinct(writes); }

std::vector<std::string_view> loaded_buffers(const LoopBody& body) {
  std::vector<std::string_view> out;
  for (const LoopOp& op : body.ops) {
    if (op.opcode != Opcode::load && op.opcode != Opcode::masked_load) continue;
    std::string_view name = op.buffer;
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  return out;
}

ReadWrites read_writes(const LoopBody& body) {
  ReadWrites rw;
  for (const LoopOp& op : body.ops) {
    switch (op.opcode) {
      case Opcode::load:
      case Opcode::masked_load:
        rw.reads.push_back({op.buffer, body.index_of(op)});
        break;
      case Opcode::store:
      case Opcode::store_reduction:
        rw.writes.push_back({op.buffer, body.index_of(op)});
        break;
      default:
        break;
    }
  }
  return rw;
}

OpCounts count_ops(const LoopBody& body) {
  OpCounts c;
  for (const LoopOp& op : body.ops) {
    c.ops.insert(op.opcode);
    if (op.opcode == Opcode::store || op.opcode == Opcode::store_reduction ||
        op.opcode == Opcode::reduction)
      continue;
    ++c.num_ops;
    if (op.opcode == Opcode::load || op.opcode == Opcode::masked_load) {
      ++c.num_loads;
      if (std::find(c.buffers_read.begin(), c.buffers_read.end(), op.buffer) ==
          c.buffers_read.end())
        c.buffers_read.push_back(op.buffer);
    }
  }
  return c;
}

namespace {

std::string tmp(int32_t id) { return "tmp" + std::to_string(id); }
std::string qtmp(int32_t id) { return "'" + tmp(id) + "'"; }
std::string dtype_str(DType t) { return "tensorplay." + std::string(dtype_name(t)); }

// The right-hand side of one op: `ops.add('tmp0', 'tmp1')`.
std::string format_op(const LoopBody& body, const LoopOp& op) {
  std::string name = "ops." + std::string(opcode_name(op.opcode)) + "(";
  auto idx = [&] { return body.index_of(op).str(); };
  switch (op.opcode) {
    case Opcode::constant:
      return name + op.imm.str() + ", " + dtype_str(op.dtype) + ")";
    case Opcode::load:
      return name + "'" + op.buffer + "', " + idx() + ")";
    case Opcode::masked_load:
      return name + "'" + op.buffer + "', " + idx() + ", " + qtmp(op.operands[0]) + ", " +
             op.imm.str() + ")";
    case Opcode::index_expr:
      return name + idx() + ", " + dtype_str(op.dtype) + ")";
    case Opcode::to_dtype:
      return name + qtmp(op.operands[0]) + ", " + dtype_str(op.dtype) + ")";
    case Opcode::indirect_indexing: {
      std::string s = name + qtmp(op.operands[0]) + ", " + std::to_string(op.size);
      if (!op.check) s += ", check=False";
      if (!op.wrap_negative) s += ", wrap_neg=False";
      return s + ")";
    }
    case Opcode::reduction:
      return name + "'" + std::string(reduction_type_name(op.reduction)) + "', " +
             dtype_str(op.dtype) + ", " + qtmp(op.operands[0]) + ")";
    case Opcode::store:
    case Opcode::store_reduction:
      return name + "'" + op.buffer + "', " + idx() + ", " + qtmp(op.operands[0]) + ")";
    default: {
      std::string s = name;
      for (int i = 0; i < op.num_operands(); ++i) {
        if (i) s += ", ";
        s += qtmp(op.operands[static_cast<size_t>(i)]);
      }
      return s + ")";
    }
  }
}

std::string unpack_line(const std::string& prefix, size_t n, const std::string& rhs) {
  if (n == 0) return "";
  std::string names;
  for (size_t k = 0; k < n; ++k) names += (k ? ", " : "") + prefix + std::to_string(k);
  return names + " = " + rhs;
}

}  // namespace

std::string format_inner_fn(const LoopBody& body, const std::string& indent) {
  std::string in = indent + "    ";
  std::string out =
      indent + (body.is_reduction() ? "def inner_fn(index, rindex):\n" : "def inner_fn(index):\n");
  if (!body.ranges.empty()) out += in + unpack_line("i", body.ranges.size(), "index") + "\n";
  if (body.is_reduction())
    out += in + unpack_line("r0_", body.reduction_ranges.size(), "rindex") + "\n";
  for (size_t i = 0; i < body.ops.size(); ++i) {
    const LoopOp& op = body.ops[i];
    if (op.opcode == Opcode::store || op.opcode == Opcode::store_reduction ||
        op.opcode == Opcode::reduction)
      continue;
    out += in + tmp(static_cast<int32_t>(i)) + " = " + format_op(body, op) + "\n";
  }
  int32_t r = body.result();
  if (r >= 0) out += in + "return " + tmp(r) + "\n";
  return out;
}

std::string format_loop_body(const LoopBody& body) {
  std::string out;
  for (size_t i = 0; i < body.ops.size(); ++i) {
    const LoopOp& op = body.ops[i];
    if (op.produces_value()) out += tmp(static_cast<int32_t>(i)) + " = ";
    out += format_op(body, op) + "\n";
  }
  return out;
}

std::vector<int> fill_order_by_strides(const std::vector<Expr>& accesses,
                                       const std::vector<Expr>& vars) {
  size_t n = vars.size();
  std::vector<std::vector<int64_t>> stride;  // stride[k][a]: |coefficient| of vars[a] in access k
  for (const Expr& e : accesses) {
    std::vector<int64_t> s(n, 0);
    for (size_t a = 0; a < n; ++a)
      if (auto c = linear_coeff(e, vars[a])) s[a] = *c < 0 ? -*c : *c;
    stride.push_back(std::move(s));
  }
  auto inner_than = [&](int a, int b) {
    for (const auto& s : stride) {
      int64_t sa = s[static_cast<size_t>(a)], sb = s[static_cast<size_t>(b)];
      if (sa == 0 || sb == 0 || sa == sb) continue;
      return sa < sb;
    }
    return a > b;  // row-major
  };
  std::vector<int> order;
  for (size_t a = n; a-- > 0;) {
    int d = static_cast<int>(a);
    auto pos = order.begin();
    while (pos != order.end() && !inner_than(d, *pos)) ++pos;
    order.insert(pos, d);
  }
  return order;
}

namespace {

// The values a dtype can hold (integers and bool; others are unbounded).
Interval dtype_range(DType t) {
  switch (t) {
    case DType::Bool: return {0, 1};
    case DType::Int8: return {-128, 127};
    case DType::UInt8: return {0, 255};
    case DType::Int32: return {INT32_MIN, INT32_MAX};
    case DType::Int16: return {-32768, 32767};
    case DType::UInt16: return {0, 65535};
    case DType::UInt32: return {0, 4294967295LL};
    default: return Interval::unbounded();  // uint64: its bits as an int64, any of them
  }
}

// Bitwise ops on integers: a & b lies in [0, h] when one operand lies in [0, h] (its bits are a
// subset of that operand's); a | b and a ^ b of two nonnegative operands keep no bit above the
// higher one's top bit. Anything else (a negative operand) is left unbounded.
Interval interval_bitwise(Opcode op, Interval a, Interval b) {
  const bool a_nonneg = a.lo >= 0 && a.hi_finite(), b_nonneg = b.lo >= 0 && b.hi_finite();
  if (op == Opcode::bitwise_and) {
    if (a_nonneg && b_nonneg) return {0, std::min(a.hi, b.hi)};
    if (a_nonneg) return {0, a.hi};
    if (b_nonneg) return {0, b.hi};
    return Interval::unbounded();
  }
  if (!a_nonneg || !b_nonneg) return Interval::unbounded();
  int64_t top = std::max(a.hi, b.hi), mask = 0;
  while (mask < top) mask = (mask << 1) | 1;  // the all-ones value covering top's bits
  return {0, mask};
}

}  // namespace

std::vector<Interval> value_ranges(const LoopBody& body) {
  std::vector<Interval> r(body.ops.size(), Interval::unbounded());
  auto arg = [&](const LoopOp& op, size_t k) { return r[static_cast<size_t>(op.operands[k])]; };
  for (size_t i = 0; i < body.ops.size(); ++i) {
    const LoopOp& op = body.ops[i];
    Interval v = Interval::unbounded();
    Interval held = dtype_range(op.dtype);
    switch (op.opcode) {
      case Opcode::constant:  // imm.i holds the value of an integer or bool constant
        v = Interval::point(op.imm.i);
        break;
      case Opcode::load:
        v = held;  // memory holds only values of its dtype
        break;
      case Opcode::masked_load:
        v = interval_union(held, Interval::point(op.imm.i));
        break;
      case Opcode::index_expr:
        v = bound(body.index_of(op));
        break;
      case Opcode::to_dtype: {
        // An integer that fits the target keeps its value; anything else wraps, rounds or
        // saturates into the target's range.
        Interval x = arg(op, 0);
        bool from_integer = !is_floating(body.ops[static_cast<size_t>(op.operands[0])].dtype);
        v = from_integer && x.within(held.lo, held.hi) ? x : held;
        break;
      }
      case Opcode::where:
        v = interval_union(arg(op, 1), arg(op, 2));
        break;
      case Opcode::indirect_indexing:
        // Checked: [0, size). Unchecked: the value itself, or (wrapped) it plus size.
        v = op.check            ? Interval{0, op.size - 1}
            : op.wrap_negative ? interval_union(arg(op, 0),
                                                interval_add(arg(op, 0), Interval::point(op.size)))
                               : arg(op, 0);
        break;
      case Opcode::add:
        v = interval_add(arg(op, 0), arg(op, 1));
        break;
      case Opcode::sub:
        v = interval_add(arg(op, 0), interval_neg(arg(op, 1)));
        break;
      case Opcode::mul:
        v = interval_mul(arg(op, 0), arg(op, 1));
        break;
      case Opcode::neg:
        v = interval_neg(arg(op, 0));
        break;
      case Opcode::floordiv:
        v = interval_floordiv(arg(op, 0), arg(op, 1));
        break;
      case Opcode::mod:
        v = interval_mod(arg(op, 0), arg(op, 1));
        break;
      case Opcode::minimum:
        v = interval_min(arg(op, 0), arg(op, 1));
        break;
      case Opcode::maximum:
        v = interval_max(arg(op, 0), arg(op, 1));
        break;
      case Opcode::bitwise_and:
      case Opcode::bitwise_or:
      case Opcode::bitwise_xor:
        v = interval_bitwise(op.opcode, arg(op, 0), arg(op, 1));
        break;
      default:
        // Narrow integers are held in 64 bits between ops: only bool results are bounded.
        if (op.dtype == DType::Bool) v = held;
        break;
    }
    // Floating values are unbounded; so is an integer result outside its dtype's range (an
    // overflow the interval arithmetic does not follow).
    if (is_floating(op.dtype) || !v.within(held.lo, held.hi)) v = Interval::unbounded();
    r[i] = v;
  }
  return r;
}

}  // namespace stax
