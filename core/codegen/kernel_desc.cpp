#include "core/codegen/kernel_desc.h"

#include <map>
#include <tuple>

#include "core/ir/index_bounds.h"
#include "core/support/error.h"

namespace stax {

// The opcode and reduction numbering crosses the plugin boundary unchanged (the names too:
// core/ir's opcode_name and the ABI's stax_opcode_name are both generated from ops.def).
static_assert(static_cast<int32_t>(Opcode::indirect_indexing) == STAX_OP_INDIRECT_INDEXING);
static_assert(static_cast<int32_t>(Opcode::store_reduction) == STAX_OP_STORE_REDUCTION);
static_assert(static_cast<int32_t>(Opcode::neg) == STAX_OP_neg);
static_assert(static_cast<int32_t>(Opcode::ge) == STAX_OP_ge);
static_assert(static_cast<int32_t>(Opcode::num_opcodes) == STAX_NUM_OPCODES);
static_assert(static_cast<int32_t>(ReductionType::All) == STAX_REDUCTION_ALL);
static_assert(static_cast<int32_t>(ReductionType::ArgMax) == STAX_REDUCTION_ARGMAX);

struct KernelDesc::Storage {
  std::string name;
  std::vector<std::string> buffer_names;
  std::vector<std::vector<int64_t>> sizes, strides;
  std::vector<StaxBufferDesc> buffers;
  std::vector<const StaxBufferDesc*> buffer_ptrs;
  std::vector<int64_t> ranges, reduction_ranges;
  std::vector<std::string> body_names;
  std::vector<std::vector<StaxOpNode>> ops;
  std::vector<std::vector<StaxExprNode>> exprs;
  std::vector<StaxLoopBody> bodies;
  std::vector<const StaxLoopBody*> body_ptrs;
  StaxKernelDesc desc{};
};

KernelDesc::KernelDesc() : s_(std::make_unique<Storage>()) {}
KernelDesc::KernelDesc(KernelDesc&&) noexcept = default;
KernelDesc& KernelDesc::operator=(KernelDesc&&) noexcept = default;
KernelDesc::~KernelDesc() = default;
const StaxKernelDesc* KernelDesc::get() const { return &s_->desc; }
const std::vector<std::string>& KernelDesc::buffer_names() const { return s_->buffer_names; }

namespace {

class ExprEmitter {
 public:
  explicit ExprEmitter(std::vector<StaxExprNode>& nodes) : nodes_(nodes) {
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const StaxExprNode& n = nodes_[i];
      seen_[{n.kind, n.lhs, n.rhs, n.value}] = static_cast<int32_t>(i);
    }
  }

  int32_t emit(const Expr& e) {
    switch (e.kind()) {
      case ExprKind::Const:
        return node(STAX_EXPR_CONST, -1, -1, e.value());
      case ExprKind::Var: {
        int32_t kind = e.var_kind() == VarKind::Iter     ? STAX_EXPR_ITER_VAR
                       : e.var_kind() == VarKind::Reduce ? STAX_EXPR_REDUCE_VAR
                                                         : STAX_EXPR_INDIRECT;
        return node(kind, -1, -1, e.var_index());
      }
      case ExprKind::Add: {
        // c_1*t_1 + ... + c_n*t_n + c0 as a left-nested chain, constant last; a coefficient is a
        // constant first factor (the SDK prints `8192*i1`, ` - 2*i1`).
        int32_t acc = -1;
        for (size_t k = 0; k < e.args().size(); ++k) {
          int64_t c = e.coeffs()[k];
          int32_t atom = emit(e.args()[k]);
          int32_t term =
              c == 1 ? atom : node(STAX_EXPR_MUL, node(STAX_EXPR_CONST, -1, -1, c), atom, 0);
          acc = acc < 0 ? term : node(STAX_EXPR_ADD, acc, term, 0);
        }
        if (e.value() != 0)
          acc = node(STAX_EXPR_ADD, acc, node(STAX_EXPR_CONST, -1, -1, e.value()), 0);
        return acc;
      }
      case ExprKind::Mul: {
        int32_t acc = -1;
        for (const Expr& f : e.args()) {
          int32_t x = emit(f);
          acc = acc < 0 ? x : node(STAX_EXPR_MUL, acc, x, 0);
        }
        return acc;
      }
      case ExprKind::FloorDiv:
        return binary(STAX_EXPR_FLOORDIV, e);
      case ExprKind::Mod:
        return binary(STAX_EXPR_MOD, e);
      case ExprKind::Min:
        return binary(STAX_EXPR_MIN, e);
      case ExprKind::Max:
        return binary(STAX_EXPR_MAX, e);
    }
    return -1;
  }

