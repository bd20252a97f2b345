#include "core/scheduler/iteration_space.h"

#include <algorithm>
#include <map>
#include <tuple>

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
// variables become 0. mapping[k] is old variable k's image.
void map_onto(const Extents& old_extents, const std::vector<Expr>& new_vars,
              const Extents& new_extents, std::vector<Expr>& mapping) {
  mapping.assign(old_extents.size(), Expr(0));
  size_t j = new_extents.size();  // consumed from the innermost
  std::vector<Expr> terms;
  std::vector<int64_t> coeffs;
  for (size_t k = old_extents.size(); k-- > 0;) {
    if (old_extents[k] == 1) continue;
    terms.clear();
    coeffs.clear();
    int64_t span = 1;
    while (span < old_extents[k]) {
      if (j == 0) throw Error("schedule", "", "internal: iteration space does not refine a body");
      --j;
      terms.push_back(new_vars[j]);
      coeffs.push_back(span);
      span *= new_extents[j];
    }
    if (span != old_extents[k])
      throw Error("schedule", "", "internal: iteration space does not refine a body");
    // One canonical sum of variables: what adding the products one by one gives.
    mapping[k] = linear_sum(terms, coeffs, 0);
  }
}

std::vector<Expr> vars(VarKind kind, const Extents& e, int32_t first = 0) {
  std::vector<Expr> v;
  v.reserve(e.size());
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
  // Equal lists of positive extents (the common case: a body joining a kernel of its own
  // space): the suffix products below are a's, so the refinement is a without its units.
  if (a == b && std::all_of(a.begin(), a.end(), [](int64_t s) { return s > 0; }))
    return drop_unit_extents(a);
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
  iter_extents_ = body.ranges;
  map_onto(body.ranges, targets_without_units(iter_targets, iter_extents),
           drop_unit_extents(iter_extents), iter_map_);
  if (placement == BodyPlacement::Reduction) {
    reduce_extents_ = body.reduction_ranges;
    map_onto(body.reduction_ranges,
             targets_without_units(vars(VarKind::Reduce, reduction_ranges), reduction_ranges),
             drop_unit_extents(reduction_ranges), reduce_map_);
  }
}

Expr BodyReindexer::operator()(const Expr& e) const {
  if (identity_) return e;
  // The body's variable i<k> / r0_<k> (with the body's extent) maps to its image; any other
  // variable stays.
  return substitute(e, [this](const Expr& v) -> std::optional<Expr> {
    const int32_t k = v.var_index();
    if (k < 0) return std::nullopt;
    const size_t u = static_cast<size_t>(k);
    if (v.var_kind() == VarKind::Iter && u < iter_map_.size() && iter_extents_[u] == v.extent())
      return iter_map_[u];
    if (v.var_kind() == VarKind::Reduce && u < reduce_map_.size() &&
        reduce_extents_[u] == v.extent())
      return reduce_map_[u];
    return std::nullopt;
  });
}

namespace {

LoopBody reindexed(const LoopBody& body, BodyPlacement placement, const Extents& ranges,
                   const Extents& reduction_ranges, const BodyReindexer& reindex) {
  LoopBody out = body;
  for (Expr& e : out.indices) e = reindex(e);
  out.ranges = ranges;
  out.reduction_ranges = placement == BodyPlacement::Iteration ? Extents{} : reduction_ranges;
  return out;
}

}  // namespace

LoopBody reindex_body(const LoopBody& body, BodyPlacement placement, const Extents& ranges,
                      const Extents& reduction_ranges) {
  if (is_identity_placement(body, placement, ranges, reduction_ranges)) return body;
  return reindexed(body, placement, ranges, reduction_ranges,
                   BodyReindexer(body, placement, ranges, reduction_ranges));
}

LoopBody reindex_body(const LoopBody& body, BodyPlacement placement, const Extents& ranges,
                      const Extents& reduction_ranges, BodyReindexerCache& cache) {
  if (is_identity_placement(body, placement, ranges, reduction_ranges)) return body;
  return reindexed(body, placement, ranges, reduction_ranges,
                   cache.get(body, placement, ranges, reduction_ranges));
}

bool BodyReindexerCache::Less::less(const KeyRef& a, const KeyRef& b) {
  return std::tie(a.placement, *a.body_ranges, *a.body_reduction_ranges, *a.ranges,
                  *a.reduction_ranges) < std::tie(b.placement, *b.body_ranges,
                                                  *b.body_reduction_ranges, *b.ranges,
                                                  *b.reduction_ranges);
}

const BodyReindexer& BodyReindexerCache::get(const LoopBody& body, BodyPlacement placement,
                                             const Extents& ranges,
                                             const Extents& reduction_ranges) {
  KeyRef ref{&body.ranges, &body.reduction_ranges, &ranges, &reduction_ranges, placement};
  auto it = cache_.find(ref);
  if (it == cache_.end())
    it = cache_
             .emplace(Key{body.ranges, body.reduction_ranges, ranges, reduction_ranges, placement},
                      BodyReindexer(body, placement, ranges, reduction_ranges))
             .first;
  return it->second;
}

}  // namespace stax
