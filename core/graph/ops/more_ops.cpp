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

#include "core/graph/nn_params.h"
#include "core/graph/ops/infer_helpers.h"
#include "core/graph/ops/register_ops.h"

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

// ---- the second group: pooling / upsampling overloads, cross, gcd / lcm, random ops, median,
// creation (eye, linspace, logspace), searches, scatters, unfold, distances.
namespace stax {
namespace {

Shape replace_tail(const CallArgs& c, const Shape& in, const std::vector<int64_t>& tail) {
  if (in.size() < tail.size()) c.fail("expected at least " + std::to_string(tail.size()) +
                                      " dimensions, got " + shape_str(in));
  Shape s = in;
  for (size_t i = 0; i < tail.size(); ++i) {
    if (tail[i] < 0) c.fail("output size must be non-negative, got " + std::to_string(tail[i]));
    s[in.size() - tail.size() + i] = tail[i];
  }
  return s;
}

// upsample_*.vec: output_size, or floor(input size * scale_factor) per spatial dim.
std::vector<int64_t> vec_output_size(const CallArgs& c, const Shape& in, size_t spatial) {
  const Arg& os = c.get("output_size");
  const Arg& sf = c.get("scale_factors");
  if (os.is_absent() == sf.is_absent())
    c.fail("must specify exactly one of output_size and scale_factors");
  if (in.size() != spatial + 2)
    c.fail("expected a " + std::to_string(spatial + 2) + "-D input, got " + shape_str(in));
  if (!os.is_absent()) {
    auto v = os.to_int_list();
    if (v.size() != spatial) c.fail("output_size must have " + std::to_string(spatial) + " entries");
    return v;
  }
  const auto& f = sf.list();
  if (f.size() != spatial) c.fail("scale_factors must have " + std::to_string(spatial) + " entries");
  std::vector<int64_t> v;
  for (size_t i = 0; i < spatial; ++i)
    v.push_back(static_cast<int64_t>(static_cast<double>(in[2 + i]) * f[i].to_double()));
  return v;
}

TensorMeta unpool_rule(const CallArgs& c, size_t spatial) {
  const TensorMeta& x = c.tensor("self");
  const TensorMeta& idx = c.tensor("indices");
  if (idx.dtype != DType::Int64) c.fail("elements in indices should be type int64 but got: " +
                                        dt(idx.dtype));
  if (idx.sizes != x.sizes) c.fail("Expected shape of indices to be same as that of the input "
                                   "tensor (" + shape_str(x.sizes) + ") but got indices tensor "
                                   "with shape: " + shape_str(idx.sizes));
  if (x.dim() != static_cast<int64_t>(spatial) + 1 && x.dim() != static_cast<int64_t>(spatial) + 2)
    c.fail("Input to max_unpooling" + std::to_string(spatial) + "d should be a " +
           std::to_string(spatial + 1) + "d or " + std::to_string(spatial + 2) + "d Tensor, got " +
           shape_str(x.sizes));
  auto os = c.get("output_size").to_int_list();
  if (os.size() != spatial) c.fail("There should be exactly " + std::to_string(spatial) +
                                   " elements (depth, height, width) in output_size");
  return TensorMeta::contiguous(replace_tail(c, x.sizes, os), x.dtype, x.device);
}

TensorMeta cross_rule(const CallArgs& c) {
  const TensorMeta& a = c.tensor("self");
  const TensorMeta& b = c.tensor("other");
  if (a.dim() != b.dim())
    c.fail("linalg.cross: inputs must have the same number of dimensions.");
  Shape s = broadcast_shapes(a.sizes, b.sizes, c.where());
  int64_t d = wrap_dim(c.get("dim").to_int(), std::max<int64_t>(a.dim(), 1), c.where());
  if (a.sizes[d] != 3 || b.sizes[d] != 3)
    c.fail("linalg.cross: inputs dimension " + std::to_string(d) + " must have length 3. Got " +
           std::to_string(a.sizes[d]) + " and " + std::to_string(b.sizes[d]));
  return TensorMeta::contiguous(s, result_type(c, {"self", "other"}, P::Default), a.device);
}

TensorMeta int_binary(const CallArgs& c) {
  TensorMeta m = infer::elementwise(c, {"self", "other"}, P::Default);
  if (is_floating(m.dtype) || m.dtype == DType::Bool)
    c.fail("not implemented for '" + dt(m.dtype) + "' (integer tensors only, as in torch)");
  return m;
}

TensorMeta median_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  if (in.dtype == DType::Bool) c.fail("median is not implemented for 'bool'");
  return TensorMeta::contiguous({}, in.dtype, in.device);
}

DType factory_dtype(const CallArgs& c) {
  return c.get("dtype").is_dtype() ? c.get("dtype").dtype() : DType::Float32;
}

TensorMeta eye_rule(const CallArgs& c) {
  int64_t n = c.get("n").to_int();
  int64_t m = c.op().schema.index_of("m") >= 0 ? c.get("m").to_int() : n;
  if (n < 0) c.fail("n must be greater or equal to 0, got " + std::to_string(n));
  if (m < 0) c.fail("m must be greater or equal to 0, got " + std::to_string(m));
  return TensorMeta::contiguous({n, m}, factory_dtype(c), "cpu");
}

TensorMeta linspace_rule(const CallArgs& c) {
  int64_t steps = c.get("steps").to_int();
  if (steps < 0) c.fail("number of steps must be non-negative");
  DType t = factory_dtype(c);
  if (!is_floating(t)) c.fail("linspace / logspace: only floating-point dtypes are supported here, "
                              "got " + dt(t));
  return TensorMeta::contiguous({steps}, t, "cpu");
}

TensorMeta search_rule(const CallArgs& c, const char* seq_param, const char* val_param) {
  const TensorMeta& seq = c.tensor(seq_param);
  const TensorMeta& v = c.tensor(val_param);
  if (c.op().schema.index_of("sorter") >= 0 && c.has("sorter"))
    c.fail("searchsorted with a sorter is not supported");
  if (c.op().schema.index_of("side") >= 0 && c.has("side")) {
    const std::string& side = c.get("side").str();
    if (side != "left" && side != "right")
      c.fail("side can only be 'left' or 'right' but got '" + side + "'");
    if (side == "left" && c.get("right").to_bool())
      c.fail("side and right can't be set to opposites, got side of left while right was True");
  }
  if (seq.dim() != 1) {
    if (seq.dim() == 0) c.fail("boundaries tensor should be 1 dimension or the first N-1 "
                               "dimensions should match the input, got a 0-d tensor");
    Shape a(seq.sizes.begin(), seq.sizes.end() - 1), b(v.sizes.begin(), v.sizes.end() - (v.dim() ? 1 : 0));
    if (a != b) c.fail("boundaries tensor should be 1 dimension or the first N-1 dimensions of "
                       "boundaries tensor and input value tensor must match, got " +
                       shape_str(seq.sizes) + " and " + shape_str(v.sizes));
  }
  if (seq.dtype == DType::Bool || v.dtype == DType::Bool)
    c.fail("searchsorted / bucketize are not implemented for 'bool'");
  DType t = c.get("out_int32").to_bool() ? DType::Int32 : DType::Int64;
  return TensorMeta::contiguous(v.sizes, t, v.device);
}

TensorMeta index_copy_rule(const CallArgs& c) {
  const TensorMeta& self = c.tensor("self");
  const TensorMeta& idx = c.tensor("index");
  const TensorMeta& src = c.tensor("source");
  int64_t d = wrap_dim(c.get("dim").to_int(), std::max<int64_t>(self.dim(), 1), c.where());
  if (idx.dtype != DType::Int64) c.fail("index_copy_(): Expected a long tensor for index, but got " +
                                        dt(idx.dtype));
  if (idx.dim() > 1) c.fail("index_copy_(): Index should have dimension 1 or 0 (got " +
                            std::to_string(idx.dim()) + ")");
  if (src.dtype != self.dtype) c.fail("index_copy_(): self and source expected to have the same "
                                      "dtype, but got (self) " + dt(self.dtype) + " and (source) " +
                                      dt(src.dtype));
  Shape want = self.sizes;
  if (self.dim() > 0) want[d] = shape_numel(idx.sizes);
  if (self.dim() > 0 && src.sizes != want)
    c.fail("index_copy_(): source of shape " + shape_str(src.sizes) + " must have shape " +
           shape_str(want));
  return TensorMeta::contiguous(self.sizes, self.dtype, self.device);
}

TensorMeta put_rule(const CallArgs& c) {
  const TensorMeta& self = c.tensor("self");
  const TensorMeta& idx = c.tensor("index");
  const TensorMeta& src = c.tensor("source");
  if (idx.dtype != DType::Int64) c.fail("put_(): Expected a long tensor for index, but got " +
                                        dt(idx.dtype));
  if (src.dtype != self.dtype) c.fail("put_(): self and source expected to have the same dtype");
  if (shape_numel(idx.sizes) != shape_numel(src.sizes))
    c.fail("put_(): Expected source and index to have the same number of elements, but got source "
           "with " + std::to_string(shape_numel(src.sizes)) + " and index with " +
           std::to_string(shape_numel(idx.sizes)) + " elements");
  return TensorMeta::contiguous(self.sizes, self.dtype, self.device);
}

TensorMeta masked_scatter_rule(const CallArgs& c) {
  const TensorMeta& self = c.tensor("self");
  const TensorMeta& mask = c.tensor("mask");
  if (mask.dtype != DType::Bool) c.fail("masked_scatter_ only supports boolean masks, but got mask "
                                        "with dtype " + dt(mask.dtype));
  if (c.tensor("source").dtype != self.dtype)
    c.fail("masked_scatter: expected self and source to have same dtypes but got " +
           dt(self.dtype) + " and " + dt(c.tensor("source").dtype));
  Shape s = broadcast_shapes(self.sizes, mask.sizes, c.where());
  return TensorMeta::contiguous(s, self.dtype, self.device);
}

TensorMeta renorm_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  if (!is_floating(in.dtype)) c.fail("renorm: expected a floating-point input, got " + dt(in.dtype));
  wrap_dim(c.get("dim").to_int(), std::max<int64_t>(in.dim(), 1), c.where());
  if (c.get("p").to_double() <= 0) c.fail("renorm: non-positive-norm not supported");
  if (c.get("maxnorm").to_double() < 0) c.fail("renorm: expected maxnorm to be >= 0 but got " +
                                               std::to_string(c.get("maxnorm").to_double()));
  return TensorMeta::contiguous(in.sizes, in.dtype, in.device);
}