 private:
  int32_t binary(int32_t kind, const Expr& e) {
    int32_t l = emit(e.args()[0]);
    int32_t r = emit(e.args()[1]);
    return node(kind, l, r, 0);
  }

  int32_t node(int32_t kind, int32_t lhs, int32_t rhs, int64_t value) {
    auto key = std::make_tuple(kind, lhs, rhs, value);
    auto it = seen_.find(key);
    if (it != seen_.end()) return it->second;
    nodes_.push_back(StaxExprNode{kind, lhs, rhs, 0, value});
    int32_t i = static_cast<int32_t>(nodes_.size() - 1);
    seen_[key] = i;
    return i;
  }

  std::vector<StaxExprNode>& nodes_;
  std::map<std::tuple<int32_t, int32_t, int32_t, int64_t>, int32_t> seen_;
};

bool is_memory_op(Opcode op) {
  return op == Opcode::load || op == Opcode::masked_load || op == Opcode::store ||
         op == Opcode::store_reduction;
}

// A kernel's buffers in first-use order, with their roles.
class BufferTable {
 public:
  BufferTable(const std::string& kernel_name,
              const std::function<const Buffer*(std::string_view)>& lookup)
      : kernel_name_(kernel_name), lookup_(lookup) {}

  int32_t index(const std::string& name, bool write) {
    for (size_t i = 0; i < bufs.size(); ++i)
      if (bufs[i]->name() == name) {
        if (write && roles[i] == STAX_BUFFER_INPUT) roles[i] = STAX_BUFFER_INOUT;
        return static_cast<int32_t>(i);
      }
    const Buffer* b = lookup_(name);
    if (!b) throw Error("codegen", kernel_name_, "unknown buffer '" + name + "'");
    bufs.push_back(b);
    roles.push_back(write ? STAX_BUFFER_OUTPUT : STAX_BUFFER_INPUT);
    return static_cast<int32_t>(bufs.size() - 1);
  }

  std::vector<const Buffer*> bufs;
  std::vector<int32_t> roles;

