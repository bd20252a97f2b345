// Ops whose result size depends on the data (core/ops/indexing/runtime_sized.cpp): masked_select,
// _unique2 (torch.unique) and unique_consecutive against results worked out by hand, in the
// interpreter and compiled (a counted fallback, the same values); the size is known only at run
// time, so a use other than returning the value is a clear error.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/functional/functional.h"
#include "core/graph/graph.h"
#include "core/graph/verifier.h"
#include "core/interpreter/interpreter.h"
#include "tests/support/compiled_check.h"
#include "tests/support/interp_helpers.h"

using namespace stax;
using namespace stax::test;

namespace {

// Runs g in the interpreter and compiled; both must agree exactly. Returns the outputs.
std::vector<Tensor> run_both(Graph& g, const std::vector<Tensor>& in) {
  verify(g);
  std::vector<Tensor> want = interpret(g, in);
  CompiledGraph cg = cpu_compiler().compile(g);
  std::vector<Tensor> got = cg.run(in);
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size() && i < want.size(); ++i)
    EXPECT_TRUE(got[i].equal(want[i])) << "output " << i << "\n" << cg.summary();
  EXPECT_GE(cg.num_fallbacks(), 1u) << cg.summary();
  return want;
}

void expect_ints(const Tensor& t, const std::vector<int64_t>& want, const std::string& what) {
  ASSERT_EQ(t.numel(), static_cast<int64_t>(want.size())) << what;
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(t.get_int(static_cast<int64_t>(i)), want[i]) << what << " " << i;
}

void expect_doubles(const Tensor& t, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(t.numel(), static_cast<int64_t>(want.size())) << what;
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_EQ(t.get_double(static_cast<int64_t>(i)), want[i]) << what << " " << i;
}

}  // namespace

TEST(RuntimeSized, MaskedSelectBroadcastsTheMask) {
  Graph g;
  Node* x = g.placeholder("x", {2, 3}, DType::Float32);
  Node* m = g.placeholder("m", {3}, DType::Bool);
  g.output({g.call("masked_select", {x, m})});
  Tensor xv = Tensor::from_vector({2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6});
  Tensor mv = Tensor::from_vector({3}, std::vector<double>{1, 0, 1}, DType::Bool);
  std::vector<Tensor> out = run_both(g, {xv, mv});
  EXPECT_EQ(out[0].dtype(), DType::Float32);
  expect_doubles(out[0], {1, 3, 4, 6}, "masked_select");
  // a mask of another dtype: torch's message
  Graph h;
  Node* a = h.placeholder("a", {3});
  Node* b = h.placeholder("b", {3}, DType::Int64);
  EXPECT_TRUE(has(error_of([&] { h.call("masked_select", {a, b}); }),
                  "masked_select: expected BoolTensor for mask"));
}

TEST(RuntimeSized, UniqueSortsAndCounts) {
  Graph g;
  Node* x = g.placeholder("x", {2, 4}, DType::Int64);
  Node* u = g.call("_unique2", {x, true, true, true});
  g.output({g.call("getitem", {u, int64_t{0}}), g.call("getitem", {u, int64_t{1}}),
            g.call("getitem", {u, int64_t{2}})});
  Tensor xv = Tensor::from_vector({2, 4}, std::vector<int64_t>{3, 1, 3, -2, 7, 1, 1, 3});
  std::vector<Tensor> out = run_both(g, {xv});
  expect_ints(out[0], {-2, 1, 3, 7}, "values");
  EXPECT_EQ(out[1].sizes(), (Shape{2, 4}));
  expect_ints(out[1], {2, 1, 2, 0, 3, 1, 1, 2}, "inverse");
  expect_ints(out[2], {1, 3, 3, 1}, "counts");
}

