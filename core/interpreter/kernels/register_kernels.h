// Registration entry points of the interpreter's kernel table, one per op family.
#pragma once

namespace stax {

class InterpreterTable;
class KernelContext;
class Tensor;

void register_pointwise_kernels(InterpreterTable& t);   // incl. where, clamp, to.dtype, *_backward
void register_reduction_kernels(InterpreterTable& t);
void register_view_kernels(InterpreterTable& t);
void register_indexing_kernels(InterpreterTable& t);
void register_extern_kernels(InterpreterTable& t);
void register_creation_kernels(InterpreterTable& t);    // incl. random ops
void register_composite_kernels(InterpreterTable& t);   // softmax ... (may run the decomposition)
void register_nn_kernels(InterpreterTable& t);          // convolution, pooling, norms (nn_kernels.cpp)
void register_model_kernels(InterpreterTable& t);       // issue 14: activations, scans ...
void register_more_kernels(InterpreterTable& t);        // issue 14: more aten ops (more_kernels.cpp)

inline void register_all_kernels(InterpreterTable& t) {
  register_pointwise_kernels(t);
  register_reduction_kernels(t);
  register_view_kernels(t);
  register_indexing_kernels(t);
  register_extern_kernels(t);
  register_creation_kernels(t);
  register_composite_kernels(t);
  register_nn_kernels(t);
  register_model_kernels(t);
  register_more_kernels(t);
}

}  // namespace stax
