#include "core/tensor/tensor.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "core/tensor/random.h"

namespace stax {

// ---- storage ------------------------------------------------------------------------------------

namespace {

// Large buffers ask Linux for transparent huge pages (MADV_HUGEPAGE: honoured when the system's
// THP mode is "always" or "madvise", a no-op under "never"), on the 2 MB-aligned part of the
// range, before the first touch. A kernel streaming a 64 MB tensor then misses the TLB 512 times
// less often: on the AMD EPYC of bench/README.md a row-sum of 4096² floats read at ~27 GB/s on
// 4 KB pages and 33-39 GB/s on 2 MB pages (one thread, a hand-written loop). Advice only: a
// refusal changes nothing but the speed.
void advise_huge_pages(std::byte* data, size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  if (bytes < 2 * kHuge) return;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(data);
  const uintptr_t first = (begin + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t last = (begin + bytes) & ~(kHuge - 1);
  if (last > first) (void)madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
#else
  (void)data;
  (void)bytes;
#endif
}

}  // namespace

Storage::Storage(size_t nbytes) : nbytes_(nbytes) {
  // Round up so that a zero-byte request still yields a valid, aligned pointer.
  size_t alloc = std::max<size_t>((nbytes + kAlignment - 1) / kAlignment * kAlignment, kAlignment);
  // The nothrow form: a failure is a null pointer here in every build (a sanitizer's allocator
  // aborts on a failed throwing new, but returns null from this one with
  // allocator_may_return_null=1, scripts/sanitize.sh).
  data_ = static_cast<std::byte*>(
      ::operator new(alloc, std::align_val_t{kAlignment}, std::nothrow));
  if (!data_)  // callers add the node or buffer it was for
    throw Error("runtime", "", "out of memory: cannot allocate " + std::to_string(nbytes) + " bytes");
  advise_huge_pages(data_, alloc);
  std::memset(data_, 0, alloc);
}

Storage::Storage(std::byte* data, size_t nbytes, std::shared_ptr<void> owner)
    : data_(data), nbytes_(nbytes), borrowed_(true), owner_(std::move(owner)) {
  if (!data_) throw Error("runtime", "Storage", "borrowed storage at a null address");
}

Storage::~Storage() {
  if (!borrowed_) ::operator delete(data_, std::align_val_t{kAlignment});
  // borrowed: owner_'s destructor releases the bytes (or not: they are its business)
}

// ---- helpers ------------------------------------------------------------------------------------

namespace {

constexpr const char* kStage = "runtime";

void check_sizes(const Shape& sizes, const char* where) {
  for (int64_t s : sizes)
    if (s < 0)
      throw Error(kStage, where, "negative size in shape " + shape_str(sizes));
}

// Calls f(offset_a, offset_b) for every element of `sizes` in row-major order, where the offsets
// (in elements) walk two layouts of the same logical shape.
template <class F>
void for_each_offset2(const Shape& sizes, const Shape& strides_a, int64_t base_a,
                      const Shape& strides_b, int64_t base_b, F&& f) {
  if (shape_numel(sizes) == 0) return;
  size_t nd = sizes.size();
  if (nd == 0) {
    f(base_a, base_b);
    return;
  }
  std::vector<int64_t> idx(nd, 0);
  int64_t inner = sizes[nd - 1], sa = strides_a[nd - 1], sb = strides_b[nd - 1];
  int64_t oa = base_a, ob = base_b;
  for (;;) {
    for (int64_t i = 0; i < inner; ++i) f(oa + i * sa, ob + i * sb);
    size_t d = nd - 1;
    for (;;) {
      if (d == 0) return;
      --d;
      if (++idx[d] < sizes[d]) {
        oa += strides_a[d];
        ob += strides_b[d];
        break;
      }
      oa -= (sizes[d] - 1) * strides_a[d];
      ob -= (sizes[d] - 1) * strides_b[d];
      idx[d] = 0;
    }
  }
}

template <class F>
void for_each_offset(const Shape& sizes, const Shape& strides, int64_t base, F&& f) {
  for_each_offset2(sizes, strides, base, strides, base, [&](int64_t a, int64_t) { f(a); });
}

template <class T>
T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <class T>
void store(std::byte* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

double load_double(DType dt, const std::byte* p) {
  return dispatch(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return convert_value<double>(load<T>(p));
  });
}

int64_t load_int(DType dt, const std::byte* p) {
  return dispatch(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return convert_value<int64_t>(load<T>(p));
  });
}

void store_double(DType dt, std::byte* p, double v) {
  dispatch(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    store<T>(p, convert_value<T>(v));
  });
}

void store_int(DType dt, std::byte* p, int64_t v) {
  dispatch(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    store<T>(p, convert_value<T>(v));
  });
}

