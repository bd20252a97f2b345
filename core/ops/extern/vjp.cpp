// VJP rules of the matrix products. For C = A B: Ā = C̄ Bᵀ, B̄ = Aᵀ C̄ (seed §5.2: "the reverse of
// a matrix product is two matrix products of the same size"). matmul follows torch's rank rules:
// 1-D operands are treated as a row (left) or column (right) vector, and operands broadcast over
// batch dims get their gradient summed over those dims (sum_to_shape). The 2-D case emits
// t + matmul, as Listing 5.2 shows.
#include "core/autodiff/joint_graph.h"
#include "core/autodiff/jvp.h"
#include "core/autodiff/vjp.h"
#include <algorithm>
#include <cmath>
#include <functional>
#include <unordered_map>

#include "core/graph/decompositions.h"
#include "core/graph/op_registry.h"
#include "core/ops/common/via_decomposition.h"
#include "core/ops/registration.h"
#include "core/support/error.h"

namespace stax {
namespace {

void matmul_vjp(VjpContext& c) {
  Node* a = c.in("self");
  Node* b = c.in("other");
  if (!c.needs(a) && !c.needs(b)) return;
  Node* g = c.grad();
  int64_t ra = a->meta().dim(), rb = b->meta().dim();
  if (ra == 1 && rb == 1) {  // dot product: g is 0-d
    if (c.needs(a)) c.give(a, c.mul(g, b));
    if (c.needs(b)) c.give(b, c.mul(g, a));
    return;
  }
  // Lift 1-D operands to matrices (and the gradient with them), as matmul itself does.
  Node* a2 = ra == 1 ? c.call("unsqueeze", {a, 0}) : a;
  Node* b2 = rb == 1 ? c.call("unsqueeze", {b, 1}) : b;
  Node* g2 = g;
  if (ra == 1) g2 = c.call("unsqueeze", {g2, -2});
  if (rb == 1) g2 = c.call("unsqueeze", {g2, -1});
  if (c.needs(a)) {
    Node* ga = c.call("matmul", {g2, c.mT(b2)});
    ga = c.sum_to_shape(ga, a2->shape());
    c.give(a, c.reshape(ga, a->shape()));
  }
  if (c.needs(b)) {
    Node* gb = c.call("matmul", {c.mT(a2), g2});
    gb = c.sum_to_shape(gb, b2->shape());
    c.give(b, c.reshape(gb, b->shape()));
  }
}

// mm / bmm: C̄ Bᵀ and Aᵀ C̄ with the same op.
VjpFn product_vjp(const char* op) {
  return [op](VjpContext& c) {
    Node* a = c.in("self");
    Node* b = c.in("mat2");
    if (c.needs(a)) c.give(a, c.call(op, {c.grad(), c.mT(b)}));
    if (c.needs(b)) c.give(b, c.call(op, {c.mT(a), c.grad()}));
  };
}

// beta * self + alpha * (mat1 @ mat2)
void addmm_vjp(VjpContext& c) {
  Node* g = c.grad();
  const Arg& beta = c.arg("beta");
  const Arg& alpha = c.arg("alpha");
  auto scaled = [&](Node* x, const Arg& s) { return s.to_double() == 1.0 ? x : c.mul(x, s); };
  if (c.needs("self") && beta.to_double() != 0.0)
    c.give("self", c.sum_to_shape(scaled(g, beta), c.in("self")->shape()));
  if (c.needs("mat1")) c.give("mat1", scaled(c.call("mm", {g, c.mT(c.in("mat2"))}), alpha));
  if (c.needs("mat2")) c.give("mat2", scaled(c.call("mm", {c.mT(c.in("mat1")), g}), alpha));
}

}  // namespace

void register_extern_vjps(VjpTable& t) {
  t.add("matmul.default", matmul_vjp);
  t.add("mm.default", product_vjp("mm"));
  t.add("bmm.default", product_vjp("bmm"));
  t.add("addmm.default", addmm_vjp);
  for (const char* op : {"baddbmm.default"}) t.add(op, vjp_via_decomposition);
  for (const char* op :
         {"dot.default", "vdot.default", "mv.default", "addmv.default", "addr.default",
          "addbmm.default", "linalg_cross.default"}) t.add(op, vjp_via_decomposition);
}

}  // namespace stax
