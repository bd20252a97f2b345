// Extern kernels (the matmul family): the plugin's own kernels when it offers them, else the
// interpreter's. Results within the gemm bound 2 (k+1) u Σ_k |a_ik b_kj| (plus one rounding of
// the result), which holds for any summation order and blocking.
#include <string>

#include "core/interpreter/interpreter.h"
#include "stax/conformance/compare.h"
#include "target.h"

namespace stax::conformance {
namespace {

void expect_gemm_bound(Target& t, const Graph& g, int64_t k) {
  std::vector<Tensor> in = random_inputs(g, 5);
  auto [got, want] = t.run_both(g, in);
  std::vector<Tensor> abs_in;
  for (const Tensor& x : in) abs_in.push_back(abs_of(x));
  Tensor mag = interpret(g, abs_in)[0];
  EXPECT_TRUE(within_bound(got[0], want[0], reduction_bound(want[0], mag, k + 2)));
}

void matmul_family(Target& t, DType dt) {
  {
    Graph g;
    g.output({g.call("mm", {t.input(g, "a", {33, 70}, dt), t.input(g, "b", {70, 19}, dt)})});
    expect_gemm_bound(t, g, 70);
  }
  {
    Graph g;  // transposed operands: strided views of the inputs
    Node* a = t.input(g, "a", {70, 33}, dt);
    Node* b = t.input(g, "b", {19, 70}, dt);
    g.output({g.call("mm", {g.call("t", {a}), g.call("t", {b})})});
    expect_gemm_bound(t, g, 70);
  }
  {
    Graph g;
    g.output({g.call("bmm", {t.input(g, "a", {3, 9, 16}, dt), t.input(g, "b", {3, 16, 5}, dt)})});
    expect_gemm_bound(t, g, 16);
  }
  {
    Graph g;  // beta * self + alpha * (a @ b), self broadcast over rows
    Node* self = t.input(g, "c", {12}, dt);
    Node* a = t.input(g, "a", {7, 20}, dt);
    Node* b = t.input(g, "b", {20, 12}, dt);
    g.output({g.call("addmm", {self, a, b}, {{"beta", Arg(0.5)}, {"alpha", Arg(2)}})});
    expect_gemm_bound(t, g, 21);
  }
  const std::vector<std::pair<Shape, Shape>> shapes = {{{16}, {16}},
                                                       {{16}, {16, 7}},
                                                       {{9, 16}, {16}},
                                                       {{4, 9, 16}, {16, 7}},
                                                       {{2, 1, 9, 16}, {3, 16, 7}},
                                                       {{16}, {2, 16, 7}}};
  for (const auto& [sa, sb] : shapes) {
    SCOPED_TRACE("matmul " + shape_str(sa) + " @ " + shape_str(sb));
    Graph g;
    g.output({g.call("matmul", {t.input(g, "a", sa, dt), t.input(g, "b", sb, dt)})});
    expect_gemm_bound(t, g, 16);
  }
}

// Half and integer products are exact enough to compare bit for bit (float32 accumulation of
// at most 8 products of halves is exact; integers wrap identically).
void small_products(Target& t) {
  for (DType dt : {DType::Float16, DType::BFloat16, DType::Int64, DType::Int32}) {
    SCOPED_TRACE(dtype_name(dt));
    Graph g;
    g.output({g.call("matmul", {t.input(g, "a", {2, 5, 8}, dt), t.input(g, "b", {8, 3}, dt)})});
    Tensor a = Tensor::randint({2, 5, 8}, -4, 5, DType::Int64, 6).to(dt);
    Tensor b = Tensor::randint({8, 3}, -4, 5, DType::Int64, 7).to(dt);
    t.expect_bitwise(g, {a, b});
  }
}

// A graph mixing an extern with fused kernels before and after it (an MLP layer).
void mlp_layer(Target& t) {
  Graph g;
  Node* x = t.input(g, "x", {8, 24});
  Node* w = t.input(g, "w", {24, 16});
  Node* b = t.input(g, "b", {16});
  Node* h = g.call("relu", {g.call("add.Tensor", {g.call("mm", {x, w}), b})});
  g.output({g.call("sum.dim_IntList", {g.call("mul.Tensor", {h, h}), std::vector<int64_t>{1}})});
  std::vector<Tensor> in = random_inputs(g, 9);
  auto [got, want] = t.run_both(g, in);
  EXPECT_TRUE(got[0].allclose(want[0], 64 * 40 * unit_roundoff(DType::Float32), 1e-5));
}

}  // namespace

void add_extern_cases(std::vector<Case>& out) {
  for (DType dt : {DType::Float32, DType::Float64})
    out.push_back({"Extern", "MatmulFamily_" + std::string(dtype_name(dt)),
                   [dt](Target& t) { matmul_family(t, dt); }});
  out.push_back({"Extern", "HalfAndIntegerProducts", small_products});
  out.push_back({"Extern", "MlpLayer", mlp_layer});
}

}  // namespace stax::conformance
