// The reference interpreter against numpy on random inputs: inputs are saved as .npy, a python
// script computes numpy's results, and the interpreter's must agree: exactly for correctly
// rounded ops (add, mul, div, sqrt, min/max, comparisons, floor_divide, remainder, float16
// arithmetic, integer ops), within a few ulp for transcendental functions, and for float32
// reductions within the seed §6.5 bound (n - 1) u Σ|a_i| of a float64 reference.
// Skipped (with the reason) when python3 cannot import numpy.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>

#include "core/graph/graph.h"
#include "core/interpreter/interpreter.h"
#include "core/tensor/npy.h"

using namespace stax;
namespace fs = std::filesystem;

namespace {

const char* kScript = R"PY(
import math, sys
import numpy as np
d = sys.argv[1]
L = lambda n: np.load(f"{d}/{n}.npy")
a, b, p, c, r, big, q = L("a"), L("b"), L("p"), L("c"), L("r"), L("big"), L("q")
ia, ib, ha, hb = L("ia"), L("ib"), L("ha"), L("hb")
f64 = lambda x: x.astype(np.float64)
erf64 = np.vectorize(math.erf)
out = {
    "add": a + b, "sub": a - b, "mul": a * b, "div": a / b,
    "maximum": np.maximum(a, b), "minimum": np.minimum(a, b),
    "neg": -a, "abs": np.abs(a), "floor": np.floor(a), "ceil": np.ceil(a), "trunc": np.trunc(a),
    "round": np.round(a * 4), "sqrt": np.sqrt(p), "reciprocal": np.float32(1) / p,
    "remainder": np.remainder(a, b), "floor_divide": np.floor_divide(a, b),
    "lt": a < b, "ge": a >= b, "eq": np.floor(a) == np.floor(b),
    "exp": np.exp(a), "log": np.log(p), "sin": np.sin(a), "cos": np.cos(a),
    "tanh": np.tanh(a), "expm1": np.expm1(a), "log1p": np.log1p(p),
    "erf": erf64(f64(a)).astype(np.float32),
    "sigmoid": (1 / (1 + np.exp(-f64(a)))).astype(np.float32),
    "gelu": (f64(a) * 0.5 * (1 + erf64(f64(a) / math.sqrt(2)))).astype(np.float32),
    "pow": np.power(p, b),
    "iadd": ia + ib, "imul": ia * ib, "ifloordiv": np.floor_divide(ia, ib),
    "irem": np.remainder(ia, ib), "imax": np.maximum(ia, ib),
    "hadd": ha + hb, "hmul": ha * hb, "hdiv": ha / hb,
    "bcast_row": a + c, "bcast_col": a * r, "transposed": a.T + b.T,
    "to_int32": (a * 100).astype(np.int32),
    "sum1": f64(big).sum(1), "sum0": f64(big).sum(0), "sumall": f64(big).sum(),
    "abs1": np.abs(f64(big)).sum(1), "abs0": np.abs(f64(big)).sum(0),
    "absall": np.abs(f64(big)).sum(),
    "mean1": f64(big).mean(1), "var0": f64(big).var(0, ddof=1),
    "amax1": big.max(1), "amin0": big.min(0),
    "argmax1": big.argmax(1), "argmin0": big.argmin(0),
    "prod": f64(q).prod(),
}
for k, v in out.items():
    np.save(f"{d}/ref_{k}.npy", np.array(v, order="C"))
)PY";

Tensor map_values(const Tensor& t, double (*f)(double)) {
  std::vector<double> v = t.to_vector<double>();
  for (double& x : v) x = f(x);
  return Tensor::from_vector(t.sizes(), v, t.dtype());
}

