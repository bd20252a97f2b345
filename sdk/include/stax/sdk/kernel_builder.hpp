// KernelBuilder: owns the storage of a StaxKernelDesc and builds it op by op (hosts, tests and
// tools that hand-write kernels). desc() is valid while the builder lives and is not modified.
//
//   KernelBuilder kb("kernel0");
//   int x = kb.add_buffer("primals_1", DType::Float32, {64, 128}, BufferRole::Input);
//   int y = kb.add_buffer("buf0", DType::Float32, {64}, BufferRole::Output);
//   kb.set_ranges({64}, {128});
//   BodyBuilder& b = kb.add_body("buf0", /*reduction_loop=*/true);
//   int v = b.load(x, b.linear({{128, b.i(0)}, {1, b.r(0)}}));
//   b.store_reduction(y, b.i(0), b.reduction(ReductionType::Sum, DType::Float32, v));
//   const StaxKernelDesc* d = kb.desc();
#ifndef STAX_SDK_KERNEL_BUILDER_HPP
#define STAX_SDK_KERNEL_BUILDER_HPP

#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "stax/sdk/types.hpp"

namespace stax {
namespace sdk {

class KernelBuilder;

class BodyBuilder {
 public:
  BodyBuilder(KernelBuilder* kernel, std::string name, bool reduction_loop)
      : kernel_(kernel), name_(std::move(name)), reduction_loop_(reduction_loop) {}

  // ---- index expressions (return node indices) ----
  int32_t c(int64_t v) { return node(STAX_EXPR_CONST, -1, -1, v); }
  int32_t i(int32_t k) { return node(STAX_EXPR_ITER_VAR, -1, -1, k); }
  int32_t r(int32_t k) { return node(STAX_EXPR_REDUCE_VAR, -1, -1, k); }
  int32_t indirect(int32_t op) { return node(STAX_EXPR_INDIRECT, -1, -1, op); }
  int32_t add(int32_t a, int32_t b) { return node(STAX_EXPR_ADD, a, b, 0); }
  int32_t mul(int32_t a, int32_t b) { return node(STAX_EXPR_MUL, a, b, 0); }
  int32_t floordiv(int32_t a, int32_t b) { return node(STAX_EXPR_FLOORDIV, a, b, 0); }
  int32_t mod(int32_t a, int32_t b) { return node(STAX_EXPR_MOD, a, b, 0); }
  int32_t min(int32_t a, int32_t b) { return node(STAX_EXPR_MIN, a, b, 0); }
  int32_t max(int32_t a, int32_t b) { return node(STAX_EXPR_MAX, a, b, 0); }
  // sum of coeff*expr terms (coefficient 1 printed without `1*`) plus a constant (omitted if 0)
  int32_t linear(const std::vector<std::pair<int64_t, int32_t>>& terms, int64_t constant = 0) {
    int32_t acc = -1;
    for (const auto& t : terms) {
      int32_t term = t.first == 1 ? t.second : mul(c(t.first), t.second);
      acc = acc < 0 ? term : add(acc, term);
    }
    if (constant != 0 || acc < 0) acc = acc < 0 ? c(constant) : add(acc, c(constant));
    return acc;
  }

