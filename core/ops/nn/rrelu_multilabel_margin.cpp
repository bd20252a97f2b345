// rrelu and multilabel_margin_loss, with their aten forms (torch traces emit them rarely),
// Composite, one builder each (core/ops/common/built_ops.h).
//
// rrelu (nn.RReLU, F.rrelu), on rrelu_with_noise_functional (core/ops/multi_output/schemas.cpp:
// the slopes drawn from the node's seed in training, leaky_relu with the mean slope in eval):
//   rrelu(self, lower, upper, training)   the functional's output (noise: zeros, not kept)
//   rrelu_with_noise(self, noise(b!), ...) the functional's output; in training the drawn slopes
//                                         are written into noise (the mutation rule,
//                                         core/ops/mutation/rules.cpp)
//   rrelu_with_noise_backward(grad, self, noise, lower, upper, training, self_is_result)
//                                         torch's formula: training with upper - lower > 1e-6:
//                                         grad * noise; else leaky_relu_backward with the mean
//                                         slope
//
// multilabel_margin_loss (nn.MultiLabelMarginLoss), on multilabel_margin_loss_forward (its tuple
// form, core/ops/multi_output/schemas.cpp; the formula in multilabel_margin.h):
//   multilabel_margin_loss(self, target, reduction)   the forward's output
//   multilabel_margin_loss_backward(grad_output, self, target, reduction, is_target)   torch's
//       kernel: each counted term (valid j, i not a target, margin > 0) adds 1/C to x[i]'s
//       gradient and -1/C to x[y_j]'s (divided by N for mean), times grad_output
#include <string>
#include <vector>

#include "core/graph/multi_output.h"
#include "core/ops/common/built_ops.h"
#include "core/ops/nn/multilabel_margin.h"
#include "core/ops/registration.h"

