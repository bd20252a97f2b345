// The functions the autodiff tests differentiate: one case per op overload (and per interesting
// shape / argument combination), shared by the VJP checks (autodiff_vjp_test.cpp) and the JVP
// checks (autodiff_functional_test.cpp). Shapes come from a fixed-seed generator.
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "tests/autodiff/autodiff_check.h"

namespace stax::testing {

using Builder = std::function<Node*(Graph&, const std::vector<Node*>&)>;

struct Case {
  std::string name;
  std::vector<In> inputs;
  Builder build;
  double h = 1e-6, atol = 1e-6, rtol = 1e-5;
};

inline std::ostream& operator<<(std::ostream& os, const Case& c) { return os << c.name; }

// op(x0, extra...) / op(x0, x1, extra...) / op(x0, x1, x2, extra...)
inline Builder call_n(std::string op, size_t n, std::vector<Arg> extra = {}, Kwargs kw = {}) {
  return [=](Graph& g, const std::vector<Node*>& x) {
    std::vector<Arg> args(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(n));
    args.insert(args.end(), extra.begin(), extra.end());
    return g.call(op, args, kw);
  };
}
inline Builder op1(std::string op, std::vector<Arg> extra = {}, Kwargs kw = {}) {
  return call_n(std::move(op), 1, std::move(extra), std::move(kw));
}
inline Builder op2(std::string op, std::vector<Arg> extra = {}, Kwargs kw = {}) {
  return call_n(std::move(op), 2, std::move(extra), std::move(kw));
}
inline Builder op3(std::string op, std::vector<Arg> extra = {}, Kwargs kw = {}) {
  return call_n(std::move(op), 3, std::move(extra), std::move(kw));
}

inline std::vector<int64_t> L(std::initializer_list<int64_t> v) { return v; }

// add(name, inputs, builder) appending a Case to `out` (the case lists of tests/ops/<family>/).
inline auto case_adder(std::vector<Case>& out) {
  return [&out](std::string name, std::vector<In> in, Builder b) {
    out.push_back({std::move(name), std::move(in), std::move(b)});
  };
}

inline std::vector<Case> unary_cases(std::mt19937_64& rng) {
  struct U1 {
    const char* op;
    std::function<In(Shape)> in;
    std::vector<Arg> extra;
  };
  auto u = [](Shape s) { return U(std::move(s)); };
  auto p = [](Shape s) { return P(std::move(s)); };
  auto nz = [](Shape s) { return NZ(std::move(s)); };
  const std::vector<U1> ops = {
      {"exp", u, {}},
      {"exp2", u, {}},
      {"expm1", u, {}},
      {"log", p, {}},
      {"log2", p, {}},
      {"log10", p, {}},
      {"log1p", [](Shape s) { return U(std::move(s), -0.5, 2); }, {}},
      {"sqrt", p, {}},
      {"rsqrt", p, {}},
      {"sin", u, {}},
      {"cos", u, {}},
      {"tan", [](Shape s) { return U(std::move(s), -1.2, 1.2); }, {}},
      {"tanh", u, {}},
      {"sigmoid", u, {}},
      {"erf", u, {}},
      {"reciprocal", nz, {}},
      {"abs", nz, {}},
      {"neg", u, {}},
      {"relu", nz, {}},
      {"gelu", u, {}},
      {"gelu", u, {Arg("tanh")}},
      {"silu", u, {}},
      {"sign", nz, {}},
      {"floor", u, {}},
      {"ceil", u, {}},
      {"round", u, {}},
      {"trunc", u, {}},
  };
  std::vector<Case> out;
  for (const auto& o : ops)
    for (int k = 0; k < 2; ++k) {
      Shape s = random_shape(rng, k == 0 ? 0 : 1, 3);
      std::string name =
          std::string(o.op) + (o.extra.empty() ? "" : "_tanh") + "_" + std::to_string(k);
      out.push_back({name, {o.in(s)}, op1(o.op, o.extra)});
    }
  // to.dtype through float32 and back: the float32 rounding needs a larger step.
  out.push_back({"to_dtype_roundtrip",
                 {U({3, 4})},
                 [](Graph& g, const std::vector<Node*>& x) {
                   Node* f = g.call("to.dtype", {x[0], DType::Float32});
                   return g.call("to.dtype", {g.call("exp", {f}), DType::Float64});
                 },
                 1e-2,
                 1e-3,
                 1e-3});
  return out;
}

inline std::vector<Case> binary_cases(std::mt19937_64& rng) {
  std::vector<Case> out;
  struct B2 {
    const char* op;
    std::function<In(Shape)> a, b;
    std::vector<Arg> extra;
    Kwargs kw;
    const char* tag;
  };
  auto u = [](Shape s) { return U(std::move(s)); };
  auto p = [](Shape s) { return P(std::move(s)); };
  auto nz = [](Shape s) { return NZ(std::move(s), 0.5, 2); };
  const std::vector<B2> ops = {
      {"add.Tensor", u, u, {}, {}, ""},
      {"add.Tensor", u, u, {}, {{"alpha", 2.5}}, "alpha"},
      {"sub.Tensor", u, u, {}, {}, ""},
      {"sub.Tensor", u, u, {}, {{"alpha", 3}}, "alpha_int"},
      {"sub.Tensor", u, u, {}, {{"alpha", 0.5}}, "alpha"},
      {"mul.Tensor", u, u, {}, {}, ""},
      {"div.Tensor", u, nz, {}, {}, ""},
      {"pow.Tensor_Tensor", p, u, {}, {}, ""},
      {"remainder.Tensor", [](Shape s) { return U(std::move(s), -3, 3); }, p, {}, {}, ""},
      {"maximum", u, u, {}, {}, ""},
      {"minimum", u, u, {}, {}, ""},
  };
  for (const auto& o : ops)
    for (int k = 0; k < 3; ++k) {
      Shape a = random_shape(rng, 1, 3);
      Shape b = k == 0 ? a : broadcast_partner(rng, a);
      if (k == 2) std::swap(a, b);  // the smaller operand first
      std::string name = std::string(o.op) + (*o.tag ? "_" : "") + o.tag + "_" + std::to_string(k);
      out.push_back({name, {o.a(a), o.b(b)}, op2(o.op, o.extra, o.kw)});
    }
  // 0-d operands broadcast too.
  out.push_back({"mul_Tensor_0d", {U({}), U({2, 3})}, op2("mul.Tensor")});
  out.push_back({"div_Tensor_0d", {U({2, 3}), NZ({}, 0.5, 2)}, op2("div.Tensor")});
  // One operand without a gradient.
  out.push_back({"mul_Tensor_const_other", {U({3, 2}), Const(U({2}))}, op2("mul.Tensor")});
  // The same input twice: contributions sum.
  out.push_back({"mul_Tensor_same_input", {U({4})}, [](Graph& g, const std::vector<Node*>& x) {
                   return g.call("mul.Tensor", {x[0], x[0]});
                 }});
  // Scalar overloads.
  out.push_back({"add_Scalar", {U({2, 3})}, op1("add.Scalar", {1.5}, {{"alpha", 2}})});
  out.push_back({"sub_Scalar", {U({2, 3})}, op1("sub.Scalar", {1.5})});
  out.push_back({"mul_Scalar", {U({2, 3})}, op1("mul.Scalar", {-1.5})});
  out.push_back({"div_Scalar", {U({2, 3})}, op1("div.Scalar", {4})});
  out.push_back({"pow_Scalar_float", {P({2, 3})}, op1("pow.Tensor_Scalar", {2.5})});
  out.push_back({"pow_Scalar_int", {U({2, 3})}, op1("pow.Tensor_Scalar", {3})});
  out.push_back({"pow_Scalar_zero", {U({2, 3})}, op1("pow.Tensor_Scalar", {0})});
  out.push_back({"pow_Scalar_base", {U({2, 3})}, [](Graph& g, const std::vector<Node*>& x) {
                   return g.call("pow.Scalar", {2.5, x[0]});
                 }});
  out.push_back({"remainder_Scalar", {U({2, 3}, -3, 3)}, op1("remainder.Scalar", {0.7})});
  // Selection.
  auto where_self = [](Graph& g, const std::vector<Node*>& x) {
    Node* c = g.call("gt.Scalar", {x[2], 0});
    return g.call("where.self", {c, x[0], x[1]});
  };
  out.push_back({"where_self", {U({3, 4}), U({4}), Const(U({3, 1}))}, where_self});
  out.push_back({"where_ScalarSelf",
                 {U({3, 4}), Const(U({3, 4}))},
                 [](Graph& g, const std::vector<Node*>& x) {
                   return g.call("where.ScalarSelf", {g.call("gt.Scalar", {x[1], 0}), 2.0, x[0]});
                 }});
  out.push_back({"where_ScalarOther",
                 {U({1, 4}), Const(U({3, 4}))},
                 [](Graph& g, const std::vector<Node*>& x) {
                   return g.call("where.ScalarOther", {g.call("gt.Scalar", {x[1], 0}), x[0], -1.0});
                 }});
  out.push_back({"clamp_min_max", {U({4, 5})}, op1("clamp", {-0.5, 0.7})});
  out.push_back({"clamp_min", {U({4, 5})}, op1("clamp", {0.1})});
  out.push_back({"clamp_max", {U({4, 5})}, op1("clamp", {Arg(), 0.2})});
  return out;
}

inline std::vector<Case> reduction_cases(std::mt19937_64& rng) {
  std::vector<Case> out;
  Shape s3 = random_shape(rng, 3, 3);
  out.push_back({"sum_default", {U(s3)}, op1("sum")});
  out.push_back({"sum_default_0d", {U({})}, op1("sum")});
  for (bool keep : {false, true}) {
    std::string k = keep ? "_keepdim" : "";
    out.push_back({"sum_dim_1" + k, {U(s3)}, op1("sum.dim_IntList", {L({1}), keep})});
    out.push_back({"sum_dim_0_2" + k, {U(s3)}, op1("sum.dim_IntList", {L({0, 2}), keep})});
    out.push_back({"sum_dim_neg" + k, {U(s3)}, op1("sum.dim_IntList", {L({-1}), keep})});
    out.push_back({"sum_dim_all" + k, {U(s3)}, op1("sum.dim_IntList", {L({}), keep})});
    out.push_back({"mean_dim" + k, {U(s3)}, op1("mean.dim", {L({0, -1}), keep})});
    out.push_back({"prod_dim_int" + k, {P(s3, 0.5, 1.5)}, op1("prod.dim_int", {1, keep})});
    out.push_back({"amax" + k, {U(s3)}, op1("amax", {L({1}), keep})});
    out.push_back({"amin" + k, {U(s3)}, op1("amin", {L({0, 2}), keep})});
    out.push_back({"var_dim" + k,
                   {U(s3)},
                   op1("var.correction", {L({1})}, {{"correction", 0}, {"keepdim", keep}})});
  }
  out.push_back({"mean_default", {U(s3)}, op1("mean")});
  out.push_back({"prod_default", {P({2, 3}, 0.5, 1.5)}, op1("prod")});
  // Exact zeros: the product stays smooth (multilinear), so finite differences still apply.
  out.push_back({"prod_default_one_zero", {Fixed({2, 2}, {1.5, 0.0, -0.7, 2.0})}, op1("prod")});
  out.push_back({"prod_default_two_zeros", {Fixed({2, 2}, {1.5, 0.0, 0.0, 2.0})}, op1("prod")});
  out.push_back({"prod_dim_zeros",
                 {Fixed({2, 3}, {0.0, 1.5, 2.0, 0.0, 0.0, -1.0})},
                 op1("prod.dim_int", {1})});
  out.push_back({"amax_all", {U({3, 4})}, op1("amax")});
  out.push_back({"amin_0d", {U({})}, op1("amin")});
  out.push_back({"var_all_default_correction", {U({4, 5})}, op1("var.correction")});
  out.push_back(
      {"var_correction_2", {U({6, 2})}, op1("var.correction", {L({0})}, {{"correction", 2}})});
  return out;
}

inline std::vector<Case> view_cases() {
  std::vector<Case> out;
  out.push_back({"view", {U({2, 6})}, op1("view", {L({3, 4})})});
  out.push_back({"unsafe_view", {U({2, 6})}, op1("_unsafe_view", {L({12})})});
  out.push_back({"reshape_of_permuted", {U({2, 3, 4})}, [](Graph& g, const std::vector<Node*>& x) {
                   Node* p = g.call("permute", {x[0], L({2, 0, 1})});
                   return g.call("reshape", {p, L({4, 6})});
                 }});
  out.push_back({"permute", {U({2, 3, 4})}, op1("permute", {L({1, -1, 0})})});
  out.push_back({"t", {U({3, 5})}, op1("t")});
  out.push_back({"t_1d", {U({3})}, op1("t")});
  out.push_back({"transpose", {U({2, 3, 4})}, op1("transpose.int", {0, -1})});
  out.push_back({"expand", {U({3, 1})}, op1("expand", {L({2, 3, 4})})});
  out.push_back({"expand_minus_one", {U({1, 4})}, op1("expand", {L({5, -1})})});
  out.push_back({"squeeze", {U({3, 1, 4, 1})}, op1("squeeze")});
  out.push_back({"squeeze_dim", {U({3, 1, 4})}, op1("squeeze.dim", {1})});
  out.push_back({"squeeze_dims", {U({1, 3, 1})}, op1("squeeze.dims", {L({0, 2})})});
  out.push_back({"unsqueeze", {U({3, 4})}, op1("unsqueeze", {-1})});
  out.push_back({"slice_middle", {U({6, 3})}, op1("slice.Tensor", {0, 1, 4})});
  out.push_back({"slice_prefix", {U({3, 6})}, op1("slice.Tensor", {1, 0, 2})});
  out.push_back({"slice_suffix_neg", {U({3, 6})}, op1("slice.Tensor", {-1, -2, Arg()})});
  out.push_back({"slice_step", {U({7, 2})}, op1("slice.Tensor", {0, 1, 7, 2})});
  out.push_back({"slice_step_dim1", {U({2, 9})}, op1("slice.Tensor", {1, 0, Arg(), 3})});
  out.push_back({"select", {U({4, 3})}, op1("select.int", {0, 2})});
  out.push_back({"select_neg", {U({2, 5})}, op1("select.int", {1, -1})});
  out.push_back({"alias", {U({3})}, op1("alias")});
  out.push_back({"clone", {U({3, 2})}, op1("clone")});
  out.push_back({"contiguous", {U({3, 2})}, [](Graph& g, const std::vector<Node*>& x) {
                   return g.call("contiguous", {g.call("t", {x[0]})});
                 }});
  out.push_back({"lift_fresh_copy", {U({3, 2})}, op1("lift_fresh_copy")});
  out.push_back({"_reshape_alias", {U({3, 2})},
                 op1("_reshape_alias", {std::vector<int64_t>{2, 3}, std::vector<int64_t>{3, 1}})});
  out.push_back({"_to_copy", {U({3, 2})}, op1("_to_copy")});
  out.push_back({"unflatten", {U({2, 6})}, op1("unflatten.int", {1, L({3, -1})})});
  // as_strided reading positions more than once: their gradients accumulate.
  out.push_back({"as_strided_overlap", {U({6})},
                 op1("as_strided", {std::vector<int64_t>{3, 2}, std::vector<int64_t>{1, 2}, 1})});
  out.push_back({"as_strided_2d", {U({3, 4})},
                 op1("as_strided", {std::vector<int64_t>{2, 3}, std::vector<int64_t>{4, 1}})});
  out.push_back({"as_strided_0d", {U({5})},
                 op1("as_strided", {std::vector<int64_t>{}, std::vector<int64_t>{}, 3})});
  return out;
}

inline std::vector<Case> indexing_cases() {
  std::vector<Case> out;
  out.push_back(
      {"cat", {U({2, 3}), U({2, 1}), Const(U({2, 2}))}, [](Graph& g, const std::vector<Node*>& x) {
         return g.call("cat", {Arg(std::vector<Node*>{x[0], x[1], x[2], x[0]}), 1});
       }});
  out.push_back({"cat_dim0", {U({1, 3}), U({2, 3})}, [](Graph& g, const std::vector<Node*>& x) {
                   return g.call("cat", {Arg(std::vector<Node*>{x[0], x[1]})});
                 }});
  out.push_back({"gather", {U({4, 3}), Idx({5, 3}, 4)}, [](Graph& g, const std::vector<Node*>& x) {
                   return g.call("gather", {x[0], 0, x[1]});
                 }});
  out.push_back(
      {"gather_dim1", {U({3, 5}), Idx({2, 4}, 5)}, [](Graph& g, const std::vector<Node*>& x) {
         return g.call("gather", {x[0], 1, x[1]});
       }});
  out.push_back({"index_one", {U({5, 3}), Idx({4}, 5)}, [](Graph& g, const std::vector<Node*>& x) {
                   return g.call("index.Tensor", {x[0], Arg(std::vector<Node*>{x[1]})});
                 }});
  out.push_back({"index_none_first",
                 {U({3, 5, 2}), Idx({2, 3}, 5)},
                 [](Graph& g, const std::vector<Node*>& x) {
                   return g.call("index.Tensor", {x[0], Arg(std::vector<Node*>{nullptr, x[1]})});
                 }});
  out.push_back(
      {"index_two",
       {U({3, 4, 2}), Idx({5}, 3), Idx({5}, 2)},
       [](Graph& g, const std::vector<Node*>& x) {
         return g.call("index.Tensor", {x[0], Arg(std::vector<Node*>{x[1], nullptr, x[2]})});
       }});
  out.push_back(
      {"index_select", {U({4, 3}), Idx({6}, 3)}, [](Graph& g, const std::vector<Node*>& x) {
         return g.call("index_select", {x[0], 1, x[1]});
       }});
  out.push_back({"index_put_accumulate",
                 {U({5, 3}), Idx({4}, 5), U({4, 3})},
                 [](Graph& g, const std::vector<Node*>& x) {
                   return g.call("index_put", {x[0], Arg(std::vector<Node*>{x[1]}), x[2], true});
                 }});
  out.push_back({"index_put_overwrite",
                 {U({5, 3}), Idx({4}, 5, 0), U({3})},
                 [](Graph& g, const std::vector<Node*>& x) {
                   return g.call("index_put", {x[0], Arg(std::vector<Node*>{x[1]}), x[2], false});
                 }});
  out.push_back({"scatter_add",
                 {U({4, 3}), Idx({3, 3}, 4), U({3, 3})},
                 [](Graph& g, const std::vector<Node*>& x) {
                   return g.call("scatter_add", {x[0], 0, x[1], x[2]});
                 }});
  out.push_back({"scatter_src",
                 {U({4, 3}), Idx({3, 2}, 4, 0), U({3, 3})},
                 [](Graph& g, const std::vector<Node*>& x) {
                   return g.call("scatter.src", {x[0], 0, x[1], x[2]});
                 }});
  out.push_back(
      {"scatter_value", {U({3, 4}), Idx({3, 2}, 4, 1)}, [](Graph& g, const std::vector<Node*>& x) {
         return g.call("scatter.value", {x[0], 1, x[1], 1.5});
       }});
  // scatter's reduce forms (scatter_reduce.two with include_self): the rule through the expansion.
  out.push_back({"scatter_reduce_form_add",
                 {U({4, 3}), Idx({3, 3}, 4), U({3, 3})},
                 [](Graph& g, const std::vector<Node*>& x) {
                   return g.call("scatter.reduce", {x[0], 0, x[1], x[2]}, {{"reduce", "add"}});
                 }});
  // (reduce="multiply" is scatter_reduce prod: Stax has no derivative for it, a clear error.)
  out.push_back({"scatter_value_reduce_form_add",
                 {U({3, 4}), Idx({3, 2}, 4, 1)},
                 [](Graph& g, const std::vector<Node*>& x) {
                   return g.call("scatter.value_reduce", {x[0], 1, x[1], 1.5}, {{"reduce", "add"}});
                 }});
  return out;
}

inline std::vector<Case> extern_cases() {
  std::vector<Case> out;
  auto mm = [&](std::string name, Shape a, Shape b) {
    out.push_back({"matmul_" + name, {U(a), U(b)}, op2("matmul")});
  };
  mm("2d_2d", {3, 4}, {4, 2});
  mm("1d_1d", {4}, {4});
  mm("1d_2d", {4}, {4, 3});
  mm("2d_1d", {3, 4}, {4});
  mm("3d_2d", {2, 3, 4}, {4, 5});
  mm("2d_3d", {3, 4}, {2, 4, 5});
  mm("1d_3d", {4}, {2, 4, 3});
  mm("3d_1d", {2, 3, 4}, {4});
  mm("batch_broadcast", {2, 1, 3, 4}, {5, 4, 2});
  out.push_back({"mm", {U({3, 4}), U({4, 2})}, op2("mm")});
  out.push_back({"bmm", {U({2, 3, 4}), U({2, 4, 5})}, op2("bmm")});
  out.push_back({"addmm", {U({3, 2}), U({3, 4}), U({4, 2})}, op3("addmm")});
  out.push_back({"addmm_bias_row_scaled",
                 {U({2}), U({3, 4}), U({4, 2})},
                 op3("addmm", {}, {{"beta", 0.5}, {"alpha", 2}})});
  out.push_back(
      {"addmm_beta0", {U({3, 2}), U({3, 4}), U({4, 2})}, op3("addmm", {}, {{"beta", 0}})});
  // Operands read transposed (nn.Linear's addmm(b, x, t(W))): the rules compute the transposed
  // product then, so that W's gradient comes out row-major (core/ops/extern/vjp.cpp).
  out.push_back({"addmm_weight_permuted",
                 {U({2}), U({3, 4}), U({2, 4})},
                 [](Graph& g, const std::vector<Node*>& x) {
                   Node* wt = g.call("permute", {x[2], std::vector<int64_t>{1, 0}});
                   return g.call("addmm", {x[0], x[1], wt});
                 }});
  out.push_back({"mm_both_transposed",
                 {U({4, 3}), U({2, 4})},
                 [](Graph& g, const std::vector<Node*>& x) {
                   return g.call("mm", {g.call("t", {x[0]}), g.call("transpose.int", {x[1], 0, 1})});
                 }});
  return out;
}

inline std::vector<Case> composite_cases() {
  std::vector<Case> out;
  out.push_back({"softmax", {U({3, 5})}, op1("softmax.int", {1})});
  out.push_back({"softmax_dim0", {U({4, 2, 3})}, op1("softmax.int", {0})});
  out.push_back({"log_softmax", {U({3, 5})}, op1("log_softmax.int", {-1})});
  out.push_back({"_softmax", {U({3, 5})}, op1("_softmax", {1, false})});
  out.push_back({"_log_softmax", {U({3, 5})}, op1("_log_softmax", {0, false})});
  out.push_back(
      {"layer_norm", {U({3, 4}), U({4}), U({4})}, [](Graph& g, const std::vector<Node*>& x) {
         return g.call("layer_norm", {x[0], L({4}), x[1], x[2]});
       }});
  out.push_back(
      {"layer_norm_2d_no_affine", {U({2, 3, 4})}, op1("layer_norm", {L({3, 4})}, {{"eps", 1e-3}})});
  out.push_back({"linear", {U({2, 3, 4}), U({5, 4}), U({5})}, op3("linear")});
  out.push_back({"linear_no_bias_1d", {U({4}), U({3, 4})}, op2("linear")});
  out.push_back({"dropout_train", {U({6, 5})}, op1("dropout", {0.4, true})});
  out.push_back({"dropout_eval", {U({6, 5})}, op1("dropout", {0.4, false})});
  // Example 5.1 (in float64).
  out.push_back({"example_5_1", {U({4, 6}), U({6, 3})}, [](Graph& g, const std::vector<Node*>& x) {
                   return g.call("sum", {g.call("gelu", {g.call("matmul", {x[0], x[1]})})});
                 }});
  return out;
}

}  // namespace stax::testing

