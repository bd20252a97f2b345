// Lowering rules of the matmul family (seed §6.1 item 2): ExternKernels. Their inputs are
// realized (a view of fixed storage is passed as strides and offset, without a copy), their
// output is a row-major FixedLayout buffer.
#include <string>
#include <vector>

#include "core/graph/op_traits.h"
#include "core/ops/common/lowering_helpers.h"
#include "core/ops/registration.h"

namespace stax {

namespace {

LoweringRule extern_kernel(std::string kernel, std::vector<std::string> params,
                           std::vector<std::string> scalar_params = {}) {
  return [kernel, params, scalar_params](GraphLowering& g, const Node& n) -> IRPtr {
    std::vector<IRPtr> values;
    std::vector<KernelInput> inputs;
    values.reserve(params.size());
    inputs.reserve(params.size());
    for (const std::string& p : params) {
      values.push_back(g.input(n, p));
      inputs.push_back(g.realize_input(values.back()));
    }
    std::vector<double> scalars;
    for (const std::string& p : scalar_params) scalars.push_back(n.arg(p).to_double());
    const TensorMeta& m = n.meta();
    auto k = std::make_shared<ExternKernel>(g.new_buffer_name(),
                                            Layout::fixed_contiguous(m.device, m.dtype, m.sizes),
                                            kernel, std::move(inputs), std::move(scalars), &n);
    k->add_origins(g.origins_for(values));
    g.register_buffer(k);
    return std::make_shared<StorageBox>(k);
  };
}

}  // namespace

void register_extern_rules(LoweringTable& t) {
  t.add("mm.default", extern_kernel("mm", {"self", "mat2"}), true);
  t.add("bmm.default", extern_kernel("bmm", {"self", "mat2"}), true);
  t.add("matmul.default", extern_kernel("matmul", {"self", "other"}), true);
  t.add("addmm.default", extern_kernel("addmm", {"self", "mat1", "mat2"}, {"beta", "alpha"}), true);
}

// The matrix products' ExternKernels write row-major rows in blocks: a pointwise kernel reading
// the product may run as its epilogue (core/scheduler/extern_epilogue.h).
void register_extern_traits(OpTraitTable& t) {
  for (const char* op : {"mm", "bmm", "matmul", "addmm"}) t.add_traits(op, kTraitProductEpilogue);
}

}  // namespace stax