namespace stax {

namespace {

Node* rrelu_output(Graph& g, const ExpandCall& c, Node* noise) {
  Node* x = c.tensor("self");
  if (!c.get("training").to_bool()) {
    if (!is_floating(x->dtype()))
      c.fail("rrelu expects a floating-point input, got " + std::string(dtype_name(x->dtype())));
    double lo = c.get("lower").to_double(), hi = c.get("upper").to_double();
    return g.call("leaky_relu", {x, (lo + hi) / 2});
  }
  Node* t = g.call("rrelu_with_noise_functional",
                   {x, noise, c.get("lower"), c.get("upper"), true});
  return g.call("getitem", {t, int64_t{0}});
}

Node* rrelu(Graph& g, const ExpandCall& c) {
  Node* x = c.tensor("self");
  // torch's rrelu checks the bounds in both modes; rrelu_with_noise only in training (its
  // functional form's rule, core/ops/multi_output/schemas.cpp).
  if (c.get("lower").to_double() > c.get("upper").to_double())
    c.fail("rrelu: the lower bound must be less than or equal to the upper bound (as torch)");
  Node* noise = c.get("training").to_bool() ? g.call("zeros_like", {x}) : nullptr;
  return rrelu_output(g, c, noise);
}

Node* rrelu_with_noise(Graph& g, const ExpandCall& c) {
  return rrelu_output(g, c, c.tensor("noise"));
}

Node* rrelu_with_noise_backward(Graph& g, const ExpandCall& c) {
  Node* grad = c.tensor("grad_output");
  double lo = c.get("lower").to_double(), hi = c.get("upper").to_double();
  if (c.get("training").to_bool() && hi - lo > 1e-6)
    return g.call("mul.Tensor", {grad, c.tensor("noise")});
  return g.call("leaky_relu_backward",
                {grad, c.tensor("self"), (lo + hi) / 2, c.get("self_is_result")});
}

Node* multilabel_margin_loss(Graph& g, const ExpandCall& c) {
  Node* t = g.call("multilabel_margin_loss_forward",
                   {c.tensor("self"), c.tensor("target"), c.get("reduction")});
  return g.call("getitem", {t, int64_t{0}});
}

Node* multilabel_margin_loss_backward(Graph& g, const ExpandCall& c) {
  Node* x = c.tensor("self");
  Node* y = c.tensor("target");
  Node* go = c.tensor("grad_output");
  int64_t reduction = c.get("reduction").to_int();
  int64_t rank = x->meta().dim();
  if (!is_floating(x->dtype()) || y->shape() != x->shape() || rank > 2 ||
      c.tensor("is_target")->shape() != x->shape())
    c.fail("multilabel_margin_loss_backward expects a floating self of 0 to 2 dims and a target "
           "and is_target of its shape, got " + shape_str(x->shape()) + ", " +
           shape_str(y->shape()) + " and " + shape_str(c.tensor("is_target")->shape()));
  int64_t classes = rank == 2 ? x->shape()[1] : (rank == 1 ? x->shape()[0] : 1);
  int64_t n = rank == 2 ? x->shape()[0] : 1;
  auto as2 = [&](Node* v) {
    return rank == 2 ? v : g.call("reshape", {v, Arg(Shape{1, classes})});
  };
  Node* x2 = as2(x);
  nn::MultilabelMargin m = nn::multilabel_margin(g, x2, as2(y), as2(c.tensor("is_target")));
  Node* z = g.call("to.dtype", {m.active, x->dtype()});
  Node* gi = g.call("sum.dim_IntList", {z, Arg(std::vector<int64_t>{1})});  // (N, C_i)
  Node* gt = g.call("sum.dim_IntList", {z, Arg(std::vector<int64_t>{2})});  // (N, C_j)
  Node* gx = g.call("sub.Tensor", {gi, g.call("scatter_add", {g.call("zeros_like", {x2}), int64_t{1},
                                                               m.target_index, gt})});
  double scale = 1.0 / static_cast<double>(classes) / (reduction == 1 ? static_cast<double>(n) : 1.0);
  gx = g.call("mul.Scalar", {gx, scale});
  Node* w = reduction == 0 && rank == 2 ? g.call("unsqueeze", {go, int64_t{1}}) : go;
  gx = g.call("mul.Tensor", {gx, w});
  return rank == 2 ? gx : g.call("reshape", {gx, Arg(x->shape())});
}

const std::vector<BuiltOp>& rrelu_multilabel_margin_forms() {
  static const std::vector<BuiltOp> table = {
      {"rrelu(Tensor self, Scalar lower=0.125, Scalar upper=0.33333333333333331, bool "
       "training=False, Generator? generator=None) -> Tensor",
       rrelu},
      {"rrelu_with_noise(Tensor self, Tensor(b!) noise, Scalar lower=0.125, Scalar "
       "upper=0.33333333333333331, bool training=False, Generator? generator=None) -> Tensor",
       rrelu_with_noise},
      {"rrelu_with_noise_backward(Tensor grad_output, Tensor self, Tensor noise, Scalar lower, "
       "Scalar upper, bool training, bool self_is_result) -> Tensor",
       rrelu_with_noise_backward},
      {"multilabel_margin_loss(Tensor self, Tensor target, int reduction=1) -> Tensor",
       multilabel_margin_loss},
      {"multilabel_margin_loss_backward(Tensor grad_output, Tensor self, Tensor target, int "
       "reduction, Tensor is_target) -> Tensor",
       multilabel_margin_loss_backward},
  };
  return table;
}

}  // namespace

// Declared in core/ops/install.cpp (kept out of registration.h, which every op file includes).
void register_rrelu_multilabel_margin_ops(OpRegistry& r);
void register_rrelu_multilabel_margin_decompositions(DecompositionTable& t);
void register_rrelu_multilabel_margin_kernels(InterpreterTable& t);
void register_rrelu_multilabel_margin_vjps(VjpTable& t);
void register_rrelu_multilabel_margin_jvps(JvpTable& t);

void register_rrelu_multilabel_margin_ops(OpRegistry& r) { add_built_ops(r, rrelu_multilabel_margin_forms()); }

void register_rrelu_multilabel_margin_decompositions(DecompositionTable& t) { add_built_decompositions(t, rrelu_multilabel_margin_forms()); }

void register_rrelu_multilabel_margin_kernels(InterpreterTable& t) { add_built_kernels(t, rrelu_multilabel_margin_forms()); }

void register_rrelu_multilabel_margin_vjps(VjpTable& t) { add_built_vjps(t, rrelu_multilabel_margin_forms()); }

void register_rrelu_multilabel_margin_jvps(JvpTable& t) { add_built_jvps(t, rrelu_multilabel_margin_forms()); }

}  // namespace stax
