// Reductions over dims (keepdim), full reductions, argmax/argmin, mean/var.
#include "core/graph/ops/infer_helpers.h"
#include "core/graph/ops/register_ops.h"

namespace stax {

void register_reduction_ops(OpRegistry& r) {
  using P = Promotion;
  auto reduce_rule = [](const CallArgs& c) {
    const TensorMeta& in = c.tensor("self");
    std::vector<int64_t> dims;
    bool keepdim = false;
    if (c.op().schema.index_of("dim") >= 0 && c.has("dim")) dims = c.get("dim").to_int_list();
    if (c.op().schema.index_of("keepdim") >= 0) keepdim = c.get("keepdim").to_bool();
    DType t = in.dtype;
    if (c.op().schema.index_of("dtype") >= 0 && c.get("dtype").is_dtype()) t = c.get("dtype").dtype();
    else if (c.op().schema.base == "sum" || c.op().schema.base == "prod")
      t = is_floating(t) ? t : DType::Int64;  // integer sums accumulate in int64, like torch
    return TensorMeta::contiguous(infer::reduce_shape(in.sizes, dims, keepdim, c), t, in.device);
  };
  r.add("sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
        OpCategory::Reduction, P::None, reduce_rule);
  r.add("sum.default(Tensor self, *, ScalarType? dtype=None) -> Tensor", OpCategory::Reduction,
        P::None, reduce_rule);
}

}  // namespace stax
