// Autodiff cases of the nn family's *_backward ops (core/ops/nn/backward_ops.cpp, embedding_bag.cpp):
// the ops AOTAutograd's backward graphs carry, whose own VJP / JVP rules (a higher-order
// gradient) differentiate their decomposition. Each case differentiates the backward op with
// respect to its grad_output and, where it depends on them smoothly, its other float inputs;
// inputs that torch's backward takes from the forward (indices, buffers, distances) are computed
// in the graph from the forward op, so a finite difference moves them together as in a real
// backward graph. (Included by tests/autodiff/autodiff_cases.h, which says how they are checked.)
#pragma once

#include <vector>

namespace stax::testing {

using CaseAdd = std::function<void(std::string, std::vector<In>, Builder)>;

// An int64 input with fixed values (indices, offsets), never differentiated.
inline In FixedIdx(Shape s, std::vector<double> v) {
  In i = Fixed(std::move(s), std::move(v));
  i.dtype = DType::Int64;
  i.diff = false;
  return i;
}

// Pooling, adaptive pooling and upsampling backward ops.
inline void add_pooling_backward_cases(const CaseAdd& add) {
  add("avg_pool2d_backward", {U({1, 2, 3, 3}), U({1, 2, 5, 4})},
      op2("avg_pool2d_backward", {L({2, 2}), L({2, 1}), L({1, 0}), false, true, Arg()}));
  add("avg_pool2d_backward_ceil_divisor", {U({1, 1, 3, 3}), U({1, 1, 5, 5})},
      op2("avg_pool2d_backward", {L({2, 2}), L({2, 2}), L({0, 0}), true, false, 3}));
  add("avg_pool3d_backward", {U({1, 1, 2, 2, 2}), U({1, 1, 4, 3, 4})},
      op2("avg_pool3d_backward", {L({2, 2, 2}), L({2, 1, 2}), L({0, 0, 0}), false, true, Arg()}));
  add("max_pool2d_with_indices_backward", {U({1, 2, 3, 3}), U({1, 2, 5, 4})},
      [](Graph& g, const std::vector<Node*>& x) {
        std::vector<Arg> geo{L({2, 2}), L({2, 1}), L({1, 0}), L({1, 1}), false};
        Node* fwd = g.call("max_pool2d_with_indices", {x[1], geo[0], geo[1], geo[2], geo[3], geo[4]});
        Node* idx = g.call("getitem", {fwd, int64_t{1}});
        return g.call("max_pool2d_with_indices_backward",
                      {x[0], x[1], geo[0], geo[1], geo[2], geo[3], geo[4], idx});
      });
  add("max_pool3d_with_indices_backward", {U({1, 1, 2, 2, 2}), U({1, 1, 4, 3, 4})},
      [](Graph& g, const std::vector<Node*>& x) {
        std::vector<Arg> geo{L({2, 2, 2}), L({2, 1, 2}), L({0, 0, 0}), L({1, 1, 1}), false};
        Node* fwd = g.call("max_pool3d_with_indices", {x[1], geo[0], geo[1], geo[2], geo[3], geo[4]});
        Node* idx = g.call("getitem", {fwd, int64_t{1}});
        return g.call("max_pool3d_with_indices_backward",
                      {x[0], x[1], geo[0], geo[1], geo[2], geo[3], geo[4], idx});
      });
  for (int sp : {2, 3}) {
    std::string n = std::to_string(sp);
    Shape self = sp == 2 ? Shape{1, 2, 5, 4} : Shape{1, 1, 3, 4, 2};
    std::vector<int64_t> size = sp == 2 ? std::vector<int64_t>{3, 2} : std::vector<int64_t>{2, 2, 1};
    Shape out(self.begin(), self.begin() + 2);
    out.insert(out.end(), size.begin(), size.end());
    add("_adaptive_avg_pool" + n + "d_backward", {U(out), U(self)},
        op2("_adaptive_avg_pool" + n + "d_backward"));
    add("adaptive_max_pool" + n + "d_backward", {U(out), U(self)},
        [n, size](Graph& g, const std::vector<Node*>& x) {
          Node* fwd = g.call("adaptive_max_pool" + n + "d", {x[1], size});
          Node* idx = g.call("getitem", {fwd, int64_t{1}});
          return g.call("adaptive_max_pool" + n + "d_backward", {x[0], x[1], idx});
        });
  }
  add("upsample_nearest1d_backward", {U({1, 2, 5})},
      op1("upsample_nearest1d_backward", {L({5}), L({1, 2, 3}), Arg()}));
  add("upsample_nearest2d_backward", {U({1, 2, 5, 7})},
      op1("upsample_nearest2d_backward", {L({5, 7}), L({1, 2, 3, 4}), Arg(), Arg()}));
  for (bool corners : {false, true})
    add(std::string("upsample_bilinear2d_backward") + (corners ? "_align_corners" : ""),
        {U({1, 2, 5, 7})},
        op1("upsample_bilinear2d_backward", {L({5, 7}), L({1, 2, 3, 4}), corners, Arg(), Arg()}));
}

// Padding backward ops and the 3-d pads.
inline void add_padding_backward_cases(const CaseAdd& add) {
  add("reflection_pad1d_backward", {U({2, 10}), U({2, 5})}, op2("reflection_pad1d_backward", {L({2, 3})}));
  add("reflection_pad2d_backward", {U({1, 8, 7}), U({1, 4, 4})},
      op2("reflection_pad2d_backward", {L({1, 2, 3, 1})}));
  add("reflection_pad3d", {U({1, 3, 4, 3})}, op1("reflection_pad3d", {L({1, 2, 2, 1, 1, 1})}));
  add("reflection_pad3d_backward", {U({1, 5, 7, 6}), U({1, 3, 4, 3})},
      op2("reflection_pad3d_backward", {L({1, 2, 2, 1, 1, 1})}));
  add("replication_pad1d_backward", {U({2, 10}), U({2, 5})}, op2("replication_pad1d_backward", {L({2, 3})}));
  add("replication_pad2d_backward", {U({1, 7, 7}), U({1, 3, 4})},
      op2("replication_pad2d_backward", {L({1, 2, 3, 1})}));
  add("replication_pad3d", {U({1, 2, 3, 2})}, op1("replication_pad3d", {L({1, 2, 0, 1, 2, 1})}));
  add("replication_pad3d_backward", {U({1, 5, 4, 5}), U({1, 2, 3, 2})},
      op2("replication_pad3d_backward", {L({1, 2, 0, 1, 2, 1})}));
}

// Loss and activation backward ops. Inputs of the piecewise ones (huber, smooth L1, the shrinks)
// keep away from their kinks.
inline void add_pointwise_backward_cases(const CaseAdd& add) {
  In a4 = Fixed({4}, {0.0, 1.0, -2.0, 0.3}), t4 = Fixed({4}, {0.2, -1.5, 0.1, 0.4});
  In s5 = Fixed({5}, {-2.0, -0.7, 0.2, 0.9, 1.8});
  add("mse_loss_backward_mean", {U({}), U({3, 4}), U({3, 4})}, op3("mse_loss_backward", {1}));
  add("mse_loss_backward_none", {U({3, 4}), U({3, 4}), U({3, 4})}, op3("mse_loss_backward", {0}));
  add("smooth_l1_loss_backward", {U({4}), a4, t4}, op3("smooth_l1_loss_backward", {0, 0.7}));
  add("huber_loss_backward", {U({}), a4, t4}, op3("huber_loss_backward", {2, 1.0}));
  add("soft_margin_loss_backward", {U({}), U({3, 4}), U({3, 4})}, op3("soft_margin_loss_backward", {1}));
  add("binary_cross_entropy_backward", {U({}), U({3, 4}, 0.1, 0.9), U({3, 4}, 0, 1), P({4})},
      [](Graph& g, const std::vector<Node*>& x) {
        return g.call("binary_cross_entropy_backward", {x[0], x[1], x[2], x[3], 1});
      });
  add("binary_cross_entropy_backward_none", {U({3, 4}), U({3, 4}, 0.1, 0.9), U({3, 4}, 0, 1)},
      op3("binary_cross_entropy_backward", {Arg(), 0}));
  add("nll_loss2d_backward", {U({}), U({2, 3, 2, 2}), Idx({2, 2, 2}, 3), P({3}), P({})},
      [](Graph& g, const std::vector<Node*>& x) {
        return g.call("nll_loss2d_backward", {x[0], x[1], x[2], x[3], 2, -100, x[4]});
      });
  add("log_sigmoid_backward", {U({3, 4}), U({3, 4}, -4, 4)}, [](Graph& g, const std::vector<Node*>& x) {
    Node* buffer = g.call("getitem", {g.call("log_sigmoid_forward", {x[1]}), int64_t{1}});
    return g.call("log_sigmoid_backward", {x[0], x[1], buffer});
  });
  add("glu_backward", {U({3, 2}), U({3, 4})}, op2("glu_backward", {1}));
  add("glu_backward_dim0", {U({2, 3}), U({4, 3})}, op2("glu_backward", {0}));
  add("hardshrink_backward", {U({5}), s5}, op2("hardshrink_backward", {0.5}));
  add("softshrink_backward", {U({5}), s5}, op2("softshrink_backward", {0.5}));
  add("native_dropout_backward", {U({4, 5}), Const(U({4, 5}))}, [](Graph& g, const std::vector<Node*>& x) {
    return g.call("native_dropout_backward", {x[0], g.call("gt.Scalar", {x[1], 0}), 1.25});
  });
  add("_prelu_kernel", {NZ({2, 3, 4}), U({3, 1})}, op2("_prelu_kernel"));
}

// The distance backward ops, the distances computed by their forward ops in the graph.
inline void add_distance_backward_cases(const CaseAdd& add) {
  for (double p : {2.0, 3.0}) {
    std::string tag = p == 2.0 ? "" : "_p3";
    add("_cdist_backward" + tag, {U({3, 2}), U({3, 4}), U({2, 4})},
        [p](Graph& g, const std::vector<Node*>& x) {
          Node* d = g.call("_cdist_forward", {x[1], x[2], p, Arg()});
          return g.call("_cdist_backward", {x[0], x[1], x[2], p, d});
        });
    add("_pdist_backward" + tag, {U({6}), U({4, 3})}, [p](Graph& g, const std::vector<Node*>& x) {
      Node* d = g.call("_pdist_forward", {x[1], p});
      return g.call("_pdist_backward", {x[0], x[1], p, d});
    });
  }
}

// The embedding-bag backward ops: offset2bag, bag_size and max_indices from _embedding_bag.
inline void add_embedding_bag_backward_cases(const CaseAdd& add) {
  In idx = FixedIdx({7}, {0, 2, 5, 1, 2, 4, 3}), offs = FixedIdx({3}, {0, 3, 5});
  for (int64_t mode : {0, 1, 2}) {
    add("_embedding_bag_backward_mode" + std::to_string(mode), {U({3, 4}), Const(U({6, 4})), idx, offs},
        [mode](Graph& g, const std::vector<Node*>& x) {
          Node* bag = g.call("_embedding_bag", {x[1], x[2], x[3], false, mode});
          auto part = [&](int64_t k) { return g.call("getitem", {bag, k}); };
          return g.call("_embedding_bag_backward",
                        {x[0], x[2], x[3], part(1), part(2), part(3), 6, false, mode, false, Arg()});
        });
  }
  add("_embedding_bag_backward_per_sample_weights", {U({3, 4}), Const(U({6, 4})), idx, offs, U({7})},
      [](Graph& g, const std::vector<Node*>& x) {
        Node* bag = g.call("_embedding_bag", {x[1], x[2], x[3], false, 0, false, x[4]});
        auto part = [&](int64_t k) { return g.call("getitem", {bag, k}); };
        return g.call("_embedding_bag_backward",
                      {x[0], x[2], x[3], part(1), part(2), part(3), 6, false, 0, false, x[4]});
      });
  add("_embedding_bag_per_sample_weights_backward", {U({3, 4}), U({6, 4}), idx, offs},
      [](Graph& g, const std::vector<Node*>& x) {
        Node* bag = g.call("_embedding_bag", {x[1], x[2], x[3], false, 0});
        Node* offset2bag = g.call("getitem", {bag, int64_t{1}});
        return g.call("_embedding_bag_per_sample_weights_backward", {x[0], x[1], x[2], x[3], offset2bag, 0});
      });
}

// The view backward ops: the gradient scattered into zeros of the input's size.
inline void add_view_backward_cases(const CaseAdd& add) {
  add("select_backward", {U({3})}, op1("select_backward", {L({4, 3}), 0, 2}));
  add("slice_backward", {U({2, 3})}, op1("slice_backward", {L({7, 3}), 0, 1, 5, 2}));
  add("diagonal_backward", {U({3})}, op1("diagonal_backward", {L({3, 4}), 1, 0, 1}));
  // windows of 3 every 2 overlap: their gradients add
  add("unfold_backward", {U({2, 3, 3})}, op1("unfold_backward", {L({2, 7}), 1, 3, 2}));
}

// The spatial ops of Core ATen: im2col / col2im (nn.Unfold / nn.Fold), grid_sampler_2d.
inline void add_spatial_cases(const CaseAdd& add) {
  add("im2col", {U({1, 2, 3, 4})}, op1("im2col", {L({2, 2}), L({1, 1}), L({0, 0}), L({1, 1})}));
  add("im2col_dilated_padded_strided", {U({1, 1, 5, 5})},
      op1("im2col", {L({2, 3}), L({2, 1}), L({1, 1}), L({2, 2})}));
  add("col2im", {U({1, 8, 6})}, op1("col2im", {L({3, 4}), L({2, 2}), L({1, 1}), L({0, 0}), L({1, 1})}));
  add("col2im_unbatched_strided", {U({4, 4})},
      op1("col2im", {L({4, 4}), L({2, 2}), L({1, 1}), L({0, 0}), L({2, 2})}));
  // grid points away from pixel centres (bilinear's kinks) by the random draw
  add("grid_sampler_2d_bilinear_zeros", {U({1, 2, 3, 4}), U({1, 2, 3, 2}, -1.1, 1.1)},
      op2("grid_sampler_2d", {0, 0, false}));
  add("grid_sampler_2d_bilinear_border_corners", {U({2, 1, 3, 3}), U({2, 2, 2, 2}, -1.2, 1.2)},
      op2("grid_sampler_2d", {0, 1, true}));
  add("grid_sampler_2d_nearest_reflection", {U({1, 2, 3, 4}), U({1, 2, 3, 2}, -0.9, 0.9)},
      op2("grid_sampler_2d", {1, 2, false}));
}

// The fused attention op the compiler puts in place of scaled_dot_product_attention
// (docs/attention.md): its packed output (the rows, then each row's log-sum-exp) differentiated
// through its VJP rule (the backward op) and an additive mask's plain-op gradient.
inline void add_fused_attention_cases(const CaseAdd& add) {
  add("_stax_flash_attention", {U({2, 3, 4}), U({2, 5, 4}), U({2, 5, 3})},
      op3("_stax_flash_attention", {Arg(), false}, {{"scale", 0.5}}));
  add("_stax_flash_attention_causal", {U({3, 4}), U({3, 4}), U({3, 2})},
      op3("_stax_flash_attention", {Arg(), true}, {{"scale", 0.7}}));
  add("_stax_flash_attention_additive_mask", {U({3, 4}), U({3, 4}), U({3, 2}), U({3, 3})},
      call_n("_stax_flash_attention", 4, {false}, {{"scale", 0.7}}));
}

inline std::vector<Case> nn_backward_op_cases() {
  std::vector<Case> out;
  auto add = case_adder(out);
  add_pooling_backward_cases(add);
  add_padding_backward_cases(add);
  add_pointwise_backward_cases(add);
  add_distance_backward_cases(add);
  add_embedding_bag_backward_cases(add);
  add_view_backward_cases(add);
  add_spatial_cases(add);
  add_fused_attention_cases(add);
  return out;
}

}  // namespace stax::testing