  // ---- ops (return op indices; stores return -1) ----
  int32_t constant(double v, DType dtype) {
    StaxOpNode n = op(STAX_OP_CONSTANT, dtype);
    n.imm_f64 = v;
    n.imm_i64 = (v > -9.2e18 && v < 9.2e18) ? static_cast<int64_t>(v) : 0;
    return push(n);
  }
  int32_t constant_int(int64_t v, DType dtype) {
    StaxOpNode n = op(STAX_OP_CONSTANT, dtype);
    n.imm_i64 = v;
    n.imm_f64 = static_cast<double>(v);
    return push(n);
  }
  inline int32_t load(int32_t buffer, int32_t expr);
  inline int32_t masked_load(int32_t buffer, int32_t expr, int32_t mask, Scalar other);
  void store(int32_t buffer, int32_t expr, int32_t value) {
    StaxOpNode n = op(STAX_OP_STORE, dtype_of(value));
    n.buffer = buffer;
    n.expr = expr;
    n.operands[0] = value;
    push(n);
  }
  int32_t reduction(ReductionType type, DType dtype, int32_t value) {
    StaxOpNode n = op(STAX_OP_REDUCTION, dtype);
    n.aux = static_cast<int32_t>(type);
    n.operands[0] = value;
    return push(n);
  }
  void store_reduction(int32_t buffer, int32_t expr, int32_t reduction) {
    StaxOpNode n = op(STAX_OP_STORE_REDUCTION, dtype_of(reduction));
    n.buffer = buffer;
    n.expr = expr;
    n.operands[0] = reduction;
    push(n);
  }
  int32_t index_expr(int32_t expr, DType dtype = DType::Int64) {
    StaxOpNode n = op(STAX_OP_INDEX_EXPR, dtype);
    n.expr = expr;
    return push(n);
  }
  int32_t to_dtype(int32_t x, DType dtype) {
    StaxOpNode n = op(STAX_OP_TO_DTYPE, dtype);
    n.operands[0] = x;
    return push(n);
  }
  int32_t where(int32_t cond, int32_t a, int32_t b) {
    StaxOpNode n = op(STAX_OP_WHERE, dtype_of(a));
    n.operands[0] = cond;
    n.operands[1] = a;
    n.operands[2] = b;
    return push(n);
  }
  int32_t indirect_indexing(int32_t x, int64_t size,
                            int32_t flags = STAX_INDIRECT_CHECK | STAX_INDIRECT_WRAP_NEGATIVE) {
    StaxOpNode n = op(STAX_OP_INDIRECT_INDEXING, dtype_of(x));
    n.operands[0] = x;
    n.imm_i64 = size;
    n.aux = flags;
    return push(n);
  }
  // An ops.def op; the result dtype follows plugin_api.h (bool for compare and logical ops).
  int32_t unary(StaxOpcode opcode, int32_t x) {
    bool to_bool = opcode == STAX_OP_logical_not || opcode == STAX_OP_isnan;
    StaxOpNode n = op(opcode, to_bool ? DType::Bool : dtype_of(x));
    n.operands[0] = x;
    return push(n);
  }
  int32_t binary(StaxOpcode opcode, int32_t a, int32_t b) {
    bool to_bool = is_compare_op(opcode) || opcode == STAX_OP_logical_and ||
                   opcode == STAX_OP_logical_or;
    StaxOpNode n = op(opcode, to_bool ? DType::Bool : dtype_of(a));
    n.operands[0] = a;
    n.operands[1] = b;
    return push(n);
  }

  DType dtype_of(int32_t op_index) const { return static_cast<DType>(ops_.at(op_index).dtype); }
  const std::vector<StaxOpNode>& ops() const { return ops_; }
  const std::vector<StaxExprNode>& exprs() const { return exprs_; }

  StaxLoopBody* finish() {
    body_ = make_struct<StaxLoopBody>();
    body_.name = name_.c_str();
    body_.loop = reduction_loop_ ? STAX_BODY_REDUCTION_LOOP : STAX_BODY_POINTWISE;
    body_.ops = ops_.data();
    body_.num_ops = ops_.size();
    body_.exprs = exprs_.data();
    body_.num_exprs = exprs_.size();
    return &body_;
  }

 private:
  int32_t node(int32_t kind, int32_t lhs, int32_t rhs, int64_t value) {
    StaxExprNode n;
    n.kind = kind;
    n.lhs = lhs;
    n.rhs = rhs;
    n.reserved = 0;
    n.value = value;
    exprs_.push_back(n);
    return static_cast<int32_t>(exprs_.size() - 1);
  }
  static StaxOpNode op(int32_t opcode, DType dtype) {
    StaxOpNode n;
    n.opcode = opcode;
    n.dtype = static_cast<int32_t>(dtype);
    n.operands[0] = n.operands[1] = n.operands[2] = -1;
    n.buffer = -1;
    n.expr = -1;
    n.aux = 0;
    n.imm_f64 = 0.0;
    n.imm_i64 = 0;
    return n;
  }
  int32_t push(const StaxOpNode& n) {
    ops_.push_back(n);
    return static_cast<int32_t>(ops_.size() - 1);
  }

