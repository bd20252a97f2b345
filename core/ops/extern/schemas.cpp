// Matrix products: lowered to extern kernels (templates or BLAS), never fused.
// Operands must share one dtype (torch does not promote here either).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/ops/common/infer_helpers.h"
#include "core/ops/nn/params.h"
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

using P = Promotion;
using C = OpCategory;

std::string dt(DType t) { return std::string(dtype_name(t)); }

TensorMeta baddbmm_rule(const CallArgs& c) {
  const TensorMeta& self = c.tensor("self");
  const TensorMeta& a = c.tensor("batch1");
  const TensorMeta& b = c.tensor("batch2");
  if (a.dim() != 3 || b.dim() != 3)
    c.fail("batch1 and batch2 must be 3-D tensors, got " + shape_str(a.sizes) + " and " +
           shape_str(b.sizes));
  if (a.sizes[0] != b.sizes[0] || a.sizes[2] != b.sizes[1])
    c.fail("batch1 " + shape_str(a.sizes) + " and batch2 " + shape_str(b.sizes) +
           " cannot be multiplied");
  if (a.dtype != b.dtype || self.dtype != a.dtype)
    c.fail("self (" + dt(self.dtype) + "), batch1 (" + dt(a.dtype) + ") and batch2 (" +
           dt(b.dtype) + ") must have the same dtype");
  Shape out{a.sizes[0], a.sizes[1], b.sizes[2]};
  if (broadcast_shapes(self.sizes, out, c.where()) != out)
    c.fail("self of shape " + shape_str(self.sizes) + " does not broadcast to " + shape_str(out));
  return TensorMeta::contiguous(out, a.dtype, a.device);
}

// The matrix-vector family: shapes and the equal-dtype rule of BLAS ops.
void same_dtypes(const CallArgs& c, std::initializer_list<const char*> ps) {
  DType first = c.tensor(*ps.begin()).dtype;
  for (const char* p : ps)
    if (c.tensor(p).dtype != first)
      c.fail("expected " + std::string(*ps.begin()) + " and " + p +
             " to have the same dtype, but got: " + dt(first) + " != " + dt(c.tensor(p).dtype));
}

TensorMeta dot_rule(const CallArgs& c) {
  const std::string other = c.op().schema.index_of("tensor") >= 0 ? "tensor" : "other";
  const TensorMeta& a = c.tensor("self");
  const TensorMeta& b = c.tensor(other);
  if (a.dim() != 1 || b.dim() != 1)
    c.fail("1D tensors expected, but got " + std::to_string(a.dim()) + "D and " +
           std::to_string(b.dim()) + "D tensors");
  if (a.sizes[0] != b.sizes[0])
    c.fail("inconsistent tensor size, expected tensor [" + std::to_string(a.sizes[0]) +
           "] and src [" + std::to_string(b.sizes[0]) +
           "] to have the same number of elements, but got " + std::to_string(a.sizes[0]) +
           " and " + std::to_string(b.sizes[0]) + " elements respectively");
  same_dtypes(c, {"self", other.c_str()});
  return TensorMeta::contiguous({}, a.dtype, a.device);
}

Shape mv_shape(const CallArgs& c, const char* mat, const char* vec) {
  const TensorMeta& m = c.tensor(mat);
  const TensorMeta& v = c.tensor(vec);
  if (m.dim() != 2 || v.dim() != 1)
    c.fail("vector + matrix @ vector expected, got " + std::to_string(m.dim()) + ", " +
           std::to_string(v.dim()));
  if (m.sizes[1] != v.sizes[0])
    c.fail("size mismatch, got input (" + std::to_string(m.sizes[0]) + "), mat (" +
           std::to_string(m.sizes[0]) + "x" + std::to_string(m.sizes[1]) + "), vec (" +
           std::to_string(v.sizes[0]) + ")");
  return {m.sizes[0]};
}

TensorMeta mv_rule(const CallArgs& c) {
  Shape s = mv_shape(c, "self", "vec");
  same_dtypes(c, {"self", "vec"});
  return TensorMeta::contiguous(s, c.tensor("self").dtype, c.tensor("self").device);
}

TensorMeta addmv_rule(const CallArgs& c) {
  Shape s = mv_shape(c, "mat", "vec");
  same_dtypes(c, {"self", "mat", "vec"});
  if (broadcast_shapes(c.tensor("self").sizes, s, c.where()) != s)
    c.fail("self of shape " + shape_str(c.tensor("self").sizes) + " does not broadcast to " +
           shape_str(s));
  return TensorMeta::contiguous(s, c.tensor("mat").dtype, c.tensor("mat").device);
}