TEST(RuntimeSized, UniqueOfFloatsPutsNanLastAndSkipsWhatIsNotAsked) {
  Graph g;
  Node* x = g.placeholder("x", {5}, DType::Float64);
  Node* u = g.call("_unique2", {x});
  g.output({g.call("getitem", {u, int64_t{0}}), g.call("getitem", {u, int64_t{1}})});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor xv = Tensor::from_vector({5}, std::vector<double>{2.5, -1.0, 2.5, 0.0, -1.0});
  std::vector<Tensor> out = run_both(g, {xv});
  expect_doubles(out[0], {-1.0, 0.0, 2.5}, "values");
  EXPECT_EQ(out[1].sizes(), (Shape{0}));  // no inverse asked for: an empty tensor, as torch's
  Tensor withnan = Tensor::from_vector({3}, std::vector<double>{nan, 1.0, nan});
  Graph h;
  Node* y = h.placeholder("y", {3}, DType::Float64);
  h.output({h.call("getitem", {h.call("_unique2", {y}), int64_t{0}})});
  Tensor v = interpret(h, {withnan})[0];
  ASSERT_EQ(v.numel(), 3);  // each NaN is a value of its own, after the numbers
  EXPECT_EQ(v.get_double(0), 1.0);
  EXPECT_TRUE(std::isnan(v.get_double(1)) && std::isnan(v.get_double(2)));
}

TEST(RuntimeSized, UniqueConsecutiveCollapsesRuns) {
  Graph g;
  Node* x = g.placeholder("x", {7}, DType::Int32);
  Node* u = g.call("unique_consecutive", {x, true, true});
  g.output({g.call("getitem", {u, int64_t{0}}), g.call("getitem", {u, int64_t{1}}),
            g.call("getitem", {u, int64_t{2}})});
  Tensor xv = Tensor::from_vector({7}, std::vector<int32_t>{1, 1, 2, 2, 3, 1, 1});
  std::vector<Tensor> out = run_both(g, {xv});
  EXPECT_EQ(out[0].dtype(), DType::Int32);
  expect_ints(out[0], {1, 2, 3, 1}, "values");
  expect_ints(out[1], {0, 0, 1, 1, 2, 3, 3}, "inverse");
  expect_ints(out[2], {2, 2, 1, 2}, "counts");
  // dim=0: consecutive equal rows collapse (rows 0 and 1 equal, row 2 differs).
  Graph h;
  Node* y = h.placeholder("y", {3, 2}, DType::Int32);
  h.output({h.call("getitem", {h.call("unique_consecutive", {y}, {{"dim", int64_t{0}}}),
                               int64_t{0}})});
  Tensor yv = Tensor::from_vector({3, 2}, std::vector<int32_t>{4, 5, 4, 5, 6, 7});
  std::vector<Tensor> rows = run_both(h, {yv});
  EXPECT_EQ(rows[0].sizes(), (Shape{2, 2}));
  expect_ints(rows[0], {4, 5, 6, 7}, "rows");
}

TEST(RuntimeSized, ValuesOfARunTimeSizeCanOnlyBeReturned) {
  Graph g;
  Node* x = g.placeholder("x", {4});
  Node* m = g.placeholder("m", {4}, DType::Bool);
  Node* s = g.call("masked_select", {x, m});
  EXPECT_TRUE(has(error_of([&] { g.call("neg", {s}); }), "can only be returned by the graph"));
}

// torch differentiates masked_select; Stax refuses with a clear error rather than a zero gradient.
TEST(RuntimeSized, MaskedSelectsDerivativeIsAClearError) {
  Graph g;
  Node* x = g.placeholder("x", {3}, DType::Float64);
  Node* m = g.placeholder("m", {3}, DType::Bool);
  g.output({g.call("masked_select", {x, m})});
  Tensor xv = Tensor::from_vector({3}, std::vector<double>{1, 2, 3});
  Tensor mv = Tensor::from_vector({3}, std::vector<double>{1, 0, 1}, DType::Bool);
  EXPECT_TRUE(has(error_of([&] { vjp(g, {xv, mv}, {Tensor::from_vector({2}, std::vector<double>{1, 1})}); }),
                  "derivative of masked_select"));
}
