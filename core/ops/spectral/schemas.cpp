// The spectral ops and the complex-number ops around them (docs/complex.md): aten's discrete
// Fourier transforms _fft_r2c / _fft_c2r (Core ATen) and _fft_c2c, which torch.fft.* traces carry,
// and view_as_real / view_as_complex / real / imag / conj_physical / complex, which move between
// complex tensors and real ones. All take or return complex64 / complex128 (OpDef::complex).
#include <string>
#include <vector>

#include "core/graph/op_registry.h"
#include "core/ops/registration.h"
#include "core/ops/spectral/fft_args.h"

namespace stax {

namespace {

using C = OpCategory;
using P = Promotion;

void need_complex(const CallArgs& c, const TensorMeta& m, const char* what) {
  if (!is_complex(m.dtype))
    c.fail(std::string(what) + " expects a complex tensor, got " +
           std::string(dtype_name(m.dtype)));
}

// float32 / float64 only: torch's CPU FFT has no half-precision kernel ("MKL FFT doesn't support
// tensors of type: Half"), and integers reach aten's FFT ops only after torch.fft promotes them.
void need_fft_real(const CallArgs& c, const TensorMeta& m) {
  if (m.dtype != DType::Float32 && m.dtype != DType::Float64)
    c.fail("the FFT takes float32 or float64 tensors, got " + std::string(dtype_name(m.dtype)) +
           " (torch's CPU FFT has no " + std::string(dtype_name(m.dtype)) + " kernel)");
}

void need_points(const CallArgs& c, const Shape& sizes, const std::vector<int64_t>& dims) {
  for (int64_t d : dims)
    if (sizes[static_cast<size_t>(d)] < 1)
      c.fail("Invalid number of data points (" + std::to_string(sizes[static_cast<size_t>(d)]) +
             ") specified (dim " + std::to_string(d) + ")");
}

TensorMeta r2c_rule(const CallArgs& c) {
  const TensorMeta& x = c.tensor("self");
  need_fft_real(c, x);
  std::vector<int64_t> dims = fft::dims_of(c.get("dim"), x.dim(), c.where(), false);
  fft::norm_of(c.get("normalization"), c.where());
  need_points(c, x.sizes, dims);
  Shape out = x.sizes;
  if (c.get("onesided").to_bool()) {
    auto last = static_cast<size_t>(dims.back());
    out[last] = out[last] / 2 + 1;
  }
  return TensorMeta::contiguous(out, real_to_complex(x.dtype), x.device);
}

TensorMeta c2r_rule(const CallArgs& c) {
  const TensorMeta& x = c.tensor("self");
  need_complex(c, x, "_fft_c2r");
  std::vector<int64_t> dims = fft::dims_of(c.get("dim"), x.dim(), c.where(), false);
  fft::norm_of(c.get("normalization"), c.where());
  int64_t n = c.get("last_dim_size").to_int();
  if (n < 1) c.fail("Invalid number of data points (" + std::to_string(n) + ") specified");
  auto last = static_cast<size_t>(dims.back());
  int64_t have = x.sizes[last];
  if (have != n / 2 + 1 && have != n)
    c.fail("the input's size along dim " + std::to_string(last) + " is " + std::to_string(have) +
           "; a real output of " + std::to_string(n) + " points needs " +
           std::to_string(n / 2 + 1) + " (onesided) or " + std::to_string(n) +
           " entries there (torch asserts the same)");
  need_points(c, x.sizes, dims);
  Shape out = x.sizes;
  out[last] = n;
  return TensorMeta::contiguous(out, complex_to_real(x.dtype), x.device);
}

TensorMeta c2c_rule(const CallArgs& c) {
  const TensorMeta& x = c.tensor("self");
  need_complex(c, x, "_fft_c2c");
  std::vector<int64_t> dims = fft::dims_of(c.get("dim"), x.dim(), c.where(), true);
  fft::norm_of(c.get("normalization"), c.where());
  need_points(c, x.sizes, dims);
  return TensorMeta::contiguous(x.sizes, x.dtype, x.device);
}

TensorMeta view_as_real_rule(const CallArgs& c) {
  const TensorMeta& x = c.tensor("self");
  if (!is_complex(x.dtype))
    c.fail("view_as_real is only supported for complex tensors, got " +
           std::string(dtype_name(x.dtype)));
  Shape out = x.sizes;
  out.push_back(2);
  return TensorMeta::contiguous(out, complex_to_real(x.dtype), x.device);
}

TensorMeta view_as_complex_rule(const CallArgs& c) {
  const TensorMeta& x = c.tensor("self");
  if (x.dtype != DType::Float32 && x.dtype != DType::Float64)
    c.fail("view_as_complex is only supported for float32 and float64 tensors, but got a tensor "
           "of scalar type: " + std::string(dtype_name(x.dtype)));
  if (x.dim() == 0) c.fail("Input tensor must have one or more dimensions");
  if (x.sizes.back() != 2) c.fail("Tensor must have a last dimension of size 2");
  Shape out(x.sizes.begin(), x.sizes.end() - 1);
  return TensorMeta::contiguous(out, real_to_complex(x.dtype), x.device);
}

TensorMeta real_rule(const CallArgs& c) {
  const TensorMeta& x = c.tensor("self");
  return TensorMeta::contiguous(x.sizes, complex_to_real(x.dtype), x.device);
}

TensorMeta imag_rule(const CallArgs& c) {
  const TensorMeta& x = c.tensor("self");
  if (!is_complex(x.dtype)) c.fail("imag is not implemented for tensors with non-complex dtypes.");
  return TensorMeta::contiguous(x.sizes, complex_to_real(x.dtype), x.device);
}

TensorMeta same_rule(const CallArgs& c) {
  const TensorMeta& x = c.tensor("self");
  return TensorMeta::contiguous(x.sizes, x.dtype, x.device);
}

TensorMeta conj_rule(const CallArgs& c) {
  const TensorMeta& x = c.tensor("self");
  if (!is_complex(x.dtype))
    c.fail("_conj expects a complex tensor, got " + std::string(dtype_name(x.dtype)) +
           " (torch.conj of a real tensor returns the tensor itself)");
  return same_rule(c);
}

TensorMeta complex_rule(const CallArgs& c) {
  const TensorMeta& re = c.tensor("real");
  const TensorMeta& im = c.tensor("imag");
  for (const TensorMeta* m : {&re, &im})
    if (m->dtype != DType::Float32 && m->dtype != DType::Float64)
      c.fail("Expected both inputs to be Half, Float or Double tensors but got " +
             std::string(dtype_name(re.dtype)) + " and " + std::string(dtype_name(im.dtype)));
  if (re.dtype != im.dtype)
    c.fail("Expected object of scalar type " + std::string(dtype_name(re.dtype)) +
           " but got scalar type " + std::string(dtype_name(im.dtype)) +
           " for second argument");
  Shape out = broadcast_shapes(re.sizes, im.sizes, c.where());
  return TensorMeta::contiguous(out, real_to_complex(re.dtype), re.device);
}

}  // namespace

void register_spectral_ops(OpRegistry& r) {
  auto add = [&](const char* schema, OpCategory cat, InferFn rule, bool differentiable) {
    OpDef& d = r.add(schema, cat, P::None, std::move(rule));
    d.complex = true;
    d.differentiable = differentiable;
  };
  add("_fft_r2c(Tensor self, int[] dim, int normalization, bool onesided) -> Tensor", C::Extern,
      r2c_rule, true);
  add("_fft_c2r(Tensor self, int[] dim, int normalization, SymInt last_dim_size) -> Tensor",
      C::Extern, c2r_rule, true);
  add("_fft_c2c(Tensor self, SymInt[] dim, int normalization, bool forward) -> Tensor", C::Extern,
      c2c_rule, true);
  add("view_as_real(Tensor(a) self) -> Tensor(a)", C::View, view_as_real_rule, true);
  add("view_as_complex(Tensor(a) self) -> Tensor(a)", C::View, view_as_complex_rule, true);
  add("real(Tensor(a) self) -> Tensor(a)", C::Pointwise, real_rule, true);
  add("imag(Tensor(a) self) -> Tensor(a)", C::Pointwise, imag_rule, true);
  add("conj_physical(Tensor self) -> Tensor", C::Pointwise, same_rule, true);
  // torch's lazy conjugate (a view with the conjugate bit); here a copy, as conj_physical. torch
  // calls it for complex tensors only (torch.conj of a real tensor is the tensor), and its kernel
  // fails on a real one: so does Stax's rule.
  add("_conj(Tensor(a) self) -> Tensor(a)", C::Pointwise, conj_rule, true);
  add("_conj_physical(Tensor self) -> Tensor", C::Pointwise, same_rule, true);
  add("complex(Tensor real, Tensor imag) -> Tensor", C::Pointwise, complex_rule, true);
}

}  // namespace stax
