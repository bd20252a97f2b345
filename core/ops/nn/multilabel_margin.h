// multilabel_margin_loss's pieces shared by its tuple form (multilabel_margin_loss_forward,
// core/ops/multi_output/schemas.cpp) and its backward (core/ops/nn/rrelu_multilabel_margin.cpp), as torch's
// CPU kernel (LossMultiLabelMargin.cpp): for each sample x (C values) and target y (C class
// indices, the valid ones those before the first negative), with is_target[c] = c is a valid
// target,
//   loss = sum over valid j, over i not a target, of max(0, 1 - (x[y_j] - x[i])), divided by C
// then reduced over the samples (0 none, 1 mean, 2 sum). 1-D inputs are one sample (a 0-d loss).
#pragma once

#include "core/graph/graph.h"

namespace stax::nn {

struct MultilabelMargin {
  Node* target_index;  // (N, C) int64, y clamped at 0
  Node* valid;         // (N, C) bool: y_j is a valid target
  Node* is_target;     // (N, C) bool
  Node* active;        // (N, C_j, C_i) bool: valid j, i not a target, margin term positive
  Node* margin;        // (N, C_j, C_i) the terms max(0, 1 - (x[y_j] - x[i])) where counted, else 0
};

// x and y as (N, C); `is_target` given (the backward's float input) or computed (null).
inline MultilabelMargin multilabel_margin(Graph& g, Node* x, Node* y, Node* is_target) {
  int64_t c = x->shape().back();
  MultilabelMargin m;
  Node* negative = g.call("to.dtype", {g.call("lt.Scalar", {y, 0}), DType::Int64});
  m.valid = g.call("eq.Scalar", {g.call("cumsum", {negative, int64_t{1}}), 0});
  m.target_index = g.call("clamp_min", {y, int64_t{0}});
  if (is_target) {
    m.is_target = g.call("ne.Scalar", {is_target, 0});
  } else {
    Node* classes = g.call("arange", {c}, {{"dtype", DType::Int64}});
    Node* hit = g.call("eq.Tensor", {g.call("unsqueeze", {m.target_index, int64_t{2}}), classes});
    hit = g.call("logical_and", {hit, g.call("unsqueeze", {m.valid, int64_t{2}})});
    m.is_target = g.call("any.dim", {hit, int64_t{1}});
  }
  Node* xt = g.call("gather", {x, int64_t{1}, m.target_index});
  Node* diff = g.call("sub.Tensor", {g.call("unsqueeze", {xt, int64_t{2}}),
                                     g.call("unsqueeze", {x, int64_t{1}})});
  Node* term = g.call("rsub.Scalar", {diff, 1.0});  // 1 - (x[y_j] - x[i])
  Node* counted = g.call("logical_and",
                         {g.call("unsqueeze", {m.valid, int64_t{2}}),
                          g.call("logical_not", {g.call("unsqueeze", {m.is_target, int64_t{1}})})});
  m.active = g.call("logical_and", {counted, g.call("gt.Scalar", {term, 0.0})});
  Node* zero = g.call("zeros", {Arg(Shape{})}, {{"dtype", Arg(x->dtype())}});
  m.margin = g.call("where.self", {m.active, term, zero});
  return m;
}

}  // namespace stax::nn
