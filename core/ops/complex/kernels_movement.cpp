// Interpreter kernels of the complex forms of cat, mm / bmm and index / index_put
// (docs/complex.md): cat copies between strided views of any element size (Tensor::as_strided,
// copy_from); the products accumulate c10::complex products in order over k; index, index_put
// and index_select run their real kernels on the real views (the indices address the leading dims, the views'
// trailing pair dim follows, accumulation adds the parts). The Composite ops complex arithmetic extends
// (constant_pad_nd, the scatters, copy, rsub, angle, sgn ...) run their complex decompositions.
#include <algorithm>
#include <complex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/graph/decompositions.h"
#include "core/graph/graph.h"
#include "core/graph/op_registry.h"
#include "core/ops/complex/complex_kernel.h"
#include "core/ops/registration.h"

namespace stax {
namespace {

using namespace complex_kernels;  // NOLINT: the complex kernels' vocabulary

std::string where_of(const KernelContext& c) { return "%" + c.node().name(); }

// Entries start, start + step, ... (len of them) of dim d of t, as a view.
Tensor slice_view(const Tensor& t, int64_t d, int64_t start, int64_t len, int64_t step) {
  Shape sz = t.sizes(), st = t.strides();
  auto k = static_cast<size_t>(d);
  int64_t offset = t.storage_offset() + start * st[k];
  sz[k] = len;
  st[k] *= step;
  return t.as_strided(sz, st, offset);
}

Tensor cat_kernel(const KernelContext& c) {
  const TensorMeta& m = c.out_meta();
  Tensor out = kernels::empty_output(m);
  int64_t d = wrap_dim(c.arg("dim").to_int(), out.dim(), where_of(c));
  int64_t at = 0;
  for (const Tensor& t : c.tensor_list("tensors")) {
    if (t.dim() == 1 && t.numel() == 0 && out.dim() != 1) continue;  // torch's legacy empty
    int64_t len = t.sizes()[static_cast<size_t>(d)];
    slice_view(out, d, at, len, 1).copy_from(converted(t, m.dtype));
    at += len;
  }
  return out;
}

// mm (2-D) and bmm (3-D): out[b, i, j] = sum over k of a[b, i, k] * b[b, k, j], in order of k.
Tensor product_kernel(const KernelContext& c) {
  DType cd = c.out_meta().dtype;
  Tensor a = converted(c.tensor("self"), cd), b = converted(c.tensor("mat2"), cd);
  Tensor out = Tensor::empty(c.out_meta().sizes, cd);  // contiguous, as mm_rule infers
  bool batched = a.dim() == 3;
  int64_t nb = batched ? a.size(0) : 1, n = a.size(-2), kk = a.size(-1), p = b.size(-1);
  int64_t sa = batched ? a.stride(0) : 0, sb = batched ? b.stride(0) : 0;
  dispatch_complex(cd, [&](auto tag) {
    using C = typename decltype(tag)::type;
    const C* pa = a.template data<C>();
    const C* pb = b.template data<C>();
    C* po = out.template data<C>();
    for (int64_t q = 0; q < nb; ++q)
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < p; ++j) {
          C s(0);
          for (int64_t k = 0; k < kk; ++k)
            s += cmul(pa[q * sa + i * a.stride(-2) + k * a.stride(-1)],
                      pb[q * sb + k * b.stride(-2) + j * b.stride(-1)]);
          po[(q * n + i) * p + j] = s;
        }
  });
  return out;
}

// The node's op on the real views of its complex tensor arguments (view_as_real: one more
// trailing dim of 2), its result viewed as complex again: a one-node graph over ctx's inputs,
// interpreted with the ops' real kernels.
Tensor on_real_views(const KernelContext& ctx) {
  const Node& n = ctx.node();
  Graph g(default_registry());
  std::unordered_map<const Node*, Node*> view_of;
  std::vector<Tensor> inputs;
  for (Node* in : n.input_nodes()) {
    if (view_of.count(in)) continue;
    const Tensor& t = ctx.value(in);
    Node* p = g.placeholder(in->name(), t.meta());
    // A 0-d tensor indexed along dim 0 (index_select allows it) as a 1-element vector, so that
    // dim 0 never names the pair dim; the result takes the node's shape at the end.
    if (is_complex(t.dtype()) && t.dim() == 0) p = g.call("reshape", {p, std::vector<int64_t>{1}});
    view_of[in] = is_complex(t.dtype()) ? g.call("view_as_real", {p}) : p;
    inputs.push_back(t);
  }
  auto remap = [&](const Arg& a) { return map_nodes(a, [&](Node* x) { return view_of.at(x); }); };
  std::vector<Arg> args;
  for (const Arg& a : n.args()) args.push_back(remap(a));
  // A dim (index_select's) as a non-negative index: it then names the same dim of the real view.
  const auto& params = n.op()->schema.params;
  for (size_t i = 0; i < args.size() && i < params.size(); ++i)
    if (params[i].name == "dim" && args[i].is_int())
      args[i] = Arg(wrap_dim(args[i].to_int(), std::max<int64_t>(1, n.input(0)->meta().dim()),
                             where_of(ctx)));
  Kwargs kwargs;
  for (const auto& [k, v] : n.kwargs()) kwargs.emplace_back(k, remap(v));
  Node* r = g.call("view_as_complex", {g.call(n.target(), std::move(args), std::move(kwargs))});
  g.output({g.call("reshape", {r, ctx.out_meta().sizes})});
  return interpret(g, inputs).at(0);
}

// cumsum of complex values: complex addition is componentwise, so it is the real cumsum along the
// same dim of the real view (view_as_real's trailing pair untouched), in the result's dtype
// (converted first, as torch's dtype=).
Tensor cumsum_kernel(const KernelContext& c) {
  const Node& n = c.node();
  const Tensor& x = c.value(n.input(0));
  const DType out = c.out_meta().dtype;
  Graph g(default_registry());
  Node* p = g.placeholder("self", x.meta());
  if (x.dtype() != out) p = g.call("_to_copy", {p}, {{"dtype", out}});
  if (x.dim() == 0) p = g.call("reshape", {p, std::vector<int64_t>{1}});
  int64_t d = wrap_dim(n.arg("dim").to_int(), std::max<int64_t>(1, x.dim()), where_of(c));
  Node* r = g.call("view_as_complex", {g.call("cumsum", {g.call("view_as_real", {p}), d})});
  g.output({g.call("reshape", {r, c.out_meta().sizes})});
  return interpret(g, {x}).at(0);
}

}  // namespace

void register_complex_movement_kernels(InterpreterTable& t) {
  extend_kernel(t, "cat.default", cat_kernel);
  for (const char* op : {"index.Tensor", "index_put.default", "index_select.default"})
    extend_kernel(t, op, on_real_views);
  for (const char* op : {"mm.default", "bmm.default"}) extend_kernel(t, op, product_kernel);
  // The Composite ones run their complex decompositions (decompositions.cpp), as compiled graphs
  // do.
  for (const char* op : {"constant_pad_nd.default", "slice_scatter.default",
                         "select_scatter.default", "slice_backward.default",
                         "select_backward.default", "copy.default", "new_zeros.default",
                         "new_empty.default", "rsub.Scalar", "angle.default", "sgn.default"})
    extend_kernel(t, op, [](const KernelContext& c) { return kernels::run_decomposition(c); });
  // addmm of complex values: its decomposition (mm and the scaled sum, extern/decompositions.cpp);
  // addmm is an Extern op, which decompose() keeps, so the call is expanded explicitly.
  extend_kernel(t, "addmm.default", kernels::run_base_op_decomposition);
  extend_kernel(t, "cumsum.default", cumsum_kernel);
}

}  // namespace stax