TensorMeta unfold_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  int64_t rank = std::max<int64_t>(in.dim(), 1);
  int64_t d = wrap_dim(c.get("dimension").to_int(), rank, c.where());
  int64_t len = in.dim() == 0 ? 1 : in.sizes[d];
  int64_t size = c.get("size").to_int(), step = c.get("step").to_int();
  if (size > len) c.fail("maximum size for tensor at dimension " + std::to_string(d) + " is " +
                         std::to_string(len) + " but size is " + std::to_string(size));
  if (size < 0) c.fail("size is " + std::to_string(size) + " but must be >= 0");
  if (step <= 0) c.fail("step is " + std::to_string(step) + " but must be > 0");
  Shape s = in.sizes;
  if (in.dim() == 0) return TensorMeta::contiguous({size}, in.dtype, in.device);
  s[d] = (len - size) / step + 1;
  s.push_back(size);
  return TensorMeta::contiguous(s, in.dtype, in.device);
}

TensorMeta cdist_rule(const CallArgs& c) {
  const TensorMeta& a = c.tensor("x1");
  const TensorMeta& b = c.tensor("x2");
  if (a.dim() < 2 || b.dim() < 2) c.fail("cdist only supports at least 2D tensors, X1 got: " +
                                         std::to_string(a.dim()) + "D");
  if (a.sizes.back() != b.sizes.back())
    c.fail("X1 and X2 must have the same number of columns. X1: " + std::to_string(a.sizes.back()) +
           " X2: " + std::to_string(b.sizes.back()));
  if (!is_floating(a.dtype) || a.dtype != b.dtype)
    c.fail("cdist only supports floating-point dtypes of equal type, got " + dt(a.dtype) + " and " +
           dt(b.dtype));
  if (c.get("p").to_double() < 0) c.fail("cdist only supports non-negative p values");
  Shape ba(a.sizes.begin(), a.sizes.end() - 2), bb(b.sizes.begin(), b.sizes.end() - 2);
  Shape s = broadcast_shapes(ba, bb, c.where());
  s.push_back(a.sizes[a.dim() - 2]);
  s.push_back(b.sizes[b.dim() - 2]);
  return TensorMeta::contiguous(s, a.dtype, a.device);
}

