// Forward mode and the functional API (core/autodiff/jvp.h, functional.h; seed §5.7), checked
// against finite differences in float64, and the compiled path's double-backward rejection
// (core/driver/double_backward.h, Listing 5.5).
//
// JVP rules: every case of tests/autodiff_cases.h (one per op overload) plus the backward ops is
// checked as J v against the directional central difference (f(x + h v) - f(x - h v)) / 2h over
// every output element, with the case's tolerance (default h = 1e-6, |err| <= 1e-6 + 1e-5 |fd|;
// see autodiff_vjp_test.cpp for why these bounds suit float64). Hessian-vector products are
// checked against central differences of gradients (h = 1e-5, same bounds), Jacobians and
// Hessians column by column.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "core/driver/double_backward.h"
#include "core/functional/functional.h"
#include "core/autodiff/joint_graph.h"
#include "core/autodiff/jvp.h"
#include "core/graph/op_registry.h"
#include "core/support/error.h"
#include "tests/autodiff/pending_gradient_checks.h"
#include "tests/autodiff/autodiff_cases.h"

using namespace stax;
using namespace stax::testing;

namespace {

// all_cases() holds the backward ops too (tests/ops/pointwise/backward_op_cases.h): their JVP
// rules serve forward-over-reverse.
std::vector<Case> jvp_cases() { return all_cases(); }

struct Fn {
  Graph g;
  std::vector<Tensor> values;
};

Fn make(const Case& c, std::mt19937_64& rng) {
  Fn f;
  std::vector<Node*> ins;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    ins.push_back(f.g.placeholder(input_name(i), c.inputs[i].shape, c.inputs[i].dtype));
    f.values.push_back(random_input(c.inputs[i], rng));
  }
  f.g.output({c.build(f.g, ins)});
  return f;
}

class Jvp : public ::testing::TestWithParam<Case> {};

TEST_P(Jvp, MatchesDirectionalFiniteDifferences) {
  const Case& c = GetParam();
  std::mt19937_64 rng(std::hash<std::string>{}(c.name) ^ 0x5eed);
  Fn f = make(c, rng);
  std::vector<Tensor> tangents(c.inputs.size());
  std::vector<std::string> wrt;
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (c.inputs[i].diff && is_floating(c.inputs[i].dtype)) {
      tangents[i] = random_input(U(c.inputs[i].shape, -1, 1), rng);
      wrt.push_back(input_name(i));
    }
  JvpGraph jg = build_jvp_graph(f.g, wrt);
  std::string missing = missing_kernel(jg.graph);
  if (!missing.empty()) GTEST_SKIP() << "the interpreter has no kernel for " << missing << " yet";

  JvpResult r = jvp(f.g, f.values, tangents);
  ASSERT_EQ(r.outputs.size(), 1u);
  ASSERT_EQ(r.tangents.size(), 1u);
  Tensor y = interpret(f.g, f.values)[0];
  EXPECT_TRUE(r.outputs[0].equal(y)) << "the tangent graph changed the primal output";
  const Tensor& t = r.tangents[0];
  ASSERT_EQ(t.sizes(), y.sizes());
  ASSERT_EQ(t.dtype(), y.dtype());

  auto shifted = [&](double s) {
    std::vector<Tensor> xs = f.values;
    for (size_t i = 0; i < xs.size(); ++i) {
      if (!tangents[i].defined()) continue;
      xs[i] = xs[i].clone();
      for (int64_t k = 0; k < xs[i].numel(); ++k)
        xs[i].set_double(k, xs[i].get_double(k) + s * tangents[i].get_double(k));
    }
    return interpret(f.g, xs)[0];
  };
  Tensor yp = shifted(c.h), ym = shifted(-c.h);
  for (int64_t k = 0; k < y.numel(); ++k) {
    double fd = (yp.get_double(k) - ym.get_double(k)) / (2 * c.h);
    EXPECT_NEAR(t.get_double(k), fd, c.atol + c.rtol * std::abs(fd)) << c.name << " [" << k << "]";
  }
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string s = info.param.name;
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Rules, Jvp, ::testing::ValuesIn(jvp_cases()), case_name);

