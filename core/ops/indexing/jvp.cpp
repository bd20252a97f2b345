// Jvp of the indexing ops.
#include "core/autodiff/joint_graph.h"
#include "core/autodiff/jvp.h"
#include <algorithm>
#include <cmath>
#include <functional>
#include <unordered_map>

#include "core/autodiff/vjp.h"
#include "core/graph/decompositions.h"
#include "core/graph/op_registry.h"
#include "core/ops/common/linear_jvp.h"
#include "core/ops/common/via_decomposition.h"
#include "core/ops/indexing/derivatives.h"
#include "core/ops/registration.h"
#include "core/support/error.h"

namespace stax {
namespace {

using namespace indexing_derivatives;  // NOLINT
using namespace linear_jvp;  // NOLINT

Node* index_add_jvp(JvpContext& c) {
  Node* ts = c.tangent("self");
  Node* tr = c.tangent("source");
  if (!ts && !tr) return nullptr;
  return c.call("index_add",
                {c.tangent_or_zeros(c.in("self")), c.arg("dim"), c.in("index"),
                 c.tangent_or_zeros(c.in("source"))},
                {{"alpha", c.arg("alpha")}});
}

Node* scatter_reduce_jvp(JvpContext& c) {
  if (!c.tangent("self") && !c.tangent("src")) return nullptr;
  const std::string& red = c.arg("reduce").str();
  Node* ts = c.tangent_or_zeros(c.in("self"));
  Node* tr = c.tangent_or_zeros(c.in("src"));
  if (red == "sum" || red == "mean")  // linear (mean: for the counts of this index)
    return c.call("scatter_reduce.two", {ts, c.arg("dim"), c.in("index"), tr, c.arg("reduce")},
                  {{"include_self", c.arg("include_self")}});
  ScatterTerms t = scatter_terms(c, *c.node());
  Node* s = c.call("scatter_reduce.two",
                   {c.call("where.ScalarOther", {t.self_part, ts, 0.0}), c.arg("dim"),
                    c.in("index"), c.call("where.ScalarOther", {t.src_eq, tr, 0.0}), "sum"});
  return c.div(s, t.count);
}
Node* flip_jvp(JvpContext& c) {
  Node* t = c.tangent("self");
  return t ? c.call("flip", {t, c.arg("dims")}) : nullptr;
}
Node* roll_jvp(JvpContext& c) {
  Node* t = c.tangent("self");
  return t ? c.call("roll", {t, c.arg("shifts"), c.arg("dims")}) : nullptr;
}

}  // namespace

void register_indexing_jvps(JvpTable& t) {
  for (const char* op : {"cat.default", "gather.default", "index.Tensor", "index_select.default",
                         "index_put.default", "scatter_add.default", "scatter.src"})
    t.add(op, linear());

  t.add("scatter.value", [](JvpContext& c) {
    return c.call("scatter.value", {c.tangent("self"), c.arg("dim"), c.in("index"), 0});
  });
  for (const char* op :
         {"stack.default", "repeat.default", "tril.default", "triu.default", "masked_fill.Scalar",
          "masked_fill.Tensor"}) t.add(op, jvp_via_decomposition);

  t.add("flip.default", flip_jvp);

  t.add("roll.default", roll_jvp);

  t.add("index_add.default", index_add_jvp);

  t.add("scatter_reduce.two", scatter_reduce_jvp);
  for (const char* op :
         {"diagonal.default", "diag.default", "diag_embed.default", "take.default",
          "index_fill.int_Scalar", "index_fill.int_Tensor", "rot90.default", "narrow_copy.default",
          "index_copy.default", "put.default", "masked_scatter.default", "unfold.default",
          "block_diag.default", "slice_scatter.default", "select_scatter.default",
          "index_reduce.default", "scatter.reduce", "scatter.value_reduce"})
    t.add(op, jvp_via_decomposition);
}

}  // namespace stax
