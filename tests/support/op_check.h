// Helpers of the op tests (model_ops_test and the tests/ops/<family>/ value tests): build a one-op graph over placeholders,
// interpret it, compile it on cpu_cpp and check the compiled result bit for bit against the
// interpreter in the compiler's reduction order; compare values with expected doubles.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/graph/printer.h"
#include "core/interpreter/interpreter.h"
#include "tests/support/compiled_check.h"
#include "tests/support/interp_helpers.h"

namespace stax::test {

using Build = std::function<Node*(Graph&, const std::vector<Node*>&)>;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kPi = 3.14159265358979323846;

// f applied to each element of x: the expected values of an elementwise op, in double.
inline std::vector<double> map(const std::vector<double>& x,
                               const std::function<double(double)>& f) {
  std::vector<double> out;
  for (double v : x) out.push_back(f(v));
  return out;
}

struct OpRun {
  Tensor out;          // the interpreter's result (default order)
  size_t fallbacks{};  // of the compiled graph
};

// Interprets `build` over `inputs`, compiles it on cpu_cpp and checks the compiled result bit for
// bit against the interpreter in the compiler's (segmented) reduction order.
inline OpRun run(const std::vector<Tensor>& inputs, const Build& build) {
  Graph g;
  std::vector<Node*> ph;
  for (size_t i = 0; i < inputs.size(); ++i)
    ph.push_back(g.placeholder("x" + std::to_string(i), inputs[i].meta()));
  g.output({build(g, ph)});
  OpRun r;
  r.out = interpret(g, inputs).at(0);
  Tensor want = reference(g, inputs).at(0);
  CompiledGraph cg = cpu_compiler().compile(g);
  Tensor got = cg.run(inputs).at(0);
  EXPECT_TRUE(bitwise_equal(got, want)) << print_graph(g);
  r.fallbacks = cg.num_fallbacks();
  return r;
}

// `name` applied to the first `n` placeholders, then `extra` arguments and `kw`.
inline Build op(std::string name, std::vector<Arg> extra = {}, Kwargs kw = {}, size_t n = 1) {
  return [=](Graph& g, const std::vector<Node*>& x) {
    std::vector<Arg> args(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(n));
    args.insert(args.end(), extra.begin(), extra.end());
    return g.call(name, args, kw);
  };
}

inline Tensor vec(std::vector<double> v, DType t = DType::Float64) {
  return Tensor::from_vector({static_cast<int64_t>(v.size())}, v, t);
}

// NaN matches NaN; ±inf and rtol 0 compare exactly; otherwise |got - want| <= rtol * max(1, |want|).
inline void expect_values(const Tensor& got, const std::vector<double>& want, double rtol = 0,
                          const std::string& what = "") {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size())) << what;
  for (size_t k = 0; k < want.size(); ++k) {
    double g = got.get_double(static_cast<int64_t>(k)), w = want[k];
    if (std::isnan(w)) {
      EXPECT_TRUE(std::isnan(g)) << what << " [" << k << "]: " << g << " vs NaN";
    } else if (std::isinf(w) || rtol == 0) {
      EXPECT_EQ(g, w) << what << " [" << k << "]";
    } else {
      EXPECT_NEAR(g, w, rtol * std::max(1.0, std::abs(w))) << what << " [" << k << "]";
    }
  }
}

}  // namespace stax::test