TensorMeta pdist_rule(const CallArgs& c) {
  const TensorMeta& a = c.tensor("self");
  if (a.dim() != 2) c.fail("pdist only supports 2D tensors, got: " + std::to_string(a.dim()) + "D");
  if (!is_floating(a.dtype)) c.fail("pdist only supports floating-point dtypes");
  if (c.get("p").to_double() < 0) c.fail("pdist only supports non-negative p values");
  int64_t n = a.sizes[0];
  return TensorMeta::contiguous({n * (n - 1) / 2}, a.dtype, a.device);
}

TensorMeta block_diag_rule(const CallArgs& c) {
  std::vector<Node*> ts = c.get("tensors").to_node_list();
  int64_t rows = 0, cols = 0;
  DType t = ts.empty() ? DType::Float32 : ts[0]->meta().dtype;
  for (size_t i = 0; i < ts.size(); ++i) {
    const TensorMeta& m = ts[i]->meta();
    if (m.dim() > 2) c.fail("torch.block_diag: Input tensors must have 2 or fewer dimensions. "
                            "Input " + std::to_string(i) + " has " + std::to_string(m.dim()) +
                            " dimensions");
    t = promote_types(t, m.dtype);
    rows += m.dim() == 2 ? m.sizes[0] : 1;
    cols += m.dim() == 0 ? 1 : m.sizes.back();
  }
  return TensorMeta::contiguous({rows, cols}, t, "cpu");
}

