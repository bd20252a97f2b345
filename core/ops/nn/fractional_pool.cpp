// fractional_max_pool2d / fractional_max_pool3d (nn.FractionalMaxPool2d / 3d): max pooling over
// windows of kernel_size whose starts are spread pseudo-randomly by random_samples (N, C, 2 or 3),
// as torch's CPU kernel (FractionalMaxPool2d.cpp): per plane and spatial dim, with the plane's
// sample u (for 2-D: u[0] for W, u[1] for H; for 3-D: u[0] T, u[1] H, u[2] W),
//   alpha = (in - pool) / (out - 1)   (in the input's type)
//   start[i] = int((i + u) * alpha) - int(u * alpha), and start[out - 1] = in - pool
// then the maximum of each window (the first in row-major order among equal values) and its
// index in the plane (h * W + w, or (t * H + h) * W + w). The window starts depend on the values of
// random_samples, so they are computed in the graph: every window offset's flat index is one
// candidate, the candidates are gathered and the first argmax picks the value and index.
// Tuple-valued (values, indices), expanded into single-output ops; the gradient goes through the
// gather (torch's backward scatters the gradient to the indices).
#include <string>
#include <vector>

#include "core/graph/multi_output.h"
#include "core/graph/op_registry.h"
#include "core/ops/registration.h"

