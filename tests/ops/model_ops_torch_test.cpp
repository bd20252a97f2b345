// The model ops of issue 14 part C against PyTorch itself, where torch is installed (torch 2.x in
// the .venv, STAX_TORCH_PYTHON; the test skips, saying so, without it): every case calls the same aten overload
// with the same arguments on both sides (`torch.ops.aten.<op>.<overload>(...)`: the schemas are
// aten's, so one argument list serves both), float64 inputs with NaN / ±inf, and compares the
// interpreter's result with torch's (NaN where torch has NaN, 1e-12 relative otherwise, integers
// and bools exactly).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/graph/op_registry.h"
#include "core/interpreter/interpreter.h"
#include "core/tensor/npy.h"
#include "core/tensor/tensor.h"
#include "tests/support/torch_python.h"

using namespace stax;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

bool have_torch() {
  return test::torch_importable();
}

// A Python literal for a non-tensor argument.
std::string py(const Arg& a) {
  if (a.is_none() || a.is_undefined()) return "None";
  if (a.is_bool()) return a.to_bool() ? "True" : "False";
  if (a.is_int()) return std::to_string(a.to_int());
  if (a.is_double()) {
    double v = a.to_double();
    if (std::isinf(v)) return v > 0 ? "float('inf')" : "float('-inf')";
    std::ostringstream os;
    os.precision(17);
    os << v;
    std::string s = os.str();
    return s.find_first_of(".e") == std::string::npos ? s + ".0" : s;
  }
  if (a.is_string()) return "'" + a.str() + "'";
  if (a.is_dtype()) {
    std::string n(dtype_name(a.dtype()));
    return "torch." + n;
  }
  if (a.is_list()) {
    std::string s = "[";
    for (const Arg& e : a.list()) s += py(e) + ", ";
    return s + "]";
  }
  ADD_FAILURE() << "no Python literal for this argument";
  return "None";
}

struct Case {
  std::string op;             // "leaky_relu.default"
  std::vector<Tensor> inputs;  // passed first, positionally
  std::vector<Arg> extra = {};  // then these, positionally
  Kwargs kwargs = {};
};

// torch's result of the case, or a failure message.
Tensor torch_result(const Case& c) {
  char tmpl[] = "/tmp/stax_torch_eval_XXXXXX";
  std::string dir = mkdtemp(tmpl);
  for (size_t i = 0; i < c.inputs.size(); ++i)
    save_npy(dir + "/in" + std::to_string(i) + ".npy", c.inputs[i]);
  std::string args;
  for (size_t i = 0; i < c.inputs.size(); ++i) args += "t[" + std::to_string(i) + "], ";
  for (const Arg& a : c.extra) args += py(a) + ", ";
  for (const auto& [k, v] : c.kwargs) args += k + "=" + py(v) + ", ";
  std::string base = c.op.substr(0, c.op.find('.')), overload = c.op.substr(c.op.find('.') + 1);
  std::ofstream(dir + "/run.py")
      << "import sys, numpy as np, torch\nd = sys.argv[1]\n"
      << "t = [torch.from_numpy(np.load(f'{d}/in{i}.npy')) for i in range(" << c.inputs.size()
      << ")]\nout = torch.ops.aten." << base << "." << overload << "(" << args << ")\n"
      << "np.save(f'{d}/out.npy', out.numpy().reshape(out.shape))\n";
  std::string cmd =
      test::torch_python() + " " + dir + "/run.py " + dir + " > " + dir + "/log.txt 2>&1";
  Tensor out;
  if (std::system(cmd.c_str()) != 0) {
    std::ifstream log(dir + "/log.txt");
    ADD_FAILURE() << c.op << ": torch failed: "
                  << std::string(std::istreambuf_iterator<char>(log), {});
  } else {
    out = load_npy(dir + "/out.npy");
  }
  std::filesystem::remove_all(dir);
  return out;
}

Tensor stax_result(const Case& c) {
  Graph g;
  std::vector<Arg> args;
  for (size_t i = 0; i < c.inputs.size(); ++i)
    args.emplace_back(g.placeholder("x" + std::to_string(i), c.inputs[i].meta()));
  args.insert(args.end(), c.extra.begin(), c.extra.end());
  g.output({g.call(c.op, args, c.kwargs)});
  return interpret(g, c.inputs).at(0);
}

Tensor f64(std::vector<double> v, Shape s = {}) {
  if (s.empty()) s = {static_cast<int64_t>(v.size())};
  return Tensor::from_vector(s, v, DType::Float64);
}
Tensor i64(std::vector<int64_t> v) {
  return Tensor::from_vector({static_cast<int64_t>(v.size())}, v);
}
using Ints = std::vector<int64_t>;

