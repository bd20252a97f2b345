// The model ops of issue 14 part C (core/graph/ops/model_ops.cpp): schemas, shape / dtype
// inference and bad-input errors; interpreter values against hand-computed (torch's element
// formulas in double) or NumPy results, NaN / ±inf / ties / empty dims included; and every case
// compiled on cpu_cpp, bit for bit against the interpreter in the compiler's reduction order, with
// the ops that have no loop-IR lowering (cumsum, cumprod, argsort, index_add, scatter_reduce,
// fmod, bitwise ops) counted as fallbacks. Gradients (VJP) and JVPs of these ops are checked
// against finite differences by autodiff_vjp_test / autodiff_functional_test (cases in
// tests/model_op_cases.h).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "core/autodiff/joint_graph.h"
#include "core/graph/graph.h"
#include "core/graph/op_registry.h"
#include "core/graph/printer.h"
#include "core/interpreter/interpreter.h"
#include "tests/support/compiled_check.h"
#include "tests/support/interp_helpers.h"
#include "tests/support/op_check.h"

using namespace stax;
using namespace stax::test;

namespace {

void expect_close(const Tensor& got, const std::optional<Tensor>& want, double rtol,
                  const std::string& what) {
  if (!want) GTEST_SKIP() << "numpy is not installed";
  // numpy_eval saves 0-d results as shape (1,) (np.ascontiguousarray)
  if (got.dim() != 0 || want->numel() != 1) {
    ASSERT_EQ(got.sizes(), want->sizes()) << what;
  }
  std::vector<double> w;
  for (int64_t k = 0; k < want->numel(); ++k) w.push_back(want->get_double(k));
  expect_values(got, w, rtol, what);
}

const std::vector<double> kEdge = {-3.5, -1.0, -0.25, 0.0, 0.3, 1.0, 2.9, 7.0, 25.0,
                                   kNaN, kInf, -kInf};

}  // namespace

// ---- registry

TEST(ModelOps, SchemasAreAtens) {
  const std::vector<std::string> want = {
      "leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor",
      "elu(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> Tensor",
      "softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor",
      "std.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool "
      "keepdim=False) -> Tensor",
      "cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor",
      "roll(Tensor self, SymInt[1] shifts, int[1] dims=[]) -> Tensor",
      "scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, str reduce, *, bool "
      "include_self=True) -> Tensor",
      "div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor",
      "argsort.stable(Tensor self, *, bool stable, int dim=-1, bool descending=False) -> Tensor",
  };
  for (const std::string& s : want) {
    OpSchema parsed = parse_schema(s);
    const OpDef* op = default_registry().find(parsed.name);
    ASSERT_NE(op, nullptr) << parsed.name;
    EXPECT_EQ(op->schema.str(), parsed.str());
  }
}