TEST(JvpCoverage, EveryRuleHasACheck) {
  std::set<std::string> used;
  std::mt19937_64 rng(1);
  for (const Case& c : jvp_cases()) {
    Fn f = make(c, rng);
    for (const Node* n : f.g.nodes())
      if (n->is_call()) used.insert(n->op()->name());
  }
  const auto& pending = test::rules_pending_a_gradient_check();
  const auto& linalg_checked = test::linalg_rules_checked_in_linalg_test();  // linalg_jvp_test
  const auto& complex_checked = test::complex_rules_checked_in_complex_fft_test();
  for (const auto& name : default_jvp_table().names())
    EXPECT_TRUE(used.count(name) || pending.count(name) || linalg_checked.count(name) ||
                complex_checked.count(name))
        << "no JVP check exercises the rule of " << name;
  for (const auto& name : pending)
    EXPECT_FALSE(used.count(name)) << name << " is exercised now: remove it from pending_gradient_checks.h";
  // Every op with a VJP rule has a JVP rule (except where.Scalar-like no-ops).
  const auto& complex_rules = test::complex_rules_checked_in_complex_fft_test();
  const auto& linalg_rules = test::linalg_rules_checked_in_linalg_test();
  for (const auto& name : default_vjp_table().names())
    EXPECT_TRUE(default_jvp_table().find(name) || complex_rules.count(name) ||
                linalg_rules.count(name))
        << name << " has a VJP rule but no JVP rule";
}

TEST(JvpGraph, LayoutAndNames) {
  Graph g;
  Node* x = g.placeholder("x", {3}, DType::Float64);
  Node* i = g.placeholder("i", {2}, DType::Int64);
  Node* y = g.call("exp", {x});
  g.output({y, g.call("index.Tensor", {y, Arg(std::vector<Node*>{i})})});
  JvpGraph j = build_jvp_graph(g, {"x"});
  std::vector<std::string> names;
  for (const Node* p : j.graph.placeholders()) names.push_back(p->name());
  EXPECT_EQ(names, (std::vector<std::string>{"x", "i", "x_dot"}));
  EXPECT_EQ(j.tangents, (std::vector<std::string>{"x_dot"}));
  EXPECT_EQ(j.num_outputs, 2u);
  EXPECT_EQ(j.graph.outputs().size(), 4u);
  EXPECT_EQ(j.graph.find("exp")->op()->name(), "exp.default");  // primal names kept
}

// ---- functional API -------------------------------------------------------------------------

// f(x, w, i) -> (x @ w * 2, sum(exp(x), 1), argmax(x)) with an int64 placeholder i unused.
Graph multi_output(Shape xs = {3, 4}, Shape ws = {4, 2}) {
  Graph g;
  Node* x = g.placeholder("x", xs, DType::Float64);
  Node* w = g.placeholder("w", ws, DType::Float64);
  g.placeholder("i", {2}, DType::Int64);
  Node* a = g.call("mul.Scalar", {g.call("matmul", {x, w}), 2});
  Node* b = g.call("sum.dim_IntList", {g.call("exp", {x}), std::vector<int64_t>{1}});
  g.output({a, b, g.call("argmax", {x})});
  return g;
}

std::vector<Tensor> multi_output_inputs(std::mt19937_64& rng) {
  return {random_input(U({3, 4}), rng), random_input(U({4, 2}), rng),
          Tensor::from_vector<int64_t>({2}, {0, 1})};
}

