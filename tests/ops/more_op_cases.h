// Autodiff cases of the ops of core/graph/ops/more_ops.cpp (issue 14): included by
// tests/autodiff_cases.h, so autodiff_vjp_test (VJPs) and autodiff_functional_test (JVPs) compare
// the rules (torch's derivative formulas for the base math ops, the decomposition's for the
// Composite ones) with central differences in float64. Inputs stay inside each function's domain
// and away from kinks (shrink thresholds, huber's delta, fmax ties, the median's ties).
#pragma once

#include <vector>

namespace stax::testing {

inline std::vector<Case> more_cases() {
  std::vector<Case> out;
  auto add = [&](std::string name, std::vector<In> in, Builder b) {
    out.push_back({std::move(name), std::move(in), std::move(b)});
  };
  // base math ops: torch's derivative formulas
  add("asin", {U({3, 4}, -0.9, 0.9)}, op1("asin"));
  add("acos", {U({3, 4}, -0.9, 0.9)}, op1("acos"));
  add("atan", {U({3, 4})}, op1("atan"));
  add("sinh", {U({3, 4})}, op1("sinh"));
  add("cosh", {U({3, 4})}, op1("cosh"));
  add("asinh", {U({3, 4})}, op1("asinh"));
  add("acosh", {U({3, 4}, 1.2, 3)}, op1("acosh"));
  add("atanh", {U({3, 4}, -0.9, 0.9)}, op1("atanh"));
  add("erfc", {U({3, 4})}, op1("erfc"));
  add("erfinv", {U({3, 4}, -0.9, 0.9)}, op1("erfinv"));
  add("lgamma", {U({3, 4}, 0.3, 4)}, op1("lgamma"));
  add("digamma", {U({3, 4}, 0.3, 4)}, op1("digamma"));
  add("digamma_negative", {Fixed({3}, {-0.4, -1.3, -2.7})}, op1("digamma"));
  add("polygamma_1", {U({3, 4}, 0.3, 4)}, [](Graph& g, const std::vector<Node*>& x) {
    return g.call("polygamma", {1, x[0]});
  });
  add("polygamma_3", {U({3, 4}, 0.3, 4)}, [](Graph& g, const std::vector<Node*>& x) {
    return g.call("polygamma", {3, x[0]});
  });
  add("i0", {U({3, 4})}, op1("i0"));
  add("special_i0e", {NZ({3, 4})}, op1("special_i0e"));
  add("special_i1", {U({3, 4})}, op1("special_i1"));
  add("special_i1e", {NZ({3, 4})}, op1("special_i1e"));
  for (const char* f : {"special_bessel_j0", "special_bessel_j1", "special_modified_bessel_i0",
                        "special_modified_bessel_i1"})
    add(f, {U({3, 4})}, op1(f));
  for (const char* f : {"special_bessel_y0", "special_bessel_y1", "special_modified_bessel_k0",
                        "special_modified_bessel_k1"})  // defined for x > 0
    add(f, {P({3, 4}, 0.5, 3)}, op1(f));
  add("special_ndtri", {U({3, 4}, 0.05, 0.95)}, op1("special_ndtri"));
  add("special_log_ndtr", {U({3, 4}, -5, 3)}, op1("special_log_ndtr"));
  add("special_erfcx", {U({3, 4}, -1, 4)}, op1("special_erfcx"));
  add("special_entr", {P({3, 4}, 0.1, 2)}, op1("special_entr"));
  add("atan2", {U({3, 4}), NZ({4})}, op2("atan2"));
  add("hypot", {NZ({3, 4}), U({3, 1})}, op2("hypot"));
  add("copysign", {NZ({3, 4}), Const(NZ({4}))}, op2("copysign.Tensor"));
  // Composite ops: through their decompositions
  add("rsub", {U({3, 4}), U({4})}, op2("rsub.Tensor", {}, {{"alpha", 1.5}}));
  add("rsub_scalar", {U({3, 4})}, op1("rsub.Scalar", {2.0, 0.5}));
  add("deg2rad", {U({3, 4})}, op1("deg2rad"));
  add("frac", {Fixed({4}, {-2.7, -0.4, 0.3, 1.6})}, op1("frac"));
  add("sinc", {NZ({3, 4})}, op1("sinc"));
  add("logit_eps", {U({3, 4}, 0.1, 0.9)}, op1("logit", {0.05}));
  add("logaddexp", {U({3, 4}), U({4})}, op2("logaddexp"));
  add("logaddexp2", {U({3, 4}), U({3, 4})}, op2("logaddexp2"));
  add("xlogy", {U({3, 4}), P({3, 4})}, op2("xlogy.Tensor"));
  add("special_xlog1py", {U({3, 4}), P({3, 4})}, op2("special_xlog1py"));
  add("fmax", {Fixed({4}, {1.0, -2.0, 0.5, 3.0}), Fixed({4}, {0.5, -1.0, 2.5, -3.0})},
      op2("fmax"));
  add("mvlgamma", {U({3, 4}, 2.5, 4)}, op1("mvlgamma", {3}));
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
  add("dot", {U({5}), U({5})}, op2("dot"));
  add("mv", {U({3, 5}), U({5})}, op2("mv"));
  add("addmv", {U({3}), U({3, 5}), U({5})}, op3("addmv", {}, {{"beta", 0.5}, {"alpha", 2.0}}));
  add("addr", {U({3, 4}), U({3}), U({4})}, op3("addr", {}, {{"alpha", 2.0}}));
  add("addbmm", {U({3, 4}), U({2, 3, 5}), U({2, 5, 4})}, op3("addbmm"));
  add("dist", {U({3, 4}), U({3, 4})}, op2("dist", {3.0}));
  add("nansum", {U({3, 4})}, op1("nansum", {L({1})}));
  add("logcumsumexp", {U({3, 4})}, op1("logcumsumexp", {1}));
  add("trace", {U({4, 3})}, op1("trace"));
  add("diagonal", {U({2, 4, 3})}, op1("diagonal", {1, 2, 1}));
  add("diag_1d", {U({3})}, op1("diag", {-1}));
  add("diag_embed", {U({2, 3})}, op1("diag_embed", {1, 0, 2}));
  add("take", {U({3, 4}), Idx({5}, 12)}, op2("take"));
  add("index_fill", {U({3, 4}), Idx({2}, 4, 0)}, [](Graph& g, const std::vector<Node*>& x) {
    return g.call("index_fill.int_Scalar", {x[0], 1, x[1], 2.5});
  });
  add("rot90", {U({2, 3, 4})}, op1("rot90", {3, L({0, 2})}));
  add("pixel_shuffle", {U({1, 8, 2, 3})}, op1("pixel_shuffle", {2}));
  add("narrow_copy", {U({4, 5})}, op1("narrow_copy", {1, -3, 2}));
  add("max_unpool2d", {U({1, 2, 2, 2}), Const(Fixed({1, 2, 2, 2}, {0, 3, 9, 14, 1, 6, 8, 15}))},
      [](Graph& g, const std::vector<Node*>& x) {
        return g.call("max_unpool2d", {x[0], g.call("to.dtype", {x[1], DType::Int64}), L({4, 4})});
      });
  add("linalg_cross", {U({2, 3}), U({2, 3})}, op2("linalg_cross"));
  add("median", {Fixed({5}, {0.3, -1.2, 2.5, 0.9, -0.4})}, op1("median"));
  add("index_copy", {U({4, 3}), Idx({2}, 4, 0), U({2, 3})},
      [](Graph& g, const std::vector<Node*>& x) {
        return g.call("index_copy", {x[0], 0, x[1], x[2]});
      });
  add("masked_scatter", {U({3, 4}), Const(Fixed({4}, {1, 0, 1, 1})), U({12})},
      [](Graph& g, const std::vector<Node*>& x) {
        Node* m = g.call("ne.Scalar", {x[1], 0});
        return g.call("masked_scatter", {x[0], m, x[2]});
      });
  add("renorm", {U({3, 4})}, op1("renorm", {2.0, 0, 1.0}));
  add("unfold", {U({3, 7})}, op1("unfold", {1, 3, 2}));
  add("cdist", {U({3, 4}), U({2, 4})}, op2("_cdist_forward", {2.0, Arg()}));
  add("pdist", {U({4, 3})}, op1("_pdist_forward", {2.0}));
  add("pdist_p3", {U({4, 3})}, op1("_pdist_forward", {3.0}));
  // coincident points: the distance's gradient is 0 there (torch), not NaN
  add("cdist_coincident", {Fixed({2, 3}, {0.5, -1.0, 2.0, 0.3, 0.7, -0.2}),
                           Fixed({2, 3}, {0.5, -1.0, 2.0, 1.1, -0.4, 0.9})},
      op2("_cdist_forward", {2.0, Arg()}));
  add("slice_scatter", {U({5, 3}), U({2, 3})}, op2("slice_scatter", {0, 1, 5, 2}));
  add("select_scatter", {U({5, 3}), U({3})}, op2("select_scatter", {0, -2}));
  add("rad2deg", {U({3, 4})}, op1("rad2deg"));
  add("sgn", {NZ({3, 4})}, op1("sgn"));
  add("round_decimals", {U({3, 4})}, op1("round.decimals", {}, {{"decimals", 2}}));
  add("copysign_scalar", {NZ({3, 4})}, op1("copysign.Scalar", {-1.0}));
  add("fmin", {Fixed({4}, {1.0, -2.0, 0.5, 3.0}), Fixed({4}, {0.5, -1.0, 2.5, -3.0})},
      op2("fmin"));
  add("vdot", {U({5}), U({5})}, op2("vdot"));
  add("index_fill_tensor", {U({3, 4}), Idx({2}, 4, 0), U({})},
      [](Graph& g, const std::vector<Node*>& x) {
        return g.call("index_fill.int_Tensor", {x[0], 1, x[1], x[2]});
      });
  add("index_reduce_mean", {U({4, 3}), Idx({5}, 4), U({5, 3})},
      [](Graph& g, const std::vector<Node*>& x) {
        return g.call("index_reduce", {x[0], 0, x[1], x[2], "mean"});
      });
  add("put", {U({3, 4}), Idx({3}, 12, 0), U({3})}, op3("put"));
  add("nanmedian", {Fixed({5}, {0.3, -1.2, 2.5, 0.9, -0.4})}, op1("nanmedian"));
  add("pixel_unshuffle", {U({1, 2, 4, 2})}, op1("pixel_unshuffle", {2}));
  add("block_diag", {U({2, 3}), U({2}), U({})}, [](Graph& g, const std::vector<Node*>& x) {
    return g.call("block_diag", {Arg(std::vector<Node*>{x[0], x[1], x[2]})});
  });
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
