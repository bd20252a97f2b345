// The registration entry points of the op families (core/ops/<family>/): each fills one engine
// table with the entries of its family. install_ops() (install.cpp) is their only caller; an op
// added to an existing family touches its family's folder only, never this file.
#pragma once

namespace stax {

class DecompositionTable;
class ExpansionTable;
class FunctionalizationTable;
class InterpreterTable;
class JvpTable;
class LoweringTable;
class OpRegistry;
class OpTraitTable;
class VjpTable;

// ---- schemas and shape / dtype inference (the op registry, core/graph/op_registry.h)
void register_pointwise_ops(OpRegistry& r);     // unary, binary, comparison, where, clamp, casts
void register_backward_ops(OpRegistry& r);      // gelu_backward threshold_backward ...
void register_reduction_ops(OpRegistry& r);     // sum prod amax amin argmax argmin mean var all any
void register_view_ops(OpRegistry& r);          // view reshape permute t transpose expand ...
void register_indexing_ops(OpRegistry& r);      // cat gather index index_put scatter_add
void register_extern_ops(OpRegistry& r);        // mm bmm matmul addmm
void register_creation_ops(OpRegistry& r);      // full zeros ones arange rand randn
void register_composite_ops(OpRegistry& r);     // softmax log_softmax silu layer_norm ...
void register_nn_convolution_ops(OpRegistry& r);  // convolution conv1d/2d/3d conv_transpose*
void register_nn_ops(OpRegistry& r);            // pooling norms losses attention
void register_multi_output_ops(OpRegistry& r);  // getitem, max.dim, split, native_layer_norm ...
void register_special_ops(OpRegistry& r);       // erfinv digamma polygamma Bessel zeta ...
void register_random_ops(OpRegistry& r);        // normal bernoulli randint_like
void register_activation_ops(OpRegistry& r);    // leaky_relu elu hardtanh ... and *_backward
void register_size_query_ops(OpRegistry& r);    // sym_size.int sym_stride.int sym_numel ...
void register_nn_backward_ops(OpRegistry& r);   // avg_pool2d_backward mse_loss_backward ...
void register_nn_backward_multi_output_ops(OpRegistry& r);  // convolution_backward ...
void register_attention_form_ops(OpRegistry& r);  // _scaled_dot_product_flash_attention_for_cpu ...
void register_nn_spatial_ops(OpRegistry& r);    // col2im grid_sampler_2d
void register_embedding_bag_ops(OpRegistry& r); // _embedding_bag and its backward
void register_lstm_layer_ops(OpRegistry& r);    // mkldnn_rnn_layer and its backward, lstm.input
void register_gru_input_ops(OpRegistry& r);     // gru.input
void register_flash_attention_ops(OpRegistry& r);  // _stax_flash_attention and its backward
void register_spectral_ops(OpRegistry& r);      // _fft_r2c _fft_c2r _fft_c2c view_as_real ...
void register_view_copy_ops(OpRegistry& r);     // view_copy permute_copy ... unbind_copy
void register_static_shape_ops(OpRegistry& r);  // nonzero_static segment_reduce
void register_scatter_form_ops(OpRegistry& r);  // diagonal_scatter as_strided_scatter ...
void register_regrouping_form_ops(OpRegistry& r);  // channel_shuffle _chunk_cat ...
void register_resampling_ops(OpRegistry& r);  // upsample_linear1d bicubic2d ...
void register_linalg_ops(OpRegistry& r);        // linalg_solve_triangular ... _stax_linalg_*
void register_linalg_multi_output_ops(OpRegistry& r);  // _linalg_svd linalg_qr _linalg_det ...
void register_linalg_composite_ops(OpRegistry& r);  // linalg_pinv linalg_matrix_sqrth linalg_polar

// In-place and out= forms (add_, copy_, add.out ...) of the ops registered before: last.
void register_mutating_forms(OpRegistry& r);

// ---- roles and traits: what engines know of ops without naming them (core/graph/op_traits.h)
void register_op_roles(OpTraitTable& t, const OpRegistry& r);  // the emitter's add, getitem ...
void register_pointwise_traits(OpTraitTable& t);  // silu: a pointwise composite
void register_indexing_traits(OpTraitTable& t);   // index_put scatter scatter_add: opaque
void register_composite_traits(OpTraitTable& t);  // linear: opaque
void register_extern_traits(OpTraitTable& t);     // mm bmm matmul addmm: take epilogues

// ---- functionalization (core/graph/functionalize.h)
void register_mutation_rules(FunctionalizationTable& t, const OpRegistry& r);  // add_ copy_ bn
void register_view_functionalization(FunctionalizationTable& t, const OpRegistry& r);

// ---- multi-output expansions (core/graph/multi_output.h)
void register_multi_output_expansions(ExpansionTable& t);
void register_nn_backward_multi_output_expansions(ExpansionTable& t);
void register_attention_form_expansions(ExpansionTable& t);
void register_embedding_bag_expansions(ExpansionTable& t);
void register_nn_spatial_expansions(ExpansionTable& t);
void register_lstm_layer_expansions(ExpansionTable& t);
void register_gru_input_expansions(ExpansionTable& t);
void register_view_copy_expansions(ExpansionTable& t);
void register_linalg_expansions(ExpansionTable& t);
void register_linalg_composite_expansions(ExpansionTable& t);

// ---- decompositions (core/graph/decompositions.h)
void register_pointwise_decompositions(DecompositionTable& t);  // silu gelu
void register_reduction_decompositions(DecompositionTable& t);  // mean var
void register_extern_decompositions(DecompositionTable& t);     // addmm
void register_random_decompositions(DecompositionTable& t);     // dropout bernoulli
void register_composite_decompositions(DecompositionTable& t);  // softmax layer_norm linear ...
void register_nn_decompositions(DecompositionTable& t);         // convolutions pooling losses ...
void register_indexing_decompositions(DecompositionTable& t);   // stack repeat flip roll tril ...
void register_creation_decompositions(DecompositionTable& t);   // eye linspace new_* ...
void register_special_decompositions(DecompositionTable& t);    // mvlgamma xlog1py entr ...
void register_activation_decompositions(DecompositionTable& t); // leaky_relu elu ... mish
void register_functional_decompositions(DecompositionTable& t); // losses distances resampling
void register_size_query_decompositions(DecompositionTable& t); // sym_size.int ... (constants)
void register_nn_backward_decompositions(DecompositionTable& t); // the *_backward ops
void register_nn_spatial_decompositions(DecompositionTable& t);
void register_embedding_bag_decompositions(DecompositionTable& t);
void register_view_copy_decompositions(DecompositionTable& t);
void register_static_shape_decompositions(DecompositionTable& t);
void register_scatter_form_decompositions(DecompositionTable& t);
void register_regrouping_form_decompositions(DecompositionTable& t);
void register_resampling_decompositions(DecompositionTable& t);
void register_linalg_decompositions(DecompositionTable& t);  // cholesky_solve cholesky_inverse
void register_linalg_composite_decompositions(DecompositionTable& t);  // pinv matrix_sqrth

// ---- reverse-mode rules (core/autodiff/vjp.h)
void register_pointwise_vjps(VjpTable& t);
void register_reduction_vjps(VjpTable& t);
void register_view_vjps(VjpTable& t);
void register_indexing_vjps(VjpTable& t);
void register_extern_vjps(VjpTable& t);
void register_spectral_vjps(VjpTable& t);  // torch's fft_r2c_backward / fft_c2r_backward
void register_linalg_vjps(VjpTable& t);    // torch's svd / qr / eigh / cholesky / solve / det rules
void register_linalg_composite_vjps(VjpTable& t);
void register_composite_vjps(VjpTable& t);
void register_nn_vjps(VjpTable& t);
void register_special_vjps(VjpTable& t);
void register_pointwise_math_vjps(VjpTable& t);      // asin ... atan2 hypot copysign
void register_special_derivative_vjps(VjpTable& t);  // erfinv digamma polygamma i0 ...
void register_activation_vjps(VjpTable& t);
void register_creation_vjps(VjpTable& t);  // copy fill.Tensor
void register_nn_backward_vjps(VjpTable& t);
void register_nn_spatial_vjps(VjpTable& t);
void register_embedding_bag_vjps(VjpTable& t);
void register_flash_attention_vjps(VjpTable& t);
void register_view_copy_vjps(VjpTable& t);
void register_static_shape_vjps(VjpTable& t);
void register_scatter_form_vjps(VjpTable& t);
void register_regrouping_form_vjps(VjpTable& t);
void register_resampling_vjps(VjpTable& t);

// ---- forward-mode rules (core/autodiff/jvp.h)
void register_pointwise_jvps(JvpTable& t);
void register_backward_vjps(VjpTable& t);   // the same backward ops, for double backward
void register_backward_jvps(JvpTable& t);   // the *_backward ops, for forward-over-reverse
void register_reduction_jvps(JvpTable& t);
void register_view_jvps(JvpTable& t);
void register_indexing_jvps(JvpTable& t);
void register_extern_jvps(JvpTable& t);
void register_random_jvps(JvpTable& t);
void register_nn_jvps(JvpTable& t);
void register_special_jvps(JvpTable& t);
void register_pointwise_math_jvps(JvpTable& t);      // asin ... atan2 hypot copysign
void register_special_derivative_jvps(JvpTable& t);  // erfinv digamma polygamma i0 ...
void register_activation_jvps(JvpTable& t);
void register_creation_jvps(JvpTable& t);  // copy fill.Tensor
void register_nn_backward_jvps(JvpTable& t);
void register_nn_spatial_jvps(JvpTable& t);
void register_embedding_bag_jvps(JvpTable& t);
void register_view_copy_jvps(JvpTable& t);
void register_static_shape_jvps(JvpTable& t);
void register_scatter_form_jvps(JvpTable& t);
void register_regrouping_form_jvps(JvpTable& t);
void register_resampling_jvps(JvpTable& t);

// ---- interpreter kernels (core/interpreter/interpreter.h)
void register_pointwise_kernels(InterpreterTable& t);  // incl. where, clamp, to.dtype, *_backward
void register_reduction_kernels(InterpreterTable& t);
void register_view_kernels(InterpreterTable& t);
void register_indexing_kernels(InterpreterTable& t);
void register_extern_kernels(InterpreterTable& t);
void register_spectral_kernels(InterpreterTable& t);  // FFTW's transforms, complex parts
void register_linalg_kernels(InterpreterTable& t);    // LAPACK's factorizations and solves
void register_linalg_composite_kernels(InterpreterTable& t);
void register_creation_kernels(InterpreterTable& t);   // incl. rand randn
void register_size_query_kernels(InterpreterTable& t); // sym_size.int ... (their decomposition)
void register_nn_backward_kernels(InterpreterTable& t);
void register_nn_spatial_kernels(InterpreterTable& t);
void register_embedding_bag_kernels(InterpreterTable& t);
void register_random_kernels(InterpreterTable& t);     // normal bernoulli randint_like
void register_composite_kernels(InterpreterTable& t);  // softmax ... (may run the decomposition)
void register_nn_kernels(InterpreterTable& t);         // convolution, pooling, norms
void register_special_kernels(InterpreterTable& t);    // special functions in double
void register_activation_kernels(InterpreterTable& t);
void register_flash_attention_kernels(InterpreterTable& t);  // the SDK's flash kernel
void register_view_copy_kernels(InterpreterTable& t);
void register_static_shape_kernels(InterpreterTable& t);
void register_scatter_form_kernels(InterpreterTable& t);
void register_regrouping_form_kernels(InterpreterTable& t);
void register_resampling_kernels(InterpreterTable& t);

// ---- lowering rules (core/lowering/lowering_rules.h)
void register_pointwise_rules(LoweringTable& t);  // unary, binary, comparison, where, clamp, casts,
                                                  // gelu / silu and their backward ops
void register_reduction_rules(LoweringTable& t);  // sum prod amax amin mean argmax argmin any all
void register_view_rules(LoweringTable& t);       // view reshape permute t transpose expand ...
void register_indexing_rules(LoweringTable& t);   // gather index_select index.Tensor cat
void register_extern_rules(LoweringTable& t);     // mm bmm matmul addmm
void register_creation_rules(LoweringTable& t);   // full zeros ones *_like arange
void register_nn_rules(LoweringTable& t);         // convolution
void register_flash_attention_rules(LoweringTable& t);  // the flash_attention externs

}  // namespace stax
