#include "core/ops/common/derivative_formulas.h"

namespace stax::formulas {

Node* prod_partials(const Emitter& e, Node* x, std::optional<int64_t> dim) {
  Node* is_zero = e.call("eq.Scalar", {x, 0});
  Node* nonzero = e.call("where.ScalarSelf", {is_zero, 1.0, x});  // zeros replaced by 1
  Node* prod_nonzero;
  Node* zero_count;
  if (dim) {
    prod_nonzero = e.call("prod.dim_int", {nonzero, *dim, true});
    zero_count = e.call("sum.dim_IntList", {is_zero, Arg(std::vector<int64_t>{*dim}), true});
  } else {
    prod_nonzero = e.call("prod.default", {nonzero});
    zero_count = e.call("sum.default", {is_zero});
  }
  Node* no_zero = e.call("eq.Scalar", {zero_count, 0});
  Node* one_zero = e.call("eq.Scalar", {zero_count, 1});
  Node* at_zero = e.call("logical_and", {one_zero, is_zero});
  Node* if_no_zero = e.div(prod_nonzero, nonzero);
  Node* if_one_zero = e.call("where.ScalarOther", {at_zero, prod_nonzero, 0.0});
  Node* r = e.call("where.self", {no_zero, if_no_zero, if_one_zero});
  return e.expand_to(r, x->shape());
}

Node* extremum_weights(const Emitter& e, Node* x, Node* y, const std::vector<int64_t>& dims,
                       bool keepdim) {
  Node* yk = e.restore_reduced_dims(y, x->shape(), dims, keepdim);
  Node* mask = e.cast(e.call("eq.Tensor", {x, yk}), x->dtype());
  Node* count = e.call("sum.dim_IntList", {mask, Arg(dims), true});
  return e.div(mask, count);
}

Node* var_partials(const Emitter& e, Node* x, const std::vector<int64_t>& dims, double correction) {
  int64_t n = reduced_numel(x->shape(), dims);
  Node* centered = e.sub(x, e.call("mean.dim", {x, Arg(dims), true}));
  return e.mul(centered, Arg(2.0 / (static_cast<double>(n) - correction)));
}

Normalized layer_norm_stats(const Emitter& e, Node* x, size_t k, double eps) {
  int64_t rank = x->meta().dim();
  std::vector<int64_t> dims;
  for (int64_t d = rank - static_cast<int64_t>(k); d < rank; ++d) dims.push_back(d);
  Node* centered = e.sub(x, e.call("mean.dim", {x, Arg(dims), true}));
  Node* var = e.call("mean.dim", {e.mul(centered, centered), Arg(dims), true});
  Node* rstd = e.call("rsqrt", {e.add(var, Arg(eps))});
  return {e.mul(centered, rstd), rstd, dims};
}

}  // namespace stax::formulas
