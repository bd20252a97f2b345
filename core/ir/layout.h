// Layouts (seed Def. 6.2, §6.4): shape, strides and offset of a buffer's storage. A FixedLayout's
// strides are final (inputs, outputs, buffers read by extern kernels, views of fixed buffers); a
// FlexibleLayout's strides may still change, and GraphLowering freezes it once lowering ends.
#pragma once

#include <string>
#include <vector>

#include "core/types/dtype.h"
#include "core/types/tensor_meta.h"
#include "core/ir/expr.h"

namespace stax {

struct Layout {
  enum class Kind { Fixed, Flexible };
  Kind kind = Kind::Fixed;
  std::string device = "cpu";  // "cpu", "cuda:0"
  DType dtype = DType::Float32;
  Shape size;
  Shape stride;  // in elements; a flexible layout holds provisional row-major strides
  int64_t offset = 0;

  static Layout fixed(std::string device, DType dtype, Shape size, Shape stride,
                      int64_t offset = 0);
  static Layout fixed_contiguous(std::string device, DType dtype, Shape size);
  static Layout flexible(std::string device, DType dtype, Shape size);

  bool is_fixed() const { return kind == Kind::Fixed; }
  // The storage offset of element `index` (Def. 6.2): offset + sum stride_j * index_j.
  // Dimensions of extent 1 and stride-0 dimensions contribute nothing.
  Expr index(const std::vector<Expr>& index) const;
  // Freezes the layout with strides in `fill_order` (fill_order[0] gets stride 1, the next the
  // product of the sizes before it, ...); an empty order means row-major.
  void freeze(const std::vector<int>& fill_order = {});
  // Elements of storage spanned: offset + 1 + sum (size_j - 1) * stride_j (0 if any size is 0).
  int64_t storage_numel() const;
  // "FixedLayout('cpu', float32, size=[64, 128], stride=[128, 1])"; `tuple_size` spells the size
  // as a Python tuple, "(256, 512)", as Listing 6.3 does for a Pointwise buffer. A nonzero offset
  // is appended as ", offset=N".
  std::string str(bool tuple_size = false) const;
  bool operator==(const Layout&) const = default;
};

// The device type of a device string: "cuda:0" -> "cuda".
std::string device_type(const std::string& device);

}  // namespace stax