TEST(ModelOps, BadInputsFailWithTheCause) {
  Graph g;
  Node* x = g.placeholder("x", {2, 3}, DType::Float32);
  Node* i = g.placeholder("i", {2, 3}, DType::Int64);
  Node* m = g.placeholder("m", {2, 3}, DType::Float32);
  EXPECT_TRUE(has(error_of([&] { g.call("leaky_relu", {i}); }), "floating"));
  EXPECT_TRUE(has(error_of([&] { g.call("bitwise_and.Tensor", {x, i}); }), "integer and bool"));
  EXPECT_TRUE(has(error_of([&] { g.call("masked_fill.Scalar", {x, m, 1.0}); }), "boolean masks"));
  EXPECT_TRUE(has(error_of([&] { g.call("tril", {g.placeholder("v", {3})}); }), "2 dimensions"));
  EXPECT_TRUE(has(error_of([&] { g.call("repeat", {x, std::vector<int64_t>{2}}); }),
                  "can not be smaller"));
  EXPECT_TRUE(has(error_of([&] {
                    g.call("div.Tensor_mode", {x, x}, {{"rounding_mode", "round"}});
                  }),
                  "rounding_mode"));
  EXPECT_TRUE(has(error_of([&] {
                    g.call("scatter_reduce.two", {x, 0, i, x, "median"});
                  }),
                  "reduce argument"));
  EXPECT_TRUE(has(error_of([&] { g.call("flip", {x, std::vector<int64_t>{0, -2}}); }),
                  "multiple times"));
  EXPECT_TRUE(has(error_of([&] { g.call("addcdiv", {i, i, i}); }), "Integer division"));
  Node* s = g.call("stack", {Arg(std::vector<Node*>{x, x}), -1});
  EXPECT_EQ(s->shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(g.call("div.Tensor_mode", {i, i}, {{"rounding_mode", "floor"}})->dtype(),
            DType::Int64);
  EXPECT_EQ(g.call("div.Tensor_mode", {i, i}, {{"rounding_mode", Arg()}})->dtype(),
            DType::Float32);
  EXPECT_EQ(g.call("cumsum", {i, 0})->dtype(), DType::Int64);
  EXPECT_EQ(g.call("logsumexp", {i, std::vector<int64_t>{1}})->dtype(), DType::Float32);
  EXPECT_EQ(g.call("isinf", {x})->dtype(), DType::Bool);
  EXPECT_EQ(g.call("clamp.Tensor", {i, x, Arg()})->dtype(), DType::Float32);
}

// ---- activations: torch's formulas, NaN and ±inf included

TEST(ModelOps, ActivationsMatchTorchFormulas) {
  Tensor x = vec(kEdge);
  struct A {
    const char* name;
    std::vector<Arg> extra;
    std::function<double(double)> f;
  };
  const std::vector<A> acts = {
      {"leaky_relu", {0.1}, [](double v) { return v > 0 ? v : v * 0.1; }},
      {"elu", {1.5, 2.0, 0.5},
       [](double v) { return v <= 0 ? std::expm1(v * 0.5) * 3.0 : v * 2.0; }},
      {"hardtanh", {-2.0, 3.0}, [](double v) { return std::isnan(v) ? v : std::clamp(v, -2.0, 3.0); }},
      {"relu6", {}, [](double v) { return std::isnan(v) ? v : std::clamp(v, 0.0, 6.0); }},
      {"hardswish", {},
       [](double v) { return std::isnan(v) ? v : v * std::clamp(v + 3, 0.0, 6.0) / 6; }},
      {"hardsigmoid", {},
       [](double v) { return std::isnan(v) ? v : std::clamp(v + 3, 0.0, 6.0) / 6; }},
      {"softplus", {2.0, 10.0},
       [](double v) { return v * 2 > 10 ? v : std::log1p(std::exp(v * 2)) / 2; }},
      {"mish", {}, [](double v) { return v * std::tanh(std::log1p(std::exp(v))); }},
  };
  for (const A& a : acts) {
    OpRun r = run({x}, op(a.name, a.extra));
    std::vector<double> want = map(kEdge, a.f);
    // hardswish(-inf) = -inf * 0 = NaN as in torch
    expect_values(r.out, want, 1e-15, a.name);
    EXPECT_EQ(r.fallbacks, 0u) << a.name << " must compile to kernels";
    OpRun f = run({vec(kEdge, DType::Float32)}, op(a.name, a.extra));
    EXPECT_EQ(f.out.dtype(), DType::Float32);
    expect_values(f.out, want, 1e-6, std::string(a.name) + " float32");
  }
}

TEST(ModelOps, ActivationBackwardOpsMatchTorchFormulas) {
  std::vector<double> xs = {-4.0, -2.0, -0.5, 0.0, 0.5, 2.5, 3.0, 4.0, 30.0};
  std::vector<double> gs = {1.0, -2.0, 0.5, 3.0, -1.5, 2.0, 0.25, -0.75, 1.25};
  Tensor x = vec(xs), g = vec(gs);
  auto check = [&](const char* name, std::vector<Arg> extra,
                   std::function<double(double, double)> f, bool x_first_extra = false) {
    Build b = [&](Graph& gr, const std::vector<Node*>& in) {
      std::vector<Arg> args{in[1]};
      if (!x_first_extra) args.push_back(in[0]);
      args.insert(args.end(), extra.begin(), extra.end());
      if (x_first_extra) args.push_back(in[0]);
      return gr.call(name, args);
    };
    OpRun r = run({x, g}, b);
    std::vector<double> want;
    for (size_t k = 0; k < xs.size(); ++k) want.push_back(f(xs[k], gs[k]));
    expect_values(r.out, want, 1e-15, name);
  };
  check("leaky_relu_backward", {0.2, false}, [](double x, double g) { return x > 0 ? g : g * 0.2; });
  check("hardtanh_backward", {-1.0, 2.5},
        [](double x, double g) { return (x <= -1 || x >= 2.5) ? 0.0 : g; });
  check("hardswish_backward", {}, [](double x, double g) {
    return x < -3 ? 0.0 : (x <= 3 ? g * (x / 3 + 0.5) : g);
  });
  check("hardsigmoid_backward", {},
        [](double x, double g) { return (x > -3 && x < 3) ? g / 6 : 0.0; });
  check("softplus_backward", {1.5, 20.0}, [](double x, double g) {
    double z = std::exp(x * 1.5);
    return x * 1.5 > 20 ? g : g * z / (z + 1);
  });
  check("mish_backward", {}, [](double x, double g) {
    double t = std::tanh(std::log1p(std::exp(x)));
    double s = 1 / (1 + std::exp(-x));
    return g * (t + x * s * (1 - t * t));
  });
  check("elu_backward", {1.5, 2.0, 0.5, false}, [](double x, double g) {
    return x <= 0 ? g * 0.5 * 3.0 * std::exp(x * 0.5) : g * 2.0;
  }, true);
}

// ---- reductions and scans

TEST(ModelOps, ReductionsMatchNumpy) {
  Tensor x = Tensor::from_vector({3, 4}, std::vector<double>{0.5, -1, 2, 3.5, 4, -0.25, 1, 1, 9,
                                                             -7, 0.125, 2});
  expect_close(run({x}, op("std.correction", {std::vector<int64_t>{1}}, {{"correction", 0}})).out,
               numpy_eval({x}, "out = np.std(ins[0], axis=1, ddof=0)"), 1e-14, "std ddof 0");
  expect_close(run({x}, op("std.dim", {std::vector<int64_t>{0}, true, true})).out,
               numpy_eval({x}, "out = np.std(ins[0], axis=0, ddof=1, keepdims=True)"), 1e-14,
               "std.dim");
  expect_close(run({x}, op("std")).out, numpy_eval({x}, "out = np.std(ins[0], ddof=1)"), 1e-14,
               "std");
  expect_close(run({x}, op("var.dim", {std::vector<int64_t>{1}, false})).out,
               numpy_eval({x}, "out = np.var(ins[0], axis=1)"), 1e-14, "var.dim");
  expect_close(run({x}, op("logsumexp", {std::vector<int64_t>{1}})).out,
               numpy_eval({x}, "m = ins[0].max(1, keepdims=True)\n"
                               "out = (np.log(np.exp(ins[0] - m).sum(1, keepdims=True)) + m)[:, 0]"),
               1e-14, "logsumexp");
  for (double p : {0.0, 1.0, 2.0, 3.0, kInf, -kInf}) {
    expect_close(run({x}, op("linalg_vector_norm", {p, std::vector<int64_t>{1}})).out,
                 numpy_eval({x}, "out = np.linalg.norm(ins[0], ord=" +
                                     std::string(p == kInf ? "np.inf" : p == -kInf ? "-np.inf"
                                                                                   : std::to_string(p)) +
                                     ", axis=1)"),
                 1e-14, "vector_norm p=" + std::to_string(p));
  }
  expect_close(run({x}, op("norm.Scalar", {2})).out,
               numpy_eval({x}, "out = np.linalg.norm(ins[0].ravel())"), 1e-14, "norm");
  expect_values(run({x}, op("max")).out, {9});
  expect_values(run({x}, op("min")).out, {-7});
  // logsumexp of rows that are all -inf or hold +inf: -inf and +inf (no NaN), as torch
  Tensor y = Tensor::from_vector({3, 2}, std::vector<double>{-kInf, -kInf, kInf, 1, 0, 0});
  expect_values(run({y}, op("logsumexp", {std::vector<int64_t>{1}})).out,
                {-kInf, kInf, std::log(2.0)}, 1e-15, "logsumexp inf rows");
}

TEST(ModelOps, ScansMatchNumpyAndRunAsFallbacks) {
  Tensor x = Tensor::from_vector({2, 4}, std::vector<double>{1, 2, 0, -3, 0.5, kNaN, 2, 4});
  OpRun cs = run({x}, op("cumsum", {1}));
  expect_values(cs.out, {1, 3, 3, 0, 0.5, kNaN, kNaN, kNaN}, 0, "cumsum");
  EXPECT_EQ(cs.fallbacks, 1u) << "cumsum runs on the interpreter, counted as a fallback";
  expect_values(run({x}, op("cumprod", {0})).out, {1, 2, 0, -3, 0.5, kNaN, 0, -12}, 0, "cumprod");
  Tensor i = Tensor::from_vector({5}, std::vector<int64_t>{3, -1, 4, 1, 5});
  OpRun ci = run({i}, op("cumsum", {0}));
  EXPECT_EQ(ci.out.dtype(), DType::Int64);
  expect_values(ci.out, {3, 2, 6, 7, 12});
  OpRun cf = run({i}, op("cumprod", {0}, {{"dtype", DType::Float64}}));
  EXPECT_EQ(cf.out.dtype(), DType::Float64);
  expect_values(cf.out, {3, -3, -12, -12, -60});
  // an empty dim
  Tensor e = Tensor::empty({2, 0}, DType::Float32);
  EXPECT_EQ(run({e}, op("cumsum", {1})).out.sizes(), (Shape{2, 0}));
}

TEST(ModelOps, ArgsortIsStableWithNaNsLast) {
  Tensor x = vec({3, 1, kNaN, 1, -kInf, 3, 0});
  expect_values(run({x}, op("argsort", {0})).out, {4, 6, 1, 3, 0, 5, 2}, 0, "ascending");
  expect_values(run({x}, op("argsort.stable", {}, {{"stable", true}, {"descending", true}})).out,
                {2, 0, 5, 1, 3, 6, 4}, 0, "descending");
  Tensor m = Tensor::from_vector({2, 3}, std::vector<int64_t>{5, 5, 1, 2, 9, 2});
  OpRun r = run({m}, op("argsort", {-1}));
  expect_values(r.out, {2, 0, 1, 0, 2, 1});
  EXPECT_EQ(r.fallbacks, 1u);
  expect_close(run({x}, op("argsort.stable", {}, {{"stable", true}})).out,
               numpy_eval({x}, "out = np.argsort(ins[0], kind='stable')"), 0, "numpy argsort");
}

// ---- shape ops

TEST(ModelOps, ShapeOpsMatchNumpy) {
  Tensor x = iota({2, 3, 4}, DType::Float64);
  Tensor y = iota({3, 4}, DType::Int64);
  auto same = [&](const Tensor& in, const Build& b, const std::string& py, const char* what) {
    OpRun r = run({in}, b);
    EXPECT_EQ(r.fallbacks, 0u) << what;
    expect_close(r.out, numpy_eval({in}, py), 0, what);
  };
  same(x, op("flip", {std::vector<int64_t>{0, 2}}), "out = np.flip(ins[0], (0, 2))", "flip");
  same(x, op("roll", {std::vector<int64_t>{1, -5}, std::vector<int64_t>{0, -1}}),
       "out = np.roll(ins[0], (1, -5), (0, -1))", "roll");
  same(x, op("roll", {std::vector<int64_t>{7}}), "out = np.roll(ins[0], 7)", "roll flat");
  same(x, op("repeat", {std::vector<int64_t>{2, 1, 1, 3}}), "out = np.tile(ins[0], (2, 1, 1, 3))",
       "repeat");
  same(y, op("tril", {1}), "out = np.tril(ins[0], 1)", "tril");
  same(x, op("triu", {-1}), "out = np.triu(ins[0], -1)", "triu");
  OpRun s = run({x, x}, [](Graph& g, const std::vector<Node*>& in) {
    return g.call("stack", {Arg(std::vector<Node*>{in[0], in[1]}), 2});
  });
  expect_close(s.out, numpy_eval({x}, "out = np.stack([ins[0], ins[0]], 2)"), 0, "stack");
}

// ---- masked and indexed writes

TEST(ModelOps, MaskedFillIndexAddScatterReduce) {
  Tensor x = vec({1, 2, 3, 4});
  Tensor mask = Tensor::from_vector({4}, std::vector<int64_t>{1, 0, 0, 1}, DType::Bool);
  expect_values(run({x, mask}, op("masked_fill.Scalar", {-kInf}, {}, 2)).out, {-kInf, 2, 3, -kInf});
  Tensor v = Tensor::scalar(9, DType::Float64);
  expect_values(run({x, mask, v}, op("masked_fill.Tensor", {}, {}, 3)).out, {9, 2, 3, 9});
  Tensor xi = Tensor::from_vector({4}, std::vector<int64_t>{1, 2, 3, 4});
  expect_values(run({xi, mask}, op("masked_fill.Scalar", {7}, {}, 2)).out, {7, 2, 3, 7});

  Tensor self = Tensor::zeros({4, 2}, DType::Float64);
  Tensor idx = Tensor::from_vector({3}, std::vector<int64_t>{0, 2, 0});
  Tensor src = Tensor::from_vector({3, 2}, std::vector<double>{1, 2, 3, 4, 5, 6});
  OpRun ia = run({self, idx, src}, [](Graph& g, const std::vector<Node*>& in) {
    return g.call("index_add", {in[0], 0, in[1], in[2]}, {{"alpha", 2}});
  });
  expect_values(ia.out, {12, 16, 0, 0, 6, 8, 0, 0});
  EXPECT_EQ(ia.fallbacks, 1u);

  Tensor base = vec({10, 20, 30});
  Tensor sidx = Tensor::from_vector({4}, std::vector<int64_t>{0, 2, 0, 2});
  Tensor ssrc = vec({1, 2, 3, kNaN});
  auto sr = [&](const char* red, bool include_self) {
    return run({base, sidx, ssrc}, [=](Graph& g, const std::vector<Node*>& in) {
             return g.call("scatter_reduce.two", {in[0], 0, in[1], in[2], red},
                           {{"include_self", include_self}});
           }).out;
  };
  expect_values(sr("sum", true), {14, 20, kNaN});
  expect_values(sr("sum", false), {4, 20, kNaN});
  expect_values(sr("prod", true), {30, 20, kNaN});
  expect_values(sr("mean", true), {14.0 / 3, 20, kNaN}, 1e-15);
  expect_values(sr("mean", false), {2, 20, kNaN});
  expect_values(sr("amax", true), {10, 20, kNaN});
  expect_values(sr("amin", false), {1, 20, kNaN});
  // a 0-d index and src count as 1-d (torch's scatter shape check)
  Tensor i0 = Tensor::from_vector({}, std::vector<int64_t>{2});
  Tensor s0 = Tensor::scalar(5, DType::Float64);
  expect_values(run({base, i0, s0}, [](Graph& g, const std::vector<Node*>& in) {
                  return g.call("scatter_reduce.two", {in[0], 0, in[1], in[2], "sum"});
                }).out,
                {10, 20, 35});
  // int32 indices too, as torch's scatter ops
  Tensor i32 = Tensor::from_vector({4}, std::vector<int64_t>{0, 2, 0, 2}, DType::Int32);
  expect_values(run({base, i32, ssrc}, [](Graph& g, const std::vector<Node*>& in) {
                  return g.call("scatter_reduce.two", {in[0], 0, in[1], in[2], "amin"},
                                {{"include_self", false}});
                }).out,
                {1, 20, kNaN});
  // out-of-range indices are an error naming the node, not a crash
  Tensor bad = Tensor::from_vector({1}, std::vector<int64_t>{7});
  EXPECT_TRUE(has(error_of([&] {
                    Graph g;
                    Node* a = g.placeholder("a", self.meta());
                    Node* b = g.placeholder("b", bad.meta());
                    Node* c = g.placeholder("c", Tensor::zeros({1, 2}, DType::Float64).meta());
                    g.output({g.call("index_add", {a, 0, b, c})});
                    interpret(g, {self, bad, Tensor::zeros({1, 2}, DType::Float64)});
                  }),
                  "out of bounds"));
}

// ---- fused arithmetic, division modes, clamps, predicates, bitwise ops

TEST(ModelOps, ArithmeticMatchesTorchFormulas) {
  Tensor a = vec({1.5, -2, 3, 0.25});
  Tensor b = vec({2, 0.5, -1, 4});
  Tensor c = vec({-1, 3, 0.5, 2});
  expect_values(run({a, b, c}, op("addcmul", {}, {{"value", 0.5}}, 3)).out,
                {1.5 + 0.5 * 2 * -1, -2 + 0.5 * 0.5 * 3, 3 + 0.5 * -1 * 0.5, 0.25 + 0.5 * 4 * 2},
                1e-15);
  expect_values(run({a, b, c}, op("addcdiv", {}, {{"value", 2}}, 3)).out,
                {1.5 + 2 * 2 / -1.0, -2 + 2 * 0.5 / 3, 3 + 2 * -1 / 0.5, 0.25 + 2 * 4 / 2.0}, 1e-15);
  auto lerp = [](double s, double e, double w) {
    return std::abs(w) < 0.5 ? s + w * (e - s) : e - (e - s) * (1 - w);
  };
  expect_values(run({a, b}, op("lerp.Scalar", {0.75}, {}, 2)).out,
                {lerp(1.5, 2, 0.75), lerp(-2, 0.5, 0.75), lerp(3, -1, 0.75), lerp(0.25, 4, 0.75)});
  Tensor w = vec({0.1, 0.6, -0.7, 2});
  expect_values(run({a, b, w}, op("lerp.Tensor", {}, {}, 3)).out,
                {lerp(1.5, 2, 0.1), lerp(-2, 0.5, 0.6), lerp(3, -1, -0.7), lerp(0.25, 4, 2)});
  Tensor bi = Tensor::from_vector({2, 2, 2}, std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8});
  Tensor s = Tensor::full({2, 2, 2}, kNaN, DType::Float64);
  expect_values(run({s, bi, bi}, op("baddbmm", {}, {{"beta", 0}, {"alpha", 1}}, 3)).out,
                {7, 10, 15, 22, 67, 78, 91, 106}, 0, "baddbmm ignores self when beta == 0");
  Tensor s1 = Tensor::ones({2, 1, 2}, DType::Float64);
  expect_values(run({s1, bi, bi}, op("baddbmm", {}, {{"beta", 2}, {"alpha", 0.5}}, 3)).out,
                {5.5, 7, 9.5, 13, 35.5, 41, 47.5, 55});
  // Integer products take alpha / beta converted to the integer type first, as torch's kernels
  // (OpInfo's baddbmm / addmm samples with beta=0.2, alpha=0.6 give zeros; 2.7 counts as 2).
  Tensor ib = Tensor::from_vector({2, 2, 2}, std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8});
  Tensor is = Tensor::from_vector({2, 1, 2}, std::vector<int64_t>{100, 200, 300, 400});
  expect_values(run({is, ib, ib}, op("baddbmm", {}, {{"beta", 0.2}, {"alpha", 0.6}}, 3)).out,
                {0, 0, 0, 0, 0, 0, 0, 0}, 0, "integer baddbmm, fractional factors");
  expect_values(run({is, ib, ib}, op("baddbmm", {}, {{"beta", 1.5}, {"alpha", 2.7}}, 3)).out,
                {114, 220, 130, 244, 434, 556, 482, 612}, 0, "integer baddbmm, truncated factors");
  Tensor im = Tensor::from_vector({2, 2}, std::vector<int64_t>{1, 2, 3, 4});
  Tensor iself = Tensor::from_vector({2, 2}, std::vector<int64_t>{10, 20, 30, 40});
  expect_values(run({iself, im, im}, op("addmm", {}, {{"beta", 0.2}, {"alpha", 0.6}}, 3)).out,
                {0, 0, 0, 0}, 0, "integer addmm, fractional factors");
  expect_values(run({iself, im, im}, op("addmm", {}, {{"beta", 1.5}, {"alpha", 2.7}}, 3)).out,
                {24, 40, 60, 84}, 0, "integer addmm, truncated factors");
  // softmax / log_softmax of a tensor without elements (OpInfo's (5, 0, 0) sample): empty,
  // interpreted and compiled (no amax over a zero-size dimension)
  Tensor empty = Tensor::zeros({5, 0, 0}, DType::Float32);
  for (const char* sm : {"_softmax", "_log_softmax"}) {
    OpRun r = run({empty}, op(sm, {2, false}));
    EXPECT_EQ(r.out.sizes(), (Shape{5, 0, 0})) << sm;
  }
  OpRun r = run({Tensor::zeros({5, 0, 0}, DType::Int64)}, op("softmax.int", {1, DType::Float64}));
  EXPECT_EQ(r.out.dtype(), DType::Float64);
}

