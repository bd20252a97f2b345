#include "core/ir/expr.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <numeric>
#include <set>

namespace stax {

// One immutable expression node. `lead_*` caches the first variable (canonical order) the
// expression contains, which orders the terms of a sum.
struct ExprNode {
  ExprKind kind = ExprKind::Const;
  VarKind var_kind = VarKind::Iter;
  int32_t var_index = 0;
  int64_t value = 0;  // Const: value; Var: extent; Add: constant term
  std::vector<Expr> args;
  std::vector<int64_t> coeffs;
  bool has_var = false;
  VarKind lead_kind = VarKind::Iter;
  int32_t lead_index = 0;
  int64_t lead_extent = 0;
  size_t hash = 0;
};

namespace {

size_t mix(size_t h, size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); }

int kind_rank(ExprKind k) {
  switch (k) {
    case ExprKind::Const:
      return -1;
    case ExprKind::Var:
      return 0;
    case ExprKind::Mul:
      return 1;
    case ExprKind::FloorDiv:
      return 2;
    case ExprKind::Mod:
      return 3;
    case ExprKind::Min:
      return 4;
    case ExprKind::Max:
      return 5;
    case ExprKind::Add:
      return 6;
  }
  return 7;
}

template <class T>
int cmp3(const T& a, const T& b) {
  return a < b ? -1 : (b < a ? 1 : 0);
}

int compare_lead(const ExprNode& a, const ExprNode& b) {
  if (a.has_var != b.has_var) return a.has_var ? 1 : -1;  // variable-free first
  if (!a.has_var) return 0;
  if (int c = cmp3(static_cast<int>(a.lead_kind), static_cast<int>(b.lead_kind))) return c;
  if (int c = cmp3(a.lead_index, b.lead_index)) return c;
  return cmp3(a.lead_extent, b.lead_extent);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Construction of canonical nodes

struct ExprBuild {
  static Expr make(ExprNode n) {
    size_t h = mix(static_cast<size_t>(n.kind), std::hash<int64_t>()(n.value));
    if (n.kind == ExprKind::Var) {
      h = mix(h, static_cast<size_t>(n.var_kind));
      h = mix(h, static_cast<size_t>(n.var_index));
      n.has_var = true;
      n.lead_kind = n.var_kind;
      n.lead_index = n.var_index;
      n.lead_extent = n.value;
    }
    for (const Expr& a : n.args) {
      h = mix(h, a.hash());
      const ExprNode& an = *a.node();
      if (an.has_var && (!n.has_var || compare_lead(an, n) < 0)) {
        n.has_var = true;
        n.lead_kind = an.lead_kind;
        n.lead_index = an.lead_index;
        n.lead_extent = an.lead_extent;
      }
    }
    for (int64_t c : n.coeffs) h = mix(h, std::hash<int64_t>()(c));
    n.hash = h;
    return Expr(std::make_shared<const ExprNode>(std::move(n)));
  }
  static Expr constant(int64_t v) {
    ExprNode n;
    n.kind = ExprKind::Const;
    n.value = v;
    return make(std::move(n));
  }
  static Expr node(ExprKind k, std::vector<Expr> args, std::vector<int64_t> coeffs = {},
                   int64_t value = 0) {
    ExprNode n;
    n.kind = k;
    n.args = std::move(args);
    n.coeffs = std::move(coeffs);
    n.value = value;
    return make(std::move(n));
  }
};

Expr::Expr() : Expr(int64_t{0}) {}

Expr::Expr(int64_t value) {
  // Small constants are shared.
  static const std::vector<Expr>* kSmall = [] {
    auto* v = new std::vector<Expr>();
    for (int64_t i = -2; i <= 16; ++i) v->push_back(ExprBuild::constant(i));
    return v;
  }();
  if (value >= -2 && value <= 16) {
    node_ = (*kSmall)[static_cast<size_t>(value + 2)].node_;
  } else {
    node_ = ExprBuild::constant(value).node_;
  }
}

Expr Expr::var(VarKind kind, int32_t index, int64_t extent) {
  // Variables are built for every loader call and every re-indexing (tens of thousands per
  // 10k-node graph, each otherwise its own allocation): a small per-thread direct-mapped cache
  // returns the node built last for the same (kind, index, extent). Nodes are immutable, so a
  // shared one is the same value; the cache is bounded and per thread (no lock).
  struct Slot {
    VarKind kind = VarKind::Iter;
    int32_t index = -1;
    int64_t extent = 0;
    std::shared_ptr<const ExprNode> node;
  };
  static constexpr size_t kSlots = 256;
  thread_local std::array<Slot, kSlots> cache;
  const size_t h = mix(mix(static_cast<size_t>(kind), static_cast<size_t>(index)),
                       static_cast<size_t>(extent));
  Slot& slot = cache[h % kSlots];
  if (slot.node && slot.kind == kind && slot.index == index && slot.extent == extent)
    return Expr(slot.node);
  Expr e = make_var(kind, index, extent);
  slot.kind = kind;
  slot.index = index;
  slot.extent = extent;
  slot.node = e.node_;
  return e;
}

Expr Expr::make_var(VarKind kind, int32_t index, int64_t extent) {
  ExprNode n;
  n.kind = ExprKind::Var;
  n.var_kind = kind;
  n.var_index = index;
  n.value = extent;
  return ExprBuild::make(std::move(n));
}

ExprKind Expr::kind() const { return node_->kind; }
int64_t Expr::value() const { return node_->value; }
VarKind Expr::var_kind() const {
  assert(is_var());
  return node_->var_kind;
}
int32_t Expr::var_index() const {
  assert(is_var());
  return node_->var_index;
}
const std::vector<Expr>& Expr::args() const { return node_->args; }
const std::vector<int64_t>& Expr::coeffs() const { return node_->coeffs; }
size_t Expr::hash() const { return node_->hash; }

std::string Expr::name() const {
  assert(is_var());
  switch (node_->var_kind) {
    case VarKind::Iter:
      return "i" + std::to_string(node_->var_index);
    case VarKind::Reduce:
      return "r0_" + std::to_string(node_->var_index);
    case VarKind::Indirect:
      return "tmp" + std::to_string(node_->var_index);
  }
  return "?";
}

int compare(const Expr& a, const Expr& b) {
  if (a.node() == b.node()) return 0;
  const ExprNode& x = *a.node();
  const ExprNode& y = *b.node();
  if (x.kind == ExprKind::Const && y.kind == ExprKind::Const) return cmp3(x.value, y.value);
  if (int c = compare_lead(x, y)) return c;
  if (int c = cmp3(kind_rank(x.kind), kind_rank(y.kind))) return c;
  if (x.kind == ExprKind::Var) {
    if (int c = cmp3(static_cast<int>(x.var_kind), static_cast<int>(y.var_kind))) return c;
    if (int c = cmp3(x.var_index, y.var_index)) return c;
    return cmp3(x.value, y.value);
  }
  size_t n = std::min(x.args.size(), y.args.size());
  for (size_t i = 0; i < n; ++i)
    if (int c = compare(x.args[i], y.args[i])) return c;
  if (int c = cmp3(x.args.size(), y.args.size())) return c;
  if (int c = cmp3(x.coeffs, y.coeffs)) return c;
  return cmp3(x.value, y.value);
}

bool Expr::operator==(const Expr& o) const {
  if (node_ == o.node_) return true;
  if (node_->hash != o.node_->hash) return false;
  return compare(*this, o) == 0;
}

bool Expr::operator<(const Expr& o) const { return compare(*this, o) < 0; }

// ---------------------------------------------------------------------------------------------
// Integer helpers

int64_t floordiv_int(int64_t a, int64_t b) {
  if (b == 0) return 0;
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t mod_int(int64_t a, int64_t b) {
  if (b == 0) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

// ---------------------------------------------------------------------------------------------
// Sums

namespace {

struct Terms {
  std::vector<std::pair<Expr, int64_t>> terms;  // atom, coefficient
  int64_t constant = 0;
};

void decompose(const Expr& e, int64_t scale, Terms& out) {
  if (scale == 0) return;
  switch (e.kind()) {
    case ExprKind::Const:
      out.constant += scale * e.value();
      break;
    case ExprKind::Add:
      for (size_t i = 0; i < e.args().size(); ++i)
        out.terms.emplace_back(e.args()[i], e.coeffs()[i] * scale);
      out.constant += scale * e.value();
      break;
    default:
      out.terms.emplace_back(e, scale);
      break;
  }
}

void sort_and_merge(Terms& t) {
  auto& v = t.terms;
  // A stable sort by the canonical order. Sums have a handful of terms: an insertion sort (stable,
  // so the same result as std::stable_sort) without the merge sort's temporary buffer.
  if (v.size() <= 16) {
    for (size_t i = 1; i < v.size(); ++i) {
      if (compare(v[i - 1].first, v[i].first) <= 0) continue;
      auto x = std::move(v[i]);
      size_t j = i;
      for (; j > 0 && compare(x.first, v[j - 1].first) < 0; --j) v[j] = std::move(v[j - 1]);
      v[j] = std::move(x);
    }
  } else {
    std::stable_sort(v.begin(), v.end(),
                     [](const auto& a, const auto& b) { return compare(a.first, b.first) < 0; });
  }
  // Merge equal atoms (adjacent now) in place, then drop zero coefficients.
  size_t out = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (out > 0 && v[out - 1].first == v[i].first) {
      v[out - 1].second += v[i].second;
      continue;
    }
    if (out != i) v[out] = std::move(v[i]);
    ++out;
  }
  v.resize(out);
  v.erase(std::remove_if(v.begin(), v.end(), [](const auto& p) { return p.second == 0; }),
          v.end());
}

// s*(x//s) + x % s == x: finds one such pair (coefficients c*s and c) and replaces it by c*x.
// Also the nested form m*(x//(d*m)) + (x//d) % m == x//d (coefficients c*m and c; nested floor
// divisions combine, so (x//d)//m is built as x//(d*m)): a row-major flattening of several dims
// read back through their sizes, e.g. the (2048, 64) view of an (8, 16, 16, 64) buffer,
// 16384*(i0//256) + 1024*((i0//16) % 16) + 64*(i0 % 16) + i1, folds to 64*i0 + i1 (an affine
// index: make_view gives a ReinterpretView instead of a copy). Both identities hold for every
// integer x with Python's floor semantics and positive divisors.
bool fold_divmod_pair(Terms& t) {
  for (size_t i = 0; i < t.terms.size(); ++i) {
    const Expr& f = t.terms[i].first;
    if (f.kind() != ExprKind::FloorDiv || !f.args()[1].is_const()) continue;
    int64_t s = f.args()[1].value();
    for (size_t j = 0; j < t.terms.size(); ++j) {
      const Expr& m = t.terms[j].first;
      if (m.kind() != ExprKind::Mod || !m.args()[1].is_const()) continue;
      const int64_t ms = m.args()[1].value();
      const int64_t cm = t.terms[j].second;
      Expr folded;  // what the pair folds to, times cm
      if (m.args()[1] == f.args()[1] && m.args()[0] == f.args()[0]) {
        if (t.terms[i].second != cm * s) continue;
        folded = f.args()[0];
      } else {
        const Expr& inner = m.args()[0];  // x//d, with d * ms == s
        if (inner.kind() != ExprKind::FloorDiv || !inner.args()[1].is_const() ||
            inner.args()[0] != f.args()[0] || ms <= 0)
          continue;
        const int64_t d = inner.args()[1].value();
        if (d <= 0 || s <= 0 || s % ms != 0 || d != s / ms || t.terms[i].second != cm * ms) continue;
        folded = inner;
      }
      size_t hi = std::max(i, j), lo = std::min(i, j);
      t.terms.erase(t.terms.begin() + static_cast<std::ptrdiff_t>(hi));
      t.terms.erase(t.terms.begin() + static_cast<std::ptrdiff_t>(lo));
      decompose(folded, cm, t);
      return true;
    }
  }
  return false;
}

Expr build_sum(Terms t) {
  sort_and_merge(t);
  while (fold_divmod_pair(t)) sort_and_merge(t);
  if (t.terms.empty()) return Expr(t.constant);
  if (t.terms.size() == 1 && t.terms[0].second == 1 && t.constant == 0) return t.terms[0].first;
  // The same sums are built over and over (every load of a buffer with the same layout, every
  // re-indexing onto the same space): a small per-thread direct-mapped cache returns the node
  // built last for the same canonical terms instead of allocating it again (three allocations:
  // node, atoms, coefficients). Nodes are immutable, so a shared one is the same value.
  size_t h = std::hash<int64_t>()(t.constant);
  for (const auto& [a, c] : t.terms) h = mix(mix(h, a.hash()), std::hash<int64_t>()(c));
  static constexpr size_t kSlots = 1024;
  thread_local std::array<Expr, kSlots> cache;
  Expr& slot = cache[h % kSlots];
  {
    const ExprNode& n = *slot.node();
    bool hit = n.kind == ExprKind::Add && n.value == t.constant && n.args.size() == t.terms.size();
    for (size_t i = 0; hit && i < t.terms.size(); ++i)
      hit = n.coeffs[i] == t.terms[i].second && n.args[i] == t.terms[i].first;
    if (hit) return slot;
  }
  std::vector<Expr> atoms;
  std::vector<int64_t> coeffs;
  atoms.reserve(t.terms.size());
  coeffs.reserve(t.terms.size());
  for (auto& [a, c] : t.terms) {
    atoms.push_back(std::move(a));
    coeffs.push_back(c);
  }
  slot = ExprBuild::node(ExprKind::Add, std::move(atoms), std::move(coeffs), t.constant);
  return slot;
}

Expr scale(const Expr& e, int64_t k) {
  if (k == 0) return Expr(0);
  if (k == 1) return e;
  if (e.is_const()) return Expr(e.value() * k);
  Terms t;
  decompose(e, k, t);
  return build_sum(std::move(t));
}

Expr product_atom(const Expr& a, const Expr& b) {
  std::vector<Expr> f;
  for (const Expr* x : {&a, &b}) {
    if (x->kind() == ExprKind::Mul)
      f.insert(f.end(), x->args().begin(), x->args().end());
    else
      f.push_back(*x);
  }
  std::stable_sort(f.begin(), f.end(),
                   [](const Expr& x, const Expr& y) { return compare(x, y) < 0; });
  return ExprBuild::node(ExprKind::Mul, std::move(f));
}

int64_t gcd_terms(const Terms& t, int64_t d) {
  int64_t g = std::abs(d);
  for (const auto& [a, c] : t.terms) g = std::gcd(g, std::abs(c));
  return std::gcd(g, std::abs(t.constant));
}

Expr terms_expr(const Terms& t) { return build_sum(t); }

Terms divide_terms(const Terms& t, int64_t g) {
  Terms out;
  for (const auto& [a, c] : t.terms) out.terms.emplace_back(a, c / g);
  out.constant = t.constant / g;
  return out;
}

// Splits `t` into the terms whose coefficients h divides (returned, divided by h) and the rest.
Terms split_multiples(const Terms& t, int64_t h, Terms* rest) {
  Terms mult;
  for (const auto& [a, c] : t.terms) {
    if (c % h == 0)
      mult.terms.emplace_back(a, c / h);
    else
      rest->terms.emplace_back(a, c);
  }
  rest->constant = t.constant;
  return mult;
}

}  // namespace

Expr operator+(const Expr& a, const Expr& b) {
  if (a.is_const() && b.is_const()) return Expr(a.value() + b.value());
  if (a.is_const(0)) return b;
  if (b.is_const(0)) return a;
  Terms t;
  t.terms.reserve(a.args().size() + b.args().size() + 2);
  decompose(a, 1, t);
  decompose(b, 1, t);
  return build_sum(std::move(t));
}

Expr linear_sum(const std::vector<Expr>& terms, const std::vector<int64_t>& coeffs,
                int64_t constant) {
  assert(terms.size() == coeffs.size());
  bool simple = true;
  for (const Expr& e : terms) simple = simple && (e.is_var() || e.is_const());
  if (!simple) {
    Expr e(constant);
    for (size_t k = 0; k < terms.size(); ++k) e = e + terms[k] * Expr(coeffs[k]);
    return e;
  }
  // Variables and constants only: no floor-division / modulo pair to fold, so merging all terms
  // at once gives what the pairwise additions give.
  Terms t;
  t.constant = constant;
  t.terms.reserve(terms.size());
  for (size_t k = 0; k < terms.size(); ++k) {
    if (coeffs[k] == 0) continue;
    if (terms[k].is_const())
      t.constant += terms[k].value() * coeffs[k];
    else
      t.terms.emplace_back(terms[k], coeffs[k]);
  }
  if (t.terms.empty()) return Expr(t.constant);
  return build_sum(std::move(t));
}

Expr operator-(const Expr& a) { return scale(a, -1); }
Expr operator-(const Expr& a, const Expr& b) { return a + scale(b, -1); }

Expr operator*(const Expr& a, const Expr& b) {
  if (a.is_const()) return scale(b, a.value());
  if (b.is_const()) return scale(a, b.value());
  // Distribute over sums so that polynomials have one canonical form.
  if (a.kind() == ExprKind::Add || b.kind() == ExprKind::Add) {
    Terms ta, tb;
    decompose(a, 1, ta);
    decompose(b, 1, tb);
    Expr out = Expr(ta.constant) * b;
    for (const auto& [atom, c] : ta.terms) {
      Expr row = atom * Expr(tb.constant);
      for (const auto& [batom, bc] : tb.terms) row = row + scale(product_atom(atom, batom), bc);
      out = out + scale(row, c);
    }
    return out;
  }
  return product_atom(a, b);
}

// ---------------------------------------------------------------------------------------------
// FloorDiv / Mod / Min / Max

Expr floordiv(const Expr& a, const Expr& b) {
  if (!b.is_const() || b.value() <= 0) {
    if (a.is_const(0)) return Expr(0);
    if (a.is_const() && b.is_const()) return Expr(floordiv_int(a.value(), b.value()));
    return ExprBuild::node(ExprKind::FloorDiv, {a, b});
  }
  int64_t d = b.value();
  if (d == 1) return a;
  if (a.is_const()) return Expr(floordiv_int(a.value(), d));
  // (x // d1) // d == x // (d1*d)
  if (a.kind() == ExprKind::FloorDiv && a.args()[1].is_const() && a.args()[1].value() > 0)
    return floordiv(a.args()[0], Expr(a.args()[1].value() * d));
  Terms t;
  decompose(a, 1, t);
  // Terms divisible by d leave the division: floor((d*q + r) / d) = q + floor(r / d).
  Terms q, rest;
  for (const auto& [atom, c] : t.terms) {
    if (c % d == 0)
      q.terms.emplace_back(atom, c / d);
    else
      rest.terms.emplace_back(atom, c);
  }
  q.constant = floordiv_int(t.constant, d);
  rest.constant = mod_int(t.constant, d);
  Expr quotient = build_sum(q);
  if (rest.terms.empty()) return quotient;
  // A common factor of every term and the divisor cancels.
  if (int64_t g = gcd_terms(rest, d); g > 1) {
    rest = divide_terms(rest, g);
    d /= g;
  }
  Expr r = terms_expr(rest);
  if (bound(r).within(0, d - 1)) return quotient;
  // floor((h*y + s) / (h*e)) == floor(y / e) when 0 <= s < h.
  for (const auto& [atom, c] : rest.terms) {
    int64_t h = std::gcd(std::abs(c), d);
    if (h <= 1) continue;
    Terms small;
    Terms big = split_multiples(rest, h, &small);
    if (big.terms.empty()) continue;
    if (!bound(terms_expr(small)).within(0, h - 1)) continue;
    return quotient + floordiv(terms_expr(big), Expr(d / h));
  }
  return quotient + ExprBuild::node(ExprKind::FloorDiv, {r, Expr(d)});
}

Expr mod(const Expr& a, const Expr& b) {
  if (!b.is_const() || b.value() <= 0) {
    if (a.is_const() && b.is_const()) return Expr(mod_int(a.value(), b.value()));
    return ExprBuild::node(ExprKind::Mod, {a, b});
  }
  int64_t d = b.value();
  if (d == 1) return Expr(0);
  if (a.is_const()) return Expr(mod_int(a.value(), d));
  Terms t;
  decompose(a, 1, t);
  Terms rest;
  for (const auto& [atom, c] : t.terms)
    if (c % d != 0) rest.terms.emplace_back(atom, c);
  rest.constant = mod_int(t.constant, d);
  if (rest.terms.empty()) return Expr(rest.constant);
  // Mod(g*x, g*e) == g*Mod(x, e).
  int64_t g = gcd_terms(rest, d);
  if (g > 1) {
    rest = divide_terms(rest, g);
    d /= g;
  }
  Expr r = terms_expr(rest);
  if (bound(r).within(0, d - 1)) return scale(r, g);
  // Mod(Mod(x, d1), d) == Mod(x, d) when d divides d1.
  if (r.kind() == ExprKind::Mod && r.args()[1].is_const() && r.args()[1].value() % d == 0)
    return scale(mod(r.args()[0], Expr(d)), g);
  // Mod(h*y + s, h*e) == h*Mod(y, e) + s when 0 <= s < h.
  for (const auto& [atom, c] : rest.terms) {
    int64_t h = std::gcd(std::abs(c), d);
    if (h <= 1) continue;
    Terms small;
    Terms big = split_multiples(rest, h, &small);
    if (big.terms.empty()) continue;
    Expr s = terms_expr(small);
    if (!bound(s).within(0, h - 1)) continue;
    return scale(scale(mod(terms_expr(big), Expr(d / h)), h) + s, g);
  }
  return scale(ExprBuild::node(ExprKind::Mod, {r, Expr(d)}), g);
}

namespace {

Expr minmax(const Expr& a, const Expr& b, bool is_min) {
  if (a.is_const() && b.is_const())
    return Expr(is_min ? std::min(a.value(), b.value()) : std::max(a.value(), b.value()));
  if (a == b) return a;
  Interval ia = bound(a), ib = bound(b);
  if (ia.hi_finite() && ib.lo_finite() && ia.hi <= ib.lo) return is_min ? a : b;
  if (ib.hi_finite() && ia.lo_finite() && ib.hi <= ia.lo) return is_min ? b : a;
  std::vector<Expr> args{a, b};
  // Canonical argument order, constants last (as in sums): min(i0, 5).
  bool swap = a.is_const() != b.is_const() ? a.is_const() : compare(b, a) < 0;
  if (swap) std::swap(args[0], args[1]);
  return ExprBuild::node(is_min ? ExprKind::Min : ExprKind::Max, std::move(args));
}

}  // namespace

Expr min(const Expr& a, const Expr& b) { return minmax(a, b, true); }
Expr max(const Expr& a, const Expr& b) { return minmax(a, b, false); }

// ---------------------------------------------------------------------------------------------
// Intervals (Def. 6.4)

namespace {

using I128 = __int128;
constexpr int64_t kNeg = Interval::kNegInf;
constexpr int64_t kPos = Interval::kPosInf;

int64_t clamp128(I128 v) {
  if (v >= static_cast<I128>(kPos)) return kPos;
  if (v <= static_cast<I128>(kNeg)) return kNeg;
  return static_cast<int64_t>(v);
}

// Product of two bounds where kNeg/kPos stand for -inf/+inf.
int64_t ext_mul(int64_t x, int64_t y) {
  if (x == 0 || y == 0) return 0;
  bool xi = x == kNeg || x == kPos, yi = y == kNeg || y == kPos;
  if (xi || yi) return ((x < 0) != (y < 0)) ? kNeg : kPos;
  return clamp128(static_cast<I128>(x) * y);
}

int64_t ext_add(int64_t x, int64_t y, bool lower) {
  if (lower && (x == kNeg || y == kNeg)) return kNeg;
  if (!lower && (x == kPos || y == kPos)) return kPos;
  if (x == kNeg || y == kNeg) return kNeg;
  if (x == kPos || y == kPos) return kPos;
  return clamp128(static_cast<I128>(x) + y);
}

int64_t ext_neg(int64_t x) {
  if (x == kNeg) return kPos;
  if (x == kPos) return kNeg;
  return -x;
}

}  // namespace

std::string Interval::str() const {
  auto b = [](int64_t v) {
    if (v == kNeg) return std::string("-inf");
    if (v == kPos) return std::string("+inf");
    return std::to_string(v);
  };
  return "[" + b(lo) + ", " + b(hi) + "]";
}

Interval interval_add(Interval a, Interval b) {
  return {ext_add(a.lo, b.lo, true), ext_add(a.hi, b.hi, false)};
}

Interval interval_neg(Interval a) { return {ext_neg(a.hi), ext_neg(a.lo)}; }

Interval interval_mul(Interval a, Interval b) {
  int64_t c[4] = {ext_mul(a.lo, b.lo), ext_mul(a.lo, b.hi), ext_mul(a.hi, b.lo),
                  ext_mul(a.hi, b.hi)};
  return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}

Interval interval_floordiv(Interval a, Interval b) {
  if (b.is_point() && b.lo > 0) {
    int64_t d = b.lo;
    return {a.lo == kNeg ? kNeg : floordiv_int(a.lo, d),
            a.hi == kPos ? kPos : floordiv_int(a.hi, d)};
  }
  if (b.lo > 0 && b.lo_finite() && a.lo >= 0) {
    // Nonnegative numerator, positive divisor: between a.lo // b.hi and a.hi // b.lo.
    int64_t lo = b.hi == kPos ? 0 : floordiv_int(a.lo, b.hi);
    return {lo, a.hi == kPos ? kPos : floordiv_int(a.hi, b.lo)};
  }
  return Interval::unbounded();
}

Interval interval_mod(Interval a, Interval b) {
  if (b.lo > 0 && b.lo_finite()) {
    if (b.is_point() && a.lo >= 0 && a.hi_finite() && a.hi < b.lo) return a;
    if (b.is_point() && a.lo_finite() && a.hi_finite() &&
        floordiv_int(a.lo, b.lo) == floordiv_int(a.hi, b.lo))
      return {mod_int(a.lo, b.lo), mod_int(a.hi, b.lo)};
    return {0, b.hi == kPos ? kPos : b.hi - 1};
  }
  return Interval::unbounded();
}

Interval interval_min(Interval a, Interval b) {
  return {std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
}
Interval interval_max(Interval a, Interval b) {
  return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
}
Interval interval_union(Interval a, Interval b) {
  return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)};
}

Interval bound(const Expr& e, const VarIntervals& override_ranges) {
  switch (e.kind()) {
    case ExprKind::Const:
      return Interval::point(e.value());
    case ExprKind::Var: {
      if (override_ranges)
        if (auto r = override_ranges(e)) return *r;
      if (e.extent() >= 0) return {0, e.extent() - 1};
      if (e.var_kind() == VarKind::Indirect) return Interval::unbounded();
      return {0, kPos};
    }
    case ExprKind::Add: {
      Interval acc = Interval::point(e.value());
      for (size_t i = 0; i < e.args().size(); ++i)
        acc = interval_add(
            acc, interval_mul(bound(e.args()[i], override_ranges), Interval::point(e.coeffs()[i])));
      return acc;
    }
    case ExprKind::Mul: {
      Interval acc = Interval::point(1);
      for (const Expr& f : e.args()) acc = interval_mul(acc, bound(f, override_ranges));
      return acc;
    }
    case ExprKind::FloorDiv:
      return interval_floordiv(bound(e.args()[0], override_ranges),
                               bound(e.args()[1], override_ranges));
    case ExprKind::Mod:
      return interval_mod(bound(e.args()[0], override_ranges), bound(e.args()[1], override_ranges));
    case ExprKind::Min:
      return interval_min(bound(e.args()[0], override_ranges), bound(e.args()[1], override_ranges));
    case ExprKind::Max:
      return interval_max(bound(e.args()[0], override_ranges), bound(e.args()[1], override_ranges));
  }
  return Interval::unbounded();
}

// ---------------------------------------------------------------------------------------------
// Substitution, evaluation, variables

Expr substitute(const Expr& e, const VarSubstitution& fn) {
  switch (e.kind()) {
    case ExprKind::Const:
      return e;
    case ExprKind::Var: {
      if (auto r = fn(e)) return *r;
      return e;
    }
    case ExprKind::Add: {
      Expr acc(e.value());
      for (size_t i = 0; i < e.args().size(); ++i)
        acc = acc + substitute(e.args()[i], fn) * Expr(e.coeffs()[i]);
      return acc;
    }
    case ExprKind::Mul: {
      Expr acc(1);
      for (const Expr& f : e.args()) acc = acc * substitute(f, fn);
      return acc;
    }
    case ExprKind::FloorDiv:
      return floordiv(substitute(e.args()[0], fn), substitute(e.args()[1], fn));
    case ExprKind::Mod:
      return mod(substitute(e.args()[0], fn), substitute(e.args()[1], fn));
    case ExprKind::Min:
      return min(substitute(e.args()[0], fn), substitute(e.args()[1], fn));
    case ExprKind::Max:
      return max(substitute(e.args()[0], fn), substitute(e.args()[1], fn));
  }
  return e;
}

Expr substitute(const Expr& e, const std::map<Expr, Expr>& mapping) {
  return substitute(e, [&](const Expr& v) -> std::optional<Expr> {
    auto it = mapping.find(v);
    if (it == mapping.end()) return std::nullopt;
    return it->second;
  });
}

int64_t evaluate(const Expr& e, const std::function<int64_t(const Expr& var)>& value_of) {
  switch (e.kind()) {
    case ExprKind::Const:
      return e.value();
    case ExprKind::Var:
      return value_of(e);
    case ExprKind::Add: {
      int64_t acc = e.value();
      for (size_t i = 0; i < e.args().size(); ++i)
        acc += e.coeffs()[i] * evaluate(e.args()[i], value_of);
      return acc;
    }
    case ExprKind::Mul: {
      int64_t acc = 1;
      for (const Expr& f : e.args()) acc *= evaluate(f, value_of);
      return acc;
    }
    case ExprKind::FloorDiv:
      return floordiv_int(evaluate(e.args()[0], value_of), evaluate(e.args()[1], value_of));
    case ExprKind::Mod:
      return mod_int(evaluate(e.args()[0], value_of), evaluate(e.args()[1], value_of));
    case ExprKind::Min:
      return std::min(evaluate(e.args()[0], value_of), evaluate(e.args()[1], value_of));
    case ExprKind::Max:
      return std::max(evaluate(e.args()[0], value_of), evaluate(e.args()[1], value_of));
  }
  return 0;
}

namespace {
void collect_vars(const Expr& e, std::set<Expr>& out) {
  if (e.is_var()) {
    out.insert(e);
    return;
  }
  for (const Expr& a : e.args()) collect_vars(a, out);
}
}  // namespace

std::vector<Expr> free_vars(const Expr& e) {
  std::set<Expr> s;
  collect_vars(e, s);
  return {s.begin(), s.end()};
}

bool depends_on(const Expr& e, const Expr& var) {
  if (e.is_var()) return e == var;
  for (const Expr& a : e.args())
    if (depends_on(a, var)) return true;
  return false;
}

std::optional<int64_t> linear_coeff(const Expr& e, const Expr& var) {
  if (e == var) return 1;
  if (e.kind() == ExprKind::Add) {
    int64_t c = 0;
    for (size_t i = 0; i < e.args().size(); ++i) {
      if (e.args()[i] == var)
        c += e.coeffs()[i];
      else if (depends_on(e.args()[i], var))
        return std::nullopt;
    }
    return c;
  }
  if (depends_on(e, var)) return std::nullopt;
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Printing (the SDK's format_expr spelling)

namespace {

std::string format(const Expr& e);

// An operand of *, // and %: variables, nonnegative constants and min/max as they are, anything
// else in parentheses.
std::string format_atom(const Expr& e) {
  bool bare = (e.is_var()) || (e.is_const() && e.value() >= 0) || e.kind() == ExprKind::Min ||
              e.kind() == ExprKind::Max;
  return bare ? format(e) : "(" + format(e) + ")";
}

std::string format_product(const std::vector<Expr>& factors, int64_t coeff) {
  std::string out = coeff != 1 ? std::to_string(coeff) + "*" : "";
  for (size_t i = 0; i < factors.size(); ++i) {
    if (i) out += "*";
    out += format_atom(factors[i]);
  }
  return out;
}

// One term c*atom of a sum; *negative receives whether it prints with a leading minus.
std::string format_term(const Expr& atom, int64_t c, bool* negative) {
  *negative = c < 0;
  int64_t m = c < 0 ? -c : c;
  if (c == 1) return format(atom);
  std::vector<Expr> factors;
  if (atom.kind() == ExprKind::Mul)
    factors = atom.args();
  else
    factors.push_back(atom);
  return format_product(factors, m);
}

std::string format(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::Const:
      return std::to_string(e.value());
    case ExprKind::Var:
      return e.name();
    case ExprKind::Add: {
      std::string out;
      for (size_t i = 0; i < e.args().size(); ++i) {
        bool neg = false;
        std::string text = format_term(e.args()[i], e.coeffs()[i], &neg);
        if (i == 0)
          out = neg ? "-" + text : text;
        else
          out += (neg ? " - " : " + ") + text;
      }
      if (e.value() > 0) out += " + " + std::to_string(e.value());
      if (e.value() < 0) out += " - " + std::to_string(-e.value());
      return out;
    }
    case ExprKind::Mul:
      return format_product(e.args(), 1);
    case ExprKind::FloorDiv:
      return format_atom(e.args()[0]) + "//" + format_atom(e.args()[1]);
    case ExprKind::Mod:
      return format_atom(e.args()[0]) + " % " + format_atom(e.args()[1]);
    case ExprKind::Min:
      return "min(" + format(e.args()[0]) + ", " + format(e.args()[1]) + ")";
    case ExprKind::Max:
      return "max(" + format(e.args()[0]) + ", " + format(e.args()[1]) + ")";
  }
  return "?";
}

}  // namespace

std::string Expr::str() const { return format(*this); }

}  // namespace stax
