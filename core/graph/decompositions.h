// The decomposition table (seed §4.8): one entry per op overload, rewriting a call into simpler
// ops through the Graph builder, and decompose(), the pass that applies it.
//
//   softmax.int / _softmax      -> (to.dtype,) amax, sub, exp, sum, div
//   log_softmax.int / _log_softmax -> (to.dtype,) amax, sub, exp, sum, log, sub
//   _softmax_backward_data       -> mul, sum, mul, sub
//   _log_softmax_backward_data   -> sum, exp, mul, sub
//   layer_norm                   -> mean, sub, mul, mean, add, rsqrt, mul (, mul weight, add bias)
//   linear                       -> t, matmul (, add bias)
//   silu                         -> sigmoid, mul
//   gelu                         -> mul, erf, add, mul   (tanh: mul, add, tanh, ...)
//   mean.dim / mean.default      -> sum, div
//   var.correction / var.dim / var.default -> mean, sub, mul, sum, div
//   addmm                        -> mm (, mul alpha) (, mul beta, add)
//   dropout                      -> rand_like, gt, mul, mul   (train with 0 < p < 1)
//   bernoulli.p                  -> rand_like, lt, to.dtype
// float16 / bfloat16 inputs of softmax, log_softmax and layer_norm are computed in float32 and
// converted back (as torch's decompositions do). Entries whose op is not registered in a graph's
// registry are simply never used.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/graph/graph.h"

namespace stax {

// Emits the ops computing `n` with g.call(...) (decompose() points the graph's insert point just
// before `n`) and returns the node holding n's value: same sizes and dtype as n. It must not
// modify `n`; it may return one of n's inputs.
using DecompositionFn = std::function<Node*(Graph& g, const Node& n)>;

class DecompositionTable {
 public:
  // `op` is a canonical overload name ("softmax.int"); throws stax::Error on a duplicate.
  void add(const std::string& op, DecompositionFn fn);
  const DecompositionFn* find(std::string_view op) const;  // null when there is no entry
  // Replaces op's entry by wrap(entry), or adds wrap(absent) when op has none: how an op family
  // installed later extends the ops of earlier ones (core/ops/complex/: their complex forms).
  void extend(const std::string& op, const std::function<DecompositionFn(DecompositionFn)>& wrap,
              DecompositionFn absent);
  std::vector<std::string> names() const;
  bool empty() const { return fns_.empty(); }

 private:
  std::map<std::string, DecompositionFn, std::less<>> fns_;
};

// The table of this build: empty until stax::install_ops() (core/ops/install.h) fills it once with
// the entries of the op families (core/ops/<family>/*decompositions.cpp), immutable afterwards.
// Throws stax::Error (stage "registry") while it is empty.
const DecompositionTable& default_decompositions();
// The same table for filling: only install_ops() writes to it.
DecompositionTable& decompositions_to_fill();

struct DecompositionOptions {
  // The base ops, never decomposed: overload names ("mean.dim") or bare op names ("mean": every
  // overload). Unset (the default): the base ops are all ops whose category is not Composite, so
  // exactly the Composite ops (softmax, layer_norm, silu, linear ...) are decomposed.
  std::optional<std::set<std::string>> keep;
  // Also decompose what decompositions emit, until only base ops or ops without an entry remain.
  // Default true.
  bool recursive = true;
  // The table to use; null (the default) means default_decompositions().
  const DecompositionTable* table = nullptr;
};

// Replaces every call whose op is not base and has a table entry by its decomposition, in place.
// New nodes are inserted where the decomposed node stood (node order is otherwise preserved), take
// its phase and attrs (random ops emitted also get rng_seed = the node's rng_seed or its name, so
// they draw the numbers the node would have), and every use of the node (the output included) is
// redirected to the replacement; the node is erased. Returns the number of nodes decomposed.
// Throws stax::Error("decompose", "%node", ...) when an entry fails or yields another shape or
// dtype. Leaves the graph's insert point at its default (before the output node).
size_t decompose(Graph& g, const DecompositionOptions& options = {});

// Decomposes the single node `n` with `table`'s entry (which must exist) and returns its
// replacement; `n` is erased.
Node* decompose_node(Graph& g, Node* n, const DecompositionTable& table = default_decompositions());

// Helpers for decomposition rules (core/ops/<family>/*decompositions.cpp): the wrapped dims a reduction over `dims`
// covers (absent or empty: all dims) and their element count.
std::vector<int64_t> reduced_dims(const Node& x, const Arg& dims);
int64_t reduced_count(const Node& x, const std::vector<int64_t>& dims);

}  // namespace stax
