// Linear-algebra errors that raise (core/ops/linalg/error_checks.cpp) and one factorization per
// call (core/ops/linalg/packed_factors.h), docs/linalg.md. A singular or indefinite input of
// torch.linalg.inv / solve / cholesky / lu_factor raises torch's message (batch element
// included) in the interpreter and in a compiled graph, never returns inf / nan; a call whose
// graph reads several results runs its LAPACK factorization once, with the same values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/functional/functional.h"
#include "core/graph/graph.h"
#include "core/graph/multi_output.h"
#include "core/graph/parser.h"
#include "core/graph/verifier.h"
#include "core/interpreter/interpreter.h"
#include "core/ops/linalg/error_checks.h"
#include "tests/ops/linalg/linalg_test_support.h"
#include "tests/support/compiled_check.h"
#include "tests/support/interp_helpers.h"

using namespace stax;
using namespace stax::test;
using namespace stax::test::linalg;

namespace {

// The message of the Error that running `f` throws ("" when it does not throw).
std::string raised(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Both the interpreter and the compiled graph raise `message`.
void expect_raises(const Graph& g, const std::vector<Tensor>& in, const std::string& message) {
  std::string interp = raised([&] { interpret(g, in); });
  EXPECT_TRUE(has(interp, message)) << "interpreter: '" << interp << "'\nwant: " << message;
  CompiledGraph cg = cpu_compiler().compile(g);
  std::string compiled = raised([&] { cg.run(in); });
  EXPECT_TRUE(has(compiled, message)) << "compiled: '" << compiled << "'\nwant: " << message;
}

// torch.linalg.inv as make_fx records it (api name as torch's C++ passes it).
Graph traced_inverse(const Shape& s, bool is_matrix) {
  std::string text =
      "graph():\n"
      "    %a_1 : [num_users=1] = placeholder[target=a_1]\n"
      "    %linalg_inv_ex : [num_users=2] = call_function[target=torch.ops.aten.linalg_inv_ex."
      "default](args = (%a_1,), kwargs = {})\n"
      "    %getitem : [num_users=1] = call_function[target=operator.getitem](args = "
      "(%linalg_inv_ex, 0), kwargs = {})\n"
      "    %getitem_1 : [num_users=1] = call_function[target=operator.getitem](args = "
      "(%linalg_inv_ex, 1), kwargs = {})\n"
      "    %_linalg_check_errors : [num_users=0] = call_function[target=torch.ops.aten."
      "_linalg_check_errors.default](args = (%getitem_1, linalg.inv), kwargs = {is_matrix: " +
      std::string(is_matrix ? "True" : "False") +
      "})\n"
      "    return getitem\n";
  ParseOptions opts;
  opts.placeholder_meta = {{"a_1", TensorMeta::contiguous(s, DType::Float64)}};
  return parse_graph(text, "inv.stax", opts);
}

// Rows 1 and 2 equal: getrf finds U(3, 3) = 0 (LAPACK's info 3).
Tensor singular3() {
  return Tensor::from_vector({3, 3}, std::vector<double>{2, 1, 1, 1, 3, 2, 1, 3, 2});
}

// The nodes of g (expanded) that run a LAPACK factorization: element ops of `ops` that compute
// (packed, or without factors; det factors A itself without them).
int factorizations(const Graph& source, const std::vector<std::string>& ops) {
  Graph g = source.clone();
  expand_multi_output(g);
  int n = 0;
  for (Node* x : g.nodes()) {
    if (!x->is_call() || std::find(ops.begin(), ops.end(), x->op()->schema.base) == ops.end())
      continue;
    const OpSchema& s = x->op()->schema;
    bool packed = s.index_of("output") >= 0 && x->arg("output").to_int() == -1;
    if (packed || x->arg("factors").is_absent()) ++n;
  }
  return n;
}

const std::vector<std::string> kLu{"_stax_linalg_lu", "_stax_linalg_det", "_stax_linalg_solve"};
const std::vector<std::string> kSvd{"_stax_linalg_svd"};

}  // namespace

TEST(LinalgErrors, TracedInverseOfASingularMatrixRaisesTorchsMessage) {
  Graph g = traced_inverse({3, 3}, true);
  expect_raises(g, {singular3()},
                "linalg.inv: The diagonal element 3 is zero, the inversion could not be completed "
                "because the input matrix is singular.");
  // An invertible input runs as before.
  Tensor a = well_conditioned({3, 3}, DType::Float64, 3);
  Tensor inv = interpret(g, {a})[0];
  EXPECT_TRUE(cpu_compiler().compile(g).run({a})[0].equal(inv));
  for (int64_t i = 0; i < 3; ++i) {
    double s = 0;
    for (int64_t k = 0; k < 3; ++k) s += a.get_double(k) * inv.get_double(k * 3 + i);
    EXPECT_NEAR(s, i == 0 ? 1.0 : 0.0, 1e-12);
  }
}

TEST(LinalgErrors, BatchesNameTheFirstFailingMatrix) {
  Graph g = traced_inverse({3, 3, 3}, false);
  Tensor a = well_conditioned({3, 3, 3}, DType::Float64, 4);
  Tensor s = singular3();
  for (int64_t i = 0; i < 9; ++i) {
    a.set_double(9 + i, s.get_double(i));
    a.set_double(18 + i, s.get_double(i));
  }
  expect_raises(g, {a},
                "linalg.inv: (Batch element 1): The diagonal element 3 is zero, the inversion "
                "could not be completed because the input matrix is singular.");
}

// The check guards the graph, not one value: it raises though the graph returns something else.
TEST(LinalgErrors, ACheckRaisesWhateverTheGraphReturns) {
  Graph g;
  Node* a = g.placeholder("a", {3, 3}, DType::Float64);
  Node* b = g.placeholder("b", {5}, DType::Float64);
  Node* f = g.call("_linalg_solve_ex", {a, g.call("ones", {Arg(Shape{3, 2})}, {{"dtype", DType::Float64}})});
  g.call("_linalg_check_errors", {elem(g, f, 3), std::string("torch.linalg.solve")},
         {{"is_matrix", true}});
  g.output({g.call("mul.Scalar", {b, 2.0}), elem(g, f, 0)});
  verify(g);
  expect_raises(g, {singular3(), randn({5}, DType::Float64, 1)},
                "torch.linalg.solve: The solver failed because the input matrix is singular.");
}

TEST(LinalgErrors, ExFormsWithCheckErrorsRaise) {
  Graph g;
  Node* a = g.placeholder("a", {2, 3, 3}, DType::Float64);
  g.output({elem(g, g.call("linalg_cholesky_ex", {a}, {{"check_errors", true}}), 0)});
  Tensor in = well_conditioned({2, 3, 3}, DType::Float64, 2);
  Tensor indefinite = Tensor::from_vector({3, 3}, std::vector<double>{4, 0, 0, 0, -1, 0, 0, 0, 1});
  std::vector<Tensor> ok{Tensor::from_vector({2, 3, 3}, std::vector<double>{4, 1, 0, 1, 3, 0, 0,
                                                                           0, 2, 5, 0, 1, 0, 4,
                                                                           0, 1, 0, 3})};
  EXPECT_EQ(interpret(g, ok).size(), 1u);
  for (int64_t i = 0; i < 9; ++i) in.set_double(9 + i, indefinite.get_double(i));
  expect_raises(g, {in},
                "linalg.cholesky_ex: (Batch element 1): The factorization could not be completed "
                "because the input is not positive-definite (the leading minor of order 2 is not "
                "positive-definite).");
  // Without check_errors the info output reports it and nothing raises.
  Graph h;
  Node* b = h.placeholder("a", {2, 3, 3}, DType::Float64);
  h.output({elem(h, h.call("linalg_cholesky_ex", {b}), 1)});
  Tensor info = interpret(h, {in})[0];
  EXPECT_EQ(info.get_int(0), 0);
  EXPECT_EQ(info.get_int(1), 2);
}

TEST(LinalgErrors, MessagesFollowTorchsCheck) {
  using stax::linalg::error_message;
  EXPECT_EQ(error_message("torch.linalg.lu_factor", -1, 2),
            "torch.linalg.lu_factor: U[2,2] is zero and using it on lu_solve would result in a "
            "division by zero. If you still want to perform the factorization, consider calling "
            "linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)");
  EXPECT_EQ(error_message("linalg.svd", 0, 3),
            "linalg.svd: (Batch element 0): The algorithm failed to converge because the input "
            "matrix is ill-conditioned or has too many repeated singular values (error code: 3).");
  EXPECT_EQ(error_message("linalg.svd", -1, -4),
            "linalg.svd: The algorithm failed to converge because the input matrix contained "
            "non-finite values.");
  EXPECT_EQ(error_message("linalg.eigh", -1, 1),
            "linalg.eigh: The algorithm failed to converge because the input matrix is "
            "ill-conditioned or has too many repeated eigenvalues (error code: 1).");
}

TEST(LinalgErrors, GradientsFlowThroughTheCheck) {
  Graph g = traced_inverse({3, 3}, true);
  Tensor a = well_conditioned({3, 3}, DType::Float64, 7);
  Tensor u = randn({3, 3}, DType::Float64, 8);
  VjpResult r = vjp(g, {a}, {u});
  const double h = 1e-6;
  for (int64_t i = 0; i < 9; ++i) {
    auto [fp, fm] = nudged(g, {a}, 0, i, h);
    double d = 0;
    for (int64_t j = 0; j < 9; ++j) d += u.get_double(j) * (fp.get_double(j) - fm.get_double(j)) / (2 * h);
    EXPECT_NEAR(r.grads[0].get_double(i), d, 1e-6 * std::max(1.0, std::fabs(d))) << i;
  }
  expect_raises(g, {singular3()}, "is zero, the inversion could not be completed");
  EXPECT_TRUE(has(raised([&] { vjp(g, {singular3()}, {u}); }), "input matrix is singular"));
}

// ---- one factorization per call

TEST(LinalgSharing, ResultsReadTogetherShareOneFactorization) {
  Graph g;
  Node* a = g.placeholder("a", {2, 4, 4}, DType::Float64);
  Node* b = g.placeholder("b", {2, 4, 3}, DType::Float64);
  Node* sl = g.call("_linalg_slogdet", {a});
  Node* lu = g.call("linalg_lu_factor_ex", {a});
  Node* x = g.call("linalg_lu_solve", {elem(g, lu, 0), elem(g, lu, 1), b});
  Node* svd = g.call("_linalg_svd", {a});
  g.output({elem(g, sl, 0), elem(g, sl, 1), x, elem(g, svd, 0), elem(g, svd, 1), elem(g, svd, 2)});
  verify(g);
  EXPECT_EQ(factorizations(g, kLu), 2);  // slogdet's and lu_factor's calls
  EXPECT_EQ(factorizations(g, kSvd), 1);
  std::vector<Tensor> in{well_conditioned({2, 4, 4}, DType::Float64, 1),
                         randn({2, 4, 3}, DType::Float64, 2)};
  std::vector<Tensor> shared = interpret(g, in);
  // Each result alone (its own factorization) gives the same values, bit for bit (getrf) or to
  // rounding (gesdd with and without singular vectors).
  auto alone = [&](const std::function<Node*(Graph&, Node*, Node*)>& f) {
    Graph h;
    Node* ha = h.placeholder("a", {2, 4, 4}, DType::Float64);
    Node* hb = h.placeholder("b", {2, 4, 3}, DType::Float64);
    h.output({f(h, ha, hb)});
    EXPECT_EQ(factorizations(h, kLu) + factorizations(h, kSvd),
              1);
    return interpret(h, in)[0];
  };
  EXPECT_TRUE(shared[0].equal(alone([](Graph& h, Node* a, Node*) {
    return elem(h, h.call("_linalg_slogdet", {a}), 0);
  })));
  EXPECT_TRUE(shared[1].equal(alone([](Graph& h, Node* a, Node*) {
    return elem(h, h.call("_linalg_slogdet", {a}), 1);
  })));
  Tensor s = alone([](Graph& h, Node* a, Node*) { return elem(h, h.call("_linalg_svd", {a}), 1); });
  for (int64_t i = 0; i < s.numel(); ++i) EXPECT_NEAR(shared[4].get_double(i), s.get_double(i), 1e-12);
  // A X = B
  for (int64_t p = 0; p < 2; ++p)
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 3; ++j) {
        double v = 0;
        for (int64_t k = 0; k < 4; ++k)
          v += in[0].get_double(p * 16 + i * 4 + k) * shared[2].get_double(p * 12 + k * 3 + j);
        EXPECT_NEAR(v, in[1].get_double(p * 12 + i * 3 + j), 1e-12);
      }
  // The compiled graph runs the same kernels: bit for bit, fewer fallbacks than results.
  CompiledGraph cg = cpu_compiler().compile(g);
  std::vector<Tensor> got = cg.run(in);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i].equal(shared[i])) << i;
}

