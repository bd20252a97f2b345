// Jvp of the extern ops.
#include "core/autodiff/joint_graph.h"
#include "core/autodiff/jvp.h"
#include <algorithm>
#include <cmath>
#include <functional>
#include <unordered_map>

#include "core/autodiff/vjp.h"
#include "core/graph/decompositions.h"
#include "core/graph/op_registry.h"
#include "core/ops/common/via_decomposition.h"
#include "core/ops/registration.h"
#include "core/support/error.h"

namespace stax {
namespace {

// Σ_i op(x_1, ..., ẋ_i, ..., x_n) over the tensor arguments with a tangent.
Node* multilinear(JvpContext& c) {
  const auto& args = c.node()->args();
  Node* r = nullptr;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].is_node()) continue;
    Node* d = c.tangent(args[i].node());
    if (!d) continue;
    std::vector<Arg> a = args;
    a[i] = Arg(d);
    Node* term = c.call(c.node()->op()->name(), std::move(a), c.node()->kwargs());
    r = r ? c.add(r, term) : term;
  }
  return r;
}

// beta ṡ + alpha (ṁ1 m2 + m1 ṁ2)
Node* addmm_jvp(JvpContext& c) {
  Node* sd = c.tangent("self");
  Node* m1 = c.in("mat1");
  Node* m2 = c.in("mat2");
  Node* prod = nullptr;
  if (Node* d = c.tangent(m1)) prod = c.call("mm", {d, m2});
  if (Node* d = c.tangent(m2)) {
    Node* term = c.call("mm", {m1, d});
    prod = prod ? c.add(prod, term) : term;
  }
  const Arg& alpha = c.arg("alpha");
  const Arg& beta = c.arg("beta");
  if (prod && alpha.to_double() != 1.0) prod = c.mul(prod, alpha);
  if (sd && beta.to_double() != 0.0) {
    Node* s = beta.to_double() == 1.0 ? sd : c.mul(sd, beta);
    return prod ? c.add(prod, s) : s;
  }
  return prod;
}

}  // namespace

void register_extern_jvps(JvpTable& t) {
  for (const char* op : {"matmul.default", "mm.default", "bmm.default"}) t.add(op, multilinear);

  t.add("addmm.default", addmm_jvp);
  for (const char* op : {"baddbmm.default"}) t.add(op, jvp_via_decomposition);
  for (const char* op :
         {"dot.default", "vdot.default", "mv.default", "addmv.default", "addr.default",
          "addbmm.default", "linalg_cross.default"}) t.add(op, jvp_via_decomposition);
}

}  // namespace stax