TEST(ModelOps, DivisionModesFmodAndClamps) {
  Tensor ia = Tensor::from_vector({6}, std::vector<int64_t>{7, -7, 7, -7, 0, -9});
  Tensor ib = Tensor::from_vector({6}, std::vector<int64_t>{2, 2, -2, -2, 3, 4});
  expect_values(run({ia, ib}, op("div.Tensor_mode", {}, {{"rounding_mode", "trunc"}}, 2)).out,
                {3, -3, -3, 3, 0, -2});
  expect_values(run({ia, ib}, op("div.Tensor_mode", {}, {{"rounding_mode", "floor"}}, 2)).out,
                {3, -4, -4, 3, 0, -3});
  expect_values(run({ia}, op("div.Scalar_mode", {-2}, {{"rounding_mode", "trunc"}})).out,
                {-3, 3, -3, 3, 0, 4});
  Tensor fa = vec({7.5, -7.5, 1e-20, -3, kInf, 5});
  Tensor fb = vec({2, 2, 1, 0.7, 2, 0});
  expect_values(run({fa, fb}, op("div.Tensor_mode", {}, {{"rounding_mode", "trunc"}}, 2)).out,
                {3, -3, 0, std::trunc(-3 / 0.7), kInf, kInf});
  OpRun fm = run({fa, fb}, op("fmod.Tensor", {}, {}, 2));
  expect_values(fm.out, {1.5, -1.5, 1e-20, std::fmod(-3.0, 0.7), kNaN, kNaN});
  EXPECT_EQ(fm.fallbacks, 1u);
  expect_values(run({ia, ib}, op("fmod.Tensor", {}, {}, 2)).out, {1, -1, 1, -1, 0, -1});
  expect_close(run({fa}, op("fmod.Scalar", {-1.25})).out,
               numpy_eval({fa}, "out = np.fmod(ins[0], -1.25)"), 0, "fmod numpy");

  Tensor x = vec({-3, -0.5, 0.5, 3, kNaN});
  Tensor lo = vec({-1, -1, 1, 1, 0});
  Tensor hi = vec({2, 0, 0.75, 2, 1});
  expect_values(run({x, lo, hi}, op("clamp.Tensor", {}, {}, 3)).out, {-1, -0.5, 0.75, 2, kNaN});
  expect_values(run({x, lo}, op("clamp.Tensor", {Arg()}, {}, 2)).out, {-1, -0.5, 1, 3, kNaN});
  expect_values(run({x}, op("clamp_min", {0.0})).out, {0, 0, 0.5, 3, kNaN});
  expect_values(run({x}, op("clamp_max", {0.0})).out, {-3, -0.5, 0, 0, kNaN});
  expect_values(run({x, lo}, op("clamp_max.Tensor", {}, {}, 2)).out, {-3, -1, 0.5, 1, kNaN});
  expect_values(run({x, lo}, op("max.other", {}, {}, 2)).out, {-1, -0.5, 1, 3, kNaN});
}

