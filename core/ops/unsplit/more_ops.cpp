// More aten ops (issue 14), with aten's exact schemas (checked by the `aten_schemas` test against
// the installed torch) and torch's dtype rules and errors:
//
// * libm functions and special functions (asin ... atanh, sinh, cosh, erfc, erfinv, lgamma,
//   digamma, polygamma, i0, atan2, hypot, copysign, nextafter, signbit, the special_* Bessel
//   functions and orthogonal polynomials) are base Pointwise ops: an interpreter kernel
//   (core/interpreter/kernels/more_kernels.cpp) evaluates the C++ library function in the
//   computation type, explicit VJP / JVP rules (core/autodiff/rules_more.cpp) give torch's
//   derivative formulas, and cpu_cpp runs them as counted fallbacks.
// * Formulas over existing ops (rsub, deg2rad, frac, logaddexp, xlogy, logit, sinc, fmax,
//   heaviside, the shrink / threshold / celu / glu / prelu activations, huber / soft margin /
//   binary cross-entropy losses, dot / mv / addmv / addr / addbmm, trace, diagonal / diag /
//   diag_embed, take, index_fill, rot90, pixel_shuffle, narrow_copy, new_full / new_zeros /
//   new_ones, nansum, count_nonzero, logcumsumexp, round.decimals, dist, mvlgamma) are Composite:
//   core/graph/decompositions_more.cpp gives the formula (torch's CPU element formula); the
//   interpreter and the compiled path run it, and autodiff differentiates it.
#include <algorithm>
#include <cmath>

#include "core/ops/nn/params.h"
#include "core/ops/common/infer_helpers.h"
#include "core/ops/registration.h"

