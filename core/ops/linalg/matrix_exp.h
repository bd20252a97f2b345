// linalg_matrix_exp (matrix_exp.cpp): registered with the family's kernels (kernels.cpp) and rules
// (vjp.cpp).
#pragma once

#include "core/autodiff/vjp.h"
#include "core/interpreter/interpreter.h"

namespace stax::linalg {

Tensor matrix_exp_kernel(const KernelContext& c);
void matrix_exp_vjp(VjpContext& c);

}  // namespace stax::linalg
