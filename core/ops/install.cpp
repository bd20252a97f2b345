#include "core/ops/install.h"

#include <mutex>

#include "core/autodiff/jvp.h"
#include "core/autodiff/vjp.h"
#include "core/graph/decompositions.h"
#include "core/graph/functionalize.h"
#include "core/graph/multi_output.h"
#include "core/graph/op_registry.h"
#include "core/graph/op_traits.h"
#include "core/interpreter/interpreter.h"
#include "core/lowering/lowering_rules.h"
#include "core/ops/registration.h"

namespace stax {

// Fused attention's JVP rule (core/ops/nn/flash_attention.cpp); belongs in registration.h with the
// family's other entry points (kept here to spare every op family a rebuild late in the session).
void register_flash_attention_jvps(JvpTable& t);
// fractional_max_pool2d / 3d (core/ops/nn/fractional_pool.cpp); kept here for the same reason.
void register_fractional_pool_ops(OpRegistry& r);
void register_fractional_pool_expansions(ExpansionTable& t);
// The linalg ops' forward-mode rules (core/ops/linalg/jvp.cpp) and the ops whose result size is
// known only when they run (core/ops/indexing/runtime_sized.cpp); kept here for the same reason.
void register_linalg_jvps(JvpTable& t);
void register_runtime_sized_ops(OpRegistry& r);
void register_runtime_sized_expansions(ExpansionTable& t);
void register_runtime_sized_vjps(VjpTable& t);
void register_runtime_sized_kernels(InterpreterTable& t);
// bincount, run-time sized with a bound (core/ops/indexing/bincount.cpp).
void register_bincount_ops(OpRegistry& r);
void register_bincount_kernels(InterpreterTable& t);
// torch.histogram (core/ops/indexing/histogram.cpp).
void register_histogram_ops(OpRegistry& r);
void register_histogram_expansions(ExpansionTable& t);
void register_histogram_kernels(InterpreterTable& t);
// linalg_eig / linalg_eigvals (core/ops/linalg/eig.cpp) and complex arithmetic (core/ops/complex/:
// extends ops of the families above, so it runs after them); kept here for the same reason.
void register_linalg_eig_ops(OpRegistry& r);
// rrelu and multilabel_margin_loss with their forms (core/ops/nn/rrelu_multilabel_margin.cpp);
// kept here for the same reason.
void register_rrelu_multilabel_margin_ops(OpRegistry& r);
void register_rrelu_multilabel_margin_decompositions(DecompositionTable& t);
void register_rrelu_multilabel_margin_vjps(VjpTable& t);
void register_rrelu_multilabel_margin_jvps(JvpTable& t);
void register_rrelu_multilabel_margin_kernels(InterpreterTable& t);
// The ops taking uint16 / uint32 / uint64 (core/ops/common/unsigned_ops.cpp), for the graph's check.
void register_barebones_unsigned_ops();
void register_linalg_eig_expansions(ExpansionTable& t);
void register_linalg_eig_kernels(InterpreterTable& t);
void register_linalg_eig_vjps(VjpTable& t);
void register_complex_ops(OpRegistry& r);
// polar (core/ops/complex/polar.cpp, a Composite op of the complex family).
void register_polar_ops(OpRegistry& r);
void register_polar_decompositions(DecompositionTable& t);
void register_polar_vjps(VjpTable& t);
void register_polar_jvps(JvpTable& t);
void register_polar_kernels(InterpreterTable& t);
void register_complex_decompositions(DecompositionTable& t);
void register_complex_vjps(VjpTable& t);
void register_complex_jvps(JvpTable& t);
void register_spectral_jvps(JvpTable& t);
void register_complex_elementwise_kernels(InterpreterTable& t);
void register_complex_movement_kernels(InterpreterTable& t);

void register_all_ops(OpRegistry& r) {
  register_pointwise_ops(r);
  register_reduction_ops(r);
  register_view_ops(r);
  register_indexing_ops(r);
  register_extern_ops(r);
  register_creation_ops(r);
  register_composite_ops(r);
  register_backward_ops(r);
  register_nn_convolution_ops(r);
  register_nn_ops(r);
  register_multi_output_ops(r);
  register_special_ops(r);
  register_random_ops(r);
  register_activation_ops(r);
  register_size_query_ops(r);
  register_nn_backward_ops(r);
  register_nn_backward_multi_output_ops(r);
  register_attention_form_ops(r);
  register_nn_spatial_ops(r);
  register_embedding_bag_ops(r);
  register_lstm_layer_ops(r);
  register_gru_input_ops(r);
  register_flash_attention_ops(r);
  register_spectral_ops(r);
  register_view_copy_ops(r);
  register_static_shape_ops(r);
  register_scatter_form_ops(r);
  register_regrouping_form_ops(r);
  register_resampling_ops(r);
  register_rrelu_multilabel_margin_ops(r);
  register_fractional_pool_ops(r);
  register_runtime_sized_ops(r);
  register_bincount_ops(r);
  register_histogram_ops(r);
  register_linalg_ops(r);
  register_linalg_multi_output_ops(r);
  register_linalg_composite_ops(r);
  register_linalg_eig_ops(r);
  register_polar_ops(r);
  register_complex_ops(r);     // extends ops registered above to complex values
  register_mutating_forms(r);  // derived from the functional ops above
}

namespace {

void install_decompositions(DecompositionTable& t) {
  register_composite_decompositions(t);
  register_extern_decompositions(t);
  register_pointwise_decompositions(t);
  register_reduction_decompositions(t);
  register_random_decompositions(t);
  register_nn_decompositions(t);
  register_indexing_decompositions(t);
  register_creation_decompositions(t);
  register_special_decompositions(t);
  register_activation_decompositions(t);
  register_functional_decompositions(t);
  register_size_query_decompositions(t);
  register_nn_backward_decompositions(t);
  register_nn_spatial_decompositions(t);
  register_embedding_bag_decompositions(t);
  register_view_copy_decompositions(t);
  register_static_shape_decompositions(t);
  register_scatter_form_decompositions(t);
  register_regrouping_form_decompositions(t);
  register_resampling_decompositions(t);
  register_rrelu_multilabel_margin_decompositions(t);
  register_linalg_decompositions(t);
  register_linalg_composite_decompositions(t);
  register_polar_decompositions(t);
  register_complex_decompositions(t);  // extends entries registered above: last
}

void install_vjps(VjpTable& t) {
  register_pointwise_vjps(t);
  register_backward_vjps(t);
  register_reduction_vjps(t);
  register_view_vjps(t);
  register_indexing_vjps(t);
  register_extern_vjps(t);
  register_spectral_vjps(t);
  register_linalg_vjps(t);
  register_linalg_composite_vjps(t);
  register_composite_vjps(t);
  register_nn_vjps(t);
  register_special_vjps(t);
  register_pointwise_math_vjps(t);
  register_special_derivative_vjps(t);
  register_activation_vjps(t);
  register_creation_vjps(t);
  register_nn_backward_vjps(t);
  register_nn_spatial_vjps(t);
  register_embedding_bag_vjps(t);
  register_flash_attention_vjps(t);
  register_view_copy_vjps(t);
  register_static_shape_vjps(t);
  register_scatter_form_vjps(t);
  register_regrouping_form_vjps(t);
  register_resampling_vjps(t);
  register_rrelu_multilabel_margin_vjps(t);
  register_runtime_sized_vjps(t);
  register_linalg_eig_vjps(t);
  register_polar_vjps(t);
  register_complex_vjps(t);  // extends rules registered above: last
}

void install_jvps(JvpTable& t) {
  register_pointwise_jvps(t);
  register_backward_jvps(t);
  register_linalg_jvps(t);
  register_reduction_jvps(t);
  register_view_jvps(t);
  register_indexing_jvps(t);
  register_extern_jvps(t);
  register_random_jvps(t);
  register_nn_jvps(t);
  register_special_jvps(t);
  register_pointwise_math_jvps(t);
  register_special_derivative_jvps(t);
  register_activation_jvps(t);
  register_creation_jvps(t);
  register_nn_backward_jvps(t);
  register_nn_spatial_jvps(t);
  register_embedding_bag_jvps(t);
  register_flash_attention_jvps(t);
  register_view_copy_jvps(t);
  register_static_shape_jvps(t);
  register_scatter_form_jvps(t);
  register_regrouping_form_jvps(t);
  register_resampling_jvps(t);
  register_rrelu_multilabel_margin_jvps(t);
  register_spectral_jvps(t);
  register_polar_jvps(t);
  register_complex_jvps(t);  // extends rules registered above: last
}

void install_kernels(InterpreterTable& t) {
  register_pointwise_kernels(t);
  register_reduction_kernels(t);
  register_view_kernels(t);
  register_indexing_kernels(t);
  register_extern_kernels(t);
  register_spectral_kernels(t);
  register_linalg_kernels(t);
  register_linalg_composite_kernels(t);
  register_creation_kernels(t);
  register_random_kernels(t);
  register_composite_kernels(t);
  register_nn_kernels(t);
  register_special_kernels(t);
  register_activation_kernels(t);
  register_size_query_kernels(t);
  register_nn_backward_kernels(t);
  register_nn_spatial_kernels(t);
  register_embedding_bag_kernels(t);
  register_flash_attention_kernels(t);
  register_view_copy_kernels(t);
  register_static_shape_kernels(t);
  register_scatter_form_kernels(t);
  register_regrouping_form_kernels(t);
  register_resampling_kernels(t);
  register_rrelu_multilabel_margin_kernels(t);
  register_runtime_sized_kernels(t);
  register_bincount_kernels(t);
  register_histogram_kernels(t);
  register_linalg_eig_kernels(t);
  register_polar_kernels(t);
  register_complex_elementwise_kernels(t);  // extend kernels registered above: last
  register_complex_movement_kernels(t);
}

void install_traits(OpTraitTable& t) {
  register_op_roles(t, default_registry());
  register_pointwise_traits(t);
  register_indexing_traits(t);
  register_composite_traits(t);
  register_extern_traits(t);
}

void install_lowering_rules(LoweringTable& t) {
  register_pointwise_rules(t);
  register_reduction_rules(t);
  register_view_rules(t);
  register_indexing_rules(t);
  register_extern_rules(t);
  register_creation_rules(t);
  register_nn_rules(t);
  register_flash_attention_rules(t);
}

}  // namespace

void install_ops() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_all_ops(registry_to_fill());
    register_barebones_unsigned_ops();
    install_traits(op_traits_to_fill());
    register_multi_output_expansions(expansions_to_fill());
    register_nn_backward_multi_output_expansions(expansions_to_fill());
    register_attention_form_expansions(expansions_to_fill());
    register_embedding_bag_expansions(expansions_to_fill());
    register_nn_spatial_expansions(expansions_to_fill());
    register_lstm_layer_expansions(expansions_to_fill());
    register_gru_input_expansions(expansions_to_fill());
    register_view_copy_expansions(expansions_to_fill());
    register_fractional_pool_expansions(expansions_to_fill());
    register_runtime_sized_expansions(expansions_to_fill());
    register_histogram_expansions(expansions_to_fill());
    register_linalg_expansions(expansions_to_fill());
    register_linalg_composite_expansions(expansions_to_fill());
    register_linalg_eig_expansions(expansions_to_fill());
    install_decompositions(decompositions_to_fill());
    install_vjps(vjp_table_to_fill());
    install_jvps(jvp_table_to_fill());
    install_kernels(interpreter_table_to_fill());
    install_lowering_rules(lowering_table_to_fill());
    register_mutation_rules(functionalization_table_to_fill(), default_registry());
    register_view_functionalization(functionalization_table_to_fill(), default_registry());
  });
}

}  // namespace stax
