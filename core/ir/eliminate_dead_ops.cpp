#include "core/ir/eliminate_dead_ops.h"

namespace stax {

namespace {

void mark_expr_ops(const Expr& e, std::vector<bool>& live, std::vector<int32_t>& work) {
  for (const Expr& v : free_vars(e)) {
    if (v.var_kind() != VarKind::Indirect) continue;
    auto op = static_cast<size_t>(v.var_index());
    if (op < live.size() && !live[op]) {
      live[op] = true;
      work.push_back(static_cast<int32_t>(op));
    }
  }
}

}  // namespace

LoopBody eliminate_dead_ops(const LoopBody& body) {
  size_t n = body.ops.size();
  std::vector<bool> live(n, false);
  std::vector<int32_t> work;
  for (size_t i = 0; i < n; ++i)
    if (!body.ops[i].produces_value()) {
      live[i] = true;
      work.push_back(static_cast<int32_t>(i));
    }
  while (!work.empty()) {
    const LoopOp& op = body.ops[static_cast<size_t>(work.back())];
    work.pop_back();
    for (int32_t o : op.operands)
      if (o >= 0 && !live[static_cast<size_t>(o)]) {
        live[static_cast<size_t>(o)] = true;
        work.push_back(o);
      }
    if (op.index >= 0) mark_expr_ops(body.index_of(op), live, work);
  }

  std::vector<int32_t> renumber(n, -1);
  int32_t next = 0;
  for (size_t i = 0; i < n; ++i)
    if (live[i]) renumber[i] = next++;
  auto rename = [&](const Expr& e) {
    return substitute(e, [&](const Expr& v) -> std::optional<Expr> {
      if (v.var_kind() != VarKind::Indirect) return std::nullopt;
      return Expr::indirect(renumber[static_cast<size_t>(v.var_index())], v.extent());
    });
  };

  LoopBody out;
  out.ranges = body.ranges;
  out.reduction_ranges = body.reduction_ranges;
  for (size_t i = 0; i < n; ++i) {
    if (!live[i]) continue;
    LoopOp op = body.ops[i];
    for (int32_t& o : op.operands)
      if (o >= 0) o = renumber[static_cast<size_t>(o)];
    if (op.index >= 0) op.index = out.add_index(rename(body.index_of(body.ops[i])));
    out.ops.push_back(std::move(op));
  }
  return out;
}

}  // namespace stax