std::string format_double(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// dst.copy_from(src) where either is complex: complex -> complex part by part (converting
// complex64 <-> complex128); real -> complex into the real parts with zero imaginary parts;
// complex -> real the real parts (torch discards the imaginary parts, with a warning), complex ->
// bool whether either part is nonzero.
void copy_complex(const Tensor& dst, const Tensor& src) {
  if (!is_complex(dst.dtype())) {
    Tensor p = src.as_real_view();
    if (dst.dtype() == DType::Bool) {
      for (int64_t i = 0; i < dst.numel(); ++i)
        dst.set_int(i, p.get_double(2 * i) != 0 || p.get_double(2 * i + 1) != 0);
      return;
    }
    Shape st(p.strides().begin(), p.strides().end() - 1);
    dst.copy_from(p.as_strided(src.sizes(), st, p.storage_offset()));
    return;
  }
  Tensor d = dst.as_real_view();
  if (is_complex(src.dtype())) {
    d.copy_from(src.as_real_view());
    return;
  }
  Shape st(d.strides().begin(), d.strides().end() - 1);
  d.as_strided(dst.sizes(), st, d.storage_offset()).copy_from(src);
  d.as_strided(dst.sizes(), st, d.storage_offset() + 1).fill(0.0);
}

}  // namespace

// ---- factories ----------------------------------------------------------------------------------

Tensor Tensor::empty(const Shape& sizes, DType dtype) {
  check_sizes(sizes, "Tensor::empty");
  TensorMeta meta = TensorMeta::contiguous(sizes, dtype);
  auto storage = std::make_shared<Storage>(static_cast<size_t>(meta.nbytes()));
  return Tensor(std::move(storage), std::move(meta), 0);
}

Tensor Tensor::from_external(void* data, const Shape& sizes, const Shape& strides, DType dtype,
                             std::shared_ptr<void> owner) {
  const char* where = "Tensor::from_external";
  check_sizes(sizes, where);
  if (sizes.size() != strides.size())
    throw Error(kStage, where,
                "sizes " + shape_str(sizes) + " and strides " + shape_str(strides) +
                    " differ in rank");
  check_extent(sizes, dtype, where);
  if (shape_numel(sizes) == 0) return empty_strided(sizes, strides, dtype);
  const int64_t item = static_cast<int64_t>(dtype_size(dtype));
  int64_t last = 0;  // the farthest element the view reaches
  bool overflow = false;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (strides[d] < 0) throw Error(kStage, where, "negative stride in " + shape_str(strides));
    int64_t reach = 0;
    overflow = overflow || __builtin_mul_overflow(sizes[d] - 1, strides[d], &reach) ||
               __builtin_add_overflow(last, reach, &last);
  }
  int64_t bytes = 0;
  if (overflow || __builtin_mul_overflow(last + 1, item, &bytes))
    throw Error(kStage, where,
                "sizes " + shape_str(sizes) + " with strides " + shape_str(strides) +
                    " reach past the address space");
  if (!data) throw Error(kStage, where, "null data pointer for " + shape_str(sizes));
  if (reinterpret_cast<uintptr_t>(data) % static_cast<uintptr_t>(item) != 0)
    throw Error(kStage, where,
                "data pointer not aligned to the " + std::to_string(item) + "-byte elements of " +
                    std::string(dtype_name(dtype)));
  auto storage = std::make_shared<Storage>(static_cast<std::byte*>(data),
                                           static_cast<size_t>(bytes), std::move(owner));
  return Tensor(std::move(storage), TensorMeta{sizes, strides, dtype, "cpu"}, 0);
}