namespace stax {
namespace {

using P = Promotion;
using C = OpCategory;

std::string dt(DType t) { return std::string(dtype_name(t)); }

using infer::floating;
using infer::numeric;

TensorMeta same_as_self(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  return TensorMeta::contiguous(in.sizes, in.dtype, in.device);
}

int64_t wrap(const CallArgs& c, int64_t d, int64_t rank) {
  return wrap_dim(d, std::max<int64_t>(rank, 1), c.where());
}

// Losses: the broadcast shape (reduction none) or a 0-d tensor.
TensorMeta loss_rule(const CallArgs& c) {
  const TensorMeta& x = c.tensor("self");
  const TensorMeta& t = c.tensor("target");
  Shape b = broadcast_shapes(x.sizes, t.sizes, c.where());
  DType d = result_type(c, {"self", "target"}, P::Default);
  if (!is_floating(d)) c.fail("expected floating-point self and target, got " + dt(d));
  int64_t red = c.get("reduction").to_int();
  if (red < 0 || red > 2) c.fail("reduction must be 0 (none), 1 (mean) or 2 (sum), got " +
                                 std::to_string(red));
  return TensorMeta::contiguous(red == nn::kReductionNone ? b : Shape{}, d, x.device);
}

TensorMeta bce_rule(const CallArgs& c) {
  const TensorMeta& x = c.tensor("self");
  const TensorMeta& t = c.tensor("target");
  if (!is_floating(x.dtype)) c.fail("binary_cross_entropy: expected a floating-point input");
  if (t.sizes != x.sizes)
    c.fail("Using a target size (" + shape_str(t.sizes) + ") that is different to the input size (" +
           shape_str(x.sizes) + ") is deprecated. Please ensure they have the same size.");
  if (c.has("weight") && broadcast_shapes(c.tensor("weight").sizes, x.sizes, c.where()) != x.sizes)
    c.fail("weight " + shape_str(c.tensor("weight").sizes) + " must broadcast to " +
           shape_str(x.sizes));
  return loss_rule(c);
}

// Reductions over `dim` (int[1]? / int[] / int?; absent or empty: every dim).
TensorMeta reduction(const CallArgs& c, DType t) {
  const TensorMeta& in = c.tensor("self");
  std::vector<int64_t> dims;
  if (c.has("dim")) dims = c.get("dim").is_int() ? std::vector<int64_t>{c.get("dim").to_int()}
                                                  : c.get("dim").to_int_list();
  bool keepdim = c.op().schema.index_of("keepdim") >= 0 && c.get("keepdim").to_bool();
  return TensorMeta::contiguous(infer::reduce_shape(in.sizes, dims, keepdim, c), t, in.device);
}

TensorMeta nansum_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  DType t = is_floating(in.dtype) ? in.dtype : DType::Int64;  // integers and bool: int64 (sum)
  if (c.get("dtype").is_dtype()) t = c.get("dtype").dtype();
  return reduction(c, t);
}

// The matrix-vector family: shapes and the equal-dtype rule of BLAS ops.
void same_dtype(const CallArgs& c, std::initializer_list<const char*> ps) {
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
  same_dtype(c, {"self", other.c_str()});
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
  same_dtype(c, {"self", "vec"});
  return TensorMeta::contiguous(s, c.tensor("self").dtype, c.tensor("self").device);
}

TensorMeta addmv_rule(const CallArgs& c) {
  Shape s = mv_shape(c, "mat", "vec");
  same_dtype(c, {"self", "mat", "vec"});
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
  return TensorMeta::contiguous(s, result_type(c, {"self", "vec1", "vec2"}, P::Default), a.device);
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
  same_dtype(c, {"self", "batch1", "batch2"});
  Shape s{a.sizes[1], b.sizes[2]};
  if (broadcast_shapes(c.tensor("self").sizes, s, c.where()) != s)
    c.fail("self of shape " + shape_str(c.tensor("self").sizes) + " does not broadcast to " +
           shape_str(s));
  return TensorMeta::contiguous(s, a.dtype, a.device);
}

// diagonal(self, offset, dim1, dim2): the other dims, then the diagonal's length.
TensorMeta diagonal_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  if (in.dim() < 2) c.fail("diagonal expects a tensor of at least 2 dimensions, got " +
                           std::to_string(in.dim()));
  int64_t d1 = wrap(c, c.get("dim1").to_int(), in.dim());
  int64_t d2 = wrap(c, c.get("dim2").to_int(), in.dim());
  if (d1 == d2) c.fail("diagonal dimensions cannot be identical " + std::to_string(d1) + ", " +
                       std::to_string(d2));
  int64_t off = c.get("offset").to_int();
  int64_t n = in.sizes[d1], m = in.sizes[d2];
  int64_t len = off >= 0 ? std::min(n, m - off) : std::min(n + off, m);
  Shape s;
  for (int64_t d = 0; d < in.dim(); ++d)
    if (d != d1 && d != d2) s.push_back(in.sizes[d]);
  s.push_back(std::max<int64_t>(len, 0));
  return TensorMeta::contiguous(s, in.dtype, in.device);
}

TensorMeta diag_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  int64_t k = c.get("diagonal").to_int();
  if (in.dim() == 1) {
    int64_t n = in.sizes[0] + std::abs(k);
    return TensorMeta::contiguous({n, n}, in.dtype, in.device);
  }
  if (in.dim() != 2) c.fail("diag(): Supports 1D or 2D tensors. Got " + std::to_string(in.dim()) +
                            "D");
  int64_t n = in.sizes[0], m = in.sizes[1];
  int64_t len = k >= 0 ? std::min(n, m - k) : std::min(n + k, m);
  return TensorMeta::contiguous({std::max<int64_t>(len, 0)}, in.dtype, in.device);
}

TensorMeta diag_embed_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  int64_t rank = in.dim() + 1;
  int64_t d1 = wrap_dim(c.get("dim1").to_int(), rank, c.where());
  int64_t d2 = wrap_dim(c.get("dim2").to_int(), rank, c.where());
  if (d1 == d2) c.fail("diagonal dimensions cannot be identical " + std::to_string(d1) + ", " +
                       std::to_string(d2));
  if (in.dim() < 1) c.fail("diag_embed expects a tensor of at least 1 dimension");
  int64_t n = in.sizes.back() + std::abs(c.get("offset").to_int());
  Shape s(in.sizes.begin(), in.sizes.end() - 1);
  int64_t lo = std::min(d1, d2), hi = std::max(d1, d2);
  s.insert(s.begin() + lo, n);
  s.insert(s.begin() + hi, n);
  return TensorMeta::contiguous(s, in.dtype, in.device);
}

