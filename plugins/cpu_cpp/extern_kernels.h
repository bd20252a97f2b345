// cpu_cpp's extern kernels (seed §6.1 item 2): the matrix products mm, bmm, addmm and matmul on
// strided tensors, with the reference interpreter's semantics:
//   * float32 / float64: the `blas:` library (gemm_library.h) on the backend's thread pool, one
//     call for a whole batch. The default, Stax's GEMM (stax/sdk/gemm.hpp), computes the
//     interpreter's bits; another library sums in its own order and agrees with the interpreter
//     within the gemm bound k*u*Σ|a_ik*b_kj|.
//   * float16 / bfloat16: a loop accumulating the float values in double, rounded once to float
//     and then to the storage format; integers: int64 wrap-around; bool: or of ands.
//   * matmul: torch.matmul's rules: 1-D operands become a row (left) or a column (right) whose unit
//     dimension is dropped from the result; batch dimensions broadcast.
//   * addmm(self, mat1, mat2; scalars beta, alpha): out = beta*self + alpha*(mat1 @ mat2) computed
//     elementwise in float32 (float64 for float64, int64 for integers) after the product has been
//     stored in the output dtype; beta == 0 ignores self (NaN in self does not propagate); with
//     beta == 0 and alpha == 1 the product is the result. It runs on each block of rows as soon
//     as the product has finished it (still in cache).
// Tensors: inputs first, then the one output (allocated by the host, any strides).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "plugins/cpu_cpp/gemm_library.h"
#include "stax/sdk/backend.hpp"

namespace stax::cpu {

// Called with a range [begin, end) of the output's flat (row-major) element indices once those
// elements are final, possibly from several threads at once for disjoint ranges; every element
// is reported exactly once. The matrix products report blocks of rows as they finish them
// (when the output is contiguous; otherwise, and for convolution, the whole output at the end).
using OutputDone = std::function<void(int64_t begin, int64_t end)>;

struct ExternContext {
  GemmLibrary* gemm = nullptr;  // float32 / float64 products and convolutions
  ThreadPool* pool = nullptr;   // convolution gathers, fused attention tasks (nullptr: caller)
  OutputDone done;              // optional: an epilogue (cpu_backend.cpp)
};

// "mm", "bmm", "addmm", "matmul", "convolution", "flash_attention", "flash_attention_backward",
// "flash_attention_dropout", "flash_attention_dropout_backward", "scatter_add", "index_put".
const std::vector<std::string>& extern_kernel_names();

// Throws sdk::PluginError (INVALID_ARGUMENT for a shape or dtype mismatch, UNSUPPORTED for an
// unknown name).
void run_extern_kernel(const std::string& name, const std::vector<sdk::TensorView>& tensors,
                       size_t num_inputs, const std::vector<double>& scalars,
                       const ExternContext& ctx);

// The extern "convolution" (conv_kernel.cpp, conv_gemm.h): gathers on `pool`, products on the
// `blas:` library; scalars as core/ops/nn/lowering.cpp encodes them.
void run_convolution(const std::vector<sdk::TensorView>& tensors, size_t num_inputs,
                     const std::vector<double>& scalars, GemmLibrary& gemm, ThreadPool* pool);

// The externs "flash_attention" and "flash_attention_backward" (attention_kernel.cpp): the SDK's
// fused attention (stax/sdk/flash_attention.hpp) on `pool`; tensors and scalars as
// core/ops/nn/flash_attention.cpp lowers them.
void run_flash_attention(const std::string& name, const std::vector<sdk::TensorView>& tensors,
                         size_t num_inputs, const std::vector<double>& scalars, ThreadPool* pool);

// The extern "scatter_add" (scatter_kernel.cpp): self, index, src, the output; scalars {dim}; the
// interpreter's additions in its order (bit for bit), split over a dim other than `dim` on `pool`.
void run_scatter_add(const std::vector<sdk::TensorView>& tensors, size_t num_inputs,
                     const std::vector<double>& scalars, ThreadPool* pool);
// The extern "index_put" (scatter_kernel.cpp): self, the defined index tensors (int64), values,
// the output; scalars {accumulate, L, L flags: an index tensor at that position}; the
// interpreter's writes (or additions) in its order, bit for bit.
void run_index_put(const std::vector<sdk::TensorView>& tensors, size_t num_inputs,
                   const std::vector<double>& scalars, ThreadPool* pool);

}  // namespace stax::cpu
