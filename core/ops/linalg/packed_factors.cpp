// The packed results of one factorization (packed_factors.h).
#include "core/ops/linalg/packed_factors.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <numeric>

#include "core/ops/common/kernel_utils.h"
#include "core/ops/linalg/linalg_args.h"
#include "core/ops/linalg/matrices.h"
#include "core/support/error.h"

namespace stax::linalg {

std::vector<int64_t> part_numels(std::string_view op, const Shape& a, const std::string& mode,
                                 bool full) {
  if (a.size() < 2) return {};
  int64_t m = rows(a), n = cols(a), k = std::min(m, n);
  if (op == "_stax_linalg_lu") return {m * n, k, 1};
  if (op == "_stax_linalg_cholesky") return {n * n, 1};
  if (op == "_stax_linalg_ldl") return {n * n, n, 1};
  if (op == "_stax_linalg_eigh") return {n, n * n};
  if (op == "_stax_linalg_geqrf") return {m * n, k};
  if (op == "_stax_linalg_svd") return {m * (full ? m : k), k, (full ? n : k) * n};
  if (op == "_stax_linalg_qr") {
    bool complete = mode == "complete";
    return {mode == "r" ? 0 : m * (complete ? m : k), (complete ? m : k) * n};
  }
  return {};
}

TensorMeta packed_meta(const TensorMeta& a, const std::vector<int64_t>& numels) {
  Shape s = batch_of(a.sizes);
  s.push_back(std::accumulate(numels.begin(), numels.end(), int64_t{0}));
  return TensorMeta::contiguous(std::move(s), a.dtype, a.device);
}

namespace {

template <class T>
void copy_in(const Tensor& part, int64_t b, int64_t count, T* dst) {
  if (part.dtype() == DType::Int32) {
    const int32_t* src = part.data<int32_t>() + b * count;
    for (int64_t i = 0; i < count; ++i) {
      dst[i] = T(0);
      std::memcpy(&dst[i], &src[i], sizeof(int32_t));
    }
  } else {
    std::copy_n(part.data<T>() + b * count, count, dst);
  }
}

template <class T>
void copy_out(const T* src, int64_t count, Tensor& out, int64_t b) {
  if (out.dtype() == DType::Int32) {
    int32_t* dst = out.data<int32_t>() + b * count;
    for (int64_t i = 0; i < count; ++i) std::memcpy(&dst[i], &src[i], sizeof(int32_t));
  } else {
    std::copy_n(src, count, out.data<T>() + b * count);
  }
}

int64_t batch_size(const Shape& batch) {
  return std::accumulate(batch.begin(), batch.end(), int64_t{1}, std::multiplies<>());
}

}  // namespace

Tensor pack_parts(const std::vector<Tensor>& parts, const Shape& batch, DType dtype,
                  const std::vector<int64_t>& numels) {
  Shape s = batch;
  const int64_t total = std::accumulate(numels.begin(), numels.end(), int64_t{0});
  s.push_back(total);
  Tensor out = Tensor::empty(s, dtype);
  std::vector<Tensor> dense;
  for (const Tensor& p : parts) dense.push_back(p.contiguous());
  by_float_type(dtype, "packed factors", [&](auto tag) {
    using T = decltype(tag);
    for (int64_t b = 0; b < batch_size(batch); ++b) {
      T* dst = out.data<T>() + b * total;
      for (size_t p = 0; p < dense.size(); ++p) {
        if (numels[p] > 0) copy_in<T>(dense[p], b, numels[p], dst);
        dst += numels[p];
      }
    }
  });
  return out;
}

Tensor unpack_part(const Tensor& packed_in, const std::vector<int64_t>& numels, size_t p,
                   const TensorMeta& out_meta) {
  const int64_t total = std::accumulate(numels.begin(), numels.end(), int64_t{0});
  const int64_t offset = std::accumulate(numels.begin(), numels.begin() + p, int64_t{0});
  Tensor out = Tensor::empty(out_meta.sizes, out_meta.dtype);
  if (numels[p] == 0 || out.numel() == 0) return out;
  const int64_t count = out.numel() / numels[p];  // matrices
  Tensor packed = packed_in.contiguous();
  if (packed.numel() != count * total)
    throw Error("interpreter", "packed factors",
                "a packed factorization of " + shape_str(packed.sizes()) + " does not hold " +
                    std::to_string(count) + " results of shape " + shape_str(out_meta.sizes));
  by_float_type(packed.dtype(), "packed factors", [&](auto tag) {
    using T = decltype(tag);
    for (int64_t b = 0; b < count; ++b)
      copy_out<T>(packed.data<T>() + b * total + offset, numels[p], out, b);
  });
  return out;
}

Node* packed_if_shared(Graph& g, const char* op, std::vector<Arg> args, int shared_uses) {
  if (shared_uses < 2) return nullptr;
  args.emplace_back(kAllParts);
  return g.call(op, std::move(args));
}

}  // namespace stax::linalg