class InterpNumpy : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (std::system("python3 -c \"import numpy\" > /dev/null 2>&1") != 0) {
      skip_reason_ = "python3 cannot import numpy (pip install numpy to run this test)";
      return;
    }
    dir_ = fs::temp_directory_path() / ("stax_interp_numpy_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    Tensor a = Tensor::randn({64, 33}, DType::Float32, 1);
    Tensor b = Tensor::randn({64, 33}, DType::Float32, 2);
    inputs_["a"] = a;
    inputs_["b"] = b;
    inputs_["p"] = map_values(a, [](double x) { return std::fabs(x) + 0.125; });
    inputs_["c"] = Tensor::randn({33}, DType::Float32, 3);
    inputs_["r"] = Tensor::randn({64, 1}, DType::Float32, 4);
    inputs_["big"] = Tensor::randn({256, 129}, DType::Float32, 5);
    inputs_["q"] = map_values(Tensor::randn({200}, DType::Float32, 6),
                              [](double x) { return 1.0 + 0.01 * x; });
    inputs_["ia"] = Tensor::randint({64, 33}, -1000, 1000, DType::Int64, 7);
    Tensor sign = Tensor::randint({64, 33}, 0, 2, DType::Int64, 8);
    Tensor mag = Tensor::randint({64, 33}, 1, 40, DType::Int64, 9);
    std::vector<int64_t> ib = mag.to_vector<int64_t>(), s = sign.to_vector<int64_t>();
    for (size_t i = 0; i < ib.size(); ++i) ib[i] *= s[i] ? 1 : -1;
    inputs_["ib"] = Tensor::from_vector({64, 33}, ib);
    inputs_["ha"] = Tensor::randn({64, 33}, DType::Float16, 10);
    inputs_["hb"] = map_values(Tensor::randn({64, 33}, DType::Float16, 11),
                               [](double x) { return x + (x < 0 ? -0.5 : 0.5); });
    for (const auto& [name, t] : inputs_) save_npy((dir_ / (name + ".npy")).string(), t);
    fs::path script = dir_ / "reference.py";
    std::ofstream(script) << kScript;
    std::string cmd = "python3 " + script.string() + " " + dir_.string();
    if (std::system(cmd.c_str()) != 0) failure_ = "the numpy reference script failed: " + cmd;
  }
  static void TearDownTestSuite() {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  void SetUp() override {
    if (!skip_reason_.empty()) GTEST_SKIP() << skip_reason_;
    if (!failure_.empty()) GTEST_FAIL() << failure_;
  }

  static Tensor ref(const std::string& name) {
    return load_npy((dir_ / ("ref_" + name + ".npy")).string());
  }
  static const Tensor& in(const std::string& name) { return inputs_.at(name); }

  // Runs `op` on the given inputs (plus extra args, kwargs).
  static Tensor run(const std::string& op, const std::vector<Tensor>& xs,
                    std::vector<Arg> extra = {}, Kwargs kwargs = {}) {
    Graph g;
    std::vector<Arg> args(xs.size());
    for (size_t i = 0; i < xs.size(); ++i)
      args[i] = Arg(g.placeholder("x" + std::to_string(i), xs[i].sizes(), xs[i].dtype()));
    args.insert(args.end(), extra.begin(), extra.end());
    g.output({g.call(op, std::move(args), std::move(kwargs))});
    return interpret(g, xs).at(0);
  }

  static inline fs::path dir_;
  static inline std::string skip_reason_, failure_;
  static inline std::map<std::string, Tensor> inputs_;
};

// Same sizes and values (as double; +0 == -0, NaN == NaN); dtypes must match too.
void expect_exact(const Tensor& got, const Tensor& want, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_EQ(got.dtype(), want.dtype());
  EXPECT_TRUE(got.allclose(want, 0.0, 0.0, true)) << "got " << got.summary() << "\nwant "
                                                  << want.summary();
}

void expect_close(const Tensor& got, const Tensor& want, double rtol, double atol,
                  const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(got.sizes(), want.sizes());
  std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  int bad = 0;
  for (size_t i = 0; i < g.size() && bad < 5; ++i)
    if (!(std::fabs(g[i] - w[i]) <= atol + rtol * std::fabs(w[i])))
      ADD_FAILURE() << "element " << i << ": got " << g[i] << ", want " << w[i] << " (bad "
                    << ++bad << ")";
}

// |got - exact| <= (n - 1) u Σ|a_i| (+ the final rounding of a division when `extra_rel`).
void expect_within_sum_bound(const Tensor& got, const Tensor& exact, const Tensor& abs_sum,
                             int64_t n, double scale, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(got.numel(), exact.numel());
  const double u = std::ldexp(1.0, -24);
  std::vector<double> g = got.to_vector<double>(), e = exact.to_vector<double>(),
                      s = abs_sum.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) {
    double bound = (static_cast<double>(n - 1) * u * s[i]) * scale + u * std::fabs(e[i]);
    EXPECT_LE(std::fabs(g[i] - e[i]), bound) << "element " << i;
  }
}

}  // namespace

TEST_F(InterpNumpy, CorrectlyRoundedFloatOpsMatchExactly) {
  const Tensor &a = in("a"), &b = in("b"), &p = in("p");
  expect_exact(run("add.Tensor", {a, b}), ref("add"), "add");
  expect_exact(run("sub.Tensor", {a, b}), ref("sub"), "sub");
  expect_exact(run("mul.Tensor", {a, b}), ref("mul"), "mul");
  expect_exact(run("div.Tensor", {a, b}), ref("div"), "div");
  expect_exact(run("maximum", {a, b}), ref("maximum"), "maximum");
  expect_exact(run("minimum", {a, b}), ref("minimum"), "minimum");
  expect_exact(run("neg", {a}), ref("neg"), "neg");
  expect_exact(run("abs", {a}), ref("abs"), "abs");
  expect_exact(run("floor", {a}), ref("floor"), "floor");
  expect_exact(run("ceil", {a}), ref("ceil"), "ceil");
  expect_exact(run("trunc", {a}), ref("trunc"), "trunc");
  expect_exact(run("round", {run("mul.Scalar", {a}, {4})}), ref("round"), "round");
  expect_exact(run("sqrt", {p}), ref("sqrt"), "sqrt");
  expect_exact(run("reciprocal", {p}), ref("reciprocal"), "reciprocal");
  expect_exact(run("remainder.Tensor", {a, b}), ref("remainder"), "remainder");
  expect_exact(run("floor_divide", {a, b}), ref("floor_divide"), "floor_divide");
  expect_exact(run("lt.Tensor", {a, b}), ref("lt"), "lt");
  expect_exact(run("ge.Tensor", {a, b}), ref("ge"), "ge");
  expect_exact(run("eq.Tensor", {run("floor", {a}), run("floor", {b})}), ref("eq"), "eq");
  expect_exact(run("to.dtype", {run("mul.Scalar", {a}, {100})}, {DType::Int32}), ref("to_int32"),
               "to_int32");
}

