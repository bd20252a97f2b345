#include "core/ops/common/kernel_utils.h"

#include <algorithm>

namespace stax::kernels {

Tensor scalar_tensor(const Arg& a, DType compute) {
  Tensor t = Tensor::empty({}, compute);
  dispatch_compute(compute, [&](auto tag) {
    using C = typename decltype(tag)::type;
    Writer<C> write(t);
    write(0, scalar_as<C>(a));
  });
  return t;
}

Shape broadcast_strides(const Tensor& t, const Shape& sizes) {
  const size_t n = sizes.size(), r = t.sizes().size();
  auto fail = [&] {
    throw Error("interpreter", "broadcast",
                "cannot broadcast a tensor of shape " + shape_str(t.sizes()) + " to " +
                    shape_str(sizes));
  };
  if (r > n) fail();
  Shape strides(n, 0);
  for (size_t i = 0; i < r; ++i) {
    int64_t s = t.sizes()[r - 1 - i], want = sizes[n - 1 - i];
    if (s == want) strides[n - 1 - i] = t.strides()[r - 1 - i];
    else if (s != 1) fail();
  }
  return strides;
}

Tensor broadcast_to(const Tensor& t, const Shape& sizes) {
  return t.as_strided(sizes, broadcast_strides(t, sizes), t.storage_offset());
}

Tensor empty_output(const TensorMeta& m) {
  if (m.strides.size() == m.sizes.size() && !m.is_contiguous())
    return Tensor::empty_strided(m.sizes, m.strides, m.dtype);
  return Tensor::empty(m.sizes, m.dtype);
}

std::vector<int64_t> element_offsets(const Shape& sizes, const Shape& strides) {
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(shape_numel(sizes)));
  for_each_offset<1>(sizes, {strides}, [&](const std::array<int64_t, 1>& o) {
    out.push_back(o[0]);
  });
  return out;
}

std::vector<bool> reduction_mask(int64_t rank, const std::vector<int64_t>& dims,
                                 const std::string& where) {
  std::vector<bool> mask(static_cast<size_t>(rank), dims.empty());
  std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(rank, 1)), false);
  for (int64_t d : dims) {
    int64_t r = std::max<int64_t>(rank, 1);
    if (d < -r || d >= r)
      throw Error("interpreter", where,
                  "dimension " + std::to_string(d) + " out of range for a tensor of rank " +
                      std::to_string(rank));
    int64_t w = d < 0 ? d + r : d;
    if (seen[w])
      throw Error("interpreter", where,
                  "dim " + std::to_string(w) + " appears multiple times in the list of dims");
    seen[w] = true;
    if (rank > 0) mask[w] = true;
  }
  return mask;
}

ReductionLayout reduction_layout(const Tensor& in, const std::vector<bool>& mask) {
  Shape outer_sizes, outer_strides, inner_sizes, inner_strides;
  for (size_t d = 0; d < in.sizes().size(); ++d) {
    (mask[d] ? inner_sizes : outer_sizes).push_back(in.sizes()[d]);
    (mask[d] ? inner_strides : outer_strides).push_back(in.strides()[d]);
  }
  return {element_offsets(outer_sizes, outer_strides), element_offsets(inner_sizes, inner_strides)};
}

}  // namespace stax::kernels