#include "tests/ops/nn/nn_cases.h"  // nn_cases(): the neural-network ops
#include "tests/ops/model_op_cases.h"
// Issue 14's aten ops, by family: autodiff_vjp_test (VJPs) and autodiff_functional_test (JVPs)
// compare each rule with central differences in float64; inputs stay inside each function's
// domain and away from kinks (shrink thresholds, huber's delta, fmax ties, the median's ties).
#include "tests/ops/creation/creation_cases.h"
#include "tests/ops/extern/product_cases.h"
#include "tests/ops/functional_form_cases.h"
#include "tests/ops/indexing/indexing_composite_cases.h"
#include "tests/ops/nn/backward_op_cases.h"
#include "tests/ops/nn/functional_cases.h"
#include "tests/ops/pointwise/backward_op_cases.h"
#include "tests/ops/pointwise/math_op_cases.h"
#include "tests/ops/reduction/reduction_composite_cases.h"
#include "tests/ops/special/special_function_cases.h"

namespace stax::testing {

inline std::vector<Case> all_cases() {
  std::mt19937_64 rng(20240611);
  std::vector<Case> out;
  for (auto& v : {unary_cases(rng), binary_cases(rng), reduction_cases(rng), view_cases(),
                  indexing_cases(), extern_cases(), composite_cases(), nn_cases(), model_cases(),
                  pointwise_math_cases(), special_function_cases(), nn_functional_cases(),
                  matrix_product_cases(), reduction_composite_cases(),
                  indexing_composite_cases(), nn_backward_op_cases(), creation_cases(),
                  pointwise_backward_op_cases(), functional_form_cases()})
    out.insert(out.end(), v.begin(), v.end());
  return out;
}

}  // namespace stax::testing