  KernelBuilder* kernel_;
  std::string name_;
  bool reduction_loop_;
  std::vector<StaxOpNode> ops_;
  std::vector<StaxExprNode> exprs_;
  StaxLoopBody body_{};
};

class KernelBuilder {
 public:
  explicit KernelBuilder(std::string name) : name_(std::move(name)) {}
  KernelBuilder(const KernelBuilder&) = delete;
  KernelBuilder& operator=(const KernelBuilder&) = delete;

  // strides: empty = row-major contiguous. Returns the buffer index.
  int32_t add_buffer(std::string name, DType dtype, std::vector<int64_t> sizes, BufferRole role,
                     std::vector<int64_t> strides = {}, int64_t offset = 0) {
    if (strides.empty()) {
      strides.assign(sizes.size(), 1);
      for (size_t k = sizes.size(); k-- > 1;) strides[k - 1] = strides[k] * sizes[k];
    }
    buffers_.push_back(Buf{std::move(name), dtype, std::move(sizes), std::move(strides), offset,
                           role, StaxBufferDesc{}});
    return static_cast<int32_t>(buffers_.size() - 1);
  }
  void set_ranges(std::vector<int64_t> ranges, std::vector<int64_t> reduction_ranges = {}) {
    ranges_ = std::move(ranges);
    reduction_ranges_ = std::move(reduction_ranges);
  }
  void set_reduction_type(ReductionType t) { reduction_type_ = t; }
  // StaxKernelDesc.index_bits: 32 or 64 (the default: always correct).
  void set_index_bits(int32_t bits) { index_bits_ = bits; }
  BodyBuilder& add_body(std::string name, bool reduction_loop = false) {
    bodies_.emplace_back(new BodyBuilder(this, std::move(name), reduction_loop));
    return *bodies_.back();
  }
  DType buffer_dtype(int32_t b) const { return buffers_.at(b).dtype; }

  // The description; reduction_type defaults to that of the first REDUCTION op.
  const StaxKernelDesc* desc() {
    buffer_ptrs_.clear();
    for (Buf& b : buffers_) {
      b.desc = make_struct<StaxBufferDesc>();
      b.desc.name = b.name.c_str();
      b.desc.dtype = static_cast<int32_t>(b.dtype);
      b.desc.role = static_cast<int32_t>(b.role);
      b.desc.ndim = b.sizes.size();
      b.desc.sizes = b.sizes.data();
      b.desc.strides = b.strides.data();
      b.desc.offset = b.offset;
      buffer_ptrs_.push_back(&b.desc);
    }
    body_ptrs_.clear();
    int32_t rt = static_cast<int32_t>(reduction_type_);
    for (auto& b : bodies_) {
      body_ptrs_.push_back(b->finish());
      for (const StaxOpNode& n : b->ops())
        if (rt == STAX_REDUCTION_NONE && n.opcode == STAX_OP_REDUCTION) rt = n.aux;
    }
    desc_ = make_struct<StaxKernelDesc>();
    desc_.name = name_.c_str();
    desc_.buffers = buffer_ptrs_.data();
    desc_.num_buffers = buffer_ptrs_.size();
    desc_.ranges = ranges_.data();
    desc_.num_ranges = ranges_.size();
    desc_.reduction_ranges = reduction_ranges_.data();
    desc_.num_reduction_ranges = reduction_ranges_.size();
    desc_.reduction_type = rt;
    desc_.bodies = body_ptrs_.data();
    desc_.num_bodies = body_ptrs_.size();
    desc_.index_bits = index_bits_;
    return &desc_;
  }