std::vector<Case> cases() {
  Tensor e = f64({-3.5, -1.0, -0.25, 0.0, 0.3, 1.0, 2.9, 7.0, 25.0, kNaN, kInf, -kInf});
  Tensor m = f64({0.5, -1, 2, 3.5, 4, -0.25, 1, 1, 9, -7, 0.125, 2}, {3, 4});
  Tensor m2 = f64({2, 1, -3, 0.5, 4, 8, -1, 0, 3, 3, -2, 1.5}, {3, 4});
  Tensor w = f64({0.1, 0.6, -0.7, 2});
  Tensor g = f64({1.0, -2.0, 0.5, 3.0, -1.5, 2.0, 0.25, -0.75, 1.25, 1.0, 2.0, -1.0});
  Tensor a = i64({7, -7, 7, -7, 0, -9, 12, 255});
  Tensor b = i64({2, 2, -2, -2, 3, 4, 10, 1});
  Tensor mask = Tensor::from_vector({3, 4}, std::vector<int64_t>{1, 0, 0, 1, 0, 1, 1, 0, 0, 0, 1, 1},
                                    DType::Bool);
  std::vector<Case> c = {
      {"leaky_relu.default", {e}, {0.1}},
      {"elu.default", {e}, {1.5, 2.0, 0.5}},
      {"hardtanh.default", {e}, {-2.0, 3.0}},
      {"relu6.default", {e}},
      {"hardswish.default", {e}},
      {"hardsigmoid.default", {e}},
      {"softplus.default", {e}, {2.0, 10.0}},
      {"mish.default", {e}},
      {"leaky_relu_backward.default", {g, e}, {0.1, false}},
      {"hardtanh_backward.default", {g, e}, {-1.0, 2.5}},
      {"hardswish_backward.default", {g, e}},
      {"hardsigmoid_backward.default", {g, e}},
      {"softplus_backward.default", {g, e}, {1.5, 20.0}},
      {"mish_backward.default", {g, e}},
      {"std.correction", {m}, {Ints{1}}, {{"correction", 0}, {"keepdim", true}}},
      {"std.dim", {m}, {Ints{0}, true, false}},
      {"var.dim", {m}, {Ints{1}, false}},
      {"logsumexp.default", {m}, {Ints{1}}},
      {"norm.ScalarOpt_dim", {m}, {3.0, Ints{1}}},
      {"linalg_vector_norm.default", {m}, {kInf, Ints{0}}},
      {"linalg_vector_norm.default", {m}, {0.0}},
      {"cumsum.default", {m}, {1}},
      {"cumprod.default", {m}, {0}},
      {"argsort.stable", {e}, {}, {{"stable", true}, {"descending", true}}},
      {"flip.default", {m}, {Ints{0, 1}}},
      {"roll.default", {m}, {Ints{1, -3}, Ints{0, 1}}},
      {"repeat.default", {m}, {Ints{2, 1, 2}}},
      {"tril.default", {m}, {1}},
      {"triu.default", {m}, {-1}},
      {"masked_fill.Scalar", {m, mask}, {-kInf}},
      {"lerp.Scalar", {m, m2}, {0.75}},
      {"lerp.Tensor", {m, m2, w}},
      {"fmod.Tensor", {a, b}},
      {"fmod.Scalar", {e}, {-1.25}},
      {"div.Tensor_mode", {a, b}, {}, {{"rounding_mode", "trunc"}}},
      {"div.Tensor_mode", {a, b}, {}, {{"rounding_mode", "floor"}}},
      {"div.Scalar_mode", {e}, {0.7}, {{"rounding_mode", "trunc"}}},
      {"bitwise_and.Tensor", {a, b}},
      {"bitwise_xor.Scalar", {a}, {6}},
      {"bitwise_not.default", {a}},
      {"bitwise_left_shift.Tensor", {a, i64({1, 2, 3, 0, 5, 6, 7, 1})}},
      {"bitwise_right_shift.Tensor_Scalar", {a}, {2}},
      {"logical_xor.default", {e, g}},
      {"isinf.default", {e}},
      {"isfinite.default", {e}},
      {"isposinf.default", {e}},
      {"nan_to_num.default", {e}, {1.5, Arg(), -2.0}},
      {"clamp_min.default", {e}, {0.5}},
      {"clamp_max.default", {e}, {0.5}},
      {"max.default", {m}},
      {"min.other", {m, f64({0, 1, 2, 3})}},
  };
  return c;
}

// The relative tolerance for float64 results. aten's CPU hardsigmoid_backward multiplies by
// `1.0f / 6.0f`, a float constant, in every dtype (0.16666667163372 in float64); Stax divides by
// 6, so the two differ by ~3e-8 relative in float64 (and agree in float32).
double float64_rtol(const std::string& op) {
  return op == "hardsigmoid_backward.default" ? 5e-8 : 1e-12;
}

}  // namespace

TEST(ModelOpsAgainstTorch, SameOverloadSameArgumentsSameValues) {
  if (!have_torch())
    GTEST_SKIP() << "torch is not importable by " << test::torch_python()
                 << " (STAX_TORCH_PYTHON; scripts/setup.sh makes the .venv); skipped";
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.op);
    Tensor want = torch_result(c);
    if (!want.defined()) continue;
    Tensor got = stax_result(c);
    ASSERT_EQ(got.numel(), want.numel());
    bool exact = !is_floating(got.dtype());
    if (want.dim() != 0 || got.numel() != 1) {
      EXPECT_EQ(got.sizes(), want.sizes());
    }
    EXPECT_EQ(got.dtype(), want.dtype());
    for (int64_t k = 0; k < got.numel(); ++k) {
      double x = got.get_double(k), y = want.get_double(k);
      if (std::isnan(y)) {
        EXPECT_TRUE(std::isnan(x)) << "[" << k << "] " << x << " vs NaN";
      } else if (exact || std::isinf(y)) {
        EXPECT_EQ(x, y) << "[" << k << "]";
      } else {
        EXPECT_NEAR(x, y, float64_rtol(c.op) * std::max(1.0, std::abs(y))) << "[" << k << "]";
      }
    }
  }
}
