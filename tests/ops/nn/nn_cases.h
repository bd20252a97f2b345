// Gradient (VJP) and tangent (JVP) check cases of the neural-network ops (core/graph/ops/nn_ops.cpp),
// appended to all_cases() (autodiff_cases.h): every nn rule is checked against central finite
// differences by autodiff_vjp_test and autodiff_functional_test. Included from autodiff_cases.h
// after Case and its helpers are defined.
#pragma once

#include <limits>

namespace stax::testing {

inline std::vector<Case> nn_cases() {
  using A = std::vector<Arg>;
  auto conv = [](A geometry) {  // convolution(x, w, b, stride, padding, dilation, transposed, op, groups)
    return [geometry](Graph& g, const std::vector<Node*>& x) {
      A args{x[0], x[1], x.size() > 2 ? Arg(x[2]) : Arg()};
      args.insert(args.end(), geometry.begin(), geometry.end());
      return g.call("convolution", args);
    };
  };
  Arg I1(L({1})), I0(L({0})), I11(L({1, 1})), I00(L({0, 0})), I111(L({1, 1, 1})), I000(L({0, 0, 0}));
  std::vector<Case> c = {
      {"convolution_1d_grouped_strided", {U({2, 4, 7}), U({6, 2, 3}), U({6})},
       conv({L({2}), L({1}), I1, false, I0, 2})},
      {"convolution_2d_dilated", {U({2, 3, 5, 6}), U({4, 3, 3, 2}), U({4})},
       conv({L({1, 2}), L({1, 0}), L({2, 1}), false, I00, 1})},
      {"convolution_2d_transposed_grouped", {U({1, 4, 3, 4}), U({4, 2, 3, 3}), U({4})},
       conv({L({2, 2}), L({1, 1}), I11, true, L({1, 0}), 2})},
      {"convolution_3d", {U({1, 2, 3, 4, 3}), U({2, 2, 2, 2, 2})},
       conv({I111, L({1, 0, 1}), I111, false, I000, 1})},
      {"conv1d", {U({2, 3, 6}), U({2, 3, 2}), U({2})}, op3("conv1d", {L({1}), L({1})})},
      {"conv2d", {U({1, 2, 5, 5}), U({3, 2, 3, 3}), U({3})}, op3("conv2d", {L({2, 2}), L({1, 1})})},
      {"conv3d", {U({1, 2, 3, 3, 3}), U({2, 2, 2, 2, 2})}, op2("conv3d")},
      {"conv1d_padding_same", {U({2, 6}), U({3, 2, 4}), U({3})}, op3("conv1d.padding", {L({1}), "same", L({2})})},
      {"conv2d_padding_same", {U({1, 2, 4, 5}), U({2, 2, 3, 2})}, op2("conv2d.padding", {Arg(), L({1, 1}), "same"})},
      {"conv3d_padding_valid", {U({1, 1, 3, 3, 3}), U({1, 1, 2, 2, 2})}, op2("conv3d.padding", {Arg(), L({1, 1, 1}), "valid"})},
      {"conv_transpose1d", {U({2, 2, 4}), U({2, 3, 3}), U({3})}, op3("conv_transpose1d", {L({2})})},
      {"conv_transpose2d", {U({1, 2, 3, 3}), U({2, 2, 2, 2})}, op2("conv_transpose2d.input", {Arg(), L({2, 1})})},
      {"conv_transpose3d", {U({1, 2, 2, 2, 2}), U({2, 1, 2, 2, 2})}, op2("conv_transpose3d.input")},
      {"batch_norm_training", {U({3, 4, 2, 2}), U({4}), U({4})},
       op3("batch_norm", {Arg(), Arg(), true, 0.1, 1e-5, false})},
      {"batch_norm_eval", {U({3, 2, 4}), U({2}), U({2}), Const(U({2})), Const(P({2}))},
       call_n("batch_norm", 5, {false, 0.1, 1e-5, false})},
      {"group_norm", {U({2, 6, 3}), U({6}), U({6})},
       [](Graph& g, const std::vector<Node*>& x) { return g.call("group_norm", {x[0], 3, x[1], x[2]}); }},
      // all three outputs: torch's backward also takes the gradients of mean and rstd
      {"native_group_norm_all_outputs", {U({2, 6, 3}), U({6}), U({6})},
       [](Graph& g, const std::vector<Node*>& x) {
         Node* r = g.call("native_group_norm", {x[0], x[1], x[2], 2, 6, 3, 3, 1e-5});
         std::vector<Node*> flat;
         for (int64_t k = 0; k < 3; ++k)
           flat.push_back(g.call("reshape", {g.call("getitem", {r, k}), L({-1})}));
         return g.call("cat", {Arg(flat)});
       }},
      {"embedding", {U({10, 3}), Idx({2, 4}, 10)}, op2("embedding")},
      {"embedding_dense_backward", {U({2, 4, 3}), Idx({2, 4}, 10)},
       op2("embedding_dense_backward", {10, -1, false})},
      {"max_pool1d", {U({2, 3, 9})}, op1("max_pool1d", {L({3}), L({2}), L({1})})},
      {"max_pool2d_ceil_dilated", {U({1, 2, 7, 6})},
       op1("max_pool2d", {L({3, 2}), L({2, 2}), L({1, 0}), L({1, 2}), true})},
      {"max_pool3d", {U({1, 1, 4, 4, 4})}, op1("max_pool3d", {L({2, 2, 2})})},
      {"avg_pool1d", {U({2, 3, 9})}, op1("avg_pool1d", {L({3}), L({2}), L({1}), false, false})},
      {"avg_pool2d_ceil", {U({1, 2, 7, 6})}, op1("avg_pool2d", {L({3, 2}), L({2, 2}), L({1, 1}), true})},
      {"avg_pool3d", {U({1, 1, 4, 4, 4})}, op1("avg_pool3d", {L({2, 2, 2})})},
      {"adaptive_avg_pool1d", {U({2, 3, 7})}, op1("adaptive_avg_pool1d", {L({3})})},
      {"adaptive_avg_pool2d", {U({1, 2, 6, 5})}, op1("adaptive_avg_pool2d", {L({3, 2})})},
      {"adaptive_avg_pool3d", {U({1, 1, 4, 3, 4})}, op1("adaptive_avg_pool3d", {L({2, 2, 3})})},
      {"constant_pad_nd", {U({2, 3, 4})}, op1("constant_pad_nd", {L({1, 2, -1, 1}), 0.5})},
      {"reflection_pad1d", {U({2, 5})}, op1("reflection_pad1d", {L({2, 3})})},
      {"reflection_pad2d", {U({1, 4, 4})}, op1("reflection_pad2d", {L({1, 2, 3, 1})})},
      {"replication_pad1d", {U({2, 5})}, op1("replication_pad1d", {L({2, 3})})},
      {"replication_pad2d", {U({1, 3, 4})}, op1("replication_pad2d", {L({1, 2, 3, 1})})},
      {"upsample_nearest2d", {U({1, 2, 3, 4})}, op1("upsample_nearest2d", {L({5, 7})})},
      {"upsample_bilinear2d", {U({1, 2, 3, 4})}, op1("upsample_bilinear2d", {L({5, 7}), false})},
      {"upsample_bilinear2d_align_corners", {U({1, 2, 3, 4})},
       op1("upsample_bilinear2d", {L({5, 7}), true})},
      {"nll_loss", {U({5, 4}), Idx({5}, 4), Const(P({4}))}, op3("nll_loss")},
      {"nll_loss_1d_none", {U({4}), Idx({}, 4)}, op2("nll_loss", {Arg(), 0})},
      {"nll_loss2d_sum", {U({2, 3, 2, 2}), Idx({2, 2, 2}, 3)}, op2("nll_loss2d", {Arg(), 2})},
      {"nll_loss_backward", {U({}), U({5, 4}), Idx({5}, 4), P({4}), P({})},
       [](Graph& g, const std::vector<Node*>& x) {
         return g.call("nll_loss_backward", {x[0], x[1], x[2], x[3], 1, -100, x[4]});
       }},
      {"mse_loss", {U({3, 4}), U({3, 4})}, op2("mse_loss")},
      {"smooth_l1_loss", {U({3, 4}), U({3, 4})}, op2("smooth_l1_loss", {0, 0.7})},
      {"binary_cross_entropy_with_logits", {U({3, 4}), U({3, 4}, 0, 1), P({4}), P({4})},
       call_n("binary_cross_entropy_with_logits", 4)},
      {"cross_entropy_loss", {U({4, 5}), Idx({4}, 5)}, op2("cross_entropy_loss", {Arg(), 1, -100, 0.1})},
      {"cross_entropy_loss_probabilities", {U({4, 5}), U({4, 5}, 0, 1)}, op2("cross_entropy_loss")},
      {"scaled_dot_product_attention_causal", {U({2, 3, 4}), U({2, 3, 4}), U({2, 3, 5})},
       op3("scaled_dot_product_attention", {Arg(), 0.0, true})},
      {"scaled_dot_product_attention_mask", {U({2, 2, 3, 4}), U({2, 2, 4, 4}), U({2, 2, 4, 3}), U({3, 4})},
       call_n("scaled_dot_product_attention", 4)},
  };
  return c;
}

}  // namespace stax::testing
