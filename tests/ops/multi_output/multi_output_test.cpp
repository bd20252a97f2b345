// Multi-output nodes (docs/DECISIONS.md item 20, core/graph/multi_output.h): tuple-valued calls
// read by getitem through every layer. FX printouts as torch 1.13 prints them parse and print back;
// bad uses of a tuple are clear errors; interpreter values against hand-computed results (ties,
// NaN, uneven splits); every graph compiled on cpu_cpp bit for bit against the interpreter in the
// compiler's reduction order; gradients (a cotangent on some elements only) and JVPs against
// central finite differences; and the partitioner's saved values through CompiledFunction.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/driver/compiled_function.h"
#include "core/graph/graph.h"
#include "core/graph/multi_output.h"
#include "core/graph/op_registry.h"
#include "core/graph/parser.h"
#include "core/graph/printer.h"
#include "core/graph/verifier.h"
#include "core/functional/functional.h"
#include "core/interpreter/interpreter.h"
#include "tests/support/compiled_check.h"
#include "tests/support/interp_helpers.h"

using namespace stax;
using namespace stax::test;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Tensor mat(const Shape& s, std::vector<double> v, DType t = DType::Float32) {
  return Tensor::from_vector(s, v, t);
}

std::vector<double> values(const Tensor& t) {
  std::vector<double> out;
  for (int64_t k = 0; k < t.numel(); ++k) out.push_back(t.get_double(k));
  return out;
}

void expect_eq(const Tensor& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size())) << what;
  for (size_t k = 0; k < want.size(); ++k) {
    double g = got.get_double(static_cast<int64_t>(k));
    if (std::isnan(want[k]))
      EXPECT_TRUE(std::isnan(g)) << what << "[" << k << "] = " << g;
    else if (std::isinf(want[k]))
      EXPECT_EQ(g, want[k]) << what << "[" << k << "]";
    else
      EXPECT_NEAR(g, want[k], 1e-6 * std::max(1.0, std::abs(want[k]))) << what << "[" << k << "]";
  }
}

// Interprets g and compiles it on cpu_cpp: the compiled outputs equal the interpreter's (in the
// compiler's reduction order) bit for bit. Returns the interpreter's outputs.
std::vector<Tensor> run_both(const Graph& g, const std::vector<Tensor>& in, size_t* fallbacks = nullptr) {
  std::vector<Tensor> want = reference(g, in);
  CompiledGraph cg = cpu_compiler().compile(g);
  std::vector<Tensor> got = cg.run(in);
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size() && i < want.size(); ++i)
    EXPECT_TRUE(bitwise_equal(got[i], want[i])) << "output " << i << "\n" << print_graph(g);
  if (fallbacks) *fallbacks = cg.num_fallbacks();
  return interpret(g, in);
}

