// OpsBuilder: the recording ops handler (seed §6.8). Computation functions (inner_fn, loaders,
// the templates of core/ops/pointwise/formulas.h) call its methods; each call appends one op to
// a LoopBody and returns the op's value handle. It performs no CSE (Listing 6.4 reads the same
// location twice); to_dtype to the value's own dtype is the only call that records nothing.
//
// Method names follow the loop-level op list (sdk/include/stax/sdk/ops.def) plus constant, load,
// masked_load, index_expr, to_dtype, where, indirect_indexing, reduction, store and
// store_reduction, so the formula templates instantiate with Ops = OpsBuilder, V = Val.
//
// Index propagation (seed Example 6.3): integer values computed only from index_expr and integer
// constants through add/sub/mul/neg/floordiv/mod/minimum/maximum (and widening casts) are also
// tracked as symbolic expressions. indirect_indexing of such a value whose range provably lies in
// [0, size) returns the expression itself, so the read becomes a direct one; the value ops left
// behind are removed by eliminate_dead_ops().
#pragma once

#include <optional>
#include <string>

#include "core/ir/loop_body.h"

namespace stax {

// A value of the body under construction: the index of the op that produced it.
struct Val {
  int32_t id = -1;
  bool valid() const { return id >= 0; }
  bool operator==(const Val&) const = default;
};

class OpsBuilder {
 public:
  // Records into a fresh body with the given iteration and reduction ranges.
  explicit OpsBuilder(std::vector<int64_t> ranges = {}, std::vector<int64_t> reduction_ranges = {});

  LoopBody& body() { return body_; }
  const LoopBody& body() const { return body_; }
  LoopBody take() { return std::move(body_); }
  DType dtype(Val v) const { return body_.ops.at(static_cast<size_t>(v.id)).dtype; }

  // ---- ops.def ----
  Val unary(Opcode op, Val x);
  Val binary(Opcode op, Val a, Val b);  // a and b must have the same dtype
#define STAX_UNARY_OP(name) \
  Val name(Val x) { return unary(Opcode::name, x); }
#define STAX_BINARY_OP(name) \
  Val name(Val a, Val b) { return binary(Opcode::name, a, b); }
#define STAX_COMPARE_OP(name) \
  Val name(Val a, Val b) { return binary(Opcode::name, a, b); }
#include "stax/sdk/ops.def"

  // ---- special ops ----
  Val constant(ScalarValue value, DType dtype);
  // The formula interface (pointwise_formulas.h): a floating literal.
  Val constant(double value, DType dtype) { return constant(ScalarValue::floating(value), dtype); }
  // `source`: the IR buffer named `buffer`, when the caller has it (LoopOp::source).
  Val load(const std::string& buffer, DType dtype, const Expr& index,
           const Buffer* source = nullptr);
  Val masked_load(const std::string& buffer, DType dtype, const Expr& index, Val mask,
                  ScalarValue other, const Buffer* source = nullptr);
  Val index_expr(const Expr& index, DType dtype);
  Val to_dtype(Val x, DType dtype);   // returns x itself when it already has `dtype`
  Val where(Val cond, Val a, Val b);  // cond bool; a and b of the same dtype
  // A run-time integer as an index variable tmp<op> with extent `size` (seed §6.2 indirect reads).
  Expr indirect_indexing(Val x, int64_t size, bool check = true, bool wrap_negative = true);
  Val reduction(ReductionType type, DType dtype, Val value);
  void store(const std::string& buffer, const Expr& index, Val value);
  void store_reduction(const std::string& buffer, const Expr& index, Val value);

 private:
  Val push(LoopOp op, std::optional<Expr> symbolic = std::nullopt);
  // The symbolic value of an integer op, when index propagation knows it.
  std::optional<Expr> symbolic(Val v) const { return sym_.at(static_cast<size_t>(v.id)); }
  LoopBody body_;
  std::vector<std::optional<Expr>> sym_;
};

}  // namespace stax