TEST(Functional, VjpMatchesFiniteDifferences) {
  Graph g = multi_output();
  std::mt19937_64 rng(3);
  std::vector<Tensor> p = multi_output_inputs(rng);
  Tensor u0 = random_input(U({3, 2}), rng);
  // The second output's cotangent is left undefined (zero); argmax has none.
  VjpResult r = vjp(g, p, {u0, Tensor(), Tensor()});
  ASSERT_EQ(r.grads.size(), 3u);
  EXPECT_FALSE(r.grads[2].defined());
  auto loss = [&](const std::vector<Tensor>& xs) {
    Tensor a = interpret(g, xs)[0];
    double s = 0;
    for (int64_t k = 0; k < a.numel(); ++k) s += a.get_double(k) * u0.get_double(k);
    return s;
  };
  for (size_t i = 0; i < 2; ++i)
    for (int64_t k = 0; k < p[i].numel(); ++k)
      EXPECT_NEAR(r.grads[i].get_double(k), central_difference(loss, p, i, k, 1e-6), 1e-6);
  EXPECT_TRUE(r.outputs[0].equal(interpret(g, p)[0]));
}

TEST(Functional, JacobianMatchesFiniteDifferencesAndJvp) {
  Graph g = multi_output();
  std::mt19937_64 rng(4);
  std::vector<Tensor> p = multi_output_inputs(rng);
  auto jac = jacobian(g, p);
  ASSERT_EQ(jac.size(), 3u);
  EXPECT_EQ(jac[0][0].sizes(), (Shape{3, 2, 3, 4}));
  EXPECT_EQ(jac[1][1].sizes(), (Shape{3, 4, 2}));
  EXPECT_EQ(jac[2][0].sizes(), (Shape{3, 4}));  // argmax: zeros of shape () + (3, 4)
  EXPECT_EQ(jac[2][0].to_vector<double>(), std::vector<double>(12, 0.0));
  EXPECT_FALSE(jac[0][2].defined());
  for (size_t o = 0; o < 2; ++o)
    for (size_t i = 0; i < 2; ++i) {
      int64_t cols = p[i].numel(), rows = jac[o][i].numel() / cols;
      for (int64_t k = 0; k < cols; ++k)
        for (int64_t m = 0; m < rows; ++m) {
          auto f = [&](const std::vector<Tensor>& xs) { return interpret(g, xs)[o].get_double(m); };
          EXPECT_NEAR(jac[o][i].get_double(m * cols + k), central_difference(f, p, i, k, 1e-6),
                      1e-6)
              << "J[" << o << "][" << i << "] (" << m << ", " << k << ")";
        }
    }
  // J v == jvp(v)
  std::vector<Tensor> v = {random_input(U({3, 4}), rng), random_input(U({4, 2}), rng), Tensor()};
  JvpResult jr = jvp(g, p, v);
  for (size_t o = 0; o < 2; ++o) {
    for (int64_t m = 0; m < jr.tangents[o].numel(); ++m) {
      double s = 0;
      for (size_t i = 0; i < 2; ++i)
        for (int64_t k = 0; k < p[i].numel(); ++k)
          s += jac[o][i].get_double(m * p[i].numel() + k) * v[i].get_double(k);
      EXPECT_NEAR(jr.tangents[o].get_double(m), s, 1e-10);
    }
  }
  EXPECT_EQ(jr.tangents[2].to_vector<int64_t>(), std::vector<int64_t>{0});  // argmax: zero
}

// Scalar functions for Hessian checks: each mixes the ops whose backward ops need JVP rules.
struct ScalarFn {
  std::string name;
  std::vector<In> inputs;
  Builder build;  // returns the scalar
};

