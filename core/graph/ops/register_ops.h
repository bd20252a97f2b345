// Registration entry points of the op table, one per op family (core/graph/ops/*.cpp).
#pragma once

namespace stax {

class OpRegistry;

void register_pointwise_ops(OpRegistry& r);   // unary, binary, comparison, where, clamp, casts
void register_reduction_ops(OpRegistry& r);   // sum prod amax amin argmax argmin mean var all any
void register_view_ops(OpRegistry& r);        // view reshape permute t transpose expand ...
void register_indexing_ops(OpRegistry& r);    // cat gather index index_put scatter_add
void register_extern_ops(OpRegistry& r);      // mm bmm matmul addmm
void register_creation_ops(OpRegistry& r);    // full zeros ones arange rand randn
void register_composite_ops(OpRegistry& r);   // softmax log_softmax silu layer_norm ...
void register_backward_ops(OpRegistry& r);    // gelu_backward threshold_backward ...
void register_nn_ops(OpRegistry& r);          // convolution pooling norms losses attention (nn_ops.cpp)
void register_model_ops(OpRegistry& r);       // issue 14: activations, scans, shape ops ...
void register_multi_output_ops(OpRegistry& r);  // getitem, max.dim, split, native_layer_norm ...
void register_more_ops(OpRegistry& r);        // issue 14: more aten ops (more_ops.cpp)

inline void register_all_ops(OpRegistry& r) {
  register_pointwise_ops(r);
  register_reduction_ops(r);
  register_view_ops(r);
  register_indexing_ops(r);
  register_extern_ops(r);
  register_creation_ops(r);
  register_composite_ops(r);
  register_backward_ops(r);
  register_nn_ops(r);
  register_model_ops(r);
  register_multi_output_ops(r);
  register_more_ops(r);
}

}  // namespace stax