// The traced inverse reads the inverse and the info: one getrf serves both.
TEST(LinalgSharing, TheInverseAndItsCheckShareTheLuFactors) {
  EXPECT_EQ(factorizations(traced_inverse({3, 3}, true), kLu), 1);
}

// Gradients through shared factors (the rules read the packed factors too) against central
// differences.
TEST(LinalgSharing, VjpsThroughSharedFactorsMatchCentralDifferences) {
  struct Case {
    const char* name;
    Shape shape;
    std::function<std::vector<Node*>(Graph&, Node*)> f;
  };
  std::vector<Case> cases{
      {"slogdet", {2, 3, 3}, [](Graph& g, Node* a) {
         Node* s = g.call("_linalg_slogdet", {a});
         return std::vector<Node*>{elem(g, s, 0), elem(g, s, 1)};
       }},
      {"svd", {4, 3}, [](Graph& g, Node* a) {
         Node* s = g.call("_linalg_svd", {a});
         return std::vector<Node*>{elem(g, s, 0), elem(g, s, 1), elem(g, s, 2)};
       }},
      {"eigh", {3, 3}, [](Graph& g, Node* a) {
         Node* s = g.call("_linalg_eigh", {symmetric(g, a, 0.0)});
         return std::vector<Node*>{elem(g, s, 0), elem(g, s, 1)};
       }},
      {"qr", {4, 3}, [](Graph& g, Node* a) {
         Node* s = g.call("linalg_qr", {a});
         return std::vector<Node*>{elem(g, s, 0), elem(g, s, 1)};
       }},
      {"cholesky checked", {3, 3}, [](Graph& g, Node* a) {
         Node* s = g.call("linalg_cholesky_ex", {symmetric(g, a, 6.0)}, {{"check_errors", true}});
         return std::vector<Node*>{elem(g, s, 0)};
       }},
  };
  for (const Case& k : cases) {
    Graph g;
    Node* a = g.placeholder("a", k.shape, DType::Float64);
    std::vector<Node*> outs = k.f(g, a);
    // one output: the sum of every result, weighted, so each result's rule contributes
    Node* total = nullptr;
    for (size_t i = 0; i < outs.size(); ++i) {
      Node* w = g.call("sum.default", {g.call("mul.Scalar", {outs[i], double(i + 1) * 0.7})});
      total = total ? g.call("add.Tensor", {total, w}) : w;
    }
    g.output({total});
    verify(g);
    Tensor in = check_inputs({k.shape})[0];
    Tensor u = Tensor::from_vector(Shape{}, std::vector<double>{1.0});
    VjpResult r = vjp(g, {in}, {u});
    for (int64_t i = 0; i < in.numel(); ++i) {
      auto [fp, fm] = nudged(g, {in}, 0, i, 1e-6);
      double d = (fp.get_double(0) - fm.get_double(0)) / 2e-6;
      EXPECT_NEAR(r.grads[0].get_double(i), d, 1e-5 * std::max(1.0, std::fabs(d)))
          << k.name << " element " << i;
    }
  }
}
