// View ops: no data movement; the result aliases its input (strides are the view's own).
#include "core/graph/ops/infer_helpers.h"
#include "core/graph/ops/register_ops.h"

namespace stax {

void register_view_ops(OpRegistry& r) {
  using P = Promotion;
  r.add("expand(Tensor self, SymInt[] size, *, bool implicit=False) -> Tensor", OpCategory::View, P::None,
        [](const CallArgs& c) {
          const TensorMeta& in = c.tensor("self");
          auto size = c.get("size").to_int_list();
          if (size.size() < in.sizes.size())
            c.fail("the number of sizes provided (" + std::to_string(size.size()) +
                   ") must be at least the number of dimensions of " + shape_str(in.sizes));
          size_t off = size.size() - in.sizes.size();
          Shape out(size.begin(), size.end());
          for (size_t i = 0; i < size.size(); ++i) {
            if (i < off) {
              if (size[i] < 0) c.fail("-1 not allowed in a new leading dimension");
              continue;
            }
            int64_t s = in.sizes[i - off];
            if (size[i] == -1) out[i] = s;
            else if (s != 1 && s != size[i])
              c.fail("cannot expand " + shape_str(in.sizes) + " to " + shape_list_str(size));
          }
          TensorMeta m = TensorMeta::contiguous(out, in.dtype, in.device);
          for (size_t i = 0; i < out.size(); ++i)
            m.strides[i] = i < off || (in.sizes[i - off] == 1 && out[i] != 1) ? 0 : in.strides[i - off];
          return m;
        });
  r.add("t(Tensor self) -> Tensor", OpCategory::View, P::None, [](const CallArgs& c) {
    const TensorMeta& in = c.tensor("self");
    if (in.dim() > 2) c.fail("t() expects a tensor with <= 2 dimensions, got " + shape_str(in.sizes));
    TensorMeta m = in;
    if (in.dim() == 2) {
      std::swap(m.sizes[0], m.sizes[1]);
      std::swap(m.strides[0], m.strides[1]);
    }
    return m;
  });
}

}  // namespace stax
