// The reference interpreter (seed §6.1, executed eagerly): runs a Graph op by op on the CPU with
// plainly written kernels. It is the oracle every compiled result is compared against.
//
// Kernels are registered per op overload in one table (InterpreterTable); each op family keeps
// its kernels in core/ops/<family>/kernels.cpp. Pointwise kernels evaluate the scalar
// semantics of sdk/include/stax/sdk/scalar_ops.hpp (the same text compiled kernels embed), so
// compiled pointwise code can be required to match bit for bit.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/graph/graph.h"
#include "core/tensor/tensor.h"

namespace stax {

// The accumulation order of the float reductions (sum, prod, mean, amax, amin):
//   Sequential  the reference semantics of seed §6.9: one chain in lexicographic order (what
//               cpu_cpp computes with `strict_order: true`);
//   Segmented   the fixed segmented order of stax/sdk/reduction_order.hpp (16 chains, then a
//               fixed tree), what cpu_cpp computes by default; within the §6.5 bound of the former.
// argmax / argmin / any / all and var (a fallback of compiled graphs) are sequential in both.
enum class ReductionOrder { Sequential, Segmented };

// What a kernel sees: its node (normalized args, output meta) and the tensors bound to it.
class KernelContext {
 public:
  KernelContext(const Node& node, const std::function<const Tensor&(const Node*)>& lookup,
                uint64_t seed, ReductionOrder order = ReductionOrder::Sequential,
                uint64_t run_seed = 0)
      : node_(node), lookup_(lookup), seed_(seed), order_(order), run_seed_(run_seed) {}
  const Node& node() const { return node_; }
  const Arg& arg(std::string_view param) const { return node_.arg(param); }
  // The tensor bound to a Tensor parameter (must not be None).
  const Tensor& tensor(std::string_view param) const;
  // The tensor of a node argument.
  const Tensor& value(const Node* n) const { return lookup_(n); }
  // A Tensor[] / Tensor?[] parameter (None entries are undefined Tensors).
  std::vector<Tensor> tensor_list(std::string_view param) const;
  // The result's metadata as inferred at graph-build time (kernels must produce exactly this
  // shape and dtype; the interpreter checks).
  const TensorMeta& out_meta() const { return node_.meta(); }
  // Seed for random ops: derived from the run's seed and the node (its "rng_seed" attr if set,
  // so that a recomputation in a backward graph reproduces the forward's numbers, §5.3 item 5).
  uint64_t seed() const { return seed_; }
  // The run's own seed (before node_seed mixes in the node): what a kernel that interprets a
  // nested graph of random ops (a Composite op's decomposition) gives that run, so its random
  // nodes, keyed like the compiled decomposition's (decompose()'s rng_seed), draw the same numbers.
  uint64_t run_seed() const { return run_seed_; }
  // The accumulation order of sum / prod / mean / amax / amin.
  ReductionOrder reduction_order() const { return order_; }
  [[noreturn]] void fail(const std::string& message) const;  // Error("interpreter", "%node", msg)

 private:
  const Node& node_;
  const std::function<const Tensor&(const Node*)>& lookup_;
  uint64_t seed_;
  ReductionOrder order_;
  uint64_t run_seed_;
};

using KernelFn = std::function<Tensor(const KernelContext&)>;

class InterpreterTable {
 public:
  void add(const std::string& op_name, KernelFn fn);  // "add.Tensor"
  const KernelFn* find(const std::string& op_name) const;
  // Replaces op's entry by wrap(entry), or adds wrap(absent) when op has none: how an op family
  // installed later extends the ops of earlier ones (core/ops/complex/: their complex forms).
  void extend(const std::string& op, const std::function<KernelFn(KernelFn)>& wrap,
              KernelFn absent);
  std::vector<std::string> names() const;
  bool empty() const { return kernels_.empty(); }

 private:
  std::map<std::string, KernelFn, std::less<>> kernels_;
};

// The kernel table of this build: empty until stax::install_ops() (core/ops/install.h) fills it
// once with the kernels of the op families (core/ops/<family>/kernels.cpp), immutable afterwards.
// Throws stax::Error (stage "registry") while it is empty.
const InterpreterTable& default_interpreter_table();
// The same table for filling: only install_ops() writes to it.
InterpreterTable& interpreter_table_to_fill();

struct InterpreterOptions {
  uint64_t seed = 0;          // random ops and nothing else depend on it
  bool check_meta = true;     // verify each result against the node's inferred shape/dtype
  ReductionOrder reduction_order = ReductionOrder::Sequential;
};

// The seed a node's random kernel gets in a run seeded with `seed`: mix64(seed ^ mix64(key)), key =
// the node's "rng_seed" attr (an int, or a string hashed with FNV-1a) when present, else FNV-1a
// of its name. Every executor (interpreter, compiled fallbacks) uses this, so a recomputation that
// carries the forward node's rng_seed draws the same numbers (seed §5.3 item 5).
uint64_t node_seed(uint64_t seed, const Node& n);

// Runs `g` on `inputs` (one per placeholder, in graph order) and returns the outputs in return
// order. Throws stax::Error naming the node on a kernel failure, a missing kernel, or an input
// whose shape/dtype disagrees with its placeholder.
std::vector<Tensor> interpret(const Graph& g, const std::vector<Tensor>& inputs,
                              const InterpreterOptions& options = {});

}  // namespace stax
