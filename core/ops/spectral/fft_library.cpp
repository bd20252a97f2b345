// FFTW 3 behind stax::fft (fft_library.h): guru64 plans over the tensors' own strides.
#include "core/ops/spectral/fft_library.h"

#include <fftw3.h>

#include <complex>
#include <mutex>
#include <string>

#include "core/support/error.h"

namespace stax::fft {

namespace {

// FFTW's planner (plan creation and destruction) is not thread-safe; fftw_execute is.
std::mutex& planner_lock() {
  static std::mutex m;
  return m;
}

// The float and double halves of FFTW's API under one name.
template <class T>
struct Fftw;

template <>
struct Fftw<double> {
  using Plan = fftw_plan;
  using Complex = fftw_complex;
  static Plan r2c(int r, const fftw_iodim64* d, int h, const fftw_iodim64* hd, double* in,
                  Complex* out) {
    return fftw_plan_guru64_dft_r2c(r, d, h, hd, in, out, FFTW_ESTIMATE);
  }
  static Plan c2r(int r, const fftw_iodim64* d, int h, const fftw_iodim64* hd, Complex* in,
                  double* out) {
    return fftw_plan_guru64_dft_c2r(r, d, h, hd, in, out, FFTW_ESTIMATE | FFTW_DESTROY_INPUT);
  }
  static Plan c2c(int r, const fftw_iodim64* d, int h, const fftw_iodim64* hd, Complex* in,
                  Complex* out, int sign) {
    return fftw_plan_guru64_dft(r, d, h, hd, in, out, sign, FFTW_ESTIMATE);
  }
  static void execute(Plan p) { fftw_execute(p); }
  static void destroy(Plan p) { fftw_destroy_plan(p); }
};

template <>
struct Fftw<float> {
  using Plan = fftwf_plan;
  using Complex = fftwf_complex;
  static Plan r2c(int r, const fftw_iodim64* d, int h, const fftw_iodim64* hd, float* in,
                  Complex* out) {
    return fftwf_plan_guru64_dft_r2c(r, d, h, hd, in, out, FFTW_ESTIMATE);
  }
  static Plan c2r(int r, const fftw_iodim64* d, int h, const fftw_iodim64* hd, Complex* in,
                  float* out) {
    return fftwf_plan_guru64_dft_c2r(r, d, h, hd, in, out, FFTW_ESTIMATE | FFTW_DESTROY_INPUT);
  }
  static Plan c2c(int r, const fftw_iodim64* d, int h, const fftw_iodim64* hd, Complex* in,
                  Complex* out, int sign) {
    return fftwf_plan_guru64_dft(r, d, h, hd, in, out, sign, FFTW_ESTIMATE);
  }
  static void execute(Plan p) { fftwf_execute(p); }
  static void destroy(Plan p) { fftwf_destroy_plan(p); }
};

// The transform dims (in `dims` order, sizes `n`) and the loop ("howmany") dims, every other one,
// with the input's and the output's strides in their own element units.
struct Layout {
  std::vector<fftw_iodim64> dims, loops;
};

Layout layout(const Tensor& in, const Tensor& out, const std::vector<int64_t>& dims,
              const Shape& n) {
  Layout l;
  std::vector<bool> transformed(in.sizes().size(), false);
  for (size_t k = 0; k < dims.size(); ++k) {
    auto d = static_cast<size_t>(dims[k]);
    transformed[d] = true;
    l.dims.push_back({n[k], in.strides()[d], out.strides()[d]});
  }
  for (size_t d = 0; d < transformed.size(); ++d)
    if (!transformed[d]) l.loops.push_back({out.sizes()[d], in.strides()[d], out.strides()[d]});
  return l;
}

// Makes a plan (under the planner lock), runs it, destroys it.
template <class T, class MakePlan>
void run_plan(MakePlan&& make, const char* what) {
  typename Fftw<T>::Plan p;
  {
    std::lock_guard<std::mutex> g(planner_lock());
    p = make();
  }
  if (!p) throw Error("interpreter", "fft", std::string("FFTW could not plan the ") + what);
  Fftw<T>::execute(p);
  std::lock_guard<std::mutex> g(planner_lock());
  Fftw<T>::destroy(p);
}

template <class T>
typename Fftw<T>::Complex* cdata(const Tensor& t) {
  return reinterpret_cast<typename Fftw<T>::Complex*>(t.data<std::complex<T>>());
}

Shape sizes_of(const Tensor& t, const std::vector<int64_t>& dims) {
  Shape n;
  for (int64_t d : dims) n.push_back(t.sizes()[static_cast<size_t>(d)]);
  return n;
}

int rank_of(const std::vector<fftw_iodim64>& v) { return static_cast<int>(v.size()); }

}  // namespace

Tensor r2c(const Tensor& x, const std::vector<int64_t>& dims) {
  Tensor in = x.contiguous();
  Shape out_sizes = in.sizes();
  auto last = static_cast<size_t>(dims.back());
  out_sizes[last] = out_sizes[last] / 2 + 1;
  Tensor out = Tensor::empty(out_sizes, real_to_complex(in.dtype()));
  if (in.numel() == 0) return out;
  Layout l = layout(in, out, dims, sizes_of(in, dims));
  dispatch(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      run_plan<T>([&] {
        return Fftw<T>::r2c(rank_of(l.dims), l.dims.data(), rank_of(l.loops), l.loops.data(),
                            in.data<T>(), cdata<T>(out));
      }, "real-to-complex transform");
    } else {
      throw Error("interpreter", "fft", "FFT of " + std::string(dtype_name(in.dtype())) +
                                            " (Stax's FFT takes float32 and float64)");
    }
  });
  return out;
}

