#include "core/graph/decompositions.h"

#include <cmath>
#include <numbers>
#include <unordered_set>

#include "core/graph/op_registry.h"
#include "core/support/error.h"

namespace stax {

// ---- the table
// -----------------------------------------------------------------------------------

void DecompositionTable::add(const std::string& op, DecompositionFn fn) {
  auto [it, inserted] = fns_.emplace(op, std::move(fn));
  if (!inserted) throw Error("decompose", "", "decomposition of " + op + " registered twice");
}

const DecompositionFn* DecompositionTable::find(std::string_view op) const {
  auto it = fns_.find(op);
  return it == fns_.end() ? nullptr : &it->second;
}

std::vector<std::string> DecompositionTable::names() const {
  std::vector<std::string> out;
  for (const auto& [name, fn] : fns_) out.push_back(name);
  return out;
}

namespace {

using Ints = std::vector<int64_t>;

bool is_half_like(DType t) { return t == DType::Float16 || t == DType::BFloat16; }

// The argument bound to `param`, or None when the op's schema has no such parameter.
Arg opt_arg(const Node& n, const char* param) {
  if (n.op()->schema.index_of(param) < 0) return Arg();
  return n.arg(param);
}

Node* cast(Graph& g, Node* x, DType t) { return x->dtype() == t ? x : g.call("to.dtype", {x, t}); }


// ---- softmax family
// ------------------------------------------------------------------------------

Node* softmax_decomp(Graph& g, const Node& n, bool log) {
  Node* x = n.input(0);
  Ints dim{n.arg("dim").to_int()};
  bool has_dtype = n.op()->schema.index_of("dtype") >= 0;  // softmax.int (else _softmax)
  if (has_dtype && n.arg("dtype").is_dtype() && x->dtype() != n.arg("dtype").dtype())
    x = cast(g, x, n.arg("dtype").dtype());
  DType in = x->dtype();
  bool up = is_half_like(in);
  if (up) x = cast(g, x, DType::Float32);
  Node* m = g.call("amax", {x, dim, true});
  Node* shifted = g.call("sub.Tensor", {x, m});
  Node* e = g.call("exp", {shifted});
  Node* z = g.call("sum.dim_IntList", {e, dim, true});
  Node* y =
      log ? g.call("sub.Tensor", {shifted, g.call("log", {z})}) : g.call("div.Tensor", {e, z});
  return up && (has_dtype || !n.arg("half_to_float").to_bool()) ? cast(g, y, in) : y;
}

Node* softmax_backward_decomp(Graph& g, const Node& n) {
  Node* grad = n.input(0);
  Node* y = n.input(1);
  Ints dim{n.arg("dim").to_int()};
  Node* gy = g.call("mul.Tensor", {grad, y});
  Node* s = g.call("sum.dim_IntList", {gy, dim, true});
  Node* gi = g.call("sub.Tensor", {gy, g.call("mul.Tensor", {y, s})});
  return cast(g, gi, n.arg("input_dtype").dtype());
}

Node* log_softmax_backward_decomp(Graph& g, const Node& n) {
  Node* grad = n.input(0);
  Node* y = n.input(1);
  Ints dim{n.arg("dim").to_int()};
  Node* s = g.call("sum.dim_IntList", {grad, dim, true});
  Node* gi = g.call("sub.Tensor", {grad, g.call("mul.Tensor", {g.call("exp", {y}), s})});
  return cast(g, gi, n.arg("input_dtype").dtype());
}

// ---- normalization and linear layers
// -------------------------------------------------------------

Node* layer_norm_decomp(Graph& g, const Node& n) {
  Node* x = n.input(0);
  DType in = x->dtype();
  int64_t k = static_cast<int64_t>(n.arg("normalized_shape").to_int_list().size());
  Ints dims;
  for (int64_t d = x->meta().dim() - k; d < x->meta().dim(); ++d) dims.push_back(d);
  if (is_half_like(in)) x = cast(g, x, DType::Float32);
  Node* mean = g.call("mean.dim", {x, dims, true});
  Node* xc = g.call("sub.Tensor", {x, mean});
  Node* var = g.call("mean.dim", {g.call("mul.Tensor", {xc, xc}), dims, true});
  Node* rstd = g.call("rsqrt", {g.call("add.Scalar", {var, n.arg("eps").to_double()})});
  Node* y = g.call("mul.Tensor", {xc, rstd});
  if (n.arg("weight").is_node()) y = g.call("mul.Tensor", {y, n.arg("weight").node()});
  if (n.arg("bias").is_node()) y = g.call("add.Tensor", {y, n.arg("bias").node()});
  return cast(g, y, in);
}

Node* linear_decomp(Graph& g, const Node& n) {
  Node* y = g.call("matmul", {n.input(0), g.call("t", {n.input(1)})});
  if (n.arg("bias").is_node()) y = g.call("add.Tensor", {y, n.arg("bias").node()});
  return y;
}

Node* addmm_decomp(Graph& g, const Node& n) {
  Node* self = n.input(0);
  Node* p = g.call("mm", {n.input(1), n.input(2)});
  const Arg& alpha = n.arg("alpha");
  const Arg& beta = n.arg("beta");
  // addmm's kernel forms beta * self + alpha * p in the computation type: the same two roundings.
  bool alpha_one = alpha.is_int() && alpha.to_int() == 1;
  bool beta_one = beta.is_int() && beta.to_int() == 1;
  if (beta.to_double() == 0) return alpha_one ? p : g.call("mul.Scalar", {p, alpha});
  Node* ap = alpha_one ? p : g.call("mul.Scalar", {p, alpha});
  Node* bs = beta_one ? self : g.call("mul.Scalar", {self, beta});
  return cast(g, g.call("add.Tensor", {bs, ap}), n.dtype());
}

// ---- pointwise composites
// ------------------------------------------------------------------------

// Half types compute in float32 and round once at the end, as the silu kernel does (x * sigmoid(x)
// on float16 / bfloat16 values would round sigmoid's result to the half type first).
Node* silu_decomp(Graph& g, const Node& n) {
  Node* x = n.input(0);
  DType in = x->dtype();
  bool up = is_half_like(in);
  if (up) x = cast(g, x, DType::Float32);
  Node* y = g.call("mul.Tensor", {x, g.call("sigmoid", {x})});
  return up ? cast(g, y, in) : y;
}

Node* gelu_decomp(Graph& g, const Node& n) {
  Node* x = n.input(0);
  Node* half_x = g.call("mul.Scalar", {x, 0.5});
  if (n.arg("approximate").str() == "tanh") {
    // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    Node* x3 = g.call("mul.Tensor", {g.call("mul.Tensor", {x, x}), x});
    Node* inner = g.call("add.Tensor", {x, g.call("mul.Scalar", {x3, 0.044715})});
    Node* t = g.call("tanh", {g.call("mul.Scalar", {inner, std::sqrt(2.0 / std::numbers::pi)})});
    return g.call("mul.Tensor", {half_x, g.call("add.Scalar", {t, 1})});
  }
  // 0.5 x (1 + erf(x / sqrt 2))
  Node* e = g.call("erf", {g.call("mul.Scalar", {x, 1.0 / std::numbers::sqrt2})});
  return g.call("mul.Tensor", {half_x, g.call("add.Scalar", {e, 1})});
}

// ---- reductions
// ----------------------------------------------------------------------------------

Node* mean_decomp(Graph& g, const Node& n) {
  Node* x = n.input(0);
  const Arg& dt = opt_arg(n, "dtype");
  if (dt.is_dtype()) x = cast(g, x, dt.dtype());
  Arg dim = opt_arg(n, "dim");
  Ints dims = reduced_dims(*x, dim);
  Node* s = n.op()->schema.index_of("dim") >= 0
                ? g.call("sum.dim_IntList", {x, dim, n.arg("keepdim").to_bool()})
                : g.call("sum.default", {x});
  return g.call("div.Scalar", {s, reduced_count(*x, dims)});
}

Node* var_decomp(Graph& g, const Node& n) {
  Node* x = n.input(0);
  Arg dim = opt_arg(n, "dim");
  Ints dims = reduced_dims(*x, dim);
  double correction = 1;
  if (Arg c = opt_arg(n, "correction"); !c.is_absent()) correction = c.to_double();
  if (Arg u = opt_arg(n, "unbiased"); !u.is_absent()) correction = u.to_bool() ? 1 : 0;
  Arg keepdim = opt_arg(n, "keepdim");
  Node* mean = g.call("mean.dim", {x, dims, true});
  Node* xc = g.call("sub.Tensor", {x, mean});
  Node* s = g.call("sum.dim_IntList", {g.call("mul.Tensor", {xc, xc}), dims,
                                       !keepdim.is_absent() && keepdim.to_bool()});
  double denom = std::max(0.0, static_cast<double>(reduced_count(*x, dims)) - correction);
  return g.call("div.Scalar", {s, denom});
}

// ---- random ops
// ----------------------------------------------------------------------------------

Node* dropout_decomp(Graph& g, const Node& n) {
  Node* x = n.input(0);
  double p = n.arg("p").to_double();
  if (!n.arg("train").to_bool() || p == 0) return g.call("clone", {x});
  if (p == 1) return g.call("zeros_like", {x});
  Node* keep = g.call("gt.Scalar", {g.call("rand_like", {x}), p});
  return g.call("mul.Scalar", {g.call("mul.Tensor", {keep, x}), 1.0 / (1.0 - p)});
}

Node* bernoulli_decomp(Graph& g, const Node& n) {
  Node* x = n.input(0);
  Node* u = is_floating(x->dtype())
                ? g.call("rand_like", {x})
                : g.call("rand", {Arg(x->shape())}, {{"dtype", Arg(DType::Float32)}});
  return cast(g, g.call("lt.Scalar", {u, n.arg("p")}), x->dtype());
}

}  // namespace

// Wrapped dims a reduction over `dims` (absent or empty: all dims) covers, and their element count.
Ints reduced_dims(const Node& x, const Arg& dims) {
  int64_t rank = x.meta().dim();
  Ints out;
  if (dims.is_absent() || dims.to_int_list().empty()) {
    for (int64_t d = 0; d < rank; ++d) out.push_back(d);
    return out;
  }
  for (int64_t d : dims.to_int_list())
    if (rank > 0) out.push_back(wrap_dim(d, rank, "%" + x.name()));
  return out;
}

int64_t reduced_count(const Node& x, const Ints& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= x.shape()[d];
  return n;
}

const DecompositionTable& default_decompositions() {
  static const DecompositionTable table = [] {
    DecompositionTable t;
    for (const char* op : {"softmax.int", "_softmax.default"})
      t.add(op, [](Graph& g, const Node& n) { return softmax_decomp(g, n, false); });
    for (const char* op : {"log_softmax.int", "_log_softmax.default"})
      t.add(op, [](Graph& g, const Node& n) { return softmax_decomp(g, n, true); });
    t.add("_softmax_backward_data.default", softmax_backward_decomp);
    t.add("_log_softmax_backward_data.default", log_softmax_backward_decomp);
    t.add("layer_norm.default", layer_norm_decomp);
    t.add("linear.default", linear_decomp);
    t.add("addmm.default", addmm_decomp);
    t.add("silu.default", silu_decomp);
    t.add("gelu.default", gelu_decomp);
    t.add("mean.dim", mean_decomp);
    t.add("mean.default", mean_decomp);
    t.add("var.correction", var_decomp);
    t.add("dropout.default", dropout_decomp);
    t.add("bernoulli.p", bernoulli_decomp);
    register_nn_decompositions(t);
    register_model_decompositions(t);
    register_more_decompositions(t);
    return t;
  }();
  return table;
}

// ---- the pass
// ------------------------------------------------------------------------------------

Node* decompose_node(Graph& g, Node* n, const DecompositionTable& table) {
  const std::string where = "%" + n->name();
  const DecompositionFn* fn = table.find(n->target());
  if (!fn) throw Error("decompose", where, "no decomposition for " + n->target());
  size_t first_new = static_cast<size_t>(n->index());
  g.set_insert_point(n);
  Node* r = nullptr;
  try {
    r = (*fn)(g, *n);
  } catch (const Error& e) {
    g.set_insert_point(nullptr);
    throw Error("decompose", where, "decomposing " + n->target() + ": " + e.what());
  }
  g.set_insert_point(nullptr);
  if (!r || r->shape() != n->shape() || r->dtype() != n->dtype())
    throw Error("decompose", where,
                "the decomposition of " + n->target() + " yields " +
                    (r ? std::string(dtype_name(r->dtype())) + shape_str(r->shape()) : "nothing") +
                    " but the node is " + std::string(dtype_name(n->dtype())) +
                    shape_str(n->shape()));
  // The nodes the entry emitted sit between n's old position and n.
  const auto& order = g.nodes();
  for (size_t i = first_new; i < static_cast<size_t>(n->index()); ++i) {
    Node* e = order[i];
    e->set_phase(n->phase());
    for (const auto& [k, v] : n->attrs) e->attrs.emplace(k, v);
    if (e->op()->category == OpCategory::Random && !e->attrs.count("rng_seed"))
      e->attrs.emplace("rng_seed", Arg(n->name()));
  }
  g.replace_all_uses(n, r);
  g.erase(n);
  return r;
}

size_t decompose(Graph& g, const DecompositionOptions& options) {
  const DecompositionTable& table = options.table ? *options.table : default_decompositions();
  auto is_base = [&](const Node* n) {
    if (!options.keep) return n->op()->category != OpCategory::Composite;
    return options.keep->count(n->target()) > 0 || options.keep->count(n->op()->schema.base) > 0;
  };
  size_t count = 0;
  constexpr int kMaxRounds = 64;
  for (int round = 0;; ++round) {
    if (round == kMaxRounds)
      throw Error("decompose", "",
                  "decompositions did not reach base ops after " + std::to_string(kMaxRounds) +
                      " rounds (an entry re-emits its own op?)");
    bool changed = false;
    std::vector<Node*> snapshot = g.nodes();
    for (Node* n : snapshot) {
      if (!n->is_call() || is_base(n) || !table.find(n->target())) continue;
      decompose_node(g, n, table);
      ++count;
      changed = true;
    }
    if (!changed || !options.recursive) break;
  }
  return count;
}

}  // namespace stax