 private:
  struct Buf {
    std::string name;
    DType dtype;
    std::vector<int64_t> sizes, strides;
    int64_t offset;
    BufferRole role;
    StaxBufferDesc desc;
  };
  std::string name_;
  std::deque<Buf> buffers_;  // stable addresses
  std::vector<int64_t> ranges_, reduction_ranges_;
  ReductionType reduction_type_ = ReductionType::None;
  int32_t index_bits_ = 64;
  std::vector<std::unique_ptr<BodyBuilder>> bodies_;
  std::vector<const StaxBufferDesc*> buffer_ptrs_;
  std::vector<const StaxLoopBody*> body_ptrs_;
  StaxKernelDesc desc_{};
};

inline int32_t BodyBuilder::load(int32_t buffer, int32_t expr) {
  StaxOpNode n = op(STAX_OP_LOAD, kernel_->buffer_dtype(buffer));
  n.buffer = buffer;
  n.expr = expr;
  return push(n);
}

inline int32_t BodyBuilder::masked_load(int32_t buffer, int32_t expr, int32_t mask,
                                        Scalar other) {
  StaxOpNode n = op(STAX_OP_MASKED_LOAD, kernel_->buffer_dtype(buffer));
  n.buffer = buffer;
  n.expr = expr;
  n.operands[0] = mask;
  n.imm_f64 = other.as_double();
  n.imm_i64 = other.as_int();
  return push(n);
}

// A deep copy of a kernel description (the host's pointers are valid only during the call;
// a plugin that keeps the description for later, e.g. an interpreter, copies it).
class OwnedKernelDesc {
 public:
  explicit OwnedKernelDesc(const StaxKernelDesc* k) {
    name_ = k->name ? k->name : "";
    ranges_.assign(k->ranges, k->ranges + k->num_ranges);
    reduction_ranges_.assign(k->reduction_ranges, k->reduction_ranges + k->num_reduction_ranges);
    for (size_t i = 0; i < k->num_buffers; ++i) {
      const StaxBufferDesc* b = k->buffers[i];
      Buf c;
      c.name = b->name ? b->name : "";
      c.sizes.assign(b->sizes, b->sizes + b->ndim);
      c.strides.assign(b->strides, b->strides + b->ndim);
      c.desc = copy_in(b);
      buffers_.push_back(std::move(c));
    }
    for (size_t i = 0; i < k->num_bodies; ++i) {
      const StaxLoopBody* b = k->bodies[i];
      Body c;
      c.name = b->name ? b->name : "";
      c.ops.assign(b->ops, b->ops + b->num_ops);
      c.exprs.assign(b->exprs, b->exprs + b->num_exprs);
      c.desc = copy_in(b);
      bodies_.push_back(std::move(c));
    }
    desc_ = copy_in(k);
    for (Buf& b : buffers_) {
      b.desc.name = b.name.c_str();
      b.desc.sizes = b.sizes.data();
      b.desc.strides = b.strides.data();
      buffer_ptrs_.push_back(&b.desc);
    }
    for (Body& b : bodies_) {
      b.desc.name = b.name.c_str();
      b.desc.ops = b.ops.data();
      b.desc.exprs = b.exprs.data();
      body_ptrs_.push_back(&b.desc);
    }
    desc_.name = name_.c_str();
    desc_.ranges = ranges_.data();
    desc_.reduction_ranges = reduction_ranges_.data();
    desc_.buffers = buffer_ptrs_.data();
    desc_.bodies = body_ptrs_.data();
  }
  OwnedKernelDesc(const OwnedKernelDesc&) = delete;
  OwnedKernelDesc& operator=(const OwnedKernelDesc&) = delete;

  const StaxKernelDesc* desc() const { return &desc_; }

 private:
  struct Buf {
    std::string name;
    std::vector<int64_t> sizes, strides;
    StaxBufferDesc desc;
  };
  struct Body {
    std::string name;
    std::vector<StaxOpNode> ops;
    std::vector<StaxExprNode> exprs;
    StaxLoopBody desc;
  };
  std::string name_;
  std::vector<int64_t> ranges_, reduction_ranges_;
  std::deque<Buf> buffers_;
  std::deque<Body> bodies_;
  std::vector<const StaxBufferDesc*> buffer_ptrs_;
  std::vector<const StaxLoopBody*> body_ptrs_;
  StaxKernelDesc desc_;
};

}  // namespace sdk
}  // namespace stax

#endif  // STAX_SDK_KERNEL_BUILDER_HPP
