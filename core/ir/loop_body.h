// LoopBody (seed §6.8): a computation function recorded once on symbolic indices. It is an SSA
// list of ops (operands are indices of earlier ops) with a result dtype each; the index
// expressions of loads, stores and index_expr ops are stored separately in `indices`.
//
// Every later consumer replays the list (DESIGN.md §2): read_writes() for dependencies,
// count_ops() for realization thresholds, format_inner_fn() for the Listing 6.2 text,
// value_ranges() for range analysis, and the kernel bridge (core/codegen/kernel_desc.h), which copies
// ops and expressions into the plugin's C kernel description one to one (Opcode and
// ReductionType use plugin_api.h's numbering), where plugins replay them into their
// sdk::OpsHandler printers.
//
// Shape of a recorded body:
//   pointwise:  ...ops of inner_fn(index)...;            store(buffer, index, value)
//   reduction:  ...ops of inner_fn(index, rindex)...;    reduction(type, value);
//               store_reduction(buffer, index, reduction)
// Iteration variables are i0..i<n-1> with extents `ranges`, reduction variables r0_0..r0_<m-1>
// with extents `reduction_ranges`.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/types/dtype.h"
#include "core/types/tensor_meta.h"
#include "core/ir/expr.h"

namespace stax {

// Loop-level opcodes: the special ops, then every op of sdk/include/stax/sdk/ops.def in file
// order. The numbering equals StaxOpcode (checked in loop_body.cpp).
enum class Opcode : int32_t {
  invalid = 0,
  constant = 1,
  load = 2,
  masked_load = 3,
  store = 4,
  reduction = 5,
  store_reduction = 6,
  index_expr = 7,
  to_dtype = 8,
  where = 9,
  indirect_indexing = 10,
#define STAX_UNARY_OP(name) name,
#define STAX_BINARY_OP(name) name,
#define STAX_COMPARE_OP(name) name,
#include "stax/sdk/ops.def"
  num_opcodes
};

std::string_view opcode_name(Opcode op);  // "add", "load", ...
std::optional<Opcode> opcode_from_name(std::string_view name);
bool is_unary_op(Opcode op);    // ops.def STAX_UNARY_OP
bool is_binary_op(Opcode op);   // ops.def STAX_BINARY_OP
bool is_compare_op(Opcode op);  // ops.def STAX_COMPARE_OP
// The result dtype of an ops.def op applied to operands of dtype `operand`.
DType op_result_dtype(Opcode op, DType operand);

// Numbering equals StaxReductionType.
enum class ReductionType : int32_t { None, Sum, Prod, Max, Min, ArgMax, ArgMin, Any, All };
std::string_view reduction_type_name(ReductionType r);  // "sum", "argmax", ...

// A constant operand: Python-literal flavoured (an int literal prints "2", a float "2.0").
struct ScalarValue {
  double f = 0.0;
  int64_t i = 0;
  bool integral = false;

  static ScalarValue floating(double v) { return {v, 0, false}; }
  static ScalarValue integer(int64_t v) { return {static_cast<double>(v), v, true}; }
  double as_double() const { return integral ? static_cast<double>(i) : f; }
  std::string str() const;  // "2", "0.5", "inf", "True"? (bool literals print as 1 / 0)
  bool operator==(const ScalarValue&) const = default;
};

class Buffer;

struct LoopOp {
  Opcode opcode = Opcode::invalid;
  DType dtype = DType::Float32;  // result dtype; store / store_reduction: the stored value's
  std::array<int32_t, 3> operands{-1, -1, -1};
  std::string buffer;  // load, masked_load, store, store_reduction
  // load, masked_load: the IR buffer the load was recorded from, while lowering runs (null when
  // unknown, and once lowering has turned it into buffer_id: never dereferenced afterwards).
  const Buffer* source = nullptr;
  // load, masked_load, store, store_reduction: the id of `buffer` in the LoweredGraph that
  // lowered the body (LoweredGraph::index), or -1. A hint for passes over that graph (vectors by
  // id instead of maps by name): LoweredGraph::id_of_op checks it still names `buffer`.
  int64_t buffer_id = -1;
  int32_t index = -1;  // into LoopBody::indices: load, masked_load, store*, index_expr
  ReductionType reduction = ReductionType::None;  // reduction
  ScalarValue imm;                                // constant; masked_load's `other`
  int64_t size = 0;                               // indirect_indexing: the indexed dimension's size
  bool check = true;          // indirect_indexing: bounds check against [0, size)
  bool wrap_negative = true;  // indirect_indexing: x < 0 means x + size

