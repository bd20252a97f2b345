// Autodiff cases of the model ops (core/graph/ops/model_ops.cpp, issue 14 part C): included by
// tests/autodiff_cases.h, so the VJP checks (autodiff_vjp_test.cpp) and the JVP checks
// (autodiff_functional_test.cpp) compare their rules with central differences in float64.
// Inputs stay away from the kinks of piecewise ops (relu-like corners, clamp bounds, softplus's
// threshold, the |w| = 0.5 switch of lerp) where finite differences are meaningless.
#pragma once

#include <limits>
#include <vector>

namespace stax::testing {

inline std::vector<Case> model_cases() {
  std::vector<Case> out;
  auto add = [&](std::string name, std::vector<In> in, Builder b) {
    out.push_back({std::move(name), std::move(in), std::move(b)});
  };
  // activations and their backward ops (double backward goes through the decompositions)
  add("leaky_relu", {NZ({3, 4}, 0.1, 2)}, op1("leaky_relu", {0.2}));
  add("elu", {NZ({3, 4}, 0.1, 2)}, op1("elu", {1.5, 1.1, 0.7}));
  add("hardtanh", {Fixed({6}, {-1.7, -0.4, 0.2, 0.8, 1.9, -3.0})}, op1("hardtanh", {-1.0, 1.0}));
  add("relu6", {Fixed({6}, {-1.0, 0.5, 3.0, 5.5, 6.5, 2.0})}, op1("relu6"));
  add("hardswish", {Fixed({6}, {-4.0, -2.0, -0.5, 1.0, 2.5, 4.0})}, op1("hardswish"));
  add("hardsigmoid", {Fixed({6}, {-4.0, -2.0, -0.5, 1.0, 2.5, 4.0})}, op1("hardsigmoid"));
  add("softplus", {U({3, 4})}, op1("softplus", {2.0, 3.0}));
  add("softplus_above_threshold", {U({3, 4}, 2.5, 4)}, op1("softplus", {2.0, 3.0}));
  add("mish", {U({3, 4})}, op1("mish"));
  add("leaky_relu_backward", {U({3, 4}), NZ({3, 4}, 0.1, 2)},
      op2("leaky_relu_backward", {0.2, false}));
  add("elu_backward", {U({3, 4}), NZ({3, 4}, 0.1, 2)}, [](Graph& g, const std::vector<Node*>& x) {
    return g.call("elu_backward", {x[0], 1.5, 1.1, 0.7, false, x[1]});
  });
  add("elu_backward_result", {U({3, 4}), NZ({3, 4}, 0.1, 0.9)},
      [](Graph& g, const std::vector<Node*>& x) {
        return g.call("elu_backward", {x[0], 1.5, 1.1, 0.7, true, x[1]});
      });
  add("hardtanh_backward", {U({6}), Fixed({6}, {-1.7, -0.4, 0.2, 0.8, 1.9, -3.0})},
      op2("hardtanh_backward", {-1.0, 1.0}));
  add("hardswish_backward", {U({6}), Fixed({6}, {-4.0, -2.0, -0.5, 1.0, 2.5, 4.0})},
      op2("hardswish_backward"));
  add("hardsigmoid_backward", {U({6}), Fixed({6}, {-4.0, -2.0, -0.5, 1.0, 2.5, 4.0})},
      op2("hardsigmoid_backward"));
  add("softplus_backward", {U({3, 4}), U({3, 4})}, op2("softplus_backward", {2.0, 3.0}));
  add("mish_backward", {U({3, 4}), U({3, 4})}, op2("mish_backward"));
  // reductions and scans
  add("std_correction", {U({3, 4})}, [](Graph& g, const std::vector<Node*>& x) {
    return g.call("std.correction", {x[0], L({1})}, {{"correction", 0}, {"keepdim", true}});
  });
  add("std_dim", {U({3, 4})}, op1("std.dim", {L({0}), true, false}));
  add("std_default", {U({3, 4})}, op1("std"));
  add("var_dim_unbiased", {U({3, 4})}, op1("var.dim", {L({1}), false}));
  add("var_default_unbiased", {U({3, 4})}, op1("var"));
  // a constant row: zero std / norm, torch's gradient (and the central difference) is 0 there
  add("std_constant_row", {Fixed({2, 3}, {1.5, 1.5, 1.5, 0.5, -1.0, 2.0})},
      op1("std.dim", {L({1}), true, false}));
  add("norm_2_zero_row", {Fixed({2, 3}, {0, 0, 0, 0.5, -1.0, 2.0})},
      op1("linalg_vector_norm", {2, L({1})}));
  add("norm_1_5_with_zero", {Fixed({2, 3}, {0, 0.7, -1.2, 0.5, -1.0, 2.0})},
      op1("norm.ScalarOpt_dim", {1.5, L({1}), true}));
  add("vector_norm_dtype", {NZ({3, 4})}, [](Graph& g, const std::vector<Node*>& x) {
    return g.call("linalg_vector_norm", {x[0], 3, L({0})}, {{"dtype", DType::Float64}});
  });
  add("logsumexp", {U({3, 4})}, op1("logsumexp", {L({1})}));
  add("logsumexp_keepdim_all", {U({2, 3})}, op1("logsumexp", {L({0, 1}), true}));
  add("norm_2", {NZ({3, 4})}, op1("norm.ScalarOpt_dim", {2, L({1})}));
  add("norm_1", {NZ({3, 4})}, op1("norm.ScalarOpt_dim", {1, L({0}), true}));
  add("norm_3", {NZ({3, 4})}, op1("norm.Scalar", {3.0}));
  add("norm_inf", {Fixed({4}, {0.5, -2.5, 1.0, 2.0})}, op1("linalg_vector_norm", {std::numeric_limits<double>::infinity()}));
  add("vector_norm_dim", {NZ({3, 4})}, op1("linalg_vector_norm", {2, L({0})}));
  add("max_all", {Fixed({4}, {0.5, -2.5, 1.0, 2.0})}, op1("max"));
  add("min_all", {Fixed({4}, {0.5, -2.5, 1.0, 2.0})}, op1("min"));
  add("max_other", {U({3, 4}), U({4})}, op2("max.other"));
  add("min_other", {U({3, 4}), U({3, 1})}, op2("min.other"));
  add("cumsum", {U({3, 4})}, op1("cumsum", {1}));
  add("cumsum_dim0", {U({3, 4})}, op1("cumsum", {-2}));
  add("cumprod", {U({3, 4})}, op1("cumprod", {1}));
  add("cumprod_zeros", {Fixed({2, 3}, {1.5, 0.0, -2.0, 0.0, 0.0, 3.0})}, op1("cumprod", {1}));
  // shape ops
  add("stack", {U({2, 3}), U({2, 3})}, [](Graph& g, const std::vector<Node*>& x) {
    return g.call("stack", {Arg(std::vector<Node*>{x[0], x[1], x[0]}), 1});
  });
  add("repeat", {U({2, 3})}, op1("repeat", {L({2, 1, 2})}));
  add("flip", {U({2, 3, 4})}, op1("flip", {L({0, 2})}));
  add("roll", {U({3, 4})}, op1("roll", {L({1, -2}), L({0, 1})}));
  add("roll_flat", {U({3, 4})}, op1("roll", {L({5})}));
  add("tril", {U({3, 4})}, op1("tril", {1}));
  add("triu", {U({2, 3, 3})}, op1("triu", {-1}));
  // masked and indexed writes
  add("masked_fill_scalar", {U({3, 4}), Const(U({3, 4}))},
      [](Graph& g, const std::vector<Node*>& x) {
        return g.call("masked_fill.Scalar", {x[0], g.call("gt.Scalar", {x[1], 0.0}), 0.5});
      });
  add("masked_fill_tensor", {U({3, 4}), Const(U({4})), U({})},
      [](Graph& g, const std::vector<Node*>& x) {
        return g.call("masked_fill.Tensor", {x[0], g.call("gt.Scalar", {x[1], 0.0}), x[2]});
      });
  add("index_add", {U({5, 3}), Idx({4}, 5), U({4, 3})}, [](Graph& g, const std::vector<Node*>& x) {
    return g.call("index_add", {x[0], 0, x[1], x[2]}, {{"alpha", 2.0}});
  });
  add("scatter_reduce_sum", {U({4, 3}), Idx({2, 3}, 4), U({2, 3})},
      [](Graph& g, const std::vector<Node*>& x) {
        return g.call("scatter_reduce.two", {x[0], 0, x[1], x[2], "sum"});
      });
  for (const char* red : {"sum", "mean", "amax", "amin"})
    for (bool inc : {true, false}) {
      if (std::string(red) == "sum" && inc) continue;  // scatter_reduce_sum above
      add(std::string("scatter_reduce_") + red + (inc ? "" : "_exclude_self"),
          {U({4, 3}), Idx({3, 3}, 4), U({3, 3})}, [red, inc](Graph& g, const std::vector<Node*>& x) {
            return g.call("scatter_reduce.two", {x[0], 0, x[1], x[2], red},
                          {{"include_self", inc}});
          });
    }
  // fused arithmetic
  add("baddbmm", {U({2, 3, 5}), U({2, 3, 4}), U({2, 4, 5})},
      [](Graph& g, const std::vector<Node*>& x) {
        return g.call("baddbmm", {x[0], x[1], x[2]}, {{"beta", 0.5}, {"alpha", 2.0}});
      });
  add("addcmul", {U({3, 4}), U({4}), U({3, 1})}, [](Graph& g, const std::vector<Node*>& x) {
    return g.call("addcmul", {x[0], x[1], x[2]}, {{"value", 0.7}});
  });
  add("addcdiv", {U({3, 4}), U({3, 4}), NZ({4})}, [](Graph& g, const std::vector<Node*>& x) {
    return g.call("addcdiv", {x[0], x[1], x[2]}, {{"value", -1.5}});
  });
  add("lerp_scalar_low", {U({3, 4}), U({3, 4})}, op2("lerp.Scalar", {0.3}));
  add("lerp_scalar_high", {U({3, 4}), U({4})}, op2("lerp.Scalar", {0.8}));
  add("lerp_tensor", {U({3, 4}), U({3, 4}), Fixed({4}, {0.1, 0.3, 0.7, 1.2})}, op3("lerp.Tensor"));
  add("div_trunc", {U({3, 4}, 1, 5), NZ({3, 4}, 0.7, 2)},
      op2("div.Tensor_mode", {}, {{"rounding_mode", "trunc"}}));
  add("div_floor_scalar", {U({3, 4}, 1, 5)},
      op1("div.Scalar_mode", {0.7}, {{"rounding_mode", "floor"}}));
  add("div_none", {U({3, 4}), NZ({3, 4})}, op2("div.Tensor_mode", {}, {{"rounding_mode", Arg()}}));
  add("clamp_tensor", {U({3, 4}), Const(U({4}, -1.5, -0.5)), Const(U({3, 1}, 0.5, 1.5))},
      op3("clamp.Tensor"));
  add("clamp_tensor_grad_bounds", {Const(U({3, 4})), U({4}, -1.5, -0.5), U({3, 1}, 0.5, 1.5)},
      op3("clamp.Tensor"));
  add("clamp_min_scalar", {Fixed({4}, {-1.0, 0.5, 2.0, -0.2})}, op1("clamp_min", {0.0}));
  add("clamp_max_scalar", {Fixed({4}, {-1.0, 0.5, 2.0, -0.2})}, op1("clamp_max", {0.0}));
  add("clamp_min_tensor", {U({3, 4}), U({4})}, op2("clamp_min.Tensor"));
  add("clamp_max_tensor", {U({3, 4}), U({4})}, op2("clamp_max.Tensor"));
  add("nan_to_num", {U({3, 4})}, op1("nan_to_num", {0.0, 1.0, -1.0}));
  add("fmod_tensor", {U({3, 4}, 0.5, 3), NZ({3, 4}, 0.7, 1.3)}, op2("fmod.Tensor"));
  add("fmod_scalar", {U({3, 4}, 0.5, 3)}, op1("fmod.Scalar", {0.9}));
  return out;
}

}  // namespace stax::testing