TensorMeta slice_scatter_rule(const CallArgs& c) {
  const TensorMeta& self = c.tensor("self");
  const TensorMeta& src = c.tensor("src");
  if (self.dim() == 0) c.fail("slice_scatter() cannot be applied to a 0-dim tensor.");
  int64_t d = wrap_dim(c.get("dim").to_int(), self.dim(), c.where());
  int64_t n = self.sizes[d];
  int64_t step = c.get("step").to_int();
  if (step <= 0) c.fail("slice step must be positive");
  int64_t start = c.has("start") ? c.get("start").to_int() : 0;
  int64_t end = c.has("end") ? c.get("end").to_int() : n;
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  Shape want = self.sizes;
  want[d] = (end - start + step - 1) / step;
  if (src.sizes != want) c.fail("Expected src to have a size equal to the slice of self. src size "
                                "= " + shape_str(src.sizes) + ", slice size = " + shape_str(want));
  if (src.dtype != self.dtype) c.fail("slice_scatter: src must have self's dtype");
  return TensorMeta::contiguous(self.sizes, self.dtype, self.device);
}

TensorMeta select_scatter_rule(const CallArgs& c) {
  const TensorMeta& self = c.tensor("self");
  const TensorMeta& src = c.tensor("src");
  if (self.dim() == 0) c.fail("select_scatter() cannot be applied to a 0-dim tensor.");
  int64_t d = wrap_dim(c.get("dim").to_int(), self.dim(), c.where());
  int64_t i = c.get("index").to_int(), n = self.sizes[d];
  if (i < -n || i >= n) c.fail("select_scatter(): index " + std::to_string(i) +
                               " out of range for tensor of size " + shape_str(self.sizes) +
                               " at dimension " + std::to_string(d));
  Shape want = self.sizes;
  want.erase(want.begin() + d);
  if (src.sizes != want) c.fail("Expected src to have a size equal to the slice of self. src size "
                                "= " + shape_str(src.sizes) + ", slice size = " + shape_str(want));
  if (src.dtype != self.dtype) c.fail("select_scatter: src must have self's dtype");
  return TensorMeta::contiguous(self.sizes, self.dtype, self.device);
}

