// Interpreter kernels of the complex forms of the data-movement ops (cat, constant_pad_nd, the
// slice / select scatters and backward ops, copy, new_zeros) and of mm / bmm (docs/complex.md).
// The movement kernels copy between strided views of any element size (Tensor::as_strided,
// copy_from); the products accumulate c10::complex products in order over k.
#include <algorithm>
#include <complex>
#include <string>
#include <vector>

#include "core/ops/complex/complex_kernel.h"
#include "core/ops/registration.h"

namespace stax {
namespace {

using namespace complex_kernels;  // NOLINT: the complex kernels' vocabulary

std::string where_of(const KernelContext& c) { return "%" + c.node().name(); }

// Entries start, start + step, ... (len of them) of dim d of t, as a view.
Tensor slice_view(const Tensor& t, int64_t d, int64_t start, int64_t len, int64_t step) {
  Shape sz = t.sizes(), st = t.strides();
  auto k = static_cast<size_t>(d);
  int64_t offset = t.storage_offset() + start * st[k];
  sz[k] = len;
  st[k] *= step;
  return t.as_strided(sz, st, offset);
}

// Entry i of dim d of t (the dim removed), as a view.
Tensor select_view(const Tensor& t, int64_t d, int64_t i) {
  Shape sz = t.sizes(), st = t.strides();
  auto k = static_cast<size_t>(d);
  int64_t offset = t.storage_offset() + i * st[k];
  sz.erase(sz.begin() + d);
  st.erase(st.begin() + d);
  return t.as_strided(sz, st, offset);
}

// A start or index argument wrapped (negative counts from the end) and clamped to [0, len].
int64_t start_of(const Arg& a, int64_t len) {
  int64_t s = a.is_absent() ? 0 : a.to_int();
  if (s < 0) s += len;
  return std::clamp<int64_t>(s, 0, len);
}

Tensor cat_kernel(const KernelContext& c) {
  const TensorMeta& m = c.out_meta();
  Tensor out = kernels::empty_output(m);
  int64_t d = wrap_dim(c.arg("dim").to_int(), out.dim(), where_of(c));
  int64_t at = 0;
  for (const Tensor& t : c.tensor_list("tensors")) {
    if (t.dim() == 1 && t.numel() == 0 && out.dim() != 1) continue;  // torch's legacy empty
    int64_t len = t.sizes()[static_cast<size_t>(d)];
    slice_view(out, d, at, len, 1).copy_from(converted(t, m.dtype));
    at += len;
  }
  return out;
}

// Pads (pad[2k], pad[2k+1]) of the last dims, last dim first; negative pads crop.
Tensor constant_pad_kernel(const KernelContext& c) {
  const TensorMeta& m = c.out_meta();
  Tensor x = converted(c.tensor("self"), m.dtype);
  Tensor out = kernels::empty_output(m);  // zero-filled
  double value = c.arg("value").is_absent() ? 0.0 : c.arg("value").to_double();
  if (value != 0.0) out.copy_from(Tensor::full(m.sizes, value, complex_to_real(m.dtype)));
  std::vector<int64_t> pad = c.arg("pad").to_int_list();
  Tensor src = x, dst = out;
  for (size_t k = 0; 2 * k < pad.size(); ++k) {
    int64_t d = x.dim() - 1 - static_cast<int64_t>(k);
    int64_t before = pad[2 * k];
    int64_t from = std::max<int64_t>(-before, 0), to = std::max<int64_t>(before, 0);
    int64_t len = std::min(x.sizes()[static_cast<size_t>(d)] - from,
                           out.sizes()[static_cast<size_t>(d)] - to);
    if (len <= 0) return out;
    src = slice_view(src, d, from, len, 1);
    dst = slice_view(dst, d, to, len, 1);
  }
  dst.copy_from(src);
  return out;
}

// slice_scatter / slice_backward: `base` with src written over the slice along dim.
Tensor slice_into(const KernelContext& c, Tensor base, const Tensor& src, const char* start,
                  const char* step) {
  int64_t d = wrap_dim(c.arg("dim").to_int(), base.dim(), where_of(c));
  int64_t s = start_of(c.arg(start), base.sizes()[static_cast<size_t>(d)]);
  int64_t by = c.arg(step).is_absent() ? 1 : c.arg(step).to_int();
  slice_view(base, d, s, src.sizes()[static_cast<size_t>(d)], by)
      .copy_from(converted(src, base.dtype()));
  return base;
}

Tensor select_into(const KernelContext& c, Tensor base, const Tensor& src) {
  int64_t d = wrap_dim(c.arg("dim").to_int(), base.dim(), where_of(c));
  int64_t len = base.sizes()[static_cast<size_t>(d)];
  int64_t i = c.arg("index").to_int();
  if (i < -len || i >= len) c.fail("index " + std::to_string(i) + " is out of range");
  select_view(base, d, i < 0 ? i + len : i).copy_from(converted(src, base.dtype()));
  return base;
}

Tensor zeros_out(const KernelContext& c) {
  return kernels::empty_output(c.out_meta());
}

Tensor self_copy(const KernelContext& c) {
  return converted(c.tensor("self"), c.out_meta().dtype).clone();
}

// mm (2-D) and bmm (3-D): out[b, i, j] = sum over k of a[b, i, k] * b[b, k, j], in order of k.
Tensor product_kernel(const KernelContext& c) {
  DType cd = c.out_meta().dtype;
  Tensor a = converted(c.tensor("self"), cd), b = converted(c.tensor("mat2"), cd);
  Tensor out = Tensor::empty(c.out_meta().sizes, cd);  // contiguous, as mm_rule infers
  bool batched = a.dim() == 3;
  int64_t nb = batched ? a.size(0) : 1, n = a.size(-2), kk = a.size(-1), p = b.size(-1);
  int64_t sa = batched ? a.stride(0) : 0, sb = batched ? b.stride(0) : 0;
  dispatch_complex(cd, [&](auto tag) {
    using C = typename decltype(tag)::type;
    const C* pa = a.template data<C>();
    const C* pb = b.template data<C>();
    C* po = out.template data<C>();
    for (int64_t q = 0; q < nb; ++q)
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < p; ++j) {
          C s(0);
          for (int64_t k = 0; k < kk; ++k)
            s += cmul(pa[q * sa + i * a.stride(-2) + k * a.stride(-1)],
                      pb[q * sb + k * b.stride(-2) + j * b.stride(-1)]);
          po[(q * n + i) * p + j] = s;
        }
  });
  return out;
}

}  // namespace

