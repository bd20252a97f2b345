#include "plugins/cpu_cpp/body_queries.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace stax::cpu {

namespace {

// The widest and the narrowest block of wide lanes (wide_lanes).
constexpr int64_t kMaxWideLanes = 128;
constexpr int64_t kMinWideLanes = 16;

bool is_load(const sdk::OpNode& op) {
  return op.opcode() == STAX_OP_LOAD || op.opcode() == STAX_OP_MASKED_LOAD;
}

}  // namespace

bool affine(const sdk::Expr& e) {
  switch (e.kind()) {
    case sdk::ExprKind::Const:
    case sdk::ExprKind::IterVar:
    case sdk::ExprKind::ReduceVar: return true;
    case sdk::ExprKind::Add:
    case sdk::ExprKind::Mul: return affine(e.lhs()) && affine(e.rhs());
    default: return false;
  }
}

bool has_indirect(const sdk::LoopBody& body) {
  for (size_t i = 0; i < body.num_exprs(); ++i)
    if (body.expr(static_cast<int32_t>(i)).kind() == sdk::ExprKind::Indirect) return true;
  return false;
}

bool stores_in_loop(const sdk::LoopBody& body) {
  for (size_t i = 0; i < body.num_ops(); ++i)
    if (body.op(i).opcode() == STAX_OP_STORE) return true;
  return false;
}

bool segmentable(const sdk::LoopBody& body) {
  if (!body.is_reduction_loop()) return false;
  bool any = false;
  for (size_t i = 0; i < body.num_ops(); ++i) {
    sdk::OpNode op = body.op(i);
    if (op.opcode() != STAX_OP_REDUCTION) continue;
    if (op.reduction_type() == sdk::ReductionType::ArgMax ||
        op.reduction_type() == sdk::ReductionType::ArgMin)
      return false;
    any = true;
  }
  return any;
}

bool fusable_into_next(const sdk::Kernel& k, size_t b, sdk::Span<int64_t> rranges) {
  if (b + 1 >= k.num_bodies() || rranges.size() != 1) return false;
  sdk::LoopBody body = k.body(b), next = k.body(b + 1);
  if (!body.is_reduction_loop() || has_indirect(body) || has_indirect(next)) return false;
  std::map<int32_t, std::string> stored;  // buffer -> its store's index
  std::vector<int32_t> touched;           // buffers b loads or stores
  std::vector<int64_t> zero_i(k.ranges().size() + 1, 0), r0 = {0}, r1 = {1};
  for (size_t i = 0; i < body.num_ops(); ++i) {
    sdk::OpNode op = body.op(i);
    if (op.opcode() == STAX_OP_REDUCTION || op.opcode() == STAX_OP_STORE_REDUCTION) return false;
    if (is_load(op)) touched.push_back(op.buffer());
    if (op.opcode() != STAX_OP_STORE) continue;
    touched.push_back(op.buffer());
    sdk::Expr e = body.index_of(op);
    if (!affine(e) || stored.count(op.buffer()) ||
        sdk::evaluate(e, zero_i.data(), r0.data(), nullptr) ==
            sdk::evaluate(e, zero_i.data(), r1.data(), nullptr))
      return false;
    stored[op.buffer()] = sdk::format_expr(e);
  }
  if (stored.empty()) return false;
  for (size_t i = 0; i < next.num_ops(); ++i) {
    sdk::OpNode op = next.op(i);
    if (is_load(op)) {
      auto it = stored.find(op.buffer());
      if (it != stored.end() && sdk::format_expr(next.index_of(op)) != it->second) return false;
    } else if (op.opcode() == STAX_OP_STORE &&
               std::find(touched.begin(), touched.end(), op.buffer()) != touched.end()) {
      return false;
    }
  }
  return true;
}

bool contiguous_along(const sdk::Kernel& k, int32_t dim) {
  std::vector<int64_t> zero_i(k.ranges().size(), 0), one_i = zero_i;
  one_i[static_cast<size_t>(dim)] = 1;
  std::vector<int64_t> zero_r(std::max<size_t>(k.reduction_ranges().size(), 1), 0);
  for (size_t b = 0; b < k.num_bodies(); ++b) {
    sdk::LoopBody body = k.body(b);
    std::vector<int64_t> ind(body.num_ops(), 0);
    for (size_t i = 0; i < body.num_ops(); ++i) {
      sdk::OpNode op = body.op(i);
      if (!is_load(op)) continue;
      sdk::Expr e = body.index_of(op);
      int64_t d = sdk::evaluate(e, one_i.data(), zero_r.data(), ind.data()) -
                  sdk::evaluate(e, zero_i.data(), zero_r.data(), ind.data());
      if (d != 0 && d != 1) return false;
    }
  }
  return true;
}

int64_t wide_lanes(const sdk::Kernel& k) {
  sdk::Span<int64_t> ranges = k.ranges();
  const int32_t lane_dim = static_cast<int32_t>(ranges.size()) - 1;
  bool any_reduction = false;
  for (size_t b = 0; b < k.num_bodies(); ++b)
    any_reduction = any_reduction || k.body(b).is_reduction_loop();
  if (!any_reduction || lane_dim < 0 || !contiguous_along(k, lane_dim)) return 0;
  int64_t extent = ranges[static_cast<size_t>(lane_dim)];
  int64_t lanes = kMaxWideLanes;
  while (lanes > extent && lanes > kMinWideLanes) lanes /= 2;
  return lanes > extent ? 0 : lanes;
}

}  // namespace stax::cpu