TensorMeta normal_rule(const CallArgs& c) {
  bool mt = c.get("mean").is_node(), st = c.get("std").is_node();
  Shape s = mt && st ? broadcast_shapes(c.tensor("mean").sizes, c.tensor("std").sizes, c.where())
                     : mt ? c.tensor("mean").sizes : c.tensor("std").sizes;
  DType t = mt ? c.tensor("mean").dtype : c.tensor("std").dtype;
  if (mt && st) t = promote_types(t, c.tensor("std").dtype);
  if (!is_floating(t)) c.fail("normal expects floating-point mean and std, got " + dt(t));
  return TensorMeta::contiguous(s, t, "cpu");
}

}  // namespace

void register_more_ops_2(OpRegistry& r) {
  auto comp = [&](const std::string& schema, InferFn f) -> OpDef& {
    return r.add(schema, C::Composite, P::None, std::move(f));
  };
  for (const char* n : {"adaptive_avg_pool2d", "adaptive_avg_pool3d"}) {
    const OpDef* base = r.find(n);
    if (!base) continue;
    InferFn f = base->infer;
    comp(std::string("_") + base->schema.text, [f](const CallArgs& c) { return f(c); });
  }
  comp("max_unpool2d(Tensor self, Tensor indices, int[2] output_size) -> Tensor",
       [](const CallArgs& c) { return unpool_rule(c, 2); });
  comp("max_unpool3d(Tensor self, Tensor indices, int[3] output_size, int[3] stride, "
       "int[3] padding) -> Tensor",
       [](const CallArgs& c) { return unpool_rule(c, 3); });
  comp("upsample_bilinear2d.vec(Tensor input, SymInt[]? output_size, bool align_corners, "
       "float[]? scale_factors) -> Tensor",
       [](const CallArgs& c) {
         const TensorMeta& in = c.tensor("input");
         if (!is_floating(in.dtype)) c.fail("upsample_bilinear2d: expected a floating-point input");
         return TensorMeta::contiguous(replace_tail(c, in.sizes, vec_output_size(c, in.sizes, 2)),
                                       in.dtype, in.device);
       });
  for (int k : {1, 2})
    comp("upsample_nearest" + std::to_string(k) + "d.vec(Tensor input, SymInt[]? output_size, "
         "float[]? scale_factors) -> Tensor",
         [k](const CallArgs& c) {
           const TensorMeta& in = c.tensor("input");
           return TensorMeta::contiguous(
               replace_tail(c, in.sizes, vec_output_size(c, in.sizes, static_cast<size_t>(k))),
               in.dtype, in.device);
         });
  comp("linalg_cross(Tensor self, Tensor other, *, int dim=-1) -> Tensor", cross_rule);
  for (const char* n : {"gcd", "lcm"})
    r.add(std::string(n) + "(Tensor self, Tensor other) -> Tensor", C::Pointwise, P::Default,
          int_binary)
        .differentiable = false;
  comp("median(Tensor self) -> Tensor", median_rule);
  comp("nanmedian(Tensor self) -> Tensor", median_rule);
  const std::string fk =
      "*, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None";
  comp("eye(int n, " + fk + ") -> Tensor", eye_rule).differentiable = false;
  comp("eye.m(int n, int m, " + fk + ") -> Tensor", eye_rule).differentiable = false;
  comp("linspace(Scalar start, Scalar end, int steps, " + fk + ") -> Tensor", linspace_rule)
      .differentiable = false;
  comp("logspace(Scalar start, Scalar end, int steps, float base=10., " + fk + ") -> Tensor",
       linspace_rule)
      .differentiable = false;
  comp("isin.Tensor_Tensor(Tensor elements, Tensor test_elements, *, bool assume_unique=False, "
       "bool invert=False) -> Tensor",
       [](const CallArgs& c) {
         const TensorMeta& e = c.tensor("elements");
         return TensorMeta::contiguous(e.sizes, DType::Bool, e.device);
       })
      .differentiable = false;
  comp("bucketize.Tensor(Tensor self, Tensor boundaries, *, bool out_int32=False, "
       "bool right=False) -> Tensor",
       [](const CallArgs& c) {
         if (c.tensor("boundaries").dim() != 1)
           c.fail("boundaries tensor must be 1 dimension, but got dim(" +
                  std::to_string(c.tensor("boundaries").dim()) + ")");
         return search_rule(c, "boundaries", "self");
       })
      .differentiable = false;
  comp("searchsorted.Tensor(Tensor sorted_sequence, Tensor self, *, bool out_int32=False, "
       "bool right=False, str? side=None, Tensor? sorter=None) -> Tensor",
       [](const CallArgs& c) { return search_rule(c, "sorted_sequence", "self"); })
      .differentiable = false;
  comp("index_copy(Tensor self, int dim, Tensor index, Tensor source) -> Tensor", index_copy_rule);
  comp("put(Tensor self, Tensor index, Tensor source, bool accumulate=False) -> Tensor", put_rule);
  comp("masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor", masked_scatter_rule);
  comp("renorm(Tensor self, Scalar p, int dim, Scalar maxnorm) -> Tensor", renorm_rule);
  comp("unfold(Tensor self, int dimension, int size, int step) -> Tensor", unfold_rule);
  comp("_cdist_forward(Tensor x1, Tensor x2, float p, int? compute_mode) -> Tensor", cdist_rule);
  comp("_pdist_forward(Tensor self, float p=2.) -> Tensor", pdist_rule);
  comp("block_diag(Tensor[] tensors) -> Tensor", block_diag_rule);
  comp("slice_scatter(Tensor self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None, "
       "SymInt step=1) -> Tensor",
       slice_scatter_rule);
  comp("select_scatter(Tensor self, Tensor src, int dim, int index) -> Tensor",
       select_scatter_rule);
  auto tri_indices = [](const CallArgs& c) {
    int64_t row = c.get("row").to_int(), col = c.get("col").to_int(), off = c.get("offset").to_int();
    if (row < 0) c.fail("row must be non-negative, got" + std::to_string(row));
    if (col < 0) c.fail("col must be non-negative, got" + std::to_string(col));
    bool lower = c.op().schema.base == "tril_indices";
    int64_t n = 0;
    for (int64_t r = 0; r < row; ++r) {
      int64_t lo = lower ? 0 : std::max<int64_t>(0, r + off);
      int64_t hi = lower ? std::min(col, r + off + 1) : col;
      n += std::max<int64_t>(0, hi - lo);
    }
    DType t = c.get("dtype").is_dtype() ? c.get("dtype").dtype() : DType::Int64;
    if (t != DType::Int64 && t != DType::Int32) c.fail("tril/triu_indices: dtype must be int32 or int64");
    return TensorMeta::contiguous({2, n}, t, "cpu");
  };
  for (const char* n : {"tril_indices", "triu_indices"})
    comp(std::string(n) + "(int row, int col, int offset=0, *, ScalarType? dtype=long, "
         "Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
         tri_indices)
        .differentiable = false;
  comp("index_reduce(Tensor self, int dim, Tensor index, Tensor source, str reduce, *, "
       "bool include_self=True) -> Tensor",
       [](const CallArgs& c) {
         const std::string& red = c.get("reduce").str();
         if (red != "prod" && red != "mean" && red != "amax" && red != "amin")
           c.fail("index_reduce(): Expected reduce to be one of prod, mean, amax or amin, got " +
                  red);
         const TensorMeta& self = c.tensor("self");
         const TensorMeta& idx = c.tensor("index");
         const TensorMeta& src = c.tensor("source");
         int64_t d = wrap_dim(c.get("dim").to_int(), std::max<int64_t>(self.dim(), 1), c.where());
         if (idx.dtype != DType::Int64 && idx.dtype != DType::Int32)
           c.fail("index_reduce_(): Expected dtype int32/int64 for index");
         if (idx.dim() > 1) c.fail("index_reduce_(): Index is supposed to be a vector");
         if (src.dtype != self.dtype)
           c.fail("index_reduce_(): self and source must have the same scalar type");
         Shape want = self.sizes;
         if (self.dim() > 0) want[d] = shape_numel(idx.sizes);
         if (self.dim() > 0 && src.sizes != want)
           c.fail("index_reduce_(): source of shape " + shape_str(src.sizes) + " must have shape " +
                  shape_str(want));
         return TensorMeta::contiguous(self.sizes, self.dtype, self.device);
       });
  comp("multi_margin_loss(Tensor self, Tensor target, Scalar p=1, Scalar margin=1, "
       "Tensor? weight=None, int reduction=1) -> Tensor",
       [](const CallArgs& c) {
         const TensorMeta& x = c.tensor("self");
         const TensorMeta& t = c.tensor("target");
         if (!is_floating(x.dtype)) c.fail("multi_margin_loss: expected a floating-point input");
         if (x.dim() > 2)
           c.fail("Expected non-empty vector or matrix with optional 0-dim batch size, but got: " +
                  shape_str(x.sizes));
         int64_t n = x.dim() == 2 ? x.sizes[0] : 1;
         if (t.dtype != DType::Int64) c.fail("multi_margin_loss: expected an int64 target");
         if (shape_numel(t.sizes) != n || t.dim() > 1)
           c.fail("inconsistent target size: " + shape_str(t.sizes) + " for input of size: " +
                  shape_str(x.sizes));
         double p = c.get("p").to_double();
         if (p != 1 && p != 2) c.fail("only p == 1 and p == 2 supported");
         int64_t classes = x.dim() == 0 ? 1 : x.sizes.back();
         if (c.has("weight") && (c.tensor("weight").dim() != 1 ||
                                 c.tensor("weight").sizes[0] != classes))
           c.fail("inconsistent weight size, expected " + std::to_string(classes) +
                  " but got " + shape_str(c.tensor("weight").sizes));
         int64_t red = c.get("reduction").to_int();
         Shape s = red == nn::kReductionNone ? t.sizes : Shape{};
         return TensorMeta::contiguous(s, x.dtype, x.device);
       });
  // Random ops (interpreter kernels drawing from the run's seed; compared by shape and dtype).
  auto random = [&](const std::string& schema, InferFn f) {
    r.add(schema, C::Random, P::None, std::move(f)).differentiable = false;
  };
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
  auto randint_like = [](const CallArgs& c) {
    const TensorMeta& in = c.tensor("self");
    int64_t lo = c.op().schema.index_of("low") >= 0 ? c.get("low").to_int() : 0;
    if (c.get("high").to_int() <= lo)
      c.fail("random_ expects 'from' to be less than 'to', but got from=" + std::to_string(lo) +
             " >= to=" + std::to_string(c.get("high").to_int()));
    DType t = c.get("dtype").is_dtype() ? c.get("dtype").dtype() : in.dtype;
    return TensorMeta::contiguous(in.sizes, t, in.device);
  };
  const std::string lk = fk + ", MemoryFormat? memory_format=None";
  random("randint_like(Tensor self, int high, " + lk + ") -> Tensor", randint_like);
  random("randint_like.low_dtype(Tensor self, int low, int high, " + lk + ") -> Tensor",
         randint_like);
}

}  // namespace stax
