// Autodiff cases of the backward ops that VJP rules emit (gelu_backward, sigmoid_backward,
// softmax's ...; core/ops/pointwise/backward_derivatives.cpp): their own VJP and JVP rules, the
// double backward of gelu, sigmoid, tanh, silu, relu, softmax and log_softmax. Saved values are
// taken from the forward op in the graph where the op reads them (sigmoid's and tanh's outputs,
// the softmax), so a finite difference moves them as in a real backward graph; threshold's input
// keeps away from its threshold. (Included by tests/autodiff/autodiff_cases.h.)
#pragma once

#include <vector>

namespace stax::testing {

inline std::vector<Case> pointwise_backward_op_cases() {
  std::vector<Case> out;
  auto add = case_adder(out);
  auto of_forward = [](const char* fwd, const char* bwd, std::vector<Arg> extra = {}) {
    return [=](Graph& g, const std::vector<Node*>& x) {
      Node* y = g.call(fwd, {x[1]});
      std::vector<Arg> args{x[0], y};
      args.insert(args.end(), extra.begin(), extra.end());
      return g.call(bwd, args);
    };
  };
  add("gelu_backward", {U({3, 4}), U({3, 4})}, op2("gelu_backward"));
  add("gelu_backward_tanh", {U({3, 4}), U({3, 4})}, op2("gelu_backward", {}, {{"approximate", "tanh"}}));
  add("silu_backward", {U({3, 4}), U({3, 4})}, op2("silu_backward"));
  add("threshold_backward", {U({5}), Fixed({5}, {-2.0, -0.7, 0.2, 0.9, 1.8})},
      op2("threshold_backward", {0.5}));
  add("sigmoid_backward", {U({3, 4}), U({3, 4})}, of_forward("sigmoid", "sigmoid_backward"));
  add("tanh_backward", {U({3, 4}), U({3, 4})}, of_forward("tanh", "tanh_backward"));
  for (int64_t dim : {0, 1}) {
    std::string d = std::to_string(dim);
    add("_softmax_backward_data_dim" + d, {U({3, 4}), U({3, 4})},
        [dim](Graph& g, const std::vector<Node*>& x) {
          Node* y = g.call("_softmax", {x[1], dim, false});
          return g.call("_softmax_backward_data", {x[0], y, dim, DType::Float64});
        });
    add("_log_softmax_backward_data_dim" + d, {U({3, 4}), U({3, 4})},
        [dim](Graph& g, const std::vector<Node*>& x) {
          Node* y = g.call("_log_softmax", {x[1], dim, false});
          return g.call("_log_softmax_backward_data", {x[0], y, dim, DType::Float64});
        });
  }
  return out;
}

}  // namespace stax::testing
