// Gradient checks of every VJP rule (core/autodiff/vjp_rules_*.cpp) against central finite
// differences in float64.
//
// For each case f(x...) (one op, sometimes with a view or a non-differentiated input around it)
// the checker builds L = sum(f(x...) * c) with a random cotangent c, builds the joint graph with
// respect to every differentiated input, runs it on the reference interpreter and compares each
// gradient with (L(x + h e_k) - L(x - h e_k)) / 2h for up to 16 coordinates k per input.
//
// Tolerance: |analytic - fd| <= atol + rtol * |fd| with h = 1e-6, atol = 1e-6, rtol = 1e-5 unless
// a case says otherwise. In float64 the central difference's truncation error is O(h^2 f''') ~
// 1e-12 and its rounding error ~ eps |L| / h ~ 1e-9 for |L| ~ 10, so these bounds leave room for
// the reductions' different summation orders while still catching any wrong formula (a wrong
// factor or a missing term is off by O(1)). Inputs avoid kinks (abs, relu at 0; clamp bounds)
// and singularities (log, sqrt, reciprocal at 0; tan's poles) by their ranges.
//
// Cases whose joint graph needs an op the interpreter has no kernel for yet are skipped with a
// message naming that op.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>

#include "core/autodiff/joint_graph.h"
#include "core/graph/op_registry.h"
#include "core/tensor/npy.h"
#include "core/support/error.h"
#include "tests/autodiff/pending_gradient_checks.h"
#include "tests/autodiff/autodiff_cases.h"
#include "tests/support/torch_python.h"

using namespace stax;
using namespace stax::testing;

namespace {

// The function under test, with L = sum(f(x) * cot) as its single output.
struct Built {
  Graph g;
  std::vector<std::string> wrt;
};

Built build(const Case& c) {
  Built b;
  std::vector<Node*> ins;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    ins.push_back(b.g.placeholder(input_name(i), c.inputs[i].shape, c.inputs[i].dtype));
    if (c.inputs[i].diff && is_floating(c.inputs[i].dtype)) b.wrt.push_back(input_name(i));
  }
  Node* out = c.build(b.g, ins);
  Node* cot = b.g.placeholder("cot", TensorMeta::contiguous(out->shape(), out->dtype()));
  b.g.output({b.g.call("sum", {b.g.call("mul.Tensor", {out, cot})})});
  return b;
}

// Compares the joint graph's gradients with central differences; returns one line per
// coordinate out of tolerance (empty: the rule passes). Sets *skip when a kernel is missing.
std::vector<std::string> gradient_mismatches(const Case& c, const VjpTable& rules,
                                             std::string* skip) {
  Built b = build(c);
  JointGraph j = build_joint_graph(b.g, b.wrt, rules);
  std::string missing = missing_kernel(j.graph);
  if (!missing.empty()) {
    *skip = "the interpreter has no kernel for " + missing + " yet";
    return {};
  }
  std::mt19937_64 rng(std::hash<std::string>{}(c.name));
  std::vector<Tensor> values;
  for (const In& in : c.inputs) values.push_back(random_input(in, rng));
  Node* loss = b.g.outputs()[0];
  const Node* out = loss->input(0)->input(0);
  Tensor cot = random_input(U(out->shape(), -1, 1), rng);

  auto loss_of = [&](const std::vector<Tensor>& xs) {
    std::vector<Tensor> all = xs;
    all.push_back(cot);
    return interpret(b.g, all)[0].item();
  };
  std::vector<Tensor> joint_in = values;
  joint_in.push_back(cot);
  joint_in.push_back(Tensor::ones({}, loss->dtype()));
  std::vector<Tensor> r = interpret(j.graph, joint_in);
  std::vector<std::string> bad;
  if (r.size() != 1 + b.wrt.size()) return {"wrong number of joint-graph outputs"};
  double l = loss_of(values);
  if (std::abs(r[0].item() - l) > 1e-12 * (1 + std::abs(l)))
    bad.push_back("forward value " + std::to_string(r[0].item()) + " vs " + std::to_string(l));

  for (size_t w = 0; w < b.wrt.size(); ++w) {
    size_t i = static_cast<size_t>(std::stoi(b.wrt[w].substr(2)));
    const Tensor& grad = r[1 + w];
    if (grad.sizes() != values[i].sizes() || grad.dtype() != values[i].dtype()) {
      bad.push_back(b.wrt[w] + ": gradient has shape " + shape_str(grad.sizes()));
      continue;
    }
    int64_t n = values[i].numel();
    std::vector<int64_t> coords;
    for (int64_t k = 0; k < n; ++k) coords.push_back(k);
    if (n > 16) {
      std::shuffle(coords.begin(), coords.end(), rng);
      coords.resize(16);
    }
    for (int64_t k : coords) {
      double fd = central_difference(loss_of, values, i, k, c.h);
      double an = grad.get_double(k);
      if (!(std::abs(an - fd) <= c.atol + c.rtol * std::abs(fd)))
        bad.push_back("d/d" + b.wrt[w] + "[" + std::to_string(k) + "]: rule " + std::to_string(an) +
                      ", finite difference " + std::to_string(fd));
    }
  }
  return bad;
}