Tensor c2c(const Tensor& x, const std::vector<int64_t>& dims, bool forward) {
  Tensor in = x.contiguous();
  Tensor out = Tensor::empty(in.sizes(), in.dtype());
  if (in.numel() == 0) return out;
  if (dims.empty()) {
    out.copy_from(in);
    return out;
  }
  Layout l = layout(in, out, dims, sizes_of(in, dims));
  int sign = forward ? FFTW_FORWARD : FFTW_BACKWARD;
  dispatch_complex(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type::value_type;
    run_plan<T>([&] {
      return Fftw<T>::c2c(rank_of(l.dims), l.dims.data(), rank_of(l.loops), l.loops.data(),
                          cdata<T>(in), cdata<T>(out), sign);
    }, "complex-to-complex transform");
  });
  return out;
}

Tensor c2r(const Tensor& x, int64_t dim, int64_t n) {
  auto d = static_cast<size_t>(dim);
  Shape half_sizes = x.sizes();
  half_sizes[d] = n / 2 + 1;
  // FFTW's c2r overwrites its input: transform a private copy of the n/2 + 1 entries used.
  Tensor in = Tensor::empty(half_sizes, x.dtype());
  in.copy_from(x.as_strided(half_sizes, x.strides(), x.storage_offset()));
  Shape out_sizes = x.sizes();
  out_sizes[d] = n;
  Tensor out = Tensor::empty(out_sizes, complex_to_real(x.dtype()));
  if (out.numel() == 0) return out;
  Layout l = layout(in, out, {dim}, {n});
  dispatch_complex(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type::value_type;
    run_plan<T>([&] {
      return Fftw<T>::c2r(rank_of(l.dims), l.dims.data(), rank_of(l.loops), l.loops.data(),
                          cdata<T>(in), out.data<T>());
    }, "complex-to-real transform");
  });
  return out;
}

void scale(Tensor& t, double factor) {
  if (factor == 1.0) return;
  Tensor parts = is_complex(t.dtype()) ? t.as_real_view() : t;
  dispatch(parts.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      T f = static_cast<T>(factor);
      T* p = parts.data<T>();
      for (int64_t i = 0; i < parts.numel(); ++i) p[i] *= f;
    }
  });
}

}  // namespace stax::fft