namespace stax {

namespace {

using Ints = std::vector<int64_t>;

// The window starts along one dim: (N, C, out) int64.
Node* window_starts(Graph& g, Node* u, int64_t in, int64_t out, int64_t pool, DType t) {
  int64_t last = in - pool;
  if (out == 1) return g.call("full", {Arg(Shape{u->shape()[0], u->shape()[1], 1}), last}, {{"dtype", Arg(DType::Int64)}});
  double alpha = static_cast<double>(in - pool) / static_cast<double>(out - 1);
  if (t != DType::Float64) alpha = static_cast<float>(alpha);
  Node* i = g.call("arange", {out}, {{"dtype", Arg(t)}});
  Node* us = g.call("unsqueeze", {u, 2});
  Node* a = g.call("to.dtype", {g.call("trunc", {g.call("mul.Scalar", {g.call("add.Tensor", {i, us}), alpha})}), DType::Int64});
  Node* b = g.call("to.dtype", {g.call("trunc", {g.call("mul.Scalar", {us, alpha})}), DType::Int64});
  Node* s = g.call("sub.Tensor", {a, b});
  Node* is_last = g.call("eq.Scalar", {g.call("arange", {out}), out - 1});
  return g.call("where.self", {is_last, g.call("full_like", {s, last}), s});
}

std::vector<Node*> fractional_max_pool(Graph& g, const ExpandCall& c, int k) {
  Node* x = c.tensor("self");
  Node* samples = c.tensor("random_samples");
  Ints kernel = c.get("kernel_size").to_int_list(), out = c.get("output_size").to_int_list();
  if (static_cast<int>(kernel.size()) != k || static_cast<int>(out.size()) != k)
    c.fail("kernel_size and output_size must have " + std::to_string(k) + " elements");
  int64_t rank = x->meta().dim();
  if (rank != k + 1 && rank != k + 2)
    c.fail("fractional_max_pool" + std::to_string(k) + "d: expected a " + std::to_string(k + 1) +
           "-D or " + std::to_string(k + 2) + "-D input, got " + shape_str(x->shape()));
  if (!is_floating(x->dtype())) c.fail("fractional_max_pool: expected a floating-point input");
  bool batched = rank == k + 2;
  if (!batched) x = g.call("unsqueeze", {x, 0});
  const Shape& s = x->shape();
  int64_t N = s[0], C = s[1], plane = 1, P = 1, K = 1;
  for (int d = 0; d < k; ++d) {
    int64_t in = s[2 + d];
    if (kernel[d] <= 0 || out[d] <= 0) c.fail("kernel_size and output_size must be positive");
    if (out[d] + kernel[d] - 1 > in)
      c.fail("fractional_max_pool: output_size " + shape_list_str(out) + " and kernel_size " +
             shape_list_str(kernel) + " are too large for the input " + shape_str(s));
    plane *= in;
    P *= out[d];
    K *= kernel[d];
  }
  const Shape& ss = samples->shape();
  if (ss.size() != 3 || ss[0] != N || ss[1] != C || ss[2] != k)
    c.fail("random_samples must have shape (" + std::to_string(N) + ", " + std::to_string(C) + ", " +
           std::to_string(k) + "), got " + shape_str(ss));
  DType t = x->dtype();
  Node* us = samples->dtype() == t ? samples : g.call("to.dtype", {samples, t});
  // 2-D: sample 0 drives W and sample 1 H; 3-D: samples 0, 1, 2 drive T, H, W.
  std::vector<Node*> starts(static_cast<size_t>(k));
  for (int d = 0; d < k; ++d) {
    int which = k == 2 ? 1 - d : d;
    Node* u = g.call("select.int", {us, 2, which});
    starts[static_cast<size_t>(d)] = window_starts(g, u, s[2 + d], out[d], kernel[d], t);
  }
  // candidates: (N, C, out..., K) flat indices into the plane, window offsets in row-major order
  std::vector<Node*> cands;
  for (int64_t w = 0; w < K; ++w) {
    Node* flat = nullptr;
    int64_t rest = w;
    Ints off(static_cast<size_t>(k));
    for (int d = k - 1; d >= 0; --d) {
      off[static_cast<size_t>(d)] = rest % kernel[d];
      rest /= kernel[d];
    }
    for (int d = 0; d < k; ++d) {
      Node* p = g.call("add.Scalar", {starts[static_cast<size_t>(d)], off[static_cast<size_t>(d)]});
      Shape view{N, C};
      for (int e = 0; e < k; ++e) view.push_back(e == d ? out[d] : 1);
      p = g.call("reshape", {p, Arg(view)});
      flat = flat ? g.call("add.Tensor", {g.call("mul.Scalar", {flat, s[2 + d]}), p}) : p;
    }
    Shape full{N, C};
    full.insert(full.end(), out.begin(), out.end());
    cands.push_back(g.call("expand", {flat, Arg(full)}));
  }
  Node* idx = g.call("reshape", {g.call("stack", {Arg(cands), -1}), Arg(Shape{N, C, P * K})});
  Node* vals = g.call("gather", {g.call("reshape", {x, Arg(Shape{N, C, plane})}), 2, idx});
  vals = g.call("reshape", {vals, Arg(Shape{N, C, P, K})});
  Node* pick = g.call("argmax", {vals, 3, true});
  Node* value = g.call("gather", {vals, 3, pick});
  Node* index = g.call("gather", {g.call("reshape", {idx, Arg(Shape{N, C, P, K})}), 3, pick});
  Shape result{N, C};
  result.insert(result.end(), out.begin(), out.end());
  if (!batched) result.erase(result.begin());
  return {g.call("reshape", {value, Arg(result)}), g.call("reshape", {index, Arg(result)})};
}

struct PoolOp {
  const char* schema;
  int k;
};

const std::vector<PoolOp>& pool_ops() {
  static const std::vector<PoolOp> table = {
      {"fractional_max_pool2d(Tensor self, int[2] kernel_size, int[2] output_size, Tensor "
       "random_samples) -> (Tensor, Tensor)",
       2},
      {"fractional_max_pool3d(Tensor self, int[3] kernel_size, int[3] output_size, Tensor "
       "random_samples) -> (Tensor, Tensor)",
       3},
  };
  return table;
}

}  // namespace

void register_fractional_pool_ops(OpRegistry& r) {
  for (const PoolOp& op : pool_ops())
    r.add_multi(op.schema, OpCategory::Composite, infer_by_expansion(parse_schema(op.schema).name));
}

void register_fractional_pool_expansions(ExpansionTable& t) {
  for (const PoolOp& op : pool_ops()) {
    int k = op.k;
    t.add(parse_schema(op.schema).name,
          [k](Graph& g, const ExpandCall& c) { return fractional_max_pool(g, c, k); });
  }
}

}  // namespace stax
