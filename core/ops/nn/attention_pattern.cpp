#include "core/ops/nn/attention_pattern.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/graph/graph.h"
#include "core/graph/op_registry.h"
#include "core/graph/passes.h"
#include "core/interpreter/interpreter.h"
#include "core/ops/nn/attention_fusion.h"

namespace stax {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

bool is(const Node* n, std::string_view target) { return n && n->is_call() && n->target() == target; }

int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

Shape last2(const Shape& s) { return s.size() < 2 ? s : Shape(s.end() - 2, s.end()); }
Shape lead(const Shape& s) { return s.size() < 2 ? Shape{} : Shape(s.begin(), s.end() - 2); }
Shape with(Shape batch, int64_t a, int64_t b) {
  batch.push_back(a);
  batch.push_back(b);
  return batch;
}

// Ops that keep the row-major sequence of a tensor's elements: views / reshapes, clones and
// expands to the shape the tensor already has.
bool keeps_elements(const Node* n) {
  if (is(n, "view.default") || is(n, "reshape.default") || is(n, "_unsafe_view.default") ||
      is(n, "clone.default") || is(n, "alias.default"))
    return true;
  return is(n, "expand.default") && n->input(0)->shape() == n->shape();
}

// The same, and the last two dims unchanged (only the batch dims are merged or split).
bool batch_view(const Node* n) { return keeps_elements(n) && last2(n->input(0)->shape()) == last2(n->shape()); }

bool is_product(const Node* n) { return is(n, "bmm.default") || is(n, "matmul.default"); }

Node* strip(Node* n) {
  while (keeps_elements(n)) n = n->input(0);
  return n;
}

// `n`'s value when it depends on no placeholder and no random op (at most 64 nodes, 2^24
// elements): the interpreter runs the subgraph that computes it. Masks built from arange / tril
// / full are such constants.
std::optional<Tensor> constant_value(const Graph& g, Node* n) {
  std::unordered_set<const Node*> need;
  std::vector<Node*> stack{n};
  while (!stack.empty()) {
    Node* x = stack.back();
    stack.pop_back();
    if (!need.insert(x).second) continue;
    if (!x->is_call() || x->is_tuple() || !x->op() || x->op()->category == OpCategory::Random ||
        need.size() > 64)
      return std::nullopt;
    for (Node* in : x->input_nodes()) stack.push_back(in);
  }
  if (numel_of(n->shape()) > (int64_t{1} << 24)) return std::nullopt;
  Graph sub(g.registry());
  std::unordered_map<Node*, Node*> map;
  try {
    for (Node* x : g.nodes()) {
      if (!need.count(x)) continue;
      auto remap = [&](Node* y) { return map.at(y); };
      std::vector<Arg> args;
      for (const Arg& a : x->args()) args.push_back(map_nodes(a, remap));
      Kwargs kw;
      for (const auto& [k, v] : x->kwargs()) kw.emplace_back(k, map_nodes(v, remap));
      map[x] = sub.call(x->target(), std::move(args), std::move(kw));
    }
    sub.output({map.at(n)});
    return interpret(sub, {}).at(0).contiguous();
  } catch (const std::exception&) {  // not evaluable here: treated as not constant
    return std::nullopt;
  }
}

// What a constant mask does, read from its values (broadcast to the scores [.., L, S]).
struct MaskFacts {
  bool causal = false;        // exactly "key j <= query i" (bool true / additive 0 there, else false / -inf)
  bool full_row_masked = false;  // some query row has every key masked
};

MaskFacts mask_facts(const Tensor& m, bool is_bool, int64_t l, int64_t s) {
  // The values read once, in one typed pass (get_double per element dispatched on the dtype
  // and walked the strides each time: ~1 ms of a cached compile for a 256 x 256 mask).
  const std::vector<double> values = m.to_vector<double>();
  auto masked = [&](int64_t x) {
    double v = values[static_cast<size_t>(x)];
    return is_bool ? v == 0 : v == -kInf;
  };
  auto kept_exactly = [&](int64_t x) {
    double v = values[static_cast<size_t>(x)];
    return is_bool ? v != 0 : v == 0;
  };
  MaskFacts f;
  const Shape& sz = m.sizes();
  const int64_t cols = sz.empty() ? 1 : sz.back();
  for (int64_t row = 0; row * cols < m.numel(); ++row) {
    bool all = true;
    for (int64_t j = 0; j < cols && all; ++j) all = masked(row * cols + j);
    f.full_row_masked = f.full_row_masked || all;
  }
  if (sz.size() < 2 || sz[sz.size() - 2] != l || sz.back() != s) return f;
  f.causal = true;
  for (int64_t x = 0; x < m.numel() && f.causal; ++x) {
    int64_t j = x % s, i = (x / s) % l;
    f.causal = j <= i ? kept_exactly(x) : masked(x);
  }
  return f;
}

// One decomposed attention: out = softmax(scale·A·B + mask)·V, A [.., L, E], B [.., E, S].
struct Match {
  Node* softmax = nullptr;
  Node* x = nullptr;        // the softmax's input, [batch.., L, S]
  Node* scores = nullptr;   // the product A·B
  Node* pv = nullptr;       // the product P·V, replaced by the fused output
  Node* guard = nullptr;    // torch's where(fully masked row, 0, P), or null
  double scale = 1.0;
  Node* mask = nullptr;     // additive (x's dtype) or bool (true: keep), or null
  bool mask_is_bool = false;
  bool mask_negated = false;  // masked_fill(scores, c, -inf): the kept keys are ~c
  bool causal = false;
  // Dropout of the probabilities before P·V (read_dropout): the random node whose numbers it
  // draws (its rng_seed key is the fused op's), keep when u > threshold (else u < threshold),
  // kept probabilities times drop_scale.
  Node* drop_random = nullptr;
  double drop_threshold = 0.0;
  bool drop_keep_above = true;
  double drop_scale = 1.0;
};

// The matrix product behind `n` through batch views and mul / div by a number (the scale);
// nodes below the top must have no other user.
Node* product_behind(Node* n, double& scale) {
  for (bool top = true;; top = false) {
    if (!top && n->num_users() != 1) return nullptr;
    if (is_product(n)) return n;
    if (batch_view(n)) {
      n = n->input(0);
    } else if (is(n, "mul.Scalar") && n->arg("other").is_number()) {
      scale *= n->arg("other").to_double();
      n = n->input(0);
    } else if (is(n, "div.Scalar") && n->arg("other").is_number()) {
      scale /= n->arg("other").to_double();
      n = n->input(0);
    } else {
      return nullptr;
    }
  }
}

bool is_neg_inf(const Graph& g, Node* n) {
  if (numel_of(n->shape()) != 1) return false;
  std::optional<Tensor> t = constant_value(g, n);
  return t && t->numel() == 1 && t->get_double(0) == -kInf;
}

bool is_zero(const Graph& g, Node* n) {
  if (is(n, "full_like.default") || is(n, "zeros_like.default"))
    return is(n, "zeros_like.default") || n->arg("fill_value").to_double() == 0.0;
  if (numel_of(n->shape()) != 1) return false;
  std::optional<Tensor> t = constant_value(g, n);
  return t && t->numel() == 1 && t->get_double(0) == 0.0;
}

// Finds the scores and the mask under the softmax's input x; false when x is not a product.
bool read_scores(const Graph& g, Match& m) {
  Node* x = m.x;
  auto try_scores = [&](Node* n) {
    double scale = 1.0;
    Node* p = product_behind(n, scale);
    if (!p || (n != x && n->num_users() != 1)) return false;
    m.scores = p;
    m.scale = scale;
    return true;
  };
  if (is(x, "add.Tensor") && (x->arg("alpha").is_absent() || x->arg("alpha").to_double() == 1.0)) {
    for (int side : {0, 1})
      if (try_scores(x->input(side))) {
        m.mask = x->input(1 - side);
        return true;
      }
  }
  if (is(x, "where.self") && is_neg_inf(g, x->input(2)) && try_scores(x->input(1))) {
    m.mask = x->input(0);
    m.mask_is_bool = true;
    return true;
  }
  // where(m, -inf, scores): m marks the masked keys (masked_fill's decomposition), as below.
  if (((is(x, "where.self") && is_neg_inf(g, x->input(1))) ||
       (is(x, "where.ScalarSelf") && x->arg("self").is_number() && x->arg("self").to_double() == -kInf)) &&
      try_scores(x->input(2))) {
    m.mask = x->input(0);
    m.mask_is_bool = m.mask_negated = true;
    return true;
  }
  if (is(x, "masked_fill.Scalar") && x->arg("value").to_double() == -kInf && try_scores(x->input(0))) {
    m.mask = x->input(1);
    m.mask_is_bool = m.mask_negated = true;
    return true;
  }
  return try_scores(x);
}

// torch's guard: where(logical_not(any(logical_not(eq(x, -inf)), -1, keepdim)), 0, P).
bool is_guard(const Graph& g, const Node* w, const Match& m) {
  if (!is(w, "where.self") || w->input(2) != m.softmax || !is_zero(g, w->input(1))) return false;
  const Node* c = w->input(0);
  if (!is(c, "logical_not.default")) return false;
  const Node* any = c->input(0);
  if (!is(any, "any.dim") || !any->arg("keepdim").to_bool()) return false;
  const int64_t r = static_cast<int64_t>(m.x->shape().size());
  int64_t dim = any->arg("dim").to_int();
  if (dim != -1 && dim != r - 1) return false;
  const Node* ne = any->input(0);
  if (!is(ne, "logical_not.default")) return false;
  const Node* eq = ne->input(0);
  return is(eq, "eq.Scalar") && eq->input(0) == m.x && eq->arg("other").to_double() == -kInf;
}

// The number argument `name` of n (an int, float or bool literal), or nullopt (a tensor).
std::optional<double> number_arg(const Node* n, const char* name) {
  const Arg& a = n->arg(name);
  if (a.is_number()) return a.to_double();
  return std::nullopt;
}

// A dropout of the probabilities `p` (p's users), as the graph may hold it:
//   dropout.default(p, drop, train): keep when u > drop, kept values times 1 / (1 - drop) (its
//       kernel, drawing rand_like's numbers from the dropout node's seed); train = False or
//       drop = 0: the identity;
//   mul(mul.Tensor(p, cmp(rand_like(p), c)), scale), cmp gt.Scalar / lt.Scalar, the mul.Tensor's
//       operands in either order, the scale a mul.Scalar (or mul.Tensor by a number):
//       native_dropout's expansion (rand_like < 1 - p), torch's decomposition
//       (rand_like > p) and dropout.default's decomposition.
// Returns the node carrying the dropped probabilities (nullptr: `p` is not dropped there) and
// fills m's drop_* fields; `why` says why a dropout that is there cannot be fused.
Node* read_dropout(Node* p, Match& m, std::string& why) {
  if (p->num_users() == 1 && is(p->users()[0], "dropout.default") && p->users()[0]->input(0) == p) {
    Node* d = p->users()[0];
    const double drop = d->arg("p").to_double();
    if (!d->arg("train").to_bool() || drop == 0.0) return d;  // the identity
    if (!(drop > 0.0 && drop < 1.0)) {
      why = "dropout with p = " + std::to_string(drop) + " (all probabilities dropped)";
      return nullptr;
    }
    m.drop_random = d;
    m.drop_threshold = drop;
    m.drop_keep_above = true;
    m.drop_scale = 1.0 / (1.0 - drop);
    return d;
  }
  if (p->num_users() != 2) return nullptr;
  Node* rand = nullptr;
  Node* mul = nullptr;
  for (Node* u : p->users()) {
    if (is(u, "rand_like.default") && u->input(0) == p) rand = u;
    else if (is(u, "mul.Tensor")) mul = u;
  }
  if (!rand || !mul || rand->num_users() != 1) return nullptr;
  const Arg& rdt = rand->arg("dtype");
  if (!rdt.is_absent() && (!rdt.is_dtype() || rdt.dtype() != p->dtype())) return nullptr;
  Node* cmp = rand->users()[0];
  const bool above = is(cmp, "gt.Scalar");
  if ((!above && !is(cmp, "lt.Scalar")) || cmp->input(0) != rand || cmp->num_users() != 1 ||
      cmp->users()[0] != mul)
    return nullptr;
  std::optional<double> thr = number_arg(cmp, "other");
  if (!thr) return nullptr;
  const bool p_left = mul->input_nodes().size() == 2 && mul->input(0) == p && mul->input(1) == cmp;
  const bool p_right = mul->input_nodes().size() == 2 && mul->input(1) == p && mul->input(0) == cmp;
  if ((!p_left && !p_right) || mul->num_users() != 1) return nullptr;
  Node* sc = mul->users()[0];
  std::optional<double> scale;
  if ((is(sc, "mul.Scalar") || is(sc, "mul.Tensor")) && sc->input(0) == mul) scale = number_arg(sc, "other");
  if (!scale || sc->dtype() != p->dtype()) return nullptr;
  if (!(*scale > 0.0) || !std::isfinite(*scale)) {
    why = "dropout with scale " + std::to_string(*scale);
    return nullptr;
  }
  m.drop_random = rand;
  m.drop_threshold = *thr;
  m.drop_keep_above = above;
  m.drop_scale = *scale;
  return sc;
}

// Follows the probabilities to the P·V product; "" or why not.
std::string read_probabilities(const Graph& g, Match& m) {
  Node* p = m.softmax;
  // The guard reads P twice: where(c, full_like(P, 0), P).
  for (Node* w : p->users()) {
    if (!is_guard(g, w, m)) continue;
    Node* zero = w->input(1);
    const bool zero_of_p = zero->num_users() == 1 && !zero->input_nodes().empty() && zero->input(0) == p;
    if (p->num_users() == (zero_of_p ? 2u : 1u)) p = m.guard = w;
    break;
  }
  for (;;) {
    if (!m.drop_random) {
      std::string why;
      Node* dropped = read_dropout(p, m, why);
      if (!why.empty()) return why;
      if (dropped) {
        p = dropped;
        continue;
      }
    }
    if (p->num_users() != 1)
      return "the probabilities %" + p->name() + " have " + std::to_string(p->num_users()) +
             " uses, not only the product with V";
    Node* u = p->users()[0];
    if (is_product(u)) {
      if (u->input(0) != p || u->input(1) == p)
        return "the probabilities are the right operand of %" + u->name() + ", not P·V";
      m.pv = u;
      return "";
    }
    if (!batch_view(u)) return "the probabilities are used by %" + u->name() + ", not only by P·V";
    p = u;
  }
}

// Why the matched operands cannot run fused, or "".
std::string check_shapes(const Match& m) {
  const Shape& xs = m.x->shape();
  const Shape batch = lead(xs);
  const int64_t l = xs[xs.size() - 2], s = xs.back();
  const Shape &a = m.scores->input(0)->shape(), &b = m.scores->input(1)->shape();
  const Shape &p = m.pv->input(0)->shape(), &v = m.pv->input(1)->shape();
  for (const Shape* t : {&a, &b, &p, &v})
    if (t->size() < 2) return "a matrix product of a vector";
  if (m.scores->shape() != with(lead(m.scores->shape()), l, s) ||
      numel_of(m.scores->shape()) != numel_of(xs))
    return "the mask " + shape_str(m.mask ? m.mask->shape() : Shape{}) + " broadcasts the scores " +
           shape_str(m.scores->shape()) + " to " + shape_str(xs);
  if (lead(a) != lead(b) || lead(p) != lead(v) || numel_of(lead(a)) != numel_of(batch) ||
      numel_of(lead(v)) != numel_of(batch))
    return "the products broadcast their batch dims";
  if (last2(p) != last2(xs) || v[v.size() - 2] != s) return "the shapes of P and V disagree";
  for (const Node* n : {m.scores->input(0), m.scores->input(1), m.pv->input(1), m.pv})
    if (n->dtype() != m.x->dtype()) return "the products' dtypes differ from the softmax's";
  return "";
}

// Reads the mask: causal when it is a constant causal mask; "" or why the match cannot run fused.
std::string check_mask(const Graph& g, Match& m) {
  const Shape& xs = m.x->shape();
  const int64_t l = xs[xs.size() - 2], s = xs.back();
  if (!m.mask) return "";  // no mask: no row is fully masked (the guard is a no-op)
  if (m.mask_is_bool ? m.mask->dtype() != DType::Bool : m.mask->dtype() != m.x->dtype())
    return "the mask's dtype " + std::string(dtype_name(m.mask->dtype())) + " is not the scores'";
  std::optional<Tensor> c = constant_value(g, m.mask);
  if (!c) {
    if (m.guard)
      return "the mask is not a constant, and torch's guard zeroes fully masked rows (the fused "
             "kernel gives NaN there)";
    return "";
  }
  if (m.mask_negated) {  // masked_fill's mask marks the masked keys: the kept ones are ~c
    Tensor kept = Tensor::empty(c->sizes(), DType::Bool);
    for (int64_t x = 0; x < c->numel(); ++x) kept.set_int(x, c->get_double(x) == 0);
    *c = kept;
  }
  const MaskFacts f = mask_facts(*c, m.mask_is_bool, l, s);
  if (f.full_row_masked && m.guard)
    return "the mask masks whole rows, which torch's guard zeroes (the fused kernel gives NaN)";
  m.causal = f.causal;
  return "";
}

Node* reshape_to(Graph& g, Node* x, const Shape& s) {
  return x->shape() == s ? x : g.call("reshape", {x, Arg(s)});
}

void rewrite(Graph& g, const Match& m) {
  const Shape& xs = m.x->shape();
  const Shape batch = lead(xs);
  const int64_t r = static_cast<int64_t>(xs.size());
  const int64_t l = xs[xs.size() - 2], s = xs.back();
  const int64_t e = m.scores->input(0)->shape().back(), ev = m.pv->input(1)->shape().back();
  g.set_insert_point(m.pv);
  Node* q = reshape_to(g, strip(m.scores->input(0)), with(batch, l, e));
  Node* kt = reshape_to(g, strip(m.scores->input(1)), with(batch, e, s));
  // kᵀ written as transpose(k, -2, -1): k itself (a transpose of the transpose would be a view
  // the partition saves as a tensor of its own, where k may be a primal).
  Node* k = nullptr;
  if (is(kt, "transpose.int") && kt->input(0)->shape() == with(batch, s, e)) {
    const int64_t d0 = kt->arg("dim0").to_int(), d1 = kt->arg("dim1").to_int();
    auto last2 = [r](int64_t d) { return d == -1 || d == -2 || d == r - 1 || d == r - 2; };
    if (last2(d0) && last2(d1) && (d0 < 0 ? d0 + r : d0) != (d1 < 0 ? d1 + r : d1)) k = kt->input(0);
  }
  if (!k) k = g.call("transpose.int", {kt, r - 2, r - 1});
  Node* v = reshape_to(g, strip(m.pv->input(1)), with(batch, s, ev));
  Arg mask;
  if (m.mask && !m.causal) {
    Node* keep = m.mask_negated ? g.call("logical_not", {m.mask}) : m.mask;
    mask = keep->shape() == xs ? keep : g.call("expand", {keep, Arg(xs)});
  }
  Arg seed;
  Kwargs kw{{"scale", Arg(m.scale)}};
  if (m.drop_random) {
    // The seed the unfused random node would draw from in this run: the same rng_seed key.
    Node* sd = g.call("_stax_rng_seed", {});
    auto it = m.drop_random->attrs.find("rng_seed");
    sd->attrs["rng_seed"] = it != m.drop_random->attrs.end() ? it->second : Arg(m.drop_random->name());
    seed = Arg(sd);
    kw.emplace_back("dropout_threshold", Arg(m.drop_threshold));
    kw.emplace_back("dropout_keep_above", Arg(m.drop_keep_above));
    kw.emplace_back("dropout_scale", Arg(m.drop_scale));
  }
  Node* packed = g.call("_stax_flash_attention", {q, k, v, mask, m.causal, seed}, kw);
  const Shape out_shape = with(batch, l, ev);
  Node* flat = g.call("slice.Tensor", {packed, int64_t{0}, int64_t{0}, numel_of(out_shape)});
  Node* out = reshape_to(g, g.call("reshape", {flat, Arg(out_shape)}), m.pv->shape());
  g.set_insert_point(nullptr);
  g.replace_all_uses(m.pv, out);
}

// The single dim of a reduction's `dim` list, or nullopt.
std::optional<int64_t> single_dim(const Node* n) {
  const Arg& a = n->arg("dim");
  if (a.is_absent()) return std::nullopt;
  std::vector<int64_t> dims = a.to_int_list();
  if (dims.size() != 1) return std::nullopt;
  return dims[0];
}

bool same_dim(int64_t a, int64_t b, int64_t rank) {
  return (a < 0 ? a + rank : a) == (b < 0 ? b + rank : b);
}

// A softmax written out, as hand-written attention and torch's decomposition of _softmax give it:
//   div.Tensor(e, sum.dim_IntList(e, [d], keepdim)),  e = exp(sub.Tensor(x, amax(x, [d], keepdim)))
// (max.dim's values are amax by then: expand_multi_output; a detach of the maximum is allowed).
// Returns x and sets `dim`, or null when `div` is not that or an inner node has another use.
Node* written_softmax_input(Node* div, int64_t& dim) {
  if (!is(div, "div.Tensor") || div->input_nodes().size() != 2) return nullptr;
  Node *e = div->input(0), *sum = div->input(1);
  if (!is(e, "exp.default") || !is(sum, "sum.dim_IntList") || sum->input(0) != e ||
      !sum->arg("keepdim").to_bool() || !sum->arg("dtype").is_absent() || e->num_users() != 2 ||
      sum->num_users() != 1)
    return nullptr;
  Node* sub = e->input(0);
  if (!is(sub, "sub.Tensor") || sub->num_users() != 1 ||
      !(sub->arg("alpha").is_absent() || sub->arg("alpha").to_double() == 1.0))
    return nullptr;
  Node *x = sub->input(0), *mx = sub->input(1);
  if (is(mx, "detach.default") && mx->num_users() == 1) mx = mx->input(0);
  if (!is(mx, "amax.default") || mx->input(0) != x || !mx->arg("keepdim").to_bool() ||
      mx->num_users() != 1)
    return nullptr;
  const int64_t r = static_cast<int64_t>(x->shape().size());
  std::optional<int64_t> d_max = single_dim(mx), d_sum = single_dim(sum);
  if (!d_max || !d_sum || !same_dim(*d_max, *d_sum, r) || e->shape() != x->shape()) return nullptr;
  dim = *d_max;
  return x;
}

// Matches the attention around softmax node `sm` (`_softmax`, `softmax.int`, or the division
// ending a written-out softmax): nullopt when its input is no matrix product (not attention: no
// note); otherwise the match, or `why` says what stops the fusion.
std::optional<Match> match(const Graph& g, Node* sm, std::string& why) {
  Match m;
  m.softmax = sm;
  int64_t dim = 0;
  Node* written = written_softmax_input(sm, dim);
  m.x = written ? written : sm->input(0);
  const int64_t r = static_cast<int64_t>(m.x->shape().size());
  if (r < 2 || !read_scores(g, m)) return std::nullopt;
  if (!written) dim = sm->arg("dim").to_int();
  if (dim < 0) dim += r;
  if (dim != r - 1) {
    why = "softmax over dim " + std::to_string(dim) + ", not over the keys (dim " + std::to_string(r - 1) + ")";
    return m;
  }
  if (written ? false
              : is(sm, "_softmax.default") ? sm->arg("half_to_float").to_bool() : !sm->arg("dtype").is_absent()) {
    why = "the softmax converts its dtype";
    return m;
  }
  DType t = m.x->dtype();
  if (t != DType::Float32 && t != DType::Float64) {
    why = "the fused kernel takes float32 / float64, not " + std::string(dtype_name(t));
    return m;
  }
  why = read_probabilities(g, m);
  if (why.empty()) why = check_shapes(m);
  const size_t x_users = (written ? 2 : 1) + (m.guard ? 1 : 0);  // written out: amax and sub
  if (why.empty() && m.x->num_users() != x_users)
    why = "the scores %" + m.x->name() + " have another use";
  if (why.empty()) why = check_mask(g, m);
  return m;
}

}  // namespace

