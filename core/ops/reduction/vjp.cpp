// VJP rules of the reductions: the gradient of a reduction is the upstream gradient with the
// reduced dims restored (unsqueeze where keepdim=False) and expanded to the input's shape, times
// the reduction's partial derivatives (1 for sum, 1/N for mean, formulas.h for prod, amax/amin,
// var). argmax / argmin / all / any are not differentiable (no rule needed: the joint-graph
// builder never asks for one).
#include "core/ops/common/derivative_formulas.h"
#include "core/autodiff/vjp.h"
#include "core/graph/op_registry.h"
#include "core/ops/registration.h"

namespace stax {
namespace {

bool keepdim_of(const VjpContext& c) {
  const auto& schema = c.node()->op()->schema;
  return schema.index_of("keepdim") >= 0 && c.arg("keepdim").to_bool();
}

// The reduced dims of the node's input (all dims for the .default overloads).
std::vector<int64_t> dims_of(const VjpContext& c) {
  const auto& schema = c.node()->op()->schema;
  Arg dim = schema.index_of("dim") >= 0 ? c.arg("dim") : Arg();
  return reduced_dims(dim, c.in("self")->meta().dim());
}

// The upstream gradient broadcast back to the input's shape.
Node* grad_expanded(VjpContext& c) {
  Node* x = c.in("self");
  Node* gk = c.restore_reduced_dims(c.grad(), x->shape(), dims_of(c), keepdim_of(c));
  return c.expand_to(gk, x->shape());
}

// The upstream gradient with keepdim-shaped dims (it broadcasts against the input).
Node* grad_keepdim(VjpContext& c) {
  return c.restore_reduced_dims(c.grad(), c.in("self")->shape(), dims_of(c), keepdim_of(c));
}

template <class F>
VjpFn reduction(F f) {
  return [f](VjpContext& c) {
    if (c.needs("self")) c.give("self", f(c));
  };
}

}  // namespace

void register_reduction_vjps(VjpTable& t) {
  // torch: grad.expand(self.sizes()) (after unsqueezing the reduced dims when keepdim=False)
  t.add("sum.default", reduction(grad_expanded));
  t.add("sum.dim_IntList", reduction(grad_expanded));
  // torch: grad.expand(sizes) / N
  auto mean = reduction([](VjpContext& c) {
    int64_t n = reduced_numel(c.in("self")->shape(), dims_of(c));
    return c.div(grad_expanded(c), Arg(n));
  });
  t.add("mean.default", mean);
  t.add("mean.dim", mean);
  t.add("prod.default", reduction([](VjpContext& c) {
          return c.mul(formulas::prod_partials(c, c.in("self"), std::nullopt), c.grad());
        }));
  t.add("prod.dim_int", reduction([](VjpContext& c) {
          int64_t d = c.arg("dim").to_int();
          return c.mul(formulas::prod_partials(c, c.in("self"), d), grad_keepdim(c));
        }));
  auto extremum = reduction([](VjpContext& c) {
    Node* w = formulas::extremum_weights(c, c.in("self"), c.out(), dims_of(c), keepdim_of(c));
    return c.mul(w, grad_keepdim(c));
  });
  t.add("amax.default", extremum);
  t.add("amin.default", extremum);
  t.add("var.correction", reduction([](VjpContext& c) {
          const Arg& corr = c.arg("correction");
          double correction = corr.is_absent() ? 1.0 : corr.to_double();
          Node* p = formulas::var_partials(c, c.in("self"), dims_of(c), correction);
          return c.mul(p, grad_keepdim(c));
        }));
}

}  // namespace stax
