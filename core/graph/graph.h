// The operator-level graph (seed §5.1): placeholders, call_function nodes naming an op overload,
// and one output node. Nodes are kept in a topological order; every value has TensorMeta.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/graph/arg.h"
#include "core/types/tensor_meta.h"

namespace stax {

struct OpDef;
class OpRegistry;
class FunctionalState;
struct BoundCall;

enum class NodeKind { Placeholder, CallFunction, Output };
// Which half of a joint graph a node belongs to (seed Listing 5.2's [FW]/[BW]); None elsewhere.
enum class Phase { None, Forward, Backward };

using Kwargs = std::vector<std::pair<std::string, Arg>>;

class Node {
 public:
  const std::string& name() const { return name_; }
  NodeKind kind() const { return kind_; }
  bool is_placeholder() const { return kind_ == NodeKind::Placeholder; }
  bool is_call() const { return kind_ == NodeKind::CallFunction; }
  bool is_output() const { return kind_ == NodeKind::Output; }

  // call_function only: the op overload (never null for calls).
  const OpDef* op() const { return op_; }
  const std::string& target() const;  // "add.Tensor"; the placeholder's name for placeholders

  // Normalized arguments: every positional parameter of the schema (defaults filled in), then
  // every kwarg-only parameter in schema order (seed §5.1). For the output node, args holds the
  // returned values.
  const std::vector<Arg>& args() const { return args_; }
  const Kwargs& kwargs() const { return kwargs_; }
  // The argument bound to schema parameter `param` (positional or kwarg). Throws if unknown.
  const Arg& arg(std::string_view param) const;
  // The i-th positional arg's node (asserts it is a node).
  Node* input(size_t i) const { return args_.at(i).node(); }
  // Every node this node reads, in argument order, without duplicates.
  std::vector<Node*> input_nodes() const;

  const TensorMeta& meta() const { return meta_; }
  void set_meta(TensorMeta m) { meta_ = std::move(m); }

  // Multi-output nodes (docs/DECISIONS.md, "Multi-output nodes"): a call of an op that returns
  // several tensors (max.dim, split.Tensor, native_layer_norm ...) yields a tuple, and only
  // getitem nodes (FX's operator.getitem) read it. Its elements' metadata are here; its meta() is
  // empty. expand_multi_output (core/graph/multi_output.h) rewrites tuples away before autodiff,
  // the interpreter and lowering.
  bool is_tuple() const { return is_tuple_; }
  // The output node only: per returned value, the name of the placeholder it is the new value of
  // (an input written by an in-place op; core/graph/functionalize.h), or "". Empty when none is.
  const std::vector<std::string>& output_updates() const { return output_updates_; }
  const std::vector<TensorMeta>& tuple_metas() const { return tuple_metas_; }
  const Shape& shape() const { return meta_.sizes; }
  DType dtype() const { return meta_.dtype; }

  // Distinct user nodes (the output node included), in graph order. num_users as FX counts it.
  const std::vector<Node*>& users() const { return users_; }
  size_t num_users() const { return users_.size(); }

  Phase phase() const { return phase_; }
  void set_phase(Phase p) { phase_ = p; }

  // Position in the graph's node list (valid after Graph::renumber, done by every mutation).
  int64_t index() const { return index_; }

  // Free-form per-node annotations passes may attach (e.g. "rng_state"); printed nowhere.
  std::unordered_map<std::string, Arg> attrs;

 private:
  friend class Graph;
  std::string name_;
  NodeKind kind_ = NodeKind::CallFunction;
  const OpDef* op_ = nullptr;
  std::vector<Arg> args_;
  Kwargs kwargs_;
  TensorMeta meta_;
  std::vector<Node*> users_;
  Phase phase_ = Phase::None;
  int64_t index_ = 0;
  bool is_tuple_ = false;
  std::vector<TensorMeta> tuple_metas_;
  std::vector<std::string> output_updates_;
};

class Graph {
 public:
  // Uses the process-wide op table (immutable after start-up) unless another is given.
  Graph();
  explicit Graph(const OpRegistry& registry);
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  Graph(Graph&&);
  Graph& operator=(Graph&&);
  ~Graph();

  const OpRegistry& registry() const { return *registry_; }

