// One factorization per call (docs/linalg.md, "One factorization per call"). A tuple-valued
// linalg op expands to one element op per result (_stax_linalg_lu(A, output) ...). When a graph
// reads several results of one call (LU and pivots for lu_solve, slogdet's sign and log|det|,
// a solve and its info for torch.linalg.inv's error check, U, S and Vh), the expansion emits the
// element op once more with output = kAllParts: a float tensor of A's dtype holding every result
// of the factorization, per matrix one after another,
//
//   shape: A's batch + [sum of the results' elements per matrix]
//   an int32 result (pivots, info): each value's 4 bytes in the first bytes of a float slot
//
// and each element op reads its result from it (its `factors` argument) instead of factoring A
// again. The packed value is an ordinary graph value: the partitioner may save it for the
// backward, whose rules read the factors they need from it too.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/graph/graph.h"
#include "core/tensor/tensor.h"

namespace stax::linalg {

constexpr int64_t kAllParts = -1;

// Per matrix, the element count of each result of element op `op` ("_stax_linalg_lu" ...) of an
// input of shape `a` (qr's `mode`, svd's `full_matrices`; the others ignore them). Empty for an
// op without packed form.
std::vector<int64_t> part_numels(std::string_view op, const Shape& a, const std::string& mode = "",
                                 bool full = false);

// The packed metadata: A's batch + [sum of numels], A's dtype.
TensorMeta packed_meta(const TensorMeta& a, const std::vector<int64_t>& numels);

// Packs `parts` (each batch + its own dims; float of `dtype` or int32) into the layout above.
Tensor pack_parts(const std::vector<Tensor>& parts, const Shape& batch, DType dtype,
                  const std::vector<int64_t>& numels);

// Result `p` of `packed` (broadcast to the batch of `out` first), as a tensor of metadata `out`.
Tensor unpack_part(const Tensor& packed, const std::vector<int64_t>& numels, size_t p,
                   const TensorMeta& out);

// In an expansion: the packed node when the call's results `parts` of op(args..., output) are
// read more than once (several of them used), else null. `used[i]`: whether result i is read.
Node* packed_if_shared(Graph& g, const char* op, std::vector<Arg> args, int shared_uses);

}  // namespace stax::linalg