TEST(ModelOps, PredicatesNanToNumAndBitwise) {
  Tensor x = vec({1, kNaN, kInf, -kInf, -0.0});
  expect_values(run({x}, op("isinf")).out, {0, 0, 1, 1, 0});
  expect_values(run({x}, op("isfinite")).out, {1, 0, 0, 0, 1});
  expect_values(run({x}, op("isposinf")).out, {0, 0, 1, 0, 0});
  expect_values(run({x}, op("isneginf")).out, {0, 0, 0, 1, 0});
  expect_values(run({x}, op("isnan")).out, {0, 1, 0, 0, 0});
  Tensor xi = Tensor::from_vector({2}, std::vector<int64_t>{1, -5});
  expect_values(run({xi}, op("isfinite")).out, {1, 1});
  expect_values(run({xi}, op("isinf")).out, {0, 0});
  expect_values(run({x}, op("nan_to_num")).out,
                {1, 0, std::numeric_limits<double>::max(), -std::numeric_limits<double>::max(), 0});
  OpRun n32 = run({vec({kNaN, kInf, -kInf}, DType::Float32)}, op("nan_to_num", {1.5, Arg(), -2.0}));
  expect_values(n32.out, {1.5, std::numeric_limits<float>::max(), -2.0});
  Tensor h = vec({kInf}, DType::Float16);
  expect_values(run({h}, op("nan_to_num")).out, {65504});

  Tensor a = Tensor::from_vector({4}, std::vector<int64_t>{12, -7, 0, 255});
  Tensor b = Tensor::from_vector({4}, std::vector<int64_t>{10, 3, -1, 1});
  expect_values(run({a, b}, op("bitwise_and.Tensor", {}, {}, 2)).out, {8, 1, 0, 1});
  expect_values(run({a, b}, op("bitwise_or.Tensor", {}, {}, 2)).out, {14, -5, -1, 255});
  expect_values(run({a, b}, op("bitwise_xor.Tensor", {}, {}, 2)).out, {6, -6, -1, 254});
  expect_values(run({a}, op("bitwise_not")).out, {-13, 6, -1, -256});
  expect_values(run({a}, op("bitwise_and.Scalar", {6})).out, {4, 0, 0, 6});
  Tensor sh = Tensor::from_vector({4}, std::vector<int64_t>{1, 2, 70, -1});
  expect_values(run({a, sh}, op("bitwise_left_shift.Tensor", {}, {}, 2)).out, {24, -28, 0, 0});
  expect_values(run({a, sh}, op("bitwise_right_shift.Tensor", {}, {}, 2)).out, {6, -2, 0, 0});
  expect_values(run({a}, op("bitwise_right_shift.Tensor_Scalar", {1})).out, {6, -4, 0, 127});
  Tensor u8 = Tensor::from_vector({2}, std::vector<int64_t>{200, 3}, DType::UInt8);
  OpRun u = run({u8}, op("bitwise_left_shift.Tensor_Scalar", {2}));
  EXPECT_EQ(u.out.dtype(), DType::UInt8);
  expect_values(u.out, {32, 12});  // 800 mod 256
  Tensor t = Tensor::from_vector({3}, std::vector<int64_t>{1, 0, 1}, DType::Bool);
  Tensor f = Tensor::from_vector({3}, std::vector<int64_t>{1, 1, 0}, DType::Bool);
  expect_values(run({t, f}, op("bitwise_xor.Tensor", {}, {}, 2)).out, {0, 1, 1});
  expect_values(run({t}, op("bitwise_not")).out, {0, 1, 0});
  expect_values(run({a, vec({0, 1, 0, kNaN})}, op("logical_xor", {}, {}, 2)).out, {1, 0, 0, 0});
}

