// Forward mode through the linear-algebra ops (core/ops/linalg/jvp.cpp, torch's formulas): every
// rule's tangent J v against the central difference (f(x + h v) - f(x - h v)) / 2h of the
// interpreter, float64, for one and for several results of a call (shared factors).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/functional/functional.h"
#include "core/graph/graph.h"
#include "core/graph/verifier.h"
#include "core/interpreter/interpreter.h"
#include "tests/ops/linalg/linalg_test_support.h"
#include "tests/support/interp_helpers.h"

using namespace stax;
using namespace stax::test;
using namespace stax::test::linalg;

namespace {

struct Case {
  std::string name;
  std::vector<Shape> shapes;
  std::function<std::vector<Node*>(Graph&, const std::vector<Node*>&)> f;
};

std::vector<Node*> one(Node* x) { return {x}; }

// x + s v, elementwise.
Tensor moved(const Tensor& x, const Tensor& v, double s) {
  Tensor r = x.clone();
  for (int64_t i = 0; i < x.numel(); ++i) r.set_double(i, x.get_double(i) + s * v.get_double(i));
  return r;
}

void check(const Case& k) {
  Graph g;
  std::vector<Node*> in;
  for (size_t i = 0; i < k.shapes.size(); ++i)
    in.push_back(g.placeholder("x" + std::to_string(i), k.shapes[i], DType::Float64));
  g.output(k.f(g, in));
  verify(g);
  std::vector<Tensor> x = check_inputs(k.shapes), v;
  for (size_t i = 0; i < x.size(); ++i) v.push_back(randn(k.shapes[i], DType::Float64, 40 + i));
  JvpResult r = jvp(g, x, v);
  const double h = 1e-6;
  std::vector<Tensor> xp, xm;
  for (size_t i = 0; i < x.size(); ++i) {
    xp.push_back(moved(x[i], v[i], h));
    xm.push_back(moved(x[i], v[i], -h));
  }
  std::vector<Tensor> fp = interpret(g, xp), fm = interpret(g, xm);
  ASSERT_EQ(r.tangents.size(), fp.size()) << k.name;
  for (size_t o = 0; o < fp.size(); ++o) {
    ASSERT_EQ(r.tangents[o].numel(), fp[o].numel()) << k.name;
    for (int64_t j = 0; j < fp[o].numel(); ++j) {
      double d = (fp[o].get_double(j) - fm[o].get_double(j)) / (2 * h);
      EXPECT_NEAR(r.tangents[o].get_double(j), d, 1e-5 * std::max(1.0, std::fabs(d)))
          << k.name << " output " << o << " element " << j;
    }
  }
}

Node* item(Graph& g, Node* t, int64_t i) { return elem(g, t, i); }

}  // namespace

TEST(LinalgJvp, FactorizationsMatchDirectionalDifferences) {
  std::vector<Case> cases{
      {"det", {{2, 3, 3}}, [](Graph& g, auto in) { return one(item(g, g.call("_linalg_det", {in[0]}), 0)); }},
      {"slogdet", {{3, 3}}, [](Graph& g, auto in) {
         Node* s = g.call("_linalg_slogdet", {in[0]});
         return std::vector<Node*>{item(g, s, 0), item(g, s, 1)};
       }},
      {"inv", {{2, 3, 3}}, [](Graph& g, auto in) { return one(item(g, g.call("linalg_inv_ex", {in[0]}), 0)); }},
      {"lu_factor square", {{3, 3}}, [](Graph& g, auto in) {
         return one(item(g, g.call("linalg_lu_factor_ex", {in[0]}), 0));
       }},
      {"cholesky", {{3, 3}}, [](Graph& g, auto in) {
         return one(item(g, g.call("linalg_cholesky_ex", {symmetric(g, in[0], 6.0)}), 0));
       }},
      {"cholesky upper", {{2, 3, 3}}, [](Graph& g, auto in) {
         return one(item(g, g.call("linalg_cholesky_ex", {symmetric(g, in[0], 6.0)}, {{"upper", true}}), 0));
       }},
      {"eigh", {{4, 4}}, [](Graph& g, auto in) {
         Node* e = g.call("_linalg_eigh", {symmetric(g, in[0], 0.0)});
         return std::vector<Node*>{item(g, e, 0), item(g, e, 1)};
       }},
      {"eigh values", {{3, 3}}, [](Graph& g, auto in) {
         return one(item(g, g.call("_linalg_eigh", {symmetric(g, in[0], 0.0)}), 0));
       }},
      {"qr wide", {{3, 5}}, [](Graph& g, auto in) {
         Node* q = g.call("linalg_qr", {in[0]});
         return std::vector<Node*>{item(g, q, 0), item(g, q, 1)};
       }},
      {"qr R tall", {{5, 3}}, [](Graph& g, auto in) { return one(item(g, g.call("linalg_qr", {in[0]}), 1)); }},
      {"qr Q tall", {{5, 3}}, [](Graph& g, auto in) { return one(item(g, g.call("linalg_qr", {in[0]}), 0)); }},
      {"matrix_exp", {{2, 3, 3}}, [](Graph& g, auto in) { return one(g.call("linalg_matrix_exp", {in[0]})); }},
  };
  for (const char* shape : {"tall", "wide", "square full"}) {
    std::string s = shape;
    Shape sh = s == "tall" ? Shape{5, 3} : s == "wide" ? Shape{3, 5} : Shape{2, 3, 3};
    bool full = s == "square full";
    cases.push_back({"svd " + s, {sh}, [full](Graph& g, auto in) {
                       Node* d = g.call("_linalg_svd", {in[0], full});
                       return std::vector<Node*>{item(g, d, 0), item(g, d, 1), item(g, d, 2)};
                     }});
    cases.push_back({"svd S " + s, {sh}, [full](Graph& g, auto in) {
                       return one(item(g, g.call("_linalg_svd", {in[0], full}), 1));
                     }});
  }
  for (const Case& k : cases) check(k);
}