TensorMeta addr_rule(const CallArgs& c) {
  const TensorMeta& a = c.tensor("vec1");
  const TensorMeta& b = c.tensor("vec2");
  if (a.dim() != 1 || b.dim() != 1)
    c.fail("addr: Expected 1-D argument vec1 and vec2, but got " + std::to_string(a.dim()) +
           "-D and " + std::to_string(b.dim()) + "-D");
  Shape s{a.sizes[0], b.sizes[0]};
  if (broadcast_shapes(c.tensor("self").sizes, s, c.where()) != s)
    c.fail("self of shape " + shape_str(c.tensor("self").sizes) + " does not broadcast to " +
           shape_str(s));
  DType t = result_type(c, {"self", "vec1", "vec2"}, P::Default);
  for (const char* p : {"beta", "alpha"}) {
    if (c.get(p).is_double() && !is_floating(t))
      c.fail(std::string(p) + " = " + arg_str(c.get(p)) + " cannot be safely converted to the " +
             std::string(dtype_name(t)) + " result");
    if (c.get(p).is_bool() && t != DType::Bool)
      c.fail("a bool " + std::string(p) + " is only supported for bool results, got " +
             std::string(dtype_name(t)));
  }
  return TensorMeta::contiguous(s, t, a.device);
}

TensorMeta addbmm_rule(const CallArgs& c) {
  const TensorMeta& a = c.tensor("batch1");
  const TensorMeta& b = c.tensor("batch2");
  if (a.dim() != 3 || b.dim() != 3)
    c.fail("batch1 must be a 3D tensor and batch2 must be a 3D tensor, got " +
           shape_str(a.sizes) + " and " + shape_str(b.sizes));
  if (a.sizes[0] != b.sizes[0] || a.sizes[2] != b.sizes[1])
    c.fail("batch1 " + shape_str(a.sizes) + " and batch2 " + shape_str(b.sizes) +
           " cannot be multiplied");
  same_dtypes(c, {"self", "batch1", "batch2"});
  Shape s{a.sizes[1], b.sizes[2]};
  if (broadcast_shapes(c.tensor("self").sizes, s, c.where()) != s)
    c.fail("self of shape " + shape_str(c.tensor("self").sizes) + " does not broadcast to " +
           shape_str(s));
  return TensorMeta::contiguous(s, a.dtype, a.device);
}

TensorMeta cross_rule(const CallArgs& c) {
  const TensorMeta& a = c.tensor("self");
  const TensorMeta& b = c.tensor("other");
  if (a.dim() != b.dim())
    c.fail("linalg.cross: inputs must have the same number of dimensions.");
  if (a.dim() == 0)
    c.fail("linalg.cross: inputs are 0-d; the dimension `dim` must have length 3");
  Shape s = broadcast_shapes(a.sizes, b.sizes, c.where());
  int64_t d = wrap_dim(c.get("dim").to_int(), a.dim(), c.where());
  if (a.sizes[d] != 3 || b.sizes[d] != 3)
    c.fail("linalg.cross: inputs dimension " + std::to_string(d) + " must have length 3. Got " +
           std::to_string(a.sizes[d]) + " and " + std::to_string(b.sizes[d]));
  if (a.dtype != b.dtype)  // torch's kernel reads other as self's dtype
    c.fail("linalg.cross: self (" + std::string(dtype_name(a.dtype)) + ") and other (" +
           std::string(dtype_name(b.dtype)) + ") must have the same dtype");
  return TensorMeta::contiguous(s, a.dtype, a.device);
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
  // ---- fused arithmetic
  r.add("baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> "
        "Tensor",
        C::Composite, P::None, baddbmm_rule);
  {
    // ---- pointwise formulas (Composite)
    auto comp = [&](const std::string& schema, Promotion p, InferFn f) -> OpDef& {
      return r.add(schema, C::Composite, p, std::move(f));
    };

    // ---- linear algebra on vectors
    comp("dot(Tensor self, Tensor tensor) -> Tensor", P::None, dot_rule);

    comp("vdot(Tensor self, Tensor other) -> Tensor", P::None, dot_rule);

    comp("mv(Tensor self, Tensor vec) -> Tensor", P::None, mv_rule);

    comp("addmv(Tensor self, Tensor mat, Tensor vec, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
         P::None, addmv_rule);

    comp("addr(Tensor self, Tensor vec1, Tensor vec2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
         P::None, addr_rule);

    comp("addbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> "
         "Tensor",
         P::None, addbmm_rule);
  }
  {
    auto comp = [&](const std::string& schema, InferFn f) -> OpDef& {
      return r.add(schema, C::Composite, P::None, std::move(f));
    };

    comp("linalg_cross(Tensor self, Tensor other, *, int dim=-1) -> Tensor", cross_rule);
  }
}

}  // namespace stax
