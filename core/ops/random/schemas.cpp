// Schemas of the random ops.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/graph/op_registry.h"
#include "core/ops/common/infer_helpers.h"
#include "core/ops/nn/params.h"
#include "core/ops/registration.h"

namespace stax {
namespace {

using P = Promotion;
using C = OpCategory;

std::string dt(DType t) { return std::string(dtype_name(t)); }

TensorMeta normal_rule(const CallArgs& c) {
  bool mt = c.get("mean").is_node(), st = c.get("std").is_node();
  Shape s = mt && st ? broadcast_shapes(c.tensor("mean").sizes, c.tensor("std").sizes, c.where())
                     : mt ? c.tensor("mean").sizes : c.tensor("std").sizes;
  // As torch: the result has the mean's dtype when the mean is a tensor (else the std's).
  DType t = mt ? c.tensor("mean").dtype : c.tensor("std").dtype;
  if (!is_floating(t)) c.fail("normal expects a floating-point " + std::string(mt ? "mean" : "std") +
                              ", got " + dt(t));
  if (!st && c.get("std").to_double() < 0)
    c.fail("normal expects std >= 0.0, but found std " + double_repr(c.get("std").to_double()));
  return TensorMeta::contiguous(s, t, "cpu");
}

}  // namespace

void register_random_ops(OpRegistry& r) {
  {
    const std::string fk =
        "*, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None";

    // Random ops (interpreter kernels drawing from the run's seed; compared by shape and dtype).
    auto random = [&](const std::string& schema, InferFn f) {
      r.add(schema, C::Random, P::None, std::move(f)).differentiable = false;
    };

    auto randint_like = [](const CallArgs& c) {
      const TensorMeta& in = c.tensor("self");
      int64_t lo = c.op().schema.index_of("low") >= 0 ? c.get("low").to_int() : 0;
      if (c.get("high").to_int() <= lo && shape_numel(in.sizes) > 0)  // torch: empty is fine
        c.fail("random_ expects 'from' to be less than 'to', but got from=" + std::to_string(lo) +
               " >= to=" + std::to_string(c.get("high").to_int()));
      DType t = c.get("dtype").is_dtype() ? c.get("dtype").dtype() : in.dtype;
      return TensorMeta::contiguous(in.sizes, t, in.device);
    };

    const std::string lk = fk + ", MemoryFormat? memory_format=None";

    random("normal.Tensor_Tensor(Tensor mean, Tensor std, *, Generator? generator=None) -> Tensor",
           normal_rule);

    random("normal.Tensor_float(Tensor mean, float std=1., *, Generator? generator=None) -> Tensor",
           normal_rule);

    random("normal.float_Tensor(float mean, Tensor std, *, Generator? generator=None) -> Tensor",
           normal_rule);

    random("bernoulli(Tensor self, *, Generator? generator=None) -> Tensor", [](const CallArgs& c) {
      const TensorMeta& in = c.tensor("self");
      if (!is_floating(in.dtype)) c.fail("bernoulli expects a floating-point tensor of "
                                         "probabilities, got " + dt(in.dtype));
      return TensorMeta::contiguous(in.sizes, in.dtype, in.device);
    });

    random("randint_like(Tensor self, int high, " + lk + ") -> Tensor", randint_like);

    random("randint_like.low_dtype(Tensor self, int low, int high, " + lk + ") -> Tensor",
           randint_like);
  }
}

}  // namespace stax
