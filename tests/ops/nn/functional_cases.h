// Autodiff cases of the functional nn ops of issue 14: activations (celu, the shrinks, threshold,
// glu, prelu), losses (huber, soft margin, binary cross entropy, multi margin), distances (dist,
// cdist, pdist) and resampling (pixel_shuffle, max_unpool, adaptive pooling, upsample .vec).
// (Included by tests/autodiff/autodiff_cases.h, which says how they are checked.)
#pragma once

#include <vector>

namespace stax::testing {

inline std::vector<Case> nn_functional_cases() {
  std::vector<Case> out;
  auto add = case_adder(out);
  add("celu", {NZ({3, 4})}, op1("celu", {1.3}));
  add("softshrink", {Fixed({5}, {-2.0, -0.7, 0.2, 0.9, 1.8})}, op1("softshrink", {0.5}));
  add("hardshrink", {Fixed({5}, {-2.0, -0.7, 0.2, 0.9, 1.8})}, op1("hardshrink", {0.5}));
  add("threshold", {Fixed({5}, {-2.0, -0.7, 0.2, 0.9, 1.8})}, op1("threshold", {0.5, -3.0}));
  add("glu", {U({3, 4})}, op1("glu", {1}));
  add("prelu", {NZ({2, 3, 4}), U({3})}, op2("prelu"));
  add("huber_loss", {Fixed({4}, {0.0, 1.0, -2.0, 0.3}), Fixed({4}, {0.2, -1.5, 0.1, 0.4})},
      op2("huber_loss", {1, 1.0}));
  add("soft_margin_loss", {U({3, 4}), Const(U({3, 4}))}, op2("soft_margin_loss", {2}));
  add("binary_cross_entropy", {U({3, 4}, 0.1, 0.9), Const(U({3, 4}, 0, 1))},
      op2("binary_cross_entropy"));
  add("dist", {U({3, 4}), U({3, 4})}, op2("dist", {3.0}));
  add("pixel_shuffle", {U({1, 8, 2, 3})}, op1("pixel_shuffle", {2}));
  add("max_unpool2d", {U({1, 2, 2, 2}), Const(Fixed({1, 2, 2, 2}, {0, 3, 9, 14, 1, 6, 8, 15}))},
      [](Graph& g, const std::vector<Node*>& x) {
        return g.call("max_unpool2d", {x[0], g.call("to.dtype", {x[1], DType::Int64}), L({4, 4})});
      });
  add("renorm", {U({3, 4})}, op1("renorm", {2.0, 0, 1.0}));
  add("cdist", {U({3, 4}), U({2, 4})}, op2("_cdist_forward", {2.0, Arg()}));
  add("pdist", {U({4, 3})}, op1("_pdist_forward", {2.0}));
  add("pdist_p3", {U({4, 3})}, op1("_pdist_forward", {3.0}));
  // coincident points: the distance's gradient is 0 there (torch), not NaN
  add("cdist_coincident", {Fixed({2, 3}, {0.5, -1.0, 2.0, 0.3, 0.7, -0.2}),
                           Fixed({2, 3}, {0.5, -1.0, 2.0, 1.1, -0.4, 0.9})},
      op2("_cdist_forward", {2.0, Arg()}));
  add("pixel_unshuffle", {U({1, 2, 4, 2})}, op1("pixel_unshuffle", {2}));
  add("_adaptive_avg_pool2d", {U({1, 2, 5, 4})}, op1("_adaptive_avg_pool2d", {L({3, 2})}));
  add("_adaptive_avg_pool3d", {U({1, 1, 3, 4, 2})}, op1("_adaptive_avg_pool3d", {L({2, 2, 1})}));
  add("max_unpool3d",
      {U({1, 1, 1, 2, 1}), Const(Fixed({1, 1, 1, 2, 1}, {1, 6}))},
      [](Graph& g, const std::vector<Node*>& x) {
        return g.call("max_unpool3d", {x[0], g.call("to.dtype", {x[1], DType::Int64}),
                                       L({2, 2, 2}), L({2, 2, 2}), L({0, 0, 0})});
      });
  add("upsample_bilinear2d_vec", {U({1, 2, 3, 4})}, [](Graph& g, const std::vector<Node*>& x) {
    return g.call("upsample_bilinear2d.vec", {x[0], Arg(), false, Arg(Arg::List{1.5, 2.0})});
  });
  add("upsample_nearest2d_vec", {U({1, 2, 3, 4})}, op1("upsample_nearest2d.vec", {L({5, 6}), Arg()}));
  add("upsample_nearest1d_vec", {U({1, 2, 3})}, [](Graph& g, const std::vector<Node*>& x) {
    return g.call("upsample_nearest1d.vec", {x[0], Arg(), Arg(Arg::List{2.0})});
  });
  add("multi_margin_loss",
      {Fixed({2, 3}, {0.1, 0.9, -0.4, 1.2, 0.3, 0.5}), Const(Fixed({2}, {1, 0}))},
      [](Graph& g, const std::vector<Node*>& x) {
        return g.call("multi_margin_loss", {x[0], g.call("to.dtype", {x[1], DType::Int64})});
      });
  return out;
}

}  // namespace stax::testing
