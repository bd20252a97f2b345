// TensorMeta: what the compiler knows of a value without its data (sizes, strides, dtype, device).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/types/dtype.h"

namespace stax {

using Shape = std::vector<int64_t>;

struct TensorMeta {
  Shape sizes;
  Shape strides;  // in elements
  DType dtype = DType::Float32;
  std::string device = "cpu";
  // Bit d set: sizes[d] is an upper bound and the actual size is known only when the op has run
  // (nonzero's row count). Such a value may only be returned by its graph (Graph::call rejects
  // it as an argument), so no inference ever reads the bound as a size (docs/DECISIONS.md).
  uint32_t runtime_sized_dims = 0;

  int64_t dim() const { return static_cast<int64_t>(sizes.size()); }
  int64_t numel() const;
  int64_t nbytes() const { return numel() * static_cast<int64_t>(dtype_size(dtype)); }
  bool is_contiguous() const;
  bool runtime_sized() const { return runtime_sized_dims != 0; }

  // Row-major contiguous meta of the given sizes.
  static TensorMeta contiguous(Shape sizes, DType dtype = DType::Float32, std::string device = "cpu");
  bool operator==(const TensorMeta&) const = default;
};

// Both throw stax::Error (stage "shape") when the product of the sizes overflows int64.
Shape contiguous_strides(const Shape& sizes);
int64_t shape_numel(const Shape& sizes);
// Checks that a value of these sizes and dtype can exist: no negative size, and the element
// count, the contiguous strides and the byte size all fit in int64. Throws stax::Error (stage
// "shape") naming `where` (a node, "%name") otherwise.
void check_extent(const Shape& sizes, DType dtype, const std::string& where);
// "(64, 128)", "(64,)", "()": the Python tuple spelling the listings use.
std::string shape_str(const Shape& sizes);
// "[64, 128]": list spelling.
std::string shape_list_str(const Shape& sizes);
// Wraps a possibly negative dim into [0, rank); throws stax::Error naming `where` when out of range.
int64_t wrap_dim(int64_t dim, int64_t rank, const std::string& where);

}  // namespace stax
