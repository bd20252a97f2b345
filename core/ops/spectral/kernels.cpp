// Interpreter kernels of the spectral and complex-number ops (docs/complex.md). The transforms
// are FFTW's (fft_library.h); each kernel applies aten's normalization mode afterwards. The
// compiled path runs these same kernels as counted fallbacks: complex tensors never cross the
// plugin ABI.
#include <string>
#include <vector>

#include "core/interpreter/interpreter.h"
#include "core/ops/registration.h"
#include "core/ops/spectral/fft_args.h"
#include "core/ops/spectral/fft_library.h"

namespace stax {

namespace {

// Part k (0: real, 1: imaginary) of a complex tensor, as a real view of the same storage.
Tensor part(const Tensor& t, int k) {
  Tensor p = t.as_real_view();
  Shape st(p.strides().begin(), p.strides().end() - 1);
  return p.as_strided(t.sizes(), st, p.storage_offset() + k);
}

// t broadcast to `sizes` (a view with zero strides where t has size 1 or fewer dims).
Tensor expand_to(const Tensor& t, const Shape& sizes) {
  Shape st(sizes.size(), 0);
  size_t lead = sizes.size() - t.sizes().size();
  for (size_t i = 0; i < t.sizes().size(); ++i)
    st[lead + i] = t.sizes()[i] == 1 ? 0 : t.strides()[i];
  return t.as_strided(sizes, st, t.storage_offset());
}

int64_t points(const Shape& sizes, const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= sizes[static_cast<size_t>(d)];
  return n;
}

std::vector<int64_t> dims_arg(const KernelContext& c, bool allow_empty) {
  return fft::dims_of(c.arg("dim"), c.tensor("self").dim(), "%" + c.node().name(), allow_empty);
}

fft::Norm norm_arg(const KernelContext& c) {
  return fft::norm_of(c.arg("normalization"), "%" + c.node().name());
}

Tensor r2c_kernel(const KernelContext& c) {
  const Tensor& x = c.tensor("self");
  std::vector<int64_t> dims = dims_arg(c, false);
  // The two-sided spectrum is the complex transform of the real signal (torch fills the other
  // half by conjugate symmetry: the same values up to rounding).
  Tensor out = c.arg("onesided").to_bool() ? fft::r2c(x, dims)
                                            : fft::c2c(x.to(real_to_complex(x.dtype())), dims,
                                                       true);
  fft::scale(out, fft::norm_factor(norm_arg(c), points(x.sizes(), dims)));
  return out;
}

// As torch's CPU kernels: the leading dims by a complex-to-complex transform, then a
// one-dimensional complex-to-real one over the last (the same result as a multi-dimensional c2r
// when the input is Hermitian-symmetric, and torch's where it is not).
Tensor c2r_kernel(const KernelContext& c) {
  const Tensor& x = c.tensor("self");
  std::vector<int64_t> dims = dims_arg(c, false);
  int64_t n = c.arg("last_dim_size").to_int();
  Tensor y = x;
  if (dims.size() > 1) y = fft::c2c(x, std::vector<int64_t>(dims.begin(), dims.end() - 1), false);
  Tensor out = fft::c2r(y, dims.back(), n);
  fft::scale(out, fft::norm_factor(norm_arg(c), points(out.sizes(), dims)));
  return out;
}

Tensor c2c_kernel(const KernelContext& c) {
  const Tensor& x = c.tensor("self");
  std::vector<int64_t> dims = dims_arg(c, true);
  Tensor out = fft::c2c(x, dims, c.arg("forward").to_bool());
  fft::scale(out, fft::norm_factor(norm_arg(c), points(x.sizes(), dims)));
  return out;
}

Tensor view_as_real_kernel(const KernelContext& c) {
  Tensor out = Tensor::empty(c.out_meta().sizes, c.out_meta().dtype);
  out.copy_from(c.tensor("self").as_real_view());
  return out;
}

Tensor view_as_complex_kernel(const KernelContext& c) {
  Tensor out = Tensor::empty(c.out_meta().sizes, c.out_meta().dtype);
  out.as_real_view().copy_from(c.tensor("self"));
  return out;
}

// real / imag / conj_physical: part k of a complex input (a real input: itself, for real and
// conj_physical).
Tensor part_kernel(const KernelContext& c, int k, bool conjugate) {
  const Tensor& x = c.tensor("self");
  Tensor out = Tensor::empty(c.out_meta().sizes, c.out_meta().dtype);
  if (!is_complex(x.dtype())) {
    out.copy_from(x);
  } else if (!conjugate) {
    out.copy_from(part(x, k));
  } else {
    out.copy_from(x);
    Tensor im = part(out, 1);
    dispatch(im.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<T>) {
        for (int64_t i = 0; i < im.numel(); ++i) {
          T* p = im.data<T>() + 2 * i;
          *p = -*p;
        }
      }
    });
  }
  return out;
}

Tensor complex_kernel(const KernelContext& c) {
  Tensor out = Tensor::empty(c.out_meta().sizes, c.out_meta().dtype);
  part(out, 0).copy_from(expand_to(c.tensor("real"), out.sizes()));
  part(out, 1).copy_from(expand_to(c.tensor("imag"), out.sizes()));
  return out;
}

}  // namespace

void register_spectral_kernels(InterpreterTable& t) {
  t.add("_fft_r2c.default", r2c_kernel);
  t.add("_fft_c2r.default", c2r_kernel);
  t.add("_fft_c2c.default", c2c_kernel);
  t.add("view_as_real.default", view_as_real_kernel);
  t.add("view_as_complex.default", view_as_complex_kernel);
  t.add("real.default", [](const KernelContext& c) { return part_kernel(c, 0, false); });
  t.add("imag.default", [](const KernelContext& c) { return part_kernel(c, 1, false); });
  for (const char* op : {"conj_physical.default", "_conj.default", "_conj_physical.default"})
    t.add(op, [](const KernelContext& c) { return part_kernel(c, 1, true); });
  t.add("complex.default", complex_kernel);
}

}  // namespace stax
