// The layout arithmetic of the view ops, in one place: shape inference (view_ops.cpp) applies it to
// a node's input TensorMeta, the interpreter's view kernels (core/ops/view/kernels.cpp)
// to the runtime tensor's sizes, strides and storage offset. A view's result strides are therefore
// exactly the ones its metadata promises (seed Prop. 6.2: a view is an affine map of indices).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "core/graph/arg.h"
#include "core/types/tensor_meta.h"

namespace stax {

struct StridedLayout {
  Shape sizes;
  Shape strides;       // in elements
  int64_t offset = 0;  // storage offset in elements
  bool copy = false;   // reshape only: no view exists; the result is a contiguous copy
};

// The arguments of one view call: a lookup of its (normalized) parameters, and an error sink that
// throws (CallArgs::fail at graph-build time, KernelContext::fail in the interpreter).
struct ViewCall {
  std::function<const Arg&(std::string_view param)> arg;
  std::function<void(const std::string& message)> fail;
};

// Whether `op` (a canonical overload name, "slice.Tensor") is one view_layout() knows.
bool is_view_layout_op(std::string_view op);

// The layout of view op `op` applied to `in`. reshape sets `copy` when the new shape cannot be
// expressed over `in`'s strides (strides are then contiguous and offset 0).
StridedLayout view_layout(std::string_view op, const StridedLayout& in, const ViewCall& call);

// The [start, end) a slice with optional bounds `start` and `end` covers on a dim of `size`, by
// Python's clamping: an absent start is 0 and an absent end is the dim's end, negative bounds
// count from the end, then start is clamped into [0, size] and end into [start, size].
std::pair<int64_t, int64_t> clamp_slice_bounds(const Arg& start, const Arg& end, int64_t size);

// The strides that let `sizes` view memory laid out as (old_sizes, old_strides) without a copy, or
// nullopt when none exist (splitting and merging only dims that are contiguous with each other).
std::optional<Shape> view_strides(const Shape& old_sizes, const Shape& old_strides,
                                  const Shape& sizes);

}  // namespace stax