TensorMeta trace_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  if (in.dim() != 2) c.fail("trace: expected a matrix, but got tensor with dim " +
                            std::to_string(in.dim()));
  DType t = is_floating(in.dtype) ? in.dtype : DType::Int64;
  return TensorMeta::contiguous({}, t, in.device);
}

TensorMeta take_rule(const CallArgs& c) {
  const TensorMeta& idx = c.tensor("index");
  if (idx.dtype != DType::Int64) c.fail("take(): Expected a long tensor for index, but got " +
                                        dt(idx.dtype));
  const TensorMeta& in = c.tensor("self");
  if (shape_numel(in.sizes) == 0 && shape_numel(idx.sizes) != 0)
    c.fail("take(): tried to take from an empty tensor");
  return TensorMeta::contiguous(idx.sizes, in.dtype, in.device);
}

TensorMeta index_fill_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  const TensorMeta& idx = c.tensor("index");
  wrap(c, c.get("dim").to_int(), in.dim());
  if (idx.dtype != DType::Int64) c.fail("index_fill_(): Expected dtype int64 for index.");
  if (idx.dim() > 1) c.fail("index_fill_(): Index is supposed to be a vector");
  if (c.get("value").is_node() && c.tensor("value").dim() != 0)
    c.fail("index_fill_ only supports a 0-dimensional value tensor, but got tensor with " +
           std::to_string(c.tensor("value").dim()) + " dimension(s).");
  return same_as_self(c);
}

TensorMeta rot90_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  auto dims = c.get("dims").to_int_list();
  if (dims.size() != 2) c.fail("expected total rotation dims == 2, but got dims = " +
                               std::to_string(dims.size()));
  if (in.dim() < 2) c.fail("expected total dims >= 2, but got total dims = " +
                           std::to_string(in.dim()));
  int64_t a = wrap(c, dims[0], in.dim()), b = wrap(c, dims[1], in.dim());
  if (a == b) c.fail("expected rotation dims to be different, but got dim0 = " +
                     std::to_string(a) + " and dim1 = " + std::to_string(b));
  int64_t k = ((c.get("k").to_int() % 4) + 4) % 4;
  Shape s = in.sizes;
  if (k % 2 == 1) std::swap(s[a], s[b]);
  return TensorMeta::contiguous(s, in.dtype, in.device);
}

TensorMeta pixel_shuffle_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  bool up = c.op().schema.index_of("upscale_factor") >= 0;
  int64_t r = c.get(up ? "upscale_factor" : "downscale_factor").to_int();
  if (in.dim() < 3) c.fail("pixel_shuffle expects input to have at least 3 dimensions, but got "
                           "input with " + std::to_string(in.dim()) + " dimension(s)");
  if (r <= 0) c.fail("pixel_shuffle expects a positive factor, but got " + std::to_string(r));
  Shape s = in.sizes;
  int64_t n = s.size();
  if (up) {
    if (s[n - 3] % (r * r) != 0)
      c.fail("pixel_shuffle expects its input's 'channel' dimension to be divisible by the "
             "square of upscale_factor, but input.size(-3)=" + std::to_string(s[n - 3]) +
             " is not divisible by " + std::to_string(r * r));
    s[n - 3] /= r * r;
    s[n - 2] *= r;
    s[n - 1] *= r;
  } else {
    if (s[n - 2] % r != 0 || s[n - 1] % r != 0)
      c.fail("pixel_unshuffle expects height and width to be divisible by downscale_factor, "
             "got " + shape_str(s));
    s[n - 3] *= r * r;
    s[n - 2] /= r;
    s[n - 1] /= r;
  }
  return TensorMeta::contiguous(s, in.dtype, in.device);
}

