// Read-only views over the index expressions of a loop body (StaxExprNode arrays), a visitor,
// evaluation, and printing in the seed's canonical form (`16384*i0 + 8192*i1 + r0_0`).
#ifndef STAX_SDK_EXPR_HPP
#define STAX_SDK_EXPR_HPP

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "stax/sdk/types.hpp"

namespace stax {
namespace sdk {

enum class ExprKind : int32_t {
  Const = STAX_EXPR_CONST,
  IterVar = STAX_EXPR_ITER_VAR,
  ReduceVar = STAX_EXPR_REDUCE_VAR,
  Indirect = STAX_EXPR_INDIRECT,
  Add = STAX_EXPR_ADD,
  Mul = STAX_EXPR_MUL,
  FloorDiv = STAX_EXPR_FLOORDIV,
  Mod = STAX_EXPR_MOD,
  Min = STAX_EXPR_MIN,
  Max = STAX_EXPR_MAX,
};

inline bool is_leaf(ExprKind k) {
  return k == ExprKind::Const || k == ExprKind::IterVar || k == ExprKind::ReduceVar ||
         k == ExprKind::Indirect;
}

// One node of an expression DAG, seen through the array that holds it.
class Expr {
 public:
  Expr() = default;
  Expr(const StaxExprNode* nodes, size_t num_nodes, int32_t index)
      : nodes_(nodes), num_nodes_(num_nodes), index_(index) {}

  bool valid() const { return nodes_ && index_ >= 0 && static_cast<size_t>(index_) < num_nodes_; }
  int32_t index() const { return index_; }
  const StaxExprNode& node() const { return nodes_[index_]; }
  ExprKind kind() const { return static_cast<ExprKind>(node().kind); }
  int64_t value() const { return node().value; }  // Const: value; vars: k; Indirect: op index
  Expr lhs() const { return Expr(nodes_, num_nodes_, node().lhs); }
  Expr rhs() const { return Expr(nodes_, num_nodes_, node().rhs); }

  bool is_const() const { return kind() == ExprKind::Const; }
  bool is_const(int64_t v) const { return is_const() && value() == v; }

  const StaxExprNode* nodes() const { return nodes_; }
  size_t num_nodes() const { return num_nodes_; }

