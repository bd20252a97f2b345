// stax::Tensor: the reference runtime's owning, strided CPU tensor.
//
// A Tensor is a view (sizes, strides in elements, storage offset in elements, dtype) of a shared,
// 64-byte-aligned byte buffer (Storage). Copying a Tensor copies the view, not the data: views made
// by as_strided() share storage; clone()/contiguous()/to() make new storage when needed.
// Strides are never negative; a view is checked to stay inside its storage.
//
// Defaults (documented once here):
//   - dtype arguments default to float32 (torch.get_default_dtype()); randint defaults to int64.
//   - empty() storage is zero-filled (deterministic), but callers should not rely on its contents.
//   - seeds default to 0 and Philox offsets to 0 (see core/tensor/random.h for the exact recipe).
//   - allclose defaults to torch's rtol = 1e-5, atol = 1e-8, equal_nan = false.
//   - to_string() prints at most 64 elements by default.
//   - Multi-indices accept negative entries counted from the end (Python style).
//
// Value conversions (to(), set_from_double(), from_vector(..., dtype)) follow PyTorch: float -> int
// truncates toward zero (then wraps modulo 2^bits when out of range; NaN/Inf give INT64_MIN before
// wrapping; defined here, unspecified in PyTorch); anything -> bool is `!= 0` (NaN -> true);
// bool -> number is 0/1; double -> float rounds to nearest even; -> float16/bfloat16 rounds through
// float32 (see half.h); int -> int wraps modulo 2^bits.
//
// Errors from misuse that input can cause (shape mismatch, out-of-range index, wrong dtype for
// data<T>()) are stax::Error with stage "runtime".
#pragma once

#include <cstddef>
#include <cstdint>
#include <complex>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/types/dtype.h"
#include "core/types/tensor_meta.h"
#include "core/types/half.h"
#include "core/support/error.h"

namespace stax {

// ---- C++ element types of dtypes and type dispatch ----------------------------------------------

// An empty value carrying a C++ type, passed to dispatch()'s callable.
template <class T>
struct TypeTag {
  using type = T;
};

// float, double, Half, BFloat16, int64_t, int32_t, int8_t, uint8_t, bool -> their DType.
template <class T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return DType::Float32;
  else if constexpr (std::is_same_v<T, double>) return DType::Float64;
  else if constexpr (std::is_same_v<T, Half>) return DType::Float16;
  else if constexpr (std::is_same_v<T, BFloat16>) return DType::BFloat16;
  else if constexpr (std::is_same_v<T, int64_t>) return DType::Int64;
  else if constexpr (std::is_same_v<T, int32_t>) return DType::Int32;
  else if constexpr (std::is_same_v<T, int8_t>) return DType::Int8;
  else if constexpr (std::is_same_v<T, uint8_t>) return DType::UInt8;
  else if constexpr (std::is_same_v<T, bool>) return DType::Bool;
  else if constexpr (std::is_same_v<T, std::complex<float>>) return DType::Complex64;
  else if constexpr (std::is_same_v<T, std::complex<double>>) return DType::Complex128;
  else if constexpr (std::is_same_v<T, int16_t>) return DType::Int16;
  else if constexpr (std::is_same_v<T, uint16_t>) return DType::UInt16;
  else if constexpr (std::is_same_v<T, uint32_t>) return DType::UInt32;
  else if constexpr (std::is_same_v<T, uint64_t>) return DType::UInt64;
  else static_assert(sizeof(T) == 0, "not a Stax element type");
}