TensorMeta narrow_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  if (in.dim() == 0) c.fail("narrow() cannot be applied to a 0-dim tensor.");
  int64_t d = wrap(c, c.get("dim").to_int(), in.dim());
  int64_t n = in.sizes[d], start = c.get("start").to_int(), len = c.get("length").to_int();
  if (start < -n || start > n)
    c.fail("start out of range (expected to be in range of [" + std::to_string(-n) + ", " +
           std::to_string(n) + "], but got " + std::to_string(start) + ")");
  if (start < 0) start += n;
  if (len < 0 || start > n - len)
    c.fail("start (" + std::to_string(start) + ") + length (" + std::to_string(len) +
           ") exceeds dimension size (" + std::to_string(n) + ").");
  Shape s = in.sizes;
  s[d] = len;
  return TensorMeta::contiguous(s, in.dtype, in.device);
}

TensorMeta new_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  Shape s = c.get("size").to_int_list();
  for (int64_t v : s)
    if (v < 0) c.fail("Trying to create tensor with negative dimension " + std::to_string(v));
  DType t = c.get("dtype").is_dtype() ? c.get("dtype").dtype() : in.dtype;
  return TensorMeta::contiguous(s, t, in.device);
}

TensorMeta glu_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  if (in.dim() == 0) c.fail("glu does not support scalars because halving size must be even");
  if (!is_floating(in.dtype)) c.fail("glu: expected a floating-point input, got " + dt(in.dtype));
  int64_t d = wrap(c, c.get("dim").to_int(), in.dim());
  if (in.sizes[d] % 2 != 0)
    c.fail("Halving dimension must be even, but dimension " + std::to_string(d) + " is size " +
           std::to_string(in.sizes[d]));
  Shape s = in.sizes;
  s[d] /= 2;
  return TensorMeta::contiguous(s, in.dtype, in.device);
}

TensorMeta prelu_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  const TensorMeta& w = c.tensor("weight");
  if (!is_floating(in.dtype)) c.fail("prelu: expected a floating-point input, got " + dt(in.dtype));
  int64_t nw = shape_numel(w.sizes);
  if (w.dim() > 1) c.fail("prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = " +
                          std::to_string(w.dim()));
  if (nw != 1) {
    if (in.dim() == 0) c.fail("Not allow zero-dim input tensor.");
    int64_t channels = in.dim() >= 2 ? in.sizes[1] : 1;
    if (nw != channels)
      c.fail("Mismatch of parameter numbers and input channel size. Found parameter numbers = " +
             std::to_string(nw) + " and channel size = " + std::to_string(channels) + ".");
  }
  if (w.dtype != in.dtype) c.fail("prelu: weight (" + dt(w.dtype) + ") must have self's dtype (" +
                                  dt(in.dtype) + ")");
  return same_as_self(c);
}

TensorMeta logcumsumexp_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  wrap(c, c.get("dim").to_int(), in.dim());
  if (!is_floating(in.dtype)) c.fail("logcumsumexp: expected a floating-point input, got " +
                                     dt(in.dtype));
  return same_as_self(c);
}

TensorMeta round_decimals_rule(const CallArgs& c) {
  if (c.tensor("self").dtype == DType::Bool) c.fail("round is not implemented for 'bool' tensors");
  if (!is_floating(c.tensor("self").dtype) && c.get("decimals").to_int() != 0)
    c.fail("round_cpu not implemented for '" + dt(c.tensor("self").dtype) +
           "' with decimals != 0");
  return same_as_self(c);
}

TensorMeta dist_rule(const CallArgs& c) {
  TensorMeta m = infer::elementwise(c, {"self", "other"}, P::Default);
  if (!is_floating(m.dtype)) c.fail("dist: expected floating-point inputs, got " + dt(m.dtype));
  if (c.tensor("self").dtype != c.tensor("other").dtype)
    c.fail("expected both inputs to have the same dtype, but got " +
           dt(c.tensor("self").dtype) + " and " + dt(c.tensor("other").dtype));
  return TensorMeta::contiguous({}, m.dtype, m.device);
}

