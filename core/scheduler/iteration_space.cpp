#include "core/scheduler/iteration_space.h"

#include <algorithm>
#include <map>

#include "core/support/error.h"

namespace stax {

namespace {

// Suffix products of `e` without unit extents: [8, 4, 32] -> {32, 128, 1024}.
std::vector<int64_t> boundaries(const Extents& e) {
  std::vector<int64_t> out;
  int64_t p = 1;
  for (size_t k = e.size(); k-- > 0;) {
    if (e[k] == 1) continue;
    p *= e[k];
    out.push_back(p);
  }
  return out;
}

// Maps each variable of `old_vars` (extents `old_extents`, in order) onto the variables
// `new_vars` (extents `new_extents`, no units), which refine them: an old variable spanning new
// variables v_a..v_b becomes sum_j v_j * (product of the extents after j up to b). Unit old
// variables become 0.
void map_onto(const std::vector<Expr>& old_vars, const Extents& old_extents,
              const std::vector<Expr>& new_vars, const Extents& new_extents,
              std::map<Expr, Expr>& mapping) {
  size_t j = new_extents.size();  // consumed from the innermost
  for (size_t k = old_vars.size(); k-- > 0;) {
    if (old_extents[k] == 1) {
      mapping[old_vars[k]] = Expr(0);
      continue;
    }
    Expr e(0);
    int64_t span = 1;
    while (span < old_extents[k]) {
      if (j == 0) throw Error("schedule", "", "internal: iteration space does not refine a body");
      --j;
      e = e + new_vars[j] * Expr(span);
      span *= new_extents[j];
    }
    if (span != old_extents[k])
      throw Error("schedule", "", "internal: iteration space does not refine a body");
    mapping[old_vars[k]] = e;
  }
}

std::vector<Expr> vars(VarKind kind, const Extents& e, int32_t first = 0) {
  std::vector<Expr> v;
  for (size_t k = 0; k < e.size(); ++k)
    v.push_back(Expr::var(kind, first + static_cast<int32_t>(k), e[k]));
  return v;
}

}  // namespace

int64_t extents_numel(const Extents& e) {
  int64_t p = 1;
  for (int64_t s : e) p *= s;
  return p;
}

std::string extents_str(const Extents& e) {
  std::string s = "[";
  for (size_t k = 0; k < e.size(); ++k) s += (k ? ", " : "") + std::to_string(e[k]);
  return s + "]";
}

Extents drop_unit_extents(const Extents& e) {
  Extents out;
  for (int64_t s : e)
    if (s != 1) out.push_back(s);
  return out;
}

std::optional<Extents> common_refinement(const Extents& a, const Extents& b) {
  if (extents_numel(a) != extents_numel(b)) return std::nullopt;
  std::vector<int64_t> cuts = boundaries(a);
  for (int64_t c : boundaries(b)) cuts.push_back(c);
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  Extents inner_first;
  int64_t prev = 1;
  for (int64_t c : cuts) {
    if (c % prev != 0) return std::nullopt;
    inner_first.push_back(c / prev);
    prev = c;
  }
  return Extents(inner_first.rbegin(), inner_first.rend());
}

std::optional<std::pair<Extents, Extents>> split_extents(const Extents& e, int64_t inner_numel) {
  Extents d = drop_unit_extents(e);
  int64_t p = 1;
  size_t k = d.size();
  while (k > 0 && p < inner_numel) p *= d[--k];
  if (p != inner_numel) return std::nullopt;
  return std::make_pair(Extents(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(k)),
                        Extents(d.begin() + static_cast<std::ptrdiff_t>(k), d.end()));
}

bool is_identity_placement(const LoopBody& body, BodyPlacement placement, const Extents& ranges,
                           const Extents& reduction_ranges) {
  auto no_units = [](const Extents& e) { return std::find(e.begin(), e.end(), 1) == e.end(); };
  if (body.ranges != ranges || !no_units(ranges)) return false;
  switch (placement) {
    case BodyPlacement::Iteration:
      return !body.is_reduction();
    case BodyPlacement::Reduction:
      return body.is_reduction() && body.reduction_ranges == reduction_ranges &&
             no_units(reduction_ranges);
    case BodyPlacement::Full:
      return false;  // iteration variables become reduction variables
  }
  return false;
}

BodyReindexer::BodyReindexer(const LoopBody& body, BodyPlacement placement, const Extents& ranges,
                             const Extents& reduction_ranges) {
  identity_ = is_identity_placement(body, placement, ranges, reduction_ranges);
  if (identity_) return;
  std::map<Expr, Expr>& mapping = mapping_;
  std::vector<Expr> iter_targets = vars(VarKind::Iter, ranges);
  Extents iter_extents = ranges;
  if (placement == BodyPlacement::Full) {
    for (const Expr& r : vars(VarKind::Reduce, reduction_ranges)) iter_targets.push_back(r);
    iter_extents.insert(iter_extents.end(), reduction_ranges.begin(), reduction_ranges.end());
  }
  // A unit reduction range ({1}, a reduction over one point) has no variable to map onto.
  auto targets_without_units = [](std::vector<Expr> v, const Extents& e) {
    std::vector<Expr> out;
    for (size_t k = 0; k < e.size(); ++k)
      if (e[k] != 1) out.push_back(v[k]);
    return out;
  };
  map_onto(body.iter_vars(), body.ranges, targets_without_units(iter_targets, iter_extents),
           drop_unit_extents(iter_extents), mapping);
  if (placement == BodyPlacement::Reduction)
    map_onto(body.reduce_vars(), body.reduction_ranges,
             targets_without_units(vars(VarKind::Reduce, reduction_ranges), reduction_ranges),
             drop_unit_extents(reduction_ranges), mapping);
}

Expr BodyReindexer::operator()(const Expr& e) const {
  return identity_ ? e : substitute(e, mapping_);
}

LoopBody reindex_body(const LoopBody& body, BodyPlacement placement, const Extents& ranges,
                      const Extents& reduction_ranges) {
  if (is_identity_placement(body, placement, ranges, reduction_ranges)) return body;
  BodyReindexer reindex(body, placement, ranges, reduction_ranges);
  LoopBody out = body;
  for (Expr& e : out.indices) e = reindex(e);
  out.ranges = ranges;
  out.reduction_ranges = placement == BodyPlacement::Iteration ? Extents{} : reduction_ranges;
  return out;
}

}  // namespace stax