class Vjp : public ::testing::TestWithParam<Case> {};

TEST_P(Vjp, MatchesFiniteDifferences) {
  std::string skip;
  std::vector<std::string> bad = gradient_mismatches(GetParam(), default_vjp_table(), &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  for (const auto& line : bad) ADD_FAILURE() << GetParam().name << ": " << line;
}

// The checker itself: a wrong rule (exp's gradient without the factor y) must be caught.
TEST(VjpChecker, CatchesAWrongRule) {
  VjpTable wrong;
  wrong.add("exp.default", [](VjpContext& c) { c.give("self", c.grad()); });
  for (const char* op : {"mul.Tensor", "sum.default"}) wrong.add(op, *default_vjp_table().find(op));
  Case c{"wrong_exp", {U({3, 2})}, op1("exp")};
  std::string skip;
  EXPECT_FALSE(gradient_mismatches(c, wrong, &skip).empty());
  EXPECT_TRUE(gradient_mismatches(c, default_vjp_table(), &skip).empty());
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string s = info.param.name;
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Rules, Vjp, ::testing::ValuesIn(all_cases()), case_name);

// Every rule of the table is exercised by at least one case above.
TEST(VjpCoverage, EveryRuleHasAGradientCheck) {
  std::set<std::string> used;
  for (const Case& c : all_cases()) {
    Built b = build(c);
    for (const Node* n : b.g.nodes())
      if (n->is_call()) used.insert(n->op()->name());
  }
  const auto& pending = test::rules_pending_a_gradient_check();
  const auto& complex_checked = test::complex_rules_checked_in_complex_fft_test();
  const auto& linalg_checked = test::linalg_rules_checked_in_linalg_test();
  for (const auto& name : default_vjp_table().names())
    EXPECT_TRUE(used.count(name) || pending.count(name) || complex_checked.count(name) ||
                linalg_checked.count(name))
        << "no gradient check exercises the VJP rule of " << name;
  for (const auto& name : pending)
    EXPECT_FALSE(used.count(name)) << name << " is exercised now: remove it from pending_gradient_checks.h";
}

// Every differentiable op of the registry either has a rule or is known to lack one.
TEST(VjpCoverage, DifferentiableOpsHaveRules) {
  const std::set<std::string> without_rule = {
      "where.Scalar",        // no tensor input but the (bool) condition: never on a grad path
  };
  for (const OpDef* op : default_registry().all()) {
    if (!op->differentiable || op->category == OpCategory::Creation) continue;
    if (op->category == OpCategory::Random && op->name() != "dropout.default") continue;
    if (without_rule.count(op->name())) continue;
    // Ops returning several tensors, and getitem, are differentiated through their expansion into
    // single-output ops (core/graph/multi_output.h; tests/multi_output_test.cpp checks both).
    if (op->multi_output() || op->name() == "getitem.default") continue;
    EXPECT_TRUE(default_vjp_table().find(op->name())) << op->name() << " has no VJP rule";
  }
}

TEST(VjpTies, AmaxSharesTheGradientEvenlyAmongTies) {
  Graph g;
  Node* x = g.placeholder("x", {2, 3}, DType::Float64);
  g.output({g.call("amax", {x, L({1})})});
  JointGraph j = build_joint_graph(g, {"x"});
  Tensor xv = Tensor::from_vector<double>({2, 3}, {1, 3, 3, 5, 5, 5});
  Tensor t = Tensor::from_vector<double>({2}, {6, 3});
  std::vector<Tensor> r = interpret(j.graph, {xv, t});
  EXPECT_EQ(r[1].to_vector<double>(), (std::vector<double>{0, 3, 3, 1, 1, 1}));
}

TEST(VjpTies, MaximumSplitsTiesInHalf) {
  Graph g;
  Node* a = g.placeholder("a", {3}, DType::Float64);
  Node* b = g.placeholder("b", {3}, DType::Float64);
  g.output({g.call("maximum", {a, b})});
  JointGraph j = build_joint_graph(g, {"a", "b"});
  Tensor av = Tensor::from_vector<double>({3}, {1, 2, 3});
  Tensor bv = Tensor::from_vector<double>({3}, {0, 2, 4});
  Tensor t = Tensor::from_vector<double>({3}, {1, 1, 1});
  std::vector<Tensor> r = interpret(j.graph, {av, bv, t});
  EXPECT_EQ(r[1].to_vector<double>(), (std::vector<double>{1, 0.5, 0}));
  EXPECT_EQ(r[2].to_vector<double>(), (std::vector<double>{0, 0.5, 1}));
}

TEST(VjpDtypes, GradientsHaveTheInputsDtype) {
  Graph g;
  Node* a = g.placeholder("a", {2, 3}, DType::Float32);
  Node* b = g.placeholder("b", {3}, DType::Float64);
  Node* y = g.call("mul.Tensor", {a, b});  // promotes to float64
  g.output({g.call("sum", {y})});
  JointGraph j = build_joint_graph(g, {"a", "b"});
  std::vector<Node*> outs = j.graph.outputs();
  EXPECT_EQ(outs[1]->dtype(), DType::Float32);
  EXPECT_EQ(outs[1]->shape(), (Shape{2, 3}));
  EXPECT_EQ(outs[2]->dtype(), DType::Float64);
  EXPECT_EQ(outs[2]->shape(), (Shape{3}));
}

// Against PyTorch's autograd when it is installed (it is not in the default environment).
TEST(VjpAgainstTorch, Example51) {
  if (!test::torch_importable())
    GTEST_SKIP() << "torch is not installed; the finite-difference checks above stand in for it";
  std::string dir = ::testing::TempDir();
  std::mt19937_64 rng(7);
  Tensor x = random_input(U({4, 6}), rng), w = random_input(U({6, 3}), rng);
  save_npy(dir + "/ad_x.npy", x);
  save_npy(dir + "/ad_w.npy", w);
  std::ofstream(dir + "/ad_torch.py")
      << "import numpy as np, torch\n"
      << "x = torch.from_numpy(np.load('" << dir << "/ad_x.npy'))\n"
      << "w = torch.from_numpy(np.load('" << dir << "/ad_w.npy')).requires_grad_()\n"
      << "torch.nn.functional.gelu(x @ w).sum().backward()\n"
      << "np.save('" << dir << "/ad_gw.npy', w.grad.numpy())\n";
  ASSERT_EQ(std::system((test::torch_python() + " " + dir + "/ad_torch.py").c_str()), 0);
  Graph g;
  Node* xp = g.placeholder("x", {4, 6}, DType::Float64);
  Node* wp = g.placeholder("w", {6, 3}, DType::Float64);
  g.output({g.call("sum", {g.call("gelu", {g.call("matmul", {xp, wp})})})});
  JointGraph j = build_joint_graph(g, {"w"});
  std::vector<Tensor> r = interpret(j.graph, {x, w, Tensor::ones({}, DType::Float64)});
  EXPECT_TRUE(r[1].allclose(load_npy(dir + "/ad_gw.npy"), 1e-10, 1e-12));
}

}  // namespace
