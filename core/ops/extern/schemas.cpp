// Matrix products: lowered to extern kernels (templates or BLAS), never fused.
// Operands must share one dtype (torch does not promote here either).
#include "core/ops/common/infer_helpers.h"
#include "core/ops/registration.h"

namespace stax {

namespace {

void same_dtype(const CallArgs& c, const TensorMeta& a, const TensorMeta& b, const char* an,
                const char* bn) {
  if (a.dtype != b.dtype)
    c.fail(std::string("expected ") + an + " and " + bn + " to have the same dtype, got " +
           std::string(dtype_name(a.dtype)) + " and " + std::string(dtype_name(b.dtype)));
}

void need_rank(const CallArgs& c, const TensorMeta& m, int64_t rank, const char* name) {
  if (m.dim() != rank)
    c.fail(std::string(name) + " must be a " + std::to_string(rank) + "-D tensor, got shape " +
           shape_str(m.sizes));
}

TensorMeta mm_rule(const CallArgs& c) {
  const TensorMeta& a = c.tensor("self");
  const TensorMeta& b = c.tensor("mat2");
  need_rank(c, a, 2, "self");
  need_rank(c, b, 2, "mat2");
  same_dtype(c, a, b, "self", "mat2");
  if (a.sizes[1] != b.sizes[0])
    c.fail("mat1 and mat2 shapes cannot be multiplied (" + shape_str(a.sizes) + " and " +
           shape_str(b.sizes) + ")");
  return TensorMeta::contiguous({a.sizes[0], b.sizes[1]}, a.dtype, a.device);
}

TensorMeta bmm_rule(const CallArgs& c) {
  const TensorMeta& a = c.tensor("self");
  const TensorMeta& b = c.tensor("mat2");
  need_rank(c, a, 3, "self");
  need_rank(c, b, 3, "mat2");
  same_dtype(c, a, b, "self", "mat2");
  if (a.sizes[0] != b.sizes[0] || a.sizes[2] != b.sizes[1])
    c.fail("batch1 and batch2 shapes cannot be multiplied (" + shape_str(a.sizes) + " and " +
           shape_str(b.sizes) + ")");
  return TensorMeta::contiguous({a.sizes[0], a.sizes[1], b.sizes[2]}, a.dtype, a.device);
}

TensorMeta addmm_rule(const CallArgs& c) {
  const TensorMeta& self = c.tensor("self");
  const TensorMeta& a = c.tensor("mat1");
  const TensorMeta& b = c.tensor("mat2");
  need_rank(c, a, 2, "mat1");
  need_rank(c, b, 2, "mat2");
  same_dtype(c, a, b, "mat1", "mat2");
  same_dtype(c, self, a, "self", "mat1");
  if (a.sizes[1] != b.sizes[0])
    c.fail("mat1 and mat2 shapes cannot be multiplied (" + shape_str(a.sizes) + " and " +
           shape_str(b.sizes) + ")");
  Shape out{a.sizes[0], b.sizes[1]};
  if (self.dim() > 2 || broadcast_shapes(self.sizes, out, c.where()) != out)
    c.fail("self of shape " + shape_str(self.sizes) + " cannot be broadcast to the product's " +
           "shape " + shape_str(out));
  return TensorMeta::contiguous(out, a.dtype, a.device);
}

TensorMeta matmul_rule(const CallArgs& c) {
  const TensorMeta& a = c.tensor("self");
  const TensorMeta& b = c.tensor("other");
  same_dtype(c, a, b, "self", "other");
  if (a.dim() == 0 || b.dim() == 0)
    c.fail("both arguments to matmul need to be at least 1D, got " + shape_str(a.sizes) + " and " +
           shape_str(b.sizes));
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
}

}  // namespace

void register_extern_ops(OpRegistry& r) {
  using P = Promotion;
  const auto E = OpCategory::Extern;
  // matmul: 1-D x 1-D is a dot product (0-d result); a 1-D operand gains a dim of 1 that is
  // removed again; batch dims broadcast.
  r.add("matmul(Tensor self, Tensor other) -> Tensor", E, P::Default, matmul_rule);
  r.add("mm(Tensor self, Tensor mat2) -> Tensor", E, P::Default, mm_rule);
  r.add("bmm(Tensor self, Tensor mat2) -> Tensor", E, P::Default, bmm_rule);
  // beta * self + alpha * (mat1 @ mat2); self broadcasts; beta == 0 ignores self (NaNs included).
  r.add("addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
        E, P::Default, addmm_rule);
}

}  // namespace stax