// The FX printout of torch 1.13's make_fx for
//   a, b = torch.max(x, 1); c = torch.split(x, 2, 0); d = F.layer_norm(x, (4,))
//   return a, b, c[1], d
const char* kFx = R"(graph():
    %x_1 : [#users=3] = placeholder[target=x_1]
    %max_1 : [#users=2] = call_function[target=torch.ops.aten.max.dim](args = (%x_1, 1), kwargs = {})
    %getitem : [#users=1] = call_function[target=operator.getitem](args = (%max_1, 0), kwargs = {})
    %getitem_1 : [#users=1] = call_function[target=operator.getitem](args = (%max_1, 1), kwargs = {})
    %split : [#users=3] = call_function[target=torch.ops.aten.split.Tensor](args = (%x_1, 2), kwargs = {})
    %getitem_2 : [#users=0] = call_function[target=operator.getitem](args = (%split, 0), kwargs = {})
    %getitem_3 : [#users=1] = call_function[target=operator.getitem](args = (%split, 1), kwargs = {})
    %getitem_4 : [#users=0] = call_function[target=operator.getitem](args = (%split, 2), kwargs = {})
    %native_layer_norm : [#users=3] = call_function[target=torch.ops.aten.native_layer_norm.default](args = (%x_1, [4], None, None, 1e-05), kwargs = {})
    %getitem_5 : [#users=1] = call_function[target=operator.getitem](args = (%native_layer_norm, 0), kwargs = {})
    %getitem_6 : [#users=0] = call_function[target=operator.getitem](args = (%native_layer_norm, 1), kwargs = {})
    %getitem_7 : [#users=0] = call_function[target=operator.getitem](args = (%native_layer_norm, 2), kwargs = {})
    return (getitem, getitem_1, getitem_3, getitem_5)
)";

Graph parse_fx() {
  ParseOptions o;
  o.placeholder_meta["x_1"] = TensorMeta::contiguous({5, 4});
  return parse_graph(kFx, "fx.txt", o);
}

TEST(MultiOutput, FxPrintoutParsesWithTupleMetadata) {
  Graph g = parse_fx();
  verify(g);
  Node* m = g.find("max_1");
  ASSERT_TRUE(m && m->is_tuple());
  ASSERT_EQ(m->tuple_metas().size(), 2u);
  EXPECT_EQ(m->tuple_metas()[0].sizes, Shape({5}));
  EXPECT_EQ(m->tuple_metas()[1].dtype, DType::Int64);
  EXPECT_EQ(g.find("getitem_1")->dtype(), DType::Int64);
  EXPECT_EQ(g.find("split")->tuple_metas().size(), 3u);  // 5 rows in pieces of 2: 2, 2, 1
  EXPECT_EQ(g.find("getitem_4")->shape(), Shape({1, 4}));
  EXPECT_EQ(g.find("getitem_6")->shape(), Shape({5, 1}));  // mean, keepdim shape as torch's
  EXPECT_EQ(g.find("max_1")->num_users(), 2u);
  // Printed back and parsed again: the same text (a tuple prints no shape=, its getitems do).
  std::string text = print_graph(g);
  EXPECT_TRUE(has(text, "%max_1 : [num_users=2] = call_function[target=tensorplay.ops.tp.max.dim]"
                        "(args = (%x_1, 1, False), kwargs = {})"))
      << text;
  EXPECT_TRUE(has(text, "%getitem_1 shape=(5,) dtype=int64 : [num_users=1] = call_function["
                        "target=tensorplay.ops.tp.getitem.default](args = (%max_1, 1), kwargs = {})"))
      << text;
  Graph again = parse_graph(text, "printed.txt");
  EXPECT_EQ(print_graph(again), text);
  // The C++ builder: the same calls.
  Graph b;
  Node* x = b.placeholder("x", {3, 2});
  Node* t = b.call("topk", {x, int64_t{1}});
  b.output({b.call("getitem", {t, int64_t{0}}), b.call("getitem", {t, int64_t{-1}})});
  EXPECT_EQ(b.outputs()[1]->dtype(), DType::Int64);
  EXPECT_EQ(b.outputs()[1]->shape(), Shape({3, 1}));
}

TEST(MultiOutput, BadUsesAreClearErrors) {
  Graph g;
  Node* x = g.placeholder("x", {4, 3});
  Node* m = g.call("max.dim", {x, int64_t{1}});
  std::string e = error_of([&] { g.call("add.Tensor", {m, x}); });
  EXPECT_TRUE(has(e, "argument %max_0 is a tuple of 2 tensors (max.dim returns several)") &&
              has(e, "getitem")) << e;
  e = error_of([&] { g.call("getitem", {m, int64_t{2}}); });
  EXPECT_TRUE(has(e, "tuple index 2 out of range") && has(e, "has 2 elements")) << e;
  e = error_of([&] { g.call("getitem", {x, int64_t{0}}); });
  EXPECT_TRUE(has(e, "%x is a tensor")) << e;
  e = error_of([&] { g.output({m}); });
  EXPECT_TRUE(has(e, "cannot be a graph output")) << e;
  e = error_of([&] { g.call("split_with_sizes", {x, std::vector<int64_t>{1, 2}}); });
  EXPECT_TRUE(has(e, "split sizes add up to 3 but dimension 0 has size 4")) << e;
  e = error_of([&] { g.call("topk", {x, int64_t{4}}); });
  EXPECT_TRUE(has(e, "k (4) is out of range")) << e;
  e = error_of([&] { g.call("kthvalue", {x, int64_t{0}}); });
  EXPECT_TRUE(has(e, "out of range")) << e;
  // The parser names the line: a shape= on a tuple, an unknown element.
  std::string bad = std::string(kFx);
  bad.replace(bad.find("%max_1 :"), 8, "%max_1 shape=(5,) :");
  ParseOptions o;
  o.placeholder_meta["x_1"] = TensorMeta::contiguous({5, 4});
  e = error_of([&] { parse_graph(bad, "fx.txt", o); });
  EXPECT_TRUE(has(e, "fx.txt:3:") && has(e, "is a tuple of 2 tensors")) << e;
}

TEST(MultiOutput, MaxMinDimTiesNaNAndKeepdim) {
  // Ties: the first index, as torch's CPU kernel; NaN wins and gives its index.
  Graph g;
  Node* x = g.placeholder("x", {3, 4});
  Node* mx = g.call("max.dim", {x, int64_t{1}});
  Node* mn = g.call("min.dim", {x, int64_t{0}, true});
  g.output({g.call("getitem", {mx, int64_t{0}}), g.call("getitem", {mx, int64_t{1}}),
            g.call("getitem", {mn, int64_t{0}}), g.call("getitem", {mn, int64_t{1}})});
  Tensor in = mat({3, 4}, {1, 5, 5, 2, -3, kNaN, 0, 9, 4, 4, 4, 4});
  size_t fb = 0;
  auto r = run_both(g, {in}, &fb);
  expect_eq(r[0], {5, kNaN, 4}, "max values");
  expect_eq(r[1], {1, 1, 0}, "max indices");
  EXPECT_EQ(r[1].dtype(), DType::Int64);
  expect_eq(r[2], {-3, kNaN, 0, 2}, "min values");
  expect_eq(r[3], {1, 1, 1, 0}, "min indices");
  EXPECT_EQ(r[2].sizes(), Shape({1, 4}));
  EXPECT_EQ(fb, 0u) << "max.dim / min.dim compile (argmax + gather), no fallback";
}

TEST(MultiOutput, SortTopkKthvalueMedian) {
  Graph g;
  Node* x = g.placeholder("x", {2, 5});
  Node* s = g.call("sort", {x, int64_t{1}, true});
  Node* t = g.call("topk", {x, int64_t{2}, int64_t{1}, false});
  Node* k = g.call("kthvalue", {x, int64_t{2}});
  Node* m = g.call("median.dim", {x, int64_t{1}, true});
  std::vector<Node*> outs;
  for (Node* n : {s, t, k, m})
    for (int64_t i : {0, 1}) outs.push_back(g.call("getitem", {n, i}));
  g.output(outs);
  Tensor in = mat({2, 5}, {3, 1, 4, 1, 5, 9, 2, 6, 5, 3});
  auto r = run_both(g, {in});
  expect_eq(r[0], {5, 4, 3, 1, 1, 9, 6, 5, 3, 2}, "sort values (descending)");
  expect_eq(r[1], {4, 2, 0, 1, 3, 0, 2, 3, 4, 1}, "sort indices (stable: the tie in order)");
  expect_eq(r[2], {1, 1, 2, 3}, "topk smallest values");
  expect_eq(r[3], {1, 3, 1, 4}, "topk smallest indices");
  expect_eq(r[4], {1, 3}, "kthvalue k=2");
  expect_eq(r[5], {3, 4}, "kthvalue indices");
  expect_eq(r[6], {3, 5}, "median");
  expect_eq(r[7], {0, 3}, "median indices");
  EXPECT_EQ(r[6].sizes(), Shape({2, 1}));
}

TEST(MultiOutput, SplitChunkUnbindTensorSplitAreViews) {
  Graph g;
  Node* x = g.placeholder("x", {5, 2});
  Node* sp = g.call("split.Tensor", {x, int64_t{2}});
  Node* ws = g.call("split_with_sizes", {x, std::vector<int64_t>{1, 4}});
  Node* ch = g.call("chunk", {x, int64_t{2}, int64_t{1}});
  Node* ub = g.call("unbind.int", {x, int64_t{1}});
  Node* ts = g.call("tensor_split.sections", {x, int64_t{3}});
  Node* ti = g.call("tensor_split.indices", {x, std::vector<int64_t>{1, -1, 9}});
  EXPECT_EQ(ts->tuple_metas().size(), 3u);
  EXPECT_EQ(ts->tuple_metas()[0].sizes, Shape({2, 2}));  // 5 = 2 + 2 + 1
  EXPECT_EQ(ti->tuple_metas().size(), 4u);
  EXPECT_EQ(ti->tuple_metas()[3].sizes, Shape({0, 2}));
  g.output({g.call("getitem", {sp, int64_t{2}}), g.call("getitem", {ws, int64_t{1}}),
            g.call("getitem", {ch, int64_t{1}}), g.call("getitem", {ub, int64_t{0}}),
            g.call("getitem", {ts, int64_t{2}}), g.call("getitem", {ti, int64_t{1}})});
  Tensor in = mat({5, 2}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  size_t fb = 0;
  auto r = run_both(g, {in}, &fb);
  expect_eq(r[0], {8, 9}, "split last piece");
  expect_eq(r[1], {2, 3, 4, 5, 6, 7, 8, 9}, "split_with_sizes");
  expect_eq(r[2], {1, 3, 5, 7, 9}, "chunk along dim 1");
  expect_eq(r[3], {0, 2, 4, 6, 8}, "unbind");
  expect_eq(r[4], {8, 9}, "tensor_split sections");
  expect_eq(r[5], {2, 3, 4, 5, 6, 7}, "tensor_split indices [1, -1)");
  EXPECT_EQ(fb, 0u);
}

TEST(MultiOutput, StatisticsAndNorms) {
  Graph g;
  Node* x = g.placeholder("x", {2, 3});
  Node* vm = g.call("var_mean.correction", {x, std::vector<int64_t>{1}}, {{"correction", int64_t{0}}});
  Node* sm = g.call("std_mean.dim", {x, std::vector<int64_t>{1}, true, true});
  Node* mm = g.call("aminmax", {x}, {{"dim", int64_t{0}}});
  Node* ln = g.call("native_layer_norm", {x, std::vector<int64_t>{3}, Arg(), Arg(), 1e-5});
  std::vector<Node*> outs;
  for (Node* n : {vm, sm, mm}) outs.push_back(g.call("getitem", {n, int64_t{0}}));
  for (Node* n : {vm, sm, mm}) outs.push_back(g.call("getitem", {n, int64_t{1}}));
  for (int64_t i : {0, 1, 2}) outs.push_back(g.call("getitem", {ln, i}));
  g.output(outs);
  Tensor in = mat({2, 3}, {1, 2, 6, -1, 0, 4});
  auto r = run_both(g, {in});
  // row 0: mean 3, biased var (4+1+9)/3, unbiased std sqrt(7); row 1: mean 1, var (4+1+9)/3
  expect_eq(r[0], {14.0 / 3, 14.0 / 3}, "var (correction 0)");
  expect_eq(r[1], {std::sqrt(7.0), std::sqrt(7.0)}, "std (unbiased)");
  expect_eq(r[2], {-1, 0, 4}, "aminmax min");
  expect_eq(r[3], {3, 1}, "var_mean mean");
  expect_eq(r[4], {3, 1}, "std_mean mean");
  expect_eq(r[5], {1, 2, 6}, "aminmax max");
  double rs = 1 / std::sqrt(14.0 / 3 + 1e-5);
  expect_eq(r[6], {-2 * rs, -1 * rs, 3 * rs, -2 * rs, -1 * rs, 3 * rs}, "layer_norm out");
  expect_eq(r[7], {3, 1}, "layer_norm mean");
  EXPECT_EQ(r[7].sizes(), Shape({2, 1}));
  expect_eq(r[8], {rs, rs}, "layer_norm rstd");
}

// Central finite differences of sum(u_i * f_i(x)) against vjp(), and of f(x + h v) against jvp().
void check_derivatives(const Graph& g, const Tensor& x, const std::vector<Tensor>& cot) {
  std::vector<Tensor> base = interpret(g, {x});
  auto loss = [&](const Tensor& xs) {
    std::vector<Tensor> o = interpret(g, {xs});
    double l = 0;
    for (size_t i = 0; i < o.size(); ++i)
      if (cot[i].defined())
        for (int64_t k = 0; k < o[i].numel(); ++k) l += cot[i].get_double(k) * o[i].get_double(k);
    return l;
  };
  VjpResult v = vjp(g, {x}, cot);
  const double h = 1e-6;
  for (int64_t k = 0; k < x.numel(); ++k) {
    Tensor p = x.clone(), m = x.clone();
    p.set_double(k, x.get_double(k) + h);
    m.set_double(k, x.get_double(k) - h);
    double fd = (loss(p) - loss(m)) / (2 * h);
    EXPECT_NEAR(v.grads[0].get_double(k), fd, 1e-6 * (1 + std::abs(fd))) << "d/dx[" << k << "]\n"
                                                                         << print_graph(g);
  }
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  Tensor dir = x.clone();
  for (int64_t k = 0; k < x.numel(); ++k) dir.set_double(k, u(rng));
  JvpResult j = jvp(g, {x}, {dir});
  Tensor p = x.clone(), m = x.clone();
  for (int64_t k = 0; k < x.numel(); ++k) {
    p.set_double(k, x.get_double(k) + h * dir.get_double(k));
    m.set_double(k, x.get_double(k) - h * dir.get_double(k));
  }
  std::vector<Tensor> op = interpret(g, {p}), om = interpret(g, {m});
  for (size_t i = 0; i < base.size(); ++i) {
    if (!is_floating(base[i].dtype())) continue;
    for (int64_t k = 0; k < base[i].numel(); ++k) {
      double fd = (op[i].get_double(k) - om[i].get_double(k)) / (2 * h);
      EXPECT_NEAR(j.tangents[i].get_double(k), fd, 1e-6 * (1 + std::abs(fd)))
          << "tangent of output " << i << "[" << k << "]";
    }
  }
}

TEST(MultiOutput, GradientsAndTangentsMatchFiniteDifferences) {
  Graph g;
  Node* x = g.placeholder("x", TensorMeta::contiguous({3, 4}, DType::Float64));
  Node* mx = g.call("max.dim", {x, int64_t{1}});
  Node* sp = g.call("split.Tensor", {x, int64_t{3}, int64_t{1}});
  Node* ln = g.call("native_layer_norm", {x, std::vector<int64_t>{4}, Arg(), Arg(), 1e-5});
  Node* so = g.call("sort", {x, int64_t{0}});
  g.output({g.call("getitem", {mx, int64_t{0}}), g.call("getitem", {mx, int64_t{1}}),
            g.call("getitem", {sp, int64_t{0}}), g.call("getitem", {sp, int64_t{1}}),
            g.call("getitem", {ln, int64_t{0}}), g.call("getitem", {so, int64_t{0}})});
  Tensor in = mat({3, 4}, {0.3, -1.2, 2.5, 0.7, 1.1, 0.2, -0.4, 1.9, -2.0, 0.8, 0.5, -0.1},
                  DType::Float64);
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(-1, 1);
  auto rnd = [&](const Shape& s) {
    Tensor t = Tensor::zeros(s, DType::Float64);
    for (int64_t k = 0; k < t.numel(); ++k) t.set_double(k, u(rng));
    return t;
  };
  // Every float element gets a cotangent ...
  check_derivatives(g, in, {rnd({3}), Tensor(), rnd({3, 3}), rnd({3, 1}), rnd({3, 4}), rnd({3, 4})});
  // ... or only some: the absent ones count as zero.
  check_derivatives(g, in, {Tensor(), Tensor(), Tensor(), rnd({3, 1}), Tensor(), Tensor()});
}

TEST(MultiOutput, MaxDimGradientGoesToTheSelectedElementOnly) {
  // With a tie torch's max.dim gives the whole gradient to the returned index (amax would split).
  Graph g;
  Node* x = g.placeholder("x", TensorMeta::contiguous({1, 3}, DType::Float64));
  g.output({g.call("getitem", {g.call("max.dim", {x, int64_t{1}}), int64_t{0}})});
  VjpResult v = vjp(g, {mat({1, 3}, {2, 2, 1}, DType::Float64)}, {Tensor::ones({1}, DType::Float64)});
  EXPECT_EQ(values(v.grads[0]), (std::vector<double>{1, 0, 0}));
}

TEST(MultiOutput, CompiledTrainingStepSavesTensorsOnly) {
  // Forward + backward through the partitioner, compiled on cpu_cpp, against the joint graph in
  // the interpreter.
  Graph g;
  Node* x = g.placeholder("x", {4, 6});
  Node* w = g.placeholder("w", {6});
  Node* ln = g.call("native_layer_norm", {x, std::vector<int64_t>{6}, w, Arg(), 1e-5});
  Node* y = g.call("getitem", {ln, int64_t{0}});
  Node* parts = g.call("chunk", {y, int64_t{2}, int64_t{1}});
  Node* a = g.call("getitem", {parts, int64_t{0}});
  Node* b = g.call("getitem", {parts, int64_t{1}});
  Node* mx = g.call("max.dim", {g.call("mul.Tensor", {a, b}), int64_t{1}});
  g.output({g.call("sum.default", {g.call("getitem", {mx, int64_t{0}})})});
  CompiledFunction f(g, {"x", "w"}, cpu_compiler());
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> u(-1, 1);
  Tensor xs = Tensor::zeros({4, 6}), ws = Tensor::zeros({6});
  for (int64_t k = 0; k < xs.numel(); ++k) xs.set_double(k, u(rng));
  for (int64_t k = 0; k < ws.numel(); ++k) ws.set_double(k, 1 + u(rng));
  ForwardResult fr = f.forward({xs, ws});
  std::vector<Tensor> grads = f.backward(*fr.ctx);
  std::vector<Tensor> ref = f.reference({xs, ws});
  ASSERT_EQ(ref.size(), 3u);
  EXPECT_NEAR(fr.outputs[0].item(), ref[0].item(), 1e-5);
  for (size_t i = 0; i < 2; ++i)
    for (int64_t k = 0; k < grads[i].numel(); ++k)
      EXPECT_NEAR(grads[i].get_double(k), ref[1 + i].get_double(k), 1e-5) << i << "[" << k << "]";
  for (const Node* n : f.partition().forward.nodes()) EXPECT_FALSE(n->is_tuple()) << n->name();
  EXPECT_GT(f.stats().num_saved, 0u);
}

TEST(MultiOutput, PoolingIndicesFrexpLossForward) {
  Graph g;
  Node* x = g.placeholder("x", {1, 1, 3, 4});
  Node* mp = g.call("max_pool2d_with_indices", {x, std::vector<int64_t>{2, 2}, std::vector<int64_t>{1, 2},
                                                std::vector<int64_t>{0, 1}, std::vector<int64_t>{1, 1}});
  Node* amp = g.call("adaptive_max_pool2d", {x, std::vector<int64_t>{2, 3}});
  Node* v = g.placeholder("v", {7});
  Node* fr = g.call("frexp.Tensor", {v});
  Node* lp = g.placeholder("lp", {3, 4});
  Node* t = g.placeholder("t", TensorMeta::contiguous({3}, DType::Int64));
  Node* w = g.placeholder("w", {4});
  Node* nl = g.call("nll_loss_forward", {lp, t, w, int64_t{1}, int64_t{-100}});
  Node* ls = g.call("log_sigmoid_forward", {v});
  std::vector<Node*> outs;
  for (Node* n : {mp, amp, fr, nl, ls})
    for (int64_t i : {0, 1}) outs.push_back(g.call("getitem", {n, i}));
  g.output(outs);
  //  x = 0 7 2 7 / 5 1 9 0 / 3 8 8 4
  Tensor xs = mat({1, 1, 3, 4}, {0, 7, 2, 7, 5, 1, 9, 0, 3, 8, 8, 4});
  Tensor vs = mat({7}, {0.75, -3, 0, 1e-40, 8, -std::numeric_limits<double>::infinity(), kNaN});
  Tensor lps = mat({3, 4}, {-1, -2, -3, -4, -5, -6, -7, -8, -9, -10, -11, -12});
  Tensor ts = mat({3}, {2, -100, 0}, DType::Int64);
  Tensor ws = mat({4}, {0.5, 1, 2, 4});
  auto r = run_both(g, {xs, vs, lps, ts, ws});
  // windows 2x2, stride (1, 2), padding (0, 1): columns [-1, 0], [1, 2], [3, 4]; the first max.
  expect_eq(r[0], {5, 9, 7, 5, 9, 4}, "max_pool2d values");
  expect_eq(r[1], {4, 6, 3, 4, 6, 11}, "max_pool2d indices (flat in H*W)");
  // adaptive 3x4 -> 2x3: rows [0, 2), [1, 3); columns [0, 2), [1, 3), [2, 4)
  expect_eq(r[2], {7, 9, 9, 8, 9, 9}, "adaptive values");
  expect_eq(r[3], {1, 6, 6, 9, 6, 6}, "adaptive indices");
  expect_eq(r[4], {0.75, -0.75, 0, std::ldexp(vs.get_double(3), 132), 0.5,
                   -std::numeric_limits<double>::infinity(), kNaN}, "frexp mantissa");
  expect_eq(r[5], {0, 2, 0, -132, 4, 0, 0}, "frexp exponent");
  EXPECT_EQ(r[5].dtype(), DType::Int32);
  // nll: mean of -w[t] * lp over the targets not ignored: (2 * 3 + 0.5 * 9) / 2.5
  expect_eq(r[6], {(2 * 3 + 0.5 * 9) / 2.5}, "nll_loss_forward output");
  expect_eq(r[7], {2.5}, "nll_loss_forward total_weight");
  std::vector<double> want, buf;
  for (double e : values(vs)) {
    buf.push_back(std::exp(-std::abs(e)));
    want.push_back(std::min(e, 0.0) - std::log1p(std::exp(-std::abs(e))));
  }
  expect_eq(r[8], want, "log_sigmoid");
  expect_eq(r[9], buf, "log_sigmoid buffer");
}

TEST(MultiOutput, AdaptiveMaxPoolOfAnEmptyOutputSize) {
  // torch returns empty values and indices for an output size of 0 (compiled and interpreted)
  Graph g;
  Node* x = g.placeholder("x", {2, 3, 1, 3}, DType::Float16);
  Node* amp = g.call("adaptive_max_pool2d", {x, std::vector<int64_t>{0, 3}});
  g.output({g.call("getitem", {amp, int64_t{0}}), g.call("getitem", {amp, int64_t{1}})});
  auto r = run_both(g, {Tensor::zeros({2, 3, 1, 3}, DType::Float16)});
  EXPECT_EQ(r[0].sizes(), (Shape{2, 3, 0, 3}));
  EXPECT_EQ(r[0].dtype(), DType::Float16);
  EXPECT_EQ(r[1].sizes(), (Shape{2, 3, 0, 3}));
  EXPECT_EQ(r[1].dtype(), DType::Int64);
}

TEST(MultiOutput, CummaxCumminTiesAndNaN) {
  // torch's loop: `isnan(x) || x >= max` (cummax) keeps the later of equal values and any NaN.
  Graph g;
  Node* x = g.placeholder("x", {2, 6});
  Node* mx = g.call("cummax", {x, int64_t{1}});
  Node* mn = g.call("cummin", {x, int64_t{-1}});
  Node* xi = g.placeholder("xi", TensorMeta::contiguous({5}, DType::Int64));
  Node* mi = g.call("cummax", {xi, int64_t{0}});
  g.output({g.call("getitem", {mx, int64_t{0}}), g.call("getitem", {mx, int64_t{1}}),
            g.call("getitem", {mn, int64_t{0}}), g.call("getitem", {mn, int64_t{1}}),
            g.call("getitem", {mi, int64_t{0}}), g.call("getitem", {mi, int64_t{1}})});
  Tensor in = mat({2, 6}, {1, 3, 3, 2, 5, 5, 2, kNaN, 7, kNaN, 1, 0});
  Tensor ii = mat({5}, {-4, -9, -4, 3, 3}, DType::Int64);
  size_t fb = 0;
  auto r = run_both(g, {in, ii}, &fb);
  expect_eq(r[0], {1, 3, 3, 3, 5, 5, 2, kNaN, kNaN, kNaN, kNaN, kNaN}, "cummax values");
  expect_eq(r[1], {0, 1, 2, 2, 4, 5, 0, 1, 1, 3, 3, 3}, "cummax indices");
  expect_eq(r[2], {1, 1, 1, 1, 1, 1, 2, kNaN, kNaN, kNaN, kNaN, kNaN}, "cummin values");
  expect_eq(r[3], {0, 0, 0, 0, 0, 0, 0, 1, 1, 3, 3, 3}, "cummin indices");
  expect_eq(r[4], {-4, -4, -4, 3, 3}, "cummax int64 values");
  expect_eq(r[5], {0, 0, 2, 3, 4}, "cummax int64 indices");
  EXPECT_EQ(fb, 0u) << "a scan of pointwise selects compiles";
}

TEST(MultiOutput, ModeSmallestOfTheMostFrequentAndItsLastIndex) {
  Graph g;
  Node* x = g.placeholder("x", {3, 5});
  Node* m = g.call("mode", {x});
  Node* k = g.call("mode", {x, int64_t{0}, true});
  g.output({g.call("getitem", {m, int64_t{0}}), g.call("getitem", {m, int64_t{1}}),
            g.call("getitem", {k, int64_t{0}}), g.call("getitem", {k, int64_t{1}})});
  Tensor in = mat({3, 5}, {1, 2, 2, 1, 3, 5, 4, 4, 5, 5, 0, 1, 2, 3, 4});
  auto r = run_both(g, {in});
  expect_eq(r[0], {1, 5, 0}, "mode values (torch: 1, 5, 0)");
  expect_eq(r[1], {3, 4, 0}, "mode indices (torch: 3, 4, 0)");
  expect_eq(r[2], {0, 1, 2, 1, 3}, "mode over dim 0");
  expect_eq(r[3], {2, 2, 2, 0, 0}, "mode indices over dim 0");
  EXPECT_EQ(r[2].sizes(), Shape({1, 5}));
}

TEST(MultiOutput, LogSigmoidGradientIsOneMinusSigmoidAtZeroToo) {
  Graph g;
  Node* x = g.placeholder("x", TensorMeta::contiguous({3}, DType::Float64));
  g.output({g.call("getitem", {g.call("log_sigmoid_forward", {x}), int64_t{0}})});
  Tensor in = mat({3}, {0, -2, 3}, DType::Float64);
  VjpResult v = vjp(g, {in}, {Tensor::ones({3}, DType::Float64)});
  for (int64_t k = 0; k < 3; ++k) {
    double xv = in.get_double(k);
    EXPECT_NEAR(v.grads[0].get_double(k), 1 - 1 / (1 + std::exp(-xv)), 1e-15) << xv;
  }
}

TEST(MultiOutput, ExpansionTableCoversEveryMultiOutputOp) {
  for (const OpDef* op : default_registry().all()) {
    if (op->multi_output()) {
      EXPECT_NE(default_expansions().find(op->name()), nullptr) << op->name();
    }
  }
}

}  // namespace
