// Vjp of the activation ops.
#include <algorithm>
#include <cmath>
#include <functional>
#include <unordered_map>

#include "core/autodiff/joint_graph.h"
#include "core/autodiff/jvp.h"
#include "core/autodiff/vjp.h"
#include "core/graph/decompositions.h"
#include "core/graph/op_registry.h"
#include "core/ops/common/via_decomposition.h"
#include "core/ops/registration.h"
#include "core/support/error.h"

namespace stax {
namespace {

// ---- explicit rules

VjpFn activation_vjp(std::string backward, std::vector<std::string> params) {
  return [backward, params](VjpContext& c) {
    if (!c.needs("self")) return;
    std::vector<Arg> args{c.grad()};
    for (const std::string& p : params) {
      if (p == "self") args.emplace_back(c.in("self"));
      else if (p == "False") args.emplace_back(false);
      else if (p == "0") args.emplace_back(0);
      else if (p == "6") args.emplace_back(6);
      else args.push_back(c.arg(p));
    }
    c.give("self", c.call(backward, std::move(args)));
  };
}

}  // namespace

void register_activation_vjps(VjpTable& t) {
  t.add("leaky_relu.default",
        activation_vjp("leaky_relu_backward", {"self", "negative_slope", "False"}));

  t.add("elu.default",
        activation_vjp("elu_backward", {"alpha", "scale", "input_scale", "False", "self"}));

  t.add("hardtanh.default", activation_vjp("hardtanh_backward", {"self", "min_val", "max_val"}));

  t.add("relu6.default", activation_vjp("hardtanh_backward", {"self", "0", "6"}));

  t.add("hardswish.default", activation_vjp("hardswish_backward", {"self"}));

  t.add("hardsigmoid.default", activation_vjp("hardsigmoid_backward", {"self"}));

  t.add("softplus.default", activation_vjp("softplus_backward", {"self", "beta", "threshold"}));

  t.add("mish.default", activation_vjp("mish_backward", {"self"}));

  for (const char* op :
         {"leaky_relu_backward.default", "elu_backward.default", "hardtanh_backward.default",
          "hardswish_backward.default", "hardsigmoid_backward.default", "softplus_backward.default",
          "mish_backward.default"}) t.add(op, vjp_via_decomposition);
  for (const char* op :
         {"celu.default", "hardshrink.default", "softshrink.default", "threshold.default",
          "glu.default", "prelu.default"}) t.add(op, vjp_via_decomposition);
}

}  // namespace stax