Tensor Tensor::empty_strided(const Shape& sizes, const Shape& strides, DType dtype) {
  check_sizes(sizes, "Tensor::empty_strided");
  if (sizes.size() != strides.size())
    throw Error(kStage, "Tensor::empty_strided",
                "sizes " + shape_str(sizes) + " and strides " + shape_str(strides) +
                    " differ in rank");
  int64_t extent = 0;  // one past the largest element offset
  if (shape_numel(sizes) > 0) {
    extent = 1;
    for (size_t d = 0; d < sizes.size(); ++d) {
      if (strides[d] < 0)
        throw Error(kStage, "Tensor::empty_strided", "negative stride in " + shape_str(strides));
      extent += (sizes[d] - 1) * strides[d];
    }
  }
  TensorMeta meta{sizes, strides, dtype, "cpu"};
  auto storage =
      std::make_shared<Storage>(static_cast<size_t>(extent) * dtype_size(dtype));
  return Tensor(std::move(storage), std::move(meta), 0);
}

Tensor Tensor::zeros(const Shape& sizes, DType dtype) { return empty(sizes, dtype); }

Tensor Tensor::ones(const Shape& sizes, DType dtype) { return full(sizes, 1.0, dtype); }

Tensor Tensor::full(const Shape& sizes, double value, DType dtype) {
  Tensor t = empty(sizes, dtype);
  t.fill(value);
  return t;
}

Tensor Tensor::scalar(double value, DType dtype) { return full({}, value, dtype); }

Tensor Tensor::arange(int64_t n, DType dtype) {
  if (n < 0) throw Error(kStage, "Tensor::arange", "negative length " + std::to_string(n));
  Tensor t = empty({n}, dtype);
  dispatch(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* out = t.data<T>();
    for (int64_t i = 0; i < n; ++i) out[i] = convert_value<T>(i);
  });
  return t;
}

Tensor Tensor::from_data(const Shape& sizes, DType dtype, const void* data) {
  Tensor t = empty(sizes, dtype);
  if (t.nbytes() > 0) std::memcpy(t.data_ptr(), data, static_cast<size_t>(t.nbytes()));
  if (dtype == DType::Bool) {  // keep the invariant that bools are stored as 0 / 1
    auto* p = reinterpret_cast<uint8_t*>(t.data_ptr());
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = p[i] != 0;
  }
  return t;
}

// ---- random -------------------------------------------------------------------------------------

Tensor Tensor::rand(const Shape& sizes, DType dtype, uint64_t seed, uint64_t offset) {
  if (!is_floating(dtype))
    throw Error(kStage, "Tensor::rand",
                "uniform random values need a floating dtype, got " +
                    std::string(dtype_name(dtype)));
  Tensor t = empty(sizes, dtype);
  dispatch(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (is_floating_element_v<T>) {
      T* out = t.data<T>();
      for (int64_t i = 0; i < t.numel(); ++i) {
        PhiloxCounter w = philox_words(seed, offset + static_cast<uint64_t>(i));
        if constexpr (std::is_same_v<T, double>)
          out[i] = uniform64_from_words(w[0], w[1]);
        else if constexpr (std::is_same_v<T, float>)
          out[i] = uniform_from_word(w[0], 24);
        else if constexpr (std::is_same_v<T, Half>)
          out[i] = Half(uniform_from_word(w[0], 11));
        else
          out[i] = BFloat16(uniform_from_word(w[0], 8));
      }
    }
  });
  return t;
}

Tensor Tensor::randn(const Shape& sizes, DType dtype, uint64_t seed, uint64_t offset) {
  if (is_complex(dtype)) {  // standard normal real and imaginary parts, interleaved
    Shape parts = sizes;
    parts.push_back(2);
    Tensor t = empty(sizes, dtype);
    t.as_real_view().copy_from(randn(parts, complex_to_real(dtype), seed, offset));
    return t;
  }
  if (!is_floating(dtype))
    throw Error(kStage, "Tensor::randn",
                "normal random values need a floating dtype, got " +
                    std::string(dtype_name(dtype)));
  Tensor t = empty(sizes, dtype);
  dispatch(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* out = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i)
      out[i] = convert_value<T>(normal_from_words(philox_words(seed, offset + uint64_t(i))));
  });
  return t;
}