TEST_F(InterpNumpy, BroadcastAndTransposedInputs) {
  const Tensor &a = in("a"), &b = in("b");
  expect_exact(run("add.Tensor", {a, in("c")}), ref("bcast_row"), "bcast_row");
  expect_exact(run("mul.Tensor", {a, in("r")}), ref("bcast_col"), "bcast_col");
  Tensor at = a.as_strided({33, 64}, {1, 33}, 0), bt = b.as_strided({33, 64}, {1, 33}, 0);
  expect_exact(run("add.Tensor", {at, bt}), ref("transposed"), "transposed");
}

TEST_F(InterpNumpy, IntegerAndHalfOpsMatchExactly) {
  const Tensor &ia = in("ia"), &ib = in("ib");
  expect_exact(run("add.Tensor", {ia, ib}), ref("iadd"), "iadd");
  expect_exact(run("mul.Tensor", {ia, ib}), ref("imul"), "imul");
  expect_exact(run("floor_divide", {ia, ib}), ref("ifloordiv"), "ifloordiv");
  expect_exact(run("remainder.Tensor", {ia, ib}), ref("irem"), "irem");
  expect_exact(run("maximum", {ia, ib}), ref("imax"), "imax");
  // numpy's float16 arithmetic computes in float32 and rounds once, as Stax does.
  expect_exact(run("add.Tensor", {in("ha"), in("hb")}), ref("hadd"), "hadd");
  expect_exact(run("mul.Tensor", {in("ha"), in("hb")}), ref("hmul"), "hmul");
  expect_exact(run("div.Tensor", {in("ha"), in("hb")}), ref("hdiv"), "hdiv");
}

TEST_F(InterpNumpy, TranscendentalWithinAFewUlp) {
  const Tensor &a = in("a"), &b = in("b"), &p = in("p");
  const double rtol = 2e-6, atol = 1e-7;
  expect_close(run("exp", {a}), ref("exp"), rtol, atol, "exp");
  expect_close(run("log", {p}), ref("log"), rtol, atol, "log");
  expect_close(run("sin", {a}), ref("sin"), rtol, atol, "sin");
  expect_close(run("cos", {a}), ref("cos"), rtol, atol, "cos");
  expect_close(run("tanh", {a}), ref("tanh"), rtol, atol, "tanh");
  expect_close(run("expm1", {a}), ref("expm1"), rtol, atol, "expm1");
  expect_close(run("log1p", {p}), ref("log1p"), rtol, atol, "log1p");
  expect_close(run("erf", {a}), ref("erf"), rtol, atol, "erf");
  expect_close(run("sigmoid", {a}), ref("sigmoid"), rtol, atol, "sigmoid");
  expect_close(run("pow.Tensor_Tensor", {p, b}), ref("pow"), rtol, atol, "pow");
  // gelu is a sequence of float32 ops: a few ulp of error accumulate.
  expect_close(run("gelu", {a}), ref("gelu"), 1e-5, 1e-6, "gelu");
}

TEST_F(InterpNumpy, ReductionsWithinTheErrorBound) {
  const Tensor& big = in("big");  // (256, 129)
  expect_within_sum_bound(run("sum.dim_IntList", {big}, {std::vector<int64_t>{1}}), ref("sum1"),
                          ref("abs1"), 129, 1.0, "sum1");
  expect_within_sum_bound(run("sum.dim_IntList", {big}, {std::vector<int64_t>{0}}), ref("sum0"),
                          ref("abs0"), 256, 1.0, "sum0");
  expect_within_sum_bound(run("sum.default", {big}), ref("sumall"), ref("absall"), 256 * 129,
                          1.0, "sumall");
  expect_within_sum_bound(run("mean.dim", {big}, {std::vector<int64_t>{1}}), ref("mean1"),
                          ref("abs1"), 129, 1.0 / 129, "mean1");
  expect_close(run("var.correction", {big}, {std::vector<int64_t>{0}}), ref("var0"), 1e-5, 1e-7,
               "var0");
  expect_exact(run("amax", {big}, {std::vector<int64_t>{1}}), ref("amax1"), "amax1");
  expect_exact(run("amin", {big}, {std::vector<int64_t>{0}}), ref("amin0"), "amin0");
  expect_exact(run("argmax", {big}, {1}), ref("argmax1"), "argmax1");
  expect_exact(run("argmin", {big}, {0}), ref("argmin0"), "argmin0");
  // A product of 200 values near 1: relative error <= (n - 1) u (+ slack).
  expect_close(run("prod.default", {in("q")}), ref("prod"), 200 * std::ldexp(1.0, -24), 0.0,
               "prod");
}