TEST(LinalgJvp, SolvesMatchDirectionalDifferences) {
  std::vector<Case> cases{
      {"solve left", {{2, 3, 3}, {3, 2}}, [](Graph& g, auto in) {
         return one(item(g, g.call("_linalg_solve_ex", {in[0], in[1]}), 0));
       }},
      {"solve right vector", {{3, 3}, {2, 3}}, [](Graph& g, auto in) {
         return one(item(g, g.call("_linalg_solve_ex", {in[0], in[1]}, {{"left", false}}), 0));
       }},
      {"solve with its LU", {{3, 3}, {3, 2}}, [](Graph& g, auto in) {
         Node* s = g.call("_linalg_solve_ex", {in[0], in[1]});
         return std::vector<Node*>{item(g, s, 0), item(g, s, 1)};
       }},
      {"solve_triangular upper left", {{3, 3}, {3, 2}}, [](Graph& g, auto in) {
         return one(g.call("linalg_solve_triangular", {in[0], in[1]}, {{"upper", true}}));
       }},
      {"solve_triangular lower right unit", {{2, 3, 3}, {2, 3}}, [](Graph& g, auto in) {
         return one(g.call("linalg_solve_triangular", {in[0], in[1]},
                           {{"upper", false}, {"left", false}, {"unitriangular", true}}));
       }},
      {"inverse checked", {{3, 3}}, [](Graph& g, auto in) {
         Node* f = g.call("linalg_inv_ex", {in[0]});
         g.call("_linalg_check_errors", {item(g, f, 1), std::string("linalg.inv")},
                {{"is_matrix", true}});
         return one(item(g, f, 0));
       }},
  };
  for (const Case& k : cases) check(k);
}

// The rules of issue 29 item 3: LU of non-square matrices (tall, wide, batched), lu_solve in its
// four forms (through the LU of A and B), householder_product and ormqr (every input).
TEST(LinalgJvp, LuSolveNonSquareLuAndHouseholderMatchDirectionalDifferences) {
  auto lu_solve = [](bool left, bool adjoint) {
    return [left, adjoint](Graph& g, std::vector<Node*> in) {
      Node* f = g.call("linalg_lu_factor_ex", {in[0]});
      return one(g.call("linalg_lu_solve", {item(g, f, 0), item(g, f, 1), in[1]},
                        {{"left", left}, {"adjoint", adjoint}}));
    };
  };
  auto ormqr = [](bool left, bool transpose) {
    return [left, transpose](Graph& g, std::vector<Node*> in) {
      return one(g.call("ormqr", {in[0], in[1], in[2], left, transpose}));
    };
  };
  std::vector<Case> cases{
      {"lu_factor tall", {{5, 3}}, [](Graph& g, auto in) {
         return one(item(g, g.call("linalg_lu_factor_ex", {in[0]}), 0));
       }},
      {"lu_factor wide", {{3, 5}}, [](Graph& g, auto in) {
         return one(item(g, g.call("linalg_lu_factor_ex", {in[0]}), 0));
       }},
      {"lu_factor batched tall", {{2, 4, 2}}, [](Graph& g, auto in) {
         return one(item(g, g.call("linalg_lu_factor_ex", {in[0]}), 0));
       }},
      {"lu_solve left", {{3, 3}, {3, 2}}, lu_solve(true, false)},
      {"lu_solve left adjoint", {{2, 3, 3}, {3, 2}}, lu_solve(true, true)},
      {"lu_solve right", {{3, 3}, {2, 3}}, lu_solve(false, false)},
      {"lu_solve right adjoint", {{3, 3}, {2, 2, 3}}, lu_solve(false, true)},
      {"householder_product", {{4, 3}, {3}}, [](Graph& g, auto in) {
         return one(g.call("linalg_householder_product", {in[0], in[1]}));
       }},
      {"householder_product fewer tau, batched", {{2, 5, 3}, {2, 2}}, [](Graph& g, auto in) {
         return one(g.call("linalg_householder_product", {in[0], in[1]}));
       }},
      {"ormqr left", {{4, 3}, {3}, {4, 2}}, ormqr(true, false)},
      {"ormqr left transpose", {{4, 3}, {2}, {4, 2}}, ormqr(true, true)},
      {"ormqr right", {{4, 3}, {3}, {2, 4}}, ormqr(false, false)},
      {"ormqr right transpose", {{2, 4, 2}, {2, 2}, {2, 3, 4}}, ormqr(false, true)},
  };
  for (const Case& k : cases) check(k);
}
