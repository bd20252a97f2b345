// Read-only C++ views over a StaxKernelDesc: Kernel -> Buffers, ranges, LoopBodies -> OpNodes
// and Exprs. Nothing is copied; a view is valid while the description is (during the plugin call
// that received it). validate() checks a description once at the boundary so that later code
// may index without checks.
#ifndef STAX_SDK_LOOP_BODY_HPP
#define STAX_SDK_LOOP_BODY_HPP

#include <cstdint>
#include <string>
#include <vector>

#include "stax/sdk/expr.hpp"
#include "stax/sdk/types.hpp"

namespace stax {
namespace sdk {

class Buffer {
 public:
  Buffer() = default;
  Buffer(const StaxBufferDesc* desc, int32_t index) : d_(desc), index_(index) {}

  int32_t index() const { return index_; }  // position in the kernel's buffer list
  std::string name() const { return d_->name ? d_->name : ""; }
  DType dtype() const { return static_cast<DType>(d_->dtype); }
  BufferRole role() const { return static_cast<BufferRole>(d_->role); }
  bool is_input() const { return role() == BufferRole::Input; }
  Span<int64_t> sizes() const { return Span<int64_t>(d_->sizes, d_->ndim); }
  Span<int64_t> strides() const { return Span<int64_t>(d_->strides, d_->ndim); }
  size_t ndim() const { return d_->ndim; }
  int64_t offset() const { return d_->offset; }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t s : sizes()) n *= s;
    return n;
  }
  const StaxBufferDesc* desc() const { return d_; }

 private:
  const StaxBufferDesc* d_ = nullptr;
  int32_t index_ = -1;
};

class Kernel;

class OpNode {
 public:
  OpNode(const StaxOpNode* node, int32_t index) : n_(node), index_(index) {}

  int32_t index() const { return index_; }
  StaxOpcode opcode() const { return static_cast<StaxOpcode>(n_->opcode); }
  std::string name() const { return opcode_name(n_->opcode); }
  DType dtype() const { return static_cast<DType>(n_->dtype); }
  int32_t operand(int i) const { return n_->operands[i]; }
  int num_operands() const {
    int n = 0;
    while (n < 3 && n_->operands[n] >= 0) ++n;
    return n;
  }
  int32_t buffer() const { return n_->buffer; }
  int32_t expr() const { return n_->expr; }
  int32_t aux() const { return n_->aux; }
  ReductionType reduction_type() const { return static_cast<ReductionType>(n_->aux); }
  // CONSTANT / MASKED_LOAD's `other`: the immediate for this op's dtype.
  Scalar immediate() const {
    return is_floating(dtype()) ? Scalar::floating(n_->imm_f64) : Scalar::integer(n_->imm_i64);
  }
  int64_t imm_i64() const { return n_->imm_i64; }
  double imm_f64() const { return n_->imm_f64; }
  bool produces_value() const {
    return opcode() != STAX_OP_STORE && opcode() != STAX_OP_STORE_REDUCTION;
  }
  const StaxOpNode& raw() const { return *n_; }

 private:
  const StaxOpNode* n_;
  int32_t index_;
};

class LoopBody {
 public:
  LoopBody(const StaxKernelDesc* kernel, const StaxLoopBody* body) : k_(kernel), b_(body) {}

  std::string name() const { return b_->name ? b_->name : ""; }
  bool is_reduction_loop() const { return b_->loop == STAX_BODY_REDUCTION_LOOP; }
  size_t num_ops() const { return b_->num_ops; }
  OpNode op(size_t i) const { return OpNode(&b_->ops[i], static_cast<int32_t>(i)); }
  size_t num_exprs() const { return b_->num_exprs; }
  Expr expr(int32_t i) const { return Expr(b_->exprs, b_->num_exprs, i); }
  Buffer buffer(int32_t i) const { return Buffer(k_->buffers[i], i); }
  // The op's index expression / buffer (op.expr() / op.buffer() must be set).
  Expr index_of(const OpNode& op) const { return expr(op.expr()); }
  Buffer buffer_of(const OpNode& op) const { return buffer(op.buffer()); }
  const StaxKernelDesc* kernel() const { return k_; }
  const StaxLoopBody* raw() const { return b_; }

 private:
  const StaxKernelDesc* k_;
  const StaxLoopBody* b_;
};

class Kernel {
 public:
  explicit Kernel(const StaxKernelDesc* desc) : k_(desc) {}