std::vector<ScalarFn> scalar_fns() {
  auto gelu_mm = [](const char* approx) {
    return [approx](Graph& g, const std::vector<Node*>& x) {
      return g.call("sum", {g.call("gelu", {g.call("matmul", {x[0], x[1]}), approx})});
    };
  };
  return {
      {"example_5_1_gelu", {U({3, 4}), U({4, 2})}, gelu_mm("none")},
      {"gelu_tanh", {U({3, 4}), U({4, 2})}, gelu_mm("tanh")},
      {"softmax_weighted",
       {U({3, 5}), Const(U({3, 5}))},
       [](Graph& g, const std::vector<Node*>& x) {
         Node* s = g.call("softmax.int", {x[0], 1});
         return g.call("sum", {g.call("mul.Tensor", {g.call("mul.Tensor", {s, s}), x[1]})});
       }},
      {"log_softmax_nll",
       {U({4, 3}), Const(U({4, 3}))},
       [](Graph& g, const std::vector<Node*>& x) {
         Node* s = g.call("log_softmax.int", {x[0], -1});
         return g.call("sum", {g.call("mul.Tensor", {g.call("exp", {s}), x[1]})});
       }},
      {"layer_norm_sq",
       {U({3, 4}), U({4}), U({4})},
       [](Graph& g, const std::vector<Node*>& x) {
         Node* y = g.call("layer_norm", {x[0], std::vector<int64_t>{4}, x[1], x[2]});
         return g.call("sum", {g.call("pow.Tensor_Scalar", {y, 3})});
       }},
      {"activations",
       {U({2, 5})},
       [](Graph& g, const std::vector<Node*>& x) {
         Node* a = g.call("mul.Tensor", {g.call("silu", {x[0]}), g.call("sigmoid", {x[0]})});
         Node* b = g.call("mul.Tensor", {a, g.call("tanh", {x[0]})});
         return g.call("mean",
                       {g.call("add.Tensor", {b, g.call("exp", {g.call("relu", {x[0]})})})});
       }},
      {"reductions",
       {U({3, 4}), P({3, 4})},
       [](Graph& g, const std::vector<Node*>& x) {
         Node* v = g.call("var.correction", {x[0], std::vector<int64_t>{1}});
         Node* p = g.call("prod.dim_int", {x[1], 0});
         Node* m = g.call("amax", {g.call("mul.Tensor", {x[0], x[1]}), std::vector<int64_t>{0}});
         Node* s = g.call("add.Tensor", {g.call("sum", {g.call("mul.Tensor", {v, v})}),
                                         g.call("sum", {g.call("mul.Tensor", {p, m})})});
         return g.call("div.Tensor", {s, g.call("sum", {g.call("log", {x[1]})})});
       }},
      {"views_and_indexing",
       {U({4, 3}), U({3, 2})},
       [](Graph& g, const std::vector<Node*>& x) {
         Node* t = g.call("t", {x[0]});
         Node* c = g.call(
             "cat",
             {Arg(std::vector<Node*>{t, g.call("expand", {x[1], std::vector<int64_t>{3, 2}})}), 1});
         Node* sl = g.call("slice.Tensor", {c, 1, 1, 5, 2});
         Node* q = g.call("mul.Tensor", {sl, g.call("sin", {sl})});
         return g.call("sum", {g.call("matmul", {q, g.call("t", {q})})});
       }},
      {"dropout_and_division",
       {U({4, 4}), NZ({4})},
       [](Graph& g, const std::vector<Node*>& x) {
         Node* d = g.call("dropout", {x[0], 0.25, true});
         Node* q = g.call("div.Tensor", {g.call("mul.Tensor", {d, d}), x[1]});
         return g.call("sum", {g.call("maximum", {q, g.call("neg", {q})})});
       }},
  };
}

Fn make_scalar(const ScalarFn& s, std::mt19937_64& rng) {
  Fn f;
  std::vector<Node*> ins;
  for (size_t i = 0; i < s.inputs.size(); ++i) {
    ins.push_back(f.g.placeholder(input_name(i), s.inputs[i].shape, s.inputs[i].dtype));
    f.values.push_back(random_input(s.inputs[i], rng));
  }
  f.g.output({s.build(f.g, ins)});
  return f;
}

std::vector<Tensor> gradient(const Graph& g, const std::vector<Tensor>& x) {
  return vjp(g, x, {Tensor::ones({}, DType::Float64)}).grads;
}