  int num_operands() const;
  bool produces_value() const {
    return opcode != Opcode::store && opcode != Opcode::store_reduction;
  }
};

struct LoopBody {
  std::vector<int64_t> ranges;            // extents of i0, i1, ...
  std::vector<int64_t> reduction_ranges;  // extents of r0_0, r0_1, ... (empty: pointwise)
  std::vector<LoopOp> ops;
  std::vector<Expr> indices;  // deduplicated index expressions

  bool is_reduction() const { return !reduction_ranges.empty(); }
  // The index of `e` in `indices`, appended if new.
  int32_t add_index(const Expr& e);
  const Expr& index_of(const LoopOp& op) const { return indices.at(static_cast<size_t>(op.index)); }
  // i0..i<n-1> / r0_0..r0_<m-1> as expressions with their extents.
  std::vector<Expr> iter_vars() const;
  std::vector<Expr> reduce_vars() const;
  // The reduction type of the (first) reduction op, None for a pointwise body.
  ReductionType reduction_type() const;
  // The op whose value the body stores (the operand of the first store or reduction); -1 if none.
  int32_t result() const;
};

// ---- replays --------------------------------------------------------------------------------

// One memory access.
struct MemoryDep {
  std::string buffer;
  Expr index;
  bool operator==(const MemoryDep&) const = default;
};
struct ReadWrites {
  std::vector<MemoryDep> reads;                    // in op order, one per load (duplicates kept)
  std::vector<MemoryDep> writes;                   // stores and store_reductions
  std::vector<std::string> read_buffers() const;   // distinct, in first-read order
  std::vector<std::string> write_buffers() const;  // distinct, in first-write order
};
// The read/write recorder of §6.7 item 1.
ReadWrites read_writes(const LoopBody& body);
// The distinct buffers `body` loads, in first-load order: read_writes(body).read_buffers() without
// copying a name or an index expression (views of the ops' names, valid while `body` lives
// unchanged). The scheduler and the memory plan ask this for every buffer of a 100k-node graph.
std::vector<std::string_view> loaded_buffers(const LoopBody& body);

// The op counter of §6.7 item 2 (realization thresholds, §6.6).
struct OpCounts {
  int num_ops = 0;       // every op except store, reduction and store_reduction
  int num_loads = 0;     // load + masked_load: the accumulated reads after inlining
  std::set<Opcode> ops;  // the distinct opcodes used (every op)
  std::vector<std::string> buffers_read;  // distinct buffers loaded
};
OpCounts count_ops(const LoopBody& body);

// The formatter of §6.7 item 3: the `def inner_fn(index[, rindex]): ... return tmpN` block of
// Listing 6.2 (stores and the reduction are not printed; `return` names the stored value). Every
// line is prefixed with `indent`.
std::string format_inner_fn(const LoopBody& body, const std::string& indent = "  ");
// The whole body, stores and reductions included (debug dumps):
//   tmp0 = ops.load('primals_1', 128*i0 + r0_0) ... tmp6 = ops.reduction(sum, 'tmp5')
//   ops.store_reduction('buf2', i0, 'tmp6')
std::string format_loop_body(const LoopBody& body);

// A loop order from memory strides (seed §6.4, §6.8): the dimensions of `vars`, innermost first.
// Dimension a goes inside b when, in the first access (in order) whose coefficients of both are
// nonzero and different, a's is smaller in magnitude; without such an access the row-major order
// (the later variable inside) is kept. Non-affine occurrences count as 0.
std::vector<int> fill_order_by_strides(const std::vector<Expr>& accesses,
                                       const std::vector<Expr>& vars);

// Value ranges (Def. 6.4) of every op's result (integer and bool values; floating ones are
// unbounded): index_expr gives its expression's interval, constants points, loads their dtype's
// range (int64: [-inf, +inf]; bool, int8, uint8, int32: bounded), to_dtype keeps an integer that
// fits its target and gives the target's range otherwise, a checked indirect_indexing [0, size),
// add/sub/mul/neg/floordiv/mod/minimum/maximum (hence clamp)/where propagate; other ops are
// [0, 1] for bool and [-inf, +inf] otherwise, as is a result outside its dtype's range.
std::vector<Interval> value_ranges(const LoopBody& body);

}  // namespace stax