 private:
  const StaxExprNode* nodes_ = nullptr;
  size_t num_nodes_ = 0;
  int32_t index_ = -1;
};

// Bottom-up evaluation of an expression in a domain R (interval analysis, pretty printers,
// converters to another IR). Shared sub-DAGs are visited once (results are memoised).
template <class R>
class ExprVisitor {
 public:
  virtual ~ExprVisitor() = default;
  virtual R constant(int64_t value) = 0;
  virtual R iter_var(int32_t k) = 0;
  virtual R reduce_var(int32_t k) = 0;
  virtual R indirect(int32_t op_index) = 0;
  virtual R add(const R& a, const R& b) = 0;
  virtual R mul(const R& a, const R& b) = 0;
  virtual R floordiv(const R& a, const R& b) = 0;
  virtual R mod(const R& a, const R& b) = 0;
  virtual R min(const R& a, const R& b) = 0;
  virtual R max(const R& a, const R& b) = 0;
};

template <class R>
R visit(const Expr& root, ExprVisitor<R>& v) {
  // Nodes are in topological order, so one forward pass over [0, root] suffices; only nodes
  // reachable from root are evaluated.
  std::vector<char> needed(static_cast<size_t>(root.index()) + 1, 0);
  needed[root.index()] = 1;
  for (int32_t i = root.index(); i >= 0; --i) {
    if (!needed[i]) continue;
    const StaxExprNode& n = root.nodes()[i];
    if (!is_leaf(static_cast<ExprKind>(n.kind))) {
      if (n.lhs >= 0 && n.lhs < i) needed[n.lhs] = 1;
      if (n.rhs >= 0 && n.rhs < i) needed[n.rhs] = 1;
    }
  }
  std::vector<R> val(needed.size());
  for (int32_t i = 0; i <= root.index(); ++i) {
    if (!needed[i]) continue;
    const StaxExprNode& n = root.nodes()[i];
    switch (static_cast<ExprKind>(n.kind)) {
      case ExprKind::Const: val[i] = v.constant(n.value); break;
      case ExprKind::IterVar: val[i] = v.iter_var(static_cast<int32_t>(n.value)); break;
      case ExprKind::ReduceVar: val[i] = v.reduce_var(static_cast<int32_t>(n.value)); break;
      case ExprKind::Indirect: val[i] = v.indirect(static_cast<int32_t>(n.value)); break;
      case ExprKind::Add: val[i] = v.add(val[n.lhs], val[n.rhs]); break;
      case ExprKind::Mul: val[i] = v.mul(val[n.lhs], val[n.rhs]); break;
      case ExprKind::FloorDiv: val[i] = v.floordiv(val[n.lhs], val[n.rhs]); break;
      case ExprKind::Mod: val[i] = v.mod(val[n.lhs], val[n.rhs]); break;
      case ExprKind::Min: val[i] = v.min(val[n.lhs], val[n.rhs]); break;
      case ExprKind::Max: val[i] = v.max(val[n.lhs], val[n.rhs]); break;
    }
  }
  return val[root.index()];
}

// Python floor division / remainder on int64 (rhs > 0 for index expressions; rhs == 0 gives 0).
inline int64_t expr_floordiv(int64_t a, int64_t b) {
  if (b == 0) return 0;
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
inline int64_t expr_mod(int64_t a, int64_t b) {
  if (b == 0) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

// The value of an expression at a point. `indirect` is indexed by op index (the values of the
// body's INDIRECT_INDEXING ops); it may be null when the expression has no Indirect node.
inline int64_t evaluate(const Expr& e, const int64_t* iter_vars, const int64_t* reduce_vars,
                        const int64_t* indirect = nullptr) {
  struct Eval : ExprVisitor<int64_t> {
    const int64_t *iv, *rv, *ind;
    int64_t constant(int64_t value) override { return value; }
    int64_t iter_var(int32_t k) override { return iv[k]; }
    int64_t reduce_var(int32_t k) override { return rv[k]; }
    int64_t indirect(int32_t op) override { return ind ? ind[op] : 0; }
    int64_t add(const int64_t& a, const int64_t& b) override { return a + b; }
    int64_t mul(const int64_t& a, const int64_t& b) override { return a * b; }
    int64_t floordiv(const int64_t& a, const int64_t& b) override { return expr_floordiv(a, b); }
    int64_t mod(const int64_t& a, const int64_t& b) override { return expr_mod(a, b); }
    int64_t min(const int64_t& a, const int64_t& b) override { return a < b ? a : b; }
    int64_t max(const int64_t& a, const int64_t& b) override { return a < b ? b : a; }
  } ev;
  ev.iv = iter_vars;
  ev.rv = reduce_vars;
  ev.ind = indirect;
  return visit<int64_t>(e, ev);
}

// How to spell an expression. The defaults give the seed's canonical (Python-like) form:
// `128*i0 + r0_0`, `(i0//4)`, `i0 % 4`, `min(a, b)`. C-like printers set floordiv to " / "
// (index expressions are nonnegative) and min/max to their functions.
struct ExprSyntax {
  std::function<std::string(int32_t)> iter_var;    // default: "i<k>"
  std::function<std::string(int32_t)> reduce_var;  // default: "r0_<k>"
  std::function<std::string(int32_t)> indirect;    // default: "tmp<op>"
  std::string floordiv = "//";
  std::string mod = " % ";
  std::string min = "min";
  std::string max = "max";
  std::string int_suffix;  // appended to constants ("LL" for C printers if needed)
};

namespace detail {

inline void flatten(const Expr& e, ExprKind k, std::vector<Expr>& out) {
  if (e.kind() == k) {
    flatten(e.lhs(), k, out);
    flatten(e.rhs(), k, out);
  } else {
    out.push_back(e);
  }
}

inline std::string format_expr_rec(const Expr& e, const ExprSyntax& s);

inline std::string const_text(int64_t v, const ExprSyntax& s) {
  return std::to_string(v) + s.int_suffix;
}

// An operand of * // %: leaves and calls as they are, everything else in parentheses.
inline std::string format_atom(const Expr& e, const ExprSyntax& s) {
  ExprKind k = e.kind();
  if ((is_leaf(k) && !(k == ExprKind::Const && e.value() < 0)) || k == ExprKind::Min ||
      k == ExprKind::Max)
    return format_expr_rec(e, s);
  return "(" + format_expr_rec(e, s) + ")";
}

// A product: constant factors first, `-` for a -1 coefficient.
inline std::string format_product(const Expr& e, const ExprSyntax& s, bool* negative) {
  std::vector<Expr> factors;
  flatten(e, ExprKind::Mul, factors);
  int64_t coeff = 1;
  bool has_const = false;
  std::vector<Expr> rest;
  for (const Expr& f : factors) {
    if (f.is_const()) {
      coeff *= f.value();
      has_const = true;
    } else {
      rest.push_back(f);
    }
  }
  *negative = false;
  if (negative && coeff < 0 && !rest.empty()) {
    *negative = true;
    coeff = -coeff;
  }
  std::string out;
  if (rest.empty()) return const_text(has_const ? coeff : 1, s);
  if (coeff != 1) out = const_text(coeff, s) + "*";
  for (size_t i = 0; i < rest.size(); ++i) {
    if (i) out += "*";
    out += format_atom(rest[i], s);
  }
  return out;
}

inline std::string format_expr_rec(const Expr& e, const ExprSyntax& s) {
  switch (e.kind()) {
    case ExprKind::Const: return const_text(e.value(), s);
    case ExprKind::IterVar: {
      int32_t k = static_cast<int32_t>(e.value());
      return s.iter_var ? s.iter_var(k) : "i" + std::to_string(k);
    }
    case ExprKind::ReduceVar: {
      int32_t k = static_cast<int32_t>(e.value());
      return s.reduce_var ? s.reduce_var(k) : "r0_" + std::to_string(k);
    }
    case ExprKind::Indirect: {
      int32_t k = static_cast<int32_t>(e.value());
      return s.indirect ? s.indirect(k) : "tmp" + std::to_string(k);
    }
    case ExprKind::Add: {
      std::vector<Expr> terms;
      flatten(e, ExprKind::Add, terms);
      std::string out;
      for (size_t i = 0; i < terms.size(); ++i) {
        const Expr& t = terms[i];
        bool neg = false;
        std::string text;
        if (t.is_const() && t.value() < 0 && i > 0) {
          neg = true;
          text = const_text(-t.value(), s);
        } else if (t.kind() == ExprKind::Mul) {
          text = format_product(t, s, &neg);
        } else {
          text = format_expr_rec(t, s);
        }
        if (i == 0) out = neg ? "-" + text : text;
        else out += (neg ? " - " : " + ") + text;
      }
      return out;
    }
    case ExprKind::Mul: {
      bool neg = false;
      std::string text = format_product(e, s, &neg);
      return neg ? "-" + text : text;
    }
    case ExprKind::FloorDiv:
      return format_atom(e.lhs(), s) + s.floordiv + format_atom(e.rhs(), s);
    case ExprKind::Mod: return format_atom(e.lhs(), s) + s.mod + format_atom(e.rhs(), s);
    case ExprKind::Min:
      return s.min + "(" + format_expr_rec(e.lhs(), s) + ", " + format_expr_rec(e.rhs(), s) + ")";
    case ExprKind::Max:
      return s.max + "(" + format_expr_rec(e.lhs(), s) + ", " + format_expr_rec(e.rhs(), s) + ")";
  }
  return "?";
}

}  // namespace detail

// The expression as text; see ExprSyntax. A FloorDiv or Mod inside a product is parenthesised:
// `128*(i0//4) + i0 % 4`.
inline std::string format_expr(const Expr& e, const ExprSyntax& syntax = ExprSyntax()) {
  if (!e.valid()) return "<invalid expr>";
  return detail::format_expr_rec(e, syntax);
}

}  // namespace sdk
}  // namespace stax

#endif  // STAX_SDK_EXPR_HPP
