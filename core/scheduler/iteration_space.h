// Iteration spaces of fused kernels: extent lists, their common refinement, and re-indexing a
// LoopBody onto a finer space (seed §6.8, Prop. 6.3 read backwards).
//
// A body's iteration variables enumerate its points in row-major (lexicographic) order. Two
// extent lists with the same product describe the same points when one refines the other: [32]
// and [4, 8] do (i0 = 8*j0 + j1), [4, 6] and [6, 4] do not. A refinement splits each variable
// into several and substitutes an affine expression for it, so addresses and the lexicographic
// order (hence the order in which reductions accumulate) are unchanged.
//
//   common_refinement({8, 32}, {256}) == {8, 32}
//   common_refinement({4, 6}, {6, 4}) == nullopt
//   split_extents({8, 32}, 32)        == {{8}, {32}}      (outer part, inner part of product 32)
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/ir/loop_body.h"

namespace stax {

using Extents = std::vector<int64_t>;

int64_t extents_numel(const Extents& e);

// "[8, 32]" (dumps and messages).
std::string extents_str(const Extents& e);

// The extents without the 1s.
Extents drop_unit_extents(const Extents& e);

// The coarsest extent list that refines both `a` and `b` (equal products required), or nullopt
// when none exists. Unit extents are ignored; the result has none.
std::optional<Extents> common_refinement(const Extents& a, const Extents& b);

// Splits `e` (without unit extents) into an outer and an inner list whose product is
// `inner_numel`, or nullopt when no dimension boundary has that inner product.
std::optional<std::pair<Extents, Extents>> split_extents(const Extents& e, int64_t inner_numel);

// Where a body's variables go in a kernel's iteration space (ranges G, reduction ranges R).
enum class BodyPlacement {
  Iteration,  // a pointwise body over G: runs once per iteration point
  Full,       // a pointwise body over G x R: runs inside the reduction loop
  Reduction,  // a reduction body: iteration variables over G, reduction variables over R
};

// `body` re-indexed onto the kernel space (`ranges`, `reduction_ranges`), which must refine the
// body's own extents as `placement` requires (Full: the body's ranges against ranges ++
// reduction_ranges). The result's ranges are `ranges`; its reduction_ranges are
// `reduction_ranges` for Full and Reduction bodies and empty for Iteration bodies.
LoopBody reindex_body(const LoopBody& body, BodyPlacement placement, const Extents& ranges,
                      const Extents& reduction_ranges);

// The variable mapping of reindex_body(body, placement, ranges, reduction_ranges), to re-index
// single expressions of `body` (the scheduler's fusion checks need a load's and a store's address
// in the kernel space, not a copy of the whole body). Throws as reindex_body does.
class BodyReindexer {
 public:
  BodyReindexer(const LoopBody& body, BodyPlacement placement, const Extents& ranges,
                const Extents& reduction_ranges);
  // `e` (an expression of the body) in the kernel space.
  Expr operator()(const Expr& e) const;

 private:
  bool identity_ = false;
  // The image of the body's i<k> (extent iter_extents_[k]) and r0_<k> (reduce_extents_[k]).
  Extents iter_extents_, reduce_extents_;
  std::vector<Expr> iter_map_, reduce_map_;
};

// BodyReindexers by what they depend on: the body's extents, the placement and the space (not
// the body's ops). The scheduler asks for one per fusion check and per unit-extent body; a
// graph has few distinct spaces, so nearly every request is a lookup instead of building the
// variable images again.
class BodyReindexerCache {
 public:
  const BodyReindexer& get(const LoopBody& body, BodyPlacement placement, const Extents& ranges,
                           const Extents& reduction_ranges);

 private:
  struct Key {
    Extents body_ranges, body_reduction_ranges, ranges, reduction_ranges;
    BodyPlacement placement;
  };
  // A lookup compares against the caller's lists without copying them.
  struct KeyRef {
    const Extents *body_ranges, *body_reduction_ranges, *ranges, *reduction_ranges;
    BodyPlacement placement;
  };
  struct Less {
    using is_transparent = void;
    static KeyRef ref(const Key& k) {
      return {&k.body_ranges, &k.body_reduction_ranges, &k.ranges, &k.reduction_ranges,
              k.placement};
    }
    static const KeyRef& ref(const KeyRef& k) { return k; }
    static bool less(const KeyRef& a, const KeyRef& b);
    template <class A, class B>
    bool operator()(const A& a, const B& b) const {
      return less(ref(a), ref(b));
    }
  };
  std::map<Key, BodyReindexer, Less> cache_;
};

// reindex_body with the reindexer from `cache`.
LoopBody reindex_body(const LoopBody& body, BodyPlacement placement, const Extents& ranges,
                      const Extents& reduction_ranges, BodyReindexerCache& cache);

// Whether reindex_body(body, placement, ranges, reduction_ranges) is `body` itself: the space
// is the body's own (same extents, none of them 1) and the placement maps every variable onto
// itself. The scheduler then uses the body as it is instead of a re-indexed copy.
bool is_identity_placement(const LoopBody& body, BodyPlacement placement, const Extents& ranges,
                           const Extents& reduction_ranges);

}  // namespace stax