TEST(Functional, HvpMatchesFiniteDifferencesOfGradients) {
  const double h = 1e-5;
  for (const ScalarFn& s : scalar_fns()) {
    SCOPED_TRACE(s.name);
    std::mt19937_64 rng(std::hash<std::string>{}(s.name));
    Fn f = make_scalar(s, rng);
    std::vector<Tensor> v(f.values.size());
    for (size_t i = 0; i < v.size(); ++i) v[i] = random_input(U(s.inputs[i].shape, -1, 1), rng);
    HvpResult r = hvp(f.g, f.values, v);
    EXPECT_NEAR(r.output.item(), interpret(f.g, f.values)[0].item(), 1e-12);
    auto shifted = [&](double t) {
      std::vector<Tensor> xs = f.values;
      for (size_t i = 0; i < xs.size(); ++i) {
        xs[i] = xs[i].clone();
        for (int64_t k = 0; k < xs[i].numel(); ++k)
          xs[i].set_double(k, xs[i].get_double(k) + t * v[i].get_double(k));
      }
      return gradient(f.g, xs);
    };
    std::vector<Tensor> gp = shifted(h), gm = shifted(-h), g0 = gradient(f.g, f.values);
    for (size_t i = 0; i < v.size(); ++i)
      for (int64_t k = 0; k < f.values[i].numel(); ++k) {
        double fd = (gp[i].get_double(k) - gm[i].get_double(k)) / (2 * h);
        EXPECT_NEAR(r.hvp[i].get_double(k), fd, 1e-6 + 1e-5 * std::abs(fd))
            << "input " << i << " [" << k << "]";
        EXPECT_NEAR(r.grads[i].get_double(k), g0[i].get_double(k), 1e-12);
      }
  }
}

TEST(Functional, HessianIsSymmetricAndMatchesFiniteDifferences) {
  const double h = 1e-5;
  for (const ScalarFn& s : scalar_fns()) {
    SCOPED_TRACE(s.name);
    std::mt19937_64 rng(std::hash<std::string>{}(s.name) + 1);
    Fn f = make_scalar(s, rng);
    auto hes = hessian(f.g, f.values);
    size_t n = f.values.size();
    for (size_t a = 0; a < n; ++a)
      for (size_t b = 0; b < n; ++b) {
        int64_t na = f.values[a].numel(), nb = f.values[b].numel();
        ASSERT_EQ(hes[a][b].numel(), na * nb);
        for (int64_t m = 0; m < na; ++m)
          for (int64_t k = 0; k < nb; ++k)
            EXPECT_NEAR(hes[a][b].get_double(m * nb + k), hes[b][a].get_double(k * na + m), 1e-9);
      }
    // Column k of input b: (∇f(x + h e_k) - ∇f(x - h e_k)) / 2h, for a few k.
    for (size_t b = 0; b < n; ++b) {
      if (!s.inputs[b].diff) continue;
      int64_t nb = f.values[b].numel();
      for (int64_t k = 0; k < std::min<int64_t>(nb, 3); ++k) {
        std::vector<Tensor> xp = f.values, xm = f.values;
        xp[b] = xp[b].clone();
        xm[b] = xm[b].clone();
        xp[b].set_double(k, xp[b].get_double(k) + h);
        xm[b].set_double(k, xm[b].get_double(k) - h);
        std::vector<Tensor> gp = gradient(f.g, xp), gm = gradient(f.g, xm);
        for (size_t a = 0; a < n; ++a) {
          if (!gp[a].defined()) continue;
          for (int64_t m = 0; m < gp[a].numel(); ++m) {
            double fd = (gp[a].get_double(m) - gm[a].get_double(m)) / (2 * h);
            EXPECT_NEAR(hes[a][b].get_double(m * nb + k), fd, 1e-6 + 1e-5 * std::abs(fd));
          }
        }
      }
    }
  }
}

