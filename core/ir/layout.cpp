#include "core/ir/layout.h"

#include <algorithm>
#include <cassert>

namespace stax {

Layout Layout::fixed(std::string device, DType dtype, Shape size, Shape stride, int64_t offset) {
  assert(size.size() == stride.size());
  Layout l;
  l.kind = Kind::Fixed;
  l.device = std::move(device);
  l.dtype = dtype;
  l.size = std::move(size);
  l.stride = std::move(stride);
  l.offset = offset;
  return l;
}

Layout Layout::fixed_contiguous(std::string device, DType dtype, Shape size) {
  Shape stride = contiguous_strides(size);
  return fixed(std::move(device), dtype, std::move(size), std::move(stride));
}

Layout Layout::flexible(std::string device, DType dtype, Shape size) {
  Layout l = fixed_contiguous(std::move(device), dtype, std::move(size));
  l.kind = Kind::Flexible;
  return l;
}

Expr Layout::index(const std::vector<Expr>& idx) const {
  assert(idx.size() == size.size());
  // Scratch lists reused per thread (every loader call of every buffer comes here): cleared
  // after use so that no expression is held.
  thread_local std::vector<Expr> terms;
  thread_local std::vector<int64_t> coeffs;
  terms.clear();
  coeffs.clear();
  for (size_t j = 0; j < size.size(); ++j)
    if (size[j] != 1 && stride[j] != 0) {
      terms.push_back(idx[j]);
      coeffs.push_back(stride[j]);
    }
  Expr e = linear_sum(terms, coeffs, offset);
  terms.clear();
  return e;
}

void Layout::freeze(const std::vector<int>& fill_order) {
  if (!fill_order.empty()) {
    assert(fill_order.size() == size.size());
    int64_t acc = 1;
    for (int d : fill_order) {
      stride[static_cast<size_t>(d)] = acc;
      acc *= std::max<int64_t>(size[static_cast<size_t>(d)], 1);
    }
  } else {
    stride = contiguous_strides(size);
  }
  kind = Kind::Fixed;
}

int64_t Layout::storage_numel() const {
  int64_t n = offset + 1;
  for (size_t j = 0; j < size.size(); ++j) {
    if (size[j] == 0) return 0;
    n += (size[j] - 1) * stride[j];
  }
  return n;
}

std::string Layout::str(bool tuple_size) const {
  std::string s = is_fixed() ? "FixedLayout(" : "FlexibleLayout(";
  s += "'" + device + "', " + std::string(dtype_name(dtype)) + ", size=";
  s += tuple_size ? shape_str(size) : shape_list_str(size);
  s += ", stride=" + shape_list_str(stride);
  if (offset != 0) s += ", offset=" + std::to_string(offset);
  return s + ")";
}

std::string device_type(const std::string& device) {
  auto colon = device.find(':');
  return colon == std::string::npos ? device : device.substr(0, colon);
}

}  // namespace stax