// Calls f(TypeTag<C++ type of t>{}) for the real dtypes and returns its result; every instantiation
// of f must return the same type. Complex dtypes throw stax::Error naming the dtype: a kernel that
// takes complex tensors handles them itself (dispatch_complex, or as_real_view()). Example:
//   double s = dispatch(t.dtype(), [&](auto tag) {
//     using T = typename decltype(tag)::type;
//     return static_cast<double>(convert_value<float>(t.data<T>()[0]));
//   });
template <class F>
decltype(auto) dispatch(DType t, F&& f) {
  switch (t) {
    case DType::Float32: return std::forward<F>(f)(TypeTag<float>{});
    case DType::Float64: return std::forward<F>(f)(TypeTag<double>{});
    case DType::Float16: return std::forward<F>(f)(TypeTag<Half>{});
    case DType::BFloat16: return std::forward<F>(f)(TypeTag<BFloat16>{});
    case DType::Int64: return std::forward<F>(f)(TypeTag<int64_t>{});
    case DType::Int32: return std::forward<F>(f)(TypeTag<int32_t>{});
    case DType::Int8: return std::forward<F>(f)(TypeTag<int8_t>{});
    case DType::UInt8: return std::forward<F>(f)(TypeTag<uint8_t>{});
    case DType::Bool: return std::forward<F>(f)(TypeTag<bool>{});
    case DType::Int16: return std::forward<F>(f)(TypeTag<int16_t>{});
    case DType::UInt16: return std::forward<F>(f)(TypeTag<uint16_t>{});
    case DType::UInt32: return std::forward<F>(f)(TypeTag<uint32_t>{});
    case DType::UInt64: return std::forward<F>(f)(TypeTag<uint64_t>{});
    case DType::Complex64: case DType::Complex128:
      throw Error("runtime", "dispatch",
                  "a " + std::string(dtype_name(t)) + " tensor reached a kernel for real dtypes");
  }
  throw Error("runtime", "dispatch", "invalid dtype value " + std::to_string(static_cast<int>(t)));
}

// Calls f(TypeTag<std::complex<float or double>>{}) for a complex dtype; throws for the others.
template <class F>
decltype(auto) dispatch_complex(DType t, F&& f) {
  if (t == DType::Complex64) return std::forward<F>(f)(TypeTag<std::complex<float>>{});
  if (t == DType::Complex128) return std::forward<F>(f)(TypeTag<std::complex<double>>{});
  throw Error("runtime", "dispatch_complex",
              "expected a complex tensor, got " + std::string(dtype_name(t)));
}

template <class T>
inline constexpr bool is_half_like_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;
template <class T>
inline constexpr bool is_floating_element_v = std::is_floating_point_v<T> || is_half_like_v<T>;

