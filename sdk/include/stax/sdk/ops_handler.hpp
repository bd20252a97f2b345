// OpsHandler<V>: one interpretation of the loop-level ops (seed §6.7). V is the handler's value
// domain: std::string for printers, a value index for recorders, an interval for range analysis.
// The ops of ops.def are pure virtuals generated from the X-macro, so a handler that misses an
// op does not compile. replay(body, handler) walks a LoopBody's op nodes in order.
//
// Index and BufferRef default to the SDK's views (Expr, Buffer) over a C kernel description;
// core may instantiate the same interface with its own symbolic index and buffer types.
#ifndef STAX_SDK_OPS_HANDLER_HPP
#define STAX_SDK_OPS_HANDLER_HPP

#include <optional>
#include <string>
#include <vector>

#include "stax/sdk/expr.hpp"
#include "stax/sdk/loop_body.hpp"
#include "stax/sdk/types.hpp"

namespace stax {
namespace sdk {

template <class V, class Index = Expr, class BufferRef = Buffer>
class OpsHandler {
 public:
  using value_type = V;
  using index_type = Index;
  using buffer_type = BufferRef;

  virtual ~OpsHandler() = default;

  // ---- ops.def: x -> name(x), (a, b) -> name(a, b) ----
#define STAX_UNARY_OP(name) virtual V name(V x) = 0;
#define STAX_BINARY_OP(name) virtual V name(V a, V b) = 0;
#define STAX_COMPARE_OP(name) virtual V name(V a, V b) = 0;
#include "stax/sdk/ops.def"

  // ---- special ops (plugin_api.h documents their semantics) ----
  virtual V constant(Scalar value, DType dtype) = 0;
  virtual V load(const BufferRef& buffer, const Index& index) = 0;
  // Reads buffer[index] where mask is true, else yields `other` (memory is not touched).
  virtual V masked_load(const BufferRef& buffer, const Index& index, V mask, Scalar other) = 0;
  virtual V index_expr(const Index& index, DType dtype) = 0;
  virtual V to_dtype(V x, DType dtype) = 0;
  virtual V where(V cond, V a, V b) = 0;
  // Turns a run-time integer into an index variable (Index nodes of kind Indirect refer to this
  // op). check: bounds-check against [0, size); wrap_negative: x < 0 means x + size.
  virtual V indirect_indexing(V x, int64_t size, bool check, bool wrap_negative) = 0;
  // Accumulates `value` over the reduction loop; the result feeds store_reduction only.
  virtual V reduction(ReductionType type, DType dtype, V value) = 0;
  virtual void store(const BufferRef& buffer, const Index& index, V value) = 0;
  // Stores the final value of a reduction (after the reduction loop).
  virtual void store_reduction(const BufferRef& buffer, const Index& index, V value) = 0;

  // ---- replay hooks (optional) ----
  // Called by replay before each op with its position and result dtype.
  virtual void begin_op(int32_t op_index, DType result_dtype) {
    (void)op_index;
    (void)result_dtype;
  }
  // Called by replay with each op's result (printers use it to name indirect index variables).
  virtual void on_result(int32_t op_index, const V& value) {
    (void)op_index;
    (void)value;
  }
};

// Calls the handler's method for an ops.def opcode. Throws PluginError for other opcodes.
template <class V, class I, class B>
V dispatch_unary(OpsHandler<V, I, B>& h, int32_t opcode, V x) {
  switch (opcode) {
#define STAX_UNARY_OP(name) \
  case STAX_OP_##name: return h.name(std::move(x));
#include "stax/sdk/ops.def"
    default:
      throw PluginError(STAX_ERROR_INVALID_ARGUMENT, "not a unary op: " + opcode_name(opcode));
  }
}

template <class V, class I, class B>
V dispatch_binary(OpsHandler<V, I, B>& h, int32_t opcode, V a, V b) {
  switch (opcode) {
#define STAX_BINARY_OP(name) \
  case STAX_OP_##name: return h.name(std::move(a), std::move(b));
#define STAX_COMPARE_OP(name) \
  case STAX_OP_##name: return h.name(std::move(a), std::move(b));
#include "stax/sdk/ops.def"
    default:
      throw PluginError(STAX_ERROR_INVALID_ARGUMENT, "not a binary op: " + opcode_name(opcode));
  }
}

// Walks the body's ops in order, calling the handler; returns every op's result (nullopt for
// stores). The body must have been validated (validate() in loop_body.hpp).
template <class V>
std::vector<std::optional<V>> replay(const LoopBody& body, OpsHandler<V>& h) {
  std::vector<std::optional<V>> values(body.num_ops());
  auto arg = [&](const OpNode& op, int i) -> V { return *values[op.operand(i)]; };
  for (size_t i = 0; i < body.num_ops(); ++i) {
    OpNode op = body.op(i);
    h.begin_op(op.index(), op.dtype());
    std::optional<V> result;
    switch (op.opcode()) {
      case STAX_OP_CONSTANT: result = h.constant(op.immediate(), op.dtype()); break;
      case STAX_OP_LOAD: result = h.load(body.buffer_of(op), body.index_of(op)); break;
      case STAX_OP_MASKED_LOAD:
        result = h.masked_load(body.buffer_of(op), body.index_of(op), arg(op, 0), op.immediate());
        break;
      case STAX_OP_STORE: h.store(body.buffer_of(op), body.index_of(op), arg(op, 0)); break;
      case STAX_OP_REDUCTION:
        result = h.reduction(op.reduction_type(), op.dtype(), arg(op, 0));
        break;
      case STAX_OP_STORE_REDUCTION:
        h.store_reduction(body.buffer_of(op), body.index_of(op), arg(op, 0));
        break;
      case STAX_OP_INDEX_EXPR: result = h.index_expr(body.index_of(op), op.dtype()); break;
      case STAX_OP_TO_DTYPE: result = h.to_dtype(arg(op, 0), op.dtype()); break;
      case STAX_OP_WHERE: result = h.where(arg(op, 0), arg(op, 1), arg(op, 2)); break;
      case STAX_OP_INDIRECT_INDEXING:
        result = h.indirect_indexing(arg(op, 0), op.imm_i64(),
                                     (op.aux() & STAX_INDIRECT_CHECK) != 0,
                                     (op.aux() & STAX_INDIRECT_WRAP_NEGATIVE) != 0);
        break;
      default:
        if (is_unary_op(op.opcode())) {
          result = dispatch_unary(h, op.opcode(), arg(op, 0));
        } else if (is_binary_op(op.opcode()) || is_compare_op(op.opcode())) {
          result = dispatch_binary(h, op.opcode(), arg(op, 0), arg(op, 1));
        } else {
          throw PluginError(STAX_ERROR_UNSUPPORTED, "replay: unknown opcode " +
                                                        std::to_string(op.opcode()));
        }
    }
    if (result) h.on_result(op.index(), *result);
    values[i] = std::move(result);
  }
  return values;
}

}  // namespace sdk
}  // namespace stax

#endif  // STAX_SDK_OPS_HANDLER_HPP
