// Matrix products: lowered to extern kernels (templates or BLAS), never fused.
#include "core/graph/ops/infer_helpers.h"
#include "core/graph/ops/register_ops.h"

namespace stax {

void register_extern_ops(OpRegistry& r) {
  using P = Promotion;
  r.add("matmul(Tensor self, Tensor other) -> Tensor", OpCategory::Extern, P::Default,
        [](const CallArgs& c) {
          const TensorMeta& a = c.tensor("self");
          const TensorMeta& b = c.tensor("other");
          if (a.dtype != b.dtype)
            c.fail("expected both operands to have the same dtype, got " +
                   std::string(dtype_name(a.dtype)) + " and " + std::string(dtype_name(b.dtype)));
          if (a.dim() == 0 || b.dim() == 0) c.fail("both arguments to matmul need to be at least 1D");
          Shape as = a.sizes, bs = b.sizes;
          bool a1 = as.size() == 1, b1 = bs.size() == 1;
          if (a1) as.insert(as.begin(), 1);
          if (b1) bs.push_back(1);
          int64_t k1 = as.back(), k2 = bs[bs.size() - 2];
          if (k1 != k2)
            c.fail("mat1 and mat2 shapes cannot be multiplied (" + shape_str(a.sizes) + " and " +
                   shape_str(b.sizes) + ")");
          Shape batch_a(as.begin(), as.end() - 2), batch_b(bs.begin(), bs.end() - 2);
          Shape out = broadcast_shapes(batch_a, batch_b, c.where());
          if (!a1) out.push_back(as[as.size() - 2]);
          if (!b1) out.push_back(bs.back());
          return TensorMeta::contiguous(out, a.dtype, a.device);
        });
}

}  // namespace stax
