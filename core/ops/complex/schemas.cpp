// Complex arithmetic (docs/complex.md): the ops of other families that also take complex64 /
// complex128 tensors. Registered after every family, this marks them (OpDef::complex) and adapts
// their inference where a complex input changes the result's dtype as torch does (abs and angle of
// complex values are real; mean of a complex tensor is complex). Their kernels are in
// kernels_elementwise.cpp / kernels_movement.cpp, their derivatives in vjp.cpp / jvp.cpp.
#include <string>

#include "core/graph/op_registry.h"
#include "core/ops/common/infer_by_building.h"
#include "core/ops/complex/complex_ops.h"
#include "core/ops/registration.h"

namespace stax {
namespace {

bool input_is_complex(const CallArgs& c) {
  return c.has("self") && is_complex(c.tensor("self").dtype);
}

// abs / angle: the real dtype of a complex input (torch's toRealValueType), same sizes.
void real_result_for_complex(OpDef& op) {
  op.infer = [old = op.infer](const CallArgs& c) {
    if (!input_is_complex(c)) return old(c);
    const TensorMeta& x = c.tensor("self");
    return TensorMeta::contiguous(x.sizes, complex_to_real(x.dtype), x.device);
  };
}

// sum of a complex tensor: complex unless a dtype is given (the real rule promotes every
// non-floating dtype to int64).
void sum_of_complex(OpDef& op) {
  op.infer = [old = op.infer](const CallArgs& c) {
    TensorMeta m = old(c);
    if (input_is_complex(c) && !c.has("dtype")) m.dtype = c.tensor("self").dtype;
    return m;
  };
}

// mean of a complex tensor: complex, shaped as sum's (whose rule has the same parameters).
void mean_of_complex(OpDef& op, const OpDef& sum) {
  op.infer = [old = op.infer, rule = sum.infer](const CallArgs& c) {
    return input_is_complex(c) ? rule(c) : old(c);
  };
}

// tanh_backward(grad_output, output) of complex values: their broadcast shape and common dtype
// (the real rule takes floating-point inputs only).
void complex_backward_result(OpDef& op) {
  op.infer = [old = op.infer](const CallArgs& c) {
    const TensorMeta& g = c.tensor("grad_output");
    const TensorMeta& y = c.tensor("output");
    if (!is_complex(g.dtype) && !is_complex(y.dtype)) return old(c);
    return TensorMeta::contiguous(broadcast_shapes(g.sizes, y.sizes, c.where()),
                                  promote_types(g.dtype, y.dtype), g.device);
  };
}

// cumsum of a complex tensor: complex unless a dtype is given (the real rule accumulates every
// non-floating dtype in int64).
void cumsum_of_complex(OpDef& op) {
  op.infer = [old = op.infer](const CallArgs& c) {
    TensorMeta m = old(c);
    if (input_is_complex(c) && !c.get("dtype").is_dtype()) m.dtype = c.tensor("self").dtype;
    return m;
  };
}

// linalg_vector_norm of a complex tensor: the inference of its decomposition (the norm of |z|,
// real), torch's check that a given dtype is complex.
void vector_norm_of_complex(OpDef& op) {
  InferFn built = infer_by_building([](Graph& g, const ExpandCall& c) {
    const Arg& d = c.get("dtype");
    if (d.is_dtype() && !is_complex(d.dtype()))
      c.fail("linalg.vector_norm: dtype should be complex for complex inputs, but got " +
             std::string(dtype_name(d.dtype())));
    return complex_ops::vector_norm_of_complex(g, c.tensor("self"),
                                               [&c](const char* p) { return c.get(p); });
  });
  op.infer = [old = op.infer, built](const CallArgs& c) {
    return input_is_complex(c) ? built(c) : old(c);
  };
}

}  // namespace

void register_complex_ops(OpRegistry& r) {
  auto mark = [&r](const auto& names) {
    for (const char* name : names) r.extend(name).complex = true;
  };
  mark(complex_ops::kHolomorphic);
  mark(complex_ops::kLinear);
  mark(complex_ops::kOwnRules);
  mark(complex_ops::kNoDerivative);
  mark(complex_ops::kByDecomposition);
  r.extend("linalg_vector_norm.default").complex = true;
  cumsum_of_complex(r.extend("cumsum.default"));
  vector_norm_of_complex(r.extend("linalg_vector_norm.default"));
  r.extend("getitem.default").complex = true;  // an element of a tuple (linalg_eig's)
  for (const char* name : {"abs.default", "angle.default"})
    real_result_for_complex(r.extend(name));
  complex_backward_result(r.extend("tanh_backward.default"));
  for (const char* name : {"sum.dim_IntList", "sum.default"}) sum_of_complex(r.extend(name));
  mean_of_complex(r.extend("mean.dim"), r.extend("sum.dim_IntList"));
  mean_of_complex(r.extend("mean.default"), r.extend("sum.default"));
}

}  // namespace stax
