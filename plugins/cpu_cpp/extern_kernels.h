// cpu_cpp's extern kernels (seed §6.1 item 2): the matrix products mm, bmm, addmm and matmul on
// strided tensors, with the reference interpreter's semantics:
//   * float32 / float64: OpenBLAS (cblas_sgemm / cblas_dgemm) per batch entry; an operand one of
//     whose strides is 1 is read in place (a transposed one as CblasTrans), any other is gathered
//     into a row-major copy first. BLAS sums in its own order: results agree with the interpreter
//     within the gemm bound k*u*Σ|a_ik*b_kj| (bit for bit when both make the same BLAS call).
//   * float16 / bfloat16: a loop accumulating the float values in double, rounded once to float
//     and then to the storage format; integers: int64 wrap-around; bool: or of ands.
//   * matmul: torch.matmul's rules: 1-D operands become a row (left) or a column (right) whose unit
//     dimension is dropped from the result; batch dimensions broadcast.
//   * addmm(self, mat1, mat2; scalars beta, alpha): out = beta*self + alpha*(mat1 @ mat2) computed
//     elementwise in float32 (float64 for float64, int64 for integers) after the product has been
//     stored in the output dtype; beta == 0 ignores self (NaN in self does not propagate); with
//     beta == 0 and alpha == 1 the product is the result.
// Tensors: inputs first, then the one output (allocated by the host, any strides).
#pragma once

#include <string>
#include <vector>

#include "stax/sdk/backend.hpp"

namespace stax::cpu {

// OpenBLAS's thread count (process-wide; cheap when unchanged): the backend sets it to its own
// `threads` before each extern call, so a gemm uses the threads the kernels use (OpenBLAS's
// default is every core, whose spinning workers then compete with the kernels' pool).
void set_blas_threads(int threads);

// "mm", "bmm", "addmm", "matmul", "convolution".
const std::vector<std::string>& extern_kernel_names();

// Throws sdk::PluginError (INVALID_ARGUMENT for a shape or dtype mismatch, UNSUPPORTED for an
// unknown name).
void run_extern_kernel(const std::string& name, const std::vector<sdk::TensorView>& tensors,
                       size_t num_inputs, const std::vector<double>& scalars);

// The extern "convolution" (conv_kernel.cpp): im2col + gemm; scalars as core/lowering/rules_nn.cpp
// encodes them.
void run_convolution(const std::vector<sdk::TensorView>& tensors, size_t num_inputs,
                     const std::vector<double>& scalars);

}  // namespace stax::cpu