// Converts one element value From -> To with the PyTorch semantics described at the top of this
// file.
template <class To, class From>
constexpr To convert_value(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (is_half_like_v<From>) {
    return convert_value<To>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (is_half_like_v<To>) {
    return To(static_cast<float>(v));
  } else if constexpr (std::is_floating_point_v<To>) {
    return static_cast<To>(v);
  } else if constexpr (std::is_floating_point_v<From>) {
    // Truncate toward zero into int64 (NaN / out of range -> INT64_MIN), then wrap into To;
    // uint64 takes [2^63, 2^64) directly.
    double d = static_cast<double>(v);
    if constexpr (std::is_same_v<To, uint64_t>)
      if (d >= 9223372036854775808.0 && d < 18446744073709551616.0) return static_cast<To>(d);
    int64_t i = std::numeric_limits<int64_t>::min();
    if (d > -9223372036854775808.0 && d < 9223372036854775808.0) i = static_cast<int64_t>(d);
    return static_cast<To>(i);
  } else {
    return static_cast<To>(v);  // integral / bool -> integral: modular (C++20)
  }
}

// ---- storage ------------------------------------------------------------------------------------

// A byte buffer, either
//   owned:    zero-filled, aligned to kAlignment bytes (never a null pointer), freed with it; or
//   borrowed: bytes someone else allocated (a DLPack producer's, for the Python package), not
//             freed; the Storage holds `owner` (whatever keeps those bytes alive) and drops it
//             when it dies, so the bytes live as long as any Tensor viewing them.
class Storage {
 public:
  static constexpr size_t kAlignment = 64;
  explicit Storage(size_t nbytes);
  // Borrowed bytes [data, data + nbytes). `data` must not be null; `owner` may be null when the
  // caller guarantees the bytes outlive the Storage.
  Storage(std::byte* data, size_t nbytes, std::shared_ptr<void> owner);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  std::byte* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  bool borrowed() const { return borrowed_; }

 private:
  std::byte* data_;
  size_t nbytes_;
  bool borrowed_ = false;
  std::shared_ptr<void> owner_;  // borrowed storage only
};

// ---- tensor -------------------------------------------------------------------------------------

class Tensor {
 public:
  // An undefined tensor (defined() is false); every other member requires a defined tensor.
  Tensor() = default;

  // -- factories (all row-major contiguous, offset 0) --
  static Tensor empty(const Shape& sizes, DType dtype = DType::Float32);
  // Strided allocation: storage just large enough for the given (non-negative) strides.
  static Tensor empty_strided(const Shape& sizes, const Shape& strides,
                              DType dtype = DType::Float32);
  static Tensor zeros(const Shape& sizes, DType dtype = DType::Float32);
  static Tensor ones(const Shape& sizes, DType dtype = DType::Float32);
  static Tensor full(const Shape& sizes, double value, DType dtype = DType::Float32);
  // A 0-d tensor (sizes ()).
  static Tensor scalar(double value, DType dtype = DType::Float32);
  // 0, 1, ..., n-1 as a 1-d tensor.
  static Tensor arange(int64_t n, DType dtype = DType::Int64);
  // Copies numel(sizes) contiguous elements of `dtype` from `data`.
  static Tensor from_data(const Shape& sizes, DType dtype, const void* data);
  // A view of memory the Tensor does not own (no copy): element 0 at `data`, `strides` in
  // elements (non-negative), borrowed Storage spanning exactly the elements the view reaches,
  // keeping `owner` alive (Storage above). `data` must be aligned to the dtype's size. Throws
  // stax::Error (stage "runtime") for a null `data` with elements, a negative size or stride, or
  // a rank mismatch. A view without elements gets an owned, empty storage.
  static Tensor from_external(void* data, const Shape& sizes, const Shape& strides, DType dtype,
                              std::shared_ptr<void> owner);
  // Tensor of T's dtype holding `values` (row-major); values.size() must equal numel(sizes).
  template <class T>
  static Tensor from_vector(const Shape& sizes, const std::vector<T>& values);
  // Same, converting each value to `dtype` (e.g. from_vector({2}, {1.5, 2.0}, DType::Float16)).
  template <class T>
  static Tensor from_vector(const Shape& sizes, const std::vector<T>& values, DType dtype);

  // -- seeded random factories (Philox-4x32-10, see random.h; element i uses counter offset + i) --
  // Uniform in [0, 1); floating dtypes only.
  static Tensor rand(const Shape& sizes, DType dtype = DType::Float32, uint64_t seed = 0,
                     uint64_t offset = 0);
  // Standard normal; floating dtypes, and complex ones (each part standard normal).
  static Tensor randn(const Shape& sizes, DType dtype = DType::Float32, uint64_t seed = 0,
                      uint64_t offset = 0);
  // Uniform integers in [low, high) (low < high), converted to any dtype (bool: value != 0).
  static Tensor randint(const Shape& sizes, int64_t low, int64_t high,
                        DType dtype = DType::Int64, uint64_t seed = 0, uint64_t offset = 0);

  // -- metadata --
  bool defined() const { return storage_ != nullptr; }
  const TensorMeta& meta() const { return meta_; }
  const Shape& sizes() const { return meta_.sizes; }
  const Shape& strides() const { return meta_.strides; }
  int64_t size(int64_t d) const;    // negative d counts from the end
  int64_t stride(int64_t d) const;  // negative d counts from the end
  DType dtype() const { return meta_.dtype; }
  int64_t numel() const { return meta_.numel(); }
  int64_t dim() const { return meta_.dim(); }
  int64_t itemsize() const { return static_cast<int64_t>(dtype_size(meta_.dtype)); }
  int64_t nbytes() const { return meta_.nbytes(); }  // numel * itemsize (the logical size)
  int64_t storage_offset() const { return offset_; }  // in elements
  bool is_contiguous() const { return meta_.is_contiguous(); }
  const std::shared_ptr<Storage>& storage() const { return storage_; }

  // -- raw data --
  // Pointer to the first element (storage + offset * itemsize).
  std::byte* data_ptr() const { return storage_->data() + offset_ * itemsize(); }
  // Typed pointer to the first element; throws stax::Error unless T is this dtype's C++ type.
  template <class T>
  T* data() const;

  // -- element access (slow, for tests and the interpreter) --
  // Storage offset (in elements) of a multi-index; checks rank and bounds.
  int64_t offset_of(const std::vector<int64_t>& idx) const;
  double item_as_double(const std::vector<int64_t>& idx) const;
  int64_t item_as_int(const std::vector<int64_t>& idx) const;  // floats truncate toward zero
  void set_from_double(const std::vector<int64_t>& idx, double v) const;
  void set_from_int(const std::vector<int64_t>& idx, int64_t v) const;
  // Linear variants: `linear` walks the logical row-major order, whatever the strides.
  int64_t linear_offset(int64_t linear) const;
  double get_double(int64_t linear) const;
  int64_t get_int(int64_t linear) const;
  void set_double(int64_t linear, double v) const;
  void set_int(int64_t linear, int64_t v) const;
  // The single value of a one-element tensor, as double.
  double item() const;
  // All values in row-major order converted to T.
  template <class T>
  std::vector<T> to_vector() const;

  // -- views and copies --
  // A view of the same storage; `offset` is absolute (in elements), like torch.as_strided.
  Tensor as_strided(const Shape& sizes, const Shape& strides, int64_t offset) const;
  // The same over the storage's bytes read as `dtype` (offset in elements of `dtype`): how an
  // executor carves typed buffers out of one byte arena.
  Tensor reinterpret(DType dtype, const Shape& sizes, const Shape& strides, int64_t offset) const;
  // This tensor if contiguous, else a row-major copy.
  Tensor contiguous() const;
  // A row-major copy with its own storage.
  Tensor clone() const;
  // A complex tensor's view as its real parts' dtype with a last dim of 2 (real, imaginary), sharing
  // storage: torch.view_as_real. Throws unless the dtype is complex.
  Tensor as_real_view() const;
  // Converted copy (a clone when dtype is unchanged).
  Tensor to(DType dtype) const;
  // Writes src's values (converted to this dtype) into this tensor's elements; same sizes. A real
  // source fills a complex tensor's real parts (imaginary 0); a complex source gives a real tensor
  // its real parts (as torch, which warns) and a bool one whether either part is nonzero.
  void copy_from(const Tensor& src) const;
  // Sets every element to v (converted to this dtype).
  void fill(double v) const;

  // -- comparison and printing --
  // Same sizes and dtype and the same bits in every element (so NaN == NaN with equal bits, and
  // +0.0 != -0.0). Strides may differ.
  bool equal(const Tensor& other) const;
  // Same sizes and |a - b| <= atol + rtol * |b| elementwise, compared as double (dtypes may
  // differ); infinities must match exactly; NaNs match only when equal_nan. Two complex tensors
  // compare their real and imaginary parts so; complex against real is false.
  bool allclose(const Tensor& other, double rtol = 1e-5, double atol = 1e-8,
                bool equal_nan = false) const;
  // "float32(2, 3) min=-1 max=5 mean=2.5 [1, 2, 3, 4, 5, -1]": shape, dtype, min/max/mean
  // (over non-NaN values, with a nan= count when any) and the first few values.
  std::string summary() const;
  // Nested brackets like numpy ("[[1, 2], [3, 4]]"); tensors with more than max_elems elements
  // print their first max_elems values flat, followed by "...". Complex elements print as "1+2j".
  std::string to_string(int64_t max_elems = 64) const;

 private:
  Tensor(std::shared_ptr<Storage> storage, TensorMeta meta, int64_t offset)
      : storage_(std::move(storage)), meta_(std::move(meta)), offset_(offset) {}

  std::shared_ptr<Storage> storage_;
  TensorMeta meta_;
  int64_t offset_ = 0;
};

// ---- template definitions -----------------------------------------------------------------------

template <class T>
T* Tensor::data() const {
  if (dtype_of<T>() != dtype())
    throw Error("runtime", "Tensor::data",
                "requested " + std::string(dtype_name(dtype_of<T>())) +
                    " data from a tensor of dtype " + std::string(dtype_name(dtype())));
  return reinterpret_cast<T*>(data_ptr());
}

template <class T>
Tensor Tensor::from_vector(const Shape& sizes, const std::vector<T>& values) {
  return from_vector(sizes, values, dtype_of<T>());
}

template <class T>
Tensor Tensor::from_vector(const Shape& sizes, const std::vector<T>& values, DType dtype) {
  Tensor t = empty(sizes, dtype);
  if (static_cast<int64_t>(values.size()) != t.numel())
    throw Error("runtime", "Tensor::from_vector",
                std::to_string(values.size()) + " values given for shape " + shape_str(sizes) +
                    " (" + std::to_string(t.numel()) + " elements)");
  dispatch(dtype, [&](auto tag) {
    using D = typename decltype(tag)::type;
    D* out = t.data<D>();
    for (size_t i = 0; i < values.size(); ++i) out[i] = convert_value<D>(static_cast<T>(values[i]));
  });
  return t;
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  Tensor c = contiguous();
  std::vector<T> out(static_cast<size_t>(c.numel()));
  dispatch(c.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const S* in = c.data<S>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = convert_value<T>(in[i]);
  });
  return out;
}

}  // namespace stax
