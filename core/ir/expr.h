// Symbolic index expressions of the loop-level IR (seed §6.4, §6.8): integer expressions over
// iteration variables i0, i1, ..., reduction variables r0_0, r0_1, ..., indirect variables (the
// values of ops.indirect_indexing, named tmp<op>) and constants.
//
// Expressions are immutable and BUILT SIMPLIFIED: every constructor returns the canonical form, so
// structurally equal expressions are equal values and printing is deterministic.
//
// Canonical form
//   * A sum is `c_1*t_1 + ... + c_n*t_n + c0`: the terms t_k are atoms (variables, products,
//     floor divisions, moduli, min, max), each appearing once with a nonzero coefficient; constants
//     are folded into c0. Terms are ordered by variable: i0 < i1 < ... < r0_0 < r0_1 < ... < tmp<k>
//     (an atom that is not a variable sorts by the first variable it contains, after that variable
//     itself); the constant comes last. Hence `16384*i0 + 8192*i1 + r0_0`, `i0 + 256*i1`.
//   * Multiplication by a constant scales the coefficients; a product of two non-constant
//     expressions is distributed over sums and kept as a product atom of sorted factors.
//   * FloorDiv and Mod take a positive constant divisor for simplification (a symbolic divisor is
//     kept as is). Terms divisible by the divisor leave the FloorDiv (and vanish from the Mod); a
//     common factor of all terms and the divisor is cancelled; a remainder whose range (from the
//     variables' extents, Def. 6.4) lies in [0, d) makes FloorDiv 0 and Mod the identity;
//     nested FloorDivs combine; `s*(x//s) + x % s` folds back to `x`.
// Printing follows the SDK's format_expr (sdk/include/stax/sdk/expr.hpp): `128*i0 + r0_0`,
// `i0 - 2*i1 + 5`, `i0//4`, `4*(i0//4) + i0 % 4`, `(3*i0) % 128`, `min(i0, 7)`.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace stax {

enum class ExprKind : uint8_t { Const, Var, Add, Mul, FloorDiv, Mod, Min, Max };
// Iteration variables i<k>, reduction variables r0_<k>, indirect variables tmp<op> (op = the index
// of the ops.indirect_indexing op in its loop body). The numbering matches the SDK's ExprKind.
enum class VarKind : uint8_t { Iter, Reduce, Indirect };

struct ExprNode;

// An integer in Z ∪ {±inf}: the bounds of Def. 6.4's interval domain. Arithmetic saturates.
struct Interval {
  static constexpr int64_t kNegInf = INT64_MIN;
  static constexpr int64_t kPosInf = INT64_MAX;
  int64_t lo = kNegInf;
  int64_t hi = kPosInf;

  static Interval point(int64_t v) { return {v, v}; }
  static Interval unbounded() { return {}; }
  bool is_point() const { return lo == hi && lo != kNegInf && lo != kPosInf; }
  bool lo_finite() const { return lo != kNegInf; }
  bool hi_finite() const { return hi != kPosInf; }
  // True when every value lies in [a, b].
  bool within(int64_t a, int64_t b) const { return lo >= a && hi <= b; }
  bool operator==(const Interval&) const = default;
  std::string str() const;  // "[0, 127]", "[-inf, +inf]"
};

class Expr {
 public:
  Expr();               // the constant 0
  Expr(int64_t value);  // NOLINT: constants convert implicitly (i0 + 1)
  Expr(int value) : Expr(static_cast<int64_t>(value)) {}  // NOLINT

  // A variable. `extent` is its range [0, extent) used by simplification and interval analysis;
  // -1 means unknown (an indirect variable without a size). Two variables are the same variable
  // when kind, index and extent agree.
  static Expr var(VarKind kind, int32_t index, int64_t extent);
  static Expr iter(int32_t k, int64_t extent) { return var(VarKind::Iter, k, extent); }
  static Expr reduce(int32_t k, int64_t extent) { return var(VarKind::Reduce, k, extent); }
  static Expr indirect(int32_t op, int64_t extent) { return var(VarKind::Indirect, op, extent); }

