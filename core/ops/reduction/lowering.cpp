// Lowering rules of reductions (seed §6.3, §6.5): sum, prod, amax, amin, mean (sum, then a
// division), var (mean, then a sum of squared deviations), argmax, argmin (never split), any, all. A reduction is realized as soon as it is
// lowered; a pointwise chain feeding it is inlined into its inner_fn (Listing 6.2). When the
// backend's split policy asks for k > 1 segments, the two-level form of Listing 6.4 is built with
// the largest divisor of the reduction's length that does not exceed k (segments are equal:
// 96 elements asked for 7 segments get 6; a prime length is not split).
#include <algorithm>
#include <string>
#include <vector>

#include "core/ops/pointwise/formulas.h"
#include "core/ops/common/lowering_helpers.h"
#include "core/support/error.h"
#include "core/ops/registration.h"

namespace stax {

namespace {

// The split factor used for a backend's request k: the largest divisor of n in [1, k]
// (divisors come in pairs d, n/d with d <= sqrt(n): O(sqrt(n)) whatever k the backend asks for).
int64_t largest_divisor_at_most(int64_t n, int64_t k) {
  if (k >= n) return n;
  int64_t best = 1;
  for (int64_t d = 1; d * d <= n; ++d) {
    if (n % d != 0) continue;
    if (d <= k) best = std::max(best, d);
    if (n / d <= k) best = std::max(best, n / d);
  }
  return best;
}

// The reduced dims of `n` over an input of rank `rank` (sorted, wrapped); empty / None: all.
std::vector<bool> reduced_dims(const Node& n, int64_t rank) {
  std::vector<bool> reduced(static_cast<size_t>(rank), true);
  if (n.op()->schema.index_of("dim") < 0) return reduced;
  const Arg& a = n.arg("dim");
  if (a.is_absent()) return reduced;
  std::vector<int64_t> dims = a.to_int_list();
  if (dims.empty()) return reduced;
  std::fill(reduced.begin(), reduced.end(), false);
  for (int64_t d : dims) {
    // A 0-d tensor accepts dim 0 and -1 (wrap_dim checks them) and has no dim to flag.
    int64_t w = wrap_dim(d, rank, "%" + n.name());
    if (rank > 0) reduced[static_cast<size_t>(w)] = true;
  }
  return reduced;
}

bool keepdim_of(const Node& n) {
  return n.op()->schema.index_of("keepdim") >= 0 && n.arg("keepdim").to_bool();
}

ScalarValue identity_of(ReductionType t) {
  switch (t) {
    case ReductionType::Prod:
    case ReductionType::All:
      return ScalarValue::integer(1);
    default:
      return ScalarValue::integer(0);
  }
}

// A reduction of `x` over the dims flagged in `reduced`, stored as `out`.
IRPtr reduce(GraphLowering& g, const IRPtr& x, const std::vector<bool>& reduced, bool keepdim,
             ReductionType type, DType out) {
  Shape in = x->size();
  Shape ranges, rr;
  for (size_t d = 0; d < in.size(); ++d) {
    if (!reduced[d])
      ranges.push_back(in[d]);
    else {
      rr.push_back(in[d]);
      if (keepdim) ranges.push_back(1);
    }
  }
  bool indexed = type == ReductionType::ArgMax || type == ReductionType::ArgMin;
  bool logical = type == ReductionType::Any || type == ReductionType::All;
  DType value_dtype = logical   ? DType::Bool
                      : indexed ? computation_dtype(x->dtype())
                                : computation_dtype(out);
  DType acc = indexed ? DType::Int64 : value_dtype;
  Loader load = x->make_loader();
  ReductionFn inner = [load, reduced, keepdim, value_dtype](OpsBuilder& b, const Index& index,
                                                            const Index& rindex) {
    Index idx;
    size_t i = 0, r = 0;
    for (bool red : reduced) {
      if (red) {
        idx.push_back(rindex[r++]);
        if (keepdim) ++i;
      } else {
        idx.push_back(index[i++]);
      }
    }
    return b.to_dtype(load(b, idx), value_dtype);
  };
  std::string device = x->device();
  int64_t rn = shape_numel(rr);

  if (rn == 0) {  // an empty reduction is its identity
    if (type != ReductionType::Sum && type != ReductionType::Prod && !logical)
      throw Error(
          "lowering", "",
          "cannot reduce over zero elements with " + std::string(reduction_type_name(type)));
    ScalarValue id = identity_of(type);
    Loader fill = [id, out](OpsBuilder& b, const Index&) { return b.constant(id, out); };
    return g.box(std::make_shared<Pointwise>(device, out, ranges, fill), {x});
  }
  if (rn == 1) {  // one element: a pointwise copy (argmax/argmin: index 0)
    Shape ones(rr.size(), 1);
    // A floating sum adds its one element to the identity +0.0, as eager's (and the
    // interpreter's) accumulator does: the sum of {-0.0} is +0.0, not a copy of -0.0.
    bool plus_zero = type == ReductionType::Sum && is_floating(value_dtype);
    Loader one = [inner, ones, indexed, plus_zero, value_dtype, out](OpsBuilder& b,
                                                                     const Index& index) {
      if (indexed) return b.constant(ScalarValue::integer(0), out);
      Val v = inner(b, index, Index(ones.size(), Expr(0)));
      if (plus_zero) v = b.add(b.constant(0.0, value_dtype), v);
      return b.to_dtype(v, out);
    };
    return g.box(std::make_shared<Pointwise>(device, out, ranges, one), {x});
  }

  int64_t k = 1;
  if (g.options().split_reduction && !indexed)
    k = largest_divisor_at_most(rn, g.options().split_reduction(rn, shape_numel(ranges), type));
  if (k <= 1) {
    IRPtr red = g.box(std::make_shared<Reduction>(device, out, acc, ranges, rr, type, inner), {x});
    g.realize(red);
    return red;
  }

  // Listing 6.4: level 1 reduces segment i_n of length rn/k for every (index, i_n) ...
  int64_t seg = rn / k;
  Shape rr_strides = contiguous_strides(rr);
  Shape ranges1 = ranges;
  ranges1.push_back(k);
  ReductionFn inner1 = [inner, seg, rr, rr_strides](OpsBuilder& b, const Index& index1,
                                                    const Index& rindex1) {
    Index index(index1.begin(), index1.end() - 1);
    Expr flat = index1.back() * Expr(seg) + rindex1[0];
    Index r;
    for (size_t j = 0; j < rr.size(); ++j)
      r.push_back(rr.size() == 1 ? flat : mod(floordiv(flat, Expr(rr_strides[j])), Expr(rr[j])));
    return inner(b, index, r);
  };
  IRPtr level1 =
      g.box(std::make_shared<Reduction>(device, acc, acc, ranges1, Shape{seg}, type, inner1), {x});
  g.realize(level1);
  // ... and level 2 combines the k partial results (sum of sums, max of maxima, ...).
  Loader partial = level1->make_loader();
  ReductionFn inner2 = [partial](OpsBuilder& b, const Index& index, const Index& rindex) {
    Index idx = index;
    idx.push_back(rindex[0]);
    return partial(b, idx);
  };
  IRPtr level2 =
      g.box(std::make_shared<Reduction>(device, out, acc, ranges, Shape{k}, type, inner2), {x});
  g.realize(level2);
  return level2;
}

LoweringRule reduction_rule(ReductionType type) {
  return [type](GraphLowering& g, const Node& n) {
    IRPtr x = g.input(n, "self");
    return reduce(g, x, reduced_dims(n, static_cast<int64_t>(x->size().size())), keepdim_of(n),
                  type, n.meta().dtype);
  };
}

// mean = sum / n: the sum is kept in the computation dtype, the division rounds once to the
// result dtype.
IRPtr mean(GraphLowering& g, const Node& n) {
  IRPtr x = g.input(n, "self");
  std::vector<bool> reduced = reduced_dims(n, static_cast<int64_t>(x->size().size()));
  DType out = n.meta().dtype, dt = computation_dtype(out);
  int64_t count = 1;
  for (size_t d = 0; d < reduced.size(); ++d)
    if (reduced[d]) count *= x->size()[d];
  IRPtr sum = reduce(g, x, reduced, keepdim_of(n), ReductionType::Sum, dt);
  return pointwise(g, {Operand(sum), Operand(ScalarValue::integer(count))}, dt, out,
                   [](OpsBuilder& o, const std::vector<Val>& a) { return o.truediv(a[0], a[1]); });
}

// var = m2 / max(n - correction, 0) with m2 = sum of (a - mean)^2 and mean = sum / n, as the
// interpreter's kernel computes it (two reductions in the computation dtype, in the backend's
// order): a batch norm's statistics compile into two well-shaped reductions instead of running
// on the interpreter.
IRPtr var(GraphLowering& g, const Node& n) {
  IRPtr x = g.input(n, "self");
  std::vector<bool> reduced = reduced_dims(n, static_cast<int64_t>(x->size().size()));
  DType out = n.meta().dtype, dt = computation_dtype(out);
  int64_t count = 1;
  for (size_t d = 0; d < reduced.size(); ++d)
    if (reduced[d]) count *= x->size()[d];
  double correction = 1;
  if (const Arg& c = n.arg("correction"); !c.is_absent()) correction = c.to_double();
  const double divisor = std::max(0.0, static_cast<double>(count) - correction);
  IRPtr sum = reduce(g, x, reduced, true, ReductionType::Sum, dt);
  IRPtr mean = pointwise(g, {Operand(sum), Operand(ScalarValue::integer(count))}, dt, dt,
                         [](OpsBuilder& o, const std::vector<Val>& a) { return o.truediv(a[0], a[1]); });
  IRPtr square = pointwise(g, {Operand(x), Operand(mean)}, dt, dt,
                           [](OpsBuilder& o, const std::vector<Val>& a) {
                             Val d = o.sub(a[0], a[1]);
                             return o.mul(d, d);
                           });
  IRPtr m2 = reduce(g, square, reduced, keepdim_of(n), ReductionType::Sum, dt);
  return pointwise(g, {Operand(m2), Operand(ScalarValue::floating(divisor))}, dt, out,
                   [](OpsBuilder& o, const std::vector<Val>& a) { return o.truediv(a[0], a[1]); });
}

}  // namespace

void register_reduction_rules(LoweringTable& t) {
  for (const char* name : {"sum.dim_IntList", "sum.default"})
    t.add(name, reduction_rule(ReductionType::Sum));
  for (const char* name : {"prod.dim_int", "prod.default"})
    t.add(name, reduction_rule(ReductionType::Prod));
  t.add("amax.default", reduction_rule(ReductionType::Max));
  t.add("amin.default", reduction_rule(ReductionType::Min));
  t.add("argmax.default", reduction_rule(ReductionType::ArgMax));
  t.add("argmin.default", reduction_rule(ReductionType::ArgMin));
  for (const char* name : {"any.dim", "any.default"})
    t.add(name, reduction_rule(ReductionType::Any));
  for (const char* name : {"all.dim", "all.default"})
    t.add(name, reduction_rule(ReductionType::All));
  t.add("mean.dim", mean);
  t.add("mean.default", mean);
  t.add("var.correction", var);
}

}  // namespace stax
