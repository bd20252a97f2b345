// Functional differentiation of a graph on the reference interpreter (seed §5.7; the uncompiled
// path, tensorplay.autograd.functional): jvp (forward mode, dual numbers via build_jvp_graph),
// vjp (reverse mode via build_joint_graph), hvp (forward over reverse: the JVP of the joint
// graph), jacobian and hessian.
//
// Conventions shared by every function:
//   - `primals` holds one tensor per placeholder of `f`, in graph order (as interpret() takes).
//   - Only floating-point placeholders are differentiable; results for other placeholders are
//     undefined Tensors (Tensor::defined() is false).
//   - An undefined tangent / cotangent / v entry means zero.
//   - options are passed to every interpret() call (random ops draw the same numbers in the
//     forward and the derivative computations).
// Errors (wrong counts, an op without a rule, hvp / hessian of a non-scalar function) are
// stax::Error with stage "autodiff".
#pragma once

#include <vector>

#include "core/graph/graph.h"
#include "core/interpreter/interpreter.h"
#include "core/tensor/tensor.h"

namespace stax {

struct JvpResult {
  std::vector<Tensor> outputs;   // f(primals)
  std::vector<Tensor> tangents;  // J v, one per output
};
// Forward mode: f(x) and J(x) v in one run of the tangent graph.
JvpResult jvp(const Graph& f, const std::vector<Tensor>& primals,
              const std::vector<Tensor>& tangents, const InterpreterOptions& options = {});

struct VjpResult {
  std::vector<Tensor> outputs;  // f(primals)
  std::vector<Tensor> grads;    // uᵀ J(x), one per placeholder
};
// Reverse mode: f(x) and uᵀ J(x), with u = `cotangents` (one per output).
VjpResult vjp(const Graph& f, const std::vector<Tensor>& primals,
              const std::vector<Tensor>& cotangents, const InterpreterOptions& options = {});

struct HvpResult {
  Tensor output;              // f(primals), f having one one-element floating output
  std::vector<Tensor> grads;  // ∇f(x), one per placeholder
  std::vector<Tensor> hvp;    // H(x) v, one per placeholder
};
// Forward over reverse (Pearlmutter): the JVP, in direction v, of the joint graph of f.
HvpResult hvp(const Graph& f, const std::vector<Tensor>& primals, const std::vector<Tensor>& v,
              const InterpreterOptions& options = {});

// J[o][i]: the Jacobian of output o with respect to placeholder i, of shape
// output_o.shape + input_i.shape and the input's dtype (zeros for a non-differentiable output;
// undefined for a non-floating input). One reverse pass per output element.
std::vector<std::vector<Tensor>> jacobian(const Graph& f, const std::vector<Tensor>& primals,
                                          const InterpreterOptions& options = {});

// H[i][j]: the second derivatives of f's one-element output with respect to placeholders i and
// j, of shape input_i.shape + input_j.shape. One Hessian-vector product per element of the
// differentiable inputs.
std::vector<std::vector<Tensor>> hessian(const Graph& f, const std::vector<Tensor>& primals,
                                         const InterpreterOptions& options = {});

}  // namespace stax
