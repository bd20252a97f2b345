// The op registry: every op overload Stax knows, with its schema, category, type-promotion mode and
// shape/dtype inference rule. Other tables (interpreter kernels, VJP/JVP rules, lowering rules,
// decompositions) are keyed by the same overload names and live with their own modules.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/graph/graph.h"
#include "core/graph/op_schema.h"

namespace stax {

enum class OpCategory {
  Pointwise,  // elementwise (incl. the *_backward pointwise ops, where, clamp, casts)
  Reduction,  // sum, amax, argmax, mean, var, ...
  View,       // view, permute, expand, slice, ... (no data movement)
  Indexing,   // cat, gather, index, index_put, scatter_add
  Extern,     // mm, bmm, matmul, addmm: template / library kernels
  Random,     // rand, randn, bernoulli, dropout-like: never CSE'd, never recomputed freely
  Creation,   // full, zeros, ones, arange (no tensor inputs)
  Composite,  // softmax, log_softmax, layer_norm ...: have a decomposition
  Mutating,   // in-place and out= forms (add_, add.out): functionalized by Graph::call
              // (core/graph/functionalize.h), never a node
};
std::string_view category_name(OpCategory c);

// PyTorch's elementwise type-promotion kinds.
enum class Promotion {
  None,         // the rule computes its own dtype
  Default,      // common dtype of the tensor/scalar inputs
  IntToFloat,   // common dtype, integers and bool promoted to the default float (div, sqrt, exp ...)
  AlwaysBool,   // comparisons, logical ops
  KeepFirst,    // dtype of the first tensor input (where the schema fixes it)
};

// A view of a call's normalized arguments for inference rules.
class CallArgs {
 public:
  CallArgs(const OpDef& op, const std::vector<Arg>& args, const Kwargs& kwargs, std::string where)
      : op_(op), args_(args), kwargs_(kwargs), where_(std::move(where)) {}
  const Arg& get(std::string_view param) const;
  const TensorMeta& tensor(std::string_view param) const;  // the meta of a Tensor parameter
  bool has(std::string_view param) const { return !get(param).is_absent(); }
  const OpDef& op() const { return op_; }
  const std::vector<Arg>& args() const { return args_; }
  const Kwargs& kwargs() const { return kwargs_; }
  const std::string& where() const { return where_; }
  [[noreturn]] void fail(const std::string& message) const;  // throws Error("shape", where, msg)

 private:
  const OpDef& op_;
  const std::vector<Arg>& args_;
  const Kwargs& kwargs_;
  std::string where_;
};

using InferFn = std::function<TensorMeta(const CallArgs&)>;
// The metadata of each element of an op returning several tensors (a tuple or Tensor[]).
using InferMultiFn = std::function<std::vector<TensorMeta>(const CallArgs&)>;

struct OpDef {
  OpSchema schema;
  OpCategory category = OpCategory::Pointwise;
  Promotion promotion = Promotion::Default;
  InferFn infer;
  bool differentiable = true;   // false for comparisons, argmax, integer-only ops ...
  // Takes or returns complex64 / complex128 tensors (the FFT ops, view_as_real ...). Every other
  // op rejects a complex argument or result when the graph is built or verified
  // (reject_unsupported_complex), so no kernel for real dtypes ever sees one.
  bool complex = false;
  // Set for ops returning several tensors (max.dim, split.Tensor ...): the call yields a tuple
  // node (Node::is_tuple) and `infer` is unused.
  InferMultiFn infer_multi;
  bool multi_output() const { return static_cast<bool>(infer_multi); }
  // Set for ops whose result is a number known when the graph is built (sym_size.int of a static
  // shape): an int / float / bool / Scalar argument given such a node gets this value instead
  // (bind_call folds it), so FX printouts traced with symbolic sizes bind as static graphs.
  std::function<Arg(const Node&)> static_value;
  // Set for an op outside OpCategory::Random that draws random numbers for some of its
  // arguments (attention with dropout_p > 0: the dropout of its decomposition): true when the
  // node draws. Engines that must not merge or reorder draws (CSE) treat such a node as random.
  std::function<bool(const Node&)> draws_random;
  // Whether the node draws random numbers: a Random op, or `draws_random` says so.
  bool draws(const Node& n) const {
    return category == OpCategory::Random || (draws_random && draws_random(n));
  }
  const std::string& name() const { return schema.name; }
  // Marks the kwarg-only `param` as also accepted positionally (ParamSpec::positional_compat).
  OpDef& allow_positional(const std::string& param);
};

class OpRegistry {
 public:
  // Registers an op: `schema` as in op_schema.h. Throws on a duplicate name.
  OpDef& add(const std::string& schema, OpCategory category, Promotion promotion, InferFn infer);
  // Registers an op returning several tensors (core/ops/multi_output/schemas.cpp).
  OpDef& add_multi(const std::string& schema, OpCategory category, InferMultiFn infer);

  // Looks up "add.Tensor", "tp.add.Tensor", "tensorplay.ops.tp.add.Tensor", or a bare "relu"
  // (meaning relu.default). Null when unknown.
  const OpDef* find(std::string_view target) const;
  // The registered op `target` for changing while install_ops() fills the table: how an op family
  // installed later extends the ops of earlier ones (core/ops/complex/ marks them complex and
  // adapts their inference). Throws stax::Error (stage "registry") when there is no such op.
  OpDef& extend(std::string_view target);
  // Like find, but throws stax::Error(stage, where, "unknown op 'X'; did you mean: a, b, c?").
  const OpDef& get(std::string_view target, const std::string& where = "") const;
  // Up to n known names closest to `target` by edit distance.
  std::vector<std::string> suggest(std::string_view target, size_t n = 3) const;
  std::vector<const OpDef*> all() const;
  bool empty() const { return ops_.empty(); }

 private:
  std::map<std::string, std::unique_ptr<OpDef>, std::less<>> ops_;
};

// The op table of this build: empty until stax::install_ops() (core/ops/install.h) fills it once,
// immutable afterwards. Throws stax::Error (stage "registry") while it is empty.
const OpRegistry& default_registry();
// The same table for filling: only install_ops() writes to it (the op families of core/ops).
OpRegistry& registry_to_fill();

// Throws Error("shape", where, ...) naming the op, the argument and its dtype when `op` does not
// accept complex tensors (OpDef::complex) and an argument or the result (`out`, if given) is one.
void reject_unsupported_complex(const OpDef& op, const std::vector<Arg>& args, const Kwargs& kwargs,
                                const TensorMeta* out, const std::string& where);

// Strips "tensorplay.ops.", "tp." prefixes and appends ".default" to a bare name.
std::string canonical_target(std::string_view target);

// The Levenshtein distance of two strings (insertions, deletions and substitutions each cost 1):
// how OpRegistry::suggest and the parser's "did you mean" hints rank names.
size_t edit_distance(std::string_view a, std::string_view b);

// Broadcasts two shapes by NumPy rules; throws Error("shape", where, ...) naming both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b, const std::string& where);

// The dtype PyTorch's elementwise type promotion picks for the named parameters of a call
// (tensors of rank > 0, then 0-d tensors, then Python scalars, ranked as torch.result_type does),
// with `mode` applied (IntToFloat turns integral/bool into float32, AlwaysBool gives bool).
DType result_type(const CallArgs& call, const std::vector<std::string>& params, Promotion mode);

}  // namespace stax
