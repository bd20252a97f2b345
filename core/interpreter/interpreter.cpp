// The reference interpreter: binds inputs, runs each node's kernel in graph order, frees values
// after their last use and checks every result against the node's inferred metadata.
#include "core/interpreter/interpreter.h"

#include <memory>

#include "core/graph/multi_output.h"

#include <unordered_map>

#include "core/graph/op_registry.h"
#include "core/graph/source_location.h"
#include "core/support/error.h"

namespace stax {

// ---- KernelContext ----------------------------------------------------------------------------

const Tensor& KernelContext::tensor(std::string_view param) const {
  const Arg& a = arg(param);
  if (!a.is_node()) fail("parameter '" + std::string(param) + "' is not bound to a tensor");
  return lookup_(a.node());
}

std::vector<Tensor> KernelContext::tensor_list(std::string_view param) const {
  const Arg& a = arg(param);
  std::vector<Tensor> out;
  if (a.is_node()) {
    out.push_back(lookup_(a.node()));
    return out;
  }
  if (!a.is_list()) fail("parameter '" + std::string(param) + "' is not a tensor list");
  for (const Arg& e : a.list()) out.push_back(e.is_node() ? lookup_(e.node()) : Tensor());
  return out;
}

void KernelContext::fail(const std::string& message) const {
  throw Error("interpreter", node_where(node_), node_.target() + ": " + message);
}

// ---- InterpreterTable -------------------------------------------------------------------------

void InterpreterTable::add(const std::string& op_name, KernelFn fn) {
  auto [it, inserted] = kernels_.emplace(op_name, std::move(fn));
  if (!inserted) throw Error("interpreter", "", "kernel for " + op_name + " registered twice");
}

const KernelFn* InterpreterTable::find(const std::string& op_name) const {
  auto it = kernels_.find(op_name);
  return it == kernels_.end() ? nullptr : &it->second;
}

void InterpreterTable::extend(const std::string& op,
                              const std::function<KernelFn(KernelFn)>& wrap, KernelFn absent) {
  auto it = kernels_.find(op);
  if (it == kernels_.end())
    kernels_.emplace(op, wrap(std::move(absent)));
  else
    it->second = wrap(std::move(it->second));
}

std::vector<std::string> InterpreterTable::names() const {
  std::vector<std::string> out;
  for (const auto& [name, fn] : kernels_) out.push_back(name);
  return out;
}

namespace {
InterpreterTable& interpreter_storage() {
  static InterpreterTable table;
  return table;
}
}  // namespace

const InterpreterTable& default_interpreter_table() {
  const InterpreterTable& t = interpreter_storage();
  if (t.empty()) throw_ops_not_installed("interpreter's kernel table");
  return t;
}

InterpreterTable& interpreter_table_to_fill() { return interpreter_storage(); }

// ---- per-node seeds ---------------------------------------------------------------------------

namespace {

// SplitMix64's finalizer: a bijective 64-bit mix.
uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001B3ull;
  return h;
}

std::string describe_meta(const Shape& sizes, DType dtype) {
  return std::string(dtype_name(dtype)) + shape_str(sizes);
}

}  // namespace

// The seed a node's random kernel gets: mix64(run seed ^ mix64(key)), where key is the node's
// "rng_seed" attr (an int, or a string hashed with FNV-1a) when present, else FNV-1a of its name.
// So a backward-graph recomputation carrying the forward node's rng_seed draws the same numbers.
uint64_t node_seed(uint64_t seed, const Node& n) {
  uint64_t key;
  auto it = n.attrs.find("rng_seed");
  if (it != n.attrs.end() && (it->second.is_int() || it->second.is_bool()))
    key = static_cast<uint64_t>(it->second.to_int());
  else if (it != n.attrs.end() && it->second.is_string())
    key = fnv1a(it->second.str());
  else
    key = fnv1a(n.name());
  return mix64(seed ^ mix64(key));
}

