// Kernels of the activation ops.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "core/graph/op_registry.h"
#include "core/interpreter/interpreter.h"
#include "core/ops/common/kernel_utils.h"
#include "core/ops/pointwise/formulas.h"
#include "core/ops/registration.h"
#include "core/ops/special/functions.h"

namespace stax {
namespace {

using namespace kernels;

}  // namespace

void register_activation_kernels(InterpreterTable& t) {
  // Composite ops: their decomposition, on the interpreter.
  for (const char* op :
         {"leaky_relu.default", "elu.default", "hardtanh.default", "relu6.default",
          "hardswish.default", "hardsigmoid.default", "softplus.default", "mish.default",
          "leaky_relu_backward.default", "elu_backward.default", "hardtanh_backward.default",
          "hardswish_backward.default", "hardsigmoid_backward.default", "softplus_backward.default",
          "mish_backward.default"})
    t.add(op, kernels::run_decomposition);
  // ---- Composite ops: their decomposition
  for (const char* op :
         {"celu.default", "hardshrink.default", "softshrink.default", "threshold.default",
          "glu.default", "prelu.default"})
    t.add(op, kernels::run_decomposition);
}

}  // namespace stax
