#include "core/ir/eliminate_dead_ops.h"

#include <algorithm>

namespace stax {

namespace {

// Marks the ops of the indirect variables (tmp<op>) in `e`: a walk over the expression (no set
// of its free variables is built; a variable met twice is marked once).
void mark_expr_ops(const Expr& e, std::vector<bool>& live, std::vector<int32_t>& work) {
  if (e.is_var()) {
    if (e.var_kind() != VarKind::Indirect) return;
    auto op = static_cast<size_t>(e.var_index());
    if (op < live.size() && !live[op]) {
      live[op] = true;
      work.push_back(static_cast<int32_t>(op));
    }
    return;
  }
  for (const Expr& a : e.args()) mark_expr_ops(a, live, work);
}

// Whether `e` has an indirect variable (tmp<op>) whose op number `renumber` changes.
bool renames(const Expr& e, const std::vector<int32_t>& renumber) {
  if (e.is_var())
    return e.var_kind() == VarKind::Indirect &&
           (static_cast<size_t>(e.var_index()) >= renumber.size() ||
            renumber[static_cast<size_t>(e.var_index())] != e.var_index());
  for (const Expr& a : e.args())
    if (renames(a, renumber)) return true;
  return false;
}

std::vector<bool> live_ops(const LoopBody& body) {
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
  return live;
}

}  // namespace

LoopBody eliminate_dead_ops(LoopBody&& body) {
  std::vector<bool> live = live_ops(body);
  if (std::find(live.begin(), live.end(), false) != live.end()) return eliminate_dead_ops(body);
  // Every op is live, so ops, operands and indirect variables keep their numbers; the rebuild
  // would re-add the index list in first-use order: when it is in that order already (and holds
  // no unused entry), the rebuilt body is `body`.
  int32_t next = 0;
  for (const LoopOp& op : body.ops) {
    if (op.index < 0 || op.index < next) continue;
    if (op.index != next) return eliminate_dead_ops(body);
    ++next;
  }
  if (static_cast<size_t>(next) != body.indices.size()) return eliminate_dead_ops(body);
  return std::move(body);
}

LoopBody eliminate_dead_ops(const LoopBody& body) {
  size_t n = body.ops.size();
  std::vector<bool> live = live_ops(body);

  std::vector<int32_t> renumber(n, -1);
  int32_t next = 0;
  for (size_t i = 0; i < n; ++i)
    if (live[i]) renumber[i] = next++;
  auto rename = [&](const Expr& e) {
    if (!renames(e, renumber)) return e;  // substitute would rebuild `e` as it is
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
