// Jvp of the activation ops.
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

}  // namespace

void register_activation_jvps(JvpTable& t) {
  for (const char* op : {"leaky_relu.default", "elu.default",      "hardtanh.default",
                                    "relu6.default",      "hardswish.default", "hardsigmoid.default",
                                    "softplus.default",   "mish.default"}) t.add(op, jvp_via_decomposition);

  for (const char* op :
         {"leaky_relu_backward.default", "elu_backward.default", "hardtanh_backward.default",
          "hardswish_backward.default", "hardsigmoid_backward.default", "softplus_backward.default",
          "mish_backward.default"}) t.add(op, jvp_via_decomposition);
  for (const char* op :
         {"celu.default", "hardshrink.default", "softshrink.default", "threshold.default",
          "glu.default", "prelu.default"}) t.add(op, jvp_via_decomposition);
}

}  // namespace stax