Tensor Tensor::randint(const Shape& sizes, int64_t low, int64_t high, DType dtype, uint64_t seed,
                       uint64_t offset) {
  if (low >= high)
    throw Error(kStage, "Tensor::randint",
                "empty range [" + std::to_string(low) + ", " + std::to_string(high) + ")");
  uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  Tensor t = empty(sizes, dtype);
  dispatch(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* out = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      PhiloxCounter w = philox_words(seed, offset + static_cast<uint64_t>(i));
      uint64_t r = ((static_cast<uint64_t>(w[0]) << 32) | w[1]) % range;
      out[i] = convert_value<T>(static_cast<int64_t>(static_cast<uint64_t>(low) + r));
    }
  });
  return t;
}

// ---- metadata and element access ----------------------------------------------------------------

int64_t Tensor::size(int64_t d) const {
  if (dim() == 0) throw Error(kStage, "Tensor::size", "a 0-d tensor has no dimensions");
  return meta_.sizes[static_cast<size_t>(wrap_dim(d, dim(), "Tensor::size"))];
}

int64_t Tensor::stride(int64_t d) const {
  if (dim() == 0) throw Error(kStage, "Tensor::stride", "a 0-d tensor has no dimensions");
  return meta_.strides[static_cast<size_t>(wrap_dim(d, dim(), "Tensor::stride"))];
}

int64_t Tensor::offset_of(const std::vector<int64_t>& idx) const {
  if (static_cast<int64_t>(idx.size()) != dim())
    throw Error(kStage, "Tensor index",
                std::to_string(idx.size()) + " indices given for a tensor of rank " +
                    std::to_string(dim()));
  int64_t off = offset_;
  for (size_t d = 0; d < idx.size(); ++d) {
    int64_t i = idx[d], n = meta_.sizes[d];
    if (i < -n || i >= n)
      throw Error(kStage, "Tensor index",
                  "index " + std::to_string(i) + " is out of bounds for dimension " +
                      std::to_string(d) + " with size " + std::to_string(n));
    if (i < 0) i += n;
    off += i * meta_.strides[d];
  }
  return off;
}

int64_t Tensor::linear_offset(int64_t linear) const {
  int64_t n = numel();
  if (linear < 0 || linear >= n)
    throw Error(kStage, "Tensor index",
                "linear index " + std::to_string(linear) + " is out of bounds for " +
                    std::to_string(n) + " elements");
  int64_t off = offset_;
  for (size_t d = meta_.sizes.size(); d-- > 0;) {
    int64_t s = meta_.sizes[d];
    off += (linear % s) * meta_.strides[d];
    linear /= s;
  }
  return off;
}

double Tensor::item_as_double(const std::vector<int64_t>& idx) const {
  return load_double(dtype(), storage_->data() + offset_of(idx) * itemsize());
}

int64_t Tensor::item_as_int(const std::vector<int64_t>& idx) const {
  return load_int(dtype(), storage_->data() + offset_of(idx) * itemsize());
}

void Tensor::set_from_double(const std::vector<int64_t>& idx, double v) const {
  store_double(dtype(), storage_->data() + offset_of(idx) * itemsize(), v);
}

void Tensor::set_from_int(const std::vector<int64_t>& idx, int64_t v) const {
  store_int(dtype(), storage_->data() + offset_of(idx) * itemsize(), v);
}

double Tensor::get_double(int64_t linear) const {
  return load_double(dtype(), storage_->data() + linear_offset(linear) * itemsize());
}

int64_t Tensor::get_int(int64_t linear) const {
  return load_int(dtype(), storage_->data() + linear_offset(linear) * itemsize());
}

void Tensor::set_double(int64_t linear, double v) const {
  store_double(dtype(), storage_->data() + linear_offset(linear) * itemsize(), v);
}

void Tensor::set_int(int64_t linear, int64_t v) const {
  store_int(dtype(), storage_->data() + linear_offset(linear) * itemsize(), v);
}

double Tensor::item() const {
  if (numel() != 1)
    throw Error(kStage, "Tensor::item",
                "a tensor of shape " + shape_str(sizes()) + " has " + std::to_string(numel()) +
                    " elements, not one");
  return get_double(0);
}

// ---- views and copies ---------------------------------------------------------------------------