// Every model op has an interpreter kernel; the Composite ones also have a decomposition, and
// the others run as fallbacks in the compiled path (no lowering rule) or are lowered.
TEST(ModelOps, EveryOpHasAKernel) {
  std::set<std::string> ours;
  for (const OpDef* op : default_registry().all()) ours.insert(op->name());
  for (const char* n : {"leaky_relu.default", "cumsum.default", "argsort.stable",
                        "scatter_reduce.two", "bitwise_left_shift.Tensor_Scalar",
                        "nan_to_num.default", "linalg_vector_norm.default"}) {
    EXPECT_TRUE(ours.count(n)) << n;
    EXPECT_NE(default_interpreter_table().find(n), nullptr) << n;
  }
}

// A joint (forward + backward) graph mixing the model ops compiles on cpu_cpp and matches the
// interpreter bit for bit in both reduction orders (cumsum is its only fallback).
TEST(ModelOps, JointGraphCompilesAndMatchesTheInterpreter) {
  Graph g;
  Node* x = g.placeholder("x", {4, 5}, DType::Float32);
  Node* a = g.call("hardswish", {x});
  Node* b = g.call("lerp.Scalar", {a, g.call("softplus", {x}), 0.3});
  Node* c = g.call("cumsum", {g.call("mish", {b}), 1});
  Node* d = g.call("std.dim", {c, std::vector<int64_t>{1}});
  Node* e = g.call("linalg_vector_norm", {g.call("roll", {g.call("flip", {x, std::vector<int64_t>{0}}),
                                                          std::vector<int64_t>{2}, std::vector<int64_t>{1}}),
                                          2, std::vector<int64_t>{1}});
  Node* f = g.call("logsumexp", {g.call("leaky_relu", {g.call("tril", {x})}), std::vector<int64_t>{1}});
  g.output({g.call("sum", {g.call("add.Tensor", {g.call("add.Tensor", {d, e}), f})})});
  JointGraph j = build_joint_graph(g, {"x"});
  std::vector<Tensor> inputs = {
      Tensor::from_vector({4, 5}, std::vector<double>{-4, -2, -0.5, 0.5, 2, 3.5, 1, -1, 0.25, 2.5,
                                                      0.75, -3, 5, -0.125, 1.5, 2, -2.5, 0, 4, -1},
                          DType::Float32),
      Tensor::scalar(1.0, DType::Float32)};
  std::vector<Tensor> want = reference(j.graph, inputs);
  CompiledGraph cg = cpu_compiler().compile(j.graph);
  std::vector<Tensor> got = cg.run(inputs);
  ASSERT_EQ(got.size(), 2u);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(bitwise_equal(got[i], want[i])) << i;
  EXPECT_GE(cg.num_kernels(), 1u);
  EXPECT_EQ(cg.num_fallbacks(), 2u) << cg.summary();  // cumsum forward, cumsum in the backward
  // the sequential reduction order too (strict_order), against the interpreter's default order
  std::vector<Tensor> want_strict = reference(j.graph, inputs, Order::Strict);
  std::vector<Tensor> got_strict = cpu_compiler(Order::Strict).compile(j.graph).run(inputs);
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(bitwise_equal(got_strict[i], want_strict[i])) << "strict " << i;
  for (int64_t k = 0; k < want[1].numel(); ++k) EXPECT_TRUE(std::isfinite(want[1].get_double(k)));
}

