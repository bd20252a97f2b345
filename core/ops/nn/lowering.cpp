// Lowering rule of convolution (seed §6.1 item 2): an ExternKernel "convolution" whose inputs are
// input, weight (and bias when given), realized; its scalars encode the geometry:
//   [spatial dims S, stride x S, padding x S, dilation x S, transposed (0/1), output_padding x S,
//    groups]
// A backend offering the extern "convolution" runs it (cpu_cpp: im2col + gemm); on any other the
// executor runs the interpreter's kernel (a fallback, counted as such), as it does for integer
// dtypes on every backend. The other nn ops are
// Composite and reach lowering as base ops through their decompositions.
#include "core/ops/nn/params.h"
#include "core/ops/common/lowering_helpers.h"
#include "core/ops/registration.h"

namespace stax {

namespace {

IRPtr convolution_rule(GraphLowering& g, const Node& n) {
  // integer convolution (wrapping, as torch's slow path): the interpreter's kernel, a fallback
  if (!is_floating(n.meta().dtype)) return nullptr;
  std::vector<IRPtr> values;
  std::vector<KernelInput> inputs;
  for (const char* p : {"input", "weight", "bias"}) {
    if (!n.arg(p).is_node()) continue;
    values.push_back(g.input(n, p));
    inputs.push_back(g.realize_input(values.back()));
  }
  size_t sp = static_cast<size_t>(n.meta().dim() - 2);
  nn::ConvParams p =
      nn::conv_params([&n](const char* k) -> const Arg& { return n.arg(k); }, sp, "%" + n.name());
  std::vector<double> scalars{static_cast<double>(sp)};
  for (const nn::Ints* v : {&p.stride, &p.padding, &p.dilation})
    for (int64_t x : *v) scalars.push_back(static_cast<double>(x));
  scalars.push_back(p.transposed ? 1.0 : 0.0);
  for (int64_t x : p.output_padding) scalars.push_back(static_cast<double>(x));
  scalars.push_back(static_cast<double>(p.groups));
  const TensorMeta& m = n.meta();
  auto k = std::make_shared<ExternKernel>(g.new_buffer_name(),
                                          Layout::fixed_contiguous(m.device, m.dtype, m.sizes),
                                          "convolution", std::move(inputs), std::move(scalars), &n);
  k->add_origins(g.origins_for(values));
  g.register_buffer(k);
  return std::make_shared<StorageBox>(k);
}

}  // namespace

void register_nn_rules(LoweringTable& t) { t.add("convolution.default", convolution_rule, true); }

}  // namespace stax
