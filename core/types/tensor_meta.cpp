#include "core/types/tensor_meta.h"

#include <algorithm>

#include "core/support/error.h"

namespace stax {

namespace {

[[noreturn]] void overflow(const Shape& sizes, const std::string& where, const std::string& what) {
  throw Error("shape", where,
              "shape " + shape_str(sizes) + " is too large: its " + what +
                  " overflows a 64-bit integer");
}

}  // namespace

int64_t shape_numel(const Shape& sizes) {
  int64_t n = 1;
  for (auto s : sizes)
    if (__builtin_mul_overflow(n, s, &n)) overflow(sizes, "", "element count");
  return n;
}

void check_extent(const Shape& sizes, DType dtype, const std::string& where) {
  for (int64_t s : sizes)
    if (s < 0) throw Error("shape", where, "negative size in shape " + shape_str(sizes));
  int64_t n = 1;  // the product of max(size, 1): bounds the numel and every contiguous stride
  for (int64_t s : sizes)
    if (__builtin_mul_overflow(n, std::max<int64_t>(s, 1), &n))
      overflow(sizes, where, "element count");
  int64_t bytes = 0;
  if (__builtin_mul_overflow(n, static_cast<int64_t>(dtype_size(dtype)), &bytes))
    overflow(sizes, where, "size in bytes (" + std::string(dtype_name(dtype)) + ")");
}

int64_t TensorMeta::numel() const { return shape_numel(sizes); }

Shape contiguous_strides(const Shape& sizes) {
  Shape st(sizes.size());
  int64_t acc = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    st[i] = acc;
    if (__builtin_mul_overflow(acc, std::max<int64_t>(sizes[i], 1), &acc))
      overflow(sizes, "", "element count");
  }
  return st;
}

bool TensorMeta::is_contiguous() const {
  int64_t acc = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] != 1 && strides[i] != acc) return false;
    acc *= sizes[i];
  }
  return true;
}

TensorMeta TensorMeta::contiguous(Shape sizes, DType dtype, std::string device) {
  TensorMeta m;
  m.strides = contiguous_strides(sizes);
  m.sizes = std::move(sizes);
  m.dtype = dtype;
  m.device = std::move(device);
  return m;
}

std::string shape_str(const Shape& sizes) {
  std::string s = "(";
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(sizes[i]);
  }
  if (sizes.size() == 1) s += ",";
  return s + ")";
}

std::string shape_list_str(const Shape& sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(sizes[i]);
  }
  return s + "]";
}

int64_t wrap_dim(int64_t dim, int64_t rank, const std::string& where) {
  int64_t r = std::max<int64_t>(rank, 1);  // a 0-d tensor accepts dims -1 and 0
  if (dim < -r || dim >= r)
    throw Error("shape", where,
                "dimension " + std::to_string(dim) + " out of range for a tensor of rank " +
                    std::to_string(rank) + " (expected in [" + std::to_string(-r) + ", " +
                    std::to_string(r - 1) + "])");
  return dim < 0 ? dim + r : dim;
}

}  // namespace stax
