// JVP rules of the ops linear in their floating-point tensor inputs (views, sums, cat, gather,
// index, scatter, clones): the tangent is the same op applied to the tangents (zeros for inputs
// without one), index tensors and other arguments unchanged.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/autodiff/jvp.h"
#include "core/graph/op_registry.h"

namespace stax::linear_jvp {

inline Arg substitute(const JvpContext& c, const Arg& a) {
  if (a.is_node()) {
    Node* n = a.node();
    return is_floating(n->dtype()) || is_complex(n->dtype()) ? Arg(c.tangent_or_zeros(n)) : a;
  }
  if (a.is_list()) {
    Arg::List l;
    for (const Arg& e : a.list()) l.push_back(substitute(c, e));
    return Arg(std::move(l));
  }
  return a;
}

// op(ẋ...) with the node's own arguments otherwise; `target` overrides the op (view -> reshape:
// a tangent need not have strides the view accepts).
inline JvpFn linear(std::string target = "") {
  return [target = std::move(target)](JvpContext& c) {
    std::vector<Arg> args;
    for (const Arg& a : c.node()->args()) args.push_back(substitute(c, a));
    Kwargs kw;
    for (const auto& [k, v] : c.node()->kwargs()) kw.emplace_back(k, substitute(c, v));
    return c.call(target.empty() ? c.node()->op()->name() : target, std::move(args), std::move(kw));
  };
}

}  // namespace stax::linear_jvp
