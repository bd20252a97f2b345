// Reductions: sums, means and products within the §6.5 bound from Σ|a_i| (a backend may
// accumulate in any order, and split large reductions); min/max, arg-reductions, any/all and
// integer reductions bit for bit; reductions large enough for the backend to split them.
#include <limits>
#include <string>

#include "core/interpreter/interpreter.h"
#include "stax/conformance/compare.h"
#include "target.h"

namespace stax::conformance {
namespace {

// Compiles g, whose outputs are each a sum or mean over `n` values of its inputs (or of inputs
// scaled by constants), and expects each within reduction_bound; Σ|a_i| is g run on |inputs|.
void expect_sums_within_bound(Target& t, const Graph& g, const std::vector<Tensor>& in,
                              int64_t n) {
  auto [got, want] = t.run_both(g, in);
  std::vector<Tensor> abs_in;
  for (const Tensor& x : in) abs_in.push_back(abs_of(x));
  std::vector<Tensor> mag = interpret(g, abs_in);
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(within_bound(got[i], want[i], reduction_bound(want[i], mag[i], n)))
        << "output " << i << " (n = " << n << ")";
}

void float_reductions(Target& t, DType dt) {
  {
    Graph g;
    Node* x = t.input(g, "x", {6, 5, 9}, dt);
    g.output({g.call("sum.dim_IntList", {x, std::vector<int64_t>{-1}}),
              g.call("mean.dim", {x, std::vector<int64_t>{-1}})});
    expect_sums_within_bound(t, g, random_inputs(g, 3), 9);
  }
  {
    Graph g;
    Node* x = t.input(g, "x", {6, 5, 9}, dt);
    g.output({g.call("sum.default", {x}), g.call("mean.default", {x})});
    expect_sums_within_bound(t, g, random_inputs(g, 4), 270);
  }
  Graph g;
  Node* x = t.input(g, "x", {6, 5, 9}, dt);
  g.output({g.call("amax", {x, std::vector<int64_t>{2}}),
            g.call("amin", {x, std::vector<int64_t>{0}, true}), g.call("argmax", {x, 2}),
            g.call("argmin", {x, 1, true}), g.call("argmax", {x}), g.call("any.dim", {x, 2}),
            g.call("all.dim", {x, 0})});
  t.expect_bitwise(g, special_inputs(g));
}

void outer_dimension(Target& t) {
  Graph g;
  Node* x = t.input(g, "x", {37, 150});
  g.output({g.call("amax", {x, std::vector<int64_t>{0}}), g.call("argmin", {x, 0, true}),
            g.call("any.dim", {x, 0})});
  std::vector<Tensor> in = special_inputs(g);
  in[0].set_double(20 * 150 + 3, std::numeric_limits<double>::quiet_NaN());
  t.expect_bitwise(g, in);
  Graph s;
  s.output({s.call("sum.dim_IntList", {t.input(s, "x", {37, 150}), std::vector<int64_t>{0}})});
  expect_sums_within_bound(t, s, random_inputs(s, 6), 37);
}

void integer_and_bool(Target& t) {
  Graph g;
  std::vector<Node*> outs;
  for (DType dt : {DType::Int64, DType::Int32, DType::UInt8, DType::Bool}) {
    Node* x = t.input(g, "x_" + std::string(dtype_name(dt)), {4, 13}, dt);
    for (Node* o : {g.call("sum.dim_IntList", {x, std::vector<int64_t>{1}}),
                    g.call("amax", {x, std::vector<int64_t>{1}}), g.call("argmin", {x, 1}),
                    g.call("any.default", {x}), g.call("all.dim", {x, 1})})
      outs.push_back(o);
    if (dt != DType::Bool) outs.push_back(g.call("prod.dim_int", {x, 1}));
  }
  g.output(outs);
  t.expect_bitwise(g, random_inputs(g, 4, -3, 4));
}

void argmax_ties_and_nans(Target& t) {
  Graph g;
  Node* x = t.input(g, "x", {3, 6});
  g.output({g.call("argmax", {x, 1}), g.call("argmin", {x, 1}),
            g.call("amax", {x, std::vector<int64_t>{1}})});
  double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor in = Tensor::from_vector<double>({3, 6},
                                          {1, 5, 5, 2, 5, 0,         // ties: the first wins
                                           3, nan, 9, nan, 1, 3,     // the first NaN wins
                                           -1, -1, -1, -1, -1, -1},  // all equal
                                          DType::Float32);
  t.expect_bitwise(g, {in});
  std::vector<Tensor> got = t.compiler().compile(g).run({in});
  EXPECT_EQ(got[0].to_vector<int64_t>(), (std::vector<int64_t>{1, 1, 0}));
  EXPECT_EQ(got[1].to_vector<int64_t>(), (std::vector<int64_t>{5, 1, 0}));
}

// Long reductions the backend's split_reduction may split (§6.5): a power of two, a prime length
// (no split factor divides it) and rows of a long 2-d input; sum, mean and max.
void split_reductions(Target& t) {
  for (int64_t n : {int64_t{1} << 20, int64_t{1000003}}) {
    Graph g;
    Node* x = t.input(g, "x", {n});
    g.output({g.call("sum.default", {x}), g.call("mean.default", {x})});
    expect_sums_within_bound(t, g, random_inputs(g, 11), n);
    Graph m;
    Node* y = t.input(m, "x", {n});
    m.output({m.call("amax", {y, std::vector<int64_t>{0}}), m.call("argmax", {y})});
    t.expect_bitwise(m, random_inputs(m, 12));
  }
  Graph g;
  g.output({g.call("sum.dim_IntList", {t.input(g, "x", {3, 300007}), std::vector<int64_t>{1}})});
  expect_sums_within_bound(t, g, random_inputs(g, 13), 300007);
}

// Fused graphs mixing pointwise ops and reductions: softmax and layer_norm (decomposed).
void softmax_and_layer_norm(Target& t) {
  Graph g;
  Node* x = t.input(g, "x", {8, 33});
  Node* w = t.input(g, "w", {33});
  Node* b = t.input(g, "b", {33});
  g.output({g.call("softmax.int", {x, -1}),
            g.call("layer_norm", {x, std::vector<int64_t>{33}, w, b})});
  std::vector<Tensor> in = random_inputs(g, 14);
  auto [got, want] = t.run_both(g, in);
  // Both normalise by a 33-term sum: each result is within a small multiple of 33 u of the
  // interpreter's (relative, the outputs are O(1)).
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(got[i].allclose(want[i], 64 * 33 * unit_roundoff(DType::Float32), 1e-6))
        << "output " << i;
}

}  // namespace

void add_reduction_cases(std::vector<Case>& out) {
  for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16})
    out.push_back({"Reduction", "Float_" + std::string(dtype_name(dt)),
                   [dt](Target& t) { float_reductions(t, dt); }});
  out.push_back({"Reduction", "OuterDimension", outer_dimension});
  out.push_back({"Reduction", "IntegerAndBool", integer_and_bool});
  out.push_back({"Reduction", "ArgmaxTiesAndNaNs", argmax_ties_and_nans});
  out.push_back({"Reduction", "SplitReductions", split_reductions});
  out.push_back({"Reduction", "SoftmaxAndLayerNorm", softmax_and_layer_norm});
}

}  // namespace stax::conformance