  std::string name() const { return k_->name ? k_->name : ""; }
  size_t num_buffers() const { return k_->num_buffers; }
  Buffer buffer(size_t i) const { return Buffer(k_->buffers[i], static_cast<int32_t>(i)); }
  Span<int64_t> ranges() const { return Span<int64_t>(k_->ranges, k_->num_ranges); }
  Span<int64_t> reduction_ranges() const {
    return Span<int64_t>(k_->reduction_ranges, k_->num_reduction_ranges);
  }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t r : ranges()) n *= r;
    return n;
  }
  int64_t reduction_numel() const {
    int64_t n = 1;
    for (int64_t r : reduction_ranges()) n *= r;
    return n;
  }
  ReductionType reduction_type() const { return static_cast<ReductionType>(k_->reduction_type); }
  // 32 when the host proved that every index value fits int32 (ABI 1.1), else 64: also for a
  // host whose description ends before the field (ABI 1.0) or leaves it 0.
  int32_t index_bits() const {
    return STAX_SDK_HAS_FIELD(k_, StaxKernelDesc, index_bits) && k_->index_bits == 32 ? 32 : 64;
  }
  size_t num_bodies() const { return k_->num_bodies; }
  LoopBody body(size_t i) const { return LoopBody(k_, k_->bodies[i]); }
  const StaxKernelDesc* raw() const { return k_; }

 private:
  const StaxKernelDesc* k_;
};

namespace detail {

inline void invalid(const std::string& where, const std::string& what) {
  throw PluginError(STAX_ERROR_INVALID_ARGUMENT,
                    "invalid kernel description: " + where + ": " + what);
}

}  // namespace detail

