// The bridge from core's LoopBody to the plugin boundary's C kernel description
// (sdk/include/stax/plugin_api.h: StaxKernelDesc with StaxLoopBody op-node arrays and
// StaxExprNode expression arrays). The copy is one to one: Opcode, ReductionType and DType share
// the C numbering; index expressions become expression DAGs whose SDK spelling (format_expr)
// equals Expr::str().
//
// Addressing: a buffer's StaxBufferDesc carries its layout (sizes, strides, offset); LOAD/STORE
// expressions are element offsets from the data pointer + that offset, so the layout offset that
// core's index expressions include is subtracted.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/ir/ir.h"
#include "stax/plugin_api.h"

namespace stax {

// Owns a StaxKernelDesc and everything it points to (addresses stay valid when moved).
class KernelDesc {
 public:
  KernelDesc();
  KernelDesc(KernelDesc&&) noexcept;
  KernelDesc& operator=(KernelDesc&&) noexcept;
  ~KernelDesc();

  const StaxKernelDesc* get() const;
  // The buffers in StaxKernelDesc order (the order run() expects data pointers in).
  const std::vector<std::string>& buffer_names() const;

  struct Storage;

 private:
  std::unique_ptr<Storage> s_;
  friend KernelDesc make_kernel_desc(const std::string&, const std::vector<const LoopBody*>&,
                                     const std::vector<std::string>&,
                                     const std::function<const Buffer*(std::string_view)>&);
};

// A kernel running `bodies` (in order, over one iteration space: every body has the same ranges;
// reduction bodies the same reduction ranges) named `kernel_name`. `body_names` names each body
// (the IR node it came from). `lookup` gives every buffer a body loads or stores. Buffers are
// listed in first-use order; written ones get role OUTPUT (INOUT when also read before), the rest
// INPUT. index_bits is 32 when every body's index arithmetic fits int32 (index_bits(),
// core/ir/index_bounds.h). Throws stax::Error for an unknown buffer.
KernelDesc make_kernel_desc(const std::string& kernel_name,
                            const std::vector<const LoopBody*>& bodies,
                            const std::vector<std::string>& body_names,
                            const std::function<const Buffer*(std::string_view)>& lookup);

// Appends `e` (relative to nothing: offsets are not subtracted) to a StaxExprNode array, reusing
// nodes already there for equal subexpressions; returns the root's index.
int32_t append_expr(std::vector<StaxExprNode>& nodes, const Expr& e);

}  // namespace stax
