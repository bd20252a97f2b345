#include "core/codegen/kernel_canonical.h"

#include <cstring>

namespace stax {

namespace {

struct Writer {
  std::string out;
  void i64(int64_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void f64(double v) {  // by bits: -0.0 and NaN payloads stay distinct
    uint64_t b;
    std::memcpy(&b, &v, sizeof b);
    i64(static_cast<int64_t>(b));
  }
  void tag(char c) { out.push_back(c); }
};

}  // namespace

std::string canonical_kernel_bytes(const StaxKernelDesc& k) {
  Writer w;
  w.out.reserve(1024);
  w.tag('K');
  w.i64(static_cast<int64_t>(k.num_ranges));
  for (size_t i = 0; i < k.num_ranges; ++i) w.i64(k.ranges[i]);
  w.i64(static_cast<int64_t>(k.num_reduction_ranges));
  for (size_t i = 0; i < k.num_reduction_ranges; ++i) w.i64(k.reduction_ranges[i]);
  w.i64(k.reduction_type);
  w.i64(k.struct_size >= offsetof(StaxKernelDesc, index_bits) + sizeof(int32_t) ? k.index_bits
                                                                                : 64);
  w.i64(static_cast<int64_t>(k.num_buffers));
  for (size_t b = 0; b < k.num_buffers; ++b) {
    const StaxBufferDesc& d = *k.buffers[b];
    w.tag('B');
    w.i64(d.dtype);
    w.i64(d.role);
    w.i64(static_cast<int64_t>(d.ndim));
    for (size_t i = 0; i < d.ndim; ++i) w.i64(d.sizes[i]);
    for (size_t i = 0; i < d.ndim; ++i) w.i64(d.strides[i]);
    w.i64(d.offset);
  }
  w.i64(static_cast<int64_t>(k.num_bodies));
  for (size_t b = 0; b < k.num_bodies; ++b) {
    const StaxLoopBody& body = *k.bodies[b];
    w.tag('L');
    w.i64(body.loop);
    w.i64(static_cast<int64_t>(body.num_ops));
    for (size_t i = 0; i < body.num_ops; ++i) {
      const StaxOpNode& n = body.ops[i];
      w.tag('o');
      w.i64(n.opcode);
      w.i64(n.dtype);
      for (int j = 0; j < 3; ++j) w.i64(n.operands[j]);
      w.i64(n.buffer);
      w.i64(n.expr);
      w.i64(n.aux);
      w.f64(n.imm_f64);
      w.i64(n.imm_i64);
    }
    w.i64(static_cast<int64_t>(body.num_exprs));
    for (size_t i = 0; i < body.num_exprs; ++i) {
      const StaxExprNode& e = body.exprs[i];
      w.tag('e');
      w.i64(e.kind);
      w.i64(e.lhs);
      w.i64(e.rhs);
      w.i64(e.value);
    }
  }
  return w.out;
}

}  // namespace stax
