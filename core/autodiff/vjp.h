// Reverse-mode derivative rules (vector-Jacobian products, seed §5.2): one entry per op overload
// in one table, as PyTorch's derivatives.yaml / tinygrad's gradient table. A rule reads the
// forward node (its normalized args, its output) and the upstream gradient, emits backward nodes
// through the Graph builder (VjpContext is an Emitter with Phase::Backward) and hands each input
// that needs a gradient its contribution with give().
//
// Contract of a rule:
//   - A contribution has the input's shape (rules reduce broadcast dims with sum_to_shape); the
//     joint-graph builder converts its dtype to the input's when they differ.
//   - Rules only emit nodes for inputs that need a gradient (needs()), so a joint graph holds no
//     node computing a gradient nobody asked for (Listing 5.2 has no node for x̄).
//   - Giving nothing for an input means a zero gradient (sign, floor, ... ; index tensors).
//   - An input that appears twice (mul(x, x)) receives two contributions; they are summed.
// The rules live with their op families (core/ops/<family>/vjp.cpp) and are installed into this
// table by stax::install_ops() (core/ops/install.h).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/autodiff/emitter.h"

namespace stax {

class VjpContext : public Emitter {
 public:
  using NeedsFn = std::function<bool(const Node*)>;
  VjpContext(Graph& g, Node* node, Node* grad, NeedsFn needs, Phase phase = Phase::Backward)
      : Emitter(g, phase), node_(node), grad_(grad), needs_(std::move(needs)) {}

  // The forward node; as a value it is the forward output (relu's backward reads it).
  Node* node() const { return node_; }
  Node* out() const { return node_; }
  // The upstream gradient: the shape of the forward output.
  Node* grad() const { return grad_; }
  // The argument bound to schema parameter `param`.
  const Arg& arg(std::string_view param) const { return node_->arg(param); }
  // The tensor bound to `param`, or null when it is None / not a tensor.
  Node* in(std::string_view param) const;

  bool needs(const Node* n) const { return n && needs_(n); }
  bool needs(std::string_view param) const { return needs(in(param)); }

  // Records `grad` as a contribution to input n's gradient (ignored when n needs none or grad is
  // null).
  void give(Node* n, Node* grad);
  void give(std::string_view param, Node* grad) { give(in(param), grad); }

  const std::vector<std::pair<Node*, Node*>>& contributions() const { return given_; }

 private:
  Node* node_;
  Node* grad_;
  NeedsFn needs_;
  std::vector<std::pair<Node*, Node*>> given_;
};

using VjpFn = std::function<void(VjpContext&)>;

class VjpTable {
 public:
  // `op` is a canonical overload name ("add.Tensor"); throws stax::Error on a duplicate.
  void add(const std::string& op, VjpFn fn);
  const VjpFn* find(std::string_view op) const;  // null when the op has no rule
  // Replaces op's entry by wrap(entry), or adds wrap(absent) when op has none: how an op family
  // installed later extends the ops of earlier ones (core/ops/complex/: their complex forms).
  void extend(const std::string& op, const std::function<VjpFn(VjpFn)>& wrap, VjpFn absent);
  std::vector<std::string> names() const;
  bool empty() const { return rules_.empty(); }

 private:
  std::map<std::string, VjpFn, std::less<>> rules_;
};

// The rules of this build: empty until stax::install_ops() (core/ops/install.h) fills it once,
// immutable afterwards. Throws stax::Error (stage "registry") while it is empty.
const VjpTable& default_vjp_table();
// The same table for filling: only install_ops() writes to it.
VjpTable& vjp_table_to_fill();

}  // namespace stax