void register_complex_movement_kernels(InterpreterTable& t) {
  extend_kernel(t, "cat.default", cat_kernel);
  extend_kernel(t, "constant_pad_nd.default", constant_pad_kernel);
  extend_kernel(t, "slice_scatter.default", [](const KernelContext& c) {
    return slice_into(c, self_copy(c), c.tensor("src"), "start", "step");
  });
  extend_kernel(t, "select_scatter.default", [](const KernelContext& c) {
    return select_into(c, self_copy(c), c.tensor("src"));
  });
  extend_kernel(t, "slice_backward.default", [](const KernelContext& c) {
    return slice_into(c, zeros_out(c), c.tensor("grad_output"), "start", "step");
  });
  extend_kernel(t, "select_backward.default", [](const KernelContext& c) {
    return select_into(c, zeros_out(c), c.tensor("grad_output"));
  });
  extend_kernel(t, "copy.default", [](const KernelContext& c) {
    Tensor out = kernels::empty_output(c.out_meta());
    out.copy_from(converted(kernels::broadcast_to(c.tensor("src"), out.sizes()).contiguous(),
                            out.dtype()));
    return out;
  });
  for (const char* op : {"new_zeros.default", "new_empty.default"}) extend_kernel(t, op, zeros_out);
  for (const char* op : {"mm.default", "bmm.default"}) extend_kernel(t, op, product_kernel);
}

}  // namespace stax
