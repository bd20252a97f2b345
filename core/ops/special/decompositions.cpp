// Decompositions of the special ops.
#include "core/graph/decompositions.h"
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/graph/op_registry.h"
#include "core/ops/common/decomposition_helpers.h"
#include "core/ops/common/xlogy.h"
#include "core/ops/nn/params.h"
#include "core/ops/registration.h"
#include "core/support/error.h"

namespace stax {
namespace {

using namespace xlogy_formula;  // NOLINT

constexpr double kPi = 3.14159265358979323846;
constexpr double kInf = std::numeric_limits<double>::infinity();

using decomp::cast;

// The tensor inputs cast to the node's dtype (torch computes in the promoted type).
Node* in(Graph& g, const Node& n, const char* p) { return cast(g, n.arg(p).node(), n.dtype()); }

Node* entr(Graph& g, const Node& n) {
  Node* x = in(g, n, "self");
  Node* pos = g.call("gt.Scalar", {x, 0});
  Node* safe = g.call("where.ScalarOther", {pos, x, 1.0});  // log's argument, 1 where unused
  Node* v = g.call("mul.Tensor", {g.call("neg", {x}), g.call("log", {safe})});
  Node* rest = g.call("where.ScalarSelf",
                      {g.call("eq.Scalar", {x, 0}), 0.0, g.call("full_like", {x, -kInf})});
  Node* r = g.call("where.self", {pos, v, rest});
  return g.call("where.self", {g.call("isnan", {x}), x, r});
}

Node* mvlgamma(Graph& g, const Node& n) {
  Node* x = in(g, n, "self");
  int64_t p = n.arg("p").to_int();
  Node* s = nullptr;
  for (int64_t j = 0; j < p; ++j) {
    double off = -0.5 * static_cast<double>(p - 1 - j);
    Node* xj = off == 0 ? x : g.call("add.Scalar", {x, off});
    Node* l = g.call("lgamma", {xj});
    s = s ? g.call("add.Tensor", {s, l}) : l;
  }
  double c = static_cast<double>(p) * static_cast<double>(p - 1) * std::log(kPi) * 0.25;
  return c == 0 ? s : g.call("add.Scalar", {s, c});
}

}  // namespace

void register_special_decompositions(DecompositionTable& t) {
  t.add("special_entr.default", entr);

  t.add("special_xlog1py.default", [](Graph& g, const Node& n) { return xlogy(g, n, "log1p"); });

  t.add("mvlgamma.default", mvlgamma);
}

}  // namespace stax