TensorMeta heaviside_rule(const CallArgs& c) {
  if (c.tensor("self").dtype != c.tensor("values").dtype)
    c.fail("heaviside is not yet implemented for tensors with different dtypes");
  return numeric({"self", "values"})(c);
}

TensorMeta mvlgamma_rule(const CallArgs& c) {
  if (c.get("p").to_int() < 1) c.fail("p has to be greater than or equal to 1");
  return floating({"self"}, P::IntToFloat)(c);
}

TensorMeta polygamma_rule(const CallArgs& c) {
  if (c.get("n").to_int() < 0) c.fail("polygamma(n, x) does not support negative n.");
  return floating({"self"}, P::IntToFloat)(c);
}

}  // namespace

void register_more_ops_2(OpRegistry& r);

void register_more_ops(OpRegistry& r) {
  // ---- base unary math (interpreter kernels; float results, integers promote). The special
  // functions torch gives no derivative (Bessel, Airy) are not differentiable here either.
  auto unary = [&](const char* n, const char* param, bool differentiable) {
    r.add(std::string(n) + "(Tensor " + param + ") -> Tensor", C::Pointwise, P::IntToFloat,
          floating({param}, P::IntToFloat))
        .differentiable = differentiable;
  };
  for (const char* n : {"asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erfc",
                        "erfinv", "lgamma", "digamma", "i0", "special_i0e", "special_i1",
                        "special_i1e", "special_ndtri", "special_log_ndtr", "special_erfcx"})
    unary(n, "self", true);
  for (const char* n : {"special_bessel_j0", "special_bessel_j1", "special_bessel_y0",
                        "special_bessel_y1", "special_modified_bessel_i0",
                        "special_modified_bessel_i1", "special_modified_bessel_k0",
                        "special_modified_bessel_k1"})
    unary(n, "self", false);
  for (const char* n : {"special_airy_ai", "special_scaled_modified_bessel_k0",
                        "special_scaled_modified_bessel_k1", "special_spherical_bessel_j0"})
    unary(n, "x", false);
  r.add("polygamma(int n, Tensor self) -> Tensor", C::Pointwise, P::IntToFloat, polygamma_rule);
  r.add("signbit(Tensor self) -> Tensor", C::Pointwise, P::AlwaysBool,
        infer::elementwise_rule({"self"}))
      .differentiable = false;
  // ---- base binary math
  r.add("atan2(Tensor self, Tensor other) -> Tensor", C::Pointwise, P::IntToFloat,
        floating({"self", "other"}, P::IntToFloat));
  r.add("hypot(Tensor self, Tensor other) -> Tensor", C::Pointwise, P::Default,
        floating({"self", "other"}));
  r.add("copysign.Tensor(Tensor self, Tensor other) -> Tensor", C::Pointwise, P::IntToFloat,
        floating({"self", "other"}, P::IntToFloat));
  r.add("copysign.Scalar(Tensor self, Scalar other) -> Tensor", C::Pointwise, P::IntToFloat,
        floating({"self", "other"}, P::IntToFloat));
  r.add("nextafter(Tensor self, Tensor other) -> Tensor", C::Pointwise, P::Default,
        floating({"self", "other"}))
      .differentiable = false;
  r.add("special_zeta(Tensor self, Tensor other) -> Tensor", C::Pointwise, P::IntToFloat,
        floating({"self", "other"}, P::IntToFloat))
      .differentiable = false;
  r.add("igamma(Tensor self, Tensor other) -> Tensor", C::Pointwise, P::Default,
        floating({"self", "other"}))
      .differentiable = false;
  r.add("igammac(Tensor self, Tensor other) -> Tensor", C::Pointwise, P::Default,
        floating({"self", "other"}))
      .differentiable = false;
  for (const char* n : {"special_chebyshev_polynomial_t", "special_chebyshev_polynomial_u",
                        "special_chebyshev_polynomial_v", "special_chebyshev_polynomial_w",
                        "special_shifted_chebyshev_polynomial_t",
                        "special_shifted_chebyshev_polynomial_u",
                        "special_shifted_chebyshev_polynomial_v",
                        "special_shifted_chebyshev_polynomial_w", "special_hermite_polynomial_h",
                        "special_hermite_polynomial_he", "special_laguerre_polynomial_l",
                        "special_legendre_polynomial_p"})
    r.add(std::string(n) + "(Tensor x, Tensor n) -> Tensor", C::Pointwise, P::IntToFloat,
          floating({"x", "n"}, P::IntToFloat))
        .differentiable = false;

  // ---- pointwise formulas (Composite)
  auto comp = [&](const std::string& schema, Promotion p, InferFn f) -> OpDef& {
    return r.add(schema, C::Composite, p, std::move(f));
  };
  auto rsub_rule = [](const CallArgs& c) {
    TensorMeta m = infer::elementwise(c, {"self", "other"}, P::Default);
    if (c.get("alpha").is_double() && !is_floating(m.dtype))
      c.fail("for integral input tensors, argument alpha must not be a floating point number");
    if (m.dtype == DType::Bool)
      c.fail("subtraction, the `-` operator, with bool tensors is not supported; use "
             "logical_xor or logical_not");
    return m;
  };
  comp("rsub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", P::Default,
       rsub_rule);
  comp("rsub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor", P::Default, rsub_rule);
  for (const char* n : {"deg2rad", "rad2deg"})
    comp(std::string(n) + "(Tensor self) -> Tensor", P::IntToFloat, floating({"self"}, P::IntToFloat));
  comp("frac(Tensor self) -> Tensor", P::Default, floating({"self"}));
  comp("sgn(Tensor self) -> Tensor", P::Default, numeric({"self"}));
  comp("sinc(Tensor self) -> Tensor", P::IntToFloat, floating({"self"}, P::IntToFloat));
  comp("logit(Tensor self, float? eps=None) -> Tensor", P::IntToFloat,
       floating({"self"}, P::IntToFloat));
  comp("special_entr(Tensor self) -> Tensor", P::IntToFloat, floating({"self"}, P::IntToFloat));
  comp("heaviside(Tensor self, Tensor values) -> Tensor", P::Default, heaviside_rule)
      .differentiable = false;
  comp("logaddexp(Tensor self, Tensor other) -> Tensor", P::Default, floating({"self", "other"}));
  comp("logaddexp2(Tensor self, Tensor other) -> Tensor", P::Default, floating({"self", "other"}));
  comp("xlogy.Tensor(Tensor self, Tensor other) -> Tensor", P::IntToFloat,
       floating({"self", "other"}, P::IntToFloat));
  comp("special_xlog1py(Tensor self, Tensor other) -> Tensor", P::IntToFloat,
       floating({"self", "other"}, P::IntToFloat));
  for (const char* n : {"fmax", "fmin"})
    comp(std::string(n) + "(Tensor self, Tensor other) -> Tensor", P::Default,
         numeric({"self", "other"}));
  comp("round.decimals(Tensor self, *, int decimals) -> Tensor", P::None, round_decimals_rule);
  comp("mvlgamma(Tensor self, int p) -> Tensor", P::IntToFloat, mvlgamma_rule);

  // ---- activations and losses
  comp("celu(Tensor self, Scalar alpha=1.) -> Tensor", P::Default, floating({"self"}));
  comp("hardshrink(Tensor self, Scalar lambd=0.5) -> Tensor", P::Default, floating({"self"}));
  comp("softshrink(Tensor self, Scalar lambd=0.5) -> Tensor", P::Default, [](const CallArgs& c) {
    if (c.get("lambd").to_double() < 0)
      c.fail("lambda must be greater or equal to 0, but found to be " +
             std::to_string(c.get("lambd").to_double()) + ".");
    return floating({"self"})(c);
  });
  comp("threshold(Tensor self, Scalar threshold, Scalar value) -> Tensor", P::None, [](const CallArgs& c) {
    if (c.tensor("self").dtype == DType::Bool) c.fail("threshold is not implemented for 'bool'");
    return same_as_self(c);
  });
  comp("glu(Tensor self, int dim=-1) -> Tensor", P::None, glu_rule);
  comp("prelu(Tensor self, Tensor weight) -> Tensor", P::None, prelu_rule);
  comp("huber_loss(Tensor self, Tensor target, int reduction=1, float delta=1.) -> Tensor",
       P::None, [](const CallArgs& c) {
         if (c.get("delta").to_double() <= 0)
           c.fail("huber_loss does not support non-positive values for delta.");
         return loss_rule(c);
       });
  comp("soft_margin_loss(Tensor self, Tensor target, int reduction=1) -> Tensor", P::None,
       loss_rule);
  comp("binary_cross_entropy(Tensor self, Tensor target, Tensor? weight=None, int reduction=1) "
       "-> Tensor",
       P::None, bce_rule);

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
  comp("dist(Tensor self, Tensor other, Scalar p=2) -> Tensor", P::None, dist_rule);

  // ---- reductions and scans
  comp("nansum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> "
       "Tensor",
       P::None, nansum_rule);
  comp("count_nonzero.dim_IntList(Tensor self, int[] dim) -> Tensor", P::None,
       [](const CallArgs& c) { return reduction(c, DType::Int64); })
      .differentiable = false;
  comp("count_nonzero(Tensor self, int? dim=None) -> Tensor", P::None,
       [](const CallArgs& c) { return reduction(c, DType::Int64); })
      .differentiable = false;
  comp("logcumsumexp(Tensor self, int dim) -> Tensor", P::None, logcumsumexp_rule);
  comp("trace(Tensor self) -> Tensor", P::None, trace_rule);

  // ---- shape and indexing ops
  comp("diagonal(Tensor self, int offset=0, int dim1=0, int dim2=1) -> Tensor", P::None,
       diagonal_rule);
  comp("diag(Tensor self, int diagonal=0) -> Tensor", P::None, diag_rule);
  comp("diag_embed(Tensor self, int offset=0, int dim1=-2, int dim2=-1) -> Tensor", P::None,
       diag_embed_rule);
  comp("take(Tensor self, Tensor index) -> Tensor", P::None, take_rule);
  comp("index_fill.int_Scalar(Tensor self, int dim, Tensor index, Scalar value) -> Tensor",
       P::None, index_fill_rule);
  comp("index_fill.int_Tensor(Tensor self, int dim, Tensor index, Tensor value) -> Tensor",
       P::None, index_fill_rule);
  comp("rot90(Tensor self, int k=1, int[] dims=[0, 1]) -> Tensor", P::None, rot90_rule);
  comp("pixel_shuffle(Tensor self, int upscale_factor) -> Tensor", P::None, pixel_shuffle_rule);
  comp("pixel_unshuffle(Tensor self, int downscale_factor) -> Tensor", P::None,
       pixel_shuffle_rule);
  comp("narrow_copy(Tensor self, int dim, SymInt start, SymInt length) -> Tensor", P::None,
       narrow_rule);
  const std::string nk =
      "*, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None";
  comp("new_full(Tensor self, SymInt[] size, Scalar fill_value, " + nk + ") -> Tensor", P::None,
       new_rule)
      .differentiable = false;
  comp("new_zeros(Tensor self, SymInt[] size, " + nk + ") -> Tensor", P::None, new_rule)
      .differentiable = false;
  comp("new_ones(Tensor self, SymInt[] size, " + nk + ") -> Tensor", P::None, new_rule)
      .differentiable = false;
  register_more_ops_2(r);
}

}  // namespace stax