Tensor Tensor::as_strided(const Shape& sizes, const Shape& strides, int64_t offset) const {
  const char* where = "Tensor::as_strided";
  check_sizes(sizes, where);
  if (sizes.size() != strides.size())
    throw Error(kStage, where,
                "sizes " + shape_str(sizes) + " and strides " + shape_str(strides) +
                    " differ in rank");
  if (offset < 0) throw Error(kStage, where, "negative storage offset " + std::to_string(offset));
  int64_t last = offset;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (strides[d] < 0) throw Error(kStage, where, "negative stride in " + shape_str(strides));
    if (sizes[d] > 0) last += (sizes[d] - 1) * strides[d];
  }
  int64_t capacity = static_cast<int64_t>(storage_->nbytes()) / itemsize();
  if (shape_numel(sizes) > 0 && last >= capacity)
    throw Error(kStage, where,
                "view of sizes " + shape_str(sizes) + ", strides " + shape_str(strides) +
                    ", offset " + std::to_string(offset) + " reaches element " +
                    std::to_string(last) + " of a storage of " + std::to_string(capacity) +
                    " elements");
  return Tensor(storage_, TensorMeta{sizes, strides, dtype(), meta_.device}, offset);
}

Tensor Tensor::reinterpret(DType dtype, const Shape& sizes, const Shape& strides,
                           int64_t offset) const {
  Tensor t(storage_, TensorMeta{{0}, {1}, dtype, meta_.device}, 0);
  return t.as_strided(sizes, strides, offset);
}

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }

Tensor Tensor::clone() const {
  Tensor t = empty(sizes(), dtype());
  t.copy_from(*this);
  return t;
}

Tensor Tensor::as_real_view() const {
  if (!is_complex(dtype()))
    throw Error(kStage, "Tensor::as_real_view",
                "expected a complex tensor, got " + std::string(dtype_name(dtype())));
  Shape sz = sizes(), st = strides();
  for (auto& x : st) x *= 2;
  sz.push_back(2);
  st.push_back(1);
  return reinterpret(complex_to_real(dtype()), sz, st, offset_ * 2);
}

Tensor Tensor::to(DType dtype) const {
  Tensor t = empty(sizes(), dtype);
  t.copy_from(*this);
  return t;
}

void Tensor::copy_from(const Tensor& src) const {
  if (src.sizes() != sizes())
    throw Error(kStage, "Tensor::copy_from",
                "cannot copy a tensor of shape " + shape_str(src.sizes()) +
                    " into one of shape " + shape_str(sizes()));
  if (src.storage_ == storage_ && src.offset_ == offset_ && src.meta_ == meta_) return;
  if (src.storage_ == storage_) {  // possibly overlapping views: copy through a temporary
    copy_from(src.clone());
    return;
  }
  if (src.dtype() == dtype() && src.is_contiguous() && is_contiguous()) {
    if (nbytes() > 0) std::memcpy(data_ptr(), src.data_ptr(), static_cast<size_t>(nbytes()));
    return;
  }
  if (is_complex(dtype()) || is_complex(src.dtype())) {
    copy_complex(*this, src);
    return;
  }
  std::byte* dst_base = storage_->data();
  const std::byte* src_base = src.storage_->data();
  dispatch(dtype(), [&](auto dtag) {
    using D = typename decltype(dtag)::type;
    dispatch(src.dtype(), [&](auto stag) {
      using S = typename decltype(stag)::type;
      for_each_offset2(sizes(), strides(), offset_, src.strides(), src.offset_,
                       [&](int64_t od, int64_t os) {
                         store<D>(dst_base + od * int64_t(sizeof(D)),
                                  convert_value<D>(load<S>(src_base + os * int64_t(sizeof(S)))));
                       });
    });
  });
}

void Tensor::fill(double v) const {
  if (is_complex(dtype())) {  // v + 0j
    Tensor parts = as_real_view();
    parts.as_strided(sizes(), Shape(parts.strides().begin(), parts.strides().end() - 1),
                     parts.storage_offset()).fill(v);
    parts.as_strided(sizes(), Shape(parts.strides().begin(), parts.strides().end() - 1),
                     parts.storage_offset() + 1).fill(0.0);
    return;
  }
  std::byte* base = storage_->data();
  dispatch(dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T value = convert_value<T>(v);
    for_each_offset(sizes(), strides(), offset_,
                    [&](int64_t o) { store<T>(base + o * int64_t(sizeof(T)), value); });
  });
}

// ---- comparison and printing --------------------------------------------------------------------

