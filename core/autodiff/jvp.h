// Forward-mode derivative rules (Jacobian-vector products, seed §5.7) and the tangent graph.
//
// Forward mode carries a tangent ż beside every value z (a dual number (z, ż)); each op maps its
// inputs' tangents to its output's with its forward derivative formula. Stax evaluates it on the
// interpreter path by building a tangent graph: build_jvp_graph() copies the primal graph and,
// right after each node, emits the nodes computing its tangent (op by op, as dual numbers would),
// so one interpreter run yields f(x) and J v together, saving no intermediate for later.
//
// A rule reads the primal node (in the new graph) and its inputs' tangents and returns the output
// tangent, or null for "zero". The builder calls rules only for differentiable ops with a
// floating-point output and at least one non-zero input tangent; it broadcasts a returned tangent
// to the output's shape (expand) and converts it to the output's dtype. Table entries are per op
// overload: jvp_rules_pointwise.cpp (elementwise math, where, clamp, casts),
// jvp_rules_linear.cpp (views, sums, indexing, products), jvp_rules_nonlinear.cpp (prod,
// amax/amin, var, softmax, layer_norm, dropout) and jvp_rules_backward.cpp (the backward ops of
// joint graphs: gelu_backward ..., needed for forward-over-reverse Hessian-vector products).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/autodiff/emitter.h"

namespace stax {

class JvpContext : public Emitter {
 public:
  using TangentFn = std::function<Node*(const Node*)>;
  JvpContext(Graph& g, Node* node, TangentFn tangent_of, Phase phase = Phase::None)
      : Emitter(g, phase), node_(node), tangent_of_(std::move(tangent_of)) {}

  Node* node() const { return node_; }
  Node* out() const { return node_; }  // the primal output
  const Arg& arg(std::string_view param) const { return node_->arg(param); }
  Node* in(std::string_view param) const;  // the tensor bound to param, or null

  // The tangent of a primal value (null: zero).
  Node* tangent(const Node* n) const { return n ? tangent_of_(n) : nullptr; }
  Node* tangent(std::string_view param) const { return tangent(in(param)); }
  // The tangent, or a zeros node of the value's shape and dtype when it is zero.
  Node* tangent_or_zeros(Node* n) const;

 private:
  Node* node_;
  TangentFn tangent_of_;
};

using JvpFn = std::function<Node*(JvpContext&)>;

class JvpTable {
 public:
  void add(const std::string& op, JvpFn fn);  // throws stax::Error on a duplicate
  const JvpFn* find(std::string_view op) const;
  // Replaces op's entry by wrap(entry), or adds wrap(absent) when op has none: how an op family
  // installed later extends the ops of earlier ones (core/ops/complex/: their complex forms).
  void extend(const std::string& op, const std::function<JvpFn(JvpFn)>& wrap, JvpFn absent);
  std::vector<std::string> names() const;
  bool empty() const { return rules_.empty(); }

 private:
  std::map<std::string, JvpFn, std::less<>> rules_;
};

// The rules of this build: empty until stax::install_ops() (core/ops/install.h) fills it once
// with the rules of the op families (core/ops/<family>/jvp.cpp), immutable afterwards. Throws
// stax::Error (stage "registry") while it is empty.
const JvpTable& default_jvp_table();
// The same table for filling: only install_ops() writes to it.
JvpTable& jvp_table_to_fill();

// A rule that applies op's VJP rule to the tangent of `param`: J ẋ = Jᵀ ẋ holds when the Jacobian
// with respect to that input is symmetric (elementwise ops, softmax).
JvpFn jvp_via_symmetric_vjp(std::string op, std::string param);

// The tangent graph of `g` with respect to the placeholders named in `wrt` (floating-point
// placeholders, each named once).
//   placeholders  g's placeholders (same names, same order), then one tangent placeholder per
//                 `wrt` entry, named "<name>_dot", with the primal's metadata
//   outputs       g's outputs, then one tangent per output (a zeros node when it is zero)
// Nodes of g keep their names, phases and attrs (a joint graph stays a joint graph, random ops
// keep their seeds). Throws stax::Error("autodiff", "%node", ...) when an op on a tangent path
// has no JVP rule.
struct JvpGraph {
  Graph graph;
  std::vector<std::string> primals;   // g's placeholders, in order
  std::vector<std::string> tangents;  // the tangent placeholders, one per wrt entry
  std::vector<std::string> wrt;
  size_t num_outputs = 0;  // g's outputs; their tangents follow them
};
JvpGraph build_jvp_graph(const Graph& g, const std::vector<std::string>& wrt,
                         const JvpTable& rules = default_jvp_table());

}  // namespace stax