void fuse_decomposed_attention(Graph& g, AttentionFusion& report, bool dropout) {
  std::vector<Node*> softmaxes;
  for (Node* n : g.nodes()) {
    int64_t dim = 0;
    if (is(n, "_softmax.default") || is(n, "softmax.int") || written_softmax_input(n, dim))
      softmaxes.push_back(n);
  }
  int fused = 0;
  for (Node* sm : softmaxes) {
    std::string why;
    std::optional<Match> m = match(g, sm, why);
    if (!m) continue;
    const std::string name = "%" + sm->name();
    if (why.empty() && m->drop_random && !dropout)
      why = "dropout of the probabilities, and the backend offers no flash_attention_dropout extern";
    if (!why.empty()) {
      report.notes.push_back(name + ": not fused: " + why + " (decomposed: matmul, softmax, matmul)");
      continue;
    }
    rewrite(g, *m);
    ++fused;
    const std::string ext = m->drop_random ? "flash_attention_dropout" : "flash_attention";
    report.notes.push_back(name + ": fused the decomposed attention (" +
                           std::string(m->causal ? "causal mask" : m->mask ? "mask" : "no mask") +
                           (m->drop_random ? ", dropout" : "") + "): one " + ext +
                           " extern; its gradient is " + ext + "_backward");
  }
  report.fused += fused;
  if (fused > 0) dead_code_elimination(g);
}

}  // namespace stax
