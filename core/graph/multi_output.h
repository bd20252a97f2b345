// Multi-output ops (docs/DECISIONS.md, "Multi-output nodes"): ops returning several tensors
// (max.dim, sort, topk, split.Tensor, unbind, native_layer_norm, var_mean ...) are tuple-valued
// nodes in the graph IR (Node::is_tuple), read only by getitem nodes, exactly as FX prints them:
//
//   %max_1 : [num_users=2] = call_function[target=max.dim](args = (%x, 1), kwargs = {})
//   %getitem shape=(4,) = call_function[target=getitem](args = (%max_1, 0), kwargs = {})
//
// Every such op has an expansion here: the single-output ops computing each element (max.dim ->
// amax, argmax; split -> slice.Tensor each; native_layer_norm -> layer_norm, mean.dim, rsqrt of
// var.correction). expand_multi_output rewrites a graph so that no tuple is left: each getitem is
// replaced by its element's node. The interpreter, autodiff (VJP and JVP) and the compiler run
// it first, so everything downstream (rules, the partitioner's saved values, lowering, memory
// planning) sees only tensors, and each element has its own node and buffer. The element
// metadata of a tuple node are inferred by expanding the call into a scratch graph, so inference
// and expansion cannot disagree.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/graph/graph.h"
#include "core/graph/op_registry.h"

namespace stax {

// A tuple-valued call, seen by an expansion rule: its normalized args (nodes are the expansion
// graph's) and its op.
class ExpandCall {
 public:
  ExpandCall(const OpDef& op, std::vector<Arg> args, Kwargs kwargs, std::string where)
      : op_(op), args_(std::move(args)), kwargs_(std::move(kwargs)), where_(std::move(where)) {}
  const OpDef& op() const { return op_; }
  const Arg& get(std::string_view param) const;
  Node* tensor(std::string_view param) const { return get(param).node(); }
  bool has(std::string_view param) const { return !get(param).is_absent(); }
  const std::string& where() const { return where_; }
  [[noreturn]] void fail(const std::string& message) const;  // Error("shape", where, message)

 private:
  const OpDef& op_;
  std::vector<Arg> args_;
  Kwargs kwargs_;
  std::string where_;
};

// Emits the nodes computing each element of the call (with g.call at the graph's insert point)
// and returns them in element order.
using ExpandFn = std::function<std::vector<Node*>(Graph& g, const ExpandCall& c)>;

class ExpansionTable {
 public:
  void add(const std::string& op, ExpandFn fn);  // canonical overload name; throws on duplicate
  const ExpandFn* find(std::string_view op) const;
  std::vector<std::string> names() const;
  bool empty() const { return fns_.empty(); }

 private:
  std::map<std::string, ExpandFn, std::less<>> fns_;
};

// The expansions of this build: empty until stax::install_ops() (core/ops/install.h) fills it once
// (core/ops/multi_output/), immutable afterwards. Throws stax::Error (stage "registry") while it is
// empty.
const ExpansionTable& default_expansions();
// The same table for filling: only install_ops() writes to it.
ExpansionTable& expansions_to_fill();

// An InferMultiFn for op `name`: the metadata of the expansion's elements.
InferMultiFn infer_by_expansion(std::string name);

// The call `c` rebuilt over the scratch graph `g`: each distinct tensor argument becomes a
// placeholder of g with its metadata (in0, in1, ...). How inference runs an op's expansion (or a
// builder, core/ops/common/infer_by_building.h) without the graph being built.
ExpandCall scratch_call(Graph& g, const CallArgs& c);

// True when some node of `g` is a tuple.
bool has_tuple_nodes(const Graph& g);

// Replaces every tuple node by its expansion: each use of a getitem of it by the element's node
// (new nodes take the tuple's phase and attrs); elements nobody reads are not kept. Throws stax::Error("expand", "%node", ...) when an op has no expansion or an
// expansion yields other metadata than the tuple's. Returns the number of tuples expanded.
size_t expand_multi_output(Graph& g, const ExpansionTable& table = default_expansions());

// `g` itself when it has no tuple node; else a clone of it, expanded, kept in `storage`.
const Graph& without_tuples(const Graph& g, std::unique_ptr<Graph>& storage);

}  // namespace stax