// A result's sizes against its node's: equal, except that a dim whose size is known only at run
// time (TensorMeta::runtime_sized_dims) may be anything up to its bound.
static bool sizes_match(const Shape& have, const TensorMeta& m) {
  if (have.size() != m.sizes.size()) return false;
  for (size_t d = 0; d < have.size(); ++d) {
    bool runtime = m.runtime_sized_dims >> d & 1u;
    if (runtime ? have[d] > m.sizes[d] : have[d] != m.sizes[d]) return false;
  }
  return true;
}

// ---- interpret --------------------------------------------------------------------------------

std::vector<Tensor> interpret(const Graph& g_in, const std::vector<Tensor>& inputs,
                              const InterpreterOptions& options) {
  // Tuple-valued nodes (ops returning several tensors) run as their expansion.
  std::unique_ptr<Graph> expanded;
  const Graph& g = without_tuples(g_in, expanded);
  const InterpreterTable& table = default_interpreter_table();
  const std::vector<Node*>& nodes = g.nodes();
  const Node* out_node = g.output_node();
  if (!out_node) throw Error("interpreter", "", "the graph has no output node");

  std::vector<Node*> placeholders = g.placeholders();
  if (placeholders.size() != inputs.size())
    throw Error("interpreter", "",
                "the graph has " + std::to_string(placeholders.size()) + " placeholders but " +
                    std::to_string(inputs.size()) + " inputs were given");

  // Position of each value's last reader; values read by the output node live to the end.
  std::unordered_map<const Node*, size_t> last_use;
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const Node* in : nodes[i]->input_nodes()) last_use[in] = i;

  std::unordered_map<const Node*, Tensor> env;
  std::function<const Tensor&(const Node*)> lookup = [&](const Node* n) -> const Tensor& {
    auto it = env.find(n);
    if (it == env.end())
      throw Error("interpreter", "%" + n->name(), "value used before it was computed or after "
                                                  "it was freed");
    return it->second;
  };

  std::vector<Tensor> results;
  size_t next_input = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node* n = nodes[i];
    const std::string where = node_where(*n);
    if (n->is_placeholder()) {
      const Tensor& t = inputs[next_input++];
      if (!t.defined()) throw Error("interpreter", where, "input tensor is undefined");
      if (t.sizes() != n->shape() || t.dtype() != n->dtype())
        throw Error("interpreter", where,
                    "input for placeholder " + n->name() + " has " +
                        describe_meta(t.sizes(), t.dtype()) + " but the placeholder expects " +
                        describe_meta(n->shape(), n->dtype()));
      env[n] = t;
    } else if (n->is_call()) {
      const std::string& op = n->op()->name();
      const KernelFn* kernel = table.find(op);
      if (!kernel)
        throw Error("interpreter", where, "no interpreter kernel for op " + op + " (node " +
                                              n->name() + ")");
      KernelContext ctx(*n, lookup, node_seed(options.seed, *n), options.reduction_order,
                        options.seed);
      Tensor r;
      try {
        r = (*kernel)(ctx);
      } catch (const Error& e) {
        if (e.location() == where) throw;
        throw Error("interpreter", where, op + ": " + e.message());
      } catch (const std::exception& e) {
        throw Error("interpreter", where, op + ": " + e.what());
      }
      if (!r.defined()) throw Error("interpreter", where, op + ": kernel returned no tensor");
      if (options.check_meta && (!sizes_match(r.sizes(), n->meta()) || r.dtype() != n->dtype()))
        throw Error("interpreter", where,
                    op + ": kernel result is " + describe_meta(r.sizes(), r.dtype()) +
                        " but node " + n->name() + " was inferred as " +
                        describe_meta(n->shape(), n->dtype()));
      env[n] = std::move(r);
    } else {
      for (const Node* o : g.outputs()) results.push_back(o ? lookup(o) : Tensor());
    }
    // Free what this node read for the last time, and results nobody reads.
    for (const Node* in : n->input_nodes())
      if (last_use[in] == i) env.erase(in);
    if (!n->is_output() && n->num_users() == 0) env.erase(n);
  }
  return results;
}

}  // namespace stax
