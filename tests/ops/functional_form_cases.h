// Autodiff cases of the ops added for torch 2.x's OpInfo entries (issue 29): the *_copy view ops
// (core/ops/view/copies.cpp), segment_reduce and its backward (core/ops/indexing/static_shapes.cpp),
// the scatter forms (core/ops/indexing/scatter_forms.cpp), the regrouping forms
// (core/ops/nn/regrouping_forms.cpp), the upsampling ops (core/ops/nn/resampling.cpp), angle and
// ldexp. (Included by tests/autodiff/autodiff_cases.h, which says how they are checked.) Inputs
// stay away from ties (segment max / min) and from the points where an upsampling index jumps.
#pragma once

#include <vector>

namespace stax::testing {

inline In IntFixed(Shape s, std::vector<double> v) {
  In i = Const(Fixed(std::move(s), std::move(v)));
  i.dtype = DType::Int64;
  return i;
}

inline void add_view_copy_cases(std::vector<Case>& out) {
  auto add = case_adder(out);
  add("view_copy", {U({2, 6})}, op1("view_copy", {L({3, -1})}));
  add("reshape_alias_copy", {U({2, 6})}, op1("_reshape_alias_copy", {L({3, 4}), L({4, 1})}));
  add("permute_copy", {U({2, 3, 4})}, op1("permute_copy", {L({2, 0, 1})}));
  add("expand_copy", {U({3, 1})}, op1("expand_copy", {L({2, 3, 4})}));
  add("transpose_copy", {U({2, 3, 4})}, op1("transpose_copy.int", {0, -1}));
  add("t_copy", {U({2, 3})}, op1("t_copy"));
  add("squeeze_copy", {U({2, 1, 3, 1})}, op1("squeeze_copy"));
  add("squeeze_copy_dim", {U({2, 1, 3})}, op1("squeeze_copy.dim", {1}));
  add("squeeze_copy_dims", {U({2, 1, 3, 1})}, op1("squeeze_copy.dims", {L({1, 3})}));
  add("unsqueeze_copy", {U({2, 3})}, op1("unsqueeze_copy", {-1}));
  add("slice_copy", {U({6, 3})}, op1("slice_copy.Tensor", {0, 1, 6, 2}));
  add("select_copy", {U({4, 3})}, op1("select_copy.int", {1, -1}));
  add("as_strided_copy", {U({3, 4})}, op1("as_strided_copy", {L({2, 2}), L({4, 2}), 1}));
  add("alias_copy", {U({2, 3})}, op1("alias_copy"));
  add("diagonal_copy", {U({3, 4})}, op1("diagonal_copy", {1}));
  add("unfold_copy", {U({2, 7})}, op1("unfold_copy", {1, 3, 2}));
}

inline void add_segment_cases(std::vector<Case>& out) {
  auto add = case_adder(out);
  // segments of lengths 2, 0, 3 (the 6th element is past the last segment)
  In lengths = IntFixed({3}, {2, 0, 3});
  for (const char* red : {"sum", "mean", "max", "min"})
    add(std::string("segment_reduce_") + red, {U({6, 2}), lengths},
        [red](Graph& g, const std::vector<Node*>& x) {
          return g.call("segment_reduce", {x[0], std::string(red)},
                        {{"lengths", x[1]}, {"initial", 0.5}});
        });
  // axis 1, per-row offsets, no initial
  add("segment_reduce_offsets_axis1", {U({2, 5}), IntFixed({2, 3}, {0, 2, 5, 0, 4, 5})},
      [](Graph& g, const std::vector<Node*>& x) {
        return g.call("segment_reduce", {x[0], std::string("mean")},
                      {{"offsets", x[1]}, {"axis", 1}});
      });
  add("segment_reduce_backward", {U({3, 2}), U({6, 2}), lengths},
      [](Graph& g, const std::vector<Node*>& x) {
        Node* out = g.call("segment_reduce", {x[1], std::string("sum")}, {{"lengths", x[2]}});
        return g.call("_segment_reduce_backward", {x[0], out, x[1], std::string("sum")},
                      {{"lengths", x[2]}});
      });
}

inline void add_form_cases(std::vector<Case>& out) {
  auto add = case_adder(out);
  add("diagonal_scatter", {U({3, 4}), U({3})}, op2("diagonal_scatter", {1}));
  add("as_strided_scatter", {U({3, 4}), U({2, 2})},
      op2("as_strided_scatter", {L({2, 2}), L({4, 1}), 2}));
  add("unsafe_masked_index", {U({4, 3}), Const(Fixed({2, 1}, {1, 0})), IntFixed({2}, {5, -1})},
      [](Graph& g, const std::vector<Node*>& x) {
        Node* mask = g.call("ne.Scalar", {x[1], 0});
        return g.call("_unsafe_masked_index", {x[0], mask, Arg(Arg::List{Arg(x[2])}), 0.25});
      });
  add("unsafe_masked_index_put_accumulate",
      {U({4, 3}), Const(Fixed({2}, {1, 0})), IntFixed({2}, {2, 1}), U({2, 3})},
      [](Graph& g, const std::vector<Node*>& x) {
        Node* mask = g.call("unsqueeze", {g.call("ne.Scalar", {x[1], 0}), 1});
        return g.call("_unsafe_masked_index_put_accumulate",
                      {x[0], mask, Arg(Arg::List{Arg(x[2])}), x[3]});
      });
  add("channel_shuffle", {U({2, 6, 2})}, op1("channel_shuffle", {3}));
  add("chunk_cat", {U({3, 5}), U({3, 2})}, [](Graph& g, const std::vector<Node*>& x) {
    return g.call("_chunk_cat", {Arg(std::vector<Node*>{x[0], x[1]}), 1, 2});
  });
  add("safe_softmax", {U({3, 4})}, op1("_safe_softmax", {1}));
  add("trilinear", {U({2, 3}), U({4, 3, 2}), U({2, 2})}, [](Graph& g, const std::vector<Node*>& x) {
    return g.call("_trilinear", {x[0], x[1], x[2], L({1, 3}), L({0}), L({1, 2}), L({2, 3})});
  });
  add("grid_sampler_3d", {U({1, 2, 2, 3, 2}), U({1, 2, 1, 2, 3}, -0.9, 0.9)},
      op2("grid_sampler_3d", {0, 0, false}));
  add("grid_sampler_3d_border_corners", {U({1, 1, 2, 2, 3}), U({1, 1, 2, 2, 3}, -1.3, 1.3)},
      op2("grid_sampler_3d", {0, 1, true}));
  add("angle", {NZ({5})}, op1("angle"));
  add("ldexp", {U({4}), IntFixed({4}, {-2, 0, 1, 3})}, op2("ldexp.Tensor"));
  // upsampling: output sizes whose source indices stay off the integer points
  add("upsample_nearest1d", {U({1, 2, 3})}, op1("upsample_nearest1d", {L({7})}));
  add("upsample_nearest3d", {U({1, 1, 2, 3, 2})}, op1("upsample_nearest3d", {L({3, 5, 3})}));
  add("upsample_nearest_exact1d", {U({1, 2, 3})}, op1("_upsample_nearest_exact1d", {L({7})}));
  add("upsample_nearest_exact2d", {U({1, 1, 3, 2})}, op1("_upsample_nearest_exact2d", {L({5, 3})}));
  add("upsample_nearest_exact3d", {U({1, 1, 2, 2, 3})},
      op1("_upsample_nearest_exact3d", {L({3, 3, 5})}));
  add("upsample_linear1d", {U({2, 2, 4})}, op1("upsample_linear1d", {L({7}), false}));
  add("upsample_linear1d_corners", {U({1, 2, 4})}, op1("upsample_linear1d", {L({7}), true}));
  add("upsample_trilinear3d", {U({1, 2, 2, 3, 2})},
      op1("upsample_trilinear3d", {L({3, 5, 3}), false}));
  add("upsample_bicubic2d", {U({1, 2, 3, 4})}, op1("upsample_bicubic2d", {L({5, 7}), false}));
  add("upsample_bicubic2d_corners", {U({1, 1, 3, 3})},
      op1("upsample_bicubic2d", {L({4, 5}), true}));
}

// The forms of issue 29 phase 8: antialiased bilinear resampling (and its backward), rrelu in
// eval (training draws its slopes; its backward is checked in both modes) and
// multilabel_margin_loss (inputs away from the margin's kinks with probability ~1).
inline void add_aa_rrelu_margin_cases(std::vector<Case>& out) {
  auto add = case_adder(out);
  add("upsample_bilinear2d_aa", {U({1, 2, 5, 4})},
      op1("_upsample_bilinear2d_aa", {L({3, 6}), false}));
  add("upsample_bilinear2d_aa_corners", {U({1, 1, 7, 3})},
      op1("_upsample_bilinear2d_aa", {L({2, 5}), true}));
  add("upsample_bilinear2d_aa_vec", {U({1, 1, 6, 3})},
      op1("_upsample_bilinear2d_aa.vec", {L({2, 4}), false, Arg()}));
  add("upsample_bilinear2d_aa_backward", {U({1, 2, 3, 6})},
      op1("_upsample_bilinear2d_aa_backward", {L({3, 6}), L({1, 2, 5, 4}), false}));
  add("rrelu_eval", {U({3, 4})}, op1("rrelu", {0.1, 0.3, false}));
  add("rrelu_with_noise_eval", {U({3, 4}), Const(U({3, 4}))},
      op2("rrelu_with_noise", {0.1, 0.3, false}));
  add("rrelu_with_noise_backward_training", {U({3, 4}), U({3, 4}), U({3, 4}, 0.1, 0.3)},
      op3("rrelu_with_noise_backward", {0.1, 0.3, true, false}));
  add("rrelu_with_noise_backward_eval", {U({3, 4}), U({3, 4}), Const(U({3, 4}))},
      op3("rrelu_with_noise_backward", {0.1, 0.3, false, false}));
  In target = IntFixed({3, 4}, {3, 0, -1, 1, 1, 2, 3, -1, -1, 1, 0, 2});
  add("multilabel_margin_loss", {U({3, 4}), target}, op2("multilabel_margin_loss", {1}));
  add("multilabel_margin_loss_none", {U({3, 4}), target}, op2("multilabel_margin_loss", {0}));
  add("multilabel_margin_loss_backward",
      {U({}), U({3, 4}), target, Const(Fixed({3, 4}, {1, 0, 0, 1, 0, 1, 1, 1, 0, 0, 0, 0}))},
      [](Graph& g, const std::vector<Node*>& x) {
        return g.call("multilabel_margin_loss_backward", {x[0], x[1], x[2], int64_t{1}, x[3]});
      });
}

inline std::vector<Case> functional_form_cases() {
  std::vector<Case> out;
  add_view_copy_cases(out);
  add_segment_cases(out);
  add_form_cases(out);
  add_aa_rrelu_margin_cases(out);
  return out;
}

}  // namespace stax::testing
