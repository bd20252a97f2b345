// The pointwise lowering helper (seed Listing 6.1) and the small pieces lowering rules share.
#pragma once

#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "core/graph/op_registry.h"
#include "core/lowering/graph_lowering.h"

namespace stax {

// An input of a pointwise computation: a tensor value or a scalar (Listing 6.1's
// as_value_node(x, dtype).make_loader(): a constant in the computation dtype).
struct Operand {
  IRPtr tensor;
  std::optional<ScalarValue> scalar;
  std::optional<DType> as;  // convert the loaded value to this dtype (default: the compute dtype)

  Operand(IRPtr t, std::optional<DType> as_dtype = std::nullopt)  // NOLINT: implicit
      : tensor(std::move(t)), as(as_dtype) {}
  Operand(ScalarValue s) : scalar(s) {}  // NOLINT: implicit
};

using PointwiseBody = std::function<Val(OpsBuilder& ops, const std::vector<Val>& args)>;

// Listing 6.1: the iteration range is the broadcast of the tensor inputs' sizes; each tensor is
// read through a broadcasting loader and converted to `compute` (or its Operand::as dtype), each
// scalar becomes ops.constant(value, compute); fn's result is converted to `out` (the node's
// dtype). Returns an unrealized StorageBox(Pointwise); nothing is allocated.
IRPtr pointwise(GraphLowering& g, const std::vector<Operand>& inputs, DType compute, DType out,
                const PointwiseBody& fn);

// A loader of `x` broadcast to `target` (NumPy rules: leading dims added, size-1 dims read at 0).
Loader broadcast_loader(const IRPtr& x, const Shape& target);
// The broadcast of several shapes (their NumPy-compatibility was checked at graph-build time).
Shape broadcast_sizes(const std::vector<Shape>& shapes);

// The scalar of a Scalar/int/float/bool argument.
ScalarValue scalar_of(const Arg& a);
// The dtype torch's elementwise promotion gives the named parameters of `n` (without the
// IntToFloat / AlwaysBool adjustment): what comparisons and logical ops compute in.
DType promoted_dtype(const Node& n, const std::vector<std::string>& params);

}  // namespace stax