  // ---- building (the C++ builder API; the parser uses the same calls) ----
  // A placeholder with its metadata; name "" picks the next "primals_N".
  Node* placeholder(std::string name, TensorMeta meta);
  Node* placeholder(std::string name, Shape sizes, DType dtype = DType::Float32);
  // A call of op overload `target` ("add.Tensor", "tp.add.Tensor", "tensorplay.ops.tp.add.Tensor").
  // Arguments are bound to the schema (positional, then keyword), defaults filled in, types
  // checked and the result's TensorMeta inferred; any failure throws stax::Error naming the node.
  // name "" derives one from the op (add, add_1, ...; sum_0 for names that shadow builtins).
  // An in-place or out= op (add_, copy_, add.out ...) or an op writing an argument (batch norm's
  // running statistics) is functionalized (core/graph/functionalize.h): the call makes its
  // functional form and returns the value it would return; every later call and output() reads
  // the written tensors' new values.
  Node* call(std::string_view target, std::vector<Arg> args, Kwargs kwargs = {},
             std::string name = "");
  // Sets the graph's outputs (there is exactly one output node; calling again replaces it).
  // `updates` (empty, or one entry per value) marks the values that are a placeholder's new value
  // with its name ("" for a returned value); marked values follow the returned ones. The
  // placeholders that in-place ops wrote are appended so marked, in placeholder order.
  Node* output(std::vector<Node*> values, std::vector<std::string> updates = {});

  // ---- inspection ----
  const std::vector<Node*>& nodes() const { return order_; }  // topological order, output last
  std::vector<Node*> placeholders() const;
  Node* output_node() const;                 // null until output() is called
  std::vector<Node*> outputs() const;        // the returned values (updates included)
  // Per output: the placeholder it updates, or "" (Node::output_updates, padded to outputs()).
  std::vector<std::string> output_updates() const;
  // How many outputs are returned values, before the input updates.
  size_t num_returned() const;
  Node* find(std::string_view name) const;   // by name, or null
  size_t size() const { return order_.size(); }

  // ---- mutation (passes) ----
  // Replaces every use of `from` by `to` (in args, kwargs and the output).
  void replace_all_uses(Node* from, Node* to);
  // Removes a node that has no users.
  void erase(Node* n);
  // Where call()/placeholder() put new nodes: before `before`, or (null) before the output node.
  // Passes that insert replacements set it to the node being replaced.
  void set_insert_point(Node* before) { insert_before_ = before; }
  Node* insert_point() const { return insert_before_; }
  // Recomputes users and indices (every mutation above does it already).
  void recompute_users();
  // Re-sorts nodes topologically (stable: keeps the current order where it is valid). Throws
  // stax::Error naming the nodes on a cycle.
  void topo_sort();

  std::string unique_name(std::string_view base);
  // Names unique_name() must not pick (the parser reserves every name of the text, so that the
  // nodes functionalization adds never take a name defined further down).
  void reserve_names(std::vector<std::string> names);
  // Deep copy: a new graph with the same nodes (maps old nodes to new ones in *mapping if given).
  Graph clone(std::unordered_map<const Node*, Node*>* mapping = nullptr) const;

  // Low-level: a node with explicit, already-normalized args and a given meta (no inference).
  // Used by the parser for the output node and by clone(); prefer call().
  Node* add_node(NodeKind kind, std::string name, const OpDef* op, std::vector<Arg> args,
                 Kwargs kwargs, TensorMeta meta);

 private:
  // The node of a bound call (no functionalization).
  Node* make_call(const OpDef& op, BoundCall b, std::string name);

  const OpRegistry* registry_;
  std::vector<std::unique_ptr<Node>> storage_;
  std::vector<Node*> order_;
  std::unordered_map<std::string, Node*> by_name_;
  std::unordered_map<std::string, int> name_counter_;
  Node* insert_before_ = nullptr;
  int next_primal_ = 1;
  std::unordered_map<std::string, bool> reserved_;
  std::unique_ptr<FunctionalState> functional_;  // made at the first in-place op
};

// Normalizes a call of `op` (binds args to the schema, fills defaults, checks types) and infers its
// TensorMeta, without creating a node. `where` names the node in errors.
struct BoundCall {
  std::vector<Arg> args;
  Kwargs kwargs;
};
BoundCall bind_call(const OpDef& op, std::vector<Arg> args, Kwargs kwargs, const std::string& where);

}  // namespace stax