TEST(Functional, UndefinedTangentsAreZero) {
  Graph g = multi_output();
  std::mt19937_64 rng(5);
  std::vector<Tensor> p = multi_output_inputs(rng);
  std::vector<Tensor> v = {Tensor(), random_input(U({4, 2}), rng), Tensor()};
  std::vector<Tensor> v0 = {Tensor::zeros({3, 4}, DType::Float64), v[1], Tensor()};
  JvpResult a = jvp(g, p, v), b = jvp(g, p, v0);
  EXPECT_TRUE(a.tangents[0].allclose(b.tangents[0], 0, 1e-15));
  EXPECT_EQ(a.tangents[1].to_vector<double>(), std::vector<double>(3, 0.0));  // exp(x): x has none
}

TEST(Functional, Errors) {
  Graph g = multi_output();
  std::mt19937_64 rng(6);
  std::vector<Tensor> p = multi_output_inputs(rng);
  auto message = [](auto&& fn) {
    try {
      fn();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([&] {
              hvp(g, p, {Tensor(), Tensor(), Tensor()});
            }).find("single one-element floating-point output"),
            std::string::npos);
  EXPECT_NE(message([&] { hessian(g, p); }).find("got 3 output(s)"), std::string::npos);
  EXPECT_NE(message([&] { jvp(g, {p[0]}, {Tensor()}); }).find("expected 3 primals"),
            std::string::npos);
  EXPECT_NE(message([&] { vjp(g, p, {Tensor()}); }).find("expected 3 cotangents"),
            std::string::npos);
}

// ---- second order on the compiled path (Listing 5.5) ------------------------------------------

TEST(DoubleBackward, RejectsWithTheListing55Message) {
  const std::string text =
      "Compiled regions do not support second-order gradients (double backward). Run the "
      "function without compilation to compute higher-order derivatives.";
  EXPECT_EQ(std::string(kDoubleBackwardMessage), text);
  try {
    reject_double_backward();
    FAIL() << "reject_double_backward returned";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), text);
    EXPECT_EQ(e.stage(), "autodiff");
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos);
  }
  BackwardFn bw = rejecting_backward();
  EXPECT_THROW(bw({Tensor::ones({2})}), Error);
  EXPECT_NO_THROW(check_backward_request(1));
  try {
    check_backward_request(2);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), text);
  }
}

// The uncompiled path computes what the message points to: second derivatives of Example 5.1.
TEST(DoubleBackward, UncompiledPathGivesSecondDerivatives) {
  Graph g;
  Node* x = g.placeholder("", {4, 3}, DType::Float64);
  Node* w = g.placeholder("", {3, 2}, DType::Float64);
  g.output({g.call("sum", {g.call("gelu", {g.call("matmul", {x, w})})})});
  std::mt19937_64 rng(8);
  std::vector<Tensor> p = {random_input(U({4, 3}), rng), random_input(U({3, 2}), rng)};
  auto hes = hessian(g, p);
  EXPECT_EQ(hes[1][1].sizes(), (Shape{3, 2, 3, 2}));
  // d²/dW² of Σ gelu(xW): H[(a,j),(b,l)] = δ_jl Σ_i x_ia x_ib gelu''(h_ij)
  Tensor h = interpret(
      [&] {
        Graph m;
        Node* a = m.placeholder("", {4, 3}, DType::Float64);
        Node* b = m.placeholder("", {3, 2}, DType::Float64);
        m.output({m.call("matmul", {a, b})});
        return m;
      }(),
      p)[0];
  const double inv_sqrt_2pi = 0.3989422804014327;
  for (int a = 0; a < 3; ++a)
    for (int j = 0; j < 2; ++j)
      for (int b = 0; b < 3; ++b)
        for (int l = 0; l < 2; ++l) {
          double want = 0;
          if (j == l)
            for (int i = 0; i < 4; ++i) {
              double hv = h.item_as_double({i, j});
              double g2 = inv_sqrt_2pi * std::exp(-0.5 * hv * hv) * (2 - hv * hv);
              want += p[0].item_as_double({i, a}) * p[0].item_as_double({i, b}) * g2;
            }
          EXPECT_NEAR(hes[1][1].item_as_double({a, j, b, l}), want, 1e-12);
        }
}

}  // namespace