// 0-d inputs and empty dims: torch's results (or a clear error), never a crash.
TEST(ModelOps, ZeroDimAndEmptyInputs) {
  Tensor s = Tensor::scalar(-2.5, DType::Float64);
  expect_values(run({s}, op("cumsum", {0})).out, {-2.5});
  expect_values(run({s}, op("cumprod", {-1})).out, {-2.5});
  expect_values(run({s}, op("argsort", {0})).out, {0});
  expect_values(run({s}, op("flip", {std::vector<int64_t>{0}})).out, {-2.5});
  expect_values(run({s}, op("roll", {std::vector<int64_t>{3}})).out, {-2.5});
  expect_values(run({s}, op("leaky_relu", {0.5})).out, {-1.25});
  expect_values(run({s}, op("logsumexp", {std::vector<int64_t>{0}})).out, {-2.5});
  expect_values(run({s}, op("linalg_vector_norm")).out, {2.5});
  Tensor e = Tensor::empty({0, 3}, DType::Float32);
  EXPECT_EQ(run({e}, op("hardswish")).out.sizes(), (Shape{0, 3}));
  EXPECT_EQ(run({e}, op("flip", {std::vector<int64_t>{0, 1}})).out.sizes(), (Shape{0, 3}));
  EXPECT_EQ(run({e}, op("roll", {std::vector<int64_t>{1}, std::vector<int64_t>{0}})).out.sizes(),
            (Shape{0, 3}));
  EXPECT_EQ(run({e}, op("argsort", {0})).out.sizes(), (Shape{0, 3}));
  EXPECT_EQ(run({e}, op("tril")).out.sizes(), (Shape{0, 3}));
  EXPECT_EQ(run({e}, op("repeat", {std::vector<int64_t>{2, 2}})).out.sizes(), (Shape{0, 6}));
  // reductions over an empty dim: sum-like ones give 0 (norm) , std gives NaN
  expect_values(run({e}, op("linalg_vector_norm", {2, std::vector<int64_t>{0}})).out, {0, 0, 0});
  expect_values(run({e}, op("std.dim", {std::vector<int64_t>{0}})).out, {kNaN, kNaN, kNaN});
  expect_values(run({e}, op("logsumexp", {std::vector<int64_t>{0}})).out, {-kInf, -kInf, -kInf});
}

// Regression (sdk/include/stax/sdk/cstyle_printer.hpp): logsumexp's row shift where(|m| == inf,
// 0, m) is hoisted out of the reduction loop while tril's in-loop zero is the same constant; the
// hoisted statement must not reuse the in-loop name (cpu_cpp failed to compile this kernel).
TEST(ModelOps, HoistedStatementDoesNotReuseAnInLoopConstant) {
  Tensor x = iota({4, 5}, DType::Float32);
  OpRun r = run({x}, [](Graph& g, const std::vector<Node*>& in) {
    return g.call("logsumexp", {g.call("tril", {in[0]}), std::vector<int64_t>{1}});
  });
  EXPECT_EQ(r.fallbacks, 0u);
  EXPECT_NEAR(r.out.get_double(0), std::log(1.0 + 4.0), 1e-6);  // row 0: [0, 0, 0, 0, 0]
}
