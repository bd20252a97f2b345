// Interpreter kernels of the composite ops. softmax, log_softmax, their backward ops and
// layer_norm are written directly and compute in double, rounding once to the result dtype: they
// are the accurate oracle the decompositions (which round after every op, in float32 for float32
// inputs) are compared against within float error bounds. Reductions inside them sum in the
// lexicographic order of the reduced indices. linear runs its decomposition (t, matmul, add) on
// the interpreter, so it matches the decomposed graph exactly.
#include <cmath>
#include <limits>

#include "core/graph/decompositions.h"
#include "core/graph/op_registry.h"
#include "core/interpreter/interpreter.h"
#include "core/ops/common/kernel_utils.h"
#include "core/ops/registration.h"

namespace stax {

namespace {

// Row-wise view of a reduction along some dims: for every output "row" (the kept dims), the offsets
// of its reduced elements in each of several same-shaped tensors.
struct Rows {
  std::vector<kernels::ReductionLayout> layouts;  // one per tensor
  size_t num_rows() const { return layouts[0].outer.size(); }
  size_t row_size() const { return layouts[0].inner.size(); }
  int64_t at(size_t tensor, size_t row, size_t j) const {
    return layouts[tensor].outer[row] + layouts[tensor].inner[j];
  }
};

Rows rows_of(const std::vector<const Tensor*>& ts, const std::vector<bool>& mask) {
  Rows r;
  for (const Tensor* t : ts) r.layouts.push_back(kernels::reduction_layout(*t, mask));
  return r;
}

std::vector<bool> dim_mask(const KernelContext& ctx, const Tensor& t, int64_t dim) {
  return kernels::reduction_mask(t.dim(), {dim}, "%" + ctx.node().name());
}

Tensor softmax_kernel(const KernelContext& ctx, bool log) {
  const Tensor& x = ctx.tensor("self");
  Tensor out = Tensor::empty(ctx.out_meta().sizes, ctx.out_meta().dtype);
  Rows rows = rows_of({&x, &out}, dim_mask(ctx, x, ctx.arg("dim").to_int()));
  kernels::Reader<double> rx(x);
  kernels::Writer<double> wo(out);
  std::vector<double> v(rows.row_size());
  for (size_t r = 0; r < rows.num_rows(); ++r) {
    double m = -std::numeric_limits<double>::infinity();
    for (size_t j = 0; j < v.size(); ++j) {
      v[j] = rx(rows.at(0, r, j));
      if (!std::isnan(m) && (std::isnan(v[j]) || v[j] > m)) m = v[j];  // NaN propagates
    }
    double sum = 0;
    for (size_t j = 0; j < v.size(); ++j) sum += std::exp(v[j] - m);
    double log_sum = std::log(sum);
    for (size_t j = 0; j < v.size(); ++j)
      wo(rows.at(1, r, j), log ? v[j] - m - log_sum : std::exp(v[j] - m) / sum);
  }
  return out;
}

Tensor softmax_backward_kernel(const KernelContext& ctx, bool log) {
  const Tensor& g = ctx.tensor("grad_output");
  const Tensor& y = ctx.tensor("output");
  Tensor out = Tensor::empty(ctx.out_meta().sizes, ctx.out_meta().dtype);
  Rows rows = rows_of({&g, &y, &out}, dim_mask(ctx, y, ctx.arg("dim").to_int()));
  kernels::Reader<double> rg(g), ry(y);
  kernels::Writer<double> wo(out);
  for (size_t r = 0; r < rows.num_rows(); ++r) {
    double s = 0;
    for (size_t j = 0; j < rows.row_size(); ++j)
      s += log ? rg(rows.at(0, r, j)) : rg(rows.at(0, r, j)) * ry(rows.at(1, r, j));
    for (size_t j = 0; j < rows.row_size(); ++j) {
      double gj = rg(rows.at(0, r, j)), yj = ry(rows.at(1, r, j));
      // softmax: y (g - sum(g y)); log_softmax: g - exp(y) sum(g)
      wo(rows.at(2, r, j), log ? gj - std::exp(yj) * s : gj * yj - yj * s);
    }
  }
  return out;
}

Tensor layer_norm_kernel(const KernelContext& ctx) {
  const Tensor& x = ctx.tensor("input");
  int64_t k = static_cast<int64_t>(ctx.arg("normalized_shape").to_int_list().size());
  Tensor out = Tensor::empty(ctx.out_meta().sizes, ctx.out_meta().dtype);
  std::vector<bool> mask(static_cast<size_t>(x.dim()), false);
  for (int64_t d = x.dim() - k; d < x.dim(); ++d) mask[d] = true;
  Rows rows = rows_of({&x, &out}, mask);
  double eps = ctx.arg("eps").to_double();
  // weight / bias have the normalized shape: their row-major offsets follow the inner order.
  auto affine = [&](const char* p, std::vector<double>& vals) {
    if (!ctx.arg(p).is_node()) return false;
    const Tensor& t = ctx.tensor(p);
    kernels::Reader<double> rd(t);
    for (int64_t o : kernels::element_offsets(t.sizes(), t.strides())) vals.push_back(rd(o));
    return true;
  };
  std::vector<double> w, b;
  bool has_w = affine("weight", w), has_b = affine("bias", b);
  kernels::Reader<double> rx(x);
  kernels::Writer<double> wo(out);
  size_t n = rows.row_size();
  std::vector<double> v(n);
  for (size_t r = 0; r < rows.num_rows(); ++r) {
    double mean = 0, var = 0;
    for (size_t j = 0; j < n; ++j) mean += v[j] = rx(rows.at(0, r, j));
    mean /= static_cast<double>(n);
    for (size_t j = 0; j < n; ++j) var += (v[j] - mean) * (v[j] - mean);
    var /= static_cast<double>(n);
    double rstd = 1.0 / std::sqrt(var + eps);
    for (size_t j = 0; j < n; ++j) {
      double y = (v[j] - mean) * rstd;
      if (has_w) y *= w[j];
      if (has_b) y += b[j];
      wo(rows.at(1, r, j), y);
    }
  }
  return out;
}

}  // namespace

// Builds a one-node graph of ctx's call over its runtime inputs, decomposes it (composite ops
// only) and interprets the result. The nested call keeps the node's name and attrs, and the
// nested run the outer run's seed, so a random op of the decomposition (sdpa's dropout) gets the
// rng_seed key decompose() gives it in a compiled graph and draws the same numbers.
namespace {

Tensor decompose_and_interpret(const KernelContext& ctx, bool expand_call) {
  const Node& n = ctx.node();
  Graph g(default_registry());
  std::unordered_map<const Node*, Node*> placeholder_of;
  std::vector<Tensor> inputs;
  for (Node* in : n.input_nodes()) {
    if (placeholder_of.count(in)) continue;  // one placeholder per distinct input (addmm(x, x, x))
    const Tensor& t = ctx.value(in);
    placeholder_of[in] = g.placeholder(in->name(), t.meta());
    inputs.push_back(t);
  }
  auto remap = [&](const Arg& a) {
    return map_nodes(a, [&](Node* x) { return placeholder_of.at(x); });
  };
  std::vector<Arg> args;
  for (const Arg& a : n.args()) args.push_back(remap(a));
  Kwargs kwargs;
  for (const auto& [k, v] : n.kwargs()) kwargs.emplace_back(k, remap(v));
  Node* call = g.call(n.target(), std::move(args), std::move(kwargs), n.name());
  call->attrs = n.attrs;
  g.output({call});
  if (expand_call) decompose_node(g, call);
  decompose(g);
  // The nested run reduces in the outer run's order, so a decomposition with reductions (std,
  // logsumexp, norm) matches the compiled decomposition in either order.
  InterpreterOptions options;
  options.reduction_order = ctx.reduction_order();
  options.seed = ctx.run_seed();
  return interpret(g, inputs, options).at(0);
}

}  // namespace

Tensor kernels::run_decomposition(const KernelContext& ctx) {
  return decompose_and_interpret(ctx, false);
}

Tensor kernels::run_base_op_decomposition(const KernelContext& ctx) {
  return decompose_and_interpret(ctx, true);
}

void register_composite_kernels(InterpreterTable& t) {
  for (const char* op : {"softmax.int", "_softmax.default"})
    t.add(op, [](const KernelContext& c) { return softmax_kernel(c, false); });
  for (const char* op : {"log_softmax.int", "_log_softmax.default"})
    t.add(op, [](const KernelContext& c) { return softmax_kernel(c, true); });
  t.add("_softmax_backward_data.default",
        [](const KernelContext& c) { return softmax_backward_kernel(c, false); });
  t.add("_log_softmax_backward_data.default",
        [](const KernelContext& c) { return softmax_backward_kernel(c, true); });
  t.add("layer_norm.default", layer_norm_kernel);
  t.add("linear.default", kernels::run_decomposition);
}

}  // namespace stax