 private:
  const std::string& kernel_name_;
  const std::function<const Buffer*(std::string_view)>& lookup_;
};

// The C op node of `op` (a statement of `body`), its buffer and index expression registered;
// the kernel's reduction type is the first reduction's.
StaxOpNode op_node(const LoopOp& op, const LoopBody& body, BufferTable& buffers,
                   ExprEmitter& emitter, int32_t& reduction_type) {
  StaxOpNode n{};
  n.opcode = static_cast<int32_t>(op.opcode);
  n.dtype = plugin_dtype_code(op.dtype);
  for (size_t i = 0; i < 3; ++i) n.operands[i] = op.operands[i];
  n.buffer = -1;
  n.expr = -1;
  if (is_memory_op(op.opcode)) {
    bool write = op.opcode == Opcode::store || op.opcode == Opcode::store_reduction;
    n.buffer = buffers.index(op.buffer, write);
    Expr rel =
        body.index_of(op) - Expr(buffers.bufs[static_cast<size_t>(n.buffer)]->layout().offset);
    n.expr = emitter.emit(rel);
  } else if (op.index >= 0) {
    n.expr = emitter.emit(body.index_of(op));
  }
  switch (op.opcode) {
    case Opcode::reduction:
      n.aux = static_cast<int32_t>(op.reduction);
      if (reduction_type == STAX_REDUCTION_NONE) reduction_type = n.aux;
      break;
    case Opcode::indirect_indexing:
      n.aux = (op.check ? STAX_INDIRECT_CHECK : 0) |
              (op.wrap_negative ? STAX_INDIRECT_WRAP_NEGATIVE : 0);
      n.imm_i64 = op.size;
      break;
    case Opcode::constant:
    case Opcode::masked_load:
      n.imm_f64 = op.imm.as_double();
      n.imm_i64 = op.imm.i;
      break;
    default:
      break;
  }
  return n;
}

// The C buffer descriptions (and the names, sizes and strides they point to).
void describe_buffers(KernelDesc::Storage& s, const BufferTable& buffers) {
  const std::vector<const Buffer*>& bufs = buffers.bufs;
  for (size_t i = 0; i < bufs.size(); ++i) {
    const Layout& l = bufs[i]->layout();
    s.buffer_names.push_back(bufs[i]->name());
    s.sizes.push_back(l.size);
    s.strides.push_back(l.stride);
  }
  for (size_t i = 0; i < bufs.size(); ++i) {
    StaxBufferDesc d{};
    d.struct_size = sizeof(StaxBufferDesc);
    d.name = s.buffer_names[i].c_str();
    d.dtype = plugin_dtype_code(bufs[i]->layout().dtype);
    d.role = buffers.roles[i];
    d.ndim = s.sizes[i].size();
    d.sizes = s.sizes[i].data();
    d.strides = s.strides[i].data();
    d.offset = bufs[i]->layout().offset;
    s.buffers.push_back(d);
  }
  for (const StaxBufferDesc& d : s.buffers) s.buffer_ptrs.push_back(&d);
}

// The iteration ranges and the C loop body descriptions over s.ops / s.exprs.
void describe_bodies(KernelDesc::Storage& s, const std::vector<const LoopBody*>& bodies) {
  if (!bodies.empty()) {
    s.ranges = bodies[0]->ranges;
    for (const LoopBody* b : bodies)
      if (b->is_reduction()) {
        s.reduction_ranges = b->reduction_ranges;
        break;
      }
  }
  for (size_t i = 0; i < bodies.size(); ++i) {
    StaxLoopBody b{};
    b.struct_size = sizeof(StaxLoopBody);
    b.name = s.body_names[i].c_str();
    b.loop = bodies[i]->is_reduction() ? STAX_BODY_REDUCTION_LOOP : STAX_BODY_POINTWISE;
    b.ops = s.ops[i].data();
    b.num_ops = s.ops[i].size();
    b.exprs = s.exprs[i].data();
    b.num_exprs = s.exprs[i].size();
    s.bodies.push_back(b);
  }
  for (const StaxLoopBody& b : s.bodies) s.body_ptrs.push_back(&b);
}

}  // namespace

int32_t append_expr(std::vector<StaxExprNode>& nodes, const Expr& e) {
  return ExprEmitter(nodes).emit(e);
}

KernelDesc make_kernel_desc(const std::string& kernel_name,
                            const std::vector<const LoopBody*>& bodies,
                            const std::vector<std::string>& body_names,
                            const std::function<const Buffer*(std::string_view)>& lookup) {
  KernelDesc k;
  KernelDesc::Storage& s = *k.s_;
  s.name = kernel_name;
  s.body_names = body_names;
  s.body_names.resize(bodies.size());

  BufferTable buffers(kernel_name, lookup);
  int32_t reduction_type = STAX_REDUCTION_NONE;
  for (const LoopBody* body : bodies) {
    std::vector<StaxOpNode> ops;
    std::vector<StaxExprNode> exprs;
    ExprEmitter emitter(exprs);
    for (const LoopOp& op : body->ops)
      ops.push_back(op_node(op, *body, buffers, emitter, reduction_type));
    s.ops.push_back(std::move(ops));
    s.exprs.push_back(std::move(exprs));
  }
  describe_buffers(s, buffers);
  describe_bodies(s, bodies);

  StaxKernelDesc& d = s.desc;
  d.struct_size = sizeof(StaxKernelDesc);
  d.name = s.name.c_str();
  d.buffers = s.buffer_ptrs.data();
  d.num_buffers = s.buffer_ptrs.size();
  d.ranges = s.ranges.data();
  d.num_ranges = s.ranges.size();
  d.reduction_ranges = s.reduction_ranges.data();
  d.num_reduction_ranges = s.reduction_ranges.size();
  d.reduction_type = reduction_type;
  d.bodies = s.body_ptrs.data();
  d.num_bodies = s.body_ptrs.size();
  d.index_bits = 32;
  auto offset_of = [&](const std::string& n) { return lookup(n)->layout().offset; };
  for (const LoopBody* b : bodies)
    if (index_bits(*b, offset_of) == 64) d.index_bits = 64;
  return k;
}

}  // namespace stax