bool Tensor::equal(const Tensor& other) const {
  if (sizes() != other.sizes() || dtype() != other.dtype()) return false;
  const std::byte* a = storage_->data();
  const std::byte* b = other.storage_->data();
  size_t item = static_cast<size_t>(itemsize());
  bool same = true;
  for_each_offset2(sizes(), strides(), offset_, other.strides(), other.offset_,
                   [&](int64_t oa, int64_t ob) {
                     if (same && std::memcmp(a + oa * int64_t(item), b + ob * int64_t(item),
                                             item) != 0)
                       same = false;
                   });
  return same;
}

bool Tensor::allclose(const Tensor& other, double rtol, double atol, bool equal_nan) const {
  if (sizes() != other.sizes()) return false;
  if (is_complex(dtype()) || is_complex(other.dtype())) {
    if (!is_complex(dtype()) || !is_complex(other.dtype())) return false;
    return as_real_view().allclose(other.as_real_view(), rtol, atol, equal_nan);
  }
  const std::byte* a = storage_->data();
  const std::byte* b = other.storage_->data();
  int64_t ia = itemsize(), ib = other.itemsize();
  DType da = dtype(), db = other.dtype();
  bool close = true;
  for_each_offset2(sizes(), strides(), offset_, other.strides(), other.offset_,
                   [&](int64_t oa, int64_t ob) {
                     if (!close) return;
                     double x = load_double(da, a + oa * ia), y = load_double(db, b + ob * ib);
                     if (std::isnan(x) || std::isnan(y)) {
                       close = equal_nan && std::isnan(x) && std::isnan(y);
                     } else if (x != y) {
                       close = !std::isinf(x) && !std::isinf(y) &&
                               std::fabs(x - y) <= atol + rtol * std::fabs(y);
                     }
                   });
  return close;
}

namespace {

std::string format_element(const Tensor& t, int64_t linear) {
  DType dt = t.dtype();
  if (dt == DType::Bool) return t.get_int(linear) ? "true" : "false";
  if (dt == DType::UInt64) return std::to_string(static_cast<uint64_t>(t.get_int(linear)));
  if (is_integral(dt)) return std::to_string(t.get_int(linear));
  if (is_complex(dt)) {
    Tensor parts = t.as_real_view();
    double re = parts.get_double(2 * linear), im = parts.get_double(2 * linear + 1);
    std::string i = format_double(im);
    return format_double(re) + (i[0] == '-' ? "" : "+") + i + "j";
  }
  return format_double(t.get_double(linear));
}

void format_nested(const Tensor& t, size_t d, int64_t& linear, std::string& out) {
  if (d == t.sizes().size()) {
    out += format_element(t, linear++);
    return;
  }
  out += '[';
  for (int64_t i = 0; i < t.sizes()[d]; ++i) {
    if (i) out += ", ";
    format_nested(t, d + 1, linear, out);
  }
  out += ']';
}

}  // namespace

std::string Tensor::summary() const {
  std::string s = std::string(dtype_name(dtype())) + shape_str(sizes());
  int64_t n = numel();
  if (n == 0) return s + " (empty)";
  if (is_complex(dtype())) return s + " " + to_string(8);
  double lo = 0, hi = 0, sum = 0;
  int64_t count = 0, nans = 0;
  for (int64_t i = 0; i < n; ++i) {
    double v = get_double(i);
    if (std::isnan(v)) {
      ++nans;
      continue;
    }
    if (count == 0 || v < lo) lo = v;
    if (count == 0 || v > hi) hi = v;
    sum += v;
    ++count;
  }
  if (count > 0)
    s += " min=" + format_double(lo) + " max=" + format_double(hi) +
         " mean=" + format_double(sum / static_cast<double>(count));
  if (nans > 0) s += " nan=" + std::to_string(nans);
  constexpr int64_t kShown = 8;
  s += " [";
  for (int64_t i = 0; i < std::min(n, kShown); ++i) {
    if (i) s += ", ";
    s += format_element(*this, i);
  }
  return s + (n > kShown ? ", ...]" : "]");
}

std::string Tensor::to_string(int64_t max_elems) const {
  std::string out;
  int64_t n = numel();
  if (n > max_elems) {
    out += '[';
    for (int64_t i = 0; i < max_elems; ++i) {
      if (i) out += ", ";
      out += format_element(*this, i);
    }
    return out + (max_elems > 0 ? ", ...]" : "...]");
  }
  int64_t linear = 0;
  format_nested(*this, 0, linear, out);
  return out;
}

}  // namespace stax