  ExprKind kind() const;
  bool is_const() const { return kind() == ExprKind::Const; }
  bool is_const(int64_t v) const { return is_const() && value() == v; }
  bool is_var() const { return kind() == ExprKind::Var; }
  // Const: its value. Var: its extent. Add: the constant term.
  int64_t value() const;
  // Var only.
  VarKind var_kind() const;
  int32_t var_index() const;
  int64_t extent() const { return value(); }
  // Add: the atoms in canonical order with coeffs(). Mul: the factors. FloorDiv/Mod: {lhs, rhs}.
  // Min/Max: {a, b}.
  const std::vector<Expr>& args() const;
  const std::vector<int64_t>& coeffs() const;  // Add only
  // The variable's name: "i0", "r0_0", "tmp3".
  std::string name() const;

  std::string str() const;
  size_t hash() const;

  bool operator==(const Expr& o) const;
  bool operator!=(const Expr& o) const { return !(*this == o); }
  // The canonical total order (used to sort terms; also usable as a map key).
  bool operator<(const Expr& o) const;

  const ExprNode* node() const { return node_.get(); }

 private:
  friend struct ExprBuild;
  static Expr make_var(VarKind kind, int32_t index, int64_t extent);
  explicit Expr(std::shared_ptr<const ExprNode> n) : node_(std::move(n)) {}
  std::shared_ptr<const ExprNode> node_;
};

// Three-way canonical comparison (<0, 0, >0).
int compare(const Expr& a, const Expr& b);

Expr operator+(const Expr& a, const Expr& b);
Expr operator-(const Expr& a, const Expr& b);
Expr operator-(const Expr& a);
Expr operator*(const Expr& a, const Expr& b);
// Python floor division and remainder (divisor > 0 for index expressions).
Expr floordiv(const Expr& a, const Expr& b);
Expr mod(const Expr& a, const Expr& b);
Expr min(const Expr& a, const Expr& b);
Expr max(const Expr& a, const Expr& b);
// constant + coeffs[0]*terms[0] + coeffs[1]*terms[1] + ..., equal to adding the products one by
// one; built as one canonical sum when every term is a variable or a constant (a layout's
// address of an iteration index: no intermediate sums are allocated).
Expr linear_sum(const std::vector<Expr>& terms, const std::vector<int64_t>& coeffs,
                int64_t constant);

// Def. 6.4: the interval of all values of `e`, given each variable's range. A variable's range is
// [0, extent-1] (unbounded above for an unknown extent; an indirect variable of unknown extent is
// [-inf, +inf]) unless `override` returns one for it.
using VarIntervals = std::function<std::optional<Interval>(const Expr& var)>;
Interval bound(const Expr& e, const VarIntervals& override_ranges = nullptr);

// Interval arithmetic of Def. 6.4 (saturating at ±inf), shared with the loop-body value-range
// analysis.
Interval interval_add(Interval a, Interval b);
Interval interval_mul(Interval a, Interval b);
Interval interval_neg(Interval a);
Interval interval_floordiv(Interval a, Interval b);
Interval interval_mod(Interval a, Interval b);
Interval interval_min(Interval a, Interval b);
Interval interval_max(Interval a, Interval b);
Interval interval_union(Interval a, Interval b);

// Rebuilds `e` with every variable v replaced by fn(v) when fn returns a value (re-simplified).
using VarSubstitution = std::function<std::optional<Expr>(const Expr& var)>;
Expr substitute(const Expr& e, const VarSubstitution& fn);
// Substitutes variables by a map keyed by variable.
Expr substitute(const Expr& e, const std::map<Expr, Expr>& mapping);

// The value of `e` with each variable's value given by `value_of` (Python floor semantics).
int64_t evaluate(const Expr& e, const std::function<int64_t(const Expr& var)>& value_of);

// The variables of `e` in canonical order, without duplicates.
std::vector<Expr> free_vars(const Expr& e);
bool depends_on(const Expr& e, const Expr& var);
// When `e` is affine in `var` (var occurs only as a top-level term c*var), its coefficient c
// (0 when absent); nullopt when var occurs inside another atom.
std::optional<int64_t> linear_coeff(const Expr& e, const Expr& var);

// Python floor division / remainder on int64 (b == 0 gives 0).
int64_t floordiv_int(int64_t a, int64_t b);
int64_t mod_int(int64_t a, int64_t b);

}  // namespace stax

template <>
struct std::hash<stax::Expr> {
  size_t operator()(const stax::Expr& e) const { return e.hash(); }
};
