// Decompositions of the Composite nn ops (seed §4.8): softmax / log_softmax and their backward
// ops, layer_norm, linear. float16 / bfloat16 inputs of softmax, log_softmax and layer_norm are
// computed in float32 and converted back (as torch's decompositions do).
#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/graph/decompositions.h"
#include "core/graph/op_traits.h"
#include "core/ops/common/decomposition_helpers.h"
#include "core/ops/registration.h"

namespace stax {
namespace {

using Ints = std::vector<int64_t>;
using decomp::cast;
using decomp::is_half_like;

Node* softmax_decomp(Graph& g, const Node& n, bool log) {
  Node* x = n.input(0);
  Ints dim{n.arg("dim").to_int()};
  bool has_dtype = n.op()->schema.index_of("dtype") >= 0;  // softmax.int (else _softmax)
  if (has_dtype && n.arg("dtype").is_dtype() && x->dtype() != n.arg("dtype").dtype())
    x = cast(g, x, n.arg("dtype").dtype());
  DType in = x->dtype();
  // No elements (OpInfo's (5, 0, 0) sample): an empty result, without amax over a zero-size
  // dimension (a reduction without identity, which Stax rejects).
  if (shape_numel(x->shape()) == 0) return g.call("clone", {cast(g, x, n.dtype())});
  bool up = is_half_like(in);
  if (up) x = cast(g, x, DType::Float32);
  Node* m = g.call("amax", {x, dim, true});
  Node* shifted = g.call("sub.Tensor", {x, m});
  Node* e = g.call("exp", {shifted});
  Node* z = g.call("sum.dim_IntList", {e, dim, true});
  Node* y =
      log ? g.call("sub.Tensor", {shifted, g.call("log", {z})}) : g.call("div.Tensor", {e, z});
  return up && (has_dtype || !n.arg("half_to_float").to_bool()) ? cast(g, y, in) : y;
}

Node* softmax_backward_decomp(Graph& g, const Node& n) {
  Node* grad = n.input(0);
  Node* y = n.input(1);
  Ints dim{n.arg("dim").to_int()};
  Node* gy = g.call("mul.Tensor", {grad, y});
  Node* s = g.call("sum.dim_IntList", {gy, dim, true});
  Node* gi = g.call("sub.Tensor", {gy, g.call("mul.Tensor", {y, s})});
  return cast(g, gi, n.arg("input_dtype").dtype());
}

Node* log_softmax_backward_decomp(Graph& g, const Node& n) {
  Node* grad = n.input(0);
  Node* y = n.input(1);
  Ints dim{n.arg("dim").to_int()};
  Node* s = g.call("sum.dim_IntList", {grad, dim, true});
  Node* gi = g.call("sub.Tensor", {grad, g.call("mul.Tensor", {g.call("exp", {y}), s})});
  return cast(g, gi, n.arg("input_dtype").dtype());
}

Node* layer_norm_decomp(Graph& g, const Node& n) {
  Node* x = n.input(0);
  DType in = x->dtype();
  int64_t k = static_cast<int64_t>(n.arg("normalized_shape").to_int_list().size());
  Ints dims;
  for (int64_t d = x->meta().dim() - k; d < x->meta().dim(); ++d) dims.push_back(d);
  if (is_half_like(in)) x = cast(g, x, DType::Float32);
  Node* mean = g.call("mean.dim", {x, dims, true});
  Node* xc = g.call("sub.Tensor", {x, mean});
  Node* var = g.call("mean.dim", {g.call("mul.Tensor", {xc, xc}), dims, true});
  Node* rstd = g.call("rsqrt", {g.call("add.Scalar", {var, n.arg("eps").to_double()})});
  Node* y = g.call("mul.Tensor", {xc, rstd});
  if (n.arg("weight").is_node()) y = g.call("mul.Tensor", {y, n.arg("weight").node()});
  if (n.arg("bias").is_node()) y = g.call("add.Tensor", {y, n.arg("bias").node()});
  return cast(g, y, in);
}

Node* linear_decomp(Graph& g, const Node& n) {
  Node* y = g.call("matmul", {n.input(0), g.call("t", {n.input(1)})});
  if (n.arg("bias").is_node()) y = g.call("add.Tensor", {y, n.arg("bias").node()});
  return y;
}

}  // namespace

void register_composite_decompositions(DecompositionTable& t) {
  for (const char* op : {"softmax.int", "_softmax.default"})
    t.add(op, [](Graph& g, const Node& n) { return softmax_decomp(g, n, false); });
  for (const char* op : {"log_softmax.int", "_log_softmax.default"})
    t.add(op, [](Graph& g, const Node& n) { return softmax_decomp(g, n, true); });
  t.add("_softmax_backward_data.default", softmax_backward_decomp);
  t.add("_log_softmax_backward_data.default", log_softmax_backward_decomp);
  t.add("layer_norm.default", layer_norm_decomp);
  t.add("linear.default", linear_decomp);
}

// linear holds a matrix product (its decomposition's matmul): never recomputed, and its inputs
// are materialized for it, as an extern kernel's (core/graph/op_traits.h).
void register_composite_traits(OpTraitTable& t) { t.add_traits("linear", kTraitOpaque); }

}  // namespace stax
