// Functionalization at graph-building time (issue 29 item 2): aten's in-place ops (add_, copy_,
// fill_, zero_, clamp_ ...), their out= forms and the ops that write some of their arguments
// (batch norm's running statistics in training) become functional ops as Graph::call builds them,
// so a graph never holds a mutation. The parser and every builder (the Python front end) go
// through Graph::call, so they all get it.
//
// Model. A *storage* is a placeholder or the result of a call that is not a view. A view (view,
// slice, select, permute, split's elements ...: a ViewRule) shares its base's storage. Writing a
// tensor (MutationRule) gives its storage a new *version*: the new value of the whole storage
// (writing through a view scatters the view's new value back into its base, slice_scatter and
// the like, view by view), and every later read of any alias of that storage (a call's argument,
// a returned value) sees the latest version: the storage itself reads as its latest value, a view
// made before the write is replayed on it. Nothing changes for graphs without in-place ops.
//
// Inputs written. A placeholder written this way is returned as an extra output after the
// returned values, marked with the placeholder's name (Graph::output_updates), so that a caller
// writes it back: `stax run --save DIR` writes DIR/NAME.npy, the Python backend copies it into
// the input tensor. Text form (core/graph/printer.h): `return (y, add -> x)`. Such outputs have
// no gradient (no tangent in build_joint_graph): torch updates buffers without autograd.
//
// Order. Writes take effect in the order the graph is built: text order for a parsed graph (an FX
// printout lists nodes in execution order; a text with in-place ops must define values before
// using them, which the parser checks).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/graph/graph.h"

namespace stax {

class CallArgs;

// What a mutating op does, computed functionally.
struct MutationEffect {
  // The new value of each written argument, by parameter name (an argument bound to None is
  // skipped). Shapes must equal the argument's; dtypes are cast to the argument's.
  std::vector<std::pair<std::string, Node*>> writes;
  // The call's value: the (updated) argument named here (in-place and out= forms return their
  // self / out), else `result`.
  std::string returns_param;
  Node* result = nullptr;
};

// The functional form of a mutating op. `c` binds the call's arguments, every tensor already
// read at its latest version; `name` is the name the call asked for (the rule may give it to the
// node it makes for the result). Values written must be nodes the rule made. std::nullopt: this
// call writes nothing (batch norm in eval mode) and is made as an ordinary node.
using MutationFn = std::function<std::optional<MutationEffect>(Graph& g, const CallArgs& c,
                                                               const std::string& name)>;

// How a view op's value, once written, goes back into its base: the base's new value given the
// view node, the base's current value and the view's new value. Null for views that cannot be
// written (expand: several elements of the view are one element of the base).
using ViewScatterFn =
    std::function<Node*(Graph& g, const Node& view, Node* base, Node* value)>;

// The tables (filled by stax_ops in install_ops, read by Graph::call).
class FunctionalizationTable {
 public:
  void add_mutation(const std::string& op, MutationFn fn);
  // A view op: `op` names the view's op, or for a tuple-valued op (split, unbind ...) the op
  // whose getitem elements are views of its input; `scatter` may be null (not writable).
  void add_view(const std::string& op, ViewScatterFn scatter);
  // An in-place view op (transpose_, t_, squeeze_, unsqueeze_ ...): it changes self's shape or
  // strides, not its values; `fn` makes the view, and a parser reading a traced program binds
  // self's name to it from then on (the Python object self *is* that view after the call).
  void add_inplace_view(const std::string& op, MutationFn fn);
  bool is_inplace_view(std::string_view op) const { return inplace_views_.count(op) > 0; }
  const MutationFn* mutation(std::string_view op) const;
  // {true, scatter} for a view op, {false, null} otherwise.
  std::pair<bool, const ViewScatterFn*> view(std::string_view op) const;
  bool empty() const { return mutations_.empty() && views_.empty(); }

 private:
  std::map<std::string, MutationFn, std::less<>> mutations_;
  std::map<std::string, ViewScatterFn, std::less<>> views_;
  std::set<std::string, std::less<>> inplace_views_;
};

const FunctionalizationTable& default_functionalization_table();
FunctionalizationTable& functionalization_table_to_fill();

// Graph::call's part: the versions of a graph's storages (created at the graph's first write).
class FunctionalState {
 public:
  // The value `n` has now: n itself unless its storage was written since n was made.
  Node* read(Graph& g, Node* n);
  // Records a node Graph::call just made (a view of a written storage starts at its version).
  void note(Node* made);
  // How many nodes were made since the state exists (a clock for write's `since`).
  int64_t made() const { return made_; }
  // Makes `value` the new value of tensor `target`; `where` names the call. A value made before
  // `since` (made()'s reading when the call began), a view or another version is cloned first,
  // so that a version is a value of its own.
  void write(Graph& g, Node* target, Node* value, int64_t since, const std::string& where);
  // The placeholders written so far, in placeholder order.
  std::vector<Node*> written_placeholders(const Graph& g) const;

 private:
  // The view step from `v` towards its base: the base node, or null when v is no view.
  Node* view_base(const Node* v) const;
  Node* storage_of(Node* n) const;
  Node* replay(Graph& g, Node* view, Node* base);

  std::unordered_map<const Node*, Node*> storage_;   // a version node -> its storage
  std::unordered_map<const Node*, Node*> latest_;    // storage -> its latest value
  std::unordered_map<const Node*, int> version_;     // storage -> writes; node -> version seen
  std::unordered_map<const Node*, std::pair<int, Node*>> replayed_;  // view -> its last replay
  std::unordered_map<const Node*, int64_t> made_at_;  // node -> the clock when it was made
  int64_t made_ = 0;
};

// Applies what a mutating op's rule computed (`since`: state.made() before the rule ran): records
// the writes in `state` and returns the call's value.
Node* apply_mutation(Graph& g, FunctionalState& state, const OpDef& op, const MutationEffect& e,
                     const CallArgs& c, int64_t since, const std::string& name);

}  // namespace stax
