#include "core/ir/normalize_loops.h"

#include <algorithm>
#include <map>

namespace stax {

namespace {

std::vector<Expr> make_vars(VarKind kind, const std::vector<int64_t>& extents) {
  std::vector<Expr> v;
  for (size_t k = 0; k < extents.size(); ++k)
    v.push_back(Expr::var(kind, static_cast<int32_t>(k), extents[k]));
  return v;
}

void substitute_all(std::vector<Expr>& indices, const std::map<Expr, Expr>& mapping) {
  for (Expr& e : indices) e = substitute(e, mapping);
}

// Drops extent-1 dimensions of one variable group.
void drop_unit_dims(VarKind kind, std::vector<int64_t>& extents, std::vector<Expr>& indices) {
  std::vector<Expr> old_vars = make_vars(kind, extents);
  std::vector<int64_t> kept;
  for (int64_t s : extents)
    if (s != 1) kept.push_back(s);
  if (kept.size() == extents.size()) return;
  std::vector<Expr> new_vars = make_vars(kind, kept);
  std::map<Expr, Expr> mapping;
  size_t k = 0;
  for (size_t j = 0; j < extents.size(); ++j)
    mapping[old_vars[j]] = extents[j] == 1 ? Expr(0) : new_vars[k++];
  substitute_all(indices, mapping);
  extents = std::move(kept);
}

// Whether every index satisfies Prop. 6.3's condition for the pair (j, j+1).
bool can_merge(const std::vector<Expr>& indices, const Expr& vj, const Expr& vj1, int64_t sj1) {
  for (const Expr& e : indices) {
    auto aj = linear_coeff(e, vj);
    auto aj1 = linear_coeff(e, vj1);
    if (!aj || !aj1 || *aj != sj1 * *aj1) return false;
  }
  return true;
}

// Reorders iteration variables so that the dimension the accesses traverse with the smallest
// strides is innermost (fill_order_by_strides).
void reorder_dims(VarKind kind, std::vector<int64_t>& extents, std::vector<Expr>& indices,
                  const std::vector<size_t>& accesses) {
  std::vector<Expr> vars = make_vars(kind, extents);
  std::vector<Expr> exprs;
  for (size_t k : accesses) exprs.push_back(indices[k]);
  std::vector<int> inner_first = fill_order_by_strides(exprs, vars);
  std::vector<int> perm(inner_first.rbegin(), inner_first.rend());  // new position -> old dim
  std::vector<int64_t> permuted;
  for (int d : perm) permuted.push_back(extents[static_cast<size_t>(d)]);
  if (permuted == extents && std::is_sorted(perm.begin(), perm.end())) return;
  std::vector<Expr> new_vars = make_vars(kind, permuted);
  std::map<Expr, Expr> mapping;
  for (size_t p = 0; p < perm.size(); ++p)
    mapping[vars[static_cast<size_t>(perm[p])]] = new_vars[p];
  substitute_all(indices, mapping);
  extents = std::move(permuted);
}

void merge_dims(VarKind kind, std::vector<int64_t>& extents, std::vector<Expr>& indices) {
  for (size_t j = extents.size() >= 2 ? extents.size() - 1 : 0; j-- > 0;) {
    std::vector<Expr> vars = make_vars(kind, extents);
    if (!can_merge(indices, vars[j], vars[j + 1], extents[j + 1])) continue;
    std::vector<int64_t> merged;
    for (size_t k = 0; k < extents.size(); ++k) {
      if (k == j)
        merged.push_back(extents[j] * extents[j + 1]);
      else if (k != j + 1)
        merged.push_back(extents[k]);
    }
    std::vector<Expr> new_vars = make_vars(kind, merged);
    std::map<Expr, Expr> mapping;
    for (size_t k = 0; k < extents.size(); ++k) {
      if (k < j)
        mapping[vars[k]] = new_vars[k];
      else if (k == j)
        mapping[vars[k]] = Expr(0);  // a_j*v_j + a_{j+1}*v_{j+1} == a_{j+1}*m
      else if (k == j + 1)
        mapping[vars[k]] = new_vars[j];
      else
        mapping[vars[k]] = new_vars[k - 1];
    }
    substitute_all(indices, mapping);
    extents = std::move(merged);
  }
}

}  // namespace

LoopBody normalize_loops(const LoopBody& body) {
  LoopBody out = body;
  drop_unit_dims(VarKind::Iter, out.ranges, out.indices);
  drop_unit_dims(VarKind::Reduce, out.reduction_ranges, out.indices);
  // A reduction over one point stays a reduction (its body still has the reduction op).
  if (body.is_reduction() && out.reduction_ranges.empty()) out.reduction_ranges = {1};
  std::vector<size_t> accesses;
  for (const LoopOp& op : out.ops)
    if (op.opcode == Opcode::load || op.opcode == Opcode::masked_load ||
        op.opcode == Opcode::store || op.opcode == Opcode::store_reduction)
      accesses.push_back(static_cast<size_t>(op.index));
  reorder_dims(VarKind::Iter, out.ranges, out.indices, accesses);
  merge_dims(VarKind::Iter, out.ranges, out.indices);
  merge_dims(VarKind::Reduce, out.reduction_ranges, out.indices);
  return out;
}

std::vector<LoopBody> normalize_loops(const std::vector<LoopBody>& bodies) {
  if (bodies.size() == 1) return {normalize_loops(bodies[0])};
  // One body holding every body's index expressions (and a memory op per access, for the
  // reordering's stride order), normalized once; its indices are handed back.
  LoopBody all;
  std::vector<size_t> first_index;
  for (const LoopBody& b : bodies) {
    if (all.ranges.empty()) all.ranges = b.ranges;
    if (all.reduction_ranges.empty()) all.reduction_ranges = b.reduction_ranges;
    first_index.push_back(all.indices.size());
    for (const LoopOp& op : b.ops)
      if (op.opcode == Opcode::load || op.opcode == Opcode::masked_load ||
          op.opcode == Opcode::store || op.opcode == Opcode::store_reduction) {
        LoopOp access;
        access.opcode = Opcode::load;
        access.index = static_cast<int32_t>(all.indices.size() + static_cast<size_t>(op.index));
        all.ops.push_back(access);
      }
    all.indices.insert(all.indices.end(), b.indices.begin(), b.indices.end());
  }
  LoopBody n = normalize_loops(all);
  std::vector<LoopBody> out;
  for (size_t k = 0; k < bodies.size(); ++k) {
    LoopBody b = bodies[k];
    auto from = n.indices.begin() + static_cast<std::ptrdiff_t>(first_index[k]);
    b.indices.assign(from, from + static_cast<std::ptrdiff_t>(b.indices.size()));
    b.ranges = n.ranges;
    b.reduction_ranges = b.is_reduction() ? n.reduction_ranges : std::vector<int64_t>{};
    out.push_back(std::move(b));
  }
  return out;
}

}  // namespace stax