// Checks every index and enum of a description (what the C++ views assume) and throws
// PluginError(STAX_ERROR_INVALID_ARGUMENT) naming the offending body / op / node.
inline void validate(const StaxKernelDesc* k) {
  using detail::invalid;
  if (!k) invalid("kernel", "null description");
  std::string kn = k->name ? k->name : "<unnamed>";
  if (k->struct_size < sizeof(StaxKernelDesc)) {
    // Older hosts are fine as long as every 1.0 field exists; index_bits (1.1) is read only
    // when present.
    if (!STAX_SDK_HAS_FIELD(k, StaxKernelDesc, num_bodies)) invalid(kn, "struct too small");
  }
  if (STAX_SDK_HAS_FIELD(k, StaxKernelDesc, index_bits) && k->index_bits != 0 &&
      k->index_bits != 32 && k->index_bits != 64)
    invalid(kn, "index_bits " + std::to_string(k->index_bits) + " is not 0, 32 or 64");
  if (k->num_buffers && !k->buffers) invalid(kn, "null buffer list");
  if (k->num_ranges && !k->ranges) invalid(kn, "null ranges");
  if (k->num_reduction_ranges && !k->reduction_ranges) invalid(kn, "null reduction ranges");
  if (k->num_bodies && !k->bodies) invalid(kn, "null body list");
  for (size_t i = 0; i < k->num_ranges; ++i)
    if (k->ranges[i] < 0) invalid(kn, "negative range");
  for (size_t i = 0; i < k->num_reduction_ranges; ++i)
    if (k->reduction_ranges[i] < 0) invalid(kn, "negative reduction range");
  if (k->reduction_type < STAX_REDUCTION_NONE || k->reduction_type > STAX_REDUCTION_ALL)
    invalid(kn, "unknown reduction type " + std::to_string(k->reduction_type));
  for (size_t i = 0; i < k->num_buffers; ++i) {
    const StaxBufferDesc* b = k->buffers[i];
    std::string where = kn + ": buffer " + std::to_string(i);
    if (!b || !b->name) invalid(where, "null buffer or name");
    if (!valid_dtype(b->dtype)) invalid(where, "unknown dtype " + std::to_string(b->dtype));
    if (b->role < STAX_BUFFER_INPUT || b->role > STAX_BUFFER_TEMP) invalid(where, "unknown role");
    if (b->ndim && (!b->sizes || !b->strides)) invalid(where, "null sizes or strides");
  }
  for (size_t bi = 0; bi < k->num_bodies; ++bi) {
    const StaxLoopBody* b = k->bodies[bi];
    std::string where = kn + ": body " + std::to_string(bi);
    if (!b) invalid(where, "null body");
    if (b->loop != STAX_BODY_POINTWISE && b->loop != STAX_BODY_REDUCTION_LOOP)
      invalid(where, "unknown loop kind");
    if (b->num_ops && !b->ops) invalid(where, "null ops");
    if (b->num_exprs && !b->exprs) invalid(where, "null exprs");
    for (size_t ei = 0; ei < b->num_exprs; ++ei) {
      const StaxExprNode& e = b->exprs[ei];
      std::string ew = where + ": expr " + std::to_string(ei);
      int32_t i = static_cast<int32_t>(ei);
      switch (static_cast<ExprKind>(e.kind)) {
        case ExprKind::Const: break;
        case ExprKind::IterVar:
          if (e.value < 0 || static_cast<size_t>(e.value) >= k->num_ranges)
            invalid(ew, "iteration variable i" + std::to_string(e.value) + " out of range");
          break;
        case ExprKind::ReduceVar:
          if (e.value < 0 || static_cast<size_t>(e.value) >= k->num_reduction_ranges)
            invalid(ew, "reduction variable r0_" + std::to_string(e.value) + " out of range");
          if (b->loop != STAX_BODY_REDUCTION_LOOP)
            invalid(ew, "reduction variable in a pointwise body");
          break;
        case ExprKind::Indirect:
          if (e.value < 0 || static_cast<size_t>(e.value) >= b->num_ops ||
              b->ops[e.value].opcode != STAX_OP_INDIRECT_INDEXING)
            invalid(ew, "indirect variable does not name an indirect_indexing op");
          break;
        case ExprKind::Add:
        case ExprKind::Mul:
        case ExprKind::FloorDiv:
        case ExprKind::Mod:
        case ExprKind::Min:
        case ExprKind::Max:
          if (e.lhs < 0 || e.lhs >= i || e.rhs < 0 || e.rhs >= i)
            invalid(ew, "operands must be earlier nodes");
          break;
        default: invalid(ew, "unknown expression kind " + std::to_string(e.kind));
      }
    }
    for (size_t oi = 0; oi < b->num_ops; ++oi) {
      const StaxOpNode& op = b->ops[oi];
      std::string ow = where + ": op " + std::to_string(oi) + " (" + opcode_name(op.opcode) + ")";
      if (op.opcode <= STAX_OP_INVALID || op.opcode >= STAX_NUM_OPCODES)
        invalid(ow, "unknown opcode");
      if (!valid_dtype(op.dtype)) invalid(ow, "unknown dtype " + std::to_string(op.dtype));
      int needed = 0;
      bool needs_buffer = false, needs_expr = false;
      switch (op.opcode) {
        case STAX_OP_CONSTANT: break;
        case STAX_OP_LOAD: needs_buffer = needs_expr = true; break;
        case STAX_OP_MASKED_LOAD: needs_buffer = needs_expr = true; needed = 1; break;
        case STAX_OP_STORE: needs_buffer = needs_expr = true; needed = 1; break;
        case STAX_OP_REDUCTION:
          needed = 1;
          if (op.aux <= STAX_REDUCTION_NONE || op.aux > STAX_REDUCTION_ALL)
            invalid(ow, "unknown reduction type " + std::to_string(op.aux));
          if (b->loop != STAX_BODY_REDUCTION_LOOP) invalid(ow, "reduction in a pointwise body");
          break;
        case STAX_OP_STORE_REDUCTION: needs_buffer = needs_expr = true; needed = 1; break;
        case STAX_OP_INDEX_EXPR: needs_expr = true; break;
        case STAX_OP_TO_DTYPE: needed = 1; break;
        case STAX_OP_WHERE: needed = 3; break;
        case STAX_OP_INDIRECT_INDEXING: needed = 1; break;
        default: needed = is_unary_op(op.opcode) ? 1 : 2; break;
      }
      for (int j = 0; j < 3; ++j) {
        int32_t o = op.operands[j];
        if (j < needed) {
          if (o < 0 || static_cast<size_t>(o) >= oi) invalid(ow, "operands must be earlier ops");
          int32_t oc = b->ops[o].opcode;
          if (oc == STAX_OP_STORE || oc == STAX_OP_STORE_REDUCTION)
            invalid(ow, "a store has no value");
          if ((oc == STAX_OP_REDUCTION) != (op.opcode == STAX_OP_STORE_REDUCTION))
            invalid(ow, "a reduction's value is only used by store_reduction");
        } else if (o != -1) {
          invalid(ow, "unused operand slots must be -1");
        }
      }
      if (needs_buffer && (op.buffer < 0 || static_cast<size_t>(op.buffer) >= k->num_buffers))
        invalid(ow, "buffer index out of range");
      if (needs_expr && (op.expr < 0 || static_cast<size_t>(op.expr) >= b->num_exprs))
        invalid(ow, "expression index out of range");
    }
  }
}

}  // namespace sdk
}  // namespace stax

#endif  // STAX_SDK_LOOP_BODY_HPP
